//! After the commit: the allocator publishes what its jobs reserved to the slots (segments,
//! order-number blocks, counted in `seqgen_stats()` under the directory lock), answers the
//! mailboxes, and retires the slots whose catalog row changed. Nothing here reads the catalog.

use std::sync::atomic::Ordering;

use pgrx::prelude::*;
use seqgen_core::adaptive::Reservation;
use seqgen_core::opaque::Key;
use seqgen_core::segment::{trigger_offset, Segment, SegmentBuffer};

use crate::background::jobs::{Job, Outcome, SlotRef};
use crate::background::process::JobError;
use crate::background::slots::assign_slot;
use crate::generators::snowflake::{self, SnowflakeJob};
use crate::plumbing::acl::Grants;
use crate::plumbing::catalog::{mode, OrderReserve, Reserve, TemplateRead};
use crate::plumbing::directory::code;
use crate::plumbing::guc;
use crate::plumbing::node;
use crate::plumbing::shmem::{self, retire_slot, Header, Mailbox, TagSlot};
use crate::plumbing::stats::Lost;

/// Answer use `seq` of `mb`, if the caller still waits for it; free it if the caller gave up.
pub(super) fn answer(mb: &Mailbox, seq: u64, code: u32, start: i64, len: i64, detail: &str) {
    if mb.load() != (seq, shmem::MB_POSTED) {
        mb.free(seq, shmem::MB_ABANDONED);
        return;
    }
    mb.result.store(code, Ordering::Relaxed);
    mb.r_start.store(start, Ordering::Relaxed);
    mb.r_len.store(len, Ordering::Relaxed);
    mb.set_detail(detail);
    if !mb.transition(seq, shmem::MB_POSTED, shmem::MB_DONE) {
        // the caller gave up meanwhile; the mailbox is ours to free
        mb.free(seq, shmem::MB_ABANDONED);
    }
}

/// Answer a mailbox with a failure.
pub(super) fn answer_failure(mb: &Mailbox, seq: u64, o: &Outcome) {
    let (c, state, detail) = match o {
        Outcome::Reserved(r) => (reserve_code(r), 0, String::new()),
        Outcome::CatalogMissing => (code::CATALOG_MISSING, 0, String::new()),
        Outcome::NeedsUpdate(v) => (code::NEEDS_UPDATE, 0, v.clone()),
        Outcome::Failed(e) if e.locked => (code::LOCKED, e.state, e.msg.clone()),
        Outcome::Failed(e) => (code::INTERNAL, e.state, e.msg.clone()),
        _ => (code::INTERNAL, 0, "unexpected outcome".to_string()),
    };
    answer(mb, seq, c, 0, state as i64, &detail)
}

fn segment_of(range: Reservation) -> Segment {
    let len = range.len();
    Segment { start: range.start, len, trigger: trigger_offset(len, guc::PREFETCH_THRESHOLD.get() as u32), period: 0 }
}

fn reserve_code(r: &Reserve) -> u32 {
    match r {
        Reserve::Done { .. } => code::OK,
        Reserve::Missing => code::UNKNOWN_TAG,
        Reserve::Locked => code::LOCKED,
        Reserve::Exhausted => code::EXHAUSTED,
        Reserve::Stale => code::STALE,
        Reserve::Gapless => code::GAPLESS,
        Reserve::KeyedOpaque => code::KEYED_OPAQUE,
        Reserve::KeyLimit => code::KEY_LIMIT,
        // (only a load's first segment, which is then not reserved: never published)
        Reserve::NotAllowed => code::INTERNAL,
    }
}

/// The slot of `r`, if it still has the job's generation.
fn live(h: &'static Header, r: &SlotRef) -> Option<&'static TagSlot> {
    let s = &shmem::all_slots(h)[r.idx];
    (s.gen().load(Ordering::Acquire) == r.gen).then_some(s)
}

/// Publish `seg` in `buf` of the slot of `r` and count it (`seqgen_stats()`), under the
/// directory lock: a slot retired meanwhile (its cached values counted as lost then) gets
/// nothing, and a retirement after the publication counts the segment as lost with the rest.
fn publish_counted(h: &'static Header, r: &SlotRef, buf: &SegmentBuffer, seg: Segment) {
    shmem::with_dir_lock(h, false, || {
        if live(h, r).is_none() {
            // retired meanwhile: reserved, and a gap
            return h.stats.unpublished(seg.len);
        }
        match buf.publish(seg) {
            Ok(_) => h.stats.published(seg.len),
            Err(_) => h.stats.unpublished(seg.len),
        }
    });
}

/// A segment reserved for the slot of `r` (`s`): the slot's step and state, then the segment
/// published. Publishing fails only if a segment is already waiting; then this one is skipped
/// (a gap, never a duplicate).
fn publish_segment(
    h: &'static Header,
    r: &SlotRef,
    s: &TagSlot,
    range: Reservation,
    opaque: Option<(i64, Key)>,
    node_bits: u32,
    now: i64,
) {
    s.locked.store(0, Ordering::Relaxed);
    s.err_code.store(code::OK, Ordering::Relaxed);
    s.cur_step.store(range.len() as i64, Ordering::Relaxed);
    s.last_alloc_ms.store(now, Ordering::Relaxed);
    let mut seg = segment_of(range);
    if let Some((from, key)) = &opaque {
        set_opaque(s, *from, key);
    }
    seg.period = mode(opaque.is_some(), node_bits, node::is_citus_db(h));
    publish_counted(h, r, &s.seg, seg);
}

/// Retire the slot of `r` if it still has the job's generation.
fn retire_ref(h: &'static Header, r: &SlotRef) {
    shmem::with_dir_lock(h, true, || {
        if live(h, r).is_some() {
            retire_slot(h, r.idx, Lost::Change);
        }
    });
}

/// The code a failed slot job leaves in the slot.
fn failure_code(o: &Outcome) -> u32 {
    match o {
        Outcome::CatalogMissing => code::CATALOG_MISSING,
        Outcome::NeedsUpdate(_) => code::NEEDS_UPDATE,
        Outcome::Reserved(r) => reserve_code(r),
        Outcome::Order(OrderReserve::KeyLimit) => code::KEY_LIMIT,
        _ => code::INTERNAL,
    }
}

/// Apply a committed outcome to shared memory.
pub(super) fn finish(h: &'static Header, job: &Job, outcome: Outcome, now: i64) {
    match (job, outcome) {
        (Job::Load { mb, seq, tag, acl_epoch, retired, .. }, Outcome::Loaded(l, first)) => {
            let ident = l.ident;
            let grants = Grants::committed(l.owner, l.public, &l.drawers);
            let (idx, gen, fresh) = assign_slot(h, tag, l, now);
            // A catalog change of the tag that committed after this cycle began (a drop, an
            // advance: they wait for the reservation's lock on the tag's row) retired the tag's
            // slots at its commit, perhaps before this slot existed: then what the load read is
            // not given to the slot (the first draw asks for its segment, from the row as it is
            // now). A change after this point retires the slot itself.
            let unchanged = shmem::retire_requests(h, tag.as_bytes()).load(Ordering::Acquire) == *retired;
            if let (Some(epoch), true) = (acl_epoch, unchanged) {
                // the grants this load read, for backends' first draws without the catalog
                shmem::all_slots(h)[idx].grants.publish(gen, *epoch, &grants);
            }
            if let Some((Reserve::Done { range, opaque, node_bits, .. }, _)) = first {
                if fresh && unchanged {
                    // a keyed counter's first segment, reserved in the load's transaction (from
                    // the row the slot serves: its identity was checked under the row's lock)
                    let r = SlotRef { idx, gen, ident, tag: tag.clone() };
                    publish_segment(h, &r, &shmem::all_slots(h)[idx], range, opaque, node_bits, now);
                } else {
                    // the key was loaded by another request meanwhile (its slot has its own
                    // segments and step), or its tag changed: a gap
                    h.stats.unpublished(range.len());
                }
            }
            answer(&h.mailboxes[*mb], *seq, code::OK, idx as i64, gen as i64, "")
        }
        (Job::Range { mb, seq, slot, .. }, Outcome::Reserved(Reserve::Done { range, opaque, node_bits, .. })) => {
            let m = &h.mailboxes[*mb];
            let Some(s) = live(h, slot) else { return answer(m, *seq, code::STALE, 0, 0, "") };
            if let Some((from, key)) = opaque {
                // the caller permutes the range with the key it reads from its slot
                set_opaque(s, from, &key);
            }
            m.r_mode.store(mode(opaque.is_some(), node_bits, node::is_citus_db(h)), Ordering::Relaxed);
            answer(m, *seq, code::OK, range.start, range.len() as i64, "")
        }
        (Job::Range { mb, seq, slot, .. }, Outcome::Reserved(Reserve::Stale)) => {
            retire_ref(h, slot);
            answer(&h.mailboxes[*mb], *seq, code::STALE, 0, 0, "")
        }
        (Job::Range { mb, seq, slot, .. }, Outcome::Reserved(Reserve::Missing)) => {
            // the row is gone: the slot's cached segments must not be served any more
            retire_ref(h, slot);
            answer(&h.mailboxes[*mb], *seq, code::UNKNOWN_TAG, 0, 0, "")
        }
        (Job::Load { mb, seq, .. } | Job::Range { mb, seq, .. }, o) => answer_failure(&h.mailboxes[*mb], *seq, &o),
        (Job::Template { mb, seq, slot }, o) => {
            let m = &h.mailboxes[*mb];
            let found = match o {
                Outcome::Template(t) => t,
                o => return answer_failure(m, *seq, &o),
            };
            let c = shmem::with_dir_lock(h, true, || {
                let Some(s) = live(h, slot) else { return code::STALE };
                match &found {
                    TemplateRead::Found { text, zone, key } => {
                        if let Some(k) = key {
                            s.set_key(k);
                        }
                        s.tpl.write(text, zone);
                        code::OK
                    }
                    TemplateRead::Missing => {
                        s.tpl.set_state(shmem::TPL_MISSING);
                        code::NO_TEMPLATE
                    }
                    TemplateRead::Stale => {
                        retire_slot(h, slot.idx, Lost::Change);
                        code::STALE
                    }
                }
            });
            answer(m, *seq, c, 0, 0, "")
        }
        (Job::Order { slot, .. }, o) => {
            let Some(s) = live(h, slot) else {
                // retired meanwhile: what was reserved is a gap
                if let Outcome::Order(OrderReserve::Done(b)) = o {
                    h.stats.unpublished((b.end - b.start + 1) as u64);
                }
                return;
            };
            match o {
                Outcome::Order(OrderReserve::Done(b)) => {
                    s.ord_locked.store(0, Ordering::Relaxed);
                    if s.ord_err_code.load(Ordering::Relaxed) == code::OVERFLOW {
                        s.ord_err_code.store(code::OK, Ordering::Relaxed);
                    }
                    let len = (b.end - b.start + 1) as u64;
                    s.ord_cur_step.store(len as i64, Ordering::Relaxed);
                    s.ord_last_ms.store(now, Ordering::Relaxed);
                    let trigger = trigger_offset(len, guc::PREFETCH_THRESHOLD.get() as u32);
                    // a gap, never a duplicate, if a block is already waiting
                    publish_counted(h, slot, &s.ord, Segment { start: b.start, len, trigger, period: b.period });
                }
                Outcome::Order(OrderReserve::Locked) | Outcome::Failed(JobError { locked: true, .. }) => {
                    s.ord_locked.store(1, Ordering::Relaxed)
                }
                Outcome::Order(OrderReserve::Overflow(period)) => {
                    s.ord_err_period.store(period, Ordering::Relaxed);
                    order_error(s, code::OVERFLOW);
                }
                Outcome::Order(OrderReserve::Missing) => {
                    shmem::with_dir_lock(h, true, || s.tpl.set_state(shmem::TPL_MISSING));
                    order_error(s, code::NO_TEMPLATE);
                }
                // the tag or its template changed under the slot: callers reload both
                Outcome::Order(OrderReserve::Stale) => retire_ref(h, slot),
                o => order_error(s, failure_code(&o)),
            }
        }
        (Job::Snowflake { kind, job: SnowflakeJob::Refresh, .. }, Outcome::Snowflake(Some(id))) => {
            snowflake::refresh(h, *kind, id)
        }
        // a failed re-read is retried next second; nobody waits for it
        (Job::Snowflake { job: SnowflakeJob::Refresh, .. }, _) => {}
        (Job::Snowflake { kind, job: SnowflakeJob::Extend, ts }, Outcome::Snowflake(Some(stored))) => {
            snowflake::publish_reservation(h, *kind, *ts, stored)
        }
        // locked: asked again by the waiting callers
        (Job::Snowflake { .. }, Outcome::Snowflake(None) | Outcome::Failed(JobError { locked: true, .. })) => {}
        (Job::Snowflake { kind, .. }, o) => snowflake::report_failure(h, *kind, failure_code(&o)),
        (Job::Prefetch { slot, .. }, o) => {
            let Some(s) = live(h, slot) else {
                // retired meanwhile: what was reserved is a gap
                if let Outcome::Reserved(Reserve::Done { range, .. }) = o {
                    h.stats.unpublished(range.len());
                }
                return;
            };
            match o {
                Outcome::Reserved(Reserve::Done { range, opaque, node_bits, .. }) => {
                    publish_segment(h, slot, s, range, opaque, node_bits, now)
                }
                Outcome::Reserved(Reserve::Locked) | Outcome::Failed(JobError { locked: true, .. }) => {
                    s.locked.store(1, Ordering::Relaxed)
                }
                // The row is gone, or is another incarnation of the tag: retire the slot;
                // callers reload (and get "unknown tag", or the new tag).
                Outcome::Reserved(Reserve::Missing | Reserve::Stale) => retire_ref(h, slot),
                Outcome::Reserved(Reserve::Exhausted) => slot_error(s, code::EXHAUSTED),
                o => slot_error(s, failure_code(&o)),
            }
        }
        (Job::Verify { slots }, Outcome::Stale(stale)) => {
            for r in slots.iter().filter(|r| stale.contains(&r.idx)) {
                log!(
                    "pg_seqgen allocator: tag \"{}\" no longer matches its catalog row; its cached values are discarded",
                    shmem::shown_name(r.tag.clone())
                );
                retire_ref(h, r);
            }
        }
        (Job::Verify { .. } | Job::ReturnLease { .. }, _) => {}
    }
}

/// Record an opaque tag's key and domain in its slot (before publishing anything opaque).
fn set_opaque(s: &TagSlot, from: i64, key: &Key) {
    s.opaque_from.store(from, Ordering::Relaxed);
    s.set_key(key);
}

fn order_error(s: &TagSlot, c: u32) {
    s.ord_err_code.store(c, Ordering::Relaxed);
    s.ord_err_seq.fetch_add(1, Ordering::AcqRel);
}

fn slot_error(s: &TagSlot, c: u32) {
    s.err_code.store(c, Ordering::Relaxed);
    s.err_seq.fetch_add(1, Ordering::AcqRel);
}
