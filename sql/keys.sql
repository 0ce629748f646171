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
