//! Slots that stop serving their tags (a drop or a change committed, the catalog dropped), the
//! free list they return to, the counters of what live slots hold, and the privilege epochs a
//! committed or prepared change of grants bumps.

use super::*;

/// How many counters of retirement requests an area keeps (tags spread over them by name).
pub const RETIRE_BUCKETS: usize = 64;

/// The counter of retirement requests for the tag of slot name `name` (a tag, or a tag and a
/// key): it moves whenever a catalog change of that tag (or of a tag sharing its bucket, or
/// of every tag) asked for its slots to be retired.
pub fn retire_requests<'a>(h: &'a Header, name: &[u8]) -> &'a AtomicU64 {
    use std::hash::BuildHasher;
    let tag = name.split(|&b| b == KEY_SEP).next().unwrap_or(name);
    &h.retire_requests[rustc_hash::FxBuildHasher.hash_one(tag) as usize % RETIRE_BUCKETS]
}

/// Retire the slot of `name`: every cached resolution of it becomes invalid, draws in flight
/// are discarded, and the next call reloads the tag from the catalog. Called when a deletion
/// of the tag's catalog row commits.
pub fn retire(name: &[u8]) {
    let Some(h) = header() else { return };
    with_dir_lock(h, true, || {
        retire_requests(h, name).fetch_add(1, Ordering::AcqRel);
        if let Some(idx) = find_slot(h, name) {
            retire_slot(h, idx, Lost::Change);
        }
        // and the slots of the tag's keyed counters (a cold path: drops and changes)
        if !name.contains(&KEY_SEP) {
            for idx in 0..slots(h).len() {
                let s = &all_slots(h)[idx];
                if s.state.load(Ordering::Acquire) == SLOT_ACTIVE && is_key_of(s.name(), name) {
                    retire_slot(h, idx, Lost::Change);
                }
            }
        }
    });
    h.broadcast();
}

/// Is `slot_name` a keyed counter of `tag`?
pub fn is_key_of(slot_name: &[u8], tag: &[u8]) -> bool {
    slot_name.len() > tag.len() && slot_name.starts_with(tag) && slot_name[tag.len()] == KEY_SEP
}

/// Retire every slot (the catalog was dropped).
pub fn retire_all() {
    let Some(h) = header() else { return };
    with_dir_lock(h, true, || {
        for r in &h.retire_requests {
            r.fetch_add(1, Ordering::AcqRel);
        }
        for idx in 0..slots(h).len() {
            if all_slots(h)[idx].state.load(Ordering::Acquire) == SLOT_ACTIVE {
                retire_slot(h, idx, Lost::Change);
            }
        }
    });
    h.broadcast();
}

/// Caller holds `dir_lock` exclusive. Draws in flight see the new generation and discard
/// their value.
pub fn retire_slot(h: &'static Header, idx: usize, why: Lost) {
    let s = &all_slots(h)[idx];
    let was_active = s.state.load(Ordering::Acquire) == SLOT_ACTIVE;
    if was_active {
        index_remove(h, idx);
        // what it handed out, and what it held that no one will (a draw still in flight
        // discards its value when it sees the new generation)
        let (seg, ord) = (s.seg.snapshot(), s.ord.snapshot());
        h.stats.retired(SlotSums { taken: seg.total_used + ord.total_used, skipped: seg.skipped + ord.skipped });
        h.stats.lose(why, undrawn(&seg) + undrawn(&ord));
    }
    s.gen().fetch_add(1, Ordering::AcqRel);
    h.retire_epoch.fetch_add(1, Ordering::AcqRel);
    s.state.store(SLOT_FREE, Ordering::Release);
    if was_active {
        s.next_free.store(h.free_head.load(Ordering::Relaxed), Ordering::Relaxed);
        h.free_head.store(idx as u32 + 1, Ordering::Relaxed);
    }
}

/// Values of a segment buffer not handed out: the rest of the current segment and the next.
pub fn undrawn(s: &seqgen_core::segment::Snapshot) -> u64 {
    s.current.map_or(0, |c| c.len.saturating_sub(s.used)) + s.next.map_or(0, |n| n.len)
}

/// What the slots serving tags have handed out and skipped (values and order numbers), and
/// what they hold, for the counters.
pub fn live_sums(h: &'static Header) -> (SlotSums, u64) {
    let (mut sums, mut cached) = (SlotSums::default(), 0);
    for s in slots(h).iter().filter(|s| s.state.load(Ordering::Acquire) == SLOT_ACTIVE) {
        for b in [s.seg.snapshot(), s.ord.snapshot()] {
            sums.taken += b.total_used;
            sums.skipped += b.skipped;
            cached += undrawn(&b);
        }
    }
    (sums, cached)
}

/// A free slot for a new tag: a retired one, or one never used; `None` when every slot is
/// active. Caller holds `dir_lock` exclusive and makes the slot active.
pub fn take_free_slot(h: &'static Header) -> Option<usize> {
    let head = h.free_head.load(Ordering::Relaxed);
    if head != 0 {
        let idx = head as usize - 1;
        h.free_head.store(all_slots(h)[idx].next_free.load(Ordering::Relaxed), Ordering::Relaxed);
        return Some(idx);
    }
    let used = h.slots_used.load(Ordering::Acquire);
    (used < h.max_tags).then_some(used as usize)
}

/// Backends must check who may draw again (a grant, a revoke or an owner change committed).
pub fn acl_changed() {
    if let Some(h) = header() {
        h.acl_epoch.fetch_add(1, Ordering::AcqRel);
    }
}

/// A transaction that changed who may draw is being prepared (see [`Header::acl_prepared`]).
pub fn acl_prepared() {
    if let Some(h) = header() {
        // a count, so that the allocator clears only what it saw (compare and swap)
        h.acl_prepared.fetch_add(1, Ordering::AcqRel);
        h.acl_epoch.fetch_add(1, Ordering::AcqRel);
    }
}
