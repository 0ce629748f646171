-- pg_seqgen 0.6.0 -> 1.0.0: one function for each draw, its options parameters with a
-- DEFAULT; what Citus workers call on their coordinator out of the user's schema.
-- Everything here is schema-qualified; see "Security Considerations for Extension Scripts".
-- Install the 1.0.0 library, restart the server, then run ALTER EXTENSION pg_seqgen UPDATE in
-- every database that has the extension (on Citus: on the coordinator, which runs it on every
-- worker).

-- seqgen_next(biz_tag, key DEFAULT ''), seqgen_order_no(biz_tag, key DEFAULT '') and
-- seqgen_render(template, seq, at, time_zone DEFAULT 'UTC', biz_tag DEFAULT ''): one function
-- each, so that GRANT EXECUTE ON FUNCTION seqgen_next names it. The forms with the key (the
-- tag) keep their OIDs and take the DEFAULTs; 0.x's forms without it move into schema seqgen
-- with their OIDs and grants, so the column DEFAULTs, views and rules that stored them keep
-- calling them (PL/pgSQL and SQL bodies name them, and find the new ones). A role granted the
-- one-argument form gets the new one too (below): its calls by name reach it now.
ALTER FUNCTION @extschema@.seqgen_next(pg_catalog.text) SET SCHEMA seqgen;
ALTER FUNCTION @extschema@.seqgen_order_no(pg_catalog.text) SET SCHEMA seqgen;
ALTER FUNCTION @extschema@.seqgen_render(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz, pg_catalog.text) SET SCHEMA seqgen;
CREATE OR REPLACE FUNCTION @extschema@."seqgen_next"(
	"biz_tag" TEXT,
	"key" TEXT DEFAULT ''
) RETURNS bigint
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_next_key_wrapper';
CREATE OR REPLACE FUNCTION @extschema@."seqgen_order_no"(
	"biz_tag" TEXT,
	"key" TEXT DEFAULT ''
) RETURNS TEXT
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_order_no_key_wrapper';
CREATE OR REPLACE FUNCTION @extschema@."seqgen_render"(
	"template" TEXT,
	"seq" bigint,
	"at" timestamp with time zone,
	"time_zone" TEXT DEFAULT 'UTC',
	"biz_tag" TEXT DEFAULT ''
) RETURNS TEXT
STRICT STABLE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_render_with_tag_wrapper';
COMMENT ON FUNCTION seqgen.seqgen_next(pg_catalog.text) IS 'pg_seqgen 0.x''s seqgen_next(biz_tag), kept for the DEFAULTs and views made before 1.0: the same draw as seqgen_next(biz_tag)';
COMMENT ON FUNCTION seqgen.seqgen_order_no(pg_catalog.text) IS 'pg_seqgen 0.x''s seqgen_order_no(biz_tag), kept for the DEFAULTs and views made before 1.0: the same draw as seqgen_order_no(biz_tag)';
COMMENT ON FUNCTION seqgen.seqgen_render(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz, pg_catalog.text) IS 'pg_seqgen 0.x''s seqgen_render without a tag, kept for the views made before 1.0';

-- What Citus workers call on their coordinator: in schema seqgen (a 1.0 library asks there
-- first, then in the extension's schema, so workers and coordinator may update in any order).
ALTER FUNCTION @extschema@.seqgen_cluster_definitions(pg_catalog.text) SET SCHEMA seqgen;
ALTER FUNCTION @extschema@.seqgen_cluster_node_id(pg_catalog.int8) SET SCHEMA seqgen;

-- seqgen_adopt and seqgen_adopt_snowflake: a role granted them needs no grant on anything
-- internal (0.x's also called seqgen_adopt_floor and seqgen_adopt_default, which it had to be
-- granted, with their caller's rights). One internal function in schema seqgen does both; the
-- user-facing ones reach it through a BEGIN ATOMIC body, by OID, so their callers need no use
-- of schema seqgen. (The same text as sql/adopt.sql.)
CREATE FUNCTION seqgen.seqgen_adopt_column(
    kind pg_catalog.text, biz_tag pg_catalog.text, tbl pg_catalog.regclass, col pg_catalog.name, step pg_catalog.int4)
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
    current pg_catalog.int8;
    expr pg_catalog.text;
    ident pg_catalog."char";
    what pg_catalog.text := 'no sequence';
BEGIN
    IF NOT pg_catalog.has_function_privilege(CASE kind
            WHEN 'segment' THEN '@extschema@.seqgen_adopt(pg_catalog.text, pg_catalog.regclass, pg_catalog.name, pg_catalog.int4)'
            ELSE '@extschema@.seqgen_adopt_snowflake(pg_catalog.regclass, pg_catalog.name)' END, 'EXECUTE') THEN
        RAISE EXCEPTION 'permission denied for function %', CASE kind WHEN 'segment' THEN 'seqgen_adopt' ELSE 'seqgen_adopt_snowflake' END
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF tbl IS NULL OR col IS NULL OR (kind OPERATOR(pg_catalog.=) 'segment' AND (biz_tag IS NULL OR step IS NULL)) THEN
        RAISE EXCEPTION '% must not be NULL',
            CASE WHEN kind OPERATOR(pg_catalog.=) 'segment' AND biz_tag IS NULL THEN 'biz_tag'
                 WHEN tbl IS NULL THEN 'tbl' WHEN col IS NULL THEN 'col' ELSE 'step' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- the highest value the column holds or its sequences handed out
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
    -- except a DEFAULT that is seqgen_next(biz_tag) and nothing else, biz_tag being the
    -- tag created next (it does not exist: seqgen_create refuses one that does): its catalog
    -- row is gone (a switchover whose publication left it out, a restore without it), and the
    -- column holds what it gave (the table is locked: pg_get_expr waits for nothing)
    IF NOT COALESCE(used, false) AND EXISTS (SELECT 1 FROM pg_catalog.pg_attrdef ad
            WHERE ad.adrelid OPERATOR(pg_catalog.=) tbl AND ad.adnum OPERATOR(pg_catalog.=) a.attnum
              AND (biz_tag IS NULL
                   OR pg_catalog.pg_get_expr(ad.adbin, ad.adrelid) OPERATOR(pg_catalog.<>) ALL (ARRAY[
                      pg_catalog.format('%I.seqgen_next(%L::text)', '@extschema@', biz_tag),
                      -- (0.x's form, which the DEFAULTs made before 1.0 call)
                      pg_catalog.format('seqgen.seqgen_next(%L::text)', biz_tag)]))) THEN
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
    top := pg_catalog.int8larger(COALESCE(top, 0), 0);
    IF kind OPERATOR(pg_catalog.=) 'segment' THEN
        PERFORM @extschema@.seqgen_create(biz_tag, step, top OPERATOR(pg_catalog.+) 1);
        expr := pg_catalog.format('@extschema@.seqgen_next(%L::text)', biz_tag);
    ELSE
        current := @extschema@.seqgen_snowflake();
        IF top OPERATOR(pg_catalog.>=) current THEN
            RAISE EXCEPTION 'column "%" of table % holds % , at or above the current snowflake %', col, tbl, top, current
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Raise the generator first with seqgen_snowflake_advance(), or keep the column on its sequence.';
        END IF;
        expr := '@extschema@.seqgen_snowflake()';
    END IF;
    -- Identity columns cannot have a DEFAULT: drop the identity (and with it its sequence).
    -- A serial's sequence stays (owned by the column), unused.
    seq := pg_catalog.pg_get_serial_sequence(tbl::pg_catalog.text, col::pg_catalog.text);
    SELECT t.attidentity INTO ident FROM pg_catalog.pg_attribute t
     WHERE t.attrelid OPERATOR(pg_catalog.=) tbl AND t.attname OPERATOR(pg_catalog.=) col;
    IF ident OPERATOR(pg_catalog.<>) '' THEN
        EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', tbl, col);
        what := pg_catalog.format('identity dropped (with its sequence %s)', seq);
    ELSIF seq IS NOT NULL THEN
        what := pg_catalog.format('sequence %s left in place, unused: nothing may call nextval() on it any more', seq);
    END IF;
    EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s', tbl, col, expr);
    IF kind OPERATOR(pg_catalog.=) 'segment' THEN
        RAISE NOTICE 'column "%" of table % now draws from tag "%", starting at %; %',
            col, tbl, biz_tag, top OPERATOR(pg_catalog.+) 1, what;
        RETURN top OPERATOR(pg_catalog.+) 1;
    END IF;
    RAISE NOTICE 'column "%" of table % now draws snowflakes (above %); %', col, tbl, current, what;
    RETURN current;
END
$fn$;
-- unreachable by name (no role but the owner may use schema seqgen): executable by the roles
-- the user-facing functions are granted to, which it checks itself
GRANT EXECUTE ON FUNCTION seqgen.seqgen_adopt_column(pg_catalog.text, pg_catalog.text, pg_catalog.regclass, pg_catalog.name, pg_catalog.int4) TO PUBLIC;

CREATE OR REPLACE FUNCTION @extschema@.seqgen_adopt(
    biz_tag pg_catalog.text, tbl pg_catalog.regclass, col pg_catalog.name, step pg_catalog.int4 DEFAULT 1000
) RETURNS pg_catalog.int8
LANGUAGE sql
BEGIN ATOMIC
    SELECT seqgen.seqgen_adopt_column('segment', biz_tag, tbl, col, step);
END;

CREATE OR REPLACE FUNCTION @extschema@.seqgen_adopt_snowflake(tbl pg_catalog.regclass, col pg_catalog.name)
RETURNS pg_catalog.int8
LANGUAGE sql
BEGIN ATOMIC
    SELECT seqgen.seqgen_adopt_column('snowflake', NULL, tbl, col, NULL);
END;

DROP FUNCTION @extschema@.seqgen_adopt_floor(pg_catalog.regclass, pg_catalog.name, pg_catalog.text);
DROP FUNCTION @extschema@.seqgen_adopt_default(pg_catalog.regclass, pg_catalog.name, pg_catalog.text);
COMMENT ON FUNCTION seqgen.seqgen_adopt_column(pg_catalog.text, pg_catalog.text, pg_catalog.regclass, pg_catalog.name, pg_catalog.int4) IS 'pg_seqgen (internal, for seqgen_adopt and seqgen_adopt_snowflake): move a column to a tag or to snowflakes';

-- seqgen_gapless_attach: a role granted it needs no grant on the trigger function (0.x's,
-- with its caller's rights, needed EXECUTE on seqgen_gapless_assign, which it named in CREATE
-- TRIGGER), and its first parameter is tbl (it was "table", a reserved word; a new name needs a
-- new function: the old one's grants are carried over below, and it is dropped). The trigger
-- function moves into schema seqgen (the triggers name it by OID); seqgen_gapless_attach is a
-- BEGIN ATOMIC body that reaches what checks the call and what creates the trigger by OID.
-- (The same text as sql/gapless.sql.)
CREATE FUNCTION seqgen."seqgen_gapless_create_trigger"(
	"tbl" oid,
	"number_column" TEXT,
	"biz_tag" TEXT,
	"key_column" TEXT
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_gapless_create_trigger_wrapper';
GRANT EXECUTE ON FUNCTION seqgen.seqgen_gapless_create_trigger(pg_catalog.oid, pg_catalog.text, pg_catalog.text, pg_catalog.text) TO PUBLIC;
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
GRANT EXECUTE ON FUNCTION seqgen.gapless_attach_targets(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text) TO PUBLIC;
ALTER FUNCTION @extschema@.seqgen_gapless_assign() SET SCHEMA seqgen;
ALTER FUNCTION @extschema@.seqgen_gapless_attach(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text)
    RENAME TO seqgen_gapless_attach_0x;
CREATE FUNCTION @extschema@.seqgen_gapless_attach(
    tbl pg_catalog.regclass, number_column pg_catalog.text, biz_tag pg_catalog.text,
    key_column pg_catalog.text DEFAULT NULL)
RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT seqgen.seqgen_gapless_create_trigger(t, number_column, biz_tag, key_column)
      FROM seqgen.gapless_attach_targets(tbl, number_column, biz_tag, key_column) AS t;
END;
REVOKE ALL ON FUNCTION @extschema@.seqgen_gapless_attach(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text) FROM PUBLIC;
-- the event trigger that attaches new inheritance children finds the trigger function there
CREATE OR REPLACE FUNCTION seqgen.gapless_inherit() RETURNS event_trigger
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
COMMENT ON FUNCTION seqgen.seqgen_gapless_assign() IS 'pg_seqgen (internal): trigger that numbers a table attached with seqgen_gapless_attach';
COMMENT ON FUNCTION seqgen.gapless_attach_targets(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text) IS 'pg_seqgen (internal, for seqgen_gapless_attach): check a call, and give the table and its inheritance children to number';
COMMENT ON FUNCTION seqgen.seqgen_gapless_create_trigger(pg_catalog.oid, pg_catalog.text, pg_catalog.text, pg_catalog.text) IS 'pg_seqgen (internal, for seqgen_gapless_attach): the commit-time trigger on one table, for a role with TRIGGER on it';

-- seqgen_cluster_nodes() and seqgen_cluster_refused(): their first column is citus_nodeid (it
-- was nodeid, beside node_id in the first: two names a letter apart for two numbers). A new
-- row type needs a new function: the old ones' grants are carried over below, and they are
-- dropped.
-- (The same text as sql/citus.sql.)
ALTER FUNCTION @extschema@.seqgen_cluster_nodes() RENAME TO seqgen_cluster_nodes_0x;
ALTER FUNCTION @extschema@.seqgen_cluster_refused() RENAME TO seqgen_cluster_refused_0x;
CREATE FUNCTION @extschema@.seqgen_cluster_nodes(
    OUT citus_nodeid pg_catalog.int4, OUT reachable pg_catalog.bool, OUT node_id pg_catalog.int4,
    OUT source pg_catalog.text, OUT definitions_read pg_catalog.timestamptz,
    OUT definitions_changed pg_catalog.timestamptz, OUT detail pg_catalog.text)
RETURNS SETOF record
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
    j pg_catalog.jsonb;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus') THEN
        RAISE EXCEPTION 'seqgen_cluster_nodes() needs Citus in this database'
            USING ERRCODE = 'feature_not_supported', HINT = 'On a single server: SELECT * FROM seqgen_node();';
    END IF;
    FOR r IN EXECUTE 'SELECT nodeid, success, result FROM pg_catalog.run_command_on_all_nodes($1)'
        USING pg_catalog.format('SELECT pg_catalog.row_to_json(n) FROM %I.seqgen_node() n', '@extschema@')
    LOOP
        citus_nodeid := r.nodeid;
        reachable := r.success;
        IF r.success THEN
            j := r.result::pg_catalog.jsonb;
            node_id := (j OPERATOR(pg_catalog.->>) 'node_id')::pg_catalog.int4;
            source := j OPERATOR(pg_catalog.->>) 'source';
            definitions_read := (j OPERATOR(pg_catalog.->>) 'definitions_read')::pg_catalog.timestamptz;
            definitions_changed := (j OPERATOR(pg_catalog.->>) 'definitions_changed')::pg_catalog.timestamptz;
            detail := NULL;
        ELSE
            node_id := NULL; source := NULL; definitions_read := NULL; definitions_changed := NULL;
            detail := r.result;
        END IF;
        RETURN NEXT;
    END LOOP;
END;
$$;
CREATE FUNCTION @extschema@.seqgen_cluster_refused(
    OUT citus_nodeid pg_catalog.int4, OUT biz_tag pg_catalog.text, OUT field pg_catalog.text,
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
REVOKE ALL ON FUNCTION @extschema@.seqgen_cluster_nodes() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_cluster_refused() FROM PUBLIC;

-- The grants of every function this update replaced go to its successor: the one-argument
-- draws' (which stay, in schema seqgen) to the draws with a key, and those of the functions
-- renamed away above (which go) to their new forms. (PostgreSQL records each copy as granted
-- by the function's owner, as the update from 0.5.0 did.)
DO $$
DECLARE
    f record;
    g record;
BEGIN
    FOR f IN SELECT * FROM (VALUES
        ('seqgen.seqgen_next(pg_catalog.text)'::pg_catalog.regprocedure,
         '@extschema@.seqgen_next(pg_catalog.text, pg_catalog.text)'::pg_catalog.regprocedure),
        ('seqgen.seqgen_order_no(pg_catalog.text)'::pg_catalog.regprocedure,
         '@extschema@.seqgen_order_no(pg_catalog.text, pg_catalog.text)'::pg_catalog.regprocedure),
        ('@extschema@.seqgen_gapless_attach_0x(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text)'::pg_catalog.regprocedure,
         '@extschema@.seqgen_gapless_attach(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text)'::pg_catalog.regprocedure),
        ('@extschema@.seqgen_cluster_nodes_0x()'::pg_catalog.regprocedure,
         '@extschema@.seqgen_cluster_nodes()'::pg_catalog.regprocedure),
        ('@extschema@.seqgen_cluster_refused_0x()'::pg_catalog.regprocedure,
         '@extschema@.seqgen_cluster_refused()'::pg_catalog.regprocedure)) AS v(old, new)
    LOOP
        FOR g IN SELECT a.grantee, a.is_grantable
                   FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
                  WHERE p.oid OPERATOR(pg_catalog.=) f.old AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
                    AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
        LOOP
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s',
                f.new::pg_catalog.regprocedure,
                CASE WHEN g.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' ELSE g.grantee::pg_catalog.regrole::pg_catalog.text END,
                CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
    END LOOP;
END
$$;
DROP FUNCTION @extschema@.seqgen_gapless_attach_0x(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text);
DROP FUNCTION @extschema@.seqgen_cluster_nodes_0x();
DROP FUNCTION @extschema@.seqgen_cluster_refused_0x();

-- Every GRANT and REVOKE an extension script runs records the object's whole ACL as the
-- extension's initial privileges (pg_init_privs), and pg_dump writes only what differs from
-- those: the grants to your roles that this update copied to the new functions (and the update
-- from 0.5.0 to its new signatures) were left out of dumps, and lost by a restore. A fresh install records
-- grants to no role but the owner, PUBLIC and pg_monitor: the same is kept here, so pg_dump
-- writes the rest as your grants.
UPDATE pg_catalog.pg_init_privs i
   SET initprivs = ARRAY(
         SELECT a FROM pg_catalog.unnest(i.initprivs) a
          WHERE (SELECT pg_catalog.bool_and(x.grantee OPERATOR(pg_catalog.=) ANY (ARRAY[
                        0::pg_catalog.oid, p.proowner, 'pg_monitor'::pg_catalog.regrole::pg_catalog.oid]))
                   FROM pg_catalog.aclexplode(ARRAY[a]) x))
  FROM pg_catalog.pg_proc p, pg_catalog.pg_depend d
 WHERE i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
   AND i.objsubid OPERATOR(pg_catalog.=) 0
   AND i.objoid OPERATOR(pg_catalog.=) p.oid
   AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
   AND d.objid OPERATOR(pg_catalog.=) p.oid AND d.deptype OPERATOR(pg_catalog.=) 'e'
   AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
   AND d.refobjid OPERATOR(pg_catalog.=) (SELECT e.oid FROM pg_catalog.pg_extension e
                                          WHERE e.extname OPERATOR(pg_catalog.=) 'pg_seqgen');

-- What each function is: its COMMENT, generated from docs/reference (tests/integration/tests/docs.rs;
-- SEQGEN_BLESS=1 writes it): edit the pages, not these lines.
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

-- Keyed counters: no key without a row in seqgen.key_counter has given out a value above
-- key_floor (NULL: none has given any out). The allocator raises it before it makes new keys
-- whose rows it commits without waiting for the flush, and lowers it again once they are on
-- disk; a key made after a crash in between starts above it.
ALTER TABLE seqgen.alloc ADD COLUMN key_floor pg_catalog.int8;
