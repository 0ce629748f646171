-- Retire a tag's shared-memory slot when the deletion of its catalog row commits.
CREATE TRIGGER alloc_deleted AFTER DELETE ON seqgen.alloc
    FOR EACH ROW EXECUTE FUNCTION @extschema@.seqgen_alloc_deleted();

-- Every backend checks again who may draw when an owner or grant change commits.
CREATE TRIGGER alloc_acl_changed AFTER UPDATE OF owner, public_draw, drawers ON seqgen.alloc
    FOR EACH ROW EXECUTE FUNCTION @extschema@.seqgen_alloc_acl_changed();
ALTER TABLE seqgen.alloc ENABLE ALWAYS TRIGGER alloc_acl_changed;

-- Read a tag's template again when a change to it commits (not on counter updates).
CREATE TRIGGER template_changed AFTER INSERT OR DELETE OR UPDATE OF template, time_zone ON seqgen.template
    FOR EACH ROW EXECUTE FUNCTION @extschema@.seqgen_template_changed();

-- Both fire under session_replication_role = replica and in logical replication's apply
-- worker too: a deletion applied there must retire the tag's cached segments as well.
ALTER TABLE seqgen.alloc ENABLE ALWAYS TRIGGER alloc_deleted;
ALTER TABLE seqgen.template ENABLE ALWAYS TRIGGER template_changed;

-- A reservation written by anyone but the allocator (pg_restore, an administrator after a
-- failover) raises the server's generator above it at once, in the writing statement.
CREATE TRIGGER snowflake_written AFTER INSERT OR UPDATE ON seqgen.snowflake
    FOR EACH ROW EXECUTE FUNCTION @extschema@.seqgen_reservation_written('snowflake');
CREATE TRIGGER uuidv7_written AFTER INSERT OR UPDATE ON seqgen.uuidv7
    FOR EACH ROW EXECUTE FUNCTION @extschema@.seqgen_reservation_written('uuidv7');
CREATE TRIGGER snowflake53_written AFTER INSERT OR UPDATE ON seqgen.snowflake53
    FOR EACH ROW EXECUTE FUNCTION @extschema@.seqgen_reservation_written('snowflake53');
ALTER TABLE seqgen.snowflake ENABLE ALWAYS TRIGGER snowflake_written;
ALTER TABLE seqgen.uuidv7 ENABLE ALWAYS TRIGGER uuidv7_written;
ALTER TABLE seqgen.snowflake53 ENABLE ALWAYS TRIGGER snowflake53_written;
