//! Triggers on the catalog that keep shared memory in step with it. Both are `ENABLE ALWAYS`
//! (see `sql/triggers.sql`), so they also fire under `session_replication_role = replica` and
//! in logical replication's apply worker.

use pgrx::prelude::*;

use crate::pending::{at_commit, Action};

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
