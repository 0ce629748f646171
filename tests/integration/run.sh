#!/usr/bin/env bash
# Run the integration and fault suite (tests/integration/tests/*.rs) on the major that
# SEQGEN_PG_CONFIG names, JOBS test files at a time (default 3, or 2 with Citus), each file with
# its own tests two at a time as before. Arguments go to every test binary (e.g. --skip NAME).
#
# Most of the suite waits on servers (starts, stops, crashes, standbys catching up, timeouts),
# so files side by side use the cores that one leaves idle. Files that use the same
# ports run one after the other, in one job (the groups below): a test's clusters listen on
# fixed ports, and cluster directories are named per test, unique across the files.
#
# The test binaries are built once (cargo test --no-run) and then run directly, not through
# `cargo test`, which holds the build directory's lock while its tests run. Each job's output is
# printed whole when it ends, so that the files' outputs do not interleave; the summary lines
# ("test result: ...") are what tests/run.sh counts.
set -euo pipefail
cd "$(dirname "$0")"
# Two at a time beside Citus (its cluster of three servers keeps both cores busy), three
# otherwise: the files spend much of their time waiting on servers (about a third of the CPU is
# idle with two), and three cut a major's suite by a quarter (191 s to 145 s on 16).
if [ "${SEQGEN_CITUS:-}" = 1 ]; then JOBS=${SEQGEN_TEST_JOBS:-2}; else JOBS=${SEQGEN_TEST_JOBS:-3}; fi
[ "$JOBS" -ge 1 ] 2>/dev/null || { echo "SEQGEN_TEST_JOBS must be 1 or more" >&2; exit 2; }

# files that share ports: one job each, in this order
GROUPS_SHARING_PORTS=(
    "citus order_no operate"  # Citus::start(56300..) beside order_no 56301..; inactive nodes on operate's 56901..
    "databases uuid"          # 56801..56804
)
# the longest first, so that the lanes end together (times on PostgreSQL 15, in seconds):
# citus 242 (when SEQGEN_CITUS=1), round2 85, keys 65, fuzz 45 per seed, faults 55, segment 40,
# hardening 36, hardening3 26; the rest 20 or less
ORDER=(citus round2 fuzz keys faults segment hardening hardening3 databases snowflake upgrade
    gapless opaque config_docs majors surface docs counters cold)

# build every test binary, and learn where each is
exe_list=$(mktemp)
trap 'rm -f "$exe_list"' EXIT
cargo test -p seqgen-integration --tests --no-run --message-format=json-render-diagnostics |
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "test" in m["target"]["kind"]:
        print(m["target"]["name"], m["executable"])
' >"$exe_list"
declare -A EXE=()
while read -r name exe; do EXE[$name]=$exe; done <"$exe_list"

# the jobs: each group, then every other file alone, in ORDER, then any file ORDER misses
declare -A IN_JOB=()
jobs_list=()
add_job() {
    local f job=""
    for f in $1; do
        if [ -n "${EXE[$f]:-}" ] && [ -z "${IN_JOB[$f]:-}" ]; then job+="$f "; IN_JOB[$f]=1; fi
    done
    if [ -n "$job" ]; then jobs_list+=("${job% }"); fi
}
declare -A GROUP_OF=()
for g in "${GROUPS_SHARING_PORTS[@]}"; do for f in $g; do GROUP_OF[$f]=$g; done; done
for f in "${ORDER[@]}" $(printf '%s\n' "${!EXE[@]}" | sort); do add_job "${GROUP_OF[$f]:-$f}"; done

outdir=$(mktemp -d /tmp/pg_seqgen_it_logs.XXXXXX)
run_job() {
    local job=$1 f rc=0
    for f in $job; do
        echo "     Running tests/$f.rs (${EXE[$f]})"
        "${EXE[$f]}" --test-threads=2 --nocapture "${@:2}" || rc=1
    done
    return $rc
}

declare -A PID_JOB=()
failed=()
t0=$SECONDS
# Ctrl-C (SIGINT) or SIGTERM stops the running test files and their servers too. A script's
# background jobs ignore SIGINT (and run in process groups of their own, below), so without
# this the test binaries ran on after Ctrl-C; and a killed binary leaves its clusters running
# (the next run's Cluster::init stops them anyway).
stop_jobs() {
    local pid d p
    # (tee may be gone with the terminal's Ctrl-C: a message must not end this)
    trap '' PIPE
    for pid in "${!PID_JOB[@]}" $(jobs -p); do
        kill -TERM -- "-$pid" 2>/dev/null || true
    done
    # twice: a server a killed binary was starting may write its postmaster.pid a moment later
    local round
    for round in 1 2; do
        sleep 1
        for d in /tmp/pg_seqgen_it/*/data /tmp/pg_seqgen_it/*/*/data; do
            # SIGQUIT: the postmaster's immediate shutdown; only to a process whose working
            # directory is that data directory (a postmaster's is), not to whatever PID a
            # stale postmaster.pid names
            p=$(head -1 "$d/postmaster.pid" 2>/dev/null) || continue
            if [ -n "$p" ] && [ "$(readlink -f "/proc/$p/cwd" 2>/dev/null)" = "$(readlink -f "$d")" ]; then
                kill -QUIT "$p" 2>/dev/null || true
            fi
        done
    done
    rm -rf "$outdir"
    echo "integration suite interrupted: its test files and their servers were stopped" >&2 || true
}
trap 'stop_jobs; exit 130' INT
trap 'stop_jobs; exit 143' TERM
# a closed terminal too: in process groups of their own, the jobs get no SIGHUP of it
trap 'stop_jobs; exit 129' HUP
finish_one() {
    local pid rc=0
    wait -n -p pid "${!PID_JOB[@]}" || rc=$?
    local job=${PID_JOB[$pid]} key=${PID_JOB[$pid]// /_}
    unset "PID_JOB[$pid]"
    cat "$outdir/$key.log"
    printf '\033[2m    (integration: %s ended after %d s of the suite, %s)\033[0m\n' \
        "$job" "$((SECONDS - t0))" "$([ $rc = 0 ] && echo passed || echo FAILED)"
    if [ $rc != 0 ]; then failed+=("$job"); fi
}
for job in "${jobs_list[@]}"; do
    while [ "${#PID_JOB[@]}" -ge "$JOBS" ]; do finish_one; done
    key=${job// /_}
    # each job in a process group of its own (job control on while it starts), so that an
    # interruption stops all it runs: the test binary, and its sudo, pg_ctl and initdb
    set -m
    run_job "$job" "$@" </dev/null >"$outdir/$key.log" 2>&1 &
    set +m
    PID_JOB[$!]=$job
done
while [ "${#PID_JOB[@]}" -gt 0 ]; do finish_one; done
rm -rf "$outdir"
if [ ${#failed[@]} -gt 0 ]; then
    echo "integration test files that failed: ${failed[*]}" >&2
    exit 1
fi
