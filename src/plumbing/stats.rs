//! Cumulative counters of a database's area (`seqgen_stats()`, `seqgen_stats_reset()`): what
//! the allocator reserved, what was taken from shared memory, the values lost and why, the
//! slots evicted, the waits for the allocator and the gapless row writes. Each is one relaxed
//! atomic add on a cold path (a segment published, a slot retired, a block dropped, a wait);
//! the draws themselves are not counted one by one: what each slot's segments handed out is
//! summed when the counters are read (`SegmentBuffer::snapshot().total_used`), and added to
//! `taken_retired` when the slot stops serving its tag. Counters start at zero when the server
//! starts (shared memory) and when the area is claimed for a database, like PostgreSQL's
//! statistics after a crash; `seqgen_stats_reset()` sets them to zero.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Why values reserved in shared memory were never handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lost {
    /// The slot was given to another tag (more tags in use than `seqgen.max_tags`).
    Eviction,
    /// The tag changed: dropped, restarted, advanced, its definition or template changed,
    /// re-created; or a segment reserved while it changed.
    Change,
    /// A session claimed values ahead (`seqgen.backend_block`) and did not use them.
    Session,
}

/// What the slots serving tags have handed out, and skipped (order numbers of a block whose
/// period ended), since each was loaded (`SegmentBuffer::snapshot`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SlotSums {
    pub taken: u64,
    pub skipped: u64,
}

#[repr(C)]
#[derive(Default)]
pub struct Stats {
    /// When the counters were last set to zero (ms since the Unix epoch).
    pub reset_ms: AtomicI64,
    /// Values handed out by slots that no longer serve their tag, and values a batch reserved
    /// for itself alone; a reset stores the live slots' totals then, negated, so that the sum
    /// with the live slots' totals starts at zero.
    pub taken_retired: AtomicI64,
    /// Order numbers of blocks whose period ended before they were drawn, by slots that no
    /// longer serve their tag (with the same correction at a reset).
    pub skipped_retired: AtomicI64,
    /// Segments and order-number blocks the allocator published, and the values in them.
    pub segments: AtomicU64,
    pub reserved: AtomicU64,
    pub lost_eviction: AtomicU64,
    pub lost_change: AtomicU64,
    pub lost_session: AtomicU64,
    pub evictions: AtomicU64,
    /// Times a call slept waiting for the allocator (a first load, a segment not ready yet, a
    /// free mailbox, an order block, a catalog row locked), how long in all and the longest
    /// (microseconds), and the waits that gave up at `seqgen.allocation_timeout`.
    pub waits: AtomicU64,
    pub wait_us: AtomicU64,
    pub longest_wait_us: AtomicU64,
    pub wait_timeouts: AtomicU64,
    /// Gapless numbers drawn (the counter row written in the drawing transaction), the time
    /// those writes took (a lock wait on a busy key included) and the longest, and those that
    /// gave up (55P03).
    pub gapless: AtomicU64,
    pub gapless_us: AtomicU64,
    pub longest_gapless_us: AtomicU64,
    pub gapless_timeouts: AtomicU64,
}

impl Stats {
    /// Every counter to zero; `live`: what the slots serving tags have handed out and skipped
    /// now (subtracted, so that those start at zero too).
    pub fn reset(&self, now_ms: i64, live: SlotSums) {
        for c in [
            &self.segments,
            &self.reserved,
            &self.lost_eviction,
            &self.lost_change,
            &self.lost_session,
            &self.evictions,
            &self.waits,
            &self.wait_us,
            &self.longest_wait_us,
            &self.wait_timeouts,
            &self.gapless,
            &self.gapless_us,
            &self.longest_gapless_us,
            &self.gapless_timeouts,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        self.taken_retired.store(-(live.taken.min(i64::MAX as u64) as i64), Ordering::Relaxed);
        self.skipped_retired.store(-(live.skipped.min(i64::MAX as u64) as i64), Ordering::Relaxed);
        self.reset_ms.store(now_ms, Ordering::Relaxed);
    }

    pub fn lose(&self, why: Lost, n: u64) {
        if n == 0 {
            return;
        }
        let c = match why {
            Lost::Eviction => &self.lost_eviction,
            Lost::Change => &self.lost_change,
            Lost::Session => &self.lost_session,
        };
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// Values taken from shared memory outside a slot's segments (a batch's own reservation),
    /// or by a slot that stops serving its tag.
    pub fn taken(&self, n: u64) {
        self.taken_retired.fetch_add(n.min(i64::MAX as u64) as i64, Ordering::Relaxed);
    }

    /// What a slot that stops serving its tag had handed out and skipped.
    pub fn retired(&self, sums: SlotSums) {
        self.taken(sums.taken);
        self.skipped_retired.fetch_add(sums.skipped.min(i64::MAX as u64) as i64, Ordering::Relaxed);
    }

    pub fn published(&self, len: u64) {
        self.segments.fetch_add(1, Ordering::Relaxed);
        self.reserved.fetch_add(len, Ordering::Relaxed);
    }

    /// A segment or block reserved but not published (one was already waiting, or its slot
    /// was retired meanwhile): a gap.
    pub fn unpublished(&self, len: u64) {
        self.reserved.fetch_add(len, Ordering::Relaxed);
        self.lose(Lost::Change, len);
    }

    /// A call slept `us` microseconds waiting for the allocator; `gave_up`: it timed out.
    pub fn waited(&self, us: u64, gave_up: bool) {
        self.waits.fetch_add(1, Ordering::Relaxed);
        self.wait_us.fetch_add(us, Ordering::Relaxed);
        self.longest_wait_us.fetch_max(us, Ordering::Relaxed);
        if gave_up {
            self.wait_timeouts.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A gapless counter write took `us` microseconds; `gave_up`: its lock wait ran out.
    pub fn gapless_drawn(&self, us: u64, gave_up: bool) {
        if gave_up {
            self.gapless_timeouts.fetch_add(1, Ordering::Relaxed);
        } else {
            self.gapless.fetch_add(1, Ordering::Relaxed);
        }
        self.gapless_us.fetch_add(us, Ordering::Relaxed);
        self.longest_gapless_us.fetch_max(us, Ordering::Relaxed);
    }
}
