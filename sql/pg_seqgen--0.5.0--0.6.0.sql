-- pg_seqgen 0.5.0 -> 0.6.0: opaque tags on Citus (node-interleaved tags may be opaque there;
-- every node permutes with the coordinator's key).
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
