#!/usr/bin/env bash
# Cold paths (issue 33), side by side in one run: a new session's first draw of each of T tags
# that shared memory already holds (every tag drawn once before by another session), beside
# nextval's first touch of T sequences in a new session, and then the same names again in that
# session; the floor of the same expression (length('t' || g)) beside them. Each round is a new
# connection (a new backend); rounds alternate between the kinds; the median of 5 rounds, in
# microseconds per tag.
#
#   bash bench/cold.sh                    # T = 10,000, about 2 minutes
#   BENCH_TAGS=100000 bash bench/cold.sh  # (100,000 sequences take a few minutes to create)
PG_MAJORS=${PG_MAJOR:-15}
. "$(dirname "$0")/../scripts/lib.sh"

T=${BENCH_TAGS:-10000}
ROUNDS=5
DIR=/tmp/pg_seqgen_bench_cold
PORT=${BENCH_PORT:-55545}

ensure_deps
install_extension
say "starting a throwaway cluster in $DIR (room for $((T * 2)) tags)"
cluster_init "$DIR" "$PORT" "shared_buffers = 512MB" "seqgen.max_databases = 1" \
    "seqgen.max_tags = $((T * 2))" "max_locks_per_transaction = $((T / 50 + 64))"
cluster_start "$DIR"
trap 'cluster_stop "$DIR" fast' EXIT

say "$T tags and $T sequences, each drawn once (so shared memory holds every tag)"
psql_at "$DIR" "$PORT" >/dev/null <<SQL
CREATE EXTENSION pg_seqgen;
SELECT count(seqgen_create('t' || g, 100)) FROM generate_series(0, $T - 1) g;
SELECT (SELECT string_agg(format('CREATE SEQUENCE s%s', g), '; ')
          FROM generate_series(i * 1000, least(i * 1000 + 999, $T - 1)) g)
  FROM generate_series(0, ($T - 1) / 1000) i \gexec
SELECT count(seqgen_next('t' || g)) FROM generate_series(0, $T - 1) g;
SELECT count(nextval(('s' || g)::regclass)) FROM generate_series(0, $T - 1) g;
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
SQL

say "$ROUNDS rounds, each kind in a new session per round"
RESULTS=$(mktemp)
for r in $(seq 1 $ROUNDS); do
    for kind in floor seqgen nextval; do
        printf '%s\t' "$kind" >>"$RESULTS"
        psql_at "$DIR" "$PORT" -At -F $'\t' -c "SELECT * FROM cold_round('$kind', $T)" >>"$RESULTS"
    done
done
python3 - "$RESULTS" "$T" <<'PY'
import statistics, sys
rows = [l.split('\t') for l in open(sys.argv[1]).read().split('\n') if l.strip()]
t = int(sys.argv[2])
med = {}
for kind in ('floor', 'seqgen', 'nextval'):
    vals = [(float(a), float(b)) for k, a, b in rows if k == kind]
    med[kind] = (statistics.median(v[0] for v in vals), statistics.median(v[1] for v in vals))
print(f"| {t:,} names, a new session | first pass, us per name | again in that session, us per name |")
print("| --- | ---: | ---: |")
labels = {'floor': "`length('t' || g)` (the floor)", 'seqgen': "`seqgen_next('t' || g)`, tags in shared memory",
          'nextval': "`nextval(('s' || g)::regclass)`"}
for kind in ('floor', 'seqgen', 'nextval'):
    print(f"| {labels[kind]} | {med[kind][0]:.2f} | {med[kind][1]:.3f} |")
print(f"\nfirst draw: seqgen_next {med['seqgen'][0] / med['nextval'][0]:.2f}x nextval's first touch; "
      f"again: {med['seqgen'][1] / med['nextval'][1]:.2f}x")
PY
rm -f "$RESULTS"
