-- Nothing that draws IDs or changes the catalog is callable by PUBLIC: grant what each role
-- needs, e.g. for an application role that only draws IDs:
--   GRANT EXECUTE ON FUNCTION seqgen_next(text), seqgen_next_batch(text, integer) TO app;
REVOKE ALL ON FUNCTION @extschema@.seqgen_create(pg_catalog.text, pg_catalog.int4, pg_catalog.int8, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_drop(pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_next(pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_next(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_key_status(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_next_batch(pg_catalog.text, pg_catalog.int4) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_alloc_deleted() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_set_template(pg_catalog.text, pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_order_no(pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_order_no(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_template_changed() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_reservation_written() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_make_opaque(pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_reveal(pg_catalog.text, pg_catalog.int8) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_reveal_order_no(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_set_node_bits(pg_catalog.text, pg_catalog.int4) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_set_template(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake_advance(pg_catalog.int8) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_worker_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_allocators() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_uuidv7() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_uuidv7_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_alter(pg_catalog.text, pg_catalog.int4, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_restart(pg_catalog.text, pg_catalog.int8) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_restart(pg_catalog.text, pg_catalog.int8, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_restart_undo(pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake_advance(pg_catalog.int8, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake_rewind(pg_catalog.int8) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_uuidv7_rewind(pg_catalog.int8) FROM PUBLIC;
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
REVOKE ALL ON FUNCTION @extschema@.seqgen_gapless_assign() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_gapless_attach(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text) FROM PUBLIC;
-- Pure helpers stay executable by everyone (seqgen_render, seqgen_check_digit_valid,
-- seqgen_snowflake_decode, seqgen_snowflake_at, seqgen_uuidv7_at, seqgen_uuidv7_decode,
-- seqgen_snowflake53_decode, seqgen_snowflake53_at): they read no state and can be used in CHECK constraints.
