//! Snowflake IDs: the layout, the clock policy and the lock-free generator.
//!
//! An ID is `0 | time | node | sequence`: a zero sign bit, the milliseconds since a custom epoch,
//! the node id, and a per-millisecond sequence. The generator's whole state is one 64-bit word,
//! `last_ts << sequence_bits | last_seq`, advanced with compare-and-swap, so every ID a server
//! issues is strictly greater than every ID it issued before, whichever process issued it.
//!
//! The clock policy ([`decide`]) is a pure function of the last state, the clock and the
//! reservation, tested with an injected clock:
//!
//! * clock ahead of the last timestamp: issue `(now, 0)`;
//! * same millisecond: next sequence; sequence exhausted: wait for the next millisecond;
//! * clock behind by at most `max_wait`: wait until it catches up (Leaf's rule);
//! * behind by at most `max_borrow`: keep issuing from the last timestamp, moving to the next
//!   millisecond when its sequence runs out (borrowing time), as long as the borrowed
//!   timestamp stays within `max_borrow` of the clock;
//! * further behind: refuse until the clock catches up.
//!
//! Timestamps at or above the persisted reservation are never issued: the caller must first
//! have the reservation extended (and durably stored). After a restart, generation resumes
//! above the persisted reservation whatever the clock says.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// A validated layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Bits of an ID below the sign bit that the layout uses: 63, or 53 for IDs a JavaScript
    /// number holds exactly ([`js_safe_layout`]).
    pub width: u32,
    pub time_bits: u32,
    pub node_bits: u32,
    pub seq_bits: u32,
    /// The custom epoch, in milliseconds since the Unix epoch.
    pub epoch_ms: i64,
    pub node_id: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error("snowflake bit widths must sum to {width} (time {time} + node {node} + sequence {seq} = {sum})")]
    BadSum { width: u32, time: u32, node: u32, seq: u32, sum: u32 },
    #[error("snowflake sequence bits must be between 1 and 22, got {0}")]
    BadSequenceBits(u32),
    #[error("snowflake time bits must be at least 30, got {0}")]
    BadTimeBits(u32),
    #[error("node id {node_id} does not fit in {node_bits} node bits (maximum {max})")]
    NodeOutOfRange { node_id: i64, node_bits: u32, max: u64 },
    #[error("the snowflake epoch must not be before 1970-01-01")]
    BadEpoch,
}

/// An ID taken apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded {
    /// Milliseconds since the Unix epoch.
    pub unix_ms: i64,
    pub node_id: u32,
    pub seq: u32,
}

impl Layout {
    pub fn new(
        time_bits: i64,
        node_bits: i64,
        seq_bits: i64,
        epoch_ms: i64,
        node_id: i64,
    ) -> Result<Layout, LayoutError> {
        Layout::with_width(63, time_bits, node_bits, seq_bits, epoch_ms, node_id)
    }

    /// A layout of `width` bits (at most 63) below the sign bit: every ID is below 2^width.
    pub fn with_width(
        width: u32,
        time_bits: i64,
        node_bits: i64,
        seq_bits: i64,
        epoch_ms: i64,
        node_id: i64,
    ) -> Result<Layout, LayoutError> {
        let width = width.min(63);
        let (t, n, s) = (time_bits.clamp(0, 64) as u32, node_bits.clamp(0, 64) as u32, seq_bits.clamp(0, 64) as u32);
        if time_bits + node_bits + seq_bits != width as i64 || time_bits < 0 || node_bits < 0 || seq_bits < 0 {
            return Err(LayoutError::BadSum { width, time: t, node: n, seq: s, sum: t + n + s });
        }
        if !(1..=22).contains(&s) {
            return Err(LayoutError::BadSequenceBits(s));
        }
        if t < 30 {
            return Err(LayoutError::BadTimeBits(t));
        }
        let max = (1u64 << n) - 1;
        if node_id < 0 || node_id as u64 > max {
            return Err(LayoutError::NodeOutOfRange { node_id, node_bits: n, max });
        }
        if epoch_ms < 0 {
            return Err(LayoutError::BadEpoch);
        }
        Ok(Layout { width, time_bits: t, node_bits: n, seq_bits: s, epoch_ms, node_id: node_id as u32 })
    }

    pub fn max_seq(&self) -> u64 {
        (1u64 << self.seq_bits) - 1
    }

    pub fn max_ts(&self) -> i64 {
        ((1u64 << self.time_bits) - 1) as i64
    }

    /// The ID for timestamp `ts` (ms since the custom epoch) and sequence `seq`.
    pub fn compose(&self, ts: i64, seq: u64) -> i64 {
        debug_assert!((0..=self.max_ts()).contains(&ts) && seq <= self.max_seq());
        ((ts as u64) << (self.node_bits + self.seq_bits) | (self.node_id as u64) << self.seq_bits | seq) as i64
    }

    /// The largest ID of the layout (2^width - 1).
    pub fn max_id(&self) -> i64 {
        ((1u64 << self.width) - 1) as i64
    }

    /// Take an ID apart (any bigint from 0 to [`max_id`](Self::max_id) decodes).
    pub fn decode(&self, id: i64) -> Option<Decoded> {
        if id < 0 || id > self.max_id() {
            return None;
        }
        let id = id as u64;
        let ts = id >> (self.node_bits + self.seq_bits);
        let node = (id >> self.seq_bits) & ((1u64 << self.node_bits) - 1);
        Some(Decoded { unix_ms: ts as i64 + self.epoch_ms, node_id: node as u32, seq: (id & self.max_seq()) as u32 })
    }

    /// The smallest ID with timestamp `ts` (node 0, sequence 0): every ID with a smaller
    /// timestamp is below it. Reservations are persisted as this value.
    /// Saturates at `i64::MAX` past the last timestamp (a reservation "to the end of time").
    pub fn id_floor(&self, ts: i64) -> i64 {
        ((ts.max(0) as u128) << (self.node_bits + self.seq_bits)).min(i64::MAX as u128) as i64
    }

    /// The smallest timestamp whose IDs all exceed `id` (or equal it for node 0, sequence 0).
    /// Used at start-up: persisted reservations are stored as ID values, so a server that
    /// restarts with another epoch or other widths still resumes above every ID it issued.
    pub fn ts_floor_for(&self, id: i64) -> i64 {
        let unit = 1i128 << (self.node_bits + self.seq_bits);
        ((id.max(0) as i128 + unit - 1) / unit) as i64
    }
}

/// Bits of a snowflake that a JavaScript number holds exactly (`Number.MAX_SAFE_INTEGER` is
/// 2^53 - 1).
pub const JS_SAFE_WIDTH: u32 = 53;

/// The layout of `seqgen_snowflake53()`: 41 bits of milliseconds since the epoch (69 years),
/// 4 bits of node id (16 servers), 8 bits of sequence (256 IDs per millisecond and server),
/// so every ID is at most 2^53 - 1.
pub fn js_safe_layout(epoch_ms: i64, node_id: i64) -> Result<Layout, LayoutError> {
    Layout::with_width(JS_SAFE_WIDTH, 41, 4, 8, epoch_ms, node_id)
}

/// Parse `seqgen.snowflake_epoch`: `2024-01-01`, `2024-01-01 00:00:00` (UTC), or RFC 3339
/// (`2024-01-01T08:00:00+08:00`). Returns milliseconds since the Unix epoch.
pub fn parse_epoch(text: &str) -> Result<i64, String> {
    use chrono::{DateTime, NaiveDate, NaiveDateTime};
    let t = text.trim();
    let ms = if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        dt.timestamp_millis()
    } else if let Ok(dt) = DateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%#z") {
        dt.timestamp_millis()
    } else if let Ok(dt) = NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S") {
        dt.and_utc().timestamp_millis()
    } else if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        d.and_hms_opt(0, 0, 0).map(|dt| dt.and_utc().timestamp_millis()).unwrap_or(-1)
    } else {
        return Err(format!(
            "invalid snowflake epoch \"{text}\": use YYYY-MM-DD, YYYY-MM-DD HH:MM:SS (UTC) or RFC 3339"
        ));
    };
    if ms < 0 {
        return Err(format!("the snowflake epoch \"{text}\" is before 1970-01-01"));
    }
    Ok(ms)
}

/// Clock-policy limits, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub max_wait: i64,
    pub max_borrow: i64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy { max_wait: 5, max_borrow: 2000 }
    }
}

/// Why the generator waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitReason {
    /// The millisecond's sequence is used up: wait for the clock to tick.
    SequenceExhausted,
    /// The clock is slightly behind the last timestamp: wait for it to catch up.
    ClockBehind,
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Issue `(ts, seq)`. `borrowed`: the timestamp is ahead of the clock.
    Issue { ts: i64, seq: u64, borrowed: bool },
    /// Wait until the clock reads `until` (ms since the custom epoch), then decide again.
    Wait { until: i64, reason: WaitReason },
    /// The clock is `behind` ms behind the last timestamp, more than the borrow limit allows.
    Refuse { behind: i64 },
    /// `ts` is at or above the reservation: extend it first.
    Reserve { ts: i64 },
    /// The layout's time range is used up.
    TimeExhausted,
}

/// The clock policy. `last` is the last issued `(ts, seq)`, `now` the clock (both in ms since
/// the custom epoch), `reserved` the first timestamp not yet reserved, `paced` the clock
/// reading at which the generator last moved to a borrowed millisecond.
pub fn decide(last: (i64, u64), now: i64, paced: i64, reserved: i64, layout: &Layout, policy: &Policy) -> Decision {
    let (last_ts, last_seq) = last;
    let (ts, seq, borrowed) = if now > last_ts {
        (now, 0, false)
    } else if now == last_ts {
        if last_seq < layout.max_seq() {
            (last_ts, last_seq + 1, false)
        } else {
            return Decision::Wait { until: last_ts + 1, reason: WaitReason::SequenceExhausted };
        }
    } else {
        // The clock is behind the last issued timestamp. Never go back to it: continue from
        // the last timestamp (the sequence is checked before anything else, so an exhausted
        // sequence moves to the next millisecond, never back to 0 at the old one).
        let behind = last_ts - now;
        if behind <= policy.max_wait {
            return Decision::Wait { until: last_ts, reason: WaitReason::ClockBehind };
        }
        let (ts, seq) = if last_seq < layout.max_seq() {
            (last_ts, last_seq + 1)
        } else if paced == now {
            // At most one borrowed millisecond per tick of the clock: borrowing never runs
            // ahead faster than time passes, so the lag cannot grow by itself under load.
            return Decision::Wait { until: now + 1, reason: WaitReason::SequenceExhausted };
        } else {
            (last_ts + 1, 0)
        };
        if ts - now > policy.max_borrow {
            return Decision::Refuse { behind: ts - now };
        }
        (ts, seq, true)
    };
    if ts > layout.max_ts() {
        return Decision::TimeExhausted;
    }
    if ts >= reserved {
        return Decision::Reserve { ts };
    }
    Decision::Issue { ts, seq, borrowed }
}

/// A clock the generator can read and wait on.
pub trait Clock {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
    /// Wait a little (the generator calls it in a loop until the clock reads what it needs).
    fn pause(&self, remaining_ms: i64);
}

/// Why [`Generator::next`] did not produce an ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NextError {
    #[error("the clock is {behind} ms behind the last issued snowflake timestamp")]
    ClockBehind { behind: i64 },
    #[error("the snowflake reservation must be extended to {ts}")]
    NeedReservation { ts: i64 },
    #[error("the snowflake layout's time range is used up")]
    TimeExhausted,
    #[error("the clock is before the snowflake epoch")]
    BeforeEpoch,
}

/// What happened while producing an ID, for counters and logs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Events {
    /// Waited for the clock (sequence exhausted, or clock slightly behind).
    pub waited_behind: bool,
    pub waited_overflow: bool,
    pub borrowed: bool,
}

/// The shared generator state: one word plus the reservation. `#[repr(C)]`, all atomics: it
/// lives in PostgreSQL shared memory.
#[repr(C)]
pub struct Generator {
    /// `last_ts << seq_bits | last_seq`.
    word: AtomicU64,
    /// First timestamp (ms since the custom epoch) not covered by the persisted reservation.
    reserved: AtomicI64,
    /// Clock reading (ms since the custom epoch) of the last move to a borrowed millisecond.
    /// A pacing hint only: uniqueness rests on the compare-and-swap of `word`.
    paced: AtomicI64,
}

impl Default for Generator {
    fn default() -> Self {
        Self::new()
    }
}

impl Generator {
    pub const fn new() -> Self {
        Generator { word: AtomicU64::new(0), reserved: AtomicI64::new(0), paced: AtomicI64::new(i64::MIN) }
    }

    fn split(word: u64, layout: &Layout) -> (i64, u64) {
        ((word >> layout.seq_bits) as i64, word & layout.max_seq())
    }

    fn join(ts: i64, seq: u64, layout: &Layout) -> u64 {
        (ts as u64) << layout.seq_bits | seq
    }

    /// Start (or restart) above a persisted reservation: every ID issued from now on is
    /// greater than `high_water_id`. Call before any `next`.
    pub fn resume_above(&self, high_water_id: i64, layout: &Layout) {
        let floor = layout.ts_floor_for(high_water_id);
        // "Last issued" = the last sequence of the millisecond before the floor, so the next
        // ID has a timestamp >= floor whatever the clock reads.
        let word = if floor == 0 { 0 } else { Self::join(floor - 1, layout.max_seq(), layout) };
        self.word.store(word, Ordering::Release);
        self.reserved.store(floor, Ordering::Release);
    }

    /// While running: make every later ID greater than `high_water_id`, never lowering the
    /// generator. The reservation is left alone, so the next ID above it waits until a
    /// reservation above the new floor is persisted ([`NextError::NeedReservation`]).
    pub fn raise_above(&self, high_water_id: i64, layout: &Layout) {
        // strictly above: the first timestamp all of whose IDs exceed `high_water_id`
        let floor = layout.ts_floor_for(high_water_id.saturating_add(1));
        if floor == 0 {
            return;
        }
        let target = Self::join(floor - 1, layout.max_seq(), layout);
        self.word.fetch_max(target, Ordering::AcqRel);
    }

    /// The last issued `(ts, seq)`.
    pub fn last(&self, layout: &Layout) -> (i64, u64) {
        Self::split(self.word.load(Ordering::Acquire), layout)
    }

    /// First timestamp not reserved.
    pub fn reserved(&self) -> i64 {
        self.reserved.load(Ordering::Acquire)
    }

    /// Publish a (durably stored) reservation. Never moves it back.
    pub fn extend_reservation(&self, ts: i64) {
        self.reserved.fetch_max(ts, Ordering::AcqRel);
    }

    /// Produce the next ID, below this generator's own reservation.
    pub fn next(&self, layout: &Layout, policy: &Policy, clock: &impl Clock) -> Result<(i64, Events), NextError> {
        self.next_below(&self.reserved, layout, policy, clock)
    }

    /// Produce the next ID below the reservation `reserved` (the first timestamp it does not
    /// cover), which the caller keeps: several reservations (one per database) can share one
    /// generator word, each caller drawing below its own.
    pub fn next_below(
        &self,
        reserved: &AtomicI64,
        layout: &Layout,
        policy: &Policy,
        clock: &impl Clock,
    ) -> Result<(i64, Events), NextError> {
        let mut ev = Events::default();
        // A clock reading goes stale when the process is descheduled right after it; a stale
        // reading looks like a clock step back. So a borrow or a refusal is decided on a second
        // reading: one more clock read, only while the clock is behind.
        let mut reread = false;
        loop {
            let word = self.word.load(Ordering::Acquire);
            let last = Self::split(word, layout);
            let now = clock.now_ms() - layout.epoch_ms;
            if now < 0 {
                return Err(NextError::BeforeEpoch);
            }
            let paced = self.paced.load(Ordering::Relaxed);
            match decide(last, now, paced, reserved.load(Ordering::Acquire), layout, policy) {
                Decision::Issue { borrowed: true, .. } | Decision::Refuse { .. } if !reread => reread = true,
                Decision::Issue { ts, seq, borrowed } => {
                    let new = Self::join(ts, seq, layout);
                    if self.word.compare_exchange_weak(word, new, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                        if borrowed && seq == 0 {
                            self.paced.store(now, Ordering::Relaxed);
                        }
                        ev.borrowed = borrowed;
                        return Ok((layout.compose(ts, seq), ev));
                    }
                }
                Decision::Wait { until, reason } => {
                    match reason {
                        WaitReason::SequenceExhausted => ev.waited_overflow = true,
                        WaitReason::ClockBehind => ev.waited_behind = true,
                    }
                    clock.pause(until - now);
                }
                Decision::Refuse { behind } => return Err(NextError::ClockBehind { behind }),
                Decision::Reserve { ts } => return Err(NextError::NeedReservation { ts }),
                Decision::TimeExhausted => return Err(NextError::TimeExhausted),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cell::Cell;
    use std::collections::HashSet;

    fn layout() -> Layout {
        Layout::new(41, 10, 12, 1_700_000_000_000, 7).unwrap()
    }

    const FAR: i64 = i64::MAX / 4;
    /// "never paced"
    const NP: i64 = i64::MIN;

    #[test]
    fn layout_validation() {
        assert!(Layout::new(41, 10, 12, 0, 1023).is_ok());
        assert_eq!(
            Layout::new(41, 10, 13, 0, 0),
            Err(LayoutError::BadSum { width: 63, time: 41, node: 10, seq: 13, sum: 64 })
        );
        assert_eq!(
            Layout::new(41, 10, 12, 0, 1024),
            Err(LayoutError::NodeOutOfRange { node_id: 1024, node_bits: 10, max: 1023 })
        );
        assert!(matches!(Layout::new(41, 10, 12, 0, -1), Err(LayoutError::NodeOutOfRange { .. })));
        assert_eq!(Layout::new(63, 0, 0, 0, 0), Err(LayoutError::BadSequenceBits(0)));
        assert_eq!(Layout::new(20, 21, 22, 0, 0), Err(LayoutError::BadTimeBits(20)));
        assert_eq!(Layout::new(41, 10, 12, -5, 0), Err(LayoutError::BadEpoch));
        assert!(Layout::new(41, 0, 22, 0, 0).is_ok());
    }

    #[test]
    fn js_safe_ids_never_exceed_2_pow_53() {
        let l = js_safe_layout(1_704_067_200_000, 15).unwrap();
        assert_eq!(l.max_id(), (1i64 << 53) - 1);
        // the last ID of the last millisecond of the range is 2^53 - 1
        assert_eq!(l.compose(l.max_ts(), l.max_seq()), (1i64 << 53) - 1);
        assert_eq!(l.decode((1i64 << 53) - 1).map(|d| (d.node_id, d.seq)), Some((15, 255)));
        assert_eq!(l.decode(1i64 << 53), None);
        assert!(js_safe_layout(0, 16).is_err(), "a node id of 5 bits does not fit");
        // the generator stops at the end of the range rather than going past 2^53 - 1
        // (the clock in its last millisecond: all 256 IDs of it, then the end)
        let g = Generator::new();
        g.extend_reservation(i64::MAX);
        let clock = FakeClock::at(l.epoch_ms + l.max_ts());
        let p = Policy { max_wait: 0, max_borrow: 0 };
        let ids: Vec<i64> = (0..256).map(|_| g.next(&l, &p, &clock).unwrap().0).collect();
        assert_eq!(ids.first(), Some(&l.compose(l.max_ts(), 0)));
        assert_eq!(ids.last(), Some(&((1i64 << 53) - 1)));
        assert_eq!(g.next(&l, &p, &clock), Err(NextError::TimeExhausted));
    }

    proptest! {
        /// Whatever the clock does, 53-bit IDs increase and stay below 2^53.
        #[test]
        fn js_safe_ids_increase_and_fit(steps in proptest::collection::vec(-3i64..5, 1..300)) {
            let l = js_safe_layout(1_700_000_000_000, 3).unwrap();
            let g = Generator::new();
            g.extend_reservation(i64::MAX);
            let clock = FakeClock::at(1_700_000_000_000 + 1000);
            let mut last = -1;
            for s in steps {
                clock.set(clock.now_ms() + s);
                if let Ok((id, _)) = g.next(&l, &Policy::default(), &clock) {
                    prop_assert!(id > last && id <= l.max_id());
                    last = id;
                }
            }
        }
    }

    #[test]
    fn epoch_formats() {
        assert_eq!(parse_epoch("2024-01-01"), Ok(1_704_067_200_000));
        assert_eq!(parse_epoch("2024-01-01 00:00:00"), Ok(1_704_067_200_000));
        assert_eq!(parse_epoch("2024-01-01T08:00:00+08:00"), Ok(1_704_067_200_000));
        assert_eq!(parse_epoch("2024-01-01 00:00:00+00"), Ok(1_704_067_200_000));
        assert!(parse_epoch("yesterday").is_err());
        assert!(parse_epoch("1969-12-31").is_err());
    }

    #[test]
    fn id_floor_saturates_past_the_last_timestamp() {
        let l = Layout::new(30, 11, 22, 0, 0).unwrap();
        assert_eq!(l.id_floor(l.max_ts() + 1), i64::MAX);
        assert_eq!(l.id_floor(i64::MAX), i64::MAX);
        // a generator resumed above it issues nothing more
        let g = Generator::new();
        g.resume_above(i64::MAX, &l);
        assert_eq!(g.last(&l), (l.max_ts(), l.max_seq()));
    }

    #[test]
    fn compose_and_decode_round_trip() {
        let l = layout();
        let id = l.compose(123_456, 42);
        assert_eq!(id, (123_456i64 << 22) | (7 << 12) | 42);
        assert_eq!(l.decode(id), Some(Decoded { unix_ms: l.epoch_ms + 123_456, node_id: 7, seq: 42 }));
        assert_eq!(l.decode(-1), None);
        let max = l.compose(l.max_ts(), l.max_seq());
        assert!(max > 0);
        assert_eq!(l.decode(max).unwrap().seq as u64, l.max_seq());
    }

    #[test]
    fn policy_normal_same_ms_and_overflow() {
        let (l, p) = (layout(), Policy::default());
        assert_eq!(decide((10, 5), 11, NP, FAR, &l, &p), Decision::Issue { ts: 11, seq: 0, borrowed: false });
        assert_eq!(decide((10, 5), 10, NP, FAR, &l, &p), Decision::Issue { ts: 10, seq: 6, borrowed: false });
        assert_eq!(
            decide((10, 4095), 10, NP, FAR, &l, &p),
            Decision::Wait { until: 11, reason: WaitReason::SequenceExhausted }
        );
    }

    #[test]
    fn policy_clock_behind_waits_then_borrows_then_refuses() {
        let (l, p) = (layout(), Policy { max_wait: 5, max_borrow: 2000 });
        assert_eq!(
            decide((1000, 1), 997, NP, FAR, &l, &p),
            Decision::Wait { until: 1000, reason: WaitReason::ClockBehind }
        );
        assert_eq!(
            decide((1000, 1), 995, NP, FAR, &l, &p),
            Decision::Wait { until: 1000, reason: WaitReason::ClockBehind }
        );
        assert_eq!(decide((1000, 1), 994, NP, FAR, &l, &p), Decision::Issue { ts: 1000, seq: 2, borrowed: true });
        assert_eq!(decide((1000, 1), -1000, NP, FAR, &l, &p), Decision::Issue { ts: 1000, seq: 2, borrowed: true });
        assert_eq!(decide((1000, 1), -1001, NP, FAR, &l, &p), Decision::Refuse { behind: 2001 });
    }

    /// Twitter's original generator reset the sequence before checking the clock: with the
    /// sequence exhausted while the clock was behind, it went back to sequence 0 at an old
    /// timestamp and reissued IDs. Here an exhausted sequence while behind moves forward.
    #[test]
    fn overflow_while_clock_is_behind_moves_forward() {
        let (l, p) = (layout(), Policy::default());
        match decide((1000, 4095), 900, NP, FAR, &l, &p) {
            Decision::Issue { ts, seq, borrowed } => {
                assert_eq!((ts, seq, borrowed), (1001, 0, true));
            }
            other => panic!("{other:?}"),
        }
        // and never beyond the borrow limit
        assert_eq!(
            decide((1000, 4095), 1000 - 2000, NP, FAR, &l, &Policy { max_wait: 5, max_borrow: 2000 }),
            Decision::Refuse { behind: 2001 }
        );
    }

    /// Borrowing at full speed would run ahead of the clock by itself (more IDs than the
    /// layout's ceiling) and end in refusals. Paced, a borrowed millisecond is taken at most
    /// once per clock tick.
    #[test]
    fn borrowing_is_paced_by_the_clock() {
        let (l, p) = (layout(), Policy::default());
        // sequence exhausted while 100 ms behind: the first time, borrow the next millisecond
        assert_eq!(decide((1100, 4095), 1000, NP, FAR, &l, &p), Decision::Issue { ts: 1101, seq: 0, borrowed: true });
        // already borrowed at this clock reading: wait for the clock to tick instead
        assert_eq!(
            decide((1101, 4095), 1000, 1000, FAR, &l, &p),
            Decision::Wait { until: 1001, reason: WaitReason::SequenceExhausted }
        );
        assert_eq!(decide((1101, 4095), 1001, 1000, FAR, &l, &p), Decision::Issue { ts: 1102, seq: 0, borrowed: true });
    }

    #[test]
    fn sustained_load_while_borrowing_keeps_the_lag_constant() {
        let l = layout();
        let p = Policy { max_wait: 5, max_borrow: 2000 };
        let g = Generator::new();
        // a restart whose reservation is 1 s ahead of the clock
        g.resume_above(l.id_floor(1_001_000), &l);
        g.extend_reservation(FAR);
        let clock = FakeClock::at(l.epoch_ms + 1_000_000);
        let mut max_lag = 0;
        for _ in 0..200_000 {
            // the clock only moves when the generator waits: load far above the ceiling
            g.next(&l, &p, &clock).unwrap();
            max_lag = max_lag.max(g.last(&l).0 - (clock.now_ms() - l.epoch_ms));
        }
        assert!(max_lag <= 1001, "lag grew to {max_lag} ms");
    }

    #[test]
    fn reservation_and_time_range_bound_issuing() {
        let (l, p) = (layout(), Policy::default());
        assert_eq!(decide((10, 0), 20, NP, 20, &l, &p), Decision::Reserve { ts: 20 });
        assert_eq!(decide((10, 0), 20, NP, 21, &l, &p), Decision::Issue { ts: 20, seq: 0, borrowed: false });
        let max = l.max_ts();
        assert_eq!(
            decide((max, l.max_seq()), max, NP, FAR, &l, &p),
            Decision::Wait { until: max + 1, reason: WaitReason::SequenceExhausted }
        );
        assert_eq!(decide((max, l.max_seq()), max + 1, NP, FAR, &l, &p), Decision::TimeExhausted);
    }

    /// A clock the test sets by hand; pauses advance it.
    struct FakeClock {
        t: Cell<i64>,
    }

    impl FakeClock {
        fn at(t: i64) -> Self {
            FakeClock { t: Cell::new(t) }
        }
        fn set(&self, t: i64) {
            self.t.set(t);
        }
    }

    impl Clock for FakeClock {
        fn now_ms(&self) -> i64 {
            self.t.get()
        }
        fn pause(&self, remaining_ms: i64) {
            self.t.set(self.t.get() + remaining_ms.max(1));
        }
    }

    #[test]
    fn generator_is_strictly_increasing_through_clock_faults() {
        let l = layout();
        let p = Policy { max_wait: 5, max_borrow: 2000 };
        let g = Generator::new();
        g.resume_above(0, &l);
        g.extend_reservation(FAR);
        let clock = FakeClock::at(l.epoch_ms + 50_000);
        let mut prev = 0;
        let mut borrowed = 0;
        let mut steps = vec![0i64; 300];
        steps.extend([-3, 0, 0, -50, 0, 0, -1500, 0, 0, 0, 7, 0, -40, 0]);
        steps.extend(vec![0; 100]);
        for (i, d) in steps.into_iter().enumerate() {
            clock.set(clock.t.get() + d);
            // 5000 IDs per clock reading: more than the 4096 a millisecond holds
            for _ in 0..5000 {
                let (id, ev) = g.next(&l, &p, &clock).unwrap_or_else(|e| panic!("step {i}: {e}"));
                assert!(id > prev, "step {i}: {id} after {prev}");
                prev = id;
                borrowed += ev.borrowed as u32;
            }
        }
        assert!(borrowed > 0);
    }

    /// A clock that reads `stale` once (a process descheduled right after reading it), then
    /// the real time.
    struct StaleOnce {
        real: i64,
        stale: Cell<Option<i64>>,
    }

    impl Clock for StaleOnce {
        fn now_ms(&self) -> i64 {
            self.stale.take().unwrap_or(self.real)
        }
        fn pause(&self, _: i64) {}
    }

    /// A stale clock reading is not a clock step back: no borrow, no refusal.
    #[test]
    fn a_stale_reading_neither_borrows_nor_refuses() {
        let l = layout();
        let p = Policy { max_wait: 5, max_borrow: 2000 };
        let g = Generator::new();
        g.resume_above(0, &l);
        g.extend_reservation(FAR);
        let real = l.epoch_ms + 1_000_000;
        let (first, _) = g.next(&l, &p, &FakeClock::at(real)).unwrap();
        for stale_by in [100, 5000] {
            let clock = StaleOnce { real, stale: Cell::new(Some(real - stale_by)) };
            let (id, ev) = g.next(&l, &p, &clock).unwrap();
            assert!(id > first && !ev.borrowed, "a reading {stale_by} ms stale: {ev:?}");
        }
    }

    #[test]
    fn generator_refuses_far_behind_and_resumes_when_the_clock_catches_up() {
        let l = layout();
        let p = Policy { max_wait: 5, max_borrow: 2000 };
        let g = Generator::new();
        g.resume_above(0, &l);
        g.extend_reservation(FAR);
        let clock = FakeClock::at(l.epoch_ms + 1_000_000);
        let (first, _) = g.next(&l, &p, &clock).unwrap();
        clock.set(clock.t.get() - 600_000); // ten minutes back
        assert_eq!(g.next(&l, &p, &clock), Err(NextError::ClockBehind { behind: 600_000 }));
        clock.set(clock.t.get() + 598_500); // within the borrow limit again
        let (id, ev) = g.next(&l, &p, &clock).unwrap();
        assert!(id > first && ev.borrowed);
    }

    #[test]
    fn restart_resumes_above_the_reservation_whatever_the_clock() {
        let l = layout();
        let p = Policy { max_wait: 5, max_borrow: 2000 };
        let before = Generator::new();
        before.resume_above(0, &l);
        before.extend_reservation(1_001_000);
        let clock = FakeClock::at(l.epoch_ms + 1_000_000);
        let mut last = 0;
        for _ in 0..10_000 {
            last = before.next(&l, &p, &clock).unwrap().0;
        }
        // the persisted high-water mark: every ID issued is below it
        let high_water = l.id_floor(before.reserved());
        assert!(high_water > last);

        // restart with the clock 2 s behind: the floor is 1 s ahead of the old clock, so the
        // clock is 3 s behind it: refused (borrow limit 2 s) until it catches up
        let after = Generator::new();
        after.resume_above(high_water, &l);
        let clock = FakeClock::at(l.epoch_ms + 998_000);
        assert!(matches!(after.next(&l, &p, &clock), Err(NextError::ClockBehind { .. })));
        clock.set(l.epoch_ms + 999_100);
        // within the borrow limit now, but the new reservation is not made yet
        assert!(matches!(after.next(&l, &p, &clock), Err(NextError::NeedReservation { .. })));
        after.extend_reservation(1_002_000);
        let (id, ev) = after.next(&l, &p, &clock).unwrap();
        assert!(id > last && id >= high_water && ev.borrowed);
    }

    #[test]
    fn restart_with_a_later_epoch_still_resumes_above() {
        let old = layout();
        let new = Layout { epoch_ms: old.epoch_ms + 86_400_000, ..old };
        let high_water = old.id_floor(5_000_000);
        let g = Generator::new();
        g.resume_above(high_water, &new);
        g.extend_reservation(FAR);
        let clock = FakeClock::at(new.epoch_ms + 10_000_000);
        let (id, _) = g.next(&new, &Policy::default(), &clock).unwrap();
        assert!(id >= high_water);
    }

    /// Several reservations (one per database) share one word: every ID is unique across
    /// them, each is below the reservation it was drawn under, and a caller whose reservation
    /// is behind the shared word is told to extend its own.
    #[test]
    fn reservations_per_caller_share_one_word() {
        let l = layout();
        let p = Policy::default();
        let g = Generator::new();
        g.resume_above(0, &l);
        let (a, b) = (AtomicI64::new(1_000), AtomicI64::new(2_000));
        let clock = FakeClock::at(l.epoch_ms + 500);
        let mut seen = HashSet::new();
        for i in 0..1_200i64 {
            let r = if i % 2 == 0 { &a } else { &b };
            let (id, _) = g.next_below(r, &l, &p, &clock).unwrap();
            assert!(seen.insert(id), "{id} issued twice");
            assert!(l.decode(id).unwrap().unix_ms - l.epoch_ms < r.load(Ordering::Relaxed));
            clock.set(clock.now_ms() + (i % 3 == 0) as i64);
        }
        // the clock passes a's reservation but not b's: only a's caller must wait
        clock.set(l.epoch_ms + 1_500);
        assert_eq!(g.next_below(&a, &l, &p, &clock), Err(NextError::NeedReservation { ts: 1_500 }));
        let (id, _) = g.next_below(&b, &l, &p, &clock).unwrap();
        assert!(seen.insert(id));
        // the clock steps back below a's reservation: a's caller still may not go below the
        // shared word, which b moved to 1_500
        clock.set(l.epoch_ms + 900);
        assert!(matches!(g.next_below(&a, &l, &p, &clock), Err(NextError::NeedReservation { ts }) if ts >= 1_500));
    }

    #[test]
    fn threads_share_one_generator_without_duplicates() {
        struct Sys;
        impl Clock for Sys {
            fn now_ms(&self) -> i64 {
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
            }
            fn pause(&self, _: i64) {
                std::hint::spin_loop();
            }
        }
        let l = Layout::new(41, 10, 12, 0, 3).unwrap();
        let g = std::sync::Arc::new(Generator::new());
        g.resume_above(0, &l);
        g.extend_reservation(i64::MAX / 2);
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let g = g.clone();
                std::thread::spawn(move || {
                    let mut v = Vec::with_capacity(50_000);
                    let mut prev = 0;
                    for _ in 0..50_000 {
                        let id = g.next(&l, &Policy::default(), &Sys).unwrap().0;
                        assert!(id > prev);
                        prev = id;
                        v.push(id);
                    }
                    v
                })
            })
            .collect();
        let mut all = HashSet::new();
        for h in handles {
            for id in h.join().unwrap() {
                assert!(all.insert(id), "duplicate {id}");
            }
        }
        assert_eq!(all.len(), 400_000);
    }

    proptest! {
        /// Whatever the clock does, the policy never issues at or below the last state.
        #[test]
        fn decide_never_goes_backwards(last_ts in 0i64..1_000_000, last_seq in 0u64..4096,
                                       now in -10_000i64..1_010_000, wait in 0i64..100, borrow in 0i64..5000,
                                       paced in -10_000i64..1_010_000) {
            let l = layout();
            let p = Policy { max_wait: wait, max_borrow: borrow.max(wait) };
            if let Decision::Issue { ts, seq, borrowed } = decide((last_ts, last_seq), now, paced, FAR, &l, &p) {
                prop_assert!((ts, seq) > (last_ts, last_seq));
                prop_assert!(ts - now <= p.max_borrow.max(0));
                prop_assert_eq!(borrowed, ts > now);
            }
        }

        #[test]
        fn decode_inverts_compose(ts in 0i64..(1i64 << 41), seq in 0u64..4096, node in 0i64..1024) {
            let l = Layout::new(41, 10, 12, 1_600_000_000_000, node).unwrap();
            let d = l.decode(l.compose(ts, seq)).unwrap();
            prop_assert_eq!(d, Decoded { unix_ms: ts + l.epoch_ms, node_id: node as u32, seq: seq as u32 });
        }
    }

    #[test]
    fn raising_at_runtime_never_lowers_and_needs_a_new_reservation() {
        let layout = Layout::new(41, 10, 12, 0, 1).unwrap();
        let g = Generator::new();
        g.resume_above(layout.compose(1_000, 0), &layout);
        g.extend_reservation(5_000);
        let high = layout.compose(20_000, 7);
        g.raise_above(high, &layout);
        let (ts, _) = g.last(&layout);
        assert!(layout.compose(ts + 1, 0) > high);
        // strictly above, even for an ID with sequence 0 at a millisecond's start
        let g2 = Generator::new();
        g2.resume_above(0, &layout);
        g2.raise_above(layout.compose(30_000, 0), &layout);
        let (ts2, seq2) = g2.last(&layout);
        // "last issued" is the end of millisecond 30000: the next ID has a later timestamp
        assert_eq!((ts2, seq2), (30_000, layout.max_seq()), "the next ID could be compose(30000, 0) itself");
        // below the current state: no change
        g.raise_above(layout.compose(100, 0), &layout);
        assert_eq!(g.last(&layout).0, ts);
        assert_eq!(g.reserved(), 5_000, "the reservation moves only when persisted");
        let clock = FakeClock::at(20_001);
        let policy = Policy { max_wait: 5, max_borrow: 2_000 };
        assert!(matches!(g.next(&layout, &policy, &clock), Err(NextError::NeedReservation { .. })));
        g.extend_reservation(30_000);
        let (id, _) = g.next(&layout, &policy, &clock).unwrap();
        assert!(id > high);
    }
}
