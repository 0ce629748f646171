//! Triggers on the catalog that keep shared memory in step with it.

use pgrx::prelude::*;

/// AFTER DELETE trigger on the catalog: when the deletion commits, retire the tag's slot so
/// no cached segment of the deleted tag is handed out afterwards.
#[pg_trigger]
fn seqgen_alloc_deleted<'a>(
    trigger: &'a PgTrigger<'a>,
) -> std::result::Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, PgHeapTupleError> {
    if let Some(old) = trigger.old() {
        if let Ok(Some(tag)) = old.get_by_name::<String>("biz_tag") {
            pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, move || {
                crate::directory::retire(tag.as_bytes());
            });
        }
    }
    Ok(None)
}

/// AFTER INSERT, DELETE, or UPDATE OF template, time_zone on `seqgen.template`: when the change
/// commits, the tag's template is read again on its next use.
#[pg_trigger]
fn seqgen_template_changed<'a>(
    trigger: &'a PgTrigger<'a>,
) -> std::result::Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, PgHeapTupleError> {
    let row = trigger.new().or_else(|| trigger.old());
    if let Some(row) = row {
        if let Ok(Some(tag)) = row.get_by_name::<String>("biz_tag") {
            pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, move || {
                crate::directory::template_changed(tag.as_bytes());
            });
        }
    }
    Ok(None)
}
