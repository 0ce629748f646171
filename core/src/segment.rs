//! The lock-free, double-buffered segment cursor.
//!
//! A [`SegmentBuffer`] hands out the values of reserved segments (`[start, start + len)`)
//! to any number of concurrent callers with one atomic increment, and switches to the
//! prefetched next segment with one compare-and-swap. It lives in PostgreSQL shared memory
//! (it is `#[repr(C)]`, contains only atomics and needs no initialisation beyond
//! [`SegmentBuffer::reset`]), but nothing here knows about PostgreSQL, so it is tested with
//! plain threads.
//!
//! # Layout
//!
//! * `cursor`: one 64-bit word, `epoch << 32 | offset`. `epoch` numbers the segments this
//!   buffer has published (wrapping at 2^32); `offset` is the next unclaimed position in the
//!   segment of that epoch. A draw is `fetch_add(1)`: whoever gets `(e, o)` owns position `o`
//!   of segment `e`, and nobody else can ever get it.
//! * `entries`: a ring of [`RING`] published segments, each tagged with its epoch. The
//!   segment of epoch `e` lives in `entries[e % RING]`. Entries are read with a seqlock: a
//!   reader that finds the entry rewritten for a newer epoch gives up its claim (a gap, never a
//!   duplicate).
//! * `published`: the newest published epoch. There is at most one segment published ahead
//!   of the cursor (the double buffer), so the entries of the current and the previous epoch
//!   are never rewritten while the cursor is on the current one.
//!
//! # Writers
//!
//! [`SegmentBuffer::publish`] and [`SegmentBuffer::reset`] must only ever be called by one
//! process at a time (in pg_seqgen: the background worker). Draws, range claims and switches
//! may be called by anyone, concurrently.

use std::sync::atomic::{fence, AtomicI64, AtomicU64, Ordering};

/// Number of ring entries. Two would do for the double buffer; four lets a reader that was
/// descheduled across a segment switch still finish its claim instead of giving it up.
pub const RING: usize = 4;

/// The longest segment a buffer accepts. Offsets are 32 bits wide; keeping segments below
/// 2^31 leaves 2^31 of headroom for the bounded overshoot of concurrent `fetch_add`s past the
/// end of an exhausted segment: a draw increments the cursor only after seeing an unclaimed
/// offset, so the overshoot is at most one per concurrent caller, however often callers retry
/// on an exhausted segment. The offset therefore never carries into the epoch.
pub const MAX_SEGMENT_LEN: u64 = (1 << 31) - 1;

const OFFSET_BITS: u32 = 32;
const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;
/// Marks an entry that holds no segment, or one that is being rewritten.
const INVALID: u64 = u64::MAX;

#[inline]
fn pack(epoch: u32, offset: u64) -> u64 {
    ((epoch as u64) << OFFSET_BITS) | (offset & OFFSET_MASK)
}

#[inline]
fn unpack(word: u64) -> (u32, u64) {
    ((word >> OFFSET_BITS) as u32, word & OFFSET_MASK)
}

/// One published segment as a reader sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// First value of the segment.
    pub start: i64,
    /// Number of values in the segment.
    pub len: u64,
    /// Offset whose claimer asks for the next segment to be prefetched.
    pub trigger: u64,
    /// A caller-defined tag carried with the segment (order numbers store their period here).
    pub period: i64,
}

#[repr(C)]
struct Entry {
    epoch: AtomicU64,
    start: AtomicI64,
    len: AtomicU64,
    trigger: AtomicU64,
    period: AtomicI64,
}

impl Entry {
    const fn empty() -> Self {
        Entry {
            epoch: AtomicU64::new(INVALID),
            start: AtomicI64::new(0),
            len: AtomicU64::new(0),
            trigger: AtomicU64::new(u64::MAX),
            period: AtomicI64::new(0),
        }
    }

    /// Seqlock write. Single writer only.
    fn write(&self, epoch: u32, seg: &Segment) {
        self.epoch.store(INVALID, Ordering::Relaxed);
        fence(Ordering::Release);
        self.start.store(seg.start, Ordering::Relaxed);
        self.len.store(seg.len, Ordering::Relaxed);
        self.trigger.store(seg.trigger, Ordering::Relaxed);
        self.period.store(seg.period, Ordering::Relaxed);
        self.epoch.store(epoch as u64, Ordering::Release);
    }

    /// Seqlock read: the segment stored for `epoch`, or `None` when the entry holds another
    /// epoch (or is being rewritten).
    #[inline]
    fn read(&self, epoch: u32) -> Option<Segment> {
        let before = self.epoch.load(Ordering::Acquire);
        if before != epoch as u64 {
            return None;
        }
        let seg = Segment {
            start: self.start.load(Ordering::Relaxed),
            len: self.len.load(Ordering::Relaxed),
            trigger: self.trigger.load(Ordering::Relaxed),
            period: self.period.load(Ordering::Relaxed),
        };
        fence(Ordering::Acquire);
        if self.epoch.load(Ordering::Relaxed) != before {
            return None;
        }
        Some(seg)
    }
}

/// A caller's copy of the segment of one epoch, for [`SegmentBuffer::draw_hinted`].
/// (40 bytes: callers keep one per tag, so it is laid out flat rather than as an `Option`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hint {
    seg: Segment,
    epoch: u32,
    valid: bool,
    /// Set by a draw that read a new segment into the hint; the caller clears it.
    pub refreshed: bool,
}

impl Default for Hint {
    fn default() -> Self {
        Hint { seg: Segment { start: 0, len: 0, trigger: 0, period: 0 }, epoch: 0, valid: false, refreshed: false }
    }
}

impl Hint {
    #[inline]
    fn of(&self, epoch: u32) -> Option<Segment> {
        (self.valid && self.epoch == epoch).then_some(self.seg)
    }

    /// The `period` of the segment the hint holds, if it holds one.
    #[inline]
    pub fn period(&self) -> Option<i64> {
        self.valid.then_some(self.seg.period)
    }
}

/// The result of one draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Draw {
    /// A value that belongs to this caller alone.
    Value {
        value: i64,
        /// The segment's period tag.
        period: i64,
        /// This claim crossed the prefetch threshold: ask for the next segment now.
        prefetch: bool,
        /// The epoch the value was claimed in (to switch away from a segment whose period is
        /// over before it is used up).
        epoch: u32,
    },
    /// The segment of `epoch` is used up; switch (or wait for the next segment) and retry.
    Exhausted { epoch: u32 },
    /// The claim landed in a segment whose entry was already recycled (the caller was
    /// descheduled across several switches). The position is skipped; retry.
    Lost,
}

/// The result of claiming a range (for batches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    Range {
        start: i64,
        len: u64,
        period: i64,
    },
    Exhausted {
        epoch: u32,
    },
    /// The cursor moved on while the claim looked at it (or the buffer is being reset);
    /// nothing was claimed. The caller checks for interrupts and retries.
    Lost,
}

/// A consistent-enough view for status reporting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    pub current: Option<Segment>,
    /// Values already claimed from the current segment (capped at its length).
    pub used: u64,
    pub next: Option<Segment>,
    /// Values handed out from segments that were switched away from, plus `used`.
    pub total_used: u64,
    /// Values of segments switched away from before they were used up (an order-number block
    /// whose period ended): never handed out.
    pub skipped: u64,
}

impl Snapshot {
    /// The value the next draw takes and the end of its segment: from the current segment, or
    /// once it is used up, from the start of the one fetched after it; `None` when neither has
    /// a value left.
    pub fn next_value(&self) -> Option<(i64, i64)> {
        let (seg, used) = match self.current.filter(|c| self.used < c.len) {
            Some(c) => (c, self.used),
            None => (self.next?, 0),
        };
        Some((seg.start + used as i64, seg.start + seg.len as i64 - 1))
    }
}

/// Why [`SegmentBuffer::publish`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PublishError {
    #[error("a next segment is already published and not yet in use")]
    NextAlreadyPublished,
    #[error("segment length {0} is outside 1..={MAX_SEGMENT_LEN}")]
    BadLength(u64),
}

/// See the module documentation.
#[repr(C, align(64))]
pub struct SegmentBuffer {
    cursor: AtomicU64,
    /// A word of the owner's, on the cursor's cache line: something the owner checks after
    /// every draw costs no extra cache miss here (pg_seqgen keeps its slot's generation).
    /// The buffer itself never touches it.
    pub owner_word: AtomicU64,
    _pad: [u8; 48],
    entries: [Entry; RING],
    published: AtomicU64,
    /// Values handed out from the segments switched away from (for rates and status), and
    /// the values they still had (see [`Snapshot::skipped`]).
    retired: AtomicU64,
    skipped: AtomicU64,
    /// Switches begun and ended (a switch moves the cursor, then adds to `retired` and
    /// `skipped`): a [`snapshot`](Self::snapshot) taken while one is under way is taken again,
    /// so that a segment is never counted twice or not at all.
    switches_begun: AtomicU64,
    switches_ended: AtomicU64,
}

impl Default for SegmentBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl SegmentBuffer {
    /// A buffer whose current segment (epoch 0) is empty.
    pub const fn new() -> Self {
        // epoch 0 is an empty segment: entry 0 holds it.
        let mut epoch0 = Entry::empty();
        epoch0.epoch = AtomicU64::new(0);
        SegmentBuffer {
            cursor: AtomicU64::new(0),
            owner_word: AtomicU64::new(0),
            _pad: [0; 48],
            entries: [epoch0, Entry::empty(), Entry::empty(), Entry::empty()],
            published: AtomicU64::new(0),
            retired: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            switches_begun: AtomicU64::new(0),
            switches_ended: AtomicU64::new(0),
        }
    }

    /// Forget every segment and start again from an empty epoch 0. Writer only; callers of
    /// [`draw`](Self::draw) that may still hold claims must be told to discard them by other
    /// means (pg_seqgen bumps the slot's generation first).
    pub fn reset(&self) {
        for e in &self.entries {
            e.epoch.store(INVALID, Ordering::Relaxed);
        }
        fence(Ordering::Release);
        self.entries[0].write(0, &Segment { start: 0, len: 0, trigger: u64::MAX, period: 0 });
        self.published.store(0, Ordering::Release);
        self.retired.store(0, Ordering::Relaxed);
        self.skipped.store(0, Ordering::Relaxed);
        self.cursor.store(pack(0, 0), Ordering::Release);
    }

    /// Claim one value. Wait-free: a load, one `fetch_add` and a seqlock read. A segment
    /// already seen exhausted is reported without incrementing the cursor, so callers that
    /// retry on an exhausted segment (waiting for the next one) cannot push the offset
    /// towards the epoch bits.
    #[inline]
    pub fn draw(&self) -> Draw {
        let (seen_epoch, seen_offset) = unpack(self.cursor.load(Ordering::Acquire));
        if let Some(seg) = self.entries[seen_epoch as usize % RING].read(seen_epoch) {
            if seen_offset >= seg.len {
                return Draw::Exhausted { epoch: seen_epoch };
            }
        }
        let (epoch, offset) = unpack(self.cursor.fetch_add(1, Ordering::Acquire));
        match self.entries[epoch as usize % RING].read(epoch) {
            None => Draw::Lost,
            Some(seg) if offset < seg.len => Draw::Value {
                value: seg.start + offset as i64,
                period: seg.period,
                prefetch: offset == seg.trigger,
                epoch,
            },
            Some(_) => Draw::Exhausted { epoch },
        }
    }

    /// [`draw`](Self::draw) with a caller-kept copy of the segment it last drew from: while the
    /// cursor stays on that epoch the entry is not read again, so a draw touches only the
    /// cursor's cache line. The copy is exact: the entry of an epoch is written once, when it
    /// is published, and rewritten only for the epoch `RING` later, which the cursor reaches
    /// only after leaving this one. A hint belongs to one incarnation of the buffer: after
    /// [`reset`](Self::reset) the epochs start again, so the caller must drop its hints (pg_seqgen
    /// keeps them with the slot's generation, which a reset always follows a change of).
    /// `hint.refreshed` tells whether the draw read a new segment into the hint (so the caller
    /// keeps it only then).
    #[inline]
    pub fn draw_hinted(&self, hint: &mut Hint) -> Draw {
        let segment = |epoch: u32, hint: &mut Hint| match hint.of(epoch) {
            Some(seg) => Some(seg),
            None => {
                let seg = self.entries[epoch as usize % RING].read(epoch)?;
                *hint = Hint { seg, epoch, valid: true, refreshed: true };
                Some(seg)
            }
        };
        let (seen_epoch, seen_offset) = unpack(self.cursor.load(Ordering::Acquire));
        if let Some(seg) = segment(seen_epoch, hint) {
            if seen_offset >= seg.len {
                return Draw::Exhausted { epoch: seen_epoch };
            }
        }
        let (epoch, offset) = unpack(self.cursor.fetch_add(1, Ordering::Acquire));
        match segment(epoch, hint) {
            None => Draw::Lost,
            Some(seg) if offset < seg.len => Draw::Value {
                value: seg.start + offset as i64,
                period: seg.period,
                prefetch: offset == seg.trigger,
                epoch,
            },
            Some(_) => Draw::Exhausted { epoch },
        }
    }

    /// Claim up to `max` consecutive values from the current segment (compare-and-swap, so it
    /// never overshoots). One attempt: `Lost` when another caller moved the cursor first.
    pub fn claim_range(&self, max: u64) -> Claim {
        debug_assert!(max > 0);
        let word = self.cursor.load(Ordering::Acquire);
        let (epoch, offset) = unpack(word);
        let Some(seg) = self.entries[epoch as usize % RING].read(epoch) else {
            return Claim::Lost;
        };
        if offset >= seg.len {
            return Claim::Exhausted { epoch };
        }
        let take = max.min(seg.len - offset);
        match self.cursor.compare_exchange(word, pack(epoch, offset + take), Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => Claim::Range { start: seg.start + offset as i64, len: take, period: seg.period },
            Err(_) => Claim::Lost,
        }
    }

    /// Is the segment after `epoch` published?
    #[inline]
    pub fn next_ready(&self, epoch: u32) -> bool {
        self.published.load(Ordering::Acquire) as u32 == epoch.wrapping_add(1)
    }

    /// Is a segment waiting after the current one?
    pub fn has_next(&self) -> bool {
        self.next_ready(self.position().0)
    }

    /// The segment published after `epoch`, if any.
    pub fn peek_next(&self, epoch: u32) -> Option<Segment> {
        let next = epoch.wrapping_add(1);
        if !self.next_ready(epoch) {
            return None;
        }
        self.entries[next as usize % RING].read(next)
    }

    /// Move the cursor from `epoch` to the next published segment. Returns `true` when the
    /// cursor is no longer on `epoch` (this call or another moved it), `false` when there is
    /// no next segment yet. Callers switch when the current segment is exhausted (or, for
    /// order numbers, when its period is over).
    pub fn switch_from(&self, epoch: u32) -> bool {
        self.switches_begun.fetch_add(1, Ordering::AcqRel);
        let switched = self.switch_counted(epoch);
        self.switches_ended.fetch_add(1, Ordering::Release);
        switched
    }

    /// [`switch_from`](Self::switch_from) between its two counts.
    fn switch_counted(&self, epoch: u32) -> bool {
        loop {
            let word = self.cursor.load(Ordering::Acquire);
            let (current, offset) = unpack(word);
            if current != epoch {
                return true;
            }
            if !self.next_ready(epoch) {
                return false;
            }
            let next = epoch.wrapping_add(1);
            if self.cursor.compare_exchange(word, pack(next, 0), Ordering::AcqRel, Ordering::Acquire).is_ok() {
                if let Some(seg) = self.entries[epoch as usize % RING].read(epoch) {
                    // (the cursor passes the length when draws race at the end)
                    let used = offset.min(seg.len);
                    self.retired.fetch_add(used, Ordering::Relaxed);
                    self.skipped.fetch_add(seg.len - used, Ordering::Relaxed);
                }
                return true;
            }
        }
    }

    /// Publish the next segment. Writer only. Fails when a next segment is already waiting.
    pub fn publish(&self, seg: Segment) -> Result<u32, PublishError> {
        if seg.len == 0 || seg.len > MAX_SEGMENT_LEN {
            return Err(PublishError::BadLength(seg.len));
        }
        let published = self.published.load(Ordering::Acquire) as u32;
        let (current, _) = unpack(self.cursor.load(Ordering::Acquire));
        if published != current {
            return Err(PublishError::NextAlreadyPublished);
        }
        let next = published.wrapping_add(1);
        let trigger = seg.trigger.min(seg.len - 1);
        self.entries[next as usize % RING].write(next, &Segment { trigger, ..seg });
        self.published.store(next as u64, Ordering::Release);
        Ok(next)
    }

    /// The epoch the cursor is on and how far into its segment it is (may exceed the length).
    pub fn position(&self) -> (u32, u64) {
        unpack(self.cursor.load(Ordering::Acquire))
    }

    /// Does the buffer want a prefetch? True when nothing is published ahead and the current
    /// (real) segment is past its trigger or exhausted. A buffer that never had a segment has
    /// no demand yet: its first segment is asked for explicitly. Used by the worker's sweep.
    pub fn wants_next(&self) -> bool {
        let (epoch, offset) = self.position();
        if self.next_ready(epoch) {
            return false;
        }
        match self.entries[epoch as usize % RING].read(epoch) {
            Some(seg) => seg.len > 0 && (offset > seg.trigger || offset >= seg.len),
            None => false,
        }
    }

    /// Status view: not atomic with draws, but never in the middle of a switch (taken again
    /// while one is under way, a bounded number of times), so that what the segments switched
    /// away from handed out is counted once: in `total_used` or in the current segment.
    pub fn snapshot(&self) -> Snapshot {
        for _ in 0..1000 {
            let ended = self.switches_ended.load(Ordering::Acquire);
            if self.switches_begun.load(Ordering::Acquire) == ended {
                let s = self.snapshot_once();
                if self.switches_begun.load(Ordering::Acquire) == ended {
                    return s;
                }
            }
            std::hint::spin_loop();
        }
        self.snapshot_once()
    }

    fn snapshot_once(&self) -> Snapshot {
        let (epoch, offset) = self.position();
        let current = self.entries[epoch as usize % RING].read(epoch).filter(|s| s.len > 0);
        let used = current.map_or(0, |s| offset.min(s.len));
        Snapshot {
            current,
            used,
            next: self.peek_next(epoch),
            total_used: self.retired.load(Ordering::Relaxed) + used,
            skipped: self.skipped.load(Ordering::Relaxed),
        }
    }
}

/// The offset at which a segment of `len` values asks for its successor, for a threshold in
/// percent of the segment (0 = at once, 100 = only when exhausted).
pub fn trigger_offset(len: u64, threshold_percent: u32) -> u64 {
    let pct = threshold_percent.min(100) as u128;
    let t = (len as u128 * pct).div_ceil(100) as u64;
    t.min(len.saturating_sub(1))
}

/// Values drawn one at a time, kept as runs of consecutive values `(start, len)`: a batch that
/// draws its rest value by value holds a few runs, not an entry per value.
#[derive(Debug, Default)]
pub struct Runs(Vec<(i64, i64)>);

impl Runs {
    /// Append `v`: it extends the last run when it is that run's next value.
    pub fn push(&mut self, v: i64) {
        match self.0.last_mut() {
            // a run ending at i64::MAX has no next value (`checked_add` is None)
            Some((start, len)) if start.checked_add(*len) == Some(v) => *len += 1,
            _ => self.0.push((v, 1)),
        }
    }

    /// The runs in the order their values were pushed.
    pub fn into_ranges(self) -> Vec<(i64, i64)> {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    fn seg(start: i64, len: u64) -> Segment {
        Segment { start, len, trigger: trigger_offset(len, 10), period: 0 }
    }

    #[test]
    fn the_next_value_comes_from_the_segment_fetched_once_the_current_one_is_used_up() {
        let snap = |current, used, next| Snapshot { current, used, next, total_used: used, skipped: 0 };
        assert_eq!(snap(Some(seg(5, 2)), 1, None).next_value(), Some((6, 6)));
        assert_eq!(snap(Some(seg(5, 2)), 2, None).next_value(), None);
        assert_eq!(snap(Some(seg(5, 2)), 2, Some(seg(7, 4))).next_value(), Some((7, 10)));
        assert_eq!(snap(Some(seg(5, 2)), 0, Some(seg(7, 4))).next_value(), Some((5, 6)));
        assert_eq!(snap(None, 0, Some(seg(7, 4))).next_value(), Some((7, 10)));
        assert_eq!(snap(None, 0, None).next_value(), None);
    }

    #[test]
    fn a_fresh_hint_matches_no_epoch_and_stays_small() {
        let h = Hint::default();
        for e in [0, 1, u32::MAX] {
            assert_eq!(h.of(e), None);
        }
        // callers keep one per tag: it must stay flat (40 bytes)
        assert!(std::mem::size_of::<Hint>() <= 40, "{}", std::mem::size_of::<Hint>());
        // a hinted draw reads the published segment, then answers from the hint
        let b = SegmentBuffer::new();
        assert_eq!(b.publish(seg(100, 3)), Ok(1));
        assert!(b.switch_from(0));
        let mut h = Hint::default();
        assert!(matches!(b.draw_hinted(&mut h), Draw::Value { value: 100, .. }));
        assert!(h.refreshed && h.of(1) == Some(seg(100, 3)) && h.of(0).is_none());
        h.refreshed = false;
        assert!(matches!(b.draw_hinted(&mut h), Draw::Value { value: 101, .. }));
        assert!(!h.refreshed);
    }

    #[test]
    fn new_buffer_is_exhausted_until_published() {
        let b = SegmentBuffer::new();
        assert_eq!(b.draw(), Draw::Exhausted { epoch: 0 });
        assert!(!b.switch_from(0));
        assert_eq!(b.publish(seg(100, 3)), Ok(1));
        assert!(b.switch_from(0));
        let vals: Vec<_> = (0..3)
            .map(|_| match b.draw() {
                Draw::Value { value, .. } => value,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(vals, vec![100, 101, 102]);
        assert_eq!(b.draw(), Draw::Exhausted { epoch: 1 });
    }

    #[test]
    fn only_one_segment_ahead() {
        let b = SegmentBuffer::new();
        b.publish(seg(1, 10)).unwrap();
        assert_eq!(b.publish(seg(11, 10)), Err(PublishError::NextAlreadyPublished));
        assert!(b.switch_from(0));
        assert_eq!(b.publish(seg(11, 10)), Ok(2));
        assert_eq!(b.publish(seg(21, 10)), Err(PublishError::NextAlreadyPublished));
    }

    #[test]
    fn rejects_bad_lengths() {
        let b = SegmentBuffer::new();
        assert_eq!(b.publish(seg(1, 0)), Err(PublishError::BadLength(0)));
        assert_eq!(b.publish(seg(1, MAX_SEGMENT_LEN + 1)), Err(PublishError::BadLength(MAX_SEGMENT_LEN + 1)));
    }

    #[test]
    fn prefetch_flag_fires_once_at_the_trigger() {
        let b = SegmentBuffer::new();
        b.publish(seg(1, 100)).unwrap();
        b.switch_from(0);
        let mut fired = vec![];
        for _ in 0..100 {
            if let Draw::Value { value, prefetch: true, .. } = b.draw() {
                fired.push(value);
            }
        }
        assert_eq!(fired, vec![11]); // offset 10 of 100 = 10% used
    }

    #[test]
    fn wants_next_only_after_real_use() {
        let b = SegmentBuffer::new();
        assert!(!b.wants_next(), "a fresh buffer has no demand");
        b.draw();
        assert!(!b.wants_next(), "nor after a draw that found nothing");
        b.publish(seg(1, 100)).unwrap();
        assert!(!b.wants_next(), "a segment is waiting");
        b.switch_from(0);
        for _ in 0..10 {
            b.draw();
        }
        assert!(!b.wants_next(), "below the 10% trigger");
        b.draw();
        assert!(b.wants_next(), "past the trigger");
        b.publish(seg(101, 100)).unwrap();
        assert!(!b.wants_next(), "one ahead at most");
    }

    #[test]
    fn trigger_offsets() {
        assert_eq!(trigger_offset(100, 10), 10);
        assert_eq!(trigger_offset(100, 0), 0);
        assert_eq!(trigger_offset(100, 100), 99);
        assert_eq!(trigger_offset(1, 10), 0);
        assert_eq!(trigger_offset(7, 10), 1);
        assert_eq!(trigger_offset(MAX_SEGMENT_LEN, 50), MAX_SEGMENT_LEN.div_ceil(2));
    }

    #[test]
    fn claim_range_takes_what_is_left_and_never_overshoots() {
        let b = SegmentBuffer::new();
        b.publish(seg(1, 10)).unwrap();
        b.switch_from(0);
        assert_eq!(b.claim_range(4), Claim::Range { start: 1, len: 4, period: 0 });
        assert!(matches!(b.draw(), Draw::Value { value: 5, .. }));
        assert_eq!(b.claim_range(100), Claim::Range { start: 6, len: 5, period: 0 });
        assert_eq!(b.claim_range(1), Claim::Exhausted { epoch: 1 });
    }

    /// 0.1.0 added one to the offset for every call on an exhausted segment, so after about
    /// 2^32 calls waiting for the next segment the offset carried into the epoch and wedged
    /// the buffer. Exhausted draws must leave the cursor alone.
    #[test]
    fn draws_on_an_exhausted_segment_do_not_move_the_cursor() {
        let b = SegmentBuffer::new();
        b.publish(seg(1, 2)).unwrap();
        b.switch_from(0);
        b.draw();
        b.draw();
        let before = b.position();
        for _ in 0..100_000 {
            assert_eq!(b.draw(), Draw::Exhausted { epoch: 1 });
        }
        assert_eq!(b.position(), before, "an exhausted draw moved the cursor");
        // an offset just below the carry would wrap into the epoch if draws kept adding
        b.cursor.store(pack(1, OFFSET_MASK), Ordering::Release);
        for _ in 0..10 {
            assert_eq!(b.draw(), Draw::Exhausted { epoch: 1 });
        }
        assert_eq!(b.position(), (1, OFFSET_MASK));
        b.publish(seg(3, 2)).unwrap();
        assert!(b.switch_from(1));
        assert!(matches!(b.draw(), Draw::Value { value: 3, .. }));
    }

    #[test]
    fn claim_range_reports_a_lost_race_instead_of_spinning() {
        let b = SegmentBuffer::new();
        b.publish(seg(1, 10)).unwrap();
        b.switch_from(0);
        // an entry being rewritten (as during reset) cannot be read: the claim gives up
        b.entries[1].epoch.store(INVALID, Ordering::Release);
        assert_eq!(b.claim_range(3), Claim::Lost);
    }

    #[test]
    fn reset_starts_over() {
        let b = SegmentBuffer::new();
        b.publish(seg(1, 10)).unwrap();
        b.switch_from(0);
        b.draw();
        b.reset();
        assert_eq!(b.draw(), Draw::Exhausted { epoch: 0 });
        assert_eq!(b.publish(seg(500, 5)), Ok(1));
        b.switch_from(0);
        assert!(matches!(b.draw(), Draw::Value { value: 500, .. }));
    }

    #[test]
    fn snapshot_reports_usage() {
        let b = SegmentBuffer::new();
        assert_eq!(b.snapshot().current, None);
        b.publish(seg(1, 10)).unwrap();
        b.switch_from(0);
        for _ in 0..3 {
            b.draw();
        }
        b.publish(seg(11, 10)).unwrap();
        let s = b.snapshot();
        assert_eq!(s.current.unwrap().start, 1);
        assert_eq!(s.used, 3);
        assert_eq!(s.next.unwrap().start, 11);
        assert_eq!(s.total_used, 3);
        for _ in 0..10 {
            b.draw();
        }
        b.switch_from(1);
        b.draw();
        assert_eq!(b.snapshot().total_used, 11);
        assert_eq!(b.snapshot().skipped, 0);
        // a segment left before it is used up (an order-number block whose period ended): what
        // it still had is skipped, not used
        b.publish(seg(21, 10)).unwrap();
        b.switch_from(2);
        let s = b.snapshot();
        assert_eq!((s.total_used, s.skipped), (11, 9));
        b.reset();
        assert_eq!((b.snapshot().total_used, b.snapshot().skipped), (0, 0));
    }

    /// Many threads draw (single values and ranges) while a publisher thread keeps feeding
    /// small segments, some contiguous and some with gaps, exactly as the worker does. Every
    /// value handed out must be unique and inside a published segment.
    #[test]
    fn concurrent_hinted_draws_are_unique() {
        // the same as below with every worker drawing through a hint of its own
        concurrent_draws(true);
    }

    #[test]
    fn concurrent_draws_are_unique() {
        concurrent_draws(false);
    }

    fn concurrent_draws(hinted: bool) {
        const THREADS: usize = 8;
        const PER_THREAD: usize = 60_000;
        let b = Arc::new(SegmentBuffer::new());
        let stop = Arc::new(AtomicBool::new(false));
        let publisher = {
            let (b, stop) = (b.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut next_start = 1i64;
                let mut published = vec![];
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if b.wants_next() || b.position() == (0, 0) && !b.next_ready(0) {
                        let len = 1 + (n % 13) * 7; // small, varied segments: constant switching
                        let s = Segment { start: next_start, len, trigger: trigger_offset(len, 10), period: 0 };
                        if b.publish(s).is_ok() {
                            published.push((next_start, len));
                            next_start += len as i64 + (n % 3) as i64; // sometimes a gap
                            n += 1;
                        }
                    } else {
                        std::thread::yield_now();
                    }
                }
                published
            })
        };
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let b = b.clone();
                std::thread::spawn(move || {
                    let mut got = Vec::with_capacity(PER_THREAD + 64);
                    let mut hint = Hint::default();
                    // a liveness bound, not a speed target: a stuck cursor fails the test
                    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
                    while got.len() < PER_THREAD {
                        assert!(std::time::Instant::now() < deadline, "no progress: cursor stuck");
                        if t % 2 == 0 && got.len() % 5 == 0 {
                            match b.claim_range(3) {
                                Claim::Range { start, len, .. } => got.extend(start..start + len as i64),
                                Claim::Exhausted { epoch } => {
                                    if !b.switch_from(epoch) {
                                        std::thread::yield_now();
                                    }
                                }
                                Claim::Lost => {}
                            }
                            continue;
                        }
                        let d = if hinted { b.draw_hinted(&mut hint) } else { b.draw() };
                        match d {
                            Draw::Value { value, .. } => got.push(value),
                            Draw::Exhausted { epoch } => {
                                if !b.switch_from(epoch) {
                                    std::thread::yield_now();
                                }
                            }
                            Draw::Lost => {}
                        }
                    }
                    got
                })
            })
            .collect();
        let mut all = HashSet::new();
        let mut count = 0usize;
        let mut values = vec![];
        for w in workers {
            for v in w.join().unwrap() {
                count += 1;
                values.push(v);
                assert!(all.insert(v), "value {v} handed out twice");
            }
        }
        stop.store(true, Ordering::Relaxed);
        let published = publisher.join().unwrap();
        assert_eq!(all.len(), count);
        assert!(count >= THREADS * PER_THREAD);
        // every value lies inside some published segment
        values.sort_unstable();
        let mut i = 0;
        for v in values {
            while i < published.len() && v >= published[i].0 + published[i].1 as i64 {
                i += 1;
            }
            assert!(i < published.len() && v >= published[i].0, "value {v} outside every segment");
        }
    }

    #[test]
    fn runs_end_at_the_top_of_bigint() {
        let mut r = Runs::default();
        for v in [i64::MAX - 1, i64::MAX, 5, 6, 8] {
            r.push(v);
        }
        assert_eq!(r.into_ranges(), vec![(i64::MAX - 1, 2), (5, 2), (8, 1)]);
    }

    proptest::proptest! {
        #[test]
        fn runs_give_back_every_value_in_order(vs in proptest::collection::vec(
            proptest::prop_oneof![0i64..50, (i64::MAX - 50)..=i64::MAX, proptest::num::i64::ANY], 0..200)) {
            let mut r = Runs::default();
            for &v in &vs {
                r.push(v);
            }
            let ranges = r.into_ranges();
            // maximal: no run continues the one before it
            for w in ranges.windows(2) {
                proptest::prop_assert_ne!(w[0].0.checked_add(w[0].1), Some(w[1].0));
            }
            // `start + i` for i < len, as seqgen_next_batch reads them out
            let back: Vec<i64> = ranges.iter().flat_map(|&(s, l)| (0..l).map(move |i| s + i)).collect();
            proptest::prop_assert_eq!(back, vs);
        }
    }
}
