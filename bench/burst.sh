#!/usr/bin/env bash
# A burst of new keys (issue 33): KEYS first draws of keys no one drew before, from 8 sessions at
# once (pgbench, 8 clients, each drawing its own new keys one statement at a time), beside the
# counter a user would write by hand from the same 8 sessions: a single-row upsert
#   INSERT INTO counters AS c VALUES (key, 1) ON CONFLICT (k) DO UPDATE SET n = c.n + 1 RETURNING n
# (each statement its own transaction, as each seqgen_next is). Three rounds of each kind,
# alternating, new keys every round; the rate (keys per second) and the p50 and p99 wait of a
# call (pgbench's per-transaction latency), medians over the rounds.
#
#   bash bench/burst.sh                    # 100,000 keys a round, about 3 minutes
#   BENCH_KEYS=20000 bash bench/burst.sh
PG_MAJORS=${PG_MAJOR:-15}
. "$(dirname "$0")/../scripts/lib.sh"

KEYS=${BENCH_KEYS:-100000}
CLIENTS=8
DIR=/tmp/pg_seqgen_bench_burst
PORT=${BENCH_PORT:-55560}
OUT=$DIR/out

ensure_deps
install_extension
say "starting a throwaway cluster in $DIR (room for 131,072 tags and keys)"
cluster_init "$DIR" "$PORT" "shared_buffers = 256MB" "max_wal_size = 4GB" "seqgen.max_databases = 1" \
    "seqgen.max_tags = 131072"
cluster_start "$DIR"
trap 'cluster_stop "$DIR" fast' EXIT
psql_at "$DIR" "$PORT" >/dev/null <<'SQL'
CREATE EXTENSION pg_seqgen;
SELECT seqgen_create('burst');
CREATE TABLE counters (k text PRIMARY KEY, n bigint NOT NULL);
SQL
mkdir -p "$OUT" && chown postgres "$OUT"

burst() {
    local name=$1 sql=$2 clients=${3:-$CLIENTS} keys=${4:-$KEYS}
    printf '\\set i :i + 1\n%s\n' "$sql" > "$OUT/$name.sql"
    rm -f "$OUT/log_$name".*
    (cd "$OUT" && sudo -u postgres "$PG_BIN/pgbench" -h "$DIR" -p "$PORT" -n -c "$clients" -j "$(( clients < 2 ? 1 : 2 ))" \
        -M prepared -t $((keys / clients)) -D i=0 --log --log-prefix="$OUT/log_$name" -f "$OUT/$name.sql" postgres) \
        > "$OUT/$name.out" 2>&1
    grep -q "tps = " "$OUT/$name.out" || { cat "$OUT/$name.out"; exit 1; }
    echo "  $name: $(grep -o 'tps = [0-9.]*' "$OUT/$name.out" | head -1)"
}
for r in 1 2 3; do
    say "round $r: $KEYS new keys from $CLIENTS sessions, each kind"
    burst "seqgen_$r" "SELECT seqgen_next('burst', 'r$r-' || :client_id || '-' || :i);"
    burst "upsert_$r" "INSERT INTO counters AS c VALUES ('r$r-' || :client_id || '-' || :i, 1) ON CONFLICT (k) DO UPDATE SET n = c.n + 1 RETURNING n;"
    burst "floor_$r" "SELECT 'r$r-' || :client_id || '-' || :i;"
done
say "a cold key alone: 2,000 new keys from one session, each kind"
for r in 1 2 3; do
    burst "seqgen_one_$r" "SELECT seqgen_next('burst', 'one$r-' || :i);" 1 2000
    burst "upsert_one_$r" "INSERT INTO counters AS c VALUES ('one$r-' || :i, 1) ON CONFLICT (k) DO UPDATE SET n = c.n + 1 RETURNING n;" 1 2000
done
psql_at "$DIR" "$PORT" -At -c "SELECT 'keys in the catalog: ' || count(*) FROM seqgen.key_counter WHERE biz_tag = 'burst'"

python3 - "$OUT" "$KEYS" "$CLIENTS" <<'PY'
import glob, re, statistics, sys
out, keys, clients = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def round_stats(name):
    tps = float(re.search(r'tps = ([0-9.]+)', open(f'{out}/{name}.out').read()).group(1))
    lat = sorted(int(l.split()[2]) for f in glob.glob(f'{out}/log_{name}.*') for l in open(f))
    return tps, lat[len(lat) // 2] / 1000, lat[int(len(lat) * 0.99)] / 1000, lat[-1] / 1000
res = {}
for kind in ('seqgen', 'upsert', 'floor'):
    rows = [round_stats(f'{kind}_{r}') for r in (1, 2, 3)]
    res[kind] = [statistics.median(x[i] for x in rows) for i in range(4)]
print(f"\n| {keys:,} new keys from {clients} sessions at once | keys per second | p50 wait, ms | p99 wait, ms | longest, ms |")
print("| --- | ---: | ---: | ---: | ---: |")
print("| `seqgen_next('burst', key)` | {:,.0f} | {:.2f} | {:.2f} | {:.1f} |".format(*res['seqgen']))
print("| a counter upsert (`INSERT ... ON CONFLICT DO UPDATE ... RETURNING`) | {:,.0f} | {:.2f} | {:.2f} | {:.1f} |".format(*res['upsert']))
print("| the floor: the key's expression alone (`SELECT 'r1-' \\|\\| client \\|\\| '-' \\|\\| i`) | {:,.0f} | {:.2f} | {:.2f} | {:.1f} |".format(*res['floor']))
print(f"\nseqgen_next: {res['seqgen'][0] / res['upsert'][0]:.2f}x the upsert's rate, {res['seqgen'][0] / res['floor'][0]:.2f}x the floor's (medians of 3 rounds)")
for kind in ('seqgen_one', 'upsert_one'):
    rows = [round_stats(f'{kind}_{r}') for r in (1, 2, 3)]
    res[kind] = [statistics.median(x[i] for x in rows) for i in range(4)]
print("\n| 2,000 new keys from one session (a cold key alone) | keys per second | p50 wait, ms | p99 wait, ms | longest, ms |")
print("| --- | ---: | ---: | ---: | ---: |")
print("| `seqgen_next('burst', key)` | {:,.0f} | {:.2f} | {:.2f} | {:.1f} |".format(*res['seqgen_one']))
print("| a counter upsert | {:,.0f} | {:.2f} | {:.2f} | {:.1f} |".format(*res['upsert_one']))
PY
