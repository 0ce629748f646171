//! What a role may see of the tags: `seqgen_status()`, and the rows of the view `seqgen_tags`
//! (like `pg_sequences`: readable by everyone, each role seeing the tags it owns or may draw
//! from, a member of `pg_monitor` every tag). The catalog is read with the extension's
//! privileges and the latest committed grants; what shared memory holds of each tag is joined in.

use std::sync::atomic::Ordering;

use pgrx::datum::TimestampWithTimeZone;
use pgrx::prelude::*;

use crate::plumbing::acl;
use crate::plumbing::catalog;
use crate::plumbing::directory;
use crate::plumbing::error::{OrRaise, SeqgenError};
use crate::plumbing::session::{as_superuser, bounded_lock_wait};
use crate::plumbing::shmem;

/// A tag as the caller may see it. `counters`: false for an opaque tag the caller does not
/// own (its counters reveal its order and volume: to its owner only, as `seqgen_reveal` is).
struct Row {
    tag: String,
    owner: String,
    gapless: bool,
    step: i32,
    max_id: i64,
    description: Option<String>,
    update_time: Option<TimestampWithTimeZone>,
    opaque: bool,
    node_bits: i32,
    counters: bool,
    live: Option<Live>,
}

/// What shared memory holds of a tag (when a slot serves it).
struct Live {
    next_value: Option<i64>,
    segment_end: Option<i64>,
    next_ready: bool,
    cached: i64,
    drawn: i64,
    rate: f64,
    step: i64,
    waits: i64,
}

/// The tags the caller may see, in name order.
fn visible() -> Vec<Row> {
    shmem::server().ok_or(SeqgenError::NotPreloaded).or_raise();
    // no area yet (the allocator of this database has not started, as right after a standby's
    // promotion): the catalog's rows, with nothing in shared memory
    let h = shmem::header();
    catalog::require_current().or_raise();
    // read as the bootstrap superuser (the catalog's schema is private); each row is shown
    // only to a role that may see it (its owner, a role that may draw from it, pg_monitor),
    // decided on the latest committed grants, as drawing is (a REPEATABLE READ snapshot taken
    // before a revoke or a drop does not keep showing the tag)
    let (rows, acl) = bounded_lock_wait(|| {
        as_superuser(|| {
            let rows = Spi::connect(|c| {
                let mut rows = vec![];
                let t = c.select(
                    "SELECT biz_tag, step, max_id, description, update_time, opaque_from IS NOT NULL, node_bits, \
                            pg_catalog.pg_get_userbyid(owner::pg_catalog.oid)::pg_catalog.text, gapless \
                     FROM seqgen.alloc ORDER BY biz_tag",
                    None,
                    &[],
                )?;
                for row in t {
                    rows.push(Row {
                        tag: row.get(1)?.unwrap_or_default(),
                        step: row.get(2)?.unwrap_or_default(),
                        max_id: row.get(3)?.unwrap_or_default(),
                        description: row.get(4)?,
                        update_time: row.get(5)?,
                        opaque: row.get(6)?.unwrap_or(false),
                        node_bits: row.get(7)?.unwrap_or(0),
                        owner: row.get(8)?.unwrap_or_default(),
                        gapless: row.get(9)?.unwrap_or(false),
                        counters: false,
                        live: None,
                    });
                }
                Ok::<_, pgrx::spi::Error>(rows)
            })?;
            let acl = acl::latest_grants()?;
            Ok::<_, pgrx::spi::Error>((rows, acl))
        })
    })
    .map_err(|e| SeqgenError::Internal(e.to_string()))
    .or_raise();
    // decided as the caller, not as the superuser that read the rows
    rows.into_iter()
        .filter_map(|mut row| {
            let grants = acl.get(&row.tag)?;
            if !grants.may_see() {
                return None;
            }
            row.counters = !row.opaque || grants.owned();
            row.live = h.and_then(|h| directory::lookup(h, row.tag.as_bytes())).map(|r| {
                let (s, slot, ord) = (r.slot.seg.snapshot(), r.slot, r.slot.ord.snapshot());
                let next = s.next_value();
                Live {
                    next_value: next.map(|n| n.0),
                    segment_end: next.map(|n| n.1),
                    next_ready: s.next.is_some(),
                    cached: (shmem::undrawn(&s) + shmem::undrawn(&ord)) as i64,
                    drawn: (s.total_used + ord.total_used) as i64,
                    rate: f64::from_bits(slot.rate_bits.load(Ordering::Relaxed)),
                    step: slot.cur_step.load(Ordering::Relaxed),
                    waits: slot.waits.load(Ordering::Relaxed) as i64,
                }
            });
            Some(row)
        })
        .collect()
}

/// One row per tag the caller may see (its own tags, those it may draw from; every tag for a
/// superuser or a member of `pg_monitor`): the catalog joined with what shared memory holds
/// for it. An opaque tag's counters (`max_id`, `next_value`, `segment_end`, `ids_per_sec`,
/// `current_step`) are NULL except to its owner.
#[pg_extern(volatile, parallel_unsafe)]
#[allow(clippy::type_complexity)]
fn seqgen_status() -> TableIterator<
    'static,
    (
        name!(biz_tag, String),
        name!(step, i32),
        name!(max_id, Option<i64>),
        name!(next_value, Option<i64>),
        name!(segment_end, Option<i64>),
        name!(next_segment_ready, bool),
        name!(ids_per_sec, Option<f64>),
        name!(current_step, Option<i64>),
        name!(waits, i64),
        name!(opaque, bool),
        name!(node_bits, i32),
        name!(description, Option<String>),
        name!(update_time, Option<TimestampWithTimeZone>),
    ),
> {
    TableIterator::new(visible().into_iter().map(|r| {
        let shown = |v: Option<i64>| v.filter(|_| r.counters);
        let l = r.live.as_ref();
        (
            r.tag.clone(),
            r.step,
            shown(Some(r.max_id)),
            shown(l.and_then(|l| l.next_value)),
            shown(l.and_then(|l| l.segment_end)),
            l.is_some_and(|l| l.next_ready),
            Some(l.map_or(0.0, |l| l.rate)).filter(|_| r.counters),
            shown(l.map(|l| l.step)),
            l.map_or(0, |l| l.waits),
            r.opaque,
            r.node_bits,
            r.description,
            r.update_time,
        )
    }))
}

/// The rows of the view `seqgen_tags` (internal; in schema `seqgen`, executable by everyone:
/// each role sees the tags it may see, as in `seqgen_status()`).
#[pg_extern(volatile, parallel_unsafe)]
#[allow(clippy::type_complexity)]
fn seqgen_tag_rows() -> TableIterator<
    'static,
    (
        name!(biz_tag, String),
        name!(tag_owner, String),
        name!(kind, String),
        name!(step, i32),
        name!(node_bits, i32),
        name!(opaque, bool),
        name!(max_id, Option<i64>),
        name!(next_value, Option<i64>),
        name!(cached, Option<i64>),
        name!(drawn, Option<i64>),
        name!(waits, Option<i64>),
        name!(in_shared_memory, bool),
        name!(description, Option<String>),
        name!(update_time, Option<TimestampWithTimeZone>),
    ),
> {
    TableIterator::new(visible().into_iter().map(|r| {
        let shown = |v: Option<i64>| v.filter(|_| r.counters);
        let l = r.live.as_ref();
        (
            r.tag.clone(),
            r.owner.clone(),
            if r.gapless { "gapless" } else { "segment" }.to_string(),
            r.step,
            r.node_bits,
            r.opaque,
            shown(Some(r.max_id)),
            shown(l.and_then(|l| l.next_value)),
            shown(l.map(|l| l.cached)),
            shown(l.map(|l| l.drawn)),
            l.map(|l| l.waits),
            l.is_some(),
            r.description,
            r.update_time,
        )
    }))
}
