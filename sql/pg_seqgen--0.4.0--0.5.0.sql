-- pg_seqgen 0.4.0 -> 0.5.0: Citus (node ids from Citus's metadata, tags defined on the
-- coordinator and copied to every worker).
-- Everything here is schema-qualified; see "Security Considerations for Extension Scripts".
-- Install the 0.5.0 library, restart the server, then run ALTER EXTENSION pg_seqgen UPDATE in
-- every database that has the extension (on Citus: on the coordinator, which runs it on every
-- worker).

CREATE FUNCTION @extschema@.seqgen_cluster_definitions("known" TEXT) RETURNS jsonb
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_cluster_definitions_wrapper';
CREATE FUNCTION @extschema@.seqgen_node() RETURNS TABLE (
	"node_id" INT,
	"source" TEXT,
	"citus_group" INT,
	"definitions_read" timestamp with time zone,
	"definitions_changed" timestamp with time zone
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_node_wrapper';
REVOKE ALL ON FUNCTION @extschema@.seqgen_cluster_definitions(pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.seqgen_node() FROM PUBLIC;

-- Citus: every node draws from its own copy of the coordinator's tags (see
-- docs/architecture.md, "Citus"). A Citus worker's allocator reads the definitions from the
-- coordinator (seqgen_cluster_definitions) when their version there has changed; the
-- version is this row, bumped in the transaction of every change of a tag's definition
-- (not of its counters: the allocator's reservations do not touch it), in databases with
-- Citus only (the row lock orders concurrent changes; elsewhere nothing reads it).
CREATE TABLE seqgen.definitions (
    version pg_catalog.int8 NOT NULL
);
INSERT INTO seqgen.definitions (version) VALUES (1);
COMMENT ON TABLE seqgen.definitions IS 'pg_seqgen: version of the tag definitions (read by Citus workers)';
REVOKE ALL ON TABLE seqgen.definitions FROM PUBLIC;

CREATE FUNCTION seqgen.definitions_changed() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus') THEN
        UPDATE seqgen.definitions SET version = version OPERATOR(pg_catalog.+) 1;
    END IF;
    RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION seqgen.definitions_changed() FROM PUBLIC;

CREATE TRIGGER alloc_definitions
    AFTER INSERT OR DELETE OR UPDATE OF step, description, node_bits, opaque_from, owner, public_draw, drawers
    ON seqgen.alloc FOR EACH STATEMENT EXECUTE FUNCTION seqgen.definitions_changed();
CREATE TRIGGER template_definitions
    AFTER INSERT OR DELETE OR UPDATE ON seqgen.template
    FOR EACH STATEMENT EXECUTE FUNCTION seqgen.definitions_changed();

-- On a Citus coordinator: every node's identity and its copy of the definitions.
CREATE FUNCTION @extschema@.seqgen_cluster_nodes(
    OUT nodeid pg_catalog.int4, OUT reachable pg_catalog.bool, OUT node_id pg_catalog.int4,
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
        nodeid := r.nodeid;
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
REVOKE ALL ON FUNCTION @extschema@.seqgen_cluster_nodes() FROM PUBLIC;
