#!/usr/bin/env bash
# Tenants that cannot drain each other (issue 29): role `att` churns keys of its own tag that
# no one drew before, as fast as ATTACK_RATE allows (pgbench -R, 4 clients), for SECS seconds,
# while role `victim` draws order numbers of its `{seq:4}` daily tag at VICTIM_RATE per second
# (pgbench, one client). Reported: the victim's numbers lost (its last counter value against
# the numbers it drew), its failed calls, and its latency per call during the attack beside the
# same without it; the attack's achieved rate of new keys.
#
#   bash bench/tenants.sh                                # PostgreSQL 15, 10,000 keys/s, 60 s
#   PG_MAJOR=18 SECS=20 ATTACK_RATE=5000 bash bench/tenants.sh
#   BENCH_PG_CONFIG=/tmp/pg18dev/.../bin/pg_config bash bench/tenants.sh   # as installed there
PG_MAJORS=${PG_MAJOR:-15}
. "$(dirname "$0")/../scripts/lib.sh"

SECS=${SECS:-60}
ATTACK_RATE=${ATTACK_RATE:-10000}
VICTIM_RATE=${VICTIM_RATE:-50}
DIR=/tmp/pg_seqgen_bench_tenants
PORT=${BENCH_PORT:-55550}

if [ -n "${BENCH_PG_CONFIG:-}" ]; then
    # an installation that has pg_seqgen already (e.g. a private copy, see docs/contributing.md)
    PG_CONFIG=$BENCH_PG_CONFIG
    PG_BIN=$("$PG_CONFIG" --bindir)
else
    ensure_deps
    install_extension
fi
say "a throwaway cluster in $DIR (seqgen.max_tags at its default, 1,024)"
cluster_init "$DIR" "$PORT" "seqgen.max_databases = 1" "max_connections = 50"
cluster_start "$DIR"
trap 'cluster_stop "$DIR" fast' EXIT
psql_at "$DIR" "$PORT" >/dev/null <<'SQL'
CREATE EXTENSION pg_seqgen;
CREATE ROLE victim LOGIN; CREATE ROLE att LOGIN;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO victim, att;
SET ROLE victim;
SELECT seqgen_create('inv4');
SELECT seqgen_set_template('inv4', 'INV{yyyy}{MM}{dd}{seq:4}');
SET ROLE att;
SELECT seqgen_create('mine');
SQL
W=$(mktemp -d)
chmod 755 "$W"
echo "SELECT seqgen_order_no('inv4');" >"$W/victim.sql"
echo "SELECT seqgen_next('mine', md5(random()::text || clock_timestamp()::text));" >"$W/att.sql"
bench() { sudo -u postgres "$PG_BIN/pgbench" -h "$DIR" -p "$PORT" -n "$@" postgres; }
pick() { grep -E "$1" | head -1 | grep -oE '[0-9]+(\.[0-9]+)?' | head -1; }

say "the victim alone: $VICTIM_RATE order numbers per second for 10 s"
base=$(bench -U victim -f "$W/victim.sql" -c 1 -R "$VICTIM_RATE" -T 10 2>&1)
base_n=$(echo "$base" | pick 'actually processed')
base_lat=$(echo "$base" | pick 'latency average')

say "the attack: att draws new keys at up to $ATTACK_RATE per second for $SECS s, the victim draws on"
bench -U att -f "$W/att.sql" -c 4 -j 2 -R "$ATTACK_RATE" -T "$SECS" >"$W/att.out" 2>&1 &
apid=$!
under=$(bench -U victim -f "$W/victim.sql" -c 1 -R "$VICTIM_RATE" -T "$SECS" 2>&1)
wait $apid
att_tps=$(pick 'tps = ' <"$W/att.out")
att_failed=$(pick 'number of failed transactions' <"$W/att.out")
under_n=$(echo "$under" | pick 'actually processed')
under_lat=$(echo "$under" | pick 'latency average')
under_failed=$(echo "$under" | pick 'number of failed transactions')
last=$(psql_at "$DIR" "$PORT" -At -c "SET ROLE victim; SELECT seqgen_order_no('inv4')")
keys=$(psql_at "$DIR" "$PORT" -At -c "SELECT count(*) FROM seqgen.key_counter WHERE biz_tag = 'mine'")
drawn=$((base_n + under_n + 1))
counter=$((10#${last: -4}))
say "result"
echo "attack: ${att_tps:-?} new keys per second achieved (asked $ATTACK_RATE), $keys keys in all, failed ${att_failed:-0}"
echo "victim: $drawn order numbers drawn (last $last), counter at $counter: $((counter - drawn)) numbers lost"
echo "victim: failed calls during the attack ${under_failed:-0}"
echo "victim: latency per call ${base_lat} ms alone, ${under_lat} ms during the attack"
rm -rf "$W"
