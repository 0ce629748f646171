#!/usr/bin/env bash
# This working tree against an earlier commit, on the hot path: seqgen_next('b') per row and a
# thousand tags in turn, beside their floors, on twin clusters (private copies of the same
# PostgreSQL, one release build each), in alternating rounds so that drift hits both alike.
#
#   bash bench/ab.sh <commit>          # e.g. bash bench/ab.sh HEAD~3 (about 3 minutes)
#
# It builds this working tree as it is (uncommitted changes too), and makes every file in it
# newer than the last build (cargo decides what to rebuild by file times).
# Prints the median ns per row of each version and the ratio of this tree to the commit.
PG_MAJORS=${PG_MAJOR:-15}
. "$(dirname "$0")/../scripts/lib.sh"
BASE=${1:?usage: bash bench/ab.sh <commit>}
ROWS=${BENCH_ROWS:-2000000}
ROUNDS=${BENCH_ROUNDS:-9}
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
AB=/tmp/pg_seqgen_ab
ensure_deps
use_build_cache

# package: SRC OUT (a `cargo pgrx package` tree, release profile). The two share one target
# directory, where cargo tells this workspace's crates by their path in the workspace and what
# is stale by file times: each source is made newer than anything built before its build.
package() {
    local log=$AB/package.log
    find "$1" -path "$1/target" -prune -o -path "$1/.git" -prune -o -type f -exec touch -c {} +
    if ! (cd "$1" && as_root env "PATH=$PATH" "HOME=$HOME" "CARGO_TARGET_DIR=$CARGO_TARGET_DIR" \
        cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$2") >"$log" 2>&1; then
        tail -30 "$log"
        echo "cargo pgrx package failed in $1 (full log: $log)" >&2
        exit 1
    fi
}
# clusters left running by an earlier run that stopped half-way go first, then their files
cluster_stop "$AB/base" immediate 2>/dev/null || true
cluster_stop "$AB/this" immediate 2>/dev/null || true
trap 'cluster_stop "$AB/base" fast; cluster_stop "$AB/this" fast' EXIT
rm -rf "$AB" && mkdir -p "$AB/base-src" && chmod a+rx "$AB"
git -C "$ROOT" archive "$BASE" | tar -x -C "$AB/base-src"
say "building $BASE ($(git -C "$ROOT" rev-parse --short "$BASE")) and this tree"
package "$AB/base-src" "$AB/base-pkg"
package "$ROOT" "$AB/this-pkg"
for v in base:55531 this:55532; do
    name=${v%%:*} port=${v##*:}
    make_pg_tree "$AB/$name-tree" "$AB/$name-pkg"
    cluster_init "$AB/$name" "$port" "shared_buffers = 256MB" "seqgen.max_tags = 4096"
    cluster_start "$AB/$name" "$AB/$name-tree$PG_BIN"
    psql_at "$AB/$name" "$port" -f "$BENCH_DIR/setup.sql" \
        -c "SELECT count(seqgen_create('t' || g, 1000)) FROM generate_series(0, 999) g" >/dev/null
done
say "$ROUNDS alternating rounds of $ROWS rows"
: >"$AB/rounds.tsv"
for round in $(seq "$ROUNDS"); do
    for v in base:55531 this:55532; do
        name=${v%%:*} port=${v##*:}
        psql_at "$AB/$name" "$port" -At -F $'\t' -v rows="$ROWS" -f "$BENCH_DIR/ab.sql" | grep -F 'count(' |
            sed "s/^/$name\t/" >>"$AB/rounds.tsv"
    done
done
for v in base this; do
    # the library each cluster runs, to tell builds apart in the output
    echo "$v: $(sha256sum "$AB/$v-pkg$("$PG_CONFIG" --pkglibdir)/pg_seqgen.so" | cut -c1-12)"
done
python3 - "$ROWS" "$AB/rounds.tsv" "$BASE" <<'PY'
import statistics, sys
rows, path, base = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ms = {}
for line in open(path):
    v, q, t = line.rstrip("\n").split("\t")
    ms.setdefault((v, q[len("SELECT count("):q.index(") FROM generate_series")]), []).append(float(t))
ns = {k: statistics.median(x) * 1e6 / rows for k, x in ms.items()}
print(f"| f | {base} ns | this tree ns | this / {base} |")
print("| --- | ---: | ---: | ---: |")
for f in dict.fromkeys(q for _, q in ms):
    print(f"| `{f}` | {ns[('base', f)]:.1f} | {ns[('this', f)]:.1f} | {ns[('this', f)] / ns[('base', f)]:.3f}x |")
PY
