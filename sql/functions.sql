-- Nothing that draws IDs or changes the catalog is callable by PUBLIC: grant what each role
-- needs, e.g. for an application role that only draws IDs:
--   GRANT EXECUTE ON FUNCTION seqgen_next, seqgen_next_batch(text, integer) TO app;
REVOKE ALL ON FUNCTION @extschema@.seqgen_create(pg_catalog.text, pg_catalog.int4, pg_catalog.int8, pg_catalog.text, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_drop(pg_catalog.text, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_next(pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_next(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_key_status(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_next_batch(pg_catalog.text, pg_catalog.int4) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_alloc_deleted() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_order_no(pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_order_no(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_template_changed() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_reservation_written() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_make_opaque(pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_reveal(pg_catalog.text, pg_catalog.int8) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_reveal_order_no(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_set_node_bits(pg_catalog.text, pg_catalog.int4) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_set_template(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_worker_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_allocators() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_uuidv7() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_uuidv7_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_alter(pg_catalog.text, pg_catalog.int4, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_restart(pg_catalog.text, pg_catalog.int8, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_restart_undo(pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_advance(pg_catalog.text, pg_catalog.int8) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake_advance(pg_catalog.int8, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake_rewind(pg_catalog.int8) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_uuidv7_rewind(pg_catalog.uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_uuidv7_advance(pg_catalog.uuid, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake53_advance(pg_catalog.int8, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_grant(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_revoke(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_alloc_acl_changed() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake53() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake53_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake53_rewind(pg_catalog.int8) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_config() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_apply(pg_catalog.jsonb, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_publish(pg_catalog.name) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_cluster_definitions(pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_node() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_create_gapless(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_gapless_next(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_gapless_order_no(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_gapless_attach(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_column_tag(pg_catalog.regclass, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_next_code(pg_catalog.text, pg_catalog.int4) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_reveal_code(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_currval(pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_lastval() FROM PUBLIC;
-- The cumulative counters: for monitoring (pg_monitor, as PostgreSQL's own statistics views
-- serve it), set to zero by superusers (and the roles granted EXECUTE), as pg_stat_reset().
REVOKE ALL ON FUNCTION @extschema@.seqgen_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.seqgen_stats() TO pg_monitor;
REVOKE ALL ON FUNCTION @extschema@.seqgen_stats_reset() FROM PUBLIC;
-- Pure helpers stay executable by everyone (seqgen_render, seqgen_check_digit_valid,
-- seqgen_snowflake_decode, seqgen_snowflake_at, seqgen_uuidv7_at, seqgen_uuidv7_decode,
-- seqgen_snowflake53_decode, seqgen_snowflake53_at, seqgen_encode, seqgen_decode, seqgen_encode_uuid,
-- seqgen_decode_uuid, seqgen_encode_typed, seqgen_decode_typed, seqgen_encode_typeid,
-- seqgen_decode_typeid, seqgen_code_is_valid): they read no state and can be used in CHECK constraints.

-- What each function is: its COMMENT (\df+ shows it), generated from the function's page in
-- docs/reference, where the book shows the same text. The update script from 0.5.0 carries the
-- same block (the upgrade test compares every function's description after an update with a
-- fresh install's). Internal functions say so.
-- <comments>
-- Generated from the headings of docs/reference/*.md by tests/integration/tests/docs.rs
-- (SEQGEN_BLESS=1 writes it): edit the pages, not these lines.
COMMENT ON FUNCTION @extschema@.seqgen_adopt(pg_catalog.text, pg_catalog.regclass, pg_catalog.name, pg_catalog.int4) IS 'Move a bigint column (serial, identity or plain) to a new tag that starts above its values; its DEFAULT becomes seqgen_next';
COMMENT ON FUNCTION @extschema@.seqgen_adopt_snowflake(pg_catalog.regclass, pg_catalog.name) IS 'Move a bigint column to snowflake IDs above its values; its DEFAULT becomes seqgen_snowflake()';
COMMENT ON FUNCTION @extschema@.seqgen_advance(pg_catalog.text, pg_catalog.int8) IS 'Raise a tag''s counter and each of its keys'' by margin when the transaction commits: the failover runbook''s call';
COMMENT ON FUNCTION @extschema@.seqgen_allocators() IS 'Every database''s allocator: database, running, pid, tags, pending jobs, errors';
COMMENT ON FUNCTION @extschema@.seqgen_alter(pg_catalog.text, pg_catalog.int4, pg_catalog.text) IS 'Change a tag''s step or description (NULL keeps it)';
COMMENT ON FUNCTION @extschema@.seqgen_apply(pg_catalog.jsonb, pg_catalog.bool) IS 'Make the tag definitions match a document, all or nothing; drop_missing drops the tags it does not name';
COMMENT ON FUNCTION @extschema@.seqgen_check_digit_valid(pg_catalog.text) IS 'Whether the last digit of a number is its Luhn check digit';
COMMENT ON FUNCTION @extschema@.seqgen_cluster_nodes() IS 'On a Citus coordinator: every node, whether it answers, its node id and when it read the tag definitions';
COMMENT ON FUNCTION @extschema@.seqgen_cluster_refused() IS 'On a Citus coordinator: each change of the tag definitions that a node refused to apply (every other change is applied there), with the reason and since when';
COMMENT ON FUNCTION @extschema@.seqgen_code_is_valid(pg_catalog.text) IS 'Whether a text is a well-formed short code with a matching check character (not whether it was issued)';
COMMENT ON FUNCTION @extschema@.seqgen_column_tag(pg_catalog.regclass, pg_catalog.text) IS 'The tag a column''s DEFAULT draws from (like pg_get_serial_sequence), or NULL';
COMMENT ON FUNCTION @extschema@.seqgen_config() IS 'This database''s tag definitions (a non-superuser: those its roles own) as a document for seqgen_apply (configuration as code)';
COMMENT ON FUNCTION @extschema@.seqgen_create(pg_catalog.text, pg_catalog.int4, pg_catalog.int8, pg_catalog.text, pg_catalog.bool) IS 'Create a segment tag, owned by the calling role: its IDs start at start_with and are reserved step at a time (if_not_exists: an existing tag is left as it is)';
COMMENT ON FUNCTION @extschema@.seqgen_create_gapless(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.text) IS 'Create a gapless tag: numbers assigned at commit, one after another, none lost';
COMMENT ON FUNCTION @extschema@.seqgen_currval(pg_catalog.text) IS 'The value seqgen_next last returned to this session for a tag (like currval)';
COMMENT ON FUNCTION @extschema@.seqgen_decode(pg_catalog.text) IS 'The bigint ID that a text of seqgen_encode stands for';
COMMENT ON FUNCTION @extschema@.seqgen_decode_typed(pg_catalog.text, pg_catalog.text) IS 'The bigint ID of a typed ID of the given type';
COMMENT ON FUNCTION @extschema@.seqgen_decode_typeid(pg_catalog.text, pg_catalog.text) IS 'The uuid of a TypeID of the given type';
COMMENT ON FUNCTION @extschema@.seqgen_decode_uuid(pg_catalog.text) IS 'The uuid that a ULID text stands for';
COMMENT ON FUNCTION @extschema@.seqgen_drop(pg_catalog.text, pg_catalog.bool) IS 'Drop a tag; its cached segments are discarded when the drop commits (missing_ok: no error for an unknown tag)';
COMMENT ON FUNCTION @extschema@.seqgen_encode(pg_catalog.int8, pg_catalog.int4) IS 'A bigint ID as sortable text: fixed-width Crockford base32 (13 characters by default)';
COMMENT ON FUNCTION @extschema@.seqgen_encode_typed(pg_catalog.text, pg_catalog.int8) IS 'A bigint ID with its type: the prefix, _ and its 13-character text';
COMMENT ON FUNCTION @extschema@.seqgen_encode_typeid(pg_catalog.text, pg_catalog.uuid) IS 'A uuid as a TypeID: the prefix, _ and its ULID in lower case';
COMMENT ON FUNCTION @extschema@.seqgen_encode_uuid(pg_catalog.uuid) IS 'A uuid as sortable text: its ULID (26 characters of Crockford base32)';
COMMENT ON FUNCTION @extschema@.seqgen_gapless_attach(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text) IS 'Number a table''s rows with a gapless tag: a column filled as rows are inserted, per key column if given';
COMMENT ON FUNCTION @extschema@.seqgen_gapless_next(pg_catalog.text, pg_catalog.text) IS 'Next gapless number of a tag (and key), held by the transaction until it ends';
COMMENT ON FUNCTION @extschema@.seqgen_gapless_order_no(pg_catalog.text, pg_catalog.text) IS 'Next gapless order number of a tag (and key), held by the transaction until it ends';
COMMENT ON FUNCTION @extschema@.seqgen_grant(pg_catalog.text, pg_catalog.text) IS 'Let a role (and its members; ''public'': everyone) draw from a tag; the tag''s owner only';
COMMENT ON FUNCTION @extschema@.seqgen_key_status(pg_catalog.text, pg_catalog.text) IS 'The keys of a tag (or one key): reserved maximum, step, next value';
COMMENT ON FUNCTION @extschema@.seqgen_lastval() IS 'The value seqgen_next last returned to this session, of any tag or key (like lastval)';
COMMENT ON FUNCTION @extschema@.seqgen_make_opaque(pg_catalog.text) IS 'Make a tag''s IDs opaque for good: unique, but revealing neither order nor volume';
COMMENT ON FUNCTION @extschema@.seqgen_next(pg_catalog.text, pg_catalog.text) IS 'Next ID of a tag (a column DEFAULT), or of its counter for a key: never repeated, no lock and no table access in steady state';
COMMENT ON FUNCTION @extschema@.seqgen_next_batch(pg_catalog.text, pg_catalog.int4) IS 'The next n IDs of a tag, ascending';
COMMENT ON FUNCTION @extschema@.seqgen_next_code(pg_catalog.text, pg_catalog.int4) IS 'Next short code of an opaque tag: length characters (8 by default) with a check character, revealing neither order nor volume; never repeated';
COMMENT ON FUNCTION @extschema@.seqgen_node() IS 'This server''s node id, where it comes from (seqgen.node_id or Citus), its Citus group';
COMMENT ON FUNCTION @extschema@.seqgen_order_no(pg_catalog.text, pg_catalog.text) IS 'Next order number of a tag: its template rendered with the counter of the current period (the key''s own for a template with {key}); never reissued';
COMMENT ON FUNCTION @extschema@.seqgen_publish(pg_catalog.name) IS 'Add pg_seqgen''s tables to a publication; returns them';
COMMENT ON FUNCTION @extschema@.seqgen_render(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz, pg_catalog.text, pg_catalog.text) IS 'Render an order-number template for a counter value and a time (and a tag, for {tag} and opaque counters), without drawing';
COMMENT ON FUNCTION @extschema@.seqgen_replication_tables() IS 'The pg_seqgen tables a logical-replication publication must carry for a switchover';
COMMENT ON FUNCTION @extschema@.seqgen_restart(pg_catalog.text, pg_catalog.int8, pg_catalog.bool) IS 'Move a tag''s numbering up to start_with when the transaction commits (never down); force takes a start_with so far above the tag''s values that it is otherwise refused as a likely typo';
COMMENT ON FUNCTION @extschema@.seqgen_restart_undo(pg_catalog.text) IS 'Take back a tag''s last restart while nothing above it was reserved; returns the next value';
COMMENT ON FUNCTION @extschema@.seqgen_reveal(pg_catalog.text, pg_catalog.int8) IS 'The counter value behind an opaque tag''s ID';
COMMENT ON FUNCTION @extschema@.seqgen_reveal_code(pg_catalog.text, pg_catalog.text) IS 'The counter value behind a short code of an opaque tag';
COMMENT ON FUNCTION @extschema@.seqgen_reveal_order_no(pg_catalog.text, pg_catalog.text) IS 'The counter value behind an order number with an opaque counter';
COMMENT ON FUNCTION @extschema@.seqgen_revoke(pg_catalog.text, pg_catalog.text) IS 'Stop a role from drawing from a tag; the tag''s owner only';
COMMENT ON FUNCTION @extschema@.seqgen_set_node_bits(pg_catalog.text, pg_catalog.int4) IS 'Give a tag''s IDs node_bits low bits for seqgen.node_id (several servers); set once';
COMMENT ON FUNCTION @extschema@.seqgen_set_template(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.bool) IS 'Set a tag''s order-number template and time zone; a template that could repeat a number is refused, unless allow_repeats';
COMMENT ON FUNCTION @extschema@.seqgen_snowflake() IS 'Next snowflake ID: 64 bits, time-ordered, unique across the servers'' node ids, safe when the clock goes back';
COMMENT ON FUNCTION @extschema@.seqgen_snowflake53() IS 'Next 53-bit snowflake ID (exact in JavaScript numbers), time-ordered and safe when the clock goes back';
COMMENT ON FUNCTION @extschema@.seqgen_snowflake53_advance(pg_catalog.int8, pg_catalog.bool) IS 'Raise the 53-bit snowflake floor: later IDs are above min_id (after a failover); force takes one far ahead of the clock';
COMMENT ON FUNCTION @extschema@.seqgen_snowflake53_at(pg_catalog.timestamptz) IS 'The smallest 53-bit snowflake ID of a time';
COMMENT ON FUNCTION @extschema@.seqgen_snowflake53_decode(pg_catalog.int8) IS 'A 53-bit snowflake ID''s time, node and sequence';
COMMENT ON FUNCTION @extschema@.seqgen_snowflake53_rewind(pg_catalog.int8) IS 'Superuser: take back a 53-bit snowflake reservation raised by mistake, down to to_id';
COMMENT ON FUNCTION @extschema@.seqgen_snowflake53_status() IS 'The 53-bit snowflake generator: node, last time and sequence, reservation, clock lag, waits';
COMMENT ON FUNCTION @extschema@.seqgen_snowflake_advance(pg_catalog.int8, pg_catalog.bool) IS 'Raise the snowflake floor: later IDs are above min_id (after a failover or restore); force allows a floor far ahead of the clock';
COMMENT ON FUNCTION @extschema@.seqgen_snowflake_at(pg_catalog.timestamptz) IS 'The smallest snowflake ID of a time (for range queries)';
COMMENT ON FUNCTION @extschema@.seqgen_snowflake_decode(pg_catalog.int8) IS 'A snowflake ID''s time, node and sequence';
COMMENT ON FUNCTION @extschema@.seqgen_snowflake_rewind(pg_catalog.int8) IS 'Superuser: take back a snowflake floor raised by mistake, down to to_id (at least the highest ID issued)';
COMMENT ON FUNCTION @extschema@.seqgen_snowflake_status() IS 'The snowflake generator: node, last time and sequence, reservation, clock lag, waits';
COMMENT ON FUNCTION @extschema@.seqgen_stats() IS 'This database''s cumulative counters: values drawn, segments reserved, values lost by cause, evictions, waits for the allocator and their longest, gapless draws and timeouts';
COMMENT ON FUNCTION @extschema@.seqgen_stats_reset() IS 'Set this database''s counters of seqgen_stats to zero (like pg_stat_reset)';
COMMENT ON FUNCTION @extschema@.seqgen_status() IS 'One row per tag the caller owns or may draw from (every tag for pg_monitor): step, reserved maximum, next value, prefetch, rate, waits';
COMMENT ON FUNCTION @extschema@.seqgen_template_unit(pg_catalog.text) IS 'The period in which a template''s counter restarts (day, month, ...), or none';
COMMENT ON FUNCTION @extschema@.seqgen_uuidv7() IS 'Next UUIDv7 (RFC 9562): time-ordered and monotonic across the server, safe when the clock goes back';
COMMENT ON FUNCTION @extschema@.seqgen_uuidv7_advance(pg_catalog.uuid, pg_catalog.bool) IS 'Raise the UUIDv7 floor: later UUIDs are above min_id (after a failover); force takes one far ahead of the clock';
COMMENT ON FUNCTION @extschema@.seqgen_uuidv7_at(pg_catalog.timestamptz) IS 'The smallest UUIDv7 of a time (for range queries)';
COMMENT ON FUNCTION @extschema@.seqgen_uuidv7_decode(pg_catalog.uuid) IS 'A UUIDv7''s time and counter';
COMMENT ON FUNCTION @extschema@.seqgen_uuidv7_rewind(pg_catalog.uuid) IS 'Superuser: take back a UUIDv7 floor raised by mistake, down to to_id (at least the highest UUID issued), from the next restart';
COMMENT ON FUNCTION @extschema@.seqgen_uuidv7_status() IS 'The UUIDv7 generator: last time and counter, reservation, clock lag, waits';
COMMENT ON FUNCTION @extschema@.seqgen_worker_status() IS 'This database''s allocator (background worker): running, pid, last cycle, pending jobs, errors';
-- </comments>
-- The catalog's trigger functions live beside the catalog, in schema seqgen, not in the
-- user's schema (issue 31): the triggers name them by OID, so they keep working.
ALTER FUNCTION @extschema@.seqgen_alloc_deleted() SET SCHEMA seqgen;
ALTER FUNCTION @extschema@.seqgen_alloc_acl_changed() SET SCHEMA seqgen;
ALTER FUNCTION @extschema@.seqgen_template_changed() SET SCHEMA seqgen;
ALTER FUNCTION @extschema@.seqgen_reservation_written() SET SCHEMA seqgen;
COMMENT ON FUNCTION seqgen.seqgen_alloc_deleted() IS 'pg_seqgen (internal): trigger on seqgen.alloc, a dropped tag leaves shared memory';
COMMENT ON FUNCTION seqgen.seqgen_alloc_acl_changed() IS 'pg_seqgen (internal): trigger on seqgen.alloc, a grant or revoke reaches shared memory';
COMMENT ON FUNCTION seqgen.seqgen_template_changed() IS 'pg_seqgen (internal): trigger on seqgen.template, a template change reaches shared memory';
COMMENT ON FUNCTION seqgen.seqgen_reservation_written() IS 'pg_seqgen (internal): trigger on a generator''s reservation row';

-- 1.0 made the key of seqgen_next and seqgen_order_no, and the tag of seqgen_render, parameters
-- with a DEFAULT (one function each: GRANT EXECUTE ON FUNCTION seqgen_next names it). 0.x's
-- forms without them stay, in schema seqgen: the column DEFAULTs and views made before 1.0
-- store them by OID (the update moves them there), and a dump of such a database names them
-- seqgen.seqgen_next(...), which a fresh install must restore.
ALTER FUNCTION @extschema@.seqgen_next(pg_catalog.text) SET SCHEMA seqgen;
ALTER FUNCTION @extschema@.seqgen_order_no(pg_catalog.text) SET SCHEMA seqgen;
ALTER FUNCTION @extschema@.seqgen_render(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz, pg_catalog.text) SET SCHEMA seqgen;
COMMENT ON FUNCTION seqgen.seqgen_next(pg_catalog.text) IS 'pg_seqgen 0.x''s seqgen_next(biz_tag), kept for the DEFAULTs and views made before 1.0: the same draw as seqgen_next(biz_tag)';
COMMENT ON FUNCTION seqgen.seqgen_order_no(pg_catalog.text) IS 'pg_seqgen 0.x''s seqgen_order_no(biz_tag), kept for the DEFAULTs and views made before 1.0: the same draw as seqgen_order_no(biz_tag)';
COMMENT ON FUNCTION seqgen.seqgen_render(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz, pg_catalog.text) IS 'pg_seqgen 0.x''s seqgen_render without a tag, kept for the views made before 1.0';
-- What Citus workers call on their coordinator lives in schema seqgen too, out of the user's
-- schema (they call it by its schema-qualified name, and the extension's schema when the
-- coordinator is not updated yet).
ALTER FUNCTION @extschema@.seqgen_cluster_definitions(pg_catalog.text) SET SCHEMA seqgen;
ALTER FUNCTION @extschema@.seqgen_cluster_node_id(pg_catalog.int8) SET SCHEMA seqgen;
COMMENT ON FUNCTION seqgen.seqgen_adopt_column(pg_catalog.text, pg_catalog.text, pg_catalog.regclass, pg_catalog.name, pg_catalog.int4) IS 'pg_seqgen (internal, for seqgen_adopt and seqgen_adopt_snowflake): move a column to a tag or to snowflakes';
COMMENT ON FUNCTION seqgen.seqgen_cluster_definitions(pg_catalog.text) IS 'pg_seqgen (internal, on a Citus coordinator): the tag definitions the workers copy, when newer than known';
COMMENT ON FUNCTION seqgen.seqgen_gapless_assign() IS 'pg_seqgen (internal): trigger that numbers a table attached with seqgen_gapless_attach';
COMMENT ON FUNCTION seqgen.gapless_attach_targets(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text) IS 'pg_seqgen (internal, for seqgen_gapless_attach): check a call, and give the table and its inheritance children to number';
COMMENT ON FUNCTION seqgen.seqgen_gapless_create_trigger(pg_catalog.oid, pg_catalog.text, pg_catalog.text, pg_catalog.text) IS 'pg_seqgen (internal, for seqgen_gapless_attach): the commit-time trigger on one table, for a role with TRIGGER on it';
COMMENT ON FUNCTION seqgen.seqgen_cluster_node_id(pg_catalog.int8) IS 'pg_seqgen (internal, on a Citus coordinator): the node id of a Citus group, assigned once and never reused';

-- The tags, like pg_sequences: readable by everyone, each role seeing the tags it owns or may
-- draw from (a member of pg_monitor every tag); the rows come from an internal function in
-- schema seqgen, executable by everyone for that reason alone.
ALTER FUNCTION @extschema@.seqgen_tag_rows() SET SCHEMA seqgen;
GRANT EXECUTE ON FUNCTION seqgen.seqgen_tag_rows() TO PUBLIC;
COMMENT ON FUNCTION seqgen.seqgen_tag_rows() IS 'pg_seqgen (internal): the rows of the view seqgen_tags';
CREATE VIEW @extschema@.seqgen_tags AS SELECT * FROM seqgen.seqgen_tag_rows();
GRANT SELECT ON @extschema@.seqgen_tags TO PUBLIC;
COMMENT ON VIEW @extschema@.seqgen_tags IS 'The tags the current role owns or may draw from (every tag for pg_monitor), like pg_sequences: owner, kind, step, reserved maximum, next value, values cached and drawn, waits';
