-- pg_seqgen 0.5.0 -> 0.6.0: opaque tags on Citus (node-interleaved tags may be opaque there;
-- every node permutes with the coordinator's key); gapless tags.
-- Everything here is schema-qualified; see "Security Considerations for Extension Scripts".
-- Install the 0.6.0 library, restart the server, then run ALTER EXTENSION pg_seqgen UPDATE in
-- every database that has the extension (on Citus: on the coordinator, which runs it on every
-- worker).

-- Node bits and opaque IDs together: allowed now (make_opaque still refuses them outside
-- Citus). The constraint was unnamed in 0.1.0 to 0.5.0: found by what it says.
DO $$
DECLARE
    c pg_catalog.name;
BEGIN
    FOR c IN
        SELECT conname FROM pg_catalog.pg_constraint
        WHERE conrelid OPERATOR(pg_catalog.=) 'seqgen.alloc'::pg_catalog.regclass
          AND contype OPERATOR(pg_catalog.=) 'c'
          AND pg_catalog.pg_get_constraintdef(oid) OPERATOR(pg_catalog.~~) '%node_bits = 0)%opaque_from IS NULL%'
    LOOP
        EXECUTE pg_catalog.format('ALTER TABLE seqgen.alloc DROP CONSTRAINT %I', c);
    END LOOP;
END;
$$;

-- Gapless tags.
ALTER TABLE seqgen.alloc ADD COLUMN gapless pg_catalog.bool NOT NULL DEFAULT false;

CREATE FUNCTION @extschema@."seqgen_create_gapless"(
	"biz_tag" TEXT,
	"template" TEXT DEFAULT NULL,
	"time_zone" TEXT DEFAULT 'UTC',
	"start_with" bigint DEFAULT 1,
	"description" TEXT DEFAULT NULL
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_create_gapless_wrapper';
CREATE FUNCTION @extschema@."seqgen_gapless_next"(
	"biz_tag" TEXT,
	"key" TEXT DEFAULT ''
) RETURNS bigint
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_gapless_next_wrapper';
CREATE FUNCTION @extschema@."seqgen_gapless_order_no"(
	"biz_tag" TEXT,
	"key" TEXT DEFAULT ''
) RETURNS TEXT
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_gapless_order_no_wrapper';
CREATE FUNCTION @extschema@."seqgen_gapless_assign"()
	RETURNS TRIGGER
	LANGUAGE c
	AS 'MODULE_PATHNAME', 'seqgen_gapless_assign_wrapper';

-- Gapless tags (seqgen_create_gapless): the committed numbers of each key are 1, 2, 3, ...
-- with no gap and no repeat, because the counter row is written in the drawing transaction:
-- whatever undoes the transaction undoes the number. Assigned at commit by a deferred
-- constraint trigger (seqgen_gapless_attach), the key's row is locked only while the
-- transaction commits.
CREATE TABLE seqgen.gapless_counter (
    biz_tag    pg_catalog.text NOT NULL REFERENCES seqgen.alloc (biz_tag) ON DELETE CASCADE,
    -- the key the numbers are counted per ('' for one sequence)
    key        pg_catalog.text NOT NULL,
    -- the period of the tag's template (its start, as seconds of local wall time; 0 without
    -- date fields), so per-period templates restart per key
    period_key pg_catalog.int8 NOT NULL,
    -- the last number given out (committed, as every row here is the committed state)
    last       pg_catalog.int8 NOT NULL,
    PRIMARY KEY (biz_tag, key, period_key)
);
COMMENT ON TABLE seqgen.gapless_counter IS 'pg_seqgen gapless numbers: the last one of each key and period';
SELECT pg_catalog.pg_extension_config_dump('seqgen.gapless_counter', '');
REVOKE ALL ON TABLE seqgen.gapless_counter FROM PUBLIC;

CREATE FUNCTION seqgen.gapless_counter_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
        IF EXISTS (SELECT FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) OLD.biz_tag) THEN
            RAISE EXCEPTION 'the gapless counters of tag "%" cannot be deleted while the tag exists', OLD.biz_tag
                USING ERRCODE = 'feature_not_supported',
                      HINT = 'Deleting them would issue numbers again.';
        END IF;
        RETURN OLD;
    END IF;
    IF NEW.biz_tag OPERATOR(pg_catalog.<>) OLD.biz_tag OR NEW.key OPERATOR(pg_catalog.<>) OLD.key
       OR NEW.period_key OPERATOR(pg_catalog.<>) OLD.period_key THEN
        RAISE EXCEPTION 'the gapless counter of tag "%" cannot be moved', OLD.biz_tag
            USING ERRCODE = 'feature_not_supported';
    END IF;
    IF NEW.last OPERATOR(pg_catalog.<) OLD.last THEN
        RAISE EXCEPTION 'the gapless counter of tag "%", key "%" cannot go back', OLD.biz_tag, OLD.key
            USING ERRCODE = 'check_violation',
                  HINT = 'Lowering it would issue numbers again.';
    END IF;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION seqgen.gapless_counter_guard() FROM PUBLIC;
CREATE TRIGGER gapless_counter_guard BEFORE UPDATE OR DELETE ON seqgen.gapless_counter
    FOR EACH ROW EXECUTE FUNCTION seqgen.gapless_counter_guard();
CREATE TRIGGER gapless_counter_no_truncate BEFORE TRUNCATE ON seqgen.gapless_counter
    FOR EACH STATEMENT EXECUTE FUNCTION seqgen.alloc_no_truncate();
ALTER TABLE seqgen.gapless_counter ENABLE ALWAYS TRIGGER gapless_counter_guard;
ALTER TABLE seqgen.gapless_counter ENABLE ALWAYS TRIGGER gapless_counter_no_truncate;

-- A tag is gapless from its creation and for good.
CREATE FUNCTION seqgen.alloc_gapless_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.gapless OPERATOR(pg_catalog.<>) OLD.gapless THEN
        RAISE EXCEPTION 'tag "%" is % for good', OLD.biz_tag, CASE WHEN OLD.gapless THEN 'gapless' ELSE 'not gapless' END
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Create a gapless tag with seqgen_create_gapless().';
    END IF;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION seqgen.alloc_gapless_guard() FROM PUBLIC;
CREATE TRIGGER alloc_gapless_guard BEFORE UPDATE OF gapless ON seqgen.alloc
    FOR EACH ROW EXECUTE FUNCTION seqgen.alloc_gapless_guard();
ALTER TABLE seqgen.alloc ENABLE ALWAYS TRIGGER alloc_gapless_guard;

-- Number the rows of a table at commit: column number_column of every row inserted (or
-- updated) with it NULL gets the tag's next number for the row's key_column (NULL: one
-- sequence) when the transaction commits (or prepares). A deferred constraint trigger, so the
-- key's counter is locked only while the transaction commits.
CREATE FUNCTION @extschema@.seqgen_gapless_attach(
    "table" pg_catalog.regclass, number_column pg_catalog.text, biz_tag pg_catalog.text,
    key_column pg_catalog.text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET quote_all_identifiers = off
AS $$
DECLARE
    key_type pg_catalog.text;
    base_type pg_catalog.text;
    is_enum pg_catalog.bool;
    child pg_catalog.regclass;
    child_kind pg_catalog.char;
    key_collation pg_catalog.text;
BEGIN
    IF number_column IS NULL OR biz_tag IS NULL OR "table" IS NULL THEN
        RAISE EXCEPTION 'table, number_column and biz_tag must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_attribute WHERE attrelid OPERATOR(pg_catalog.=) "table"
                   AND attname OPERATOR(pg_catalog.=) number_column AND attnum OPERATOR(pg_catalog.>) 0 AND NOT attisdropped) THEN
        RAISE EXCEPTION 'column "%" of % does not exist', number_column, "table" USING ERRCODE = 'undefined_column';
    END IF;
    IF key_column IS NOT NULL AND NOT EXISTS (
        SELECT FROM pg_catalog.pg_attribute WHERE attrelid OPERATOR(pg_catalog.=) "table"
        AND attname OPERATOR(pg_catalog.=) key_column AND attnum OPERATOR(pg_catalog.>) 0 AND NOT attisdropped) THEN
        RAISE EXCEPTION 'column "%" of % does not exist', key_column, "table" USING ERRCODE = 'undefined_column';
    END IF;
    -- the key's text must be the same whatever the committing session's settings: the base
    -- types of src/generators/gapless.rs KEY_TYPES (checked again at every commit) and enums
    IF key_column IS NOT NULL THEN
        SELECT pg_catalog.format_type(a.atttypid, NULL) INTO key_type FROM pg_catalog.pg_attribute a
         WHERE a.attrelid OPERATOR(pg_catalog.=) "table" AND a.attname OPERATOR(pg_catalog.=) key_column;
        WITH RECURSIVE ty(oid, base, typtype) AS (
            SELECT t.oid, t.typbasetype, t.typtype FROM pg_catalog.pg_type t
              JOIN pg_catalog.pg_attribute a ON a.atttypid OPERATOR(pg_catalog.=) t.oid
             WHERE a.attrelid OPERATOR(pg_catalog.=) "table" AND a.attname OPERATOR(pg_catalog.=) key_column
            UNION ALL
            SELECT t.oid, t.typbasetype, t.typtype FROM pg_catalog.pg_type t JOIN ty ON t.oid OPERATOR(pg_catalog.=) ty.base
             WHERE ty.base OPERATOR(pg_catalog.<>) 0)
        SELECT pg_catalog.format_type(ty.oid, NULL), ty.typtype OPERATOR(pg_catalog.=) 'e' INTO base_type, is_enum
          FROM ty WHERE ty.base OPERATOR(pg_catalog.=) 0;
        IF NOT is_enum AND base_type OPERATOR(pg_catalog.<>) ALL (ARRAY['text', 'character varying', 'character', 'name',
                '"char"', 'smallint', 'integer', 'bigint', 'boolean', 'uuid', 'date',
                'timestamp without time zone', 'timestamp with time zone', 'time without time zone',
                'bytea', 'inet', 'cidr']) THEN
            RAISE EXCEPTION 'gapless key column "%" of table % has type %, whose text depends on session settings', key_column, "table", key_type
                USING ERRCODE = 'feature_not_supported',
                      DETAIL = 'Two sessions with other settings (search_path, quote_all_identifiers, lc_monetary, ...) would count one key as two, and repeat its numbers.',
                      HINT = 'Key on a column of a type whose text is fixed (text, an integer, a date, uuid, an enum, ...): for a regclass, its oid or its name as text (a generated column works).';
        END IF;
        -- equal values under a nondeterministic collation have several texts (checked again
        -- at every commit, like the type)
        SELECT pg_catalog.format('%I.%I', cn.nspname, co.collname) INTO key_collation
          FROM pg_catalog.pg_attribute a
          JOIN pg_catalog.pg_collation co ON co.oid OPERATOR(pg_catalog.=) a.attcollation
          JOIN pg_catalog.pg_namespace cn ON cn.oid OPERATOR(pg_catalog.=) co.collnamespace
         WHERE a.attrelid OPERATOR(pg_catalog.=) "table" AND a.attname OPERATOR(pg_catalog.=) key_column
           AND NOT co.collisdeterministic;
        IF key_collation IS NOT NULL THEN
            RAISE EXCEPTION 'gapless key column "%" of table % has the nondeterministic collation %', key_column, "table", key_collation
                USING ERRCODE = 'feature_not_supported',
                      DETAIL = 'Values the collation counts as equal (ACME and acme, under a case-insensitive one) have different texts: one key would be counted as several, and its numbers repeated.',
                      HINT = 'Key on a column with a deterministic collation (COLLATE "C"), or on a generated column such as lower(key).';
        END IF;
    END IF;
    EXECUTE pg_catalog.format(
        'CREATE CONSTRAINT TRIGGER %I AFTER INSERT OR UPDATE ON %s DEFERRABLE INITIALLY DEFERRED '
        'FOR EACH ROW WHEN (NEW.%I IS NULL) EXECUTE FUNCTION %I.seqgen_gapless_assign(%L, %L, %L)',
        'seqgen_gapless_' OPERATOR(pg_catalog.||) number_column, "table", number_column,
        '@extschema@', biz_tag, number_column, COALESCE(key_column, ''));
    -- rows inserted into an inheritance child do not fire their parent's triggers: attach the
    -- table's children too (partitions get the trigger from their partitioned table; a foreign
    -- table takes no constraint trigger, so one is refused); children made later are attached
    -- by the event trigger seqgen_gapless_inherit
    FOR child, child_kind IN SELECT i.inhrelid::pg_catalog.regclass, c.relkind FROM pg_catalog.pg_inherits i
                   JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.inhrelid
                  WHERE i.inhparent OPERATOR(pg_catalog.=) "table" AND NOT c.relispartition
    LOOP
        IF child_kind OPERATOR(pg_catalog.=) 'f' THEN
            RAISE EXCEPTION 'foreign table % inherits from table %, whose rows are numbered at commit', child, "table"
                USING ERRCODE = 'feature_not_supported',
                      DETAIL = 'A foreign table takes no constraint trigger: its rows would be committed without a number.',
                      HINT = 'Detach it (ALTER FOREIGN TABLE ... NO INHERIT), and number its rows where they are stored.';
        END IF;
        -- read again for each child: one reached through two parents is attached once (the
        -- trigger's name as PostgreSQL stores it, cut to 63 bytes)
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_trigger t WHERE t.tgrelid OPERATOR(pg_catalog.=) child
                       AND t.tgname OPERATOR(pg_catalog.=) ('seqgen_gapless_' OPERATOR(pg_catalog.||) number_column)::pg_catalog.name) THEN
            PERFORM @extschema@.seqgen_gapless_attach(child, number_column, biz_tag, key_column);
        END IF;
    END LOOP;
END;
$$;

REVOKE ALL ON FUNCTION @extschema@.seqgen_create_gapless(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.int8, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_gapless_next(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_gapless_order_no(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_gapless_assign() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_gapless_attach(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text) FROM PUBLIC;

-- A table made an inheritance child of an attached table (CREATE TABLE ... INHERITS, ALTER
-- TABLE ... INHERIT) is attached the same way, so that its rows are numbered too. Only the
-- parent's owner can add a child to it (and must own the child); SECURITY DEFINER so that the
-- child's owner need not be allowed seqgen_gapless_attach itself. A table below the new child
-- that belongs to another role is not attached behind its owner's back: the command fails.
-- Settings fixed: the body's literals must not depend on standard_conforming_strings. (It also
-- runs for the extension's own script: to_regprocedure, not a cast, while
-- seqgen_gapless_assign does not exist yet.)
CREATE FUNCTION seqgen.gapless_inherit() RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on
AS $$
DECLARE
    r record;
    a pg_catalog.bytea;
    p pg_catalog.int4;
    args pg_catalog.text[];
    other pg_catalog.regclass;
    other_owner pg_catalog.regrole;
BEGIN
    FOR r IN
        SELECT DISTINCT ON (i.inhrelid, t.tgname) i.inhrelid, i.inhparent, c.relowner, t.tgname, t.tgargs
          FROM pg_catalog.pg_event_trigger_ddl_commands() d
          JOIN pg_catalog.pg_inherits i ON i.inhrelid OPERATOR(pg_catalog.=) d.objid
          JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.inhrelid
          JOIN pg_catalog.pg_trigger t ON t.tgrelid OPERATOR(pg_catalog.=) i.inhparent
         WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
           AND NOT c.relispartition
           AND t.tgfoid OPERATOR(pg_catalog.=) pg_catalog.to_regprocedure('@extschema@.seqgen_gapless_assign()')
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_trigger o WHERE o.tgrelid OPERATOR(pg_catalog.=) i.inhrelid
                           AND o.tgname OPERATOR(pg_catalog.=) t.tgname)
         ORDER BY i.inhrelid, t.tgname
    LOOP
        -- attached by an earlier round of this loop (through another parent)
        CONTINUE WHEN EXISTS (SELECT FROM pg_catalog.pg_trigger o WHERE o.tgrelid OPERATOR(pg_catalog.=) r.inhrelid
                              AND o.tgname OPERATOR(pg_catalog.=) r.tgname);
        -- the new child and the tables below it: all of the new child's owner
        WITH RECURSIVE below(oid) AS (
            SELECT r.inhrelid
            UNION
            SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN below b ON i.inhparent OPERATOR(pg_catalog.=) b.oid)
        SELECT c.oid::pg_catalog.regclass, c.relowner::pg_catalog.regrole INTO other, other_owner
          FROM below b JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) b.oid
         WHERE c.relowner OPERATOR(pg_catalog.<>) r.relowner
         LIMIT 1;
        IF other IS NOT NULL THEN
            RAISE EXCEPTION 'permission denied to number the rows of table % at commit', other
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = pg_catalog.format('Table %s would inherit from table %s, whose rows are numbered at commit, and belongs to role %s.',
                                                 other, r.inhparent::pg_catalog.regclass, other_owner),
                      HINT = 'Have that role attach it (seqgen_gapless_attach), or run the command as that role.';
        END IF;
        -- tgargs: (biz_tag, number_column, key_column or ''), each ended by a zero byte
        a := r.tgargs;
        args := '{}';
        WHILE pg_catalog.length(a) OPERATOR(pg_catalog.>) 0 LOOP
            p := pg_catalog.position(a, pg_catalog.decode('00', 'hex'));
            args := args OPERATOR(pg_catalog.||) pg_catalog.convert_from(pg_catalog.substring(a, 1, p OPERATOR(pg_catalog.-) 1),
                                                                         pg_catalog.getdatabaseencoding());
            a := pg_catalog.substring(a, p OPERATOR(pg_catalog.+) 1);
        END LOOP;
        PERFORM @extschema@.seqgen_gapless_attach(r.inhrelid::pg_catalog.regclass, args[2], args[1], NULLIF(args[3], ''));
    END LOOP;
END;
$$;
REVOKE ALL ON FUNCTION seqgen.gapless_inherit() FROM PUBLIC;
CREATE EVENT TRIGGER seqgen_gapless_inherit ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE', 'CREATE FOREIGN TABLE', 'ALTER FOREIGN TABLE')
    EXECUTE FUNCTION seqgen.gapless_inherit();

-- Keyed counters: seqgen_next(biz_tag, key), where each key starts (alloc.start_with; 1 for
-- the tags made before).
ALTER TABLE seqgen.alloc ADD COLUMN start_with pg_catalog.int8 NOT NULL DEFAULT 1 CHECK (start_with OPERATOR(pg_catalog.>=) 1);

-- Keyed counters (seqgen_next(biz_tag, key)): one counter per key of a tag (a tenant, a
-- project, a branch), created by the allocator at the key's first use. max_id is the highest
-- value reserved for the key; step the size of its last reservation (a key's step adapts to
-- its own rate, from 1 up to the tag's step). Dumped with the database; dropped with the tag.
CREATE TABLE seqgen.key_counter (
    biz_tag     pg_catalog.text NOT NULL REFERENCES seqgen.alloc (biz_tag) ON DELETE CASCADE,
    key         pg_catalog.text NOT NULL
                CHECK (pg_catalog.octet_length(key) OPERATOR(pg_catalog.>=) 1
                   AND pg_catalog.octet_length(key) OPERATOR(pg_catalog.<=) 128),
    max_id      pg_catalog.int8 NOT NULL,
    step        pg_catalog.int4 NOT NULL CHECK (step OPERATOR(pg_catalog.>) 0),
    update_time pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (biz_tag, key)
);
COMMENT ON TABLE seqgen.key_counter IS
    'pg_seqgen keyed counters: max_id is the highest value reserved for the key; it never decreases';
SELECT pg_catalog.pg_extension_config_dump('seqgen.key_counter', '');
REVOKE ALL ON TABLE seqgen.key_counter FROM PUBLIC;

CREATE FUNCTION seqgen.key_counter_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
        -- allowed only with the tag itself (ON DELETE CASCADE)
        IF EXISTS (SELECT FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) OLD.biz_tag) THEN
            RAISE EXCEPTION 'the counter of tag "%", key "%" cannot be deleted while the tag exists', OLD.biz_tag, OLD.key
                USING ERRCODE = 'feature_not_supported',
                      HINT = 'Deleting it would issue its numbers again.';
        END IF;
        RETURN OLD;
    END IF;
    IF NEW.biz_tag OPERATOR(pg_catalog.<>) OLD.biz_tag OR NEW.key OPERATOR(pg_catalog.<>) OLD.key THEN
        RAISE EXCEPTION 'the counter of tag "%", key "%" cannot be moved', OLD.biz_tag, OLD.key
            USING ERRCODE = 'feature_not_supported';
    END IF;
    IF NEW.max_id OPERATOR(pg_catalog.<) OLD.max_id THEN
        RAISE EXCEPTION 'max_id of tag "%", key "%" cannot decrease (from % to %)', OLD.biz_tag, OLD.key, OLD.max_id, NEW.max_id
            USING ERRCODE = 'check_violation',
                  HINT = 'Lowering max_id would hand out numbers again. It may only grow.';
    END IF;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION seqgen.key_counter_guard() FROM PUBLIC;
CREATE TRIGGER key_counter_guard BEFORE UPDATE OR DELETE ON seqgen.key_counter
    FOR EACH ROW EXECUTE FUNCTION seqgen.key_counter_guard();
CREATE TRIGGER key_counter_no_truncate BEFORE TRUNCATE ON seqgen.key_counter
    FOR EACH STATEMENT EXECUTE FUNCTION seqgen.alloc_no_truncate();
ALTER TABLE seqgen.key_counter ENABLE ALWAYS TRIGGER key_counter_guard;
ALTER TABLE seqgen.key_counter ENABLE ALWAYS TRIGGER key_counter_no_truncate;

-- Order-number counters per key (seqgen_order_no(biz_tag, key) with a {key} template): as
-- seqgen.order_counter, one row per tag, key and period unit, written by the allocator at
-- the key's first order number. (period_key, period_max) never decreases.
CREATE TABLE seqgen.key_order_counter (
    biz_tag     pg_catalog.text NOT NULL REFERENCES seqgen.alloc (biz_tag) ON DELETE CASCADE,
    key         pg_catalog.text NOT NULL
                CHECK (pg_catalog.octet_length(key) OPERATOR(pg_catalog.>=) 1
                   AND pg_catalog.octet_length(key) OPERATOR(pg_catalog.<=) 128),
    unit        pg_catalog.text NOT NULL
                CHECK (unit OPERATOR(pg_catalog.=) ANY ('{none,year,month,day,hour,minute,second}'::pg_catalog.text[])),
    period_key  pg_catalog.int8 NOT NULL,
    period_max  pg_catalog.int8 NOT NULL CHECK (period_max OPERATOR(pg_catalog.>=) 0),
    update_time pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (biz_tag, key, unit)
);
COMMENT ON TABLE seqgen.key_order_counter IS
    'pg_seqgen order-number counters per tag, key and period unit; (period_key, period_max) never decreases';
SELECT pg_catalog.pg_extension_config_dump('seqgen.key_order_counter', '');
REVOKE ALL ON TABLE seqgen.key_order_counter FROM PUBLIC;

CREATE FUNCTION seqgen.key_order_counter_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
        -- allowed only with the tag itself (ON DELETE CASCADE)
        IF EXISTS (SELECT FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) OLD.biz_tag) THEN
            RAISE EXCEPTION 'the order-number counter of tag "%", key "%" cannot be deleted while the tag exists', OLD.biz_tag, OLD.key
                USING ERRCODE = 'feature_not_supported',
                      HINT = 'Deleting it would issue order numbers again.';
        END IF;
        RETURN OLD;
    END IF;
    IF NEW.biz_tag OPERATOR(pg_catalog.<>) OLD.biz_tag OR NEW.key OPERATOR(pg_catalog.<>) OLD.key
       OR NEW.unit OPERATOR(pg_catalog.<>) OLD.unit THEN
        RAISE EXCEPTION 'the order-number counter of tag "%", key "%" cannot be moved', OLD.biz_tag, OLD.key
            USING ERRCODE = 'feature_not_supported';
    END IF;
    IF NEW.period_key OPERATOR(pg_catalog.<) OLD.period_key
       OR (NEW.period_key OPERATOR(pg_catalog.=) OLD.period_key
           AND NEW.period_max OPERATOR(pg_catalog.<) OLD.period_max) THEN
        RAISE EXCEPTION 'the order-number counter of tag "%", key "%" cannot go back', OLD.biz_tag, OLD.key
            USING ERRCODE = 'check_violation',
                  HINT = 'Lowering period_key or period_max would issue order numbers again.';
    END IF;
    -- a new period must be a real one of the unit: a period_key moved by hand inside the
    -- period (or for a template without date fields) would render the period's numbers again
    IF NEW.period_key OPERATOR(pg_catalog.<>) OLD.period_key AND NOT (CASE NEW.unit
            WHEN 'none' THEN false
            WHEN 'second' THEN true
            ELSE pg_catalog.date_trunc(NEW.unit, pg_catalog.to_timestamp(NEW.period_key) AT TIME ZONE 'UTC')
                 OPERATOR(pg_catalog.=) (pg_catalog.to_timestamp(NEW.period_key) AT TIME ZONE 'UTC') END) THEN
        RAISE EXCEPTION 'the order-number counter of tag "%", key "%" cannot move to period_key %', OLD.biz_tag, OLD.key, NEW.period_key
            USING ERRCODE = 'check_violation',
                  DETAIL = pg_catalog.format('It is not the start of a %s (the local start of a period, in seconds since 1970-01-01).', NEW.unit),
                  HINT = 'The allocator moves the counter to each new period itself; a period_key inside a period would issue its numbers again.';
    END IF;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION seqgen.key_order_counter_guard() FROM PUBLIC;
CREATE TRIGGER key_order_counter_guard BEFORE UPDATE OR DELETE ON seqgen.key_order_counter
    FOR EACH ROW EXECUTE FUNCTION seqgen.key_order_counter_guard();
CREATE TRIGGER key_order_counter_no_truncate BEFORE TRUNCATE ON seqgen.key_order_counter
    FOR EACH STATEMENT EXECUTE FUNCTION seqgen.alloc_no_truncate();
ALTER TABLE seqgen.key_order_counter ENABLE ALWAYS TRIGGER key_order_counter_guard;
ALTER TABLE seqgen.key_order_counter ENABLE ALWAYS TRIGGER key_order_counter_no_truncate;

CREATE FUNCTION @extschema@."seqgen_next"(
	"biz_tag" TEXT,
	"key" TEXT
) RETURNS bigint
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_next_key_wrapper';
REVOKE ALL ON FUNCTION @extschema@.seqgen_next(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
CREATE FUNCTION @extschema@."seqgen_order_no"(
	"biz_tag" TEXT,
	"key" TEXT
) RETURNS TEXT
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_order_no_key_wrapper';
REVOKE ALL ON FUNCTION @extschema@.seqgen_order_no(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
CREATE FUNCTION @extschema@."seqgen_key_status"(
	"biz_tag" TEXT,
	"only_key" TEXT DEFAULT NULL
) RETURNS TABLE (
	"key" TEXT,
	"max_id" bigint,
	"step" INT,
	"next_value" bigint,
	"segment_end" bigint,
	"loaded" bool,
	"update_time" timestamp with time zone
)
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_key_status_wrapper';
REVOKE ALL ON FUNCTION @extschema@.seqgen_key_status(pg_catalog.text, pg_catalog.text) FROM PUBLIC;

-- The catalog a switchover publishes now carries the keyed (segment and order-number) and gapless counters.
CREATE OR REPLACE FUNCTION @extschema@.seqgen_replication_tables() RETURNS SETOF pg_catalog.regclass
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t::pg_catalog.regclass FROM (VALUES ('seqgen.alloc'), ('seqgen.template'), ('seqgen.template_history'),
        ('seqgen.order_counter'), ('seqgen.opaque_key'), ('seqgen.snowflake'), ('seqgen.uuidv7'),
        ('seqgen.snowflake53'), ('seqgen.key_counter'), ('seqgen.key_order_counter'), ('seqgen.gapless_counter')) AS v(t)
$$;

-- The guards of the order-number catalog (issue 29): a period_key moved by hand must be the
-- start of a period of its unit, and a template changes only through seqgen_set_template().
CREATE OR REPLACE FUNCTION seqgen.order_counter_guard() RETURNS trigger
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
    -- a new period must be a real one of the unit: a period_key moved by hand inside the
    -- period (or for a template without date fields) would render the period's numbers again
    IF NEW.period_key OPERATOR(pg_catalog.<>) OLD.period_key AND NOT (CASE NEW.unit
            WHEN 'none' THEN false
            WHEN 'second' THEN true
            ELSE pg_catalog.date_trunc(NEW.unit, pg_catalog.to_timestamp(NEW.period_key) AT TIME ZONE 'UTC')
                 OPERATOR(pg_catalog.=) (pg_catalog.to_timestamp(NEW.period_key) AT TIME ZONE 'UTC') END) THEN
        RAISE EXCEPTION 'the order-number counter of tag "%" cannot move to period_key %', OLD.biz_tag, NEW.period_key
            USING ERRCODE = 'check_violation',
                  DETAIL = pg_catalog.format('It is not the start of a %s (the local start of a period, in seconds since 1970-01-01).', NEW.unit),
                  HINT = 'The allocator moves the counter to each new period itself; a period_key inside a period would issue its numbers again.';
    END IF;
    RETURN NEW;
END
$$;
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
    -- only seqgen_set_template() changes a template: it checks the new one against every
    -- template the tag used, which an UPDATE by hand would skip
    -- (a subscription's apply worker, session_replication_role = replica, replays what the
    -- publisher's seqgen_set_template() checked)
    IF (NEW.template OPERATOR(pg_catalog.<>) OLD.template OR NEW.time_zone OPERATOR(pg_catalog.<>) OLD.time_zone)
       AND pg_catalog.current_setting('seqgen.changing_template', true) IS DISTINCT FROM 'on'
       AND pg_catalog.current_setting('session_replication_role') OPERATOR(pg_catalog.<>) 'replica' THEN
        RAISE EXCEPTION 'the template of tag "%" can only be changed with seqgen_set_template()', OLD.biz_tag
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'seqgen_set_template() refuses a template that could render a number an earlier one rendered; an UPDATE by hand would not.';
    END IF;
    RETURN NEW;
END
$$;

-- Citus: each node's refused changes of the coordinator's definitions (issue 30)

-- On a Citus worker: the changes of the coordinator's definitions this node refused (a grant
-- to a role it lacks, a template its own counters rule out), one row each, kept by its
-- "pg_seqgen sync" worker; every other change is applied. Not dumped: it is this node's state.
CREATE TABLE seqgen.definitions_refused (
    biz_tag pg_catalog.text NOT NULL,
    field pg_catalog.text NOT NULL,
    problem pg_catalog.text NOT NULL,
    since pg_catalog.timestamptz NOT NULL,
    PRIMARY KEY (biz_tag, field)
);
COMMENT ON TABLE seqgen.definitions_refused IS 'pg_seqgen: changes of the Citus coordinator''s tag definitions this node refused';
REVOKE ALL ON TABLE seqgen.definitions_refused FROM PUBLIC;

-- On a Citus worker: the group this server confirmed as its own (through the host and port
-- Citus lists for it), the node id the coordinator assigned the group (seqgen_cluster_node_id),
-- the WAL timeline it was on and where it ran (host name, port, data directory). A copy of
-- the server (a promoted standby or Citus clone: another timeline; a snapshot started
-- elsewhere) inherits the row but not its match, so it confirms again before it numbers with
-- a group. Not dumped: it is this server's state.
CREATE TABLE seqgen.citus_group_confirmed (
    groupid pg_catalog.int8 NOT NULL,
    node_id pg_catalog.int8 NOT NULL,
    timeline pg_catalog.int8 NOT NULL,
    server pg_catalog.text NOT NULL,
    confirmed pg_catalog.timestamptz NOT NULL
);
COMMENT ON TABLE seqgen.citus_group_confirmed IS 'pg_seqgen: the Citus group this server confirmed as its own, its node id, and on which WAL timeline';
REVOKE ALL ON TABLE seqgen.citus_group_confirmed FROM PUBLIC;

-- On a Citus coordinator: the node id of every Citus group that numbers with pg_seqgen,
-- assigned here once and never again: one per group a worker confirmed (a worker added, a
-- clone split off), not one per id Citus's group sequence skips (a coordinator crash skips up
-- to 32, a failed citus_add_node one). The coordinator is node 0. After an update from 0.5.0
-- (which numbered with group ids), a row with no group marks the ids Citus had handed out by
-- then (a group removed earlier numbered with its id). Dumped with the coordinator's data.
CREATE TABLE seqgen.citus_node_ids (
    node_id pg_catalog.int8 PRIMARY KEY,
    groupid pg_catalog.int8 UNIQUE,
    assigned pg_catalog.timestamptz NOT NULL
);
COMMENT ON TABLE seqgen.citus_node_ids IS 'pg_seqgen: the node id the Citus coordinator assigned each group (never reused)';
REVOKE ALL ON TABLE seqgen.citus_node_ids FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('seqgen.citus_node_ids', '');

-- On a Citus coordinator: the node id of group group_id, assigned at its first call (a
-- worker's "pg_seqgen sync" process calls it when it confirms its group) as one above every
-- id before. The first call of a fresh install, before which no worker numbered, gives the
-- groups listed then 1, 2, ... in group order.
CREATE FUNCTION @extschema@.seqgen_cluster_node_id(group_id pg_catalog.int8) RETURNS pg_catalog.int8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n pg_catalog.int8;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus') THEN
        RAISE EXCEPTION 'seqgen_cluster_node_id() needs Citus in this database'
            USING ERRCODE = 'feature_not_supported';
    END IF;
    IF (SELECT l.groupid FROM pg_catalog.pg_dist_local_group l) OPERATOR(pg_catalog.<>) 0 THEN
        RAISE EXCEPTION 'node ids are assigned on the Citus coordinator'
            USING ERRCODE = 'feature_not_supported';
    END IF;
    IF group_id IS NULL OR group_id OPERATOR(pg_catalog.<=) 0
       OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_node d WHERE d.groupid OPERATOR(pg_catalog.=) group_id) THEN
        RAISE EXCEPTION 'Citus group % is not a worker group in pg_dist_node', group_id
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    SELECT m.node_id INTO n FROM seqgen.citus_node_ids m WHERE m.groupid OPERATOR(pg_catalog.=) group_id;
    IF FOUND THEN
        RETURN n;
    END IF;
    -- one assignment at a time (two workers that join together get two ids)
    LOCK TABLE seqgen.citus_node_ids IN SHARE ROW EXCLUSIVE MODE;
    IF NOT EXISTS (SELECT 1 FROM seqgen.citus_node_ids) THEN
        INSERT INTO seqgen.citus_node_ids (node_id, groupid, assigned)
        SELECT pg_catalog.row_number() OVER (ORDER BY listed.g) OPERATOR(pg_catalog.-) 1, listed.g, pg_catalog.now()
        FROM (SELECT 0::pg_catalog.int8 UNION SELECT d.groupid FROM pg_catalog.pg_dist_node d) AS listed(g);
    END IF;
    SELECT m.node_id INTO n FROM seqgen.citus_node_ids m WHERE m.groupid OPERATOR(pg_catalog.=) group_id;
    IF FOUND THEN
        RETURN n;
    END IF;
    INSERT INTO seqgen.citus_node_ids (node_id, groupid, assigned)
    SELECT pg_catalog.max(m.node_id) OPERATOR(pg_catalog.+) 1, group_id, pg_catalog.now() FROM seqgen.citus_node_ids m
    RETURNING node_id INTO n;
    RETURN n;
END;
$$;
REVOKE ALL ON FUNCTION @extschema@.seqgen_cluster_node_id(pg_catalog.int8) FROM PUBLIC;
-- 0.5.0 numbered with Citus group ids: on a Citus coordinator the groups listed now keep
-- theirs, and no id Citus had handed out by now is assigned again (a group removed earlier
-- numbered with it).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus') THEN
        IF (SELECT l.groupid FROM pg_catalog.pg_dist_local_group l) OPERATOR(pg_catalog.=) 0 THEN
            INSERT INTO seqgen.citus_node_ids (node_id, groupid, assigned)
            SELECT listed.g, listed.g, pg_catalog.now()
            FROM (SELECT 0::pg_catalog.int8 UNION SELECT d.groupid FROM pg_catalog.pg_dist_node d) AS listed(g);
            INSERT INTO seqgen.citus_node_ids (node_id, groupid, assigned)
            SELECT s.last_value, NULL, pg_catalog.now() FROM pg_catalog.pg_dist_groupid_seq s
            ON CONFLICT DO NOTHING;
            IF (SELECT pg_catalog.max(m.node_id) FROM seqgen.citus_node_ids m) OPERATOR(pg_catalog.>=) 255 THEN
                RAISE WARNING 'Citus group ids had reached % before this update, so workers added from now on get node ids above 255',
                    (SELECT pg_catalog.max(m.node_id) FROM seqgen.citus_node_ids m)
                    USING HINT = 'Tags created on Citus (8 node bits) refuse such workers; snowflakes (10 node bits) serve them up to 1023.';
            END IF;
        END IF;
    END IF;
END
$$;

-- On a Citus coordinator: every node's refused changes.
CREATE FUNCTION @extschema@.seqgen_cluster_refused(
    OUT nodeid pg_catalog.int4, OUT biz_tag pg_catalog.text, OUT field pg_catalog.text,
    OUT problem pg_catalog.text, OUT since pg_catalog.timestamptz)
RETURNS SETOF record
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus') THEN
        RAISE EXCEPTION 'seqgen_cluster_refused() needs Citus in this database'
            USING ERRCODE = 'feature_not_supported';
    END IF;
    FOR r IN EXECUTE 'SELECT nodeid, success, result FROM pg_catalog.run_command_on_all_nodes($1)'
        USING 'SELECT COALESCE(pg_catalog.json_agg(r), ''[]''::pg_catalog.json) FROM seqgen.definitions_refused r'
    LOOP
        IF NOT r.success THEN
            -- a node that could not be asked (down, or not updated yet) is listed, not skipped
            RETURN QUERY SELECT r.nodeid, NULL::pg_catalog.text, NULL::pg_catalog.text,
                pg_catalog.concat('could not read this node''s refusals: ', r.result), NULL::pg_catalog.timestamptz;
            CONTINUE;
        END IF;
        RETURN QUERY SELECT r.nodeid, x.biz_tag, x.field, x.problem, x.since
            FROM pg_catalog.json_to_recordset(r.result::pg_catalog.json)
                 AS x(biz_tag pg_catalog.text, field pg_catalog.text, problem pg_catalog.text, since pg_catalog.timestamptz)
            ORDER BY x.biz_tag, x.field, x.problem;
    END LOOP;
END;
$$;
REVOKE ALL ON FUNCTION @extschema@.seqgen_cluster_refused() FROM PUBLIC;

-- seqgen_publish(NULL) said that publication "<NULL>" does not exist: 22004 now, as below
CREATE OR REPLACE FUNCTION @extschema@.seqgen_publish(publication pg_catalog.name) RETURNS SETOF pg_catalog.regclass
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t pg_catalog.regclass;
BEGIN
    IF publication IS NULL THEN
        RAISE EXCEPTION 'publication must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
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

-- One NULL rule (issue 31): an administrative call given a NULL raises 22004 naming the
-- argument, where these STRICT functions did nothing and said nothing. Draws stay STRICT, like
-- nextval.
ALTER FUNCTION @extschema@.seqgen_apply(pg_catalog.jsonb, pg_catalog.bool) CALLED ON NULL INPUT;
ALTER FUNCTION @extschema@.seqgen_grant(pg_catalog.text, pg_catalog.text) CALLED ON NULL INPUT;
ALTER FUNCTION @extschema@.seqgen_revoke(pg_catalog.text, pg_catalog.text) CALLED ON NULL INPUT;
ALTER FUNCTION @extschema@.seqgen_make_opaque(pg_catalog.text) CALLED ON NULL INPUT;
ALTER FUNCTION @extschema@.seqgen_restart(pg_catalog.text, pg_catalog.int8, pg_catalog.bool) CALLED ON NULL INPUT;
ALTER FUNCTION @extschema@.seqgen_restart_undo(pg_catalog.text) CALLED ON NULL INPUT;
ALTER FUNCTION @extschema@.seqgen_set_node_bits(pg_catalog.text, pg_catalog.int4) CALLED ON NULL INPUT;
ALTER FUNCTION @extschema@.seqgen_set_template(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.bool) CALLED ON NULL INPUT;
ALTER FUNCTION @extschema@.seqgen_snowflake_advance(pg_catalog.int8, pg_catalog.bool) CALLED ON NULL INPUT;
ALTER FUNCTION @extschema@.seqgen_snowflake_rewind(pg_catalog.int8) CALLED ON NULL INPUT;
ALTER FUNCTION @extschema@.seqgen_snowflake53_rewind(pg_catalog.int8) CALLED ON NULL INPUT;
ALTER FUNCTION @extschema@.seqgen_uuidv7_rewind(pg_catalog.int8) CALLED ON NULL INPUT;

-- The tag behind a column (issue 31), like pg_get_serial_sequence: read from the DEFAULT's
-- stored expression, opening no table (src/plumbing/defaults.rs).
CREATE FUNCTION @extschema@."seqgen_column_tag"(
	"tbl" pg_catalog.regclass,
	"col" pg_catalog.text
) RETURNS pg_catalog.text
STABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_column_tag_wrapper';
REVOKE ALL ON FUNCTION @extschema@.seqgen_column_tag(pg_catalog.regclass, pg_catalog.text) FROM PUBLIC;

-- seqgen_adopt takes a column whose DEFAULT draws from the very tag it creates, when that tag's
-- catalog row is gone (a switchover whose publication left out the catalog): the unknown-tag
-- error's hint points to it. seqgen_adopt_floor is internal; it gains drawn_tag.
DROP FUNCTION @extschema@.seqgen_adopt_floor(pg_catalog.regclass, pg_catalog.name);
CREATE FUNCTION @extschema@.seqgen_adopt_floor(tbl pg_catalog.regclass, col pg_catalog.name, drawn_tag pg_catalog.text DEFAULT NULL)
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
    -- except a DEFAULT that is seqgen_next(drawn_tag) and nothing else, drawn_tag being the
    -- tag created next (it does not exist: seqgen_create refuses one that does): its catalog
    -- row is gone (a switchover whose publication left it out, a restore without it), and the
    -- column holds what it gave (the table is locked: pg_get_expr waits for nothing)
    IF NOT COALESCE(used, false) AND EXISTS (SELECT 1 FROM pg_catalog.pg_attrdef ad
            WHERE ad.adrelid OPERATOR(pg_catalog.=) tbl AND ad.adnum OPERATOR(pg_catalog.=) a.attnum
              AND (drawn_tag IS NULL
                   OR pg_catalog.pg_get_expr(ad.adbin, ad.adrelid) OPERATOR(pg_catalog.<>)
                      pg_catalog.format('%I.seqgen_next(%L::text)', '@extschema@', drawn_tag))) THEN
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
REVOKE ALL ON FUNCTION @extschema@.seqgen_adopt_floor(pg_catalog.regclass, pg_catalog.name, pg_catalog.text) FROM PUBLIC;
CREATE OR REPLACE FUNCTION @extschema@.seqgen_adopt(
    biz_tag pg_catalog.text, tbl pg_catalog.regclass, col pg_catalog.name, step pg_catalog.int4 DEFAULT 1000
) RETURNS pg_catalog.int8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    top pg_catalog.int8 := @extschema@.seqgen_adopt_floor(tbl, col, biz_tag);
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

-- Sortable text for IDs (issue 34): Crockford base32 of a bigint or a uuid (a ULID), and back;
-- typed IDs (a prefix, `_`, the text; for uuids the TypeID format).
-- Pure functions, executable by everyone like the other helpers.
CREATE FUNCTION @extschema@."seqgen_encode"(
	"value" bigint,
	"width" INT DEFAULT 13
) RETURNS TEXT
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_encode_wrapper';
CREATE FUNCTION @extschema@."seqgen_decode"(
	"id" TEXT
) RETURNS bigint
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_decode_wrapper';
CREATE FUNCTION @extschema@."seqgen_encode_uuid"(
	"value" uuid
) RETURNS TEXT
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_encode_uuid_wrapper';
CREATE FUNCTION @extschema@."seqgen_decode_uuid"(
	"id" TEXT
) RETURNS uuid
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_decode_uuid_wrapper';
CREATE FUNCTION @extschema@."seqgen_encode_typed"(
	"prefix" TEXT,
	"value" bigint
) RETURNS TEXT
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_encode_typed_wrapper';
CREATE FUNCTION @extschema@."seqgen_decode_typed"(
	"prefix" TEXT,
	"id" TEXT
) RETURNS bigint
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_decode_typed_wrapper';
CREATE FUNCTION @extschema@."seqgen_encode_typeid"(
	"prefix" TEXT,
	"value" uuid
) RETURNS TEXT
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_encode_typeid_wrapper';
CREATE FUNCTION @extschema@."seqgen_decode_typeid"(
	"prefix" TEXT,
	"id" TEXT
) RETURNS uuid
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_decode_typeid_wrapper';
-- Short codes of opaque tags.
CREATE FUNCTION @extschema@."seqgen_next_code"(
	"biz_tag" TEXT,
	"length" INT DEFAULT 8
) RETURNS TEXT
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_next_code_wrapper';
CREATE FUNCTION @extschema@."seqgen_reveal_code"(
	"biz_tag" TEXT,
	"code" TEXT
) RETURNS bigint
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_reveal_code_wrapper';
CREATE FUNCTION @extschema@."seqgen_code_is_valid"(
	"code" TEXT
) RETURNS bool
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_code_is_valid_wrapper';
REVOKE ALL ON FUNCTION @extschema@.seqgen_next_code(pg_catalog.text, pg_catalog.int4) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_reveal_code(pg_catalog.text, pg_catalog.text) FROM PUBLIC;
-- What seqgen_next last returned to this session (like currval and lastval).
CREATE FUNCTION @extschema@."seqgen_currval"(
	"biz_tag" TEXT
) RETURNS bigint
STRICT VOLATILE PARALLEL RESTRICTED
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_currval_wrapper';
CREATE FUNCTION @extschema@."seqgen_lastval"() RETURNS bigint
STRICT VOLATILE PARALLEL RESTRICTED
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_lastval_wrapper';
REVOKE ALL ON FUNCTION @extschema@.seqgen_currval(pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_lastval() FROM PUBLIC;
-- seqgen_create(..., if_not_exists) and seqgen_drop(..., missing_ok), as CREATE SEQUENCE IF NOT
-- EXISTS and DROP SEQUENCE IF EXISTS (issue 31): a parameter with a DEFAULT, not an overload, so
-- the functions take new signatures. Each new one gets the old one's grants (an application's
-- GRANT EXECUTE survives the update), then the old one goes. (A stored object that calls the
-- old one by its OID, a SQL function with a BEGIN ATOMIC body, makes the update fail and
-- change nothing: recreate that object after the update.)
CREATE FUNCTION @extschema@."seqgen_create"(
	"biz_tag" TEXT,
	"step" INT DEFAULT 1000,
	"start_with" bigint DEFAULT 1,
	"description" TEXT DEFAULT NULL,
	"if_not_exists" bool DEFAULT false
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_create_if_not_exists_wrapper';
CREATE FUNCTION @extschema@."seqgen_drop"(
	"biz_tag" TEXT,
	"missing_ok" bool DEFAULT false
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_drop_missing_ok_wrapper';
REVOKE ALL ON FUNCTION @extschema@.seqgen_create(pg_catalog.text, pg_catalog.int4, pg_catalog.int8, pg_catalog.text, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_drop(pg_catalog.text, pg_catalog.bool) FROM PUBLIC;
-- The same for the overloads that took an option (issue 31): seqgen_restart (force),
-- seqgen_set_template (allow_repeats) and seqgen_snowflake_advance (force) are one function
-- each, so that GRANT EXECUTE ON FUNCTION seqgen_restart TO a role names it. The longer one
-- stays, with its grants, takes the shorter one's grants and DEFAULTs for the options, and
-- the shorter one goes.
CREATE OR REPLACE FUNCTION @extschema@."seqgen_restart"(
	"biz_tag" TEXT,
	"start_with" bigint,
	"force" bool DEFAULT false
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_restart_force_wrapper';
CREATE OR REPLACE FUNCTION @extschema@."seqgen_set_template"(
	"biz_tag" TEXT,
	"template" TEXT,
	"time_zone" TEXT DEFAULT 'UTC',
	"allow_repeats" bool DEFAULT false
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_set_template_allow_wrapper';
CREATE OR REPLACE FUNCTION @extschema@."seqgen_snowflake_advance"(
	"min_id" bigint,
	"force" bool DEFAULT false
) RETURNS bigint
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_snowflake_advance_force_wrapper';
-- seqgen_uuidv7_rewind takes a uuid (it took the generator's bigint, ms << 21 | counter), and
-- the UUIDv7 and 53-bit generators get an advance each, as snowflakes have: the failover
-- runbook raises every floor with a call, none by editing the catalog (issue 31).
CREATE FUNCTION @extschema@."seqgen_uuidv7_rewind"(
	"to_id" uuid
) RETURNS uuid
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_uuidv7_rewind_uuid_wrapper';
CREATE FUNCTION @extschema@."seqgen_uuidv7_advance"(
	"min_id" uuid,
	"force" bool DEFAULT false
) RETURNS uuid
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_uuidv7_advance_wrapper';
CREATE FUNCTION @extschema@."seqgen_snowflake53_advance"(
	"min_id" bigint,
	"force" bool DEFAULT false
) RETURNS bigint
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_snowflake53_advance_wrapper';
REVOKE ALL ON FUNCTION @extschema@.seqgen_uuidv7_rewind(pg_catalog.uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_uuidv7_advance(pg_catalog.uuid, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_snowflake53_advance(pg_catalog.int8, pg_catalog.bool) FROM PUBLIC;
-- and the floors of tags (their keys, their order-number counters) rise by a call too
CREATE FUNCTION @extschema@."seqgen_advance"(
	"biz_tag" TEXT,
	"margin" bigint
) RETURNS bigint
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_advance_wrapper';
REVOKE ALL ON FUNCTION @extschema@.seqgen_advance(pg_catalog.text, pg_catalog.int8) FROM PUBLIC;
DO $$
DECLARE
    f record;
    g record;
BEGIN
    FOR f IN SELECT * FROM (VALUES
        ('@extschema@.seqgen_uuidv7_rewind(pg_catalog.int8)'::pg_catalog.regprocedure,
         '@extschema@.seqgen_uuidv7_rewind(pg_catalog.uuid)'::pg_catalog.regprocedure),
        ('@extschema@.seqgen_create(pg_catalog.text, pg_catalog.int4, pg_catalog.int8, pg_catalog.text)'::pg_catalog.regprocedure,
         '@extschema@.seqgen_create(pg_catalog.text, pg_catalog.int4, pg_catalog.int8, pg_catalog.text, pg_catalog.bool)'::pg_catalog.regprocedure),
        ('@extschema@.seqgen_drop(pg_catalog.text)'::pg_catalog.regprocedure,
         '@extschema@.seqgen_drop(pg_catalog.text, pg_catalog.bool)'::pg_catalog.regprocedure),
        ('@extschema@.seqgen_restart(pg_catalog.text, pg_catalog.int8)'::pg_catalog.regprocedure,
         '@extschema@.seqgen_restart(pg_catalog.text, pg_catalog.int8, pg_catalog.bool)'::pg_catalog.regprocedure),
        ('@extschema@.seqgen_set_template(pg_catalog.text, pg_catalog.text, pg_catalog.text)'::pg_catalog.regprocedure,
         '@extschema@.seqgen_set_template(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.bool)'::pg_catalog.regprocedure),
        ('@extschema@.seqgen_snowflake_advance(pg_catalog.int8)'::pg_catalog.regprocedure,
         '@extschema@.seqgen_snowflake_advance(pg_catalog.int8, pg_catalog.bool)'::pg_catalog.regprocedure)) AS v(old, new)
    LOOP
        -- (PostgreSQL records each copy as granted by the function's owner: a grant that a
        -- role with the grant option made is no longer that role's to revoke)
        FOR g IN SELECT a.grantee, a.is_grantable
                   FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
                  WHERE p.oid OPERATOR(pg_catalog.=) f.old AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
                    AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
        LOOP
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION @extschema@.%I(%s) TO %s%s',
                (SELECT proname FROM pg_catalog.pg_proc WHERE oid OPERATOR(pg_catalog.=) f.new),
                pg_catalog.pg_get_function_identity_arguments(f.new),
                CASE WHEN g.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' ELSE g.grantee::pg_catalog.regrole::pg_catalog.text END,
                CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
    END LOOP;
END
$$;
DROP FUNCTION @extschema@.seqgen_create(pg_catalog.text, pg_catalog.int4, pg_catalog.int8, pg_catalog.text);
DROP FUNCTION @extschema@.seqgen_drop(pg_catalog.text);
DROP FUNCTION @extschema@.seqgen_restart(pg_catalog.text, pg_catalog.int8);
DROP FUNCTION @extschema@.seqgen_set_template(pg_catalog.text, pg_catalog.text, pg_catalog.text);
DROP FUNCTION @extschema@.seqgen_snowflake_advance(pg_catalog.int8);
DROP FUNCTION @extschema@.seqgen_uuidv7_rewind(pg_catalog.int8);

-- Cumulative counters (issue 31, item 8): seqgen_stats() for pg_monitor, seqgen_stats_reset()
-- for superusers; the view seqgen_tags, like pg_sequences, readable by everyone.
CREATE FUNCTION @extschema@."seqgen_stats"() RETURNS TABLE (
	"drawn" bigint,
	"segments" bigint,
	"reserved" bigint,
	"cached" bigint,
	"lost_eviction" bigint,
	"lost_change" bigint,
	"lost_session" bigint,
	"lost_period" bigint,
	"evictions" bigint,
	"waits" bigint,
	"wait_time" double precision,
	"longest_wait" double precision,
	"wait_timeouts" bigint,
	"gapless_draws" bigint,
	"gapless_time" double precision,
	"longest_gapless" double precision,
	"gapless_timeouts" bigint,
	"stats_reset" timestamp with time zone
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_stats_wrapper';
CREATE FUNCTION @extschema@."seqgen_stats_reset"() RETURNS void
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_stats_reset_wrapper';
CREATE FUNCTION @extschema@."seqgen_tag_rows"() RETURNS TABLE (
	"biz_tag" TEXT,
	"tag_owner" TEXT,
	"kind" TEXT,
	"step" INT,
	"node_bits" INT,
	"opaque" bool,
	"max_id" bigint,
	"next_value" bigint,
	"cached" bigint,
	"drawn" bigint,
	"waits" bigint,
	"in_shared_memory" bool,
	"description" TEXT,
	"update_time" timestamp with time zone
)
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_tag_rows_wrapper';
REVOKE ALL ON FUNCTION @extschema@.seqgen_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.seqgen_stats() TO pg_monitor;
REVOKE ALL ON FUNCTION @extschema@.seqgen_stats_reset() FROM PUBLIC;
ALTER FUNCTION @extschema@.seqgen_tag_rows() SET SCHEMA seqgen;
GRANT EXECUTE ON FUNCTION seqgen.seqgen_tag_rows() TO PUBLIC;
COMMENT ON FUNCTION seqgen.seqgen_tag_rows() IS 'pg_seqgen (internal): the rows of the view seqgen_tags';
CREATE VIEW @extschema@.seqgen_tags AS SELECT * FROM seqgen.seqgen_tag_rows();
GRANT SELECT ON @extschema@.seqgen_tags TO PUBLIC;
COMMENT ON VIEW @extschema@.seqgen_tags IS 'The tags the current role owns or may draw from (every tag for pg_monitor), like pg_sequences: owner, kind, step, reserved maximum, next value, values cached and drawn, waits';

-- What each function is: its COMMENT (\df+ shows it), generated from the function's page in
-- docs/reference, where the book shows the same text. The update script from 0.5.0 carries the
-- same block (the upgrade test compares every function's description after an update with a
-- fresh install's). Internal functions say so.
-- <comments>
-- Generated from the headings of docs/reference/*.md by tests/integration/tests/docs.rs
-- (SEQGEN_BLESS=1 writes it): edit the pages, not these lines.
COMMENT ON FUNCTION @extschema@.seqgen_adopt_default(pg_catalog.regclass, pg_catalog.name, pg_catalog.text) IS 'pg_seqgen (internal, for seqgen_adopt): set a column''s DEFAULT';
COMMENT ON FUNCTION @extschema@.seqgen_adopt_floor(pg_catalog.regclass, pg_catalog.name, pg_catalog.text) IS 'pg_seqgen (internal, for seqgen_adopt): the highest value of a column';
COMMENT ON FUNCTION @extschema@.seqgen_cluster_definitions(pg_catalog.text) IS 'pg_seqgen (internal, on a Citus coordinator): the tag definitions the workers copy, when newer than known';
COMMENT ON FUNCTION @extschema@.seqgen_cluster_node_id(pg_catalog.int8) IS 'pg_seqgen (internal, on a Citus coordinator): the node id of a Citus group, assigned once and never reused';
COMMENT ON FUNCTION @extschema@.seqgen_gapless_assign() IS 'pg_seqgen (internal): trigger that numbers a table attached with seqgen_gapless_attach';
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
COMMENT ON FUNCTION @extschema@.seqgen_next(pg_catalog.text) IS 'Next ID of a tag (a column DEFAULT): never repeated, no lock and no table access in steady state';
COMMENT ON FUNCTION @extschema@.seqgen_next(pg_catalog.text, pg_catalog.text) IS 'Next ID of a tag''s counter for one key (a tenant, a project), counted from the tag''s start';
COMMENT ON FUNCTION @extschema@.seqgen_next_batch(pg_catalog.text, pg_catalog.int4) IS 'The next n IDs of a tag, ascending';
COMMENT ON FUNCTION @extschema@.seqgen_next_code(pg_catalog.text, pg_catalog.int4) IS 'Next short code of an opaque tag: length characters (8 by default) with a check character, revealing neither order nor volume; never repeated';
COMMENT ON FUNCTION @extschema@.seqgen_node() IS 'This server''s node id, where it comes from (seqgen.node_id or Citus), its Citus group';
COMMENT ON FUNCTION @extschema@.seqgen_order_no(pg_catalog.text) IS 'Next order number of a tag: its template rendered with the counter of the current period; never reissued';
COMMENT ON FUNCTION @extschema@.seqgen_order_no(pg_catalog.text, pg_catalog.text) IS 'Next order number of a tag for one key (a template with {key}); never reissued';
COMMENT ON FUNCTION @extschema@.seqgen_publish(pg_catalog.name) IS 'Add pg_seqgen''s tables to a publication; returns them';
COMMENT ON FUNCTION @extschema@.seqgen_render(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz, pg_catalog.text) IS 'Render an order-number template for a counter value and a time, without drawing';
COMMENT ON FUNCTION @extschema@.seqgen_render(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz, pg_catalog.text, pg_catalog.text) IS 'Render an order-number template for a counter value and a time, with a tag''s opaque key, without drawing';
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
