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
--
-- seqgen_gapless_attach is a BEGIN ATOMIC body that reaches two internal functions in schema
-- seqgen by OID, so its callers need no use of that schema and no grant on anything internal:
-- seqgen.gapless_attach_targets checks the call with the caller's rights and gives the table
-- and the inheritance children below it; seqgen.seqgen_gapless_create_trigger (src/generators/
-- gapless.rs) puts the commit-time trigger, whose function seqgen.seqgen_gapless_assign no
-- caller may name, on each, once it has checked that the caller may create triggers there.
CREATE FUNCTION seqgen.gapless_attach_targets(
    tbl pg_catalog.regclass, number_column pg_catalog.text, biz_tag pg_catalog.text, key_column pg_catalog.text)
RETURNS SETOF pg_catalog.regclass
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET quote_all_identifiers = off
AS $$
DECLARE
    key_type pg_catalog.text;
    base_type pg_catalog.text;
    is_enum pg_catalog.bool;
    child record;
    key_collation pg_catalog.text;
BEGIN
    IF NOT pg_catalog.has_function_privilege(
            '@extschema@.seqgen_gapless_attach(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text)', 'EXECUTE') THEN
        RAISE EXCEPTION 'permission denied for function seqgen_gapless_attach' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF tbl IS NULL OR number_column IS NULL OR biz_tag IS NULL THEN
        RAISE EXCEPTION '% must not be NULL', CASE WHEN tbl IS NULL THEN 'tbl' WHEN number_column IS NULL THEN 'number_column' ELSE 'biz_tag' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_attribute WHERE attrelid OPERATOR(pg_catalog.=) tbl
                   AND attname OPERATOR(pg_catalog.=) number_column AND attnum OPERATOR(pg_catalog.>) 0 AND NOT attisdropped) THEN
        RAISE EXCEPTION 'column "%" of % does not exist', number_column, tbl USING ERRCODE = 'undefined_column';
    END IF;
    IF key_column IS NOT NULL AND NOT EXISTS (
        SELECT FROM pg_catalog.pg_attribute WHERE attrelid OPERATOR(pg_catalog.=) tbl
        AND attname OPERATOR(pg_catalog.=) key_column AND attnum OPERATOR(pg_catalog.>) 0 AND NOT attisdropped) THEN
        RAISE EXCEPTION 'column "%" of % does not exist', key_column, tbl USING ERRCODE = 'undefined_column';
    END IF;
    -- the key's text must be the same whatever the committing session's settings: the base
    -- types of src/generators/gapless.rs KEY_TYPES (checked again at every commit) and enums
    IF key_column IS NOT NULL THEN
        SELECT pg_catalog.format_type(a.atttypid, NULL) INTO key_type FROM pg_catalog.pg_attribute a
         WHERE a.attrelid OPERATOR(pg_catalog.=) tbl AND a.attname OPERATOR(pg_catalog.=) key_column;
        WITH RECURSIVE ty(oid, base, typtype) AS (
            SELECT t.oid, t.typbasetype, t.typtype FROM pg_catalog.pg_type t
              JOIN pg_catalog.pg_attribute a ON a.atttypid OPERATOR(pg_catalog.=) t.oid
             WHERE a.attrelid OPERATOR(pg_catalog.=) tbl AND a.attname OPERATOR(pg_catalog.=) key_column
            UNION ALL
            SELECT t.oid, t.typbasetype, t.typtype FROM pg_catalog.pg_type t JOIN ty ON t.oid OPERATOR(pg_catalog.=) ty.base
             WHERE ty.base OPERATOR(pg_catalog.<>) 0)
        SELECT pg_catalog.format_type(ty.oid, NULL), ty.typtype OPERATOR(pg_catalog.=) 'e' INTO base_type, is_enum
          FROM ty WHERE ty.base OPERATOR(pg_catalog.=) 0;
        IF NOT is_enum AND base_type OPERATOR(pg_catalog.<>) ALL (ARRAY['text', 'character varying', 'character', 'name',
                '"char"', 'smallint', 'integer', 'bigint', 'boolean', 'uuid', 'date',
                'timestamp without time zone', 'timestamp with time zone', 'time without time zone',
                'bytea', 'inet', 'cidr']) THEN
            RAISE EXCEPTION 'gapless key column "%" of table % has type %, whose text depends on session settings', key_column, tbl, key_type
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
         WHERE a.attrelid OPERATOR(pg_catalog.=) tbl AND a.attname OPERATOR(pg_catalog.=) key_column
           AND NOT co.collisdeterministic;
        IF key_collation IS NOT NULL THEN
            RAISE EXCEPTION 'gapless key column "%" of table % has the nondeterministic collation %', key_column, tbl, key_collation
                USING ERRCODE = 'feature_not_supported',
                      DETAIL = 'Values the collation counts as equal (ACME and acme, under a case-insensitive one) have different texts: one key would be counted as several, and its numbers repeated.',
                      HINT = 'Key on a column with a deterministic collation (COLLATE "C"), or on a generated column such as lower(key).';
        END IF;
    END IF;
    RETURN NEXT tbl;
    -- rows inserted into an inheritance child do not fire their parent's triggers: attach the
    -- table's children too, and theirs (partitions get the trigger from their partitioned
    -- table; a foreign table takes no constraint trigger, so one is refused); a child that has
    -- the trigger already keeps it, with the tables below it. Children made later are attached
    -- by the event trigger seqgen_gapless_inherit. (The trigger's name as PostgreSQL stores
    -- it, cut to 63 bytes; one reached through two parents is attached once.)
    FOR child IN
        WITH RECURSIVE below(oid, parent) AS (
            SELECT i.inhrelid, i.inhparent FROM pg_catalog.pg_inherits i
             WHERE i.inhparent OPERATOR(pg_catalog.=) tbl
            UNION
            SELECT i.inhrelid, i.inhparent FROM pg_catalog.pg_inherits i JOIN below b ON i.inhparent OPERATOR(pg_catalog.=) b.oid
             WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_trigger t WHERE t.tgrelid OPERATOR(pg_catalog.=) b.oid
                               AND t.tgname OPERATOR(pg_catalog.=) ('seqgen_gapless_' OPERATOR(pg_catalog.||) number_column)::pg_catalog.name))
        SELECT DISTINCT ON (b.oid) b.oid::pg_catalog.regclass AS rel, b.parent::pg_catalog.regclass AS parent, c.relkind
          FROM below b JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) b.oid
         WHERE NOT c.relispartition
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_trigger t WHERE t.tgrelid OPERATOR(pg_catalog.=) b.oid
                           AND t.tgname OPERATOR(pg_catalog.=) ('seqgen_gapless_' OPERATOR(pg_catalog.||) number_column)::pg_catalog.name)
         ORDER BY b.oid
    LOOP
        IF child.relkind OPERATOR(pg_catalog.=) 'f' THEN
            RAISE EXCEPTION 'foreign table % inherits from table %, whose rows are numbered at commit', child.rel, child.parent
                USING ERRCODE = 'feature_not_supported',
                      DETAIL = 'A foreign table takes no constraint trigger: its rows would be committed without a number.',
                      HINT = 'Detach it (ALTER FOREIGN TABLE ... NO INHERIT), and number its rows where they are stored.';
        END IF;
        RETURN NEXT child.rel;
    END LOOP;
END;
$$;
-- unreachable by name (no role but the owner may use schema seqgen), and checks its caller
GRANT EXECUTE ON FUNCTION seqgen.gapless_attach_targets(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text) TO PUBLIC;
ALTER FUNCTION @extschema@.seqgen_gapless_create_trigger(pg_catalog.oid, pg_catalog.text, pg_catalog.text, pg_catalog.text) SET SCHEMA seqgen;
GRANT EXECUTE ON FUNCTION seqgen.seqgen_gapless_create_trigger(pg_catalog.oid, pg_catalog.text, pg_catalog.text, pg_catalog.text) TO PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_gapless_assign() FROM PUBLIC;
ALTER FUNCTION @extschema@.seqgen_gapless_assign() SET SCHEMA seqgen;

CREATE FUNCTION @extschema@.seqgen_gapless_attach(
    tbl pg_catalog.regclass, number_column pg_catalog.text, biz_tag pg_catalog.text,
    key_column pg_catalog.text DEFAULT NULL)
RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT seqgen.seqgen_gapless_create_trigger(t, number_column, biz_tag, key_column)
      FROM seqgen.gapless_attach_targets(tbl, number_column, biz_tag, key_column) AS t;
END;

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
           AND t.tgfoid OPERATOR(pg_catalog.=) pg_catalog.to_regprocedure('seqgen.seqgen_gapless_assign()')
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
