//! Segment reservation arithmetic and Leaf's adaptive step.
//!
//! Leaf-segment sizes each new segment from how long the previous one lasted: a segment used
//! up in under 15 minutes doubles the next step (up to a maximum), one that lasted more than
//! 30 minutes halves it back toward the configured step. pg_seqgen applies the same rule per
//! tag, with all three numbers configurable.

use std::time::Duration;

use crate::segment::MAX_SEGMENT_LEN;

/// The adaptive-step rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepPolicy {
    /// Off: every segment has the configured step.
    pub enabled: bool,
    /// Upper bound for the adaptive step (never below the configured step).
    pub max_step: i64,
    /// A segment that lasted less than this doubles the next step.
    pub grow_below: Duration,
    /// A segment that lasted more than this halves the next step (not below the configured step).
    pub shrink_above: Duration,
}

impl Default for StepPolicy {
    fn default() -> Self {
        StepPolicy {
            enabled: true,
            max_step: 1_000_000,
            grow_below: Duration::from_secs(15 * 60),
            shrink_above: Duration::from_secs(30 * 60),
        }
    }
}

impl StepPolicy {
    /// The step of the next segment.
    ///
    /// * `current`: the step of the segment being replaced (the adaptive one);
    /// * `configured`: the tag's step in the catalog (the floor);
    /// * `lasted`: how long the previous segment lasted, `None` for a tag's first segment.
    pub fn next_step(&self, current: i64, configured: i64, lasted: Option<Duration>) -> i64 {
        let configured = configured.clamp(1, MAX_SEGMENT_LEN as i64);
        if !self.enabled {
            return configured;
        }
        let ceiling = self.max_step.clamp(configured, MAX_SEGMENT_LEN as i64);
        let current = current.clamp(configured, ceiling);
        match lasted {
            None => current,
            Some(d) if d < self.grow_below => current.saturating_mul(2).min(ceiling),
            Some(d) if d > self.shrink_above => (current / 2).max(configured),
            Some(_) => current,
        }
    }
}

/// A reserved segment: the values `start ..= end`; the catalog's new `max_id` is `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reservation {
    pub start: i64,
    pub end: i64,
}

impl Reservation {
    pub fn len(&self) -> u64 {
        (self.end as i128 - self.start as i128 + 1) as u64
    }

    pub fn is_empty(&self) -> bool {
        self.end < self.start
    }
}

/// The bigint range is used up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the bigint range is exhausted (max_id is {max_id})")]
pub struct Exhausted {
    pub max_id: i64,
}

/// Reserve the next `step` values above `max_id` (fewer when the bigint range ends first).
pub fn reserve(max_id: i64, step: i64) -> Result<Reservation, Exhausted> {
    reserve_up_to(max_id, step, i64::MAX)
}

/// Like [`reserve`], for counters that may not exceed `limit` (a node-interleaved tag's
/// counter is shifted left by its node bits, so it must stay below `i64::MAX >> bits`).
pub fn reserve_up_to(max_id: i64, step: i64, limit: i64) -> Result<Reservation, Exhausted> {
    debug_assert!(step > 0);
    if max_id >= limit {
        return Err(Exhausted { max_id });
    }
    let start = max_id + 1;
    let end = max_id.saturating_add(step.max(1)).min(limit);
    Ok(Reservation { start, end })
}

/// The most node bits a tag may interleave.
pub const MAX_NODE_BITS: u32 = 16;

/// A value of a tag shared by several independent servers: the counter shifted left by
/// `node_bits`, the server's node id in the low bits (seed 001's "shift left by n and OR in the
/// generator's index"). Servers with distinct node ids can never produce the same value.
#[inline]
pub fn interleave(counter: i64, node_bits: u32, node: u32) -> i64 {
    (counter << node_bits) | node as i64
}

/// The inverse of [`interleave`]: `(counter, node)`.
pub fn split(value: i64, node_bits: u32) -> (i64, u32) {
    (value >> node_bits, (value & ((1i64 << node_bits) - 1)) as u32)
}

/// A backend's block of one tag: the values it claimed from the tag's shared segment at once,
/// when it draws that tag often from a cache of many tags (as a sequence's `CACHE` does), so
/// most draws touch no shared memory. Times are a backend's statement start (microseconds):
/// a clock that costs nothing per row, moving between statements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockPolicy {
    /// The most values taken at once (`seqgen.backend_block`; 1: none ahead).
    pub max: u32,
}

/// A block is handed out only within this long after the statement that claimed it: a value
/// is never older than about a second when it is issued.
pub const BLOCK_LIFETIME_US: i64 = 1_000_000;

impl BlockPolicy {
    /// How many values to claim now, after a claim of `prev` values made at `last_us` (`None`:
    /// never by this backend), at statement time `now_us`: twice as many while claims come
    /// within [`BLOCK_LIFETIME_US`] of each other, up to `max`; one again otherwise.
    pub fn size(&self, prev: u32, last_us: Option<i64>, now_us: i64) -> u32 {
        match last_us {
            Some(t) if now_us.saturating_sub(t) < BLOCK_LIFETIME_US => prev.saturating_mul(2).clamp(1, self.max.max(1)),
            _ => 1,
        }
    }

    /// May a block claimed at statement time `claimed_us` still be handed out at `now_us`?
    /// (Not when the clock stepped back since: its age is unknown.)
    pub fn fresh(claimed_us: i64, now_us: i64) -> bool {
        now_us >= claimed_us && now_us.saturating_sub(claimed_us) < BLOCK_LIFETIME_US
    }
}

/// The clock a backend stamps its blocks with in 16 bits (a cache entry's hot half has no room
/// for a time in microseconds): statement times in ticks of `2^TICK_SHIFT` us (16.4 ms) since
/// `base_us`. A tick is `None` for a time before the latest one it was asked for (`seen_us`:
/// the clock stepped back, so a block's age is unknown, even within one tick) or
/// [`BlockClock::SPAN_TICKS`] ticks (about 9 minutes) after the base: then the backend drops
/// its blocks and starts the clock again at the statement time ([`BlockClock::starting`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockClock {
    pub base_us: i64,
    pub seen_us: i64,
}

impl BlockClock {
    pub const TICK_SHIFT: u32 = 14;
    pub const SPAN_TICKS: i64 = 1 << 15;
    /// A block is handed out while fewer ticks than this passed since its claim: its age then
    /// is under `LIFETIME_TICKS` ticks plus the tick it was claimed in, 999,424 us, never a
    /// second ([`BLOCK_LIFETIME_US`]).
    pub const LIFETIME_TICKS: u16 = (BLOCK_LIFETIME_US >> Self::TICK_SHIFT) as u16;

    /// A clock whose tick 0 is `now_us`.
    pub fn starting(now_us: i64) -> BlockClock {
        BlockClock { base_us: now_us, seen_us: now_us }
    }

    /// Statement time `now_us` in ticks, if the clock still covers it (and it is not before a
    /// time asked for earlier).
    #[inline]
    pub fn tick(&mut self, now_us: i64) -> Option<u16> {
        if now_us < self.seen_us {
            return None;
        }
        self.seen_us = now_us;
        let ticks = now_us.checked_sub(self.base_us)? >> Self::TICK_SHIFT;
        (0..Self::SPAN_TICKS).contains(&ticks).then_some(ticks as u16)
    }

    /// May a block claimed at tick `claimed` be handed out at tick `now` (both of this clock)?
    #[inline]
    pub fn fresh(claimed: u16, now: u16) -> bool {
        now >= claimed && now - claimed < Self::LIFETIME_TICKS
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn blocks_grow_while_claims_come_quickly_and_expire() {
        let p = BlockPolicy { max: 16 };
        assert_eq!(p.size(0, None, 5), 1, "a tag new to the backend takes one value");
        let mut size = 1;
        for i in 1..10 {
            size = p.size(size, Some(i * 1000), i * 1000 + 999);
        }
        assert_eq!(size, 16, "doubling up to the maximum");
        assert_eq!(p.size(16, Some(0), BLOCK_LIFETIME_US), 1, "a second later: one again");
        assert_eq!(BlockPolicy { max: 1 }.size(8, Some(0), 1), 1, "seqgen.backend_block = 1: none ahead");
        assert_eq!(BlockPolicy { max: 0 }.size(8, Some(0), 1), 1);
        assert_eq!(p.size(u32::MAX, Some(i64::MIN), i64::MAX), 1, "no overflow");
        assert!(BlockPolicy::fresh(0, BLOCK_LIFETIME_US - 1));
        assert!(!BlockPolicy::fresh(0, BLOCK_LIFETIME_US));
        assert!(!BlockPolicy::fresh(i64::MIN, i64::MAX));
        assert!(!BlockPolicy::fresh(10, 9), "a clock stepped back");
    }

    #[test]
    fn the_block_clock_never_keeps_a_block_a_second() {
        let mut c = BlockClock::starting(1_000);
        assert_eq!(c.tick(999), None, "before the base: the clock stepped back");
        assert_eq!(c.tick(1_000), Some(0));
        assert_eq!(c.tick(1_000 + (BlockClock::SPAN_TICKS << BlockClock::TICK_SHIFT) - 1), Some(u16::MAX >> 1));
        assert_eq!(c.tick(1_000 + (BlockClock::SPAN_TICKS << BlockClock::TICK_SHIFT)), None, "past its span");
        let mut c = BlockClock::starting(0);
        assert_eq!(c.tick(10_000), Some(0));
        assert_eq!(c.tick(9_999), None, "a step back within one tick");
        assert_eq!(BlockClock { base_us: i64::MIN, seen_us: i64::MIN }.tick(i64::MAX), None, "no overflow");
        assert_eq!(BlockClock { base_us: i64::MAX, seen_us: i64::MIN }.tick(i64::MIN), None);
        assert!(!BlockClock::fresh(10, 9), "a tick before the claim");
    }

    proptest! {
        /// Whatever the times, a block the ticks call fresh is less than a second old (and not
        /// from a later time: a clock stepped back is never fresh), and one less than 983 ms old
        /// (60 ticks) is fresh.
        #[test]
        fn fresh_ticks_bound_the_age(base in -1_000_000_000i64..1_000_000_000, claim in 0i64..400_000_000, age in -100_000i64..3_000_000) {
            let mut c = BlockClock::starting(base);
            let (t0, t1) = (base + claim, base + claim + age);
            let a = c.tick(t0);
            let b = c.tick(t1);
            if age < 0 {
                prop_assert_eq!(b, None, "a time before one seen");
            }
            if let (Some(a), Some(b)) = (a, b) {
                if BlockClock::fresh(a, b) {
                    prop_assert!(age < BLOCK_LIFETIME_US, "fresh at {} us", age);
                    prop_assert!(BlockPolicy::fresh(t0, t1));
                }
                if age < 60 << BlockClock::TICK_SHIFT {
                    prop_assert!(BlockClock::fresh(a, b), "stale at {} us", age);
                }
            }
        }
    }

    use super::*;
    use proptest::prelude::*;

    const MIN: Duration = Duration::from_secs(60);

    #[test]
    fn doubles_when_fast_halves_when_slow() {
        let p = StepPolicy::default();
        assert_eq!(p.next_step(1000, 1000, Some(MIN)), 2000);
        assert_eq!(p.next_step(2000, 1000, Some(20 * MIN)), 2000);
        assert_eq!(p.next_step(4000, 1000, Some(31 * MIN)), 2000);
        assert_eq!(p.next_step(1000, 1000, Some(31 * MIN)), 1000);
        assert_eq!(p.next_step(1000, 1000, None), 1000);
    }

    #[test]
    fn never_above_the_maximum_nor_below_the_configured_step() {
        let p = StepPolicy { max_step: 3000, ..StepPolicy::default() };
        assert_eq!(p.next_step(2000, 1000, Some(MIN)), 3000);
        assert_eq!(p.next_step(3000, 1000, Some(MIN)), 3000);
        // the configured step wins over a smaller maximum
        assert_eq!(p.next_step(10, 5000, Some(MIN)), 5000);
        // a configured step raised by the admin takes effect at once
        assert_eq!(p.next_step(1000, 4000, Some(20 * MIN)), 4000);
    }

    #[test]
    fn disabled_means_the_configured_step() {
        let p = StepPolicy { enabled: false, ..StepPolicy::default() };
        assert_eq!(p.next_step(8000, 100, Some(MIN)), 100);
    }

    #[test]
    fn reserve_basics() {
        assert_eq!(reserve(0, 1000), Ok(Reservation { start: 1, end: 1000 }));
        assert_eq!(reserve(1000, 1).unwrap().len(), 1);
        assert_eq!(reserve(i64::MAX - 5, 1000), Ok(Reservation { start: i64::MAX - 4, end: i64::MAX }));
        assert_eq!(reserve(i64::MAX, 1), Err(Exhausted { max_id: i64::MAX }));
        assert_eq!(reserve(-10, 5), Ok(Reservation { start: -9, end: -5 }));
    }

    #[test]
    fn interleaving_keeps_servers_apart() {
        let a: Vec<i64> = (1..=1000).map(|c| interleave(c, 2, 1)).collect();
        let b: Vec<i64> = (1..=1000).map(|c| interleave(c, 2, 2)).collect();
        assert!(a.iter().all(|v| !b.contains(v)));
        assert_eq!(split(interleave(12345, 4, 9), 4), (12345, 9));
        assert_eq!(reserve_up_to(10, 100, 50), Ok(Reservation { start: 11, end: 50 }));
        assert_eq!(reserve_up_to(50, 1, 50), Err(Exhausted { max_id: 50 }));
        assert!(interleave(i64::MAX >> 16, 16, 65_535) > 0);
    }

    proptest! {
        /// Plain values up to max_id, then interleaved ones from max_id + 1 on (a tag switched to
        /// node bits while in use): the two never meet, whatever the node.
        #[test]
        fn switching_to_interleaving_never_meets_earlier_values(max_id in 0i64..1_000_000_000, bits in 1u32..=16,
                                                                node_frac in 0.0f64..1.0, c in 1i64..1_000_000) {
            let node = (node_frac * ((1u64 << bits) - 1) as f64) as u32;
            let v = interleave(max_id + c, bits, node);
            prop_assert!(v > max_id);
        }

        #[test]
        fn step_stays_in_bounds(cur in 1i64..10_000_000, conf in 1i64..100_000, max in 1i64..5_000_000,
                                secs in proptest::option::of(0u64..10_000)) {
            let p = StepPolicy { max_step: max, ..StepPolicy::default() };
            let s = p.next_step(cur, conf, secs.map(Duration::from_secs));
            prop_assert!(s >= conf);
            prop_assert!(s <= max.max(conf));
        }

        #[test]
        fn consecutive_reservations_never_overlap(start in any::<i64>(), steps in proptest::collection::vec(1i64..1_000_000_000, 1..20)) {
            let mut max_id = start;
            let mut prev_end: Option<i64> = None;
            for step in steps {
                match reserve(max_id, step) {
                    Ok(r) => {
                        prop_assert!(r.start > max_id && r.end >= r.start && r.len() as i64 <= step);
                        if let Some(p) = prev_end { prop_assert!(r.start > p); }
                        prev_end = Some(r.end);
                        max_id = r.end;
                    }
                    Err(_) => { prop_assert_eq!(max_id, i64::MAX); break; }
                }
            }
        }
    }
}
