#!/usr/bin/env bash
# pg_seqgen demo: installs what is missing, builds and installs the extension into the system
# PostgreSQL 15, starts a throwaway cluster (as the `postgres` OS user) with pg_seqgen
# preloaded, and shows it working. Safe to run again.
PG_MAJORS=${PG_MAJOR:-15}  # Debian's PostgreSQL 15 unless PG_MAJOR says otherwise
. "$(dirname "$0")/lib.sh"

DIR=/tmp/pg_seqgen_demo
PORT=${DEMO_PORT:-55488}

ensure_deps
install_extension
say "starting a throwaway cluster in $DIR (port $PORT)"
cluster_init "$DIR" "$PORT"
cluster_start "$DIR"
trap 'cluster_stop "$DIR" fast' EXIT

say "CREATE EXTENSION pg_seqgen, a tag, and a table keyed by seqgen_next('order')"
psql_at "$DIR" "$PORT" -e <<'SQL'
CREATE EXTENSION pg_seqgen;
SELECT seqgen_create('order', step => 1000, start_with => 100000, description => 'shop orders');
CREATE TABLE orders (
    id       bigint PRIMARY KEY DEFAULT seqgen_next('order'),
    customer text NOT NULL,
    amount   numeric(10,2) NOT NULL
);
INSERT INTO orders (customer, amount) VALUES ('alice', 12.50), ('bob', 7.00), ('carol', 99.90);
SELECT * FROM orders ORDER BY id;
BEGIN;
INSERT INTO orders (customer, amount) VALUES ('dave', 1.00);
ROLLBACK;
-- the rolled-back ID is never handed out again
INSERT INTO orders (customer, amount) VALUES ('erin', 3.30) RETURNING id;
SELECT seqgen_next_batch('order', 5);
SELECT biz_tag, step, max_id, next_value, segment_end, next_segment_ready, current_step
  FROM seqgen_status();
SQL

say "snowflake IDs, UUIDv7, templated order numbers, opaque numbers"
psql_at "$DIR" "$PORT" -e <<'SQL'
SELECT seqgen_snowflake() AS id, (seqgen_snowflake_decode(seqgen_snowflake())).*;
SELECT u AS uuid, (seqgen_uuidv7_decode(u)).*, u >= seqgen_uuidv7_at(now()) AS at_or_above_now
  FROM (SELECT seqgen_uuidv7() AS u FROM generate_series(1, 3)) x;
SELECT seqgen_create('waybill', step => 100);
SELECT seqgen_set_template('waybill', 'SN{yyyy}{MM}{dd}{seq:8}{check}', 'Asia/Shanghai');
SELECT seqgen_order_no('waybill') AS order_no, seqgen_check_digit_valid(seqgen_order_no('waybill')) AS valid
  FROM generate_series(1, 3);
SELECT seqgen_create('invoice');
SELECT seqgen_make_opaque('invoice');
SELECT seqgen_next('invoice') AS opaque_id, seqgen_reveal('invoice', seqgen_next('invoice')) AS counter_of_the_next
  FROM generate_series(1, 3);
-- the allocation worker's health
SELECT running, mailboxes_in_use, jobs_pending, errors, last_error FROM seqgen_worker_status();
SQL
say "demo finished; the cluster in $DIR is stopped on exit"
