-- pg_seqgen catalog: one row per business tag (Leaf's leaf_alloc).
-- Everything here is schema-qualified; see "Security Considerations for Extension Scripts".

CREATE SCHEMA seqgen;
COMMENT ON SCHEMA seqgen IS 'pg_seqgen catalog (owned by the extension)';

-- Every tag row gets its own number: a tag dropped and created again under the same name is
-- another row, so nothing cached for the old one is ever served for the new one.
CREATE SEQUENCE seqgen.tag_id_seq;
SELECT pg_catalog.pg_extension_config_dump('seqgen.tag_id_seq', '');

CREATE TABLE seqgen.alloc (
    biz_tag     pg_catalog.text PRIMARY KEY
                CHECK (pg_catalog.octet_length(biz_tag) OPERATOR(pg_catalog.>=) 1
                   AND pg_catalog.octet_length(biz_tag) OPERATOR(pg_catalog.<=) 63),
    max_id      pg_catalog.int8 NOT NULL,
    step        pg_catalog.int4 NOT NULL CHECK (step OPERATOR(pg_catalog.>) 0),
    description pg_catalog.text,
    update_time pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    -- NULL: IDs are the counter values. Set once (seqgen_make_opaque) to the max_id of that
    -- moment: every later ID is a keyed permutation of its counter value into
    -- (opaque_from, 2^63 - 1], above everything issued in the clear.
    opaque_from pg_catalog.int8,
    -- Several independent servers sharing this tag: IDs are counter << node_bits | node_id
    -- (seqgen.node_id of the server, the group id on Citus). Set once. With opaque IDs (on
    -- Citus only) the counter is permuted first, within (opaque_from, 2^63 - 1 >> node_bits].
    node_bits   pg_catalog.int4 NOT NULL DEFAULT 0
                CHECK (node_bits OPERATOR(pg_catalog.>=) 0 AND node_bits OPERATOR(pg_catalog.<=) 16),
    -- The row's identity (with the table's OID): checked by the worker at load, prefetch and
    -- publish. Never changes.
    tag_id      pg_catalog.int8 NOT NULL DEFAULT pg_catalog.nextval('seqgen.tag_id_seq'::pg_catalog.regclass),
    -- Who may draw (like USAGE on a sequence): the owner (the creator), its members and
    -- superusers; roles granted with seqgen_grant (drawers; public_draw: everyone). Only the
    -- owner changes the tag.
    owner       pg_catalog.regrole NOT NULL
                DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(CURRENT_USER::pg_catalog.text)),
    public_draw pg_catalog.bool NOT NULL DEFAULT false,
    drawers     pg_catalog.regrole[] NOT NULL DEFAULT '{}'::pg_catalog.regrole[],
    -- The last seqgen_restart: max_id before it and the max_id it set (seqgen_restart_undo
    -- takes it back while max_id is still restarted_to, i.e. nothing was reserved since).
    restarted_from pg_catalog.int8,
    restarted_to   pg_catalog.int8,
    -- A gapless tag (seqgen_create_gapless): its numbers are counted per key in
    -- seqgen.gapless_counter, in the drawing transaction; the segment generators refuse it.
    -- Set at creation, never changed.
    gapless     pg_catalog.bool NOT NULL DEFAULT false,
    -- Where each keyed counter of the tag starts (seqgen_next(biz_tag, key)): the start_with
    -- of seqgen_create (1 for tags made before 0.6.0).
    start_with  pg_catalog.int8 NOT NULL DEFAULT 1 CHECK (start_with OPERATOR(pg_catalog.>=) 1),
    -- Of keyed counters: no key without a row in seqgen.key_counter has given out a value above
    -- it (NULL: none has given any out). The allocator raises it before it makes new keys
    -- whose rows it commits without waiting for the flush, and lowers it again once they are
    -- on disk; a key made after a crash in between starts above it.
    key_floor   pg_catalog.int8
);
COMMENT ON TABLE seqgen.alloc IS
    'pg_seqgen tags: max_id is the highest value ever reserved; it never decreases';

-- pg_dump keeps the rows, so a restored database continues above every issued ID.
SELECT pg_catalog.pg_extension_config_dump('seqgen.alloc', '');

-- No edit may make the generator reissue an ID: max_id never decreases, tags are not renamed.
CREATE FUNCTION seqgen.alloc_guard() RETURNS trigger
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

CREATE TRIGGER alloc_guard BEFORE UPDATE ON seqgen.alloc
    FOR EACH ROW EXECUTE FUNCTION seqgen.alloc_guard();

CREATE FUNCTION seqgen.alloc_no_truncate() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'TRUNCATE of the pg_seqgen catalog (%) is not allowed', TG_TABLE_NAME
        USING ERRCODE = 'feature_not_supported',
              HINT = 'Drop tags one by one with seqgen_drop().';
END
$$;

CREATE TRIGGER alloc_no_truncate BEFORE TRUNCATE ON seqgen.alloc
    FOR EACH STATEMENT EXECUTE FUNCTION seqgen.alloc_no_truncate();

-- Snowflake: the persisted reservation, as an ID value. Every snowflake ID this server issued
-- is below reserved_id; after a restart (or a restore) IDs resume above it. The worker
-- upserts the single row; it is dumped with the database.
CREATE TABLE seqgen.snowflake (
    singleton   pg_catalog.bool PRIMARY KEY DEFAULT true CHECK (singleton),
    reserved_id pg_catalog.int8 NOT NULL CHECK (reserved_id OPERATOR(pg_catalog.>=) 0)
);
COMMENT ON TABLE seqgen.snowflake IS
    'pg_seqgen snowflake reservation: every issued snowflake ID is below reserved_id; it never decreases';
SELECT pg_catalog.pg_extension_config_dump('seqgen.snowflake', '');

CREATE FUNCTION seqgen.snowflake_guard() RETURNS trigger
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

CREATE TRIGGER snowflake_guard BEFORE UPDATE OR DELETE ON seqgen.snowflake
    FOR EACH ROW EXECUTE FUNCTION seqgen.snowflake_guard();
CREATE TRIGGER snowflake_no_truncate BEFORE TRUNCATE ON seqgen.snowflake
    FOR EACH STATEMENT EXECUTE FUNCTION seqgen.alloc_no_truncate();

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

CREATE TRIGGER uuidv7_guard BEFORE UPDATE OR DELETE ON seqgen.uuidv7
    FOR EACH ROW EXECUTE FUNCTION seqgen.uuidv7_guard();
CREATE TRIGGER uuidv7_no_truncate BEFORE TRUNCATE ON seqgen.uuidv7
    FOR EACH STATEMENT EXECUTE FUNCTION seqgen.alloc_no_truncate();
ALTER TABLE seqgen.uuidv7 ENABLE ALWAYS TRIGGER uuidv7_guard;
ALTER TABLE seqgen.uuidv7 ENABLE ALWAYS TRIGGER uuidv7_no_truncate;
REVOKE ALL ON TABLE seqgen.uuidv7 FROM PUBLIC;

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

-- Order numbers: one row per tag with a template. Its counters are in seqgen.order_counter.
CREATE TABLE seqgen.template (
    biz_tag     pg_catalog.text PRIMARY KEY REFERENCES seqgen.alloc (biz_tag) ON DELETE CASCADE,
    template    pg_catalog.text NOT NULL,
    time_zone   pg_catalog.text NOT NULL,
    update_time pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE seqgen.template IS 'pg_seqgen order-number templates';
SELECT pg_catalog.pg_extension_config_dump('seqgen.template', '');

-- Order-number counters, one row per tag and period unit (year, month, day, hour, minute,
-- second, or none for a template without date fields). period_key is the latest period of
-- that unit a block was reserved for (its local start, in seconds since 1970-01-01 in the
-- template's time zone) and period_max the highest counter value reserved in it. Within a
-- unit the period never moves backwards, so a template that changes unit and back (monthly,
-- daily, monthly) continues each period above its highest number; the table does not grow.
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

-- Every template a tag has used: a new template may not render a number one of them
-- rendered (seqgen_set_template checks it). last_key: the latest period (key, as in
-- order_counter) the template issued numbers in, set when it was replaced; NULL while in use.
CREATE TABLE seqgen.template_history (
    biz_tag     pg_catalog.text NOT NULL REFERENCES seqgen.alloc (biz_tag) ON DELETE CASCADE,
    template    pg_catalog.text NOT NULL,
    last_key    pg_catalog.int8,
    PRIMARY KEY (biz_tag, template)
);
COMMENT ON TABLE seqgen.template_history IS
    'pg_seqgen: every template a tag has used, and the last period it issued numbers in';
SELECT pg_catalog.pg_extension_config_dump('seqgen.template_history', '');

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

CREATE FUNCTION seqgen.template_guard() RETURNS trigger
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

CREATE TRIGGER template_guard BEFORE UPDATE OR DELETE ON seqgen.template
    FOR EACH ROW EXECUTE FUNCTION seqgen.template_guard();
CREATE TRIGGER template_no_truncate BEFORE TRUNCATE ON seqgen.template
    FOR EACH STATEMENT EXECUTE FUNCTION seqgen.alloc_no_truncate();

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

CREATE TRIGGER order_counter_guard BEFORE UPDATE OR DELETE ON seqgen.order_counter
    FOR EACH ROW EXECUTE FUNCTION seqgen.order_counter_guard();
CREATE TRIGGER order_counter_no_truncate BEFORE TRUNCATE ON seqgen.order_counter
    FOR EACH STATEMENT EXECUTE FUNCTION seqgen.alloc_no_truncate();

-- Opaque numbers: the 256-bit key of a tag (for opaque IDs and {seq:N:opaque}). Readable
-- only by the extension's owner and roles it grants; dumped with the database so a restore
-- keeps issuing the same permutation above the restored counters.
CREATE TABLE seqgen.opaque_key (
    biz_tag pg_catalog.text PRIMARY KEY REFERENCES seqgen.alloc (biz_tag) ON DELETE CASCADE,
    key     pg_catalog.bytea NOT NULL CHECK (pg_catalog.octet_length(key) OPERATOR(pg_catalog.=) 32),
    -- the permutation is part of the stored format: a later version that changes it must
    -- keep serving existing keys with the algorithm they were created for
    algorithm pg_catalog.text NOT NULL DEFAULT 'feistel-siphash13-v1'
              CHECK (algorithm OPERATOR(pg_catalog.=) 'feistel-siphash13-v1'),
    created pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE seqgen.opaque_key IS 'pg_seqgen opaque-number keys; never changed (rotation could repeat numbers)';
SELECT pg_catalog.pg_extension_config_dump('seqgen.opaque_key', '');

CREATE FUNCTION seqgen.opaque_key_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
        -- allowed only with the tag itself (ON DELETE CASCADE)
        IF EXISTS (SELECT FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) OLD.biz_tag) THEN
            RAISE EXCEPTION 'the key of tag "%" cannot be deleted while the tag exists', OLD.biz_tag
                USING ERRCODE = 'feature_not_supported';
        END IF;
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the key of tag "%" cannot be changed', OLD.biz_tag
        USING ERRCODE = 'feature_not_supported',
              HINT = 'A new key would permute future counter values onto numbers already issued.';
END
$$;

CREATE TRIGGER opaque_key_guard BEFORE UPDATE OR DELETE ON seqgen.opaque_key
    FOR EACH ROW EXECUTE FUNCTION seqgen.opaque_key_guard();
CREATE TRIGGER opaque_key_no_truncate BEFORE TRUNCATE ON seqgen.opaque_key
    FOR EACH STATEMENT EXECUTE FUNCTION seqgen.alloc_no_truncate();

-- The guards fire under session_replication_role = replica too (an edit by hand, or logical
-- replication's apply worker, may not bypass them).
ALTER TABLE seqgen.alloc ENABLE ALWAYS TRIGGER alloc_guard;
ALTER TABLE seqgen.alloc ENABLE ALWAYS TRIGGER alloc_no_truncate;
ALTER TABLE seqgen.snowflake ENABLE ALWAYS TRIGGER snowflake_guard;
ALTER TABLE seqgen.snowflake ENABLE ALWAYS TRIGGER snowflake_no_truncate;
ALTER TABLE seqgen.template ENABLE ALWAYS TRIGGER template_guard;
ALTER TABLE seqgen.template ENABLE ALWAYS TRIGGER template_no_truncate;
ALTER TABLE seqgen.order_counter ENABLE ALWAYS TRIGGER order_counter_guard;
ALTER TABLE seqgen.order_counter ENABLE ALWAYS TRIGGER order_counter_no_truncate;
ALTER TABLE seqgen.opaque_key ENABLE ALWAYS TRIGGER opaque_key_guard;
ALTER TABLE seqgen.opaque_key ENABLE ALWAYS TRIGGER opaque_key_no_truncate;
ALTER TABLE seqgen.template_history ENABLE ALWAYS TRIGGER template_history_guard;
ALTER TABLE seqgen.template_history ENABLE ALWAYS TRIGGER template_history_no_truncate;

REVOKE ALL ON SCHEMA seqgen FROM PUBLIC;
REVOKE ALL ON SEQUENCE seqgen.tag_id_seq FROM PUBLIC;
REVOKE ALL ON TABLE seqgen.order_counter FROM PUBLIC;
REVOKE ALL ON TABLE seqgen.alloc FROM PUBLIC;
REVOKE ALL ON TABLE seqgen.snowflake FROM PUBLIC;
REVOKE ALL ON TABLE seqgen.template FROM PUBLIC;
REVOKE ALL ON TABLE seqgen.opaque_key FROM PUBLIC;
REVOKE ALL ON TABLE seqgen.template_history FROM PUBLIC;
