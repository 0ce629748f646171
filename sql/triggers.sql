-- Retire a tag's shared-memory slot when the deletion of its catalog row commits.
CREATE TRIGGER alloc_deleted AFTER DELETE ON seqgen.alloc
    FOR EACH ROW EXECUTE FUNCTION @extschema@.seqgen_alloc_deleted();
