#!/usr/bin/env bash
# A million keys of one tag (issue 19): drawn from their first use, with seqgen.max_tags at its
# default (1,024 slots: the hot keys stay in shared memory, idle ones are evicted), then on the
# million-key catalog:
#   - how long 1,000,000 first draws take (4 sessions of 250,000 keys)
#   - the catalog's size, and what the keys lost: values reserved and never drawn
#     (each key drew once; eviction discards what a slot had reserved)
#   - a cold key (never used) and an evicted key drawn again: one allocator round trip each,
#     median of 200
#   - a hot key against its floor (median of 5 rounds of 1,000,000 rows)
#   - seqgen_key_status for one key, and for all of them
#
#   bash bench/million_keys.sh       # about 6 minutes
PG_MAJORS=${PG_MAJOR:-15}
. "$(dirname "$0")/../scripts/lib.sh"

DIR=/tmp/pg_seqgen_bench_million
PORT=${BENCH_PORT:-55550}
KEYS=${BENCH_KEYS:-1000000}
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)

ensure_deps
install_extension
say "starting a throwaway cluster in $DIR (seqgen.max_tags at its default, 1,024)"
cluster_init "$DIR" "$PORT" "shared_buffers = 256MB" "max_wal_size = 4GB" "seqgen.max_databases = 1"
cluster_start "$DIR"
trap 'cluster_stop "$DIR" fast' EXIT
psql_at "$DIR" "$PORT" -f "$BENCH_DIR/setup.sql" >/dev/null
psql_at "$DIR" "$PORT" -c "SELECT seqgen_create('m')" >/dev/null

say "$KEYS keys drawn for the first time, 4 sessions"
q=$((KEYS / 4))
start=$(date +%s%N)
for i in 0 1 2 3; do
    psql_at "$DIR" "$PORT" -At -c "SELECT count(seqgen_next('m', 'k' || g)) FROM generate_series($((i * q)), $((i * q + q - 1))) g" >/dev/null &
done
wait
ms=$((($(date +%s%N) - start) / 1000000))
echo "first draws: $KEYS keys in $ms ms ($((KEYS * 1000 / ms)) keys per second, $((ms * 4 * 1000 / KEYS)) us per key per session)"

psql_at "$DIR" "$PORT" -At -F ' ' <<'SQL'
SELECT 'catalog: ' || count(*) || ' keys, seqgen.key_counter ' || pg_size_pretty(pg_total_relation_size('seqgen.key_counter'))
       || ' with its index; values reserved and never drawn: ' || sum(max_id - 1) || ' (' || round(avg(max_id - 1), 2)
       || ' per key, at most ' || max(max_id - 1) || ')'
  FROM seqgen.key_counter WHERE biz_tag = 'm';
SQL

psql_at "$DIR" "$PORT" -At <<'SQL'
CREATE TEMP TABLE lat (what text, us float8);
DO $$
DECLARE t0 timestamptz; i int;
BEGIN
  FOR i IN 1..200 LOOP
    t0 := clock_timestamp();
    PERFORM seqgen_next('m', 'new' || i);
    INSERT INTO lat VALUES ('a cold key (never used)', extract(epoch FROM clock_timestamp() - t0) * 1e6);
    t0 := clock_timestamp();
    PERFORM seqgen_next('m', 'k' || (i * 4999));
    INSERT INTO lat VALUES ('an evicted key drawn again', extract(epoch FROM clock_timestamp() - t0) * 1e6);
  END LOOP;
END $$;
SELECT what || ': median ' || round(percentile_cont(0.5) WITHIN GROUP (ORDER BY us)::numeric / 1000, 2) || ' ms, p99 '
       || round(percentile_cont(0.99) WITHIN GROUP (ORDER BY us)::numeric / 1000, 2) || ' ms'
  FROM lat GROUP BY what ORDER BY what;
SQL

say "a hot key on the million-key catalog, median of 5 rounds of 1,000,000 rows"
psql_at "$DIR" "$PORT" -At -F $'\t' <<'SQL'
SELECT (regexp_match(query, '^-- ([^\n]*)'))[1], round(ms * 1e6 / 1000000) FROM bench_median(ARRAY[
  '-- floor length(''k'' || (g % 1))
   SELECT count(length(''k'' || (g % 1))) FROM generate_series(1, 1000000) g',
  '-- seqgen_next(''m'', ''k'' || (g % 1))
   SELECT count(seqgen_next(''m'', ''k'' || (g % 1))) FROM generate_series(1, 1000000) g'], 5);
SQL

say "seqgen_key_status on the million-key catalog"
psql_at "$DIR" "$PORT" -At <<'SQL'
\timing on
SELECT count(*) FROM seqgen_key_status('m', 'k777');
SELECT count(*) FROM seqgen_key_status('m');
SQL
