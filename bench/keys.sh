#!/usr/bin/env bash
# Counters per key: one session, every row naming a key, side by side in one run (median of
# 5 interleaved rounds, nanoseconds per row and the ratio to the floor of the same expression):
#   hot key      seqgen_next('t', 'k' || (g % 1)) against length('k' || (g % 1)) (the key
#                computed per row, as in a DEFAULT; a constant length('k1') would be folded)
#   100,000 keys seqgen_next('t', 'k' || n) with n random in 0..99,999, against the floor
#                length('k' || n), against a counter table updated per call
#                (UPDATE counters SET n = n + 1 WHERE k = $1 RETURNING n, in a SQL function)
#                and against one PostgreSQL sequence per key (nextval(('s' || n)::regclass))
#   cold key     the first draw of a key never used (one round trip to the allocator)
# The cluster holds 131,072 slots (seqgen.max_tags), so every key stays in shared memory, and
# room for a lock on each of the 100,000 sequences (one statement draws from them all).
#
#   bash bench/keys.sh                       # about 4 minutes (100,000 sequences are created)
#   BENCH_ROWS=100000 bash bench/keys.sh
#   BENCH_BLOCKS="16 32" bash bench/keys.sh   # and with each seqgen.backend_block, in the same rounds
PG_MAJORS=${PG_MAJOR:-15}
. "$(dirname "$0")/../scripts/lib.sh"

ROWS=${BENCH_ROWS:-1000000}
DIR=/tmp/pg_seqgen_bench_keys
PORT=${BENCH_PORT:-55540}
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)

ensure_deps
install_extension
say "starting a throwaway cluster in $DIR (room for 131,072 tags and keys)"
cluster_init "$DIR" "$PORT" "shared_buffers = 512MB" "max_wal_size = 4GB" "seqgen.max_databases = 1" \
    "seqgen.max_tags = 131072" "max_locks_per_transaction = 2000"
cluster_start "$DIR"
trap 'cluster_stop "$DIR" fast' EXIT
psql_at "$DIR" "$PORT" -f "$BENCH_DIR/setup.sql" >/dev/null
say "100,000 keys: the counter table, 100,000 sequences, every key drawn once"
psql_at "$DIR" "$PORT" >/dev/null <<'SQL'
SELECT seqgen_create('t');
CREATE TABLE counters (k text PRIMARY KEY, n bigint NOT NULL);
INSERT INTO counters SELECT 'k' || g, 0 FROM generate_series(0, 99999) g;
CREATE FUNCTION counter_next(key text) RETURNS bigint LANGUAGE sql VOLATILE
    AS $$ UPDATE counters SET n = n + 1 WHERE k = key RETURNING n $$;
-- 1,000 sequences per transaction (each holds a lock until it commits)
SELECT (SELECT string_agg(format('CREATE SEQUENCE s%s', g), '; ') FROM generate_series(i * 1000, i * 1000 + 999) g)
  FROM generate_series(0, 99) i \gexec
SELECT count(seqgen_next('t', 'k' || g)) FROM generate_series(0, 99999) g;
SQL

say "per row, median of 5 rounds of $ROWS rows (the counter table and the sequences: $((ROWS / 10)) rows)"
OUT=$(psql_at "$DIR" "$PORT" -At -F $'\t' <<SQL
SELECT (regexp_match(query, '^-- ([^\n]*)'))[1], ms * 1e6 / (CASE WHEN query LIKE '%(small)%' THEN $ROWS / 10 ELSE $ROWS END)
  FROM bench_median(ARRAY[
    format('-- hot floor
            SELECT count(length(''k'' || (g %% 1))) FROM generate_series(1, %s) g', $ROWS),
    format('-- hot seqgen
            SELECT count(seqgen_next(''t'', ''k'' || (g %% 1))) FROM generate_series(1, %s) g', $ROWS),
    format('-- random floor
            SELECT count(length(''k'' || floor(random() * 100000)::int)) FROM generate_series(1, %s) g', $ROWS),
    format('-- random seqgen
            SELECT count(seqgen_next(''t'', ''k'' || floor(random() * 100000)::int)) FROM generate_series(1, %s) g', $ROWS),
    format('-- random counter table (small)
            SELECT count(counter_next(''k'' || floor(random() * 100000)::int)) FROM generate_series(1, %s) g', $ROWS / 10),
    format('-- random sequence per key (small)
            SELECT count(nextval((''s'' || floor(random() * 100000)::int)::regclass)) FROM generate_series(1, %s) g', $ROWS / 10)
  ], 5);
SQL
)
# the 100,000 random keys again in a session of their own, after a warm-up pass: the session
# above also touched 100,000 sequences (its relation cache holds them all) and rows of the
# counter table, which the other rows of its rounds pay for too
# BENCH_BLOCKS="16 32": in the same rounds, the draw again with each of these
# seqgen.backend_block values (the keys are drawn that much more per round)
BLOCKS=""
for b in ${BENCH_BLOCKS:-}; do
    BLOCKS="$BLOCKS, '-- set $b
            SELECT set_config(''seqgen.backend_block'', ''$b'', false)',
            format('-- block $b
            SELECT count(seqgen_next(''t'', ''k'' || floor(random() * 100000)::int)) FROM generate_series(1, %s) g', $ROWS)"
done
if [ -n "$BLOCKS" ]; then
    BLOCKS="$BLOCKS, '-- set default
            SELECT set_config(''seqgen.backend_block'', (SELECT reset_val FROM pg_settings WHERE name = ''seqgen.backend_block''), false)'"
fi
ALONE=$(psql_at "$DIR" "$PORT" -At -F $'\t' <<SQL
SELECT count(seqgen_next('t', 'k' || floor(random() * 100000)::int)) FROM generate_series(1, $ROWS) g \\gset
SELECT (regexp_match(query, '^-- ([^\n]*)'))[1], ms * 1e6 / $ROWS
  FROM bench_median(ARRAY[
    format('-- random floor
            SELECT count(length(''k'' || floor(random() * 100000)::int)) FROM generate_series(1, %s) g', $ROWS),
    format('-- random seqgen
            SELECT count(seqgen_next(''t'', ''k'' || floor(random() * 100000)::int)) FROM generate_series(1, %s) g', $ROWS)$BLOCKS
  ], 5);
SQL
)
# the cold key: 2,000 keys never used, each drawn once (one round trip each)
COLD_MS=$(psql_at "$DIR" "$PORT" -At -c "DO \$\$ DECLARE t timestamptz := clock_timestamp(); BEGIN
          PERFORM count(seqgen_next('t', 'cold' || g)) FROM generate_series(1, 2000) g;
          RAISE NOTICE 'cold %', extract(epoch FROM clock_timestamp() - t) * 1000 / 2000;
        END \$\$" 2>&1 | sed -n 's/.*cold \([0-9.]*\).*/\1/p')

echo
echo "| per row (PostgreSQL $PG_MAJOR, one session) | ns per row | ratio to its floor |"
echo "| --- | ---: | ---: |"
echo "$OUT" | awk -F '\t' -v cold="$COLD_MS" '
    { ns[$1] = $2 }
    END {
        printf "| floor: length(%s || (g %% 1)) | %.0f | 1.00x |\n", "\x27k\x27", ns["hot floor"]
        printf "| one hot key: seqgen_next(%s, %s || (g %% 1)) | %.0f | %.2fx |\n", "\x27t\x27", "\x27k\x27", ns["hot seqgen"], ns["hot seqgen"] / ns["hot floor"]
        printf "| floor: length(%s || n), n random in 0..99,999 | %.0f | 1.00x |\n", "\x27k\x27", ns["random floor"]
        printf "| 100,000 keys: seqgen_next(%s, %s || n) | %.0f | %.2fx |\n", "\x27t\x27", "\x27k\x27", ns["random seqgen"], ns["random seqgen"] / ns["random floor"]
        printf "| 100,000 keys: a counter table row updated per call | %.0f | %.2fx |\n", ns["random counter table (small)"], ns["random counter table (small)"] / ns["random floor"]
        printf "| 100,000 keys: a PostgreSQL sequence per key | %.0f | %.2fx |\n", ns["random sequence per key (small)"], ns["random sequence per key (small)"] / ns["random floor"]
        printf "| a cold key (its first draw: one allocator round trip) | %.0f | |\n", cold * 1e6
    }'
echo "$ALONE" | awk -F '\t' '
    { ns[$1] = $2; if ($1 ~ /^block /) order[++n] = $1 }
    END {
        printf "| 100,000 keys, a session of their own: floor | %.0f | 1.00x |\n", ns["random floor"]
        printf "| 100,000 keys, a session of their own: seqgen_next(%s, %s || n) | %.0f | %.2fx |\n", "\x27t\x27", "\x27k\x27", ns["random seqgen"], ns["random seqgen"] / ns["random floor"]
        for (i = 1; i <= n; i++)
            printf "| the same, seqgen.backend_block = %s | %.0f | %.2fx |\n", substr(order[i], 7), ns[order[i]], ns[order[i]] / ns["random floor"]
    }'
echo
echo "Median of 5 interleaved rounds of $ROWS rows ($((ROWS / 10)) for the counter table and the sequences); 2,000 cold keys."
