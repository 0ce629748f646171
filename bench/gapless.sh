#!/usr/bin/env bash
# Gapless numbers: TPS of invoicing transactions with 8 clients (pgbench), each taking a
# gapless number of its key and then doing W ms of other work before it commits, on 1 key and
# on 100 keys. Side by side in one run, in alternating rounds:
#   hand     the hand-written counter row, updated in the transaction:
#            WITH c AS (UPDATE counters SET n = n + 1 WHERE k = :k RETURNING n) INSERT ...
#   insert   pg_seqgen, the number taken at INSERT: seqgen_gapless_next('gi', :k)
#   commit   pg_seqgen, the number assigned at commit (seqgen_gapless_attach: a deferred
#            constraint trigger fills the column), so the key is held only while committing
# Prints a Markdown table of TPS and ratios to the hand-written counter. fsync stays on: the
# commit is what a gapless number costs.
#
#   bash bench/gapless.sh                    # 2 rounds of 10 s per variant (about 4 minutes)
#   BENCH_SECONDS=5 BENCH_ROUNDS=1 bash bench/gapless.sh
PG_MAJORS=${PG_MAJOR:-15}
. "$(dirname "$0")/../scripts/lib.sh"

SECONDS_EACH=${BENCH_SECONDS:-10}
ROUNDS=${BENCH_ROUNDS:-2}
DIR=/tmp/pg_seqgen_bench_gapless
PORT=${BENCH_PORT:-55530}
OUT=$DIR/out

ensure_deps
install_extension
say "starting a throwaway cluster in $DIR"
cluster_init "$DIR" "$PORT" "shared_buffers = 256MB" "max_wal_size = 4GB"
cluster_start "$DIR"
trap 'cluster_stop "$DIR" fast' EXIT
psql_at "$DIR" "$PORT" >/dev/null <<'SQL'
CREATE EXTENSION pg_seqgen;
SELECT seqgen_create_gapless('gi');
SELECT seqgen_create_gapless('gc');
CREATE TABLE counters (k int PRIMARY KEY, n bigint NOT NULL);
INSERT INTO counters SELECT g, 0 FROM generate_series(1, 100) g;
CREATE TABLE inv_hand (k int NOT NULL, no bigint NOT NULL);
CREATE TABLE inv_insert (k int NOT NULL, no bigint NOT NULL);
CREATE TABLE inv_commit (k int NOT NULL, no bigint);
SELECT seqgen_gapless_attach('inv_commit', 'no', 'gc', 'k');
SQL
mkdir -p "$OUT" && chown postgres "$OUT"

# name keys work_ms: TPS
run_one() {
    local method=$1 keys=$2 work=$3 name="$1_$2_$3" body
    case $method in
        hand) body="WITH c AS (UPDATE counters SET n = n + 1 WHERE k = :k RETURNING n) INSERT INTO inv_hand SELECT :k, n FROM c;" ;;
        insert) body="INSERT INTO inv_insert VALUES (:k, seqgen_gapless_next('gi', :k::text));" ;;
        commit) body="INSERT INTO inv_commit (k) VALUES (:k);" ;;
    esac
    printf '\\set k random(1, %s)\nBEGIN;\n%s\nSELECT pg_sleep(%s);\nCOMMIT;\n' \
        "$keys" "$body" "$(awk "BEGIN { print $work / 1000 }")" > "$OUT/$name.sql"
    (cd "$OUT" && sudo -u postgres "$PG_BIN/pgbench" -h "$DIR" -p "$PORT" -n -c 8 -j 2 -M prepared \
        -T "$SECONDS_EACH" -f "$OUT/$name.sql" postgres) > "$OUT/$name.out" 2>&1
    grep -q "tps = " "$OUT/$name.out" || { cat "$OUT/$name.out"; exit 1; }
    grep -o 'tps = [0-9.]*' "$OUT/$name.out" | awk '{ print $3 }'
}

: > "$OUT/tps.tsv"
for round in $(seq 1 "$ROUNDS"); do
    for cfg in "1 1" "100 1" "1 10" "100 10"; do
        read -r keys work <<< "$cfg"
        for method in hand insert commit; do
            tps=$(run_one "$method" "$keys" "$work")
            say "round $round: $method, $keys key(s), $work ms of work: $tps TPS"
            printf '%s\t%s\t%s\t%s\n' "$method" "$keys" "$work" "$tps" >> "$OUT/tps.tsv"
        done
    done
done

# every key of every table numbered 1..N (the benchmark is a test too)
bad=$(psql_at "$DIR" "$PORT" -At -c "
    SELECT count(*) FROM (
        SELECT 'hand' t, k, count(*) n, min(no) lo, max(no) hi, count(DISTINCT no) d FROM inv_hand GROUP BY k
        UNION ALL SELECT 'insert', k, count(*), min(no), max(no), count(DISTINCT no) FROM inv_insert GROUP BY k
        UNION ALL SELECT 'commit', k, count(*), min(no), max(no), count(DISTINCT no) FROM inv_commit GROUP BY k) s
    WHERE lo <> 1 OR hi <> n OR d <> n")
[ "$bad" = 0 ] || { echo "gapless benchmark: $bad keys not numbered 1..N" >&2; exit 1; }

echo
echo "| keys | work per transaction | hand-written counter TPS | gapless at INSERT TPS | ratio | gapless at commit TPS | ratio |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
awk -F '\t' '
    { sum[$1 FS $2 FS $3] += $4; cnt[$1 FS $2 FS $3]++ }
    END {
        split("1 1|100 1|1 10|100 10", cfgs, "|")
        for (i = 1; i <= 4; i++) {
            split(cfgs[i], c, " ")
            key = c[1] FS c[2]
            h = sum["hand" FS key] / cnt["hand" FS key]
            ins = sum["insert" FS key] / cnt["insert" FS key]
            com = sum["commit" FS key] / cnt["commit" FS key]
            printf "| %d | %d ms | %.0f | %.0f | %.2fx | %.0f | %.2fx |\n", c[1], c[2], h, ins, ins / h, com, com / h
        }
    }' "$OUT/tps.tsv"
echo
echo "Every key of every table numbered exactly 1..N afterwards (checked). TPS: mean of $ROUNDS rounds of ${SECONDS_EACH} s, 8 clients."
