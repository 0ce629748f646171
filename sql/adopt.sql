-- Moving an existing column over to pg_seqgen: seqgen_adopt (segment IDs) and
-- seqgen_adopt_snowflake. Both lock the table (ACCESS EXCLUSIVE, until the caller commits),
-- start above every value the column holds and every value its sequence (serial or identity)
-- has handed out, and set the column's DEFAULT. Identifiers are quoted with format(%I / %s of
-- regclass); values are passed as values.

-- One internal function does both (kind 'segment' or 'snowflake'), with the caller's rights: it
-- is in schema seqgen, which no role but the owner can name, and the user-facing functions below
-- reach it through a BEGIN ATOMIC body, which names it once (by OID) when the extension is
-- created. So a role granted seqgen_adopt needs no use of schema seqgen, and no grant on an
-- internal function; this one refuses a caller not allowed the user-facing function anyway.
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

CREATE FUNCTION @extschema@.seqgen_adopt(
    biz_tag pg_catalog.text, tbl pg_catalog.regclass, col pg_catalog.name, step pg_catalog.int4 DEFAULT 1000
) RETURNS pg_catalog.int8
LANGUAGE sql
BEGIN ATOMIC
    SELECT seqgen.seqgen_adopt_column('segment', biz_tag, tbl, col, step);
END;

CREATE FUNCTION @extschema@.seqgen_adopt_snowflake(tbl pg_catalog.regclass, col pg_catalog.name)
RETURNS pg_catalog.int8
LANGUAGE sql
BEGIN ATOMIC
    SELECT seqgen.seqgen_adopt_column('snowflake', NULL, tbl, col, NULL);
END;

REVOKE ALL ON FUNCTION @extschema@.seqgen_adopt(pg_catalog.text, pg_catalog.regclass, pg_catalog.name, pg_catalog.int4) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_adopt_snowflake(pg_catalog.regclass, pg_catalog.name) FROM PUBLIC;
