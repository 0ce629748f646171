#!/usr/bin/env bash
# Cold paths (issue 33), side by side in one run, every round a new connection (a new backend):
# - first touch: a new session's first draw of each of T tags that shared memory already holds
#   (every tag drawn once before by another session), beside nextval's first touch of T
#   sequences in a new session, then the same names again in that session, with the floor of
#   the same expression (length('t' || g)); microseconds per name;
# - many tags from a new session: ROWS rows of seqgen_next('t' || g % T), and of
#   nextval(('s' || g % T)::regclass), in a new session, against the floor length('t' || g % T)
#   in a new session: milliseconds and the ratio to the floor.
# Rounds alternate between the kinds; the median of 5 rounds. For T = 10,000 and 100,000.
#
#   bash bench/cold.sh                    # T = 10,000 and 100,000, about 6 minutes
#   BENCH_TAGS=10000 bash bench/cold.sh   # one T only
PG_MAJORS=${PG_MAJOR:-15}
. "$(dirname "$0")/../scripts/lib.sh"

TS=${BENCH_TAGS:-10000 100000}
ROWS=${BENCH_ROWS:-1000000}
ROUNDS=5
DIR=/tmp/pg_seqgen_bench_cold
PORT=${BENCH_PORT:-55545}
MAX_T=0
for t in $TS; do [ "$t" -gt "$MAX_T" ] && MAX_T=$t; done

ensure_deps
install_extension
say "starting a throwaway cluster in $DIR (room for $((MAX_T * 2)) tags)"
cluster_init "$DIR" "$PORT" "shared_buffers = 512MB" "seqgen.max_databases = 1" \
    "seqgen.max_tags = $((MAX_T * 2))" "max_locks_per_transaction = $((MAX_T / 50 + 64))"
cluster_start "$DIR"
trap 'cluster_stop "$DIR" fast' EXIT

say "$MAX_T tags and $MAX_T sequences, each drawn once (so shared memory holds every tag)"
psql_at "$DIR" "$PORT" >/dev/null <<SQL
CREATE EXTENSION pg_seqgen;
SELECT count(seqgen_create('t' || g, 1000)) FROM generate_series(0, $MAX_T - 1) g;
SELECT (SELECT string_agg(format('CREATE SEQUENCE s%s', g), '; ')
          FROM generate_series(i * 1000, least(i * 1000 + 999, $MAX_T - 1)) g)
  FROM generate_series(0, ($MAX_T - 1) / 1000) i \gexec
SELECT count(seqgen_next('t' || g)) FROM generate_series(0, $MAX_T - 1) g;
SELECT count(nextval(('s' || g)::regclass)) FROM generate_series(0, $MAX_T - 1) g;
-- one round in this session: the first pass over the names and the second, microseconds each
CREATE FUNCTION cold_round(kind text, n int) RETURNS TABLE (first_us float8, again_us float8)
LANGUAGE plpgsql AS \$\$
DECLARE
    q text := CASE kind
        WHEN 'seqgen' THEN 'SELECT count(seqgen_next(''t'' || g)) FROM generate_series(0, \$1 - 1) g'
        WHEN 'nextval' THEN 'SELECT count(nextval((''s'' || g)::regclass)) FROM generate_series(0, \$1 - 1) g'
        ELSE 'SELECT count(length(''t'' || g)) FROM generate_series(0, \$1 - 1) g' END;
    t0 timestamptz;
    c bigint;
BEGIN
    t0 := clock_timestamp();
    EXECUTE q INTO c USING n;
    first_us := extract(epoch FROM clock_timestamp() - t0) * 1e6 / n;
    t0 := clock_timestamp();
    EXECUTE q INTO c USING n;
    again_us := extract(epoch FROM clock_timestamp() - t0) * 1e6 / n;
    RETURN NEXT;
END
\$\$;
-- rows calls over n names, the first statement of a new session: milliseconds
CREATE FUNCTION cold_rows(kind text, n int, rows int) RETURNS float8
LANGUAGE plpgsql AS \$\$
DECLARE
    q text := CASE kind
        WHEN 'seqgen' THEN 'SELECT count(seqgen_next(''t'' || (g % \$1))) FROM generate_series(1, \$2) g'
        WHEN 'nextval' THEN 'SELECT count(nextval((''s'' || (g % \$1))::regclass)) FROM generate_series(1, \$2) g'
        ELSE 'SELECT count(length(''t'' || (g % \$1))) FROM generate_series(1, \$2) g' END;
    t0 timestamptz := clock_timestamp();
    c bigint;
BEGIN
    EXECUTE q INTO c USING n, rows;
    RETURN extract(epoch FROM clock_timestamp() - t0) * 1e3;
END
\$\$;
SQL

RESULTS=$(mktemp)
for t in $TS; do
    say "T = $t: $ROUNDS rounds, each kind in a new session per round"
    for r in $(seq 1 $ROUNDS); do
        for kind in floor seqgen nextval; do
            printf 'first\t%s\t%s\t' "$t" "$kind" >>"$RESULTS"
            psql_at "$DIR" "$PORT" -At -F $'\t' -c "SELECT * FROM cold_round('$kind', $t)" >>"$RESULTS"
            printf 'rows\t%s\t%s\t' "$t" "$kind" >>"$RESULTS"
            psql_at "$DIR" "$PORT" -At -c "SELECT cold_rows('$kind', $t, $ROWS)" >>"$RESULTS"
        done
    done
done
say "memory: a new session's private memory (RssAnon) before and after its first draw of each of T tags"
MEM=$(mktemp)
# the last: the largest T with the session's cache bounded at a fifth of it
for t in $TS bounded; do
    bound=""
    if [ "$t" = bounded ]; then t=$MAX_T bound="SET seqgen.backend_cache_size = $((MAX_T / 5));"; fi
    psql_at "$DIR" "$PORT" -At >>"$MEM" <<SQL
$bound
SELECT seqgen_next('t0'), count(length('t' || g)) FROM generate_series(0, $t - 1) g \gset
SELECT (regexp_match(pg_read_file('/proc/self/status'), 'RssAnon:\s+(\d+)'))[1]::int8 AS before \gset
SELECT count(seqgen_next('t' || g)) FROM generate_series(0, $t - 1) g \gset
SELECT $t, (regexp_match(pg_read_file('/proc/self/status'), 'RssAnon:\s+(\d+)'))[1]::int8 - :before,
       current_setting('seqgen.backend_cache_size');
SQL
done
python3 - "$RESULTS" "$ROWS" "$MEM" <<'PY'
import statistics, sys
rows = [l.split('\t') for l in open(sys.argv[1]).read().split('\n') if l.strip()]
n_rows = int(sys.argv[2])
ts = sorted({int(r[1]) for r in rows})
med = lambda what, t, kind, col: statistics.median(float(r[3 + col]) for r in rows if r[0] == what and int(r[1]) == t and r[2] == kind)
labels = {'floor': "`length('t' || g)` (the floor)", 'seqgen': "`seqgen_next('t' || g)`, tags in shared memory",
          'nextval': "`nextval(('s' || g)::regclass)`"}
for t in ts:
    print(f"\n| {t:,} names, a new session | first pass, us per name | again in that session, us per name |")
    print("| --- | ---: | ---: |")
    for kind in ('floor', 'seqgen', 'nextval'):
        print(f"| {labels[kind]} | {med('first', t, kind, 0):.2f} | {med('first', t, kind, 1):.3f} |")
    s, n = med('first', t, 'seqgen', 0), med('first', t, 'nextval', 0)
    print(f"\nfirst draw: seqgen_next {s / n:.2f}x nextval's first touch; "
          f"again: {med('first', t, 'seqgen', 1) / med('first', t, 'nextval', 1):.2f}x")
print(f"\n| {n_rows:,} rows over T names, the first statement of a new session | ms | x the floor |")
print("| --- | ---: | ---: |")
for t in ts:
    floor = med('rows', t, 'floor', 0)
    for kind, what in (('floor', "`length('t' || g % T)`"), ('seqgen', "`seqgen_next('t' || g % T)`"),
                       ('nextval', "`nextval(('s' || g % T)::regclass)`")):
        v = med('rows', t, kind, 0)
        print(f"| T = {t:,}: {what} | {v:.0f} | {v / floor:.2f}x |")
print("\n| a new session's first draw of T tags | seqgen.backend_cache_size | its private memory grew by | per tag |")
print("| --- | ---: | ---: | ---: |")
for line in open(sys.argv[3]).read().split():
    t, kb, size = (int(x) for x in line.split('|'))
    print(f"| T = {t:,} | {size:,} | {kb / 1024:.1f} MB | {kb * 1024 / t:.0f} bytes |")
PY
rm -f "$RESULTS" "$MEM"
