-- pg_seqgen 0.2.0 -> 0.3.0: every database with the extension has its own allocator.
-- Everything here is schema-qualified; see "Security Considerations for Extension Scripts".
-- Install the 0.3.0 library, restart the server, then run ALTER EXTENSION pg_seqgen UPDATE in
-- every database that has the extension (until then the 0.3.0 allocator of that database
-- answers calls with SQLSTATE 55000 and a hint to update).
-- seqgen.database_name is no longer used: a configuration file that sets it still loads, and
-- its value is ignored.

-- One row per database with an allocator.
CREATE FUNCTION @extschema@.seqgen_allocators() RETURNS TABLE (
	"database" TEXT,
	"running" bool,
	"pid" INT,
	"started" timestamp with time zone,
	"last_cycle" timestamp with time zone,
	"tags" INT,
	"mailboxes_in_use" INT,
	"jobs_pending" INT,
	"errors" bigint,
	"last_error" TEXT,
	"last_error_time" timestamp with time zone,
	"clocks_open" bool
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_allocators_wrapper';

REVOKE ALL ON FUNCTION @extschema@.seqgen_allocators() FROM PUBLIC;

-- A reservation written by anyone but the allocator counts at once (0.2.0: within a second).
CREATE FUNCTION @extschema@.seqgen_reservation_written() RETURNS trigger
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_reservation_written_wrapper';
REVOKE ALL ON FUNCTION @extschema@.seqgen_reservation_written() FROM PUBLIC;

-- A reservation written by anyone but the allocator (pg_restore, an administrator after a
-- failover) raises the server's generator above it at once, in the writing statement.
CREATE TRIGGER snowflake_written AFTER INSERT OR UPDATE ON seqgen.snowflake
    FOR EACH ROW EXECUTE FUNCTION @extschema@.seqgen_reservation_written('snowflake');
CREATE TRIGGER uuidv7_written AFTER INSERT OR UPDATE ON seqgen.uuidv7
    FOR EACH ROW EXECUTE FUNCTION @extschema@.seqgen_reservation_written('uuidv7');
ALTER TABLE seqgen.snowflake ENABLE ALWAYS TRIGGER snowflake_written;
ALTER TABLE seqgen.uuidv7 ENABLE ALWAYS TRIGGER uuidv7_written;
