-- pg_seqgen 0.3.0 -> 0.4.0: per-tag privileges, template history, bounded operator inputs and
-- their undo, node bits fixed once set, JavaScript-safe (53-bit) snowflakes.
-- Everything here is schema-qualified; see "Security Considerations for Extension Scripts".
-- Install the 0.4.0 library, restart the server, then run ALTER EXTENSION pg_seqgen UPDATE in
-- every database that has the extension (until then the 0.4.0 allocator of that database
-- answers calls with SQLSTATE 55000 and a hint to update).

-- Who may draw from a tag. Tags of 0.3.0 are owned by the extension's owner and stay open to
-- every role with EXECUTE on the drawing functions, as they were (public_draw); revoke with
-- SELECT seqgen_revoke(tag, 'public') and grant per role with seqgen_grant(tag, role).
ALTER TABLE seqgen.alloc
    ADD COLUMN owner pg_catalog.regrole NOT NULL
        DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(CURRENT_USER::pg_catalog.text)),
    ADD COLUMN public_draw pg_catalog.bool NOT NULL DEFAULT false,
    ADD COLUMN drawers pg_catalog.regrole[] NOT NULL DEFAULT '{}'::pg_catalog.regrole[],
    ADD COLUMN restarted_from pg_catalog.int8,
    ADD COLUMN restarted_to pg_catalog.int8;
UPDATE seqgen.alloc SET public_draw = true,
    owner = (SELECT e.extowner FROM pg_catalog.pg_extension e
              WHERE e.extname OPERATOR(pg_catalog.=) 'pg_seqgen')::pg_catalog.regrole;

-- node bits cannot change once set; max_id goes down only for seqgen_restart_undo
CREATE OR REPLACE FUNCTION seqgen.alloc_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.biz_tag OPERATOR(pg_catalog.<>) OLD.biz_tag THEN
        RAISE EXCEPTION 'pg_seqgen tags cannot be renamed (tag "%")', OLD.biz_tag
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Create a new tag with seqgen_create() instead.';
    END IF;
    IF NEW.tag_id OPERATOR(pg_catalog.<>) OLD.tag_id THEN
        RAISE EXCEPTION 'the tag_id of tag "%" cannot change', OLD.biz_tag
            USING ERRCODE = 'feature_not_supported';
    END IF;
    IF OLD.opaque_from IS NOT NULL AND NEW.opaque_from IS DISTINCT FROM OLD.opaque_from THEN
        RAISE EXCEPTION 'tag "%" is opaque for good', OLD.biz_tag
            USING ERRCODE = 'check_violation',
                  HINT = 'Plain IDs issued after opaque ones could repeat them.';
    END IF;
    IF OLD.opaque_from IS NULL AND NEW.opaque_from IS NOT NULL
       AND NEW.opaque_from OPERATOR(pg_catalog.<) OLD.max_id THEN
        RAISE EXCEPTION 'opaque_from of tag "%" must be at least its max_id %', OLD.biz_tag, OLD.max_id
            USING ERRCODE = 'check_violation',
                  HINT = 'Use seqgen_make_opaque().';
    END IF;
    IF OLD.node_bits OPERATOR(pg_catalog.<>) 0 AND NEW.node_bits OPERATOR(pg_catalog.<>) OLD.node_bits THEN
        RAISE EXCEPTION 'node_bits of tag "%" cannot change once set (from % to %)', OLD.biz_tag, OLD.node_bits, NEW.node_bits
            USING ERRCODE = 'check_violation',
                  HINT = 'With other widths, values of this server and of servers added later could meet.';
    END IF;
    -- seqgen_restart_undo alone may take max_id back (to before a restart nothing was drawn after)
    IF NEW.max_id OPERATOR(pg_catalog.<) OLD.max_id
       AND pg_catalog.current_setting('seqgen.rewinding', true) IS DISTINCT FROM 'on' THEN
        RAISE EXCEPTION 'max_id of tag "%" cannot decrease (from % to %)', OLD.biz_tag, OLD.max_id, NEW.max_id
            USING ERRCODE = 'check_violation',
                  HINT = 'Lowering max_id would hand out IDs again. It may only grow.';
    END IF;
    RETURN NEW;
END
$$;

-- the reservations go down only for seqgen_snowflake_rewind / seqgen_uuidv7_rewind
CREATE OR REPLACE FUNCTION seqgen.snowflake_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP OPERATOR(pg_catalog.=) 'UPDATE' THEN
        -- seqgen_snowflake_rewind alone may lower it (a floor accepted by mistake)
        IF NEW.reserved_id OPERATOR(pg_catalog.<) OLD.reserved_id
           AND pg_catalog.current_setting('seqgen.rewinding', true) IS DISTINCT FROM 'on' THEN
            RAISE EXCEPTION 'the snowflake reservation cannot decrease (from % to %)', OLD.reserved_id, NEW.reserved_id
                USING ERRCODE = 'check_violation',
                      HINT = 'Lowering it would let snowflake IDs be issued again after a restart.';
        END IF;
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the snowflake reservation cannot be deleted'
        USING ERRCODE = 'feature_not_supported',
              HINT = 'Deleting it would let snowflake IDs be issued again after a restart.';
END
$$;

CREATE OR REPLACE FUNCTION seqgen.uuidv7_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP OPERATOR(pg_catalog.=) 'UPDATE' THEN
        -- seqgen_uuidv7_rewind alone may lower it (a floor accepted by mistake)
        IF NEW.reserved_id OPERATOR(pg_catalog.<) OLD.reserved_id
           AND pg_catalog.current_setting('seqgen.rewinding', true) IS DISTINCT FROM 'on' THEN
            RAISE EXCEPTION 'the UUIDv7 reservation cannot decrease (from % to %)', OLD.reserved_id, NEW.reserved_id
                USING ERRCODE = 'check_violation',
                      HINT = 'Lowering it would let UUIDs be issued again after a restart.';
        END IF;
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the UUIDv7 reservation cannot be deleted'
        USING ERRCODE = 'feature_not_supported',
              HINT = 'Deleting it would let UUIDs be issued again after a restart.';
END
$$;

-- Every template a tag has used (the current ones; templates replaced before 0.4.0 are not
-- known: see the README's upgrade note).
CREATE TABLE seqgen.template_history (
    biz_tag     pg_catalog.text NOT NULL REFERENCES seqgen.alloc (biz_tag) ON DELETE CASCADE,
    template    pg_catalog.text NOT NULL,
    last_key    pg_catalog.int8,
    PRIMARY KEY (biz_tag, template)
);
COMMENT ON TABLE seqgen.template_history IS
    'pg_seqgen: every template a tag has used, and the last period it issued numbers in';
SELECT pg_catalog.pg_extension_config_dump('seqgen.template_history', '');
INSERT INTO seqgen.template_history (biz_tag, template) SELECT biz_tag, template FROM seqgen.template;

CREATE FUNCTION seqgen.template_history_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
        -- allowed only with the tag itself (ON DELETE CASCADE)
        IF EXISTS (SELECT FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) OLD.biz_tag) THEN
            RAISE EXCEPTION 'the template history of tag "%" cannot be deleted while the tag exists', OLD.biz_tag
                USING ERRCODE = 'feature_not_supported',
                      HINT = 'A template forgotten here could be followed by one that repeats its numbers.';
        END IF;
        RETURN OLD;
    END IF;
    IF NEW.biz_tag OPERATOR(pg_catalog.<>) OLD.biz_tag OR NEW.template OPERATOR(pg_catalog.<>) OLD.template THEN
        RAISE EXCEPTION 'the template history of tag "%" cannot be rewritten', OLD.biz_tag
            USING ERRCODE = 'feature_not_supported';
    END IF;
    IF NEW.last_key OPERATOR(pg_catalog.<) OLD.last_key THEN
        RAISE EXCEPTION 'the last period of template "%" of tag "%" cannot go back', OLD.template, OLD.biz_tag
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER template_history_guard BEFORE UPDATE OR DELETE ON seqgen.template_history
    FOR EACH ROW EXECUTE FUNCTION seqgen.template_history_guard();
CREATE TRIGGER template_history_no_truncate BEFORE TRUNCATE ON seqgen.template_history
    FOR EACH STATEMENT EXECUTE FUNCTION seqgen.alloc_no_truncate();
ALTER TABLE seqgen.template_history ENABLE ALWAYS TRIGGER template_history_guard;
ALTER TABLE seqgen.template_history ENABLE ALWAYS TRIGGER template_history_no_truncate;
REVOKE ALL ON TABLE seqgen.template_history FROM PUBLIC;

-- Per-tag privileges.
CREATE FUNCTION @extschema@.seqgen_grant("biz_tag" TEXT, "role" TEXT) RETURNS void
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_grant_wrapper';
CREATE FUNCTION @extschema@.seqgen_revoke("biz_tag" TEXT, "role" TEXT) RETURNS void
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_revoke_wrapper';
CREATE FUNCTION @extschema@.seqgen_alloc_acl_changed() RETURNS trigger
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_alloc_acl_changed_wrapper';
CREATE TRIGGER alloc_acl_changed AFTER UPDATE OF owner, public_draw, drawers ON seqgen.alloc
    FOR EACH ROW EXECUTE FUNCTION @extschema@.seqgen_alloc_acl_changed();
ALTER TABLE seqgen.alloc ENABLE ALWAYS TRIGGER alloc_acl_changed;

-- Bounded operator inputs, and the way back from one accepted by mistake.
CREATE FUNCTION @extschema@.seqgen_restart("biz_tag" TEXT, "start_with" bigint, "force" bool) RETURNS void
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_restart_force_wrapper';
CREATE FUNCTION @extschema@.seqgen_restart_undo("biz_tag" TEXT) RETURNS bigint
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_restart_undo_wrapper';
CREATE FUNCTION @extschema@.seqgen_snowflake_advance("min_id" bigint, "force" bool) RETURNS bigint
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_snowflake_advance_force_wrapper';
CREATE FUNCTION @extschema@.seqgen_snowflake_rewind("to_id" bigint) RETURNS bigint
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_snowflake_rewind_wrapper';
CREATE FUNCTION @extschema@.seqgen_uuidv7_rewind("to_id" bigint) RETURNS bigint
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_uuidv7_rewind_wrapper';

REVOKE ALL ON FUNCTION @extschema@.seqgen_restart(pg_catalog.text, pg_catalog.int8, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_restart_undo(pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake_advance(pg_catalog.int8, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake_rewind(pg_catalog.int8) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_uuidv7_rewind(pg_catalog.int8) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_grant(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_revoke(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_alloc_acl_changed() FROM PUBLIC;

-- {node} renders seqgen.node_id, which a restart may change
ALTER FUNCTION @extschema@.seqgen_render(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz, pg_catalog.text) STABLE;
ALTER FUNCTION @extschema@.seqgen_render(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz, pg_catalog.text, pg_catalog.text) STABLE;

-- 53-bit (JavaScript-safe) snowflakes: their persisted reservation, as an ID value. Every
-- seqgen_snowflake53() this server issued is below it; after a restart (or a restore) IDs
-- resume above it. The worker upserts the single row; it is dumped with the database.
CREATE TABLE seqgen.snowflake53 (
    singleton   pg_catalog.bool PRIMARY KEY DEFAULT true CHECK (singleton),
    reserved_id pg_catalog.int8 NOT NULL CHECK (reserved_id OPERATOR(pg_catalog.>=) 0)
);
COMMENT ON TABLE seqgen.snowflake53 IS
    'pg_seqgen 53-bit snowflake reservation: every issued seqgen_snowflake53() is below reserved_id; it never decreases';
SELECT pg_catalog.pg_extension_config_dump('seqgen.snowflake53', '');

CREATE FUNCTION seqgen.snowflake53_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP OPERATOR(pg_catalog.=) 'UPDATE' THEN
        -- seqgen_snowflake53_rewind alone may lower it (a floor accepted by mistake)
        IF NEW.reserved_id OPERATOR(pg_catalog.<) OLD.reserved_id
           AND pg_catalog.current_setting('seqgen.rewinding', true) IS DISTINCT FROM 'on' THEN
            RAISE EXCEPTION 'the 53-bit snowflake reservation cannot decrease (from % to %)', OLD.reserved_id, NEW.reserved_id
                USING ERRCODE = 'check_violation',
                      HINT = 'Lowering it would let 53-bit snowflake IDs be issued again after a restart.';
        END IF;
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the 53-bit snowflake reservation cannot be deleted'
        USING ERRCODE = 'feature_not_supported',
              HINT = 'Deleting it would let 53-bit snowflake IDs be issued again after a restart.';
END
$$;

CREATE TRIGGER snowflake53_guard BEFORE UPDATE OR DELETE ON seqgen.snowflake53
    FOR EACH ROW EXECUTE FUNCTION seqgen.snowflake53_guard();
CREATE TRIGGER snowflake53_no_truncate BEFORE TRUNCATE ON seqgen.snowflake53
    FOR EACH STATEMENT EXECUTE FUNCTION seqgen.alloc_no_truncate();
ALTER TABLE seqgen.snowflake53 ENABLE ALWAYS TRIGGER snowflake53_guard;
ALTER TABLE seqgen.snowflake53 ENABLE ALWAYS TRIGGER snowflake53_no_truncate;
REVOKE ALL ON TABLE seqgen.snowflake53 FROM PUBLIC;
CREATE TRIGGER snowflake53_written AFTER INSERT OR UPDATE ON seqgen.snowflake53
    FOR EACH ROW EXECUTE FUNCTION @extschema@.seqgen_reservation_written('snowflake53');
ALTER TABLE seqgen.snowflake53 ENABLE ALWAYS TRIGGER snowflake53_written;

CREATE FUNCTION @extschema@.seqgen_snowflake53() RETURNS bigint
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_snowflake53_wrapper';
CREATE FUNCTION @extschema@.seqgen_snowflake53_decode("id" bigint) RETURNS TABLE (
	"ts" timestamp with time zone,
	"node_id" INT,
	"sequence" INT
)
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_snowflake53_decode_wrapper';
CREATE FUNCTION @extschema@.seqgen_snowflake53_at("ts" timestamp with time zone) RETURNS bigint
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_snowflake53_at_wrapper';
CREATE FUNCTION @extschema@.seqgen_snowflake53_status() RETURNS TABLE (
	"node_id" INT,
	"last_ts" timestamp with time zone,
	"last_sequence" bigint,
	"reserved_until" timestamp with time zone,
	"lag_ms" bigint,
	"waits" bigint,
	"sequence_waits" bigint,
	"borrows" bigint,
	"refusals" bigint
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_snowflake53_status_wrapper';
CREATE FUNCTION @extschema@.seqgen_snowflake53_rewind("to_id" bigint) RETURNS bigint
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_snowflake53_rewind_wrapper';
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake53() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake53_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake53_rewind(pg_catalog.int8) FROM PUBLIC;

-- configuration as code
CREATE FUNCTION @extschema@.seqgen_config() RETURNS pg_catalog.jsonb
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_config_wrapper';
CREATE FUNCTION @extschema@.seqgen_apply(doc pg_catalog.jsonb, drop_missing pg_catalog.bool DEFAULT false)
RETURNS TABLE (biz_tag pg_catalog.text, action pg_catalog.text)
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_apply_wrapper';
REVOKE ALL ON FUNCTION @extschema@.seqgen_config() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_apply(pg_catalog.jsonb, pg_catalog.bool) FROM PUBLIC;

-- logical replication of the catalog
-- Logical replication of the catalog (a blue/green switchover; README "Major upgrades").
-- The tables a publication must carry for the new side to draw on above the old side: the
-- tags (with their owners and grants), templates and their history, order-number counters,
-- opaque keys, and the snowflake, UUIDv7 and 53-bit snowflake reservations.
CREATE FUNCTION @extschema@.seqgen_replication_tables() RETURNS SETOF pg_catalog.regclass
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t::pg_catalog.regclass FROM (VALUES ('seqgen.alloc'), ('seqgen.template'), ('seqgen.template_history'),
        ('seqgen.order_counter'), ('seqgen.opaque_key'), ('seqgen.snowflake'), ('seqgen.uuidv7'),
        ('seqgen.snowflake53')) AS v(t)
$$;

-- Add those tables to a publication (the ones it lacks; none for FOR ALL TABLES); returns what
-- it added. Needs what ALTER PUBLICATION needs: owning the publication.
CREATE FUNCTION @extschema@.seqgen_publish(publication pg_catalog.name) RETURNS SETOF pg_catalog.regclass
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t pg_catalog.regclass;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_publication p WHERE p.pubname OPERATOR(pg_catalog.=) publication) THEN
        RAISE EXCEPTION 'publication "%" does not exist', publication USING ERRCODE = 'undefined_object';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_publication p
               WHERE p.pubname OPERATOR(pg_catalog.=) publication AND p.puballtables) THEN
        RETURN;
    END IF;
    FOR t IN SELECT r FROM @extschema@.seqgen_replication_tables() AS r
             WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_publication_rel pr
                               JOIN pg_catalog.pg_publication p ON p.oid OPERATOR(pg_catalog.=) pr.prpubid
                               WHERE p.pubname OPERATOR(pg_catalog.=) publication
                                 AND pr.prrelid OPERATOR(pg_catalog.=) r)
    LOOP
        EXECUTE pg_catalog.format('ALTER PUBLICATION %I ADD TABLE %s', publication, t);
        RETURN NEXT t;
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION @extschema@.seqgen_publish(pg_catalog.name) FROM PUBLIC;
