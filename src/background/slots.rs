//! The allocator's shared-memory slots: giving a tag loaded from the catalog a slot (the one
//! it has, a free one, or the least recently used one of a sample, evicted), and the draw
//! rates the slots' adaptive steps and the eviction read.

use std::sync::atomic::Ordering;

use pgrx::prelude::*;

use crate::plumbing::catalog;
use crate::plumbing::directory::code;
use crate::plumbing::shmem::{self, retire_slot, Header};
use crate::plumbing::stats::Lost;

/// The slot serving the row `ident` of `tag`: the one already loaded, or a free slot set up
/// with no segment yet. A loaded slot of the same name that serves another row (the tag was
/// dropped and created again, or the catalog re-created) is retired first. When no slot is
/// free, the least recently used one is evicted: shared memory is a cache of the catalog, and
/// what the evicted slot had reserved becomes a gap. The last-reservation times start at 0 so
/// the first segment has the configured step (Leaf's rule then sees a "slow" previous segment
/// and does not grow the step); the first order-number block has one number (it grows while
/// blocks are used up quickly), so that what an eviction takes from a tag's period is small.
/// The slot of a loaded tag: its index and generation, and whether it is new (`false`: the tag
/// already had one, for the same catalog row).
pub(crate) fn assign_slot(h: &'static Header, tag: &str, loaded: catalog::Loaded, now: i64) -> (usize, u64, bool) {
    let (step, ident) = (loaded.step, loaded.ident);
    let evicted = shmem::with_dir_lock(h, true, || {
        let slots = shmem::all_slots(h);
        if let Some(idx) = shmem::find_slot(h, tag.as_bytes()) {
            if slots[idx].ident() == ident {
                slots[idx].active_ms.store(now, Ordering::Relaxed);
                return Ok((idx, slots[idx].gen().load(Ordering::Acquire)));
            }
            retire_slot(h, idx, Lost::Change);
        }
        let (idx, evicted) = match shmem::take_free_slot(h) {
            Some(idx) => (idx, None),
            None => {
                let victim = least_recently_used(h, now, loaded.owner);
                let name = String::from_utf8_lossy(slots[victim].name()).into_owned();
                let idle_ms = now - slots[victim].active_ms.load(Ordering::Relaxed);
                // retired, it is the free list's head: taken from there like any free slot
                retire_slot(h, victim, Lost::Eviction);
                let idx = shmem::take_free_slot(h).expect("the slot just retired is free");
                debug_assert_eq!(idx, victim);
                (idx, Some((name, idle_ms)))
            }
        };
        let s = &slots[idx];
        h.slots_used.fetch_max(idx as u32 + 1, Ordering::AcqRel);
        s.gen().fetch_add(1, Ordering::AcqRel);
        s.seg.reset();
        s.set_name(tag.as_bytes());
        s.set_ident(ident);
        s.owner.store(loaded.owner, Ordering::Relaxed);
        s.want.store(0, Ordering::Relaxed);
        s.err_code.store(code::OK, Ordering::Relaxed);
        s.locked.store(0, Ordering::Relaxed);
        // after the generation's bump: a batch that reads this step checks the generation next
        s.cur_step.store(step, Ordering::Release);
        s.last_alloc_ms.store(0, Ordering::Relaxed);
        s.rate_bits.store(0f64.to_bits(), Ordering::Relaxed);
        s.rate_total.store(0, Ordering::Relaxed);
        s.rate_ms.store(now, Ordering::Relaxed);
        s.ord_total.store(0, Ordering::Relaxed);
        s.active_ms.store(now, Ordering::Relaxed);
        s.waits.store(0, Ordering::Relaxed);
        s.ord.reset();
        s.ord_want.store(0, Ordering::Relaxed);
        s.ord_want_period.store(i64::MIN, Ordering::Relaxed);
        s.ord_err_code.store(code::OK, Ordering::Relaxed);
        s.ord_locked.store(0, Ordering::Relaxed);
        s.ord_waits.store(0, Ordering::Relaxed);
        // order numbers start at one number a block (a key's stored step is its values', a
        // tag's its segments'): an eviction, a restart or a drop loses at most what the
        // block grew to since the slot was loaded, never a tenth of the period
        s.ord_cur_step.store(1, Ordering::Relaxed);
        s.ord_last_ms.store(0, Ordering::Relaxed);
        s.tpl.set_state(shmem::TPL_UNKNOWN);
        s.key_set.store(0, Ordering::Relaxed);
        s.opaque_from.store(0, Ordering::Relaxed);
        let gen = s.gen().load(Ordering::Acquire);
        s.state.store(shmem::SLOT_ACTIVE, Ordering::Release);
        shmem::index_insert(h, idx);
        Err((idx, gen, evicted))
    });
    let (idx, gen, evicted) = match evicted {
        Ok((idx, gen)) => return (idx, gen, false),
        Err(assigned) => assigned,
    };
    if let Some((name, idle_ms)) = evicted {
        h.evictions.fetch_add(1, Ordering::Relaxed);
        h.stats.evictions.fetch_add(1, Ordering::Relaxed);
        if idle_ms < 1000 && h.busy_evictions.fetch_add(1, Ordering::Relaxed).is_multiple_of(1000) {
            // tags in use do not fit: each eviction is a round trip and a gap
            log!(
                "pg_seqgen allocator: tag \"{}\" (used {idle_ms} ms ago) gave its slot to tag \"{}\": more tags are in use than seqgen.max_tags ({}) holds; raise it",
                shmem::shown_name(name),
                shmem::shown_name(tag.to_string()),
                h.max_tags
            );
        }
    }
    (idx, gen, true)
}

/// How many slots the eviction looks at (from a moving hand, like Redis's sampled LRU): the
/// least recently used of them goes.
const EVICTION_SAMPLE: usize = 32;

/// The slot to evict: of `EVICTION_SAMPLE` slots after the hand, first one of the same owner
/// as the tag that needs a slot (a role's churn of its own tags and keys evicts its own slots,
/// not another role's), then one without undrawn order numbers and not used within the last
/// second (an eviction loses what is left of a slot's order block, out of a period's limited
/// capacity; a new slot has not been drawn from yet), then the one unused longest. Caller holds `dir_lock` exclusive and every slot is active.
fn least_recently_used(h: &'static Header, now: i64, owner: u32) -> usize {
    let slots = shmem::all_slots(h);
    let start = h.evict_hand.fetch_add(EVICTION_SAMPLE as u32, Ordering::Relaxed) as usize;
    (start..start + EVICTION_SAMPLE.min(slots.len()))
        .map(|i| i % slots.len())
        .min_by_key(|&i| {
            let s = &slots[i];
            let other_owner = s.owner.load(Ordering::Relaxed) != owner;
            let live_block = shmem::undrawn(&s.ord.snapshot()) > 0;
            // a slot loaded (or used) within the last second is kept as well: two loaders of one
            // owner must not evict each other's new slots before their first draw
            let active = s.active_ms.load(Ordering::Relaxed).min(now);
            (other_owner, live_block || now - active < 1000, active)
        })
        .unwrap_or(0)
}

/// Once a second: each slot's rate, and whether it served a call since the last look.
pub(crate) fn update_rates(h: &'static Header, now: i64) {
    for s in shmem::slots(h) {
        if s.state.load(Ordering::Acquire) != shmem::SLOT_ACTIVE {
            continue;
        }
        let total = s.seg.snapshot().total_used;
        let ord_total = s.ord.snapshot().total_used;
        let prev_total = s.rate_total.swap(total, Ordering::Relaxed);
        if prev_total != total || s.ord_total.swap(ord_total, Ordering::Relaxed) != ord_total {
            s.active_ms.store(now, Ordering::Relaxed);
        }
        let prev_ms = s.rate_ms.swap(now, Ordering::Relaxed);
        if now > prev_ms {
            let rate = total.saturating_sub(prev_total) as f64 * 1000.0 / (now - prev_ms) as f64;
            s.rate_bits.store(rate.to_bits(), Ordering::Relaxed);
        }
    }
}
