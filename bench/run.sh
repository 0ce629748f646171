#!/usr/bin/env bash
# pg_seqgen benchmark: one command, one throwaway cluster, every number a ratio measured side
# by side in the same run against PostgreSQL's own nextval, gen_random_uuid() and the per-row
# floor abs(g).
#
#   bash bench/run.sh                 # full run (about 35 minutes on 2 cores)
#   BENCH_SECONDS=5 bash bench/run.sh # shorter pgbench runs
#   PG_MAJOR=18 bash bench/run.sh     # on PostgreSQL 18 (adds its built-in uuidv7())
#
# Prints Markdown tables; docs/benchmarks.md shows the latest ones.
PG_MAJORS=${PG_MAJOR:-15}  # Debian's PostgreSQL 15 unless PG_MAJOR says otherwise (16, 18)
. "$(dirname "$0")/../scripts/lib.sh"

SECONDS_EACH=${BENCH_SECONDS:-20}
ROWS=${BENCH_ROWS:-2000000}
DIR=/tmp/pg_seqgen_bench
PORT=${BENCH_PORT:-55499}
OUT=$DIR/out
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)

ensure_deps
# the chart: matplotlib in a virtual environment of its own, kept with the PostgreSQL trees
BENCH_VENV=$PG_TREES/bench-venv
if ! "$BENCH_VENV/bin/python" -c "import matplotlib" 2>/dev/null; then
    say "installing matplotlib into $BENCH_VENV (once)"
    if ! as_root python3 -m venv "$BENCH_VENV" 2>/dev/null; then
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq python3-venv >/dev/null
        as_root python3 -m venv "$BENCH_VENV"
    fi
    as_root "$BENCH_VENV/bin/pip" install -q "matplotlib==3.10.7"
fi
install_extension
OLD_PKG=$(bash "$ROOT/scripts/old_version.sh" "$PG_MAJOR" 0.1.0 | tail -1)
OLD_DIR=/tmp/pg_seqgen_bench_old
OLD_PORT=$((PORT + 1))
# 0.3.0, for the cost of 0.4.0's per-tag privilege check on the hot path
V03_PKG=$(bash "$ROOT/scripts/old_version.sh" "$PG_MAJOR" 0.3.0 | tail -1)
V03_DIR=/tmp/pg_seqgen_bench_v03
V03_PORT=$((PORT + 2))
# many tags in turn: a cluster with room for 100,000 tags in shared memory (one database)
TAGS_DIR=/tmp/pg_seqgen_bench_tags
TAGS_PORT=$((PORT + 3))
# this version's twin of the 0.3.0 cluster: the same configuration and setup, and a private
# copy of PostgreSQL like 0.3.0's (a cluster run from the system's binaries measured its floor,
# abs(g), 2% apart from the copy's, which is as large as what is measured)
V_DIR=/tmp/pg_seqgen_bench_this
V_PORT=$((PORT + 4))

say "starting a throwaway cluster in $DIR"
cluster_init "$DIR" "$PORT" "shared_buffers = 256MB" "max_wal_size = 4GB" "checkpoint_timeout = 30min"
cluster_start "$DIR"
say "starting a second cluster with pg_seqgen 0.1.0 (the release), for the step-100 row"
OLD_TREE=/tmp/pg_seqgen_bench_old_tree
make_pg_tree "$OLD_TREE" "$OLD_PKG"
cluster_init "$OLD_DIR" "$OLD_PORT" "shared_buffers = 256MB" "max_wal_size = 4GB" "checkpoint_timeout = 30min" "seqgen.adaptive_step = off"
cluster_start "$OLD_DIR" "$OLD_TREE$PG_BIN"
say "starting a third cluster with pg_seqgen 0.3.0, and a fourth with room for 100,000 tags"
V03_TREE=/tmp/pg_seqgen_bench_v03_tree
make_pg_tree "$V03_TREE" "$V03_PKG"
cluster_init "$V03_DIR" "$V03_PORT" "shared_buffers = 256MB" "max_wal_size = 4GB" "checkpoint_timeout = 30min"
cluster_start "$V03_DIR" "$V03_TREE$PG_BIN"
V_TREE=/tmp/pg_seqgen_bench_this_tree
# this version's files are the installed ones
make_pg_tree "$V_TREE" ""
cluster_init "$V_DIR" "$V_PORT" "shared_buffers = 256MB" "max_wal_size = 4GB" "checkpoint_timeout = 30min"
cluster_start "$V_DIR" "$V_TREE$PG_BIN"
cluster_init "$TAGS_DIR" "$TAGS_PORT" "shared_buffers = 256MB" "seqgen.max_databases = 1" "seqgen.max_tags = 131072"
cluster_start "$TAGS_DIR"
trap 'cluster_stop "$DIR" fast; cluster_stop "$OLD_DIR" fast; cluster_stop "$V03_DIR" fast; cluster_stop "$V_DIR" fast; cluster_stop "$TAGS_DIR" fast' EXIT
psql_at "$OLD_DIR" "$OLD_PORT" -c "CREATE EXTENSION pg_seqgen" -c "SELECT seqgen_create('p', 100)" >/dev/null
for d in "$V03_DIR:$V03_PORT" "$V_DIR:$V_PORT" "$TAGS_DIR:$TAGS_PORT"; do
    psql_at "${d%%:*}" "${d##*:}" -f "$BENCH_DIR/setup.sql" >/dev/null
done
psql_at "$TAGS_DIR" "$TAGS_PORT" -c "SELECT count(seqgen_create('t' || g, 1000)) FROM generate_series(0, 99999) g" >/dev/null
mkdir -p "$OUT" && chown postgres "$OUT"

psql_at "$DIR" "$PORT" -f "$BENCH_DIR/setup.sql" >/dev/null
# a second and a third database with the extension and the same tags (own allocators)
for db in bench2 bench3; do
    psql_at "$DIR" "$PORT" -c "CREATE DATABASE $db" >/dev/null
    PSQL_DB=$db psql_at "$DIR" "$PORT" -f "$BENCH_DIR/setup.sql" >/dev/null
done

say "single session, $ROWS rows per query, median of 5 interleaved rounds"
psql_at "$DIR" "$PORT" -At -F $'\t' -v rows="$ROWS" -f "$BENCH_DIR/single.sql" > "$OUT/single.tsv"

say "many tags in turn (and scattered): seqgen_next('t' || g % T) against length('t' || g % T), T = 1,000, 10,000, 100,000"
psql_at "$TAGS_DIR" "$TAGS_PORT" -At -F $'\t' -v rows="$ROWS" -f "$BENCH_DIR/tags.sql" > "$OUT/tags.tsv"
say "the same without blocks of values per session (seqgen.backend_block = 1)"
psql_at "$TAGS_DIR" "$TAGS_PORT" -At -F $'\t' -v rows="$ROWS" -c "SET seqgen.backend_block = 1" -f "$BENCH_DIR/tags.sql" > "$OUT/tags_block1.tsv"

say "the privilege check: seqgen_next('b') per row in this version and in 0.3.0, twin clusters, 9 alternating rounds"
: > "$OUT/versions.tsv"
for round in 1 2 3 4 5 6 7 8 9; do
    for d in "this:$V_DIR:$V_PORT" "0.3.0:$V03_DIR:$V03_PORT"; do
        IFS=: read -r label ddir dport <<< "$d"
        psql_at "$ddir" "$dport" -At -F $'\t' -v rows="$ROWS" -f "$BENCH_DIR/versions.sql" | sed "s/^/$label\t/" >> "$OUT/versions.tsv"
    done
done

say "three databases: the floor, seqgen_next and nextval in each, median of 5"
: > "$OUT/databases.tsv"
for db in postgres bench2 bench3; do
    PSQL_DB=$db psql_at "$DIR" "$PORT" -At -F $'\t' -v rows="$ROWS" -f "$BENCH_DIR/databases.sql" >> "$OUT/databases.tsv"
done

say "pgbench: 8 clients, 2 threads, prepared, ${SECONDS_EACH}s each"
pgbench_run() {
    local name=$1 sql=$2 dir=${3:-$DIR} port=${4:-$PORT}
    echo "$sql" > "$OUT/$name.sql"
    rm -f "$OUT/log_$name".*
    (cd "$OUT" && sudo -u postgres "$PG_BIN/pgbench" -h "$dir" -p "$port" -n -c 8 -j 2 -M prepared \
        -T "$SECONDS_EACH" --log --log-prefix="$OUT/log_$name" -f "$OUT/$name.sql" postgres) \
        > "$OUT/$name.out" 2>&1
    grep -q "tps = " "$OUT/$name.out" || { cat "$OUT/$name.out"; exit 1; }
    echo "  $name: $(grep -o 'tps = [0-9.]*' "$OUT/$name.out")"
}
# the same 8 clients spread over three databases (3 + 3 + 2, one pgbench each, at once)
pgbench_spread() {
    local name=$1 sql=$2 pids=() spec db n
    echo "$sql" > "$OUT/$name.sql"
    for spec in postgres:3 bench2:3 bench3:2; do
        db=${spec%%:*} n=${spec##*:}
        rm -f "$OUT/log_${name}_$db".*
        (cd "$OUT" && sudo -u postgres "$PG_BIN/pgbench" -h "$DIR" -p "$PORT" -n -c "$n" -j 1 -M prepared \
            -T "$SECONDS_EACH" --log --log-prefix="$OUT/log_${name}_$db" -f "$OUT/$name.sql" "$db") \
            > "$OUT/${name}_$db.out" 2>&1 &
        pids+=($!)
    done
    wait "${pids[@]}"
    for db in postgres bench2 bench3; do
        grep -q "tps = " "$OUT/${name}_$db.out" || { cat "$OUT/${name}_$db.out"; exit 1; }
    done
    echo "  $name over three databases: $(grep -ho 'tps = [0-9.]*' "$OUT/${name}"_*.out | tr '\n' ' ')"
}
set_adaptive() {
    psql_at "$DIR" "$PORT" -c "ALTER SYSTEM SET seqgen.adaptive_step = $1" -c "SELECT pg_reload_conf()" >/dev/null
}
pgbench_run select1 "SELECT 1;"
pgbench_run nextval "SELECT nextval('s');"
pgbench_run uuid "SELECT gen_random_uuid();"
pgbench_run seqgen_next "SELECT seqgen_next('b');"
pgbench_run snowflake "SELECT seqgen_snowflake();"
pgbench_run snowflake53 "SELECT seqgen_snowflake53();"
pgbench_run seqgen_uuidv7 "SELECT seqgen_uuidv7();"
pgbench_spread spread_select1 "SELECT 1;"
pgbench_spread spread_nextval "SELECT nextval('s');"
pgbench_spread spread_seqgen_next "SELECT seqgen_next('b');"
pgbench_spread spread_snowflake "SELECT seqgen_snowflake();"
if [ "$PG_MAJOR" -ge 18 ]; then
    pgbench_run uuidv7 "SELECT uuidv7();"
fi
set_adaptive off
# a segment switch every 100 IDs, this version and 0.1.0 alternately (two rounds each), so
# drift on this shared machine hits both alike
pgbench_run seqgen_next_step100 "SELECT seqgen_next('p');"
pgbench_run old_step100 "SELECT seqgen_next('p');" "$OLD_DIR" "$OLD_PORT"
pgbench_run seqgen_next_step100_2 "SELECT seqgen_next('p');"
pgbench_run old_step100_2 "SELECT seqgen_next('p');" "$OLD_DIR" "$OLD_PORT"
set_adaptive on

psql_at "$DIR" "$PORT" -At -c "SELECT biz_tag, waits FROM seqgen_status()" > "$OUT/waits.tsv"
# the tables on stdout; the chart into docs/ (docs/benchmarks.md shows it above the tables)
"$BENCH_VENV/bin/python" "$BENCH_DIR/report.py" "$OUT" "$SECONDS_EACH" "$ROWS" "$PG_MAJOR" "$ROOT/docs/bench-pg$PG_MAJOR.png"

say "gapless numbers: bench/gapless.sh"
PG_MAJOR=$PG_MAJOR bash "$BENCH_DIR/gapless.sh"

say "counters per key: bench/keys.sh"
PG_MAJOR=$PG_MAJOR bash "$BENCH_DIR/keys.sh"

say "cold paths, new sessions: bench/cold.sh"
PG_MAJOR=$PG_MAJOR bash "$BENCH_DIR/cold.sh"

say "a burst of new keys from 8 sessions, beside a counter upsert: bench/burst.sh"
PG_MAJOR=$PG_MAJOR bash "$BENCH_DIR/burst.sh"
