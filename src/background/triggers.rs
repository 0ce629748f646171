//! Triggers on the catalog that keep shared memory in step with it. All are `ENABLE ALWAYS`
//! (see `sql/triggers.sql`), so they also fire under `session_replication_role = replica` and
//! in logical replication's apply worker.

use std::sync::atomic::Ordering;

use pgrx::prelude::*;

use crate::generators::snowflake::{self, Kind};
use crate::plumbing::pending::{at_commit, Action};
use crate::plumbing::shmem;

/// AFTER DELETE trigger on the catalog: when the deletion commits (or is prepared), retire
/// the tag's slot so no cached segment of the deleted tag is handed out afterwards.
#[pg_trigger]
fn seqgen_alloc_deleted<'a>(
    trigger: &'a PgTrigger<'a>,
) -> std::result::Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, PgHeapTupleError> {
    if let Some(old) = trigger.old() {
        if let Ok(Some(tag)) = old.get_by_name::<String>("biz_tag") {
            at_commit(Action::Retire(tag));
        }
    }
    Ok(None)
}

/// AFTER UPDATE OF owner, public_draw, drawers on the catalog: when the change commits (or
/// is prepared), every backend checks its cached answer to "may I draw from this tag" again.
#[pg_trigger]
fn seqgen_alloc_acl_changed<'a>(
    _trigger: &'a PgTrigger<'a>,
) -> std::result::Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, PgHeapTupleError> {
    crate::plumbing::memberships::changed_here();
    at_commit(Action::AclChanged);
    Ok(None)
}

/// AFTER INSERT, DELETE, or UPDATE OF template, time_zone on `seqgen.template`: when the change
/// commits, the tag's slot is retired, so counter blocks reserved for the old template (whose
/// period unit may differ) are never rendered with the new one; the next call reloads the tag
/// and its template.
#[pg_trigger]
fn seqgen_template_changed<'a>(
    trigger: &'a PgTrigger<'a>,
) -> std::result::Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, PgHeapTupleError> {
    let row = trigger.new().or_else(|| trigger.old());
    if let Some(row) = row {
        if let Ok(Some(tag)) = row.get_by_name::<String>("biz_tag") {
            at_commit(Action::Retire(tag));
        }
    }
    Ok(None)
}

/// AFTER INSERT OR UPDATE on a reservation table (`seqgen.snowflake`, `seqgen.uuidv7`,
/// `seqgen.snowflake53`; the
/// trigger's argument names which): a reservation written by anyone but this database's
/// allocator (`pg_restore` of a dump, an administrator raising it after a failover) raises
/// the server's generator above it just before the writing transaction commits (or is
/// prepared), so no ID drawn after the commit is below it, whether or not the allocator has
/// looked yet. A write that is rolled back raises nothing.
#[pg_trigger]
fn seqgen_reservation_written<'a>(
    trigger: &'a PgTrigger<'a>,
) -> std::result::Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, PgHeapTupleError> {
    let kind = match trigger.extra_args().ok().as_deref() {
        Some([k]) if k == "snowflake" => Kind::Snowflake,
        Some([k]) if k == "uuidv7" => Kind::Uuid,
        Some([k]) if k == "snowflake53" => Kind::Snowflake53,
        _ => return Ok(None),
    };
    let Some(row) = trigger.new() else { return Ok(None) };
    let Ok(Some(id)) = row.get_by_name::<i64>("reserved_id") else { return Ok(None) };
    // an UPDATE that does not raise the value changes nothing
    if trigger.old().is_some_and(|old| matches!(old.get_by_name::<i64>("reserved_id"), Ok(Some(o)) if o >= id)) {
        return Ok(None);
    }
    // the allocator's own writes are reservations it publishes after its commit
    let me = unsafe { pg_sys::MyProcPid };
    if shmem::header().is_some_and(|h| h.worker_pid.load(Ordering::Acquire) == me) {
        return Ok(None);
    }
    at_commit(Action::BeforeCommit(Box::new(move || snowflake::raise_server(kind, id - 1))));
    Ok(None)
}
