-- pg_seqgen 0.1.0 -> 0.2.0: allocator hardening.
-- Everything here is schema-qualified; see "Security Considerations for Extension Scripts".
-- Install the 0.2.0 library, restart the server, then run ALTER EXTENSION pg_seqgen UPDATE
-- (until then the 0.2.0 worker answers calls with SQLSTATE 55000 and a hint to update).

-- 1. Row identity: every tag row gets its own number (with the table's OID, what a shared-
--    memory slot is checked against), so a tag dropped and created again is never served
--    the old one's cached values.
CREATE SEQUENCE seqgen.tag_id_seq;
SELECT pg_catalog.pg_extension_config_dump('seqgen.tag_id_seq', '');
REVOKE ALL ON SEQUENCE seqgen.tag_id_seq FROM PUBLIC;
ALTER TABLE seqgen.alloc
    ADD COLUMN tag_id pg_catalog.int8 NOT NULL DEFAULT pg_catalog.nextval('seqgen.tag_id_seq'::pg_catalog.regclass);

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
    IF NEW.node_bits OPERATOR(pg_catalog.<) OLD.node_bits THEN
        RAISE EXCEPTION 'node_bits of tag "%" cannot decrease (from % to %)', OLD.biz_tag, OLD.node_bits, NEW.node_bits
            USING ERRCODE = 'check_violation',
                  HINT = 'Fewer node bits would let later IDs meet earlier ones.';
    END IF;
    IF NEW.max_id OPERATOR(pg_catalog.<) OLD.max_id THEN
        RAISE EXCEPTION 'max_id of tag "%" cannot decrease (from % to %)', OLD.biz_tag, OLD.max_id, NEW.max_id
            USING ERRCODE = 'check_violation',
                  HINT = 'Lowering max_id would hand out IDs again. It may only grow.';
    END IF;
    RETURN NEW;
END
$$;

-- 2. New functions.
CREATE FUNCTION @extschema@.seqgen_set_template(
	"biz_tag" TEXT,
	"template" TEXT,
	"time_zone" TEXT,
	"allow_repeats" bool
) RETURNS void
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_set_template_allow_wrapper';

CREATE FUNCTION @extschema@.seqgen_snowflake_advance(
	"min_id" bigint
) RETURNS bigint
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_snowflake_advance_wrapper';

CREATE FUNCTION @extschema@.seqgen_template_unit(
	"template" TEXT
) RETURNS TEXT
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_template_unit_wrapper';

CREATE FUNCTION @extschema@.seqgen_worker_status() RETURNS TABLE (
	"running" bool,
	"pid" INT,
	"started" timestamp with time zone,
	"last_cycle" timestamp with time zone,
	"mailboxes_in_use" INT,
	"jobs_pending" INT,
	"mailboxes_reclaimed" bigint,
	"errors" bigint,
	"last_error" TEXT,
	"last_error_time" timestamp with time zone
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_worker_status_wrapper';

REVOKE ALL ON FUNCTION @extschema@.seqgen_set_template(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake_advance(pg_catalog.int8) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_worker_status() FROM PUBLIC;

-- 3. Order-number counters per tag and period unit. 0.1.0 kept one (period_key, period_max)
--    per tag, shared by every template the tag had (a template's numbers may have been
--    issued under another unit's period key). It is copied to every unit: each unit then
--    continues at or above the latest period 0.1.0 used, above its highest number, which
--    can leave a gap but never re-enters a number 0.1.0 issued.
CREATE TABLE seqgen.order_counter (
    biz_tag     pg_catalog.text NOT NULL REFERENCES seqgen.alloc (biz_tag) ON DELETE CASCADE,
    unit        pg_catalog.text NOT NULL
                CHECK (unit OPERATOR(pg_catalog.=) ANY ('{none,year,month,day,hour,minute,second}'::pg_catalog.text[])),
    period_key  pg_catalog.int8 NOT NULL,
    period_max  pg_catalog.int8 NOT NULL CHECK (period_max OPERATOR(pg_catalog.>=) 0),
    update_time pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (biz_tag, unit)
);
COMMENT ON TABLE seqgen.order_counter IS
    'pg_seqgen order-number counters per tag and period unit; (period_key, period_max) never decreases';
SELECT pg_catalog.pg_extension_config_dump('seqgen.order_counter', '');
REVOKE ALL ON TABLE seqgen.order_counter FROM PUBLIC;

INSERT INTO seqgen.order_counter (biz_tag, unit, period_key, period_max)
    SELECT t.biz_tag, u.unit, t.period_key, t.period_max
    FROM seqgen.template t
    CROSS JOIN pg_catalog.unnest('{none,year,month,day,hour,minute,second}'::pg_catalog.text[]) AS u(unit)
    WHERE t.period_key OPERATOR(pg_catalog.>) (-9223372036854775808)::pg_catalog.int8;

DROP TRIGGER template_guard ON seqgen.template;
ALTER TABLE seqgen.template DROP COLUMN period_key, DROP COLUMN period_max;
COMMENT ON TABLE seqgen.template IS 'pg_seqgen order-number templates';

CREATE OR REPLACE FUNCTION seqgen.template_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
        -- allowed only with the tag itself (ON DELETE CASCADE)
        IF EXISTS (SELECT FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) OLD.biz_tag) THEN
            RAISE EXCEPTION 'the template of tag "%" cannot be deleted while the tag exists', OLD.biz_tag
                USING ERRCODE = 'feature_not_supported',
                      HINT = 'Replace it with seqgen_set_template(), or drop the tag with seqgen_drop().';
        END IF;
        RETURN OLD;
    END IF;
    IF NEW.biz_tag OPERATOR(pg_catalog.<>) OLD.biz_tag THEN
        RAISE EXCEPTION 'pg_seqgen tags cannot be renamed (tag "%")', OLD.biz_tag
            USING ERRCODE = 'feature_not_supported';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER template_guard BEFORE UPDATE OR DELETE ON seqgen.template
    FOR EACH ROW EXECUTE FUNCTION seqgen.template_guard();

CREATE FUNCTION seqgen.order_counter_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
        IF EXISTS (SELECT FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) OLD.biz_tag) THEN
            RAISE EXCEPTION 'the order-number counters of tag "%" cannot be deleted while the tag exists', OLD.biz_tag
                USING ERRCODE = 'feature_not_supported',
                      HINT = 'Deleting them would issue order numbers again.';
        END IF;
        RETURN OLD;
    END IF;
    IF NEW.biz_tag OPERATOR(pg_catalog.<>) OLD.biz_tag OR NEW.unit OPERATOR(pg_catalog.<>) OLD.unit THEN
        RAISE EXCEPTION 'the order-number counter of tag "%" cannot be moved', OLD.biz_tag
            USING ERRCODE = 'feature_not_supported';
    END IF;
    IF NEW.period_key OPERATOR(pg_catalog.<) OLD.period_key
       OR (NEW.period_key OPERATOR(pg_catalog.=) OLD.period_key
           AND NEW.period_max OPERATOR(pg_catalog.<) OLD.period_max) THEN
        RAISE EXCEPTION 'the order-number counter of tag "%" cannot go back', OLD.biz_tag
            USING ERRCODE = 'check_violation',
                  HINT = 'Lowering period_key or period_max would issue order numbers again.';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER order_counter_guard BEFORE UPDATE OR DELETE ON seqgen.order_counter
    FOR EACH ROW EXECUTE FUNCTION seqgen.order_counter_guard();
CREATE TRIGGER order_counter_no_truncate BEFORE TRUNCATE ON seqgen.order_counter
    FOR EACH STATEMENT EXECUTE FUNCTION seqgen.alloc_no_truncate();

-- 4. Every trigger fires under session_replication_role = replica too (edits by hand, and
--    logical replication's apply worker).
ALTER TABLE seqgen.alloc ENABLE ALWAYS TRIGGER alloc_guard;
ALTER TABLE seqgen.alloc ENABLE ALWAYS TRIGGER alloc_no_truncate;
ALTER TABLE seqgen.alloc ENABLE ALWAYS TRIGGER alloc_deleted;
ALTER TABLE seqgen.snowflake ENABLE ALWAYS TRIGGER snowflake_guard;
ALTER TABLE seqgen.snowflake ENABLE ALWAYS TRIGGER snowflake_no_truncate;
ALTER TABLE seqgen.template ENABLE ALWAYS TRIGGER template_guard;
ALTER TABLE seqgen.template ENABLE ALWAYS TRIGGER template_no_truncate;
ALTER TABLE seqgen.template ENABLE ALWAYS TRIGGER template_changed;
ALTER TABLE seqgen.order_counter ENABLE ALWAYS TRIGGER order_counter_guard;
ALTER TABLE seqgen.order_counter ENABLE ALWAYS TRIGGER order_counter_no_truncate;
ALTER TABLE seqgen.opaque_key ENABLE ALWAYS TRIGGER opaque_key_guard;
ALTER TABLE seqgen.opaque_key ENABLE ALWAYS TRIGGER opaque_key_no_truncate;

-- 5. Server-wide monotonic UUIDv7 (seqgen_uuidv7) and the time bounds of both time-ordered
--    kinds (seqgen_uuidv7_at, seqgen_snowflake_at).
-- UUIDv7: the persisted reservation of seqgen_uuidv7(), as a value of its generator
-- (unix milliseconds << 21 | counter). Every UUID this server issued is below it; after a
-- restart (or a restore) UUIDs resume above it. The worker upserts the single row; it is
-- dumped with the database.
CREATE TABLE seqgen.uuidv7 (
    singleton   pg_catalog.bool PRIMARY KEY DEFAULT true CHECK (singleton),
    reserved_id pg_catalog.int8 NOT NULL CHECK (reserved_id OPERATOR(pg_catalog.>=) 0)
);
COMMENT ON TABLE seqgen.uuidv7 IS
    'pg_seqgen UUIDv7 reservation (unix ms << 21 | counter): every issued UUID is below it; it never decreases';
SELECT pg_catalog.pg_extension_config_dump('seqgen.uuidv7', '');

CREATE FUNCTION seqgen.uuidv7_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP OPERATOR(pg_catalog.=) 'UPDATE' THEN
        IF NEW.reserved_id OPERATOR(pg_catalog.<) OLD.reserved_id THEN
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

CREATE TRIGGER uuidv7_guard BEFORE UPDATE OR DELETE ON seqgen.uuidv7
    FOR EACH ROW EXECUTE FUNCTION seqgen.uuidv7_guard();
CREATE TRIGGER uuidv7_no_truncate BEFORE TRUNCATE ON seqgen.uuidv7
    FOR EACH STATEMENT EXECUTE FUNCTION seqgen.alloc_no_truncate();
ALTER TABLE seqgen.uuidv7 ENABLE ALWAYS TRIGGER uuidv7_guard;
ALTER TABLE seqgen.uuidv7 ENABLE ALWAYS TRIGGER uuidv7_no_truncate;
REVOKE ALL ON TABLE seqgen.uuidv7 FROM PUBLIC;

CREATE FUNCTION @extschema@.seqgen_uuidv7() RETURNS uuid
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_uuidv7_wrapper';

CREATE FUNCTION @extschema@.seqgen_uuidv7_at(
	"ts" timestamp with time zone
) RETURNS uuid
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_uuidv7_at_wrapper';

CREATE FUNCTION @extschema@.seqgen_uuidv7_decode(
	"id" uuid
) RETURNS TABLE (
	"ts" timestamp with time zone,
	"counter" INT
)
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_uuidv7_decode_wrapper';

CREATE FUNCTION @extschema@.seqgen_uuidv7_status() RETURNS TABLE (
	"last_ts" timestamp with time zone,
	"last_counter" bigint,
	"reserved_until" timestamp with time zone,
	"lag_ms" bigint,
	"waits" bigint,
	"counter_waits" bigint,
	"borrows" bigint,
	"refusals" bigint
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_uuidv7_status_wrapper';

CREATE FUNCTION @extschema@.seqgen_snowflake_at(
	"ts" timestamp with time zone
) RETURNS bigint
STABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_snowflake_at_wrapper';

REVOKE ALL ON FUNCTION @extschema@.seqgen_uuidv7() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_uuidv7_status() FROM PUBLIC;

-- 6. Operating tags like sequences: seqgen_alter, seqgen_restart (numbering only moves up),
--    seqgen_adopt / seqgen_adopt_snowflake (move an existing column over).
CREATE FUNCTION @extschema@.seqgen_alter(
	"biz_tag" TEXT,
	"step" INT DEFAULT NULL,
	"description" TEXT DEFAULT NULL
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_alter_wrapper';

CREATE FUNCTION @extschema@.seqgen_restart(
	"biz_tag" TEXT,
	"start_with" bigint
) RETURNS void
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_restart_wrapper';

REVOKE ALL ON FUNCTION @extschema@.seqgen_alter(pg_catalog.text, pg_catalog.int4, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_restart(pg_catalog.text, pg_catalog.int8) FROM PUBLIC;

-- (sql/adopt.sql)
CREATE FUNCTION @extschema@.seqgen_adopt_floor(tbl pg_catalog.regclass, col pg_catalog.name)
RETURNS pg_catalog.int8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET row_security = off
AS $fn$
DECLARE
    a record;
    seq pg_catalog.text;
    top pg_catalog.int8;
    seq_top pg_catalog.int8;
    used pg_catalog.bool;
BEGIN
    IF tbl IS NULL OR col IS NULL THEN
        RAISE EXCEPTION 'tbl and col must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- a snapshot taken before the table lock would miss rows committed while waiting for it
    IF pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.<>) 'read committed' THEN
        RAISE EXCEPTION 'adopting a column needs READ COMMITTED (this transaction is %)',
            pg_catalog.current_setting('transaction_isolation')
            USING ERRCODE = 'active_sql_transaction';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_inherits i WHERE i.inhrelid OPERATOR(pg_catalog.=) tbl) THEN
        RAISE EXCEPTION '% is a partition or an inheritance child', tbl
            USING ERRCODE = 'feature_not_supported', HINT = 'Adopt the column of the root table.';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) tbl
                   AND c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'p']::pg_catalog."char"[])) THEN
        RAISE EXCEPTION '% is not a table', tbl USING ERRCODE = 'wrong_object_type';
    END IF;
    IF NOT pg_catalog.pg_has_role(current_user,
            (SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) tbl), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', tbl USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT t.attnum, t.atttypid, t.attgenerated INTO a FROM pg_catalog.pg_attribute t
     WHERE t.attrelid OPERATOR(pg_catalog.=) tbl AND t.attname OPERATOR(pg_catalog.=) col
       AND t.attnum OPERATOR(pg_catalog.>) 0 AND NOT t.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of table % does not exist', col, tbl USING ERRCODE = 'undefined_column';
    END IF;
    IF a.atttypid OPERATOR(pg_catalog.<>) 'pg_catalog.int8'::pg_catalog.regtype THEN
        RAISE EXCEPTION 'column "%" of table % is %, not bigint', col, tbl, a.atttypid::pg_catalog.regtype
            USING ERRCODE = 'datatype_mismatch',
                  HINT = pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint first.', tbl, col);
    END IF;
    IF a.attgenerated OPERATOR(pg_catalog.<>) '' THEN
        RAISE EXCEPTION 'column "%" of table % is a generated column', col, tbl USING ERRCODE = 'feature_not_supported';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k
                WHERE k.conrelid OPERATOR(pg_catalog.=) tbl AND k.contype OPERATOR(pg_catalog.=) 'f'
                  AND a.attnum OPERATOR(pg_catalog.=) ANY (k.conkey)) THEN
        RAISE EXCEPTION 'column "%" of table % is part of a foreign key: its values come from the referenced table', col, tbl
            USING ERRCODE = 'feature_not_supported';
    END IF;
    -- no insert may slip under the floor until the caller commits
    EXECUTE pg_catalog.format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl);
    EXECUTE pg_catalog.format('SELECT pg_catalog.max(%I) FROM %s', col, tbl) INTO top;
    -- a serial's or identity's sequence may have handed out more than the table keeps
    -- every sequence the column's DEFAULT uses (owned or not); a DEFAULT that uses none
    -- (another tag, an expression) cannot be accounted for: refused
    FOR seq IN SELECT d.refobjid::pg_catalog.regclass::pg_catalog.text
                 FROM pg_catalog.pg_attrdef ad
                 JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass
                      AND d.objid OPERATOR(pg_catalog.=) ad.oid
                      AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
                 JOIN pg_catalog.pg_class s ON s.oid OPERATOR(pg_catalog.=) d.refobjid
                      AND s.relkind OPERATOR(pg_catalog.=) 'S'
                WHERE ad.adrelid OPERATOR(pg_catalog.=) tbl AND ad.adnum OPERATOR(pg_catalog.=) a.attnum
    LOOP
        EXECUTE pg_catalog.format('SELECT last_value FROM %s', seq) INTO seq_top;
        top := pg_catalog.int8larger(COALESCE(top, 0), seq_top);
        used := true;
    END LOOP;
    IF NOT COALESCE(used, false) AND EXISTS (SELECT 1 FROM pg_catalog.pg_attrdef ad
            WHERE ad.adrelid OPERATOR(pg_catalog.=) tbl AND ad.adnum OPERATOR(pg_catalog.=) a.attnum) THEN
        RAISE EXCEPTION 'column "%" of table % has a DEFAULT that uses no sequence: what it handed out cannot be accounted for', col, tbl
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Drop the DEFAULT first if the column''s values are all in the table.';
    END IF;
    -- identity columns: their sequence
    seq := pg_catalog.pg_get_serial_sequence(tbl::pg_catalog.text, col::pg_catalog.text);
    IF seq IS NOT NULL THEN
        EXECUTE pg_catalog.format('SELECT last_value FROM %s', seq) INTO seq_top;
        top := pg_catalog.int8larger(COALESCE(top, 0), seq_top);
    END IF;
    RETURN pg_catalog.int8larger(COALESCE(top, 0), 0);
END
$fn$;

-- Identity columns cannot have a DEFAULT: drop the identity (and with it its sequence).
-- A serial's sequence stays (owned by the column), unused. Returns what was done to it.
CREATE FUNCTION @extschema@.seqgen_adopt_default(tbl pg_catalog.regclass, col pg_catalog.name, expr pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    ident pg_catalog."char";
    seq pg_catalog.text := pg_catalog.pg_get_serial_sequence(tbl::pg_catalog.text, col::pg_catalog.text);
    what pg_catalog.text := 'no sequence';
BEGIN
    SELECT t.attidentity INTO ident FROM pg_catalog.pg_attribute t
     WHERE t.attrelid OPERATOR(pg_catalog.=) tbl AND t.attname OPERATOR(pg_catalog.=) col;
    IF ident OPERATOR(pg_catalog.<>) '' THEN
        EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', tbl, col);
        what := pg_catalog.format('identity dropped (with its sequence %s)', seq);
    ELSIF seq IS NOT NULL THEN
        what := pg_catalog.format('sequence %s left in place, unused: nothing may call nextval() on it any more', seq);
    END IF;
    EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s', tbl, col, expr);
    RETURN what;
END
$fn$;

CREATE FUNCTION @extschema@.seqgen_adopt(
    biz_tag pg_catalog.text, tbl pg_catalog.regclass, col pg_catalog.name, step pg_catalog.int4 DEFAULT 1000
) RETURNS pg_catalog.int8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    top pg_catalog.int8 := @extschema@.seqgen_adopt_floor(tbl, col);
    what pg_catalog.text;
BEGIN
    PERFORM @extschema@.seqgen_create(biz_tag, step, top OPERATOR(pg_catalog.+) 1);
    what := @extschema@.seqgen_adopt_default(tbl, col,
        pg_catalog.format('@extschema@.seqgen_next(%L::text)', biz_tag));
    RAISE NOTICE 'column "%" of table % now draws from tag "%", starting at %; %',
        col, tbl, biz_tag, top OPERATOR(pg_catalog.+) 1, what;
    RETURN top OPERATOR(pg_catalog.+) 1;
END
$fn$;

CREATE FUNCTION @extschema@.seqgen_adopt_snowflake(tbl pg_catalog.regclass, col pg_catalog.name)
RETURNS pg_catalog.int8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    top pg_catalog.int8 := @extschema@.seqgen_adopt_floor(tbl, col);
    current pg_catalog.int8 := @extschema@.seqgen_snowflake();
    what pg_catalog.text;
BEGIN
    IF top OPERATOR(pg_catalog.>=) current THEN
        RAISE EXCEPTION 'column "%" of table % holds % , at or above the current snowflake %', col, tbl, top, current
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Raise the generator first with seqgen_snowflake_advance(), or keep the column on its sequence.';
    END IF;
    what := @extschema@.seqgen_adopt_default(tbl, col,
        '@extschema@.seqgen_snowflake()');
    RAISE NOTICE 'column "%" of table % now draws snowflakes (above %); %', col, tbl, current, what;
    RETURN current;
END
$fn$;

REVOKE ALL ON FUNCTION @extschema@.seqgen_adopt_floor(pg_catalog.regclass, pg_catalog.name) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_adopt_default(pg_catalog.regclass, pg_catalog.name, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_adopt(pg_catalog.text, pg_catalog.regclass, pg_catalog.name, pg_catalog.int4) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_adopt_snowflake(pg_catalog.regclass, pg_catalog.name) FROM PUBLIC;
