//! Snowflake IDs: `seqgen_snowflake()`, `seqgen_snowflake_decode()`,
//! `seqgen_snowflake_status()`, `seqgen_snowflake_at()`, and the shared clock-ordered
//! generators behind them and behind `seqgen_uuidv7()` (see [`Kind`]).
//!
//! The generator itself (layout, clock policy, the CAS word) is `seqgen_core::snowflake`; this
//! module puts it in shared memory, reads the real clock, and asks the worker to persist the
//! reservation ahead of the last issued timestamp.

use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use pgrx::datum::TimestampWithTimeZone;
use pgrx::prelude::*;
use seqgen_core::snowflake::{Clock, Events, Layout, NextError, Policy};

use crate::plumbing::directory;
use crate::plumbing::error::{required, OrRaise, Result, SeqgenError};
use crate::plumbing::guc;
use crate::plumbing::node;
use crate::plumbing::shmem::{self, AreaClock, ClockShared, Header, WorkerStatus};
use crate::plumbing::wait::wait_for;

/// Episode flags, so each clock event is logged once rather than per ID.
const EP_BORROWING: u32 = 1;
const EP_REFUSING: u32 = 2;
const EP_WAITING: u32 = 4;

/// The two clock-ordered generators of a server: snowflake IDs and UUIDv7s. Each has its own
/// shared state (word, reservation, counters), layout and persisted reservation; the clock
/// policy and the worker protocol are the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Snowflake,
    Uuid,
    /// `seqgen_snowflake53()`: IDs a JavaScript number holds exactly.
    Snowflake53,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Snowflake, Kind::Uuid, Kind::Snowflake53];

    /// The server-wide generator (every database draws from it).
    pub fn shared(self) -> Result<&'static ClockShared> {
        let s = shmem::server().ok_or(SeqgenError::NotPreloaded)?;
        Ok(match self {
            Kind::Snowflake => &s.snowflake,
            Kind::Uuid => &s.uuid,
            Kind::Snowflake53 => &s.snowflake53,
        })
    }

    /// This database's reservation of it.
    pub fn area(self, h: &Header) -> &AreaClock {
        match self {
            Kind::Snowflake => &h.snowflake,
            Kind::Uuid => &h.uuid,
            Kind::Snowflake53 => &h.snowflake53,
        }
    }

    pub fn layout(self) -> &'static Layout {
        static UUID: OnceLock<Layout> = OnceLock::new();
        match self {
            Kind::Snowflake => layout(),
            Kind::Uuid => UUID.get_or_init(seqgen_core::uuid::layout),
            Kind::Snowflake53 => layout53(),
        }
    }

    /// For messages: "snowflake", "UUIDv7".
    pub fn name(self) -> &'static str {
        match self {
            Kind::Snowflake => "snowflake",
            Kind::Uuid => "UUIDv7",
            Kind::Snowflake53 => "53-bit snowflake",
        }
    }

    /// Its reservation table, as an index into `catalog::RESERVATION_TABLES`.
    pub fn table(self) -> usize {
        match self {
            Kind::Snowflake => 0,
            Kind::Uuid => 1,
            Kind::Snowflake53 => 2,
        }
    }

    /// The function that rewinds this generator's reservation.
    fn rewind_call(self) -> &'static str {
        match self {
            Kind::Snowflake => "seqgen_snowflake_rewind()",
            Kind::Uuid => "seqgen_uuidv7_rewind()",
            Kind::Snowflake53 => "seqgen_snowflake53_rewind()",
        }
    }

    /// An ID in the generator's units as users see it: a number, or for UUIDv7 the lowest UUID
    /// of its millisecond and counter.
    pub fn show(self, id: i64) -> String {
        match self {
            Kind::Uuid => pgrx::datum::Uuid::from_bytes(seqgen_core::uuid::compose_position(id, 0)).to_string(),
            _ => id.to_string(),
        }
    }

    fn reservation(self) -> &'static str {
        match self {
            Kind::Snowflake => "snowflake reservation",
            Kind::Uuid => "UUIDv7 reservation",
            Kind::Snowflake53 => "53-bit snowflake reservation",
        }
    }
}

/// The snowflake layout, fixed at server start (the settings are postmaster-level).
pub fn layout() -> &'static Layout {
    static LAYOUT: OnceLock<Layout> = OnceLock::new();
    LAYOUT.get_or_init(|| configured_layout().unwrap_or_else(|e| SeqgenError::InvalidArgument(e).raise()))
}

/// The layout of the 53-bit snowflakes (fixed widths; the epoch and the node id are the
/// snowflake settings). A node id that does not fit its 4 bits is reported by the draw
/// ([`next`]), not at start-up: only servers that use `seqgen_snowflake53()` need one below 16.
pub fn layout53() -> &'static Layout {
    static LAYOUT: OnceLock<Layout> = OnceLock::new();
    LAYOUT.get_or_init(|| {
        let epoch = seqgen_core::snowflake::parse_epoch(&guc::snowflake_epoch()).unwrap_or(0);
        let node = layout_node();
        seqgen_core::snowflake::js_safe_layout(epoch, if node < 16 { node } else { 0 }).expect("a valid 53-bit layout")
    })
}

/// Build the layout from the settings; `Err` with a message when they are impossible.
pub fn configured_layout() -> std::result::Result<Layout, String> {
    let epoch = seqgen_core::snowflake::parse_epoch(&guc::snowflake_epoch())?;
    Layout::new(
        guc::SNOWFLAKE_TIME_BITS.get() as i64,
        guc::SNOWFLAKE_NODE_BITS.get() as i64,
        guc::SNOWFLAKE_SEQUENCE_BITS.get() as i64,
        epoch,
        layout_node(),
    )
    .map_err(|e| e.to_string())
}

/// The node id built into the layouts: `seqgen.node_id`, or 0 when Citus is preloaded (each
/// ID then gets the node id of its database at the draw: `plumbing::node`).
fn layout_node() -> i64 {
    if node::citus_preloaded() {
        0
    } else {
        guc::NODE_ID.get() as i64
    }
}

/// The node id a status row shows: the one this database's IDs carry (on Citus the coordinator's node id for its group;
/// -1 while it is not known).
pub fn status_node(layout: &Layout) -> i32 {
    if !node::citus_preloaded() {
        return layout.node_id as i32;
    }
    directory::attach().and_then(node::id).map_or(-1, |n| n as i32)
}

/// On Citus: put this node's node id (the coordinator's for its group) into an ID composed with node 0.
#[cold]
#[inline(never)]
fn with_citus_node(h: &Header, kind: Kind, layout: &Layout, id: i64) -> Result<i64> {
    let n = node::id(h)?;
    if n as u64 >= 1u64 << layout.node_bits {
        return Err(match kind {
            Kind::Snowflake53 => SeqgenError::Snowflake53Node(n),
            _ => SeqgenError::NodeDoesNotFit { node: n, bits: layout.node_bits },
        });
    }
    Ok(id | (n as i64) << layout.seq_bits)
}

fn policy() -> Policy {
    Policy { max_wait: guc::SNOWFLAKE_MAX_WAIT.get() as i64, max_borrow: guc::SNOWFLAKE_MAX_BORROW.get() as i64 }
}

/// The system clock (CLOCK_REALTIME: the clock that can be set backwards).
struct SystemClock;

impl Clock for SystemClock {
    #[inline]
    fn now_ms(&self) -> i64 {
        shmem::now_ms()
    }

    fn pause(&self, remaining_ms: i64) {
        if remaining_ms <= 1 {
            // the next millisecond is near: spin (the caller re-reads the clock)
            for _ in 0..64 {
                std::hint::spin_loop();
            }
        } else {
            unsafe {
                pg_sys::pg_usleep((remaining_ms.min(10) * 1000) as std::ffi::c_long);
            }
            pgrx::check_for_interrupts!();
        }
    }
}

#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_snowflake() -> i64 {
    crate::plumbing::wait::begin_call();
    next(Kind::Snowflake).or_raise()
}

/// The next ID of generator `kind` (for UUIDs: `unix_ms << 21 | counter`), below this
/// database's reservation. Steady state: a clock read and one compare-and-swap.
#[inline]
pub fn next(kind: Kind) -> Result<i64> {
    let sf = kind.shared()?;
    let layout = kind.layout();
    if kind == Kind::Snowflake53 && !node::citus_preloaded() && guc::NODE_ID.get() >= 16 {
        return Err(SeqgenError::Snowflake53Node(guc::NODE_ID.get() as u32));
    }
    loop {
        let h = match shmem::header() {
            Some(h) => h,
            None => directory::attach()?,
        };
        let area = kind.area(h);
        match sf.gen.next_below(&area.reserved, layout, &policy(), &SystemClock) {
            Ok((id, ev)) => {
                let ts = id >> (layout.node_bits + layout.seq_bits);
                if ts >= area.refresh_at.load(Ordering::Relaxed) {
                    ask_for_reservation(h, kind);
                }
                if ev != Events::default() || sf.episodes.load(Ordering::Relaxed) != 0 {
                    note_events(kind, sf, ev, layout);
                }
                return if kind == Kind::Uuid || !node::citus_preloaded() {
                    Ok(id)
                } else {
                    with_citus_node(h, kind, layout, id)
                };
            }
            Err(NextError::NeedReservation { ts }) => wait_for_reservation(kind, ts)?,
            Err(NextError::ClockBehind { behind }) => {
                sf.refusals.fetch_add(1, Ordering::Relaxed);
                if sf.episodes.fetch_or(EP_REFUSING, Ordering::AcqRel) & EP_REFUSING == 0 {
                    log!("pg_seqgen: the clock is {behind} ms behind the last {} timestamp, beyond seqgen.snowflake_max_borrow; refusing until it catches up", kind.name());
                }
                return Err(SeqgenError::ClockBehind { what: kind.name(), behind });
            }
            Err(NextError::TimeExhausted) => return Err(SeqgenError::TimeExhausted(kind.name())),
            Err(NextError::BeforeEpoch) => return Err(SeqgenError::BeforeEpoch),
        }
    }
}

fn ask_for_reservation(h: &Header, kind: Kind) {
    let area = kind.area(h);
    area.active_ms.store(shmem::now_ms(), Ordering::Relaxed);
    if area.want.swap(1, Ordering::AcqRel) == 0 {
        h.ring();
    }
}

/// Counters and once-per-episode log lines for clock events.
#[cold]
fn note_events(kind: Kind, sf: &ClockShared, ev: Events, layout: &Layout) {
    if ev.waited_overflow {
        sf.sequence_waits.fetch_add(1, Ordering::Relaxed);
    }
    let mut set = 0;
    if ev.waited_behind {
        sf.waits.fetch_add(1, Ordering::Relaxed);
        set |= EP_WAITING;
    }
    if ev.borrowed {
        sf.borrows.fetch_add(1, Ordering::Relaxed);
        set |= EP_BORROWING;
    }
    let lag = lag_ms(sf, layout);
    let before =
        if set != 0 { sf.episodes.fetch_or(set, Ordering::AcqRel) } else { sf.episodes.load(Ordering::Acquire) };
    if set & EP_WAITING != 0 && before & EP_WAITING == 0 {
        log!(
            "pg_seqgen: the clock moved back; {} IDs wait for it to catch up (seqgen.snowflake_max_wait)",
            kind.name()
        );
    }
    if set & EP_BORROWING != 0 && before & EP_BORROWING == 0 {
        log!("pg_seqgen: the clock is {lag} ms behind the last {} timestamp; borrowing time", kind.name());
    }
    // an ID issued at the clock's own time ends every episode
    if set == 0 && lag == 0 && before != 0 && sf.episodes.swap(0, Ordering::AcqRel) != 0 {
        log!("pg_seqgen: the clock has caught up with the last {} timestamp", kind.name());
    }
}

/// How far the last issued timestamp is ahead of the clock, in ms (0 when it is not).
fn lag_ms(sf: &ClockShared, layout: &Layout) -> i64 {
    let (last_ts, _) = sf.gen.last(layout);
    (last_ts + layout.epoch_ms - shmem::now_ms()).max(0)
}

/// This database's reservation must be extended before `ts` can be issued: ask the worker
/// and wait.
#[cold]
#[inline(never)]
fn wait_for_reservation(kind: Kind, ts: i64) -> Result<()> {
    let h = directory::ready_header()?;
    let area = kind.area(h);
    let err_before = area.err_seq.load(Ordering::Acquire);
    area.active_ms.store(shmem::now_ms(), Ordering::Relaxed);
    area.want.store(1, Ordering::Release);
    h.ring();
    let timeout = guc::ALLOCATION_TIMEOUT.get();
    let outcome = wait_for(h, || {
        if area.loaded.load(Ordering::Acquire) != 0 && area.reserved.load(Ordering::Acquire) > ts {
            return Some(Ok(()));
        }
        if area.err_seq.load(Ordering::Acquire) != err_before {
            let c = area.err_code.load(Ordering::Acquire);
            return Some(Err(directory::slot_failure(h, c, kind.reservation())));
        }
        // a worker that is not running may be starting (or restarting): wait for it until
        // the timeout, as the segment path does
        None
    });
    match outcome {
        Some(r) => r,
        None if h.worker_status() != WorkerStatus::Running => Err(SeqgenError::WorkerNotRunning),
        None if shmem::server().is_some_and(|s| s.clocks_open.load(Ordering::Acquire) == 0) => {
            Err(SeqgenError::ClocksNotOpen(kind.name()))
        }
        None => Err(SeqgenError::Timeout { tag: kind.reservation().into(), ms: timeout }),
    }
}

/// Worker side: should this database's reservation of `kind` be extended (or re-read) this
/// cycle? Nothing is extended before every database's reservation has been read since the
/// server started (`clocks_open`): the shared generator may still have to rise above one.
pub fn worker_wants(h: &Header, kind: Kind, now_ms: i64, periodic: bool) -> Option<SnowflakeJob> {
    let area = kind.area(h);
    let open = shmem::server().is_some_and(|s| s.clocks_open.load(Ordering::Acquire) != 0);
    if area.loaded.load(Ordering::Acquire) == 0 || !open {
        return None;
    }
    let asked = area.want.swap(0, Ordering::AcqRel) != 0;
    // keep the reservation ahead while IDs are being issued (or were in the last minute)
    let recent = now_ms - area.active_ms.load(Ordering::Relaxed) < 60_000;
    let layout = kind.layout();
    let now_ts = now_ms - layout.epoch_ms;
    let behind_refresh = now_ts >= area.refresh_at.load(Ordering::Relaxed);
    if asked || (recent && behind_refresh) {
        Some(SnowflakeJob::Extend)
    } else {
        periodic.then_some(SnowflakeJob::Refresh)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnowflakeJob {
    /// Persist a reservation further ahead.
    Extend,
    /// Read the persisted reservation again (once a second when no extension is due) and raise
    /// the generator above it. A reservation written by other means than this worker
    /// (restored by `pg_restore` after the worker had loaded the empty table, or raised by
    /// hand after a failover) counts when its transaction commits, through the
    /// `snowflake_written` / `uuidv7_written` triggers; this re-read, and the value an
    /// extension finds stored, cover writes that fired no trigger
    /// (`pg_restore --disable-triggers`).
    Refresh,
}

/// Worker side: the reservation to persist, as the first unreserved timestamp.
/// One window ahead of the clock (or of the last issued timestamp, when borrowing): never
/// further, so a restart never finds the reservation more than a window ahead of where the
/// clock was. (Never lower than the current one: `publish_reservation` keeps the maximum.)
pub fn next_reservation(h: &Header, kind: Kind, now_ms: i64) -> i64 {
    let (layout, area) = (kind.layout(), kind.area(h));
    let last_ts = kind.shared().map(|sf| sf.gen.last(layout).0).unwrap_or(0);
    let base = (now_ms - layout.epoch_ms).max(last_ts + 1);
    (base + guc::SNOWFLAKE_RESERVE.get() as i64).max(area.reserved.load(Ordering::Acquire))
}

/// Worker side, after the reservation `ts` is durably committed in this database; the row
/// now holds `stored`, which is above `ts`'s IDs when someone else wrote a higher value (a
/// write that fired no trigger): every later ID is above that too.
pub fn publish_reservation(h: &Header, kind: Kind, ts: i64, stored: i64) {
    if stored > kind.layout().id_floor(ts) {
        raise_server(kind, stored - 1);
    }
    let area = kind.area(h);
    area.reserved.fetch_max(ts, Ordering::AcqRel);
    area.refresh_at.store(ts - (guc::SNOWFLAKE_RESERVE.get() as i64 / 2).max(1), Ordering::Release);
}

/// Every later ID of the server's generator `kind` is above `high_water_id` (a reservation
/// read from some database). Never lowers it.
pub fn raise_server(kind: Kind, high_water_id: i64) {
    if let Ok(sf) = kind.shared() {
        sf.gen.raise_above(high_water_id, kind.layout());
    }
}

/// Worker side, after reading this database's persisted high-water ID when it starts. Before
/// the clocks open (the server is starting) every later ID of the server must be above it;
/// the readers raised the generator already, this is the same raise again. Once they are open
/// the generator is above everything this database issued (its IDs came from it), and the
/// persisted value is a reservation up to a window ahead of the clock: raising to it would
/// make the next IDs of every database borrow time. A value written meanwhile by other means
/// is raised by the first extension of the reservation, which reads it back before any ID of
/// this database is issued. Never lowers the generator.
pub fn resume(h: &Header, kind: Kind, high_water_id: i64) {
    if shmem::server().is_none_or(|s| s.clocks_open.load(Ordering::Acquire) == 0) {
        raise_server(kind, high_water_id);
    }
    let area = kind.area(h);
    area.refresh_at.store(i64::MIN, Ordering::Release);
    area.loaded.store(1, Ordering::Release);
}

/// Worker side, after re-reading the persisted reservation: every later ID is at or above it.
/// Never lowers the generator; the next ID at or beyond the in-memory reservation waits for a
/// new one to be persisted above the raised state, as usual.
pub fn refresh(h: &Header, kind: Kind, persisted_id: i64) {
    let (area, layout) = (kind.area(h), kind.layout());
    let Ok(sf) = kind.shared() else { return };
    // Only a reservation above this database's own (which is always ahead of the clock) came
    // from elsewhere; raising to our own would jump the generator a window ahead every second.
    if persisted_id > layout.id_floor(area.reserved.load(Ordering::Acquire)) {
        let before = sf.gen.last(layout);
        sf.gen.raise_above(persisted_id - 1, layout);
        if sf.gen.last(layout) != before {
            log!(
                "pg_seqgen: the persisted {} ({persisted_id}) is above this server's; every later ID is above it",
                kind.reservation()
            );
        }
    }
}

/// Worker side: persisting failed, for the reason `c` (a `directory::code`).
pub fn report_failure(h: &Header, kind: Kind, c: u32) {
    kind.area(h).err_code.store(c, Ordering::Release);
    kind.area(h).err_seq.fetch_add(1, Ordering::AcqRel);
}

/// Raise the snowflake generator at once so that every later ID is above `min_id`, e.g. after
/// an asynchronous failover to a standby that may have missed the old primary's last
/// reservation. Returns once a reservation above the new floor is persisted, so the raise
/// survives a restart. Returns the last ID the generator counts as issued (every later ID is
/// above it). Never lowers the generator. A floor further ahead of this server's clock than
/// `seqgen.snowflake_max_borrow` would make every snowflake call fail until the clock reaches
/// it, so it is refused (a typo is not a floor), unless `force` (snowflake calls then fail with
/// 58000 until the clock reaches it; `seqgen_snowflake_rewind` is the way back from a mistake).
#[pg_extern(volatile, parallel_unsafe, name = "seqgen_snowflake_advance")]
fn seqgen_snowflake_advance_force(min_id: Option<i64>, force: default!(Option<bool>, false)) -> i64 {
    let force = required(force, "force");
    let min_id = required(min_id, "min_id");
    crate::plumbing::wait::begin_call();
    advance(Kind::Snowflake, min_id, force).or_raise()
}

/// The C symbol of `seqgen_snowflake_advance(bigint)` before 0.6.0, which a catalog not yet
/// updated calls (a symbol keeps its arguments; see `seqgen_create`). No SQL.
#[pg_extern(sql = false)]
fn seqgen_snowflake_advance(min_id: Option<i64>) -> i64 {
    seqgen_snowflake_advance_force(min_id, Some(false))
}

/// Raise generator `kind` at once so that every later ID is above `min_id` (in the generator's
/// own units: for UUIDv7, `ms << 21 | counter`): see `seqgen_snowflake_advance`.
pub fn advance(kind: Kind, min_id: i64, force: bool) -> Result<i64> {
    if min_id < 0 {
        return Err(SeqgenError::InvalidArgument(format!("min_id must not be negative, got {min_id}")));
    }
    let layout = kind.layout();
    if layout.decode(min_id).is_none() {
        return Err(SeqgenError::InvalidArgument(format!(
            "{} is not a {} ID of this layout",
            kind.show(min_id),
            kind.name()
        )));
    }
    // the first timestamp of the IDs after the floor, against this server's clock
    let first = layout.ts_floor_for(min_id.saturating_add(1));
    let ahead = first.saturating_sub(shmem::now_ms() - layout.epoch_ms);
    let borrow = guc::SNOWFLAKE_MAX_BORROW.get() as i64;
    if ahead > borrow && !force {
        return Err(SeqgenError::InvalidArgument(format!(
            "{} is {ahead} ms ({}) ahead of this server's clock, more than seqgen.snowflake_max_borrow ({borrow} ms): \
             every {} call would fail until the clock reaches {}; pass force => true if that is really the floor",
            kind.show(min_id),
            human_ms(ahead),
            kind.name(),
            iso(first.saturating_add(layout.epoch_ms))
        )));
    }
    let h = directory::ready_header()?;
    let sf = kind.shared()?;
    // every database's reservation must have been read first (else a later read could not
    // tell the two apart)
    wait_loaded(h, kind)?;
    sf.gen.raise_above(min_id, layout);
    // Durable before it returns: wait until the worker has persisted a reservation above the
    // new floor, so a restart right after this call still resumes above `min_id`.
    let (last_ts, last_seq) = sf.gen.last(layout);
    let area = kind.area(h);
    area.refresh_at.store(i64::MIN, Ordering::Release);
    if area.reserved.load(Ordering::Acquire) <= last_ts + 1 {
        wait_for_reservation(kind, last_ts + 1)?;
    }
    Ok(layout.compose(last_ts, last_seq))
}

/// `3 h 12 min`, `45 s`: a duration for messages.
fn human_ms(ms: i64) -> String {
    let s = ms / 1000;
    match s {
        s if s >= 86_400 * 365 => format!("{} years", s / (86_400 * 365)),
        s if s >= 86_400 => format!("{} days", s / 86_400),
        s if s >= 3600 => format!("{} h {} min", s / 3600, s / 60 % 60),
        s if s >= 60 => format!("{} min {} s", s / 60, s % 60),
        s => format!("{s} s"),
    }
}

/// The way back from a floor accepted by mistake (`seqgen_snowflake_advance` with `force`, or
/// a reservation raised by hand too far): lower this database's persisted snowflake
/// reservation to `to_id`, to take effect at the next restart of the server (the running
/// generator is not lowered: it refuses until then). Superusers only. Refused unless the
/// generator is far enough ahead of the clock that it has been refusing every call (so no ID
/// was issued above the raised floor), and below the reservation any other database holds.
/// `to_id` must be at least the highest snowflake ID your tables hold. Returns the value now
/// stored.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_snowflake_rewind(to_id: Option<i64>) -> i64 {
    rewind(Kind::Snowflake, required(to_id, "to_id")).or_raise()
}

/// The C symbol of `seqgen_uuidv7_rewind(bigint)` before 0.6.0 (`to_id` in the generator's
/// units, unix ms << 21 | counter), which a catalog not yet updated calls; 0.6.0's takes a
/// uuid (`uuid::seqgen_uuidv7_rewind_uuid`). No SQL.
#[pg_extern(sql = false)]
fn seqgen_uuidv7_rewind(to_id: Option<i64>) -> i64 {
    rewind(Kind::Uuid, required(to_id, "to_id")).or_raise()
}

pub fn rewind(kind: Kind, to_id: i64) -> Result<i64> {
    if !unsafe { pg_sys::superuser() } {
        return Err(SeqgenError::SuperuserOnly(kind.rewind_call()));
    }
    if to_id < 0 {
        return Err(SeqgenError::InvalidArgument(format!("to_id must not be negative, got {to_id}")));
    }
    let h = directory::attach()?;
    let (sf, layout) = (kind.shared()?, kind.layout());
    let lag = lag_ms(sf, layout);
    let borrow = guc::SNOWFLAKE_MAX_BORROW.get() as i64;
    if lag <= borrow {
        return Err(SeqgenError::InvalidArgument(format!(
            "the {} generator is {lag} ms ahead of the clock, within seqgen.snowflake_max_borrow ({borrow} ms): \
             it may have issued IDs up to there, and a rewind could repeat them",
            kind.name()
        )));
    }
    // every other database's reservation stays a floor
    let s = shmem::server().ok_or(SeqgenError::NotPreloaded)?;
    for other in shmem::areas(s).filter(|o| !std::ptr::eq(*o, h) && o.db.load(Ordering::Acquire) != 0) {
        let reserved = kind.area(other).reserved.load(Ordering::Acquire);
        if reserved > 0 && to_id < layout.id_floor(reserved - 1) {
            return Err(SeqgenError::InvalidArgument(format!(
                "database {} holds a {} up to {}: rewind to at least that",
                other.db.load(Ordering::Acquire),
                kind.reservation(),
                kind.show(layout.id_floor(reserved - 1))
            )));
        }
    }
    let table = crate::plumbing::catalog::RESERVATION_TABLES[kind.table()];
    // the table name is one of two constants; the guard lets the value go down only for this
    let stored = crate::plumbing::session::bounded_lock_wait(|| {
        crate::plumbing::session::with_settings(&[("seqgen.rewinding", "on")], || {
            Spi::get_one_with_args::<i64>(
                &format!(
                    "UPDATE {table} SET reserved_id = pg_catalog.int8smaller(reserved_id, $1) RETURNING reserved_id"
                ),
                &[to_id.into()],
            )
        })
    })
    .map_err(|e| SeqgenError::Internal(e.to_string()))?
    .unwrap_or(to_id);
    notice!(
        "the {} of this database is {} now; restart the server for it to take effect (until then {} calls keep failing)",
        kind.reservation(),
        kind.show(stored),
        kind.name()
    );
    Ok(stored)
}

/// Wait until this database's reservation is read and every database's reservation has been
/// read since the server started.
fn wait_loaded(h: &'static Header, kind: Kind) -> Result<()> {
    let area = kind.area(h);
    let open = || shmem::server().is_some_and(|s| s.clocks_open.load(Ordering::Acquire) != 0);
    if area.loaded.load(Ordering::Acquire) != 0 && open() {
        return Ok(());
    }
    wait_for(h, || (area.loaded.load(Ordering::Acquire) != 0 && open()).then_some(()))
        .ok_or(SeqgenError::ClocksNotOpen(kind.name()))
}

#[pg_extern(stable, parallel_safe)]
fn seqgen_snowflake_decode(
    id: i64,
) -> TableIterator<'static, (name!(ts, TimestampWithTimeZone), name!(node_id, i32), name!(sequence, i32))> {
    TableIterator::once(decode(Kind::Snowflake, id).or_raise())
}

/// A snowflake-like ID of generator `kind` taken apart: (time, node id, sequence).
pub fn decode(kind: Kind, id: i64) -> Result<(TimestampWithTimeZone, i32, i32)> {
    let layout = kind.layout();
    let d = layout.decode(id).ok_or_else(|| {
        SeqgenError::InvalidArgument(format!("a {} ID is from 0 to {}, got {id}", kind.name(), layout.max_id()))
    })?;
    Ok((to_timestamptz(d.unix_ms), d.node_id as i32, d.seq as i32))
}

/// A timestamptz from milliseconds since the Unix epoch (22023 when out of range).
pub fn to_timestamptz(unix_ms: i64) -> TimestampWithTimeZone {
    // PostgreSQL timestamps count microseconds since 2000-01-01
    const PG_EPOCH_MS: i64 = 946_684_800_000;
    let micros = (unix_ms - PG_EPOCH_MS) * 1000;
    TimestampWithTimeZone::try_from(micros)
        .unwrap_or_else(|_| SeqgenError::InvalidArgument(format!("timestamp {unix_ms} ms is out of range")).raise())
}

/// The lowest snowflake ID of the millisecond `ts` (node 0, sequence 0): every ID of that
/// millisecond or later is at or above it, every ID of an earlier one below it. For
/// `WHERE id >= seqgen_snowflake_at(now() - interval '1 day')` and partition bounds. STABLE,
/// not IMMUTABLE: the answer depends on `seqgen.snowflake_epoch` and the widths, which a
/// restart may change.
#[pg_extern(stable, strict, parallel_safe)]
fn seqgen_snowflake_at(ts: TimestampWithTimeZone) -> i64 {
    snowflake_at(ts).or_raise()
}

fn snowflake_at(ts: TimestampWithTimeZone) -> Result<i64> {
    id_at(Kind::Snowflake, ts)
}

/// The lowest ID of generator `kind` (a snowflake layout) in the millisecond `ts`.
pub fn id_at(kind: Kind, ts: TimestampWithTimeZone) -> Result<i64> {
    let layout = kind.layout();
    let unix_ms = unix_ms_of(ts)?;
    let t = unix_ms - layout.epoch_ms;
    if t < 0 || t > layout.max_ts() {
        return Err(SeqgenError::DatetimeOutOfRange(format!(
            "{} is outside the {} layout's time range (seqgen.snowflake_epoch plus {} bits of milliseconds)",
            iso(unix_ms),
            kind.name(),
            layout.time_bits
        )));
    }
    Ok(layout.id_floor(t))
}

/// Milliseconds since the Unix epoch of a timestamptz (rounded down); 22008 for infinity.
pub fn unix_ms_of(ts: TimestampWithTimeZone) -> Result<i64> {
    if ts.is_infinity() || ts.is_neg_infinity() {
        return Err(SeqgenError::DatetimeOutOfRange("an infinite timestamp has no ID".into()));
    }
    const PG_EPOCH_MS: i64 = 946_684_800_000;
    let micros: i64 = ts.into();
    Ok(micros.div_euclid(1000) + PG_EPOCH_MS)
}

/// An instant for messages: `2024-01-01 00:00:00.000 UTC`.
pub fn iso(unix_ms: i64) -> String {
    let secs = unix_ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let s = secs.rem_euclid(86_400);
    // civil date from days since 1970-01-01 (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:03} UTC", s / 3600, s / 60 % 60, s % 60, unix_ms.rem_euclid(1000))
}

/// One generator's state for the status functions: last issued timestamp and sequence,
/// reservation, lag, and the clock-event counters.
pub type StatusRow = (Option<TimestampWithTimeZone>, i64, Option<TimestampWithTimeZone>, i64, i64, i64, i64, i64);

pub fn status_row(kind: Kind) -> StatusRow {
    let sf = kind.shared().or_raise();
    let layout = kind.layout();
    let area = shmem::header().map(|h| kind.area(h));
    let loaded = area.is_some_and(|a| a.loaded.load(Ordering::Acquire) != 0);
    let (last_ts, last_seq) = sf.gen.last(layout);
    let reserved = area.map(|a| a.reserved.load(Ordering::Acquire)).unwrap_or(0);
    (
        (last_ts > 0).then(|| to_timestamptz(last_ts + layout.epoch_ms)),
        last_seq as i64,
        (loaded && reserved > 0).then(|| to_timestamptz(reserved + layout.epoch_ms)),
        lag_ms(sf, layout),
        sf.waits.load(Ordering::Relaxed) as i64,
        sf.sequence_waits.load(Ordering::Relaxed) as i64,
        sf.borrows.load(Ordering::Relaxed) as i64,
        sf.refusals.load(Ordering::Relaxed) as i64,
    )
}

#[pg_extern(volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
fn seqgen_snowflake_status() -> TableIterator<
    'static,
    (
        name!(node_id, i32),
        name!(last_ts, Option<TimestampWithTimeZone>),
        name!(last_sequence, i64),
        name!(reserved_until, Option<TimestampWithTimeZone>),
        name!(lag_ms, i64),
        name!(waits, i64),
        name!(sequence_waits, i64),
        name!(borrows, i64),
        name!(refusals, i64),
    ),
> {
    let (a, b, c, d, e, f, g, i) = status_row(Kind::Snowflake);
    TableIterator::once((status_node(layout()), a, b, c, d, e, f, g, i))
}
