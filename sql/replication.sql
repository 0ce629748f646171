-- Logical replication of the catalog (a blue/green switchover; README "Major upgrades").
-- The tables a publication must carry for the new side to draw on above the old side: the
-- tags (with their owners and grants), templates and their history, order-number counters,
-- opaque keys, keyed (segment and order-number) and gapless counters, and the snowflake, UUIDv7 and 53-bit snowflake
-- reservations.
CREATE FUNCTION @extschema@.seqgen_replication_tables() RETURNS SETOF pg_catalog.regclass
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t::pg_catalog.regclass FROM (VALUES ('seqgen.alloc'), ('seqgen.template'), ('seqgen.template_history'),
        ('seqgen.order_counter'), ('seqgen.opaque_key'), ('seqgen.snowflake'), ('seqgen.uuidv7'),
        ('seqgen.snowflake53'), ('seqgen.key_counter'), ('seqgen.key_order_counter'), ('seqgen.gapless_counter')) AS v(t)
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
