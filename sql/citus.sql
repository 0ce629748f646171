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

-- On a Citus coordinator: every node's identity and its copy of the definitions (citus_nodeid:
-- Citus's nodeid of pg_dist_node; node_id: the node id pg_seqgen numbers with).
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
REVOKE ALL ON FUNCTION @extschema@.seqgen_cluster_nodes() FROM PUBLIC;

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

-- On a Citus coordinator: every node's refused changes.
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
REVOKE ALL ON FUNCTION @extschema@.seqgen_cluster_refused() FROM PUBLIC;
