//! Tags: `seqgen_create`, `seqgen_drop`, `seqgen_alter`, `seqgen_restart` (and its undo),
//! `seqgen_set_node_bits`, `seqgen_grant`, `seqgen_revoke` (`seqgen_status` is in `listing.rs`).
//!
//! Every change of an existing tag is its owner's (or a superuser's; see `acl.rs`), waits for
//! a locked row no longer than `seqgen.allocation_timeout`, and runs its catalog statements
//! with the extension's privileges: the caller needs EXECUTE on the function and ownership of
//! the tag, no privilege on the schema `seqgen`. All of them are transactional: the allocator
//! sees the change when it commits.

use pgrx::prelude::*;
use seqgen_core::adaptive::MAX_NODE_BITS;

use crate::plumbing::acl::require_owner;
use crate::plumbing::catalog::first_row;
use crate::plumbing::defaults;
use crate::plumbing::directory::admin_checks;
use crate::plumbing::error::{check_tag, required, OrRaise, Result, SeqgenError};
use crate::plumbing::node;
use crate::plumbing::pending::{at_commit, Action};
use crate::plumbing::session::{as_superuser, bounded_lock_wait, with_settings};

/// Run `f`, a change of the existing tag `tag`: the name is valid, this database is served,
/// the caller owns the tag; `f` runs with the extension's privileges and bounded lock waits.
pub fn change_tag<R>(tag: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
    check_tag(tag)?;
    admin_checks()?;
    require_owner(tag)?;
    bounded_lock_wait(|| as_superuser(f))
}

fn spi_err(e: pgrx::spi::Error) -> SeqgenError {
    SeqgenError::Internal(e.to_string())
}

/// Run a data-modifying statement; did it return a row?
fn returns_row(sql: &str, args: &[pgrx::datum::DatumWithOid<'_>]) -> Result<bool> {
    Spi::connect_mut(|c| c.update(sql, None, args).map(|t| !t.is_empty())).map_err(spi_err)
}

fn run(sql: &str, args: &[pgrx::datum::DatumWithOid<'_>]) -> Result<()> {
    Spi::run_with_args(sql, args).map_err(spi_err)
}

/// Create a tag (a catalog row), owned by the calling role. Transactional: the tag exists for
/// the worker once the calling transaction commits.
#[pg_extern(volatile, parallel_unsafe, name = "seqgen_create")]
fn seqgen_create_if_not_exists(
    biz_tag: Option<&str>,
    step: default!(Option<i32>, 1000),
    start_with: default!(Option<i64>, 1),
    description: default!(Option<&str>, "NULL"),
    if_not_exists: default!(Option<bool>, false),
) {
    let skip = required(if_not_exists, "if_not_exists");
    match create(biz_tag, step, start_with, description) {
        // as CREATE SEQUENCE IF NOT EXISTS: the tag that exists is left as it is
        Err(SeqgenError::DuplicateTag(tag)) if skip => {
            // with 42710, as PostgreSQL's IF NOT EXISTS notices carry their condition
            ereport!(
                NOTICE,
                PgSqlErrorCode::ERRCODE_DUPLICATE_OBJECT,
                format!("tag \"{tag}\" already exists, skipping")
            );
        }
        r => r.or_raise(),
    }
}

/// The C symbols of `seqgen_create` and `seqgen_drop` before 0.6.0 (4 and 1 arguments), which
/// a catalog not yet updated calls (and older update scripts create functions with): a symbol
/// keeps its arguments, so the functions with options have symbols of their own. No SQL.
#[pg_extern(sql = false)]
fn seqgen_create(biz_tag: Option<&str>, step: Option<i32>, start_with: Option<i64>, description: Option<&str>) {
    seqgen_create_if_not_exists(biz_tag, step, start_with, description, Some(false))
}

#[pg_extern(sql = false)]
fn seqgen_drop(biz_tag: Option<&str>) {
    seqgen_drop_missing_ok(biz_tag, Some(false))
}

pub(crate) fn create(
    tag: Option<&str>,
    step: Option<i32>,
    start_with: Option<i64>,
    description: Option<&str>,
) -> Result<()> {
    create_row(tag, step, start_with, description, false)
}

/// [`create`], of a gapless tag when `gapless` (`generators::gapless`).
pub(crate) fn create_row(
    tag: Option<&str>,
    step: Option<i32>,
    start_with: Option<i64>,
    description: Option<&str>,
    gapless: bool,
) -> Result<()> {
    let tag = tag.ok_or(SeqgenError::NullArgument("biz_tag"))?;
    let step = step.ok_or(SeqgenError::NullArgument("step"))?;
    let start_with = start_with.ok_or(SeqgenError::NullArgument("start_with"))?;
    check_tag(tag)?;
    if step <= 0 {
        return Err(SeqgenError::InvalidArgument(format!("step must be positive, got {step}")));
    }
    if start_with < 1 {
        return Err(SeqgenError::InvalidArgument(format!("start_with must be at least 1, got {start_with}")));
    }
    admin_checks()?;
    let owner = i64::from(unsafe { pg_sys::GetUserId() }.to_u32());
    // on Citus every node draws from its own copy of the tag, its values interleaved by its
    // node id (plumbing::node)
    let node_bits = if node::is_citus(crate::plumbing::directory::attach()?) { node::CITUS_NODE_BITS } else { 0 };
    // the catalog bounds the number of tags, not shared memory (a cache of the tags in use)
    let inserted = bounded_lock_wait(|| {
        as_superuser(|| {
            returns_row(
                "INSERT INTO seqgen.alloc (biz_tag, max_id, step, description, owner, node_bits, gapless, start_with) \
             VALUES ($1, $2, $3, $4, $5::pg_catalog.oid::pg_catalog.regrole, $6, $7, $8) \
             ON CONFLICT (biz_tag) DO NOTHING RETURNING true",
                &[
                    tag.into(),
                    (start_with - 1).into(),
                    step.into(),
                    description.into(),
                    owner.into(),
                    node_bits.into(),
                    gapless.into(),
                    start_with.into(),
                ],
            )
        })
    })?;
    if !inserted {
        return Err(SeqgenError::DuplicateTag(tag.to_string()));
    }
    if let Some(sub) = crate::plumbing::replication::catalog_not_received() {
        warning!(
            "tag \"{tag}\" starts at {start_with} in a database that subscribes to \"{sub}\" without the pg_seqgen catalog; \
             if the tag exists on the publisher, values issued there will be issued again here \
             (publish the catalog with seqgen_publish() instead)"
        );
    }
    Ok(())
}

/// Drop a tag. Its slot is retired when the calling transaction commits.
#[pg_extern(volatile, parallel_unsafe, name = "seqgen_drop")]
fn seqgen_drop_missing_ok(biz_tag: Option<&str>, missing_ok: default!(Option<bool>, false)) {
    let skip = required(missing_ok, "missing_ok");
    match drop_tag(required(biz_tag, "biz_tag")) {
        // as DROP SEQUENCE IF EXISTS
        Err(SeqgenError::UnknownTag(tag)) if skip => notice!("tag \"{tag}\" does not exist, skipping"),
        r => r.or_raise(),
    }
}

pub(crate) fn drop_tag(tag: &str) -> Result<()> {
    change_tag(tag, || {
        if returns_row(
            "DELETE FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1 RETURNING true",
            &[tag.into()],
        )? {
            Ok(())
        } else {
            Err(SeqgenError::UnknownTag(tag.to_string()))
        }
    })
}

/// Let several independent servers (each with its own catalog and a distinct
/// `seqgen.node_id`) draw from this tag without collisions: from the commit on, its IDs are
/// `counter << node_bits | seqgen.node_id`. Values stay above every ID issued before. Set once:
/// node bits never change afterwards (see `set_node_bits`). Transactional.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_set_node_bits(biz_tag: Option<&str>, node_bits: Option<i32>) {
    set_node_bits(required(biz_tag, "biz_tag"), required(node_bits, "node_bits")).or_raise()
}

pub(crate) fn set_node_bits(tag: &str, bits: i32) -> Result<()> {
    check_tag(tag)?;
    if !(1..=MAX_NODE_BITS as i32).contains(&bits) {
        return Err(SeqgenError::InvalidArgument(format!(
            "node_bits must be between 1 and {MAX_NODE_BITS}, got {bits}"
        )));
    }
    let h = crate::plumbing::directory::attach()?;
    if node::is_citus(h) && bits != node::CITUS_NODE_BITS {
        // every worker's copy has Citus's width from its creation there: values of two
        // widths could meet
        return Err(SeqgenError::InvalidArgument(format!(
            "on Citus a tag's node bits are {}, got {bits}",
            node::CITUS_NODE_BITS
        )));
    }
    let node = node::id(h)?;
    if node as u64 >= 1u64 << bits {
        return Err(SeqgenError::NodeDoesNotFit { node, bits: bits as u32 });
    }
    change_tag(tag, || {
        let row = first_row(
            "SELECT node_bits, opaque_from IS NOT NULL FROM seqgen.alloc \
             WHERE biz_tag OPERATOR(pg_catalog.=) $1 FOR UPDATE",
            &[tag.into()],
            true,
            |r| r.get_two::<i32, bool>(),
        )?;
        let Some((current, opaque)) = row else {
            return Err(SeqgenError::UnknownTag(tag.to_string()));
        };
        let current = current.unwrap_or(0);
        if bits == current {
            // nothing to change (an opaque tag on Citus has its node bits from its creation)
            return Ok(());
        }
        if opaque == Some(true) {
            return Err(SeqgenError::Unsupported("node bits cannot be combined with opaque IDs".into()));
        }
        if current != 0 {
            // Fewer bits let later values meet earlier ones on this server. More bits let them
            // meet another server's: a server added with a node id that only the wider field
            // can hold counts from its own (low) counter, onto values this server issued
            // before.
            return Err(SeqgenError::InvalidArgument(format!(
                "tag \"{tag}\" already has {current} node bits, and node bits cannot change once set: \
                 with other widths, values of this server and of servers added later could meet"
            )));
        }
        run(
            "UPDATE seqgen.alloc SET node_bits = $2 WHERE biz_tag OPERATOR(pg_catalog.=) $1",
            &[tag.into(), bits.into()],
        )?;
        // from the commit on, no value in the old form is handed out
        at_commit(Action::Retire(tag.to_string()));
        Ok(())
    })
}

/// Change a tag's configured step and/or description (NULL leaves it as it is). The worker
/// reads the step under the row lock at every reservation, so the new step takes effect from
/// the next segment; nothing cached is discarded. Transactional.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_alter(
    biz_tag: Option<&str>,
    step: default!(Option<i32>, "NULL"),
    description: default!(Option<&str>, "NULL"),
) {
    alter(biz_tag, step, description).or_raise()
}

pub(crate) fn alter(tag: Option<&str>, step: Option<i32>, description: Option<&str>) -> Result<()> {
    let tag = tag.ok_or(SeqgenError::NullArgument("biz_tag"))?;
    check_tag(tag)?;
    if let Some(step) = step {
        if step <= 0 {
            return Err(SeqgenError::InvalidArgument(format!("step must be positive, got {step}")));
        }
    }
    change_tag(tag, || {
        if returns_row(
            "UPDATE seqgen.alloc SET step = COALESCE($2, step), \
             description = COALESCE($3, description), update_time = pg_catalog.now() \
             WHERE biz_tag OPERATOR(pg_catalog.=) $1 RETURNING true",
            &[tag.into(), step.into(), description.into()],
        )? {
            Ok(())
        } else {
            Err(SeqgenError::UnknownTag(tag.to_string()))
        }
    })
}

/// Move a tag's numbering up: from the commit on, every session draws `start_with` and above
/// (segments cached or prefetched before are discarded: a gap). Refused, with the current
/// floor, for any `start_with` at or below the highest value reserved so far (numbering never
/// goes down), and for a jump that would use up more than half of the values the tag has
/// left (a typo that would end the tag), unless `force`. Transactional (the row stays locked
/// until the caller commits).
#[pg_extern(volatile, parallel_unsafe, name = "seqgen_restart")]
fn seqgen_restart_force(biz_tag: Option<&str>, start_with: Option<i64>, force: default!(Option<bool>, false)) {
    let force = required(force, "force");
    restart(required(biz_tag, "biz_tag"), required(start_with, "start_with"), force).or_raise()
}

/// The C symbol of `seqgen_restart(text, bigint)` before 0.6.0 (see [`seqgen_create`]). No SQL.
#[pg_extern(sql = false)]
fn seqgen_restart(biz_tag: Option<&str>, start_with: Option<i64>) {
    seqgen_restart_force(biz_tag, start_with, Some(false))
}

pub(crate) fn restart(tag: &str, start_with: i64, force: bool) -> Result<()> {
    change_tag(tag, || {
        let row = first_row(
            "SELECT max_id, opaque_from IS NOT NULL, node_bits, gapless FROM seqgen.alloc \
             WHERE biz_tag OPERATOR(pg_catalog.=) $1 FOR UPDATE",
            &[tag.into()],
            true,
            |r| Ok((r.get_three::<i64, bool, i32>()?, r.get::<bool>(4)?)),
        )?;
        let Some(((Some(max_id), opaque, node_bits), gapless)) = row else {
            return Err(SeqgenError::UnknownTag(tag.to_string()));
        };
        if opaque == Some(true) || node_bits.unwrap_or(0) != 0 {
            return Err(SeqgenError::Unsupported(format!(
                "tag \"{tag}\" is opaque or node-interleaved: its values are not its counter, so it cannot be restarted at a value"
            )));
        }
        if gapless == Some(true) {
            // a new key or period starts at max_id + 1: a restart would make a gap there
            return Err(SeqgenError::Unsupported(format!(
                "tag \"{tag}\" is gapless: its numbers start at its start_with for every key and period, and cannot be restarted"
            )));
        }
        if start_with <= max_id {
            return Err(SeqgenError::InvalidArgument(format!(
                "start_with {start_with} is not above {max_id}, the highest value tag \"{tag}\" has reserved: numbering only moves up"
            )));
        }
        // exact: i128 holds every difference of two bigints
        let (left, jump) = (i64::MAX as i128 - max_id as i128, start_with as i128 - 1 - max_id as i128);
        if !force && jump > left / 2 {
            return Err(SeqgenError::InvalidArgument(format!(
                "start_with {start_with} would use up {jump} of the {left} values tag \"{tag}\" has left, more than half: \
                 pass force => true if that is really the new floor (seqgen_restart_undo('{tag}') takes a restart back \
                 as long as nothing was drawn after it)"
            )));
        }
        run(
            "UPDATE seqgen.alloc SET max_id = $2, restarted_from = max_id, restarted_to = $2, \
             update_time = pg_catalog.now() WHERE biz_tag OPERATOR(pg_catalog.=) $1",
            &[tag.into(), (start_with - 1).into()],
        )?;
        // from the commit on, nothing cached below start_with is handed out
        at_commit(Action::Retire(tag.to_string()));
        Ok(())
    })
}

/// Raise a tag's segment counters by `margin` values: the tag's own and each key's
/// (`seqgen_next(biz_tag, key)`), as the transaction commits; sessions drop what they cached (a
/// gap). The failover runbook's call after the promotion of an asynchronous standby, whose
/// catalog may lag what the old primary reserved: give a margin above what the old primary may
/// have drawn since (see the failover page). Order-number counters are not raised: one that
/// restarts every period may be in a period the standby never saw, and one past its template's
/// capacity would refuse for good; the runbook gives such a tag a template with a new literal
/// instead, which cannot render an old number. Where new keys start (`start_with`) moves up by
/// the margin too: a key first used while the standby lagged has no row here to raise, and
/// starts above the margin instead of at 1. Opaque and node-interleaved tags too (their
/// counters are raised, not their values); a gapless tag is left as it is, with a NOTICE (its
/// numbers commit with their rows, so a standby lacks both or neither; a margin would be a gap).
/// A counter near the end of bigint stops at its end (the next draw is 2200H, never a repeat).
/// Returns the number of counters raised.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_advance(biz_tag: Option<&str>, margin: Option<i64>) -> i64 {
    advance(required(biz_tag, "biz_tag"), required(margin, "margin")).or_raise()
}

pub(crate) fn advance(tag: &str, margin: i64) -> Result<i64> {
    if margin < 1 {
        return Err(SeqgenError::InvalidArgument(format!("margin must be positive, got {margin}")));
    }
    change_tag(tag, || {
        let row = first_row(
            "SELECT gapless FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1 FOR UPDATE",
            &[tag.into()],
            true,
            |r| r.get::<bool>(1),
        )?;
        let Some(gapless) = row else {
            return Err(SeqgenError::UnknownTag(tag.to_string()));
        };
        if gapless == Some(true) {
            // a gapless number commits with its row: what a lagging standby lacks, it lacks
            // together, so there is nothing to raise (and a margin would be a gap)
            notice!("tag \"{tag}\" is gapless: its numbers commit with their rows, so it has no floor to raise");
            return Ok(0);
        }
        // each counter up by the margin, or to the end of bigint (no overflow, no repeat)
        let up = |col: &str| {
            format!(
                "{col} = CASE WHEN {col} OPERATOR(pg_catalog.>) (9223372036854775807::pg_catalog.int8 \
                 OPERATOR(pg_catalog.-) $2) THEN 9223372036854775807::pg_catalog.int8 \
                 ELSE ({col} OPERATOR(pg_catalog.+) $2) END"
            )
        };
        let mut raised = 0i64;
        // and where keys start (`start_with`, and the floor under new keys, `key_floor`, which
        // NULL leaves NULL): a key the old primary first drew while the standby lagged has no
        // row here, and starts above what it may have handed out
        let alloc = format!("{}, {}, {}", up("max_id"), up("start_with"), up("key_floor"));
        for (table, set) in [("seqgen.alloc", alloc), ("seqgen.key_counter", up("max_id"))] {
            raised += Spi::connect_mut(|c| {
                c.update(
                    &format!("UPDATE {table} SET {set}, update_time = pg_catalog.now() WHERE biz_tag OPERATOR(pg_catalog.=) $1"),
                    None,
                    &[tag.into(), margin.into()],
                )
                .map(|t| t.len() as i64)
            })
            .map_err(spi_err)?;
        }
        // from the commit on, nothing cached below the new counters is handed out (the tag's
        // slot and its keys' slots are retired together)
        at_commit(Action::Retire(tag.to_string()));
        Ok(raised)
    })
}

/// Take back the tag's last `seqgen_restart`, as long as no value was reserved after it (so
/// none was drawn): numbering continues above what was reserved before the restart. For a
/// restart accepted by mistake (a mistyped floor, or `force`). Returns the next value.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_restart_undo(biz_tag: Option<&str>) -> i64 {
    restart_undo(required(biz_tag, "biz_tag")).or_raise()
}

fn restart_undo(tag: &str) -> Result<i64> {
    change_tag(tag, || {
        let row = first_row(
            "SELECT max_id, restarted_from, restarted_to FROM seqgen.alloc \
             WHERE biz_tag OPERATOR(pg_catalog.=) $1 FOR UPDATE",
            &[tag.into()],
            true,
            |r| r.get_three::<i64, i64, i64>(),
        )?;
        let Some((Some(max_id), from, to)) = row else {
            return Err(SeqgenError::UnknownTag(tag.to_string()));
        };
        let (Some(from), Some(to)) = (from, to) else {
            return Err(SeqgenError::InvalidArgument(format!("tag \"{tag}\" has no restart to undo")));
        };
        if max_id != to {
            return Err(SeqgenError::InvalidArgument(format!(
                "tag \"{tag}\" has reserved values up to {max_id} since its restart (to {}): they may have been drawn, \
                 and undoing the restart could issue them again",
                to.saturating_add(1)
            )));
        }
        // the catalog's guard lets max_id go down only for this
        with_settings(&[("seqgen.rewinding", "on")], || {
            run(
                "UPDATE seqgen.alloc SET max_id = restarted_from, restarted_from = NULL, restarted_to = NULL, \
                 update_time = pg_catalog.now() WHERE biz_tag OPERATOR(pg_catalog.=) $1",
                &[tag.into()],
            )
        })?;
        at_commit(Action::Retire(tag.to_string()));
        Ok(from.saturating_add(1))
    })
}

/// The OID of role `name` ('public' for everyone), or 42704.
fn role_oid(name: &str) -> Result<Option<pg_sys::Oid>> {
    if name.eq_ignore_ascii_case("public") {
        return Ok(None);
    }
    let c = std::ffi::CString::new(name).map_err(|_| SeqgenError::InvalidArgument("bad role name".into()))?;
    let oid = unsafe { pg_sys::get_role_oid(c.as_ptr(), true) };
    if oid == pg_sys::InvalidOid {
        return Err(SeqgenError::InvalidArgument(format!("role \"{name}\" does not exist")));
    }
    Ok(Some(oid))
}

/// Let `role` (and its members; `'public'`: every role) draw from `biz_tag`, like `GRANT
/// USAGE ON SEQUENCE`. The role still needs EXECUTE on the drawing functions. The tag's owner
/// (or a superuser) only. Transactional.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_grant(biz_tag: Option<&str>, role: Option<&str>) {
    set_grant(required(biz_tag, "biz_tag"), required(role, "role"), true).or_raise()
}

/// Take back `seqgen_grant(biz_tag, role)`. Transactional: backends check again when it
/// commits.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_revoke(biz_tag: Option<&str>, role: Option<&str>) {
    set_grant(required(biz_tag, "biz_tag"), required(role, "role"), false).or_raise()
}

pub(crate) fn set_grant(tag: &str, role: &str, grant: bool) -> Result<()> {
    let oid = role_oid(role)?;
    change_tag(tag, || {
        let done = match (oid, grant) {
            (None, _) => returns_row(
                "UPDATE seqgen.alloc SET public_draw = $2 WHERE biz_tag OPERATOR(pg_catalog.=) $1 RETURNING true",
                &[tag.into(), grant.into()],
            )?,
            (Some(oid), true) => returns_row(
                "UPDATE seqgen.alloc SET drawers = CASE WHEN $2::pg_catalog.oid::pg_catalog.regrole \
                 OPERATOR(pg_catalog.=) ANY (drawers) THEN drawers \
                 ELSE pg_catalog.array_append(drawers, $2::pg_catalog.oid::pg_catalog.regrole) END \
                 WHERE biz_tag OPERATOR(pg_catalog.=) $1 RETURNING true",
                &[tag.into(), i64::from(oid.to_u32()).into()],
            )?,
            (Some(oid), false) => returns_row(
                "UPDATE seqgen.alloc SET drawers = \
                 pg_catalog.array_remove(drawers, $2::pg_catalog.oid::pg_catalog.regrole) \
                 WHERE biz_tag OPERATOR(pg_catalog.=) $1 RETURNING true",
                &[tag.into(), i64::from(oid.to_u32()).into()],
            )?,
        };
        if done {
            Ok(())
        } else {
            Err(SeqgenError::UnknownTag(tag.to_string()))
        }
    })
}
/// The tag a column's DEFAULT draws from, as `pg_get_serial_sequence` names a serial's
/// sequence: the first argument of the pg_seqgen call in the DEFAULT (`seqgen_next('order')`
/// gives `order`). NULL when the column has no DEFAULT or its DEFAULT names no tag. Reads the
/// catalogs only: it waits for no lock on the table.
#[pg_extern(sql = r#"
CREATE FUNCTION @extschema@."seqgen_column_tag"(
	"tbl" pg_catalog.regclass,
	"col" pg_catalog.text
) RETURNS pg_catalog.text
STABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'seqgen_column_tag_wrapper';
"#)]
fn seqgen_column_tag(tbl: pg_sys::Oid, col: &str) -> Option<String> {
    column_tag(tbl, col).or_raise()
}

fn column_tag(tbl: pg_sys::Oid, col: &str) -> Result<Option<String>> {
    let (table, attnum) = first_row(
        "SELECT $1::pg_catalog.regclass::pg_catalog.text, \
                (SELECT a.attnum FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) $1 \
                    AND a.attname OPERATOR(pg_catalog.=) $2 AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped)",
        &[tbl.into(), col.into()],
        false,
        |r| Ok((r.get::<String>(1)?.unwrap_or_default(), r.get::<i16>(2)?)),
    )?
    .unwrap_or_default();
    let Some(attnum) = attnum else {
        return Err(SeqgenError::UnknownColumn { table, column: col.to_string() });
    };
    Ok(defaults::drawing_columns(Some((tbl, attnum)))?.into_iter().next().map(|d| d.tag))
}
