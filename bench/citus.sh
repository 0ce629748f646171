#!/usr/bin/env bash
# pg_seqgen on Citus: INSERT throughput through all three nodes of a Citus cluster (a
# coordinator and two workers on this machine, Citus 13.2 on PostgreSQL 15), into distributed
# tables keyed by seqgen_next, seqgen_snowflake() and bigserial (Citus's own ranges), against
# the same INSERT with a key the client supplies. Side by side in one run, in alternating
# rounds; prints a Markdown table of TPS and ratios.
#
#   bash bench/citus.sh                   # 2 rounds of 15 s per variant (about 3 minutes)
#   BENCH_SECONDS=5 BENCH_ROUNDS=1 bash bench/citus.sh
PG_MAJORS=15
. "$(dirname "$0")/../scripts/lib.sh"
. "$ROOT/scripts/citus.sh"

SECONDS_EACH=${BENCH_SECONDS:-15}
ROUNDS=${BENCH_ROUNDS:-2}
CLIENTS=(3 3 2)  # 8 clients: 3 through the coordinator, 3 and 2 through the workers
BASE=/tmp/pg_seqgen_bench_citus
PORT=${BENCH_PORT:-55520}
NAMES=(coord w1 w2)

ensure_deps
citus_ensure
install_extension

conf=("listen_addresses = '127.0.0.1'" "shared_preload_libraries = 'citus,pg_seqgen'"
      "max_prepared_transactions = 100" "max_worker_processes = 24" "shared_buffers = 256MB"
      "synchronous_commit = off" "max_wal_size = 4GB")
stop_all() { for i in 0 1 2; do cluster_stop "$BASE/${NAMES[$i]}" fast || true; done; }
trap stop_all EXIT
say "starting a Citus cluster: coordinator on $PORT, workers on $((PORT + 1)) and $((PORT + 2))"
for i in 0 1 2; do
    cluster_init "$BASE/${NAMES[$i]}" $((PORT + i)) "${conf[@]}"
    cluster_start "$BASE/${NAMES[$i]}"
    psql_at "$BASE/${NAMES[$i]}" $((PORT + i)) -c "CREATE EXTENSION citus" >/dev/null
done
C="$BASE/coord"
psql_at "$C" "$PORT" >/dev/null <<SQL
SELECT citus_set_coordinator_host('127.0.0.1', $PORT);
SELECT citus_add_node('127.0.0.1', $((PORT + 1)));
SELECT citus_add_node('127.0.0.1', $((PORT + 2)));
CREATE EXTENSION pg_seqgen;
SELECT seqgen_create('b', 1000);
CREATE TABLE t_key (id bigint, k int NOT NULL);
CREATE TABLE t_next (id bigint DEFAULT seqgen_next('b'), k int NOT NULL);
CREATE TABLE t_snowflake (id bigint DEFAULT seqgen_snowflake(), k int NOT NULL);
CREATE TABLE t_bigserial (id bigserial, k int NOT NULL);
SELECT create_distributed_table('t_key', 'k');
SELECT create_distributed_table('t_next', 'k');
SELECT create_distributed_table('t_snowflake', 'k');
SELECT create_distributed_table('t_bigserial', 'k');
SQL
# the tag reaches the workers with the coordinator's definitions (at once on the first draw)
for i in 1 2; do
    psql_at "$BASE/${NAMES[$i]}" $((PORT + i)) -c "SELECT seqgen_next('b')" >/dev/null
done

declare -A SQLS=(
    [key]='\set k random(1, 1000000)
\set id random(1, 4000000000000000000)
INSERT INTO t_key (id, k) VALUES (:id, :k);'
    [next]='\set k random(1, 1000000)
INSERT INTO t_next (k) VALUES (:k);'
    [snowflake]='\set k random(1, 1000000)
INSERT INTO t_snowflake (k) VALUES (:k);'
    [bigserial]='\set k random(1, 1000000)
INSERT INTO t_bigserial (k) VALUES (:k);'
)
VARIANTS=(key next snowflake bigserial)
declare -A TPS
for v in "${VARIANTS[@]}"; do
    printf '%s\n' "${SQLS[$v]}" >"$BASE/$v.sql"
    chmod a+r "$BASE/$v.sql"
    TPS[$v]=0
done

# one run: pgbench through the three nodes at once; the sum of their TPS
run_variant() {
    local v=$1 i pids=() total=0
    for i in 0 1 2; do
        sudo -u postgres "$PG_BIN/pgbench" -n -h 127.0.0.1 -p $((PORT + i)) -U postgres -c "${CLIENTS[$i]}" -j 1 \
            -T "$SECONDS_EACH" -f "$BASE/$v.sql" postgres >"$BASE/$v.$i.out" 2>&1 &
        pids+=($!)
    done
    for i in 0 1 2; do wait "${pids[$i]}"; done
    for i in 0 1 2; do
        local t
        t=$(grep -oP 'tps = \K[0-9.]+' "$BASE/$v.$i.out" | head -1)
        [ -n "$t" ] || { cat "$BASE/$v.$i.out"; return 1; }
        total=$(python3 -c "print($total + $t)")
    done
    echo "$total"
}

for round in $(seq "$ROUNDS"); do
    for v in "${VARIANTS[@]}"; do
        say "round $round: $v (${SECONDS_EACH} s, 8 clients through 3 nodes)"
        t=$(run_variant "$v")
        echo "$t TPS"
        TPS[$v]=$(python3 -c "print(${TPS[$v]} + $t / $ROUNDS)")
    done
done

dups=$(psql_at "$C" "$PORT" -At -c "SELECT (SELECT count(*) FROM (SELECT id FROM t_next GROUP BY id HAVING count(*) > 1) a) + (SELECT count(*) FROM (SELECT id FROM t_snowflake GROUP BY id HAVING count(*) > 1) b) + (SELECT count(*) FROM (SELECT id FROM t_bigserial GROUP BY id HAVING count(*) > 1) c)")
rows=$(psql_at "$C" "$PORT" -At -c "SELECT (SELECT count(*) FROM t_next) + (SELECT count(*) FROM t_snowflake)")

echo
echo "Citus $CITUS_VERSION on PostgreSQL 15: a coordinator and two workers on one machine ($(nproc) cores), 8 pgbench clients (3, 3 and 2 through the three nodes), INSERT of one row per transaction into a table distributed by another column, synchronous_commit = off, $ROUNDS x ${SECONDS_EACH} s per variant, alternating"
echo
echo "| key | TPS (sum of 3 nodes) | vs. client-supplied key |"
echo "| --- | ---: | ---: |"
label() {
    case $1 in
        key) echo 'client-supplied `id`' ;;
        next) echo "\`seqgen_next('b')\` DEFAULT" ;;
        snowflake) echo '`seqgen_snowflake()` DEFAULT' ;;
        bigserial) echo '`bigserial` (Citus ranges per node)' ;;
    esac
}
for v in "${VARIANTS[@]}"; do
    cells=$(python3 -c 'import sys; t, k = float(sys.argv[1]), float(sys.argv[2]); print(f"{t:,.0f} | {t / k:.2f}x")' "${TPS[$v]}" "${TPS[key]}")
    echo "| $(label "$v") | $cells |"
done
echo
echo "values issued twice over all runs: $dups (of $rows seqgen rows, counted through the coordinator)"
