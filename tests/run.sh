#!/usr/bin/env bash
# The whole pg_seqgen test suite, on a fresh machine or again on this one:
#   1. the functional core: cargo test -p seqgen-core (unit and property tests, no PostgreSQL)
# then, for every major in PG_MAJORS (default "15 16 17 18"; 16 and 18 from pinned PyPI wheels,
# 17 from Debian 13's packages in a Debian 13 root, where steps 2 to 4 run in turn, see
# scripts/debian13.sh; PG_MAJORS=18 bash tests/run.sh for one):
#   2. the #[pg_test]s: cargo pgrx test pgNN, in a test cluster with pg_seqgen preloaded
#   3. the integration and fault suite on that major's binaries: real clusters, concurrent
#      sessions, crashes, standbys, dump/restore, operator faults, several databases, the
#      upgrades from the released 0.1.0, 0.2.0, 0.3.0, 0.4.0 and 0.5.0 (cargo test -p seqgen-integration;
#      all built from history for the major by scripts/old_version.sh), the operation fuzzer,
#      and on 15 a Citus cluster (Citus 13.2 built once from ../shared/citus: scripts/citus.sh)
# and last, with 15 among them:
#   4. the Debian package: built by scripts/package.sh, installed with apt in place of the
#      source install, used in a cluster, removed (tests/package_test.sh); for 15 on this
#      machine, for 17 in the Debian 13 root against Debian's own postgresql-17
# Installs whatever is missing first (apt packages, cargo-pgrx 0.18.0, cargo pgrx init).
. "$(dirname "$0")/../scripts/lib.sh"
cd "$ROOT"

ensure_deps
# The test clusters listen on ports 55000 to 58999. Keep the kernel from giving those ports to
# outgoing connections as their local ports: a client's ephemeral port once took the port a
# standby was about to listen on ("could not bind ... Address already in use").
echo 55000-58999 | as_root tee /proc/sys/net/ipv4/ip_local_reserved_ports >/dev/null 2>&1 || true
LOG=$(mktemp /tmp/pg_seqgen_tests.XXXXXX)
# run a test command, keep its output for the summary
run() { "$@" 2>&1 | tee -a "$LOG"; }

if [ -z "${SEQGEN_IN_ROOT:-}" ]; then
    say "1/3 functional core: cargo test -p seqgen-core"
    run cargo test -p seqgen-core --lib
fi

for major in $PG_MAJORS; do
    if [ "$major" = "$ROOT_MAJOR" ] && [ "$DEBIAN_MAJOR" != "$ROOT_MAJOR" ]; then
        . "$ROOT/scripts/debian13.sh"
        debian13_ensure
        debian13_mount
        trap debian13_umount EXIT
        say "PostgreSQL $major in the Debian 13 root $DEBIAN13_ROOT: tests/run.sh there"
        run in_debian13 env SEQGEN_IN_ROOT=1 PG_MAJORS="$major" bash /src/pg_seqgen/tests/run.sh
        continue
    fi
    use_major "$major"
    say "2/3 #[pg_test]s on PostgreSQL $major: cargo pgrx test pg$major"
    PGRX_TEST_DATA=/tmp/pg_seqgen_pgrx_test_$major
    # a fresh test cluster every run (its worker must not be connected while pgrx recreates the db)
    rm -rf "$PGRX_TEST_DATA" && mkdir -p "$PGRX_TEST_DATA" && chown postgres "$PGRX_TEST_DATA"
    RUST_TEST_THREADS=1 run cargo pgrx test "pg$major" --runas postgres --pgdata "$PGRX_TEST_DATA/data"

    say "3/3 integration and fault suite on PostgreSQL $major"
    install_extension
    SEQGEN_OLD_PACKAGE=$(bash "$ROOT/scripts/old_version.sh" "$major" 0.1.0 | tail -1)
    SEQGEN_OLD_PACKAGE_0_2_0=$(bash "$ROOT/scripts/old_version.sh" "$major" 0.2.0 | tail -1)
    SEQGEN_OLD_PACKAGE_0_3_0=$(bash "$ROOT/scripts/old_version.sh" "$major" 0.3.0 | tail -1)
    SEQGEN_OLD_PACKAGE_0_4_0=$(bash "$ROOT/scripts/old_version.sh" "$major" 0.4.0 | tail -1)
    SEQGEN_OLD_PACKAGE_0_5_0=$(bash "$ROOT/scripts/old_version.sh" "$major" 0.5.0 | tail -1)
    export SEQGEN_OLD_PACKAGE SEQGEN_OLD_PACKAGE_0_2_0 SEQGEN_OLD_PACKAGE_0_3_0 SEQGEN_OLD_PACKAGE_0_4_0 SEQGEN_OLD_PACKAGE_0_5_0  # SEQGEN_PG_CONFIG: use_major
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
    run cargo test -p seqgen-integration --test '*' -- --test-threads=2 --nocapture
done

# the Debian package for PostgreSQL 15: built, installed with apt, used, removed
if [[ " $PG_MAJORS " == *" $DEBIAN_MAJOR "* ]]; then
    say "4/4 the .deb package (PostgreSQL $DEBIAN_MAJOR): scripts/package.sh, apt-get install, use, apt-get remove"
    run bash "$ROOT/tests/package_test.sh"
fi

# one closing line over all three runners
passed=$(grep '^test result:' "$LOG" | grep -o '[0-9]* passed' | awk '{s+=$1} END {print s+0}')
failed=$(grep '^test result:' "$LOG" | grep -o '[0-9]* failed' | awk '{s+=$1} END {print s+0}')
say "all tests passed"
echo "tests: $passed passed, $failed failed"
