#!/usr/bin/env bash
# Build a released version of pg_seqgen (for the upgrade tests and the side-by-side
# benchmark) from this repository's history, for one PostgreSQL major (the first argument,
# default PG_MAJOR), into $PG_TREES/old/<version>-pg<major>/ (a `cargo pgrx package` tree: the
# installation's pkglibdir/pg_seqgen.so and sharedir/extension/ below that root). The second
# argument is the version: 0.1.0 (default), 0.2.0, 0.3.0, 0.4.0, 0.5.0 or 0.6.0.
# Cached outside the clone, with the PostgreSQL trees (a released version never changes): a
# second run, also from another clone, only prints the path.
#
# SEQGEN_OLD_QUICK=1 (tests/run.sh): any build will do, as the upgrade tests only need the state
# an old version leaves behind. A release build already there is used; otherwise one is built
# quickly into <version>-pg<major>-quick/: without LTO, with parallel codegen, and with one
# target directory for every version, so that the dependencies (pgrx and the rest: the same
# versions in every release's Cargo.lock) compile once per major rather than once per version.
# The benchmark compares speed, so it gets the release build (its own profile, LTO included).
. "$(dirname "$0")/lib.sh"
use_major "${1:-$PG_MAJOR}"
OLD_VERSION=${2:-0.1.0}
QUICK=${SEQGEN_OLD_QUICK:-}
case "$OLD_VERSION" in
    0.1.0) OLD_COMMIT=1f09aa59b66809931071937e3659781f7917d37d ;;  # the 0.1.0 release
    0.2.0) OLD_COMMIT=2273e80097c108e7589268e601b46e6038471c16 ;;  # the 0.2.0 release
    0.3.0) OLD_COMMIT=44a366ade532c4f6333c201352e4bd4f13ec9f55 ;;  # the 0.3.0 release
    0.4.0) OLD_COMMIT=9b29cc5e9d2930d83babd2d6cb022d35164a9991 ;;  # the 0.4.0 release
    0.5.0) OLD_COMMIT=41fc6925a58537c81a5e4ba513a664f0373c0bab ;;  # the 0.5.0 release
    0.6.0) OLD_COMMIT=12f3c892f17dddcbe99caa60897b9aa51bbf56cd ;;  # the 0.6.0 release
    *) echo "unknown pg_seqgen version $OLD_VERSION" >&2; exit 1 ;;
esac
OLD="$PG_TREES/old"
out="$OLD/$OLD_VERSION-pg$PG_MAJOR"
target="$OLD/target-$OLD_VERSION"
quick_env=()
if [ -n "$QUICK" ] && [ ! -f "$out/.done" ]; then
    out="$out-quick"
    target="$OLD/target-quick"
    quick_env=(CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16)
fi
if [ ! -f "$out/.done" ]; then
    git -C "$ROOT" cat-file -e "$OLD_COMMIT^{commit}" 2>/dev/null || {
        echo "commit $OLD_COMMIT (pg_seqgen $OLD_VERSION) is not in this clone's history" >&2
        exit 1
    }
    src="$OLD/src-$OLD_VERSION"
    rm -rf "$src" "$out"
    mkdir -p "$src"
    # -m: the files get the time of extraction, not of the commit, so that cargo sees them as
    # newer than what another version left in a shared target directory. cargo names the path
    # dependency seqgen-core by its path in the workspace ("core"), the same in every version:
    # without -m, a version could link another's seqgen-core.
    git -C "$ROOT" archive "$OLD_COMMIT" | tar -x -m -C "$src"
    say "building pg_seqgen $OLD_VERSION for PostgreSQL $PG_MAJOR from $OLD_COMMIT (${QUICK:+quick, }a few minutes)" >&2
    (cd "$src" && env CARGO_TARGET_DIR="$target" "${quick_env[@]}" \
        cargo pgrx package --pg-config "$PG_CONFIG" --out-dir "$out" >"$OLD/build-$OLD_VERSION-pg$PG_MAJOR.log" 2>&1) || {
        tail -30 "$OLD/build-$OLD_VERSION-pg$PG_MAJOR.log"
        exit 1
    }
    touch "$out/.done"
fi
echo "$out"
