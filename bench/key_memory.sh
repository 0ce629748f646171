#!/usr/bin/env bash
# A session's private memory for a million keys (issue 33). Three sessions at once, each
# drawing from KEYS keys of one tag that no one drew before (one statement, one draw per key),
# each with its own seqgen.backend_cache_size: room for every key, the default (131,072), and
# 10,000. Each reports its private memory (RssAnon from /proc/self/status) before and after,
# and how long its statement took. seqgen.max_tags stays at its default (1,024): most keys are
# evicted from shared memory meanwhile; what is measured is what the session keeps.
#
#   bash bench/key_memory.sh                    # 3 x 1,000,000 keys, about 16 minutes
#   BENCH_KEYS=100000 bash bench/key_memory.sh
PG_MAJORS=${PG_MAJOR:-15}
. "$(dirname "$0")/../scripts/lib.sh"

KEYS=${BENCH_KEYS:-1000000}
DIR=/tmp/pg_seqgen_bench_key_memory
PORT=${BENCH_PORT:-55565}

ensure_deps
install_extension
say "starting a throwaway cluster in $DIR"
cluster_init "$DIR" "$PORT" "shared_buffers = 256MB" "max_wal_size = 4GB" "seqgen.max_databases = 1" \
    "seqgen.max_keys_per_role = -1"
cluster_start "$DIR"
trap 'cluster_stop "$DIR" fast' EXIT
psql_at "$DIR" "$PORT" -c "CREATE EXTENSION pg_seqgen" -c "SELECT seqgen_create('m')" >/dev/null

say "3 sessions at once, each drawing from $KEYS keys no one drew before"
MEM=$(mktemp -d)
chmod 777 "$MEM"
i=0
for size in $((KEYS * 2)) default 10000; do
    i=$((i + 1))
    set_size=""
    [ "$size" != default ] && set_size="SET seqgen.backend_cache_size = $size;"
    psql_at "$DIR" "$PORT" -At >"$MEM/$i" <<SQL &
$set_size
SELECT seqgen_next('m'), count(length('k' || g)) FROM generate_series(1, $KEYS) g \gset
SELECT (regexp_match(pg_read_file('/proc/self/status'), 'RssAnon:\s+(\d+)'))[1]::int8 AS before,
       clock_timestamp() AS t0 \gset
SELECT count(seqgen_next('m', 's$i-' || g)) FROM generate_series(1, $KEYS) g \gset
SELECT $KEYS, (regexp_match(pg_read_file('/proc/self/status'), 'RssAnon:\s+(\d+)'))[1]::int8 - :before,
       current_setting('seqgen.backend_cache_size'),
       round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000);
SQL
done
wait
psql_at "$DIR" "$PORT" -At -c "SELECT 'keys in the catalog: ' || count(*) FROM seqgen.key_counter WHERE biz_tag = 'm'"
python3 - "$MEM" <<'PY'
import os, sys
print("\n| a session's first draw of each of N keys | seqgen.backend_cache_size | its private memory grew by | per key | its statement took |")
print("| --- | ---: | ---: | ---: | ---: |")
rows = []
for f in os.listdir(sys.argv[1]):
    line = open(os.path.join(sys.argv[1], f)).read().split()
    if not line:
        sys.exit(f"session {f} failed")
    rows.append(tuple(int(x) for x in line[-1].split('|')))
for n, kb, size, ms in sorted(rows, key=lambda r: -r[2]):
    print(f"| N = {n:,} | {size:,} | {kb / 1024:.1f} MB | {kb * 1024 / n:.0f} bytes | {ms / 1000:.0f} s |")
PY
rm -rf "$MEM"
