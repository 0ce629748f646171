//! `seqgen_worker_status()`: the allocators' health, in SQL (one row per database).

use std::sync::atomic::Ordering;

use pgrx::datum::TimestampWithTimeZone;
use pgrx::prelude::*;

use crate::plumbing::error::{OrRaise, SeqgenError};
use crate::plumbing::shmem::{self, WorkerStatus};

/// A moment the worker recorded (ms since the Unix epoch; 0: never).
fn recorded(unix_ms: i64) -> Option<TimestampWithTimeZone> {
    (unix_ms > 0).then(|| crate::generators::snowflake::to_timestamptz(unix_ms))
}

/// One row: this database's allocator. Is it running, since when, when it last finished a
/// cycle, how many mailboxes are in use and how many jobs wait, and its last error.
#[pg_extern(volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
fn seqgen_worker_status() -> TableIterator<
    'static,
    (
        name!(running, bool),
        name!(pid, Option<i32>),
        name!(started, Option<TimestampWithTimeZone>),
        name!(last_cycle, Option<TimestampWithTimeZone>),
        name!(mailboxes_in_use, i32),
        name!(jobs_pending, i32),
        name!(mailboxes_reclaimed, i64),
        name!(errors, i64),
        name!(last_error, Option<String>),
        name!(last_error_time, Option<TimestampWithTimeZone>),
    ),
> {
    shmem::server().ok_or(SeqgenError::NotPreloaded).or_raise();
    // no area: no allocator for this database (yet)
    let r = shmem::header().map(|h| row(h, h.db.load(Ordering::Acquire))).unwrap_or_default();
    TableIterator::once((
        r.running,
        r.pid,
        r.started,
        r.last_cycle,
        r.mailboxes_in_use,
        r.jobs_pending,
        r.reclaimed,
        r.errors,
        r.last_error,
        r.last_error_time,
    ))
}

/// One row per database with an allocator, whatever the current database: its name, whether
/// its allocator runs (and its pid), since when, its last cycle, tags loaded, mailboxes in use,
/// jobs pending, errors and the last one. `clocks_open`: every database's snowflake and UUIDv7
/// reservations have been read since the server started (until then those IDs wait).
#[pg_extern(volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
fn seqgen_allocators() -> TableIterator<
    'static,
    (
        name!(database, Option<String>),
        name!(running, bool),
        name!(pid, Option<i32>),
        name!(started, Option<TimestampWithTimeZone>),
        name!(last_cycle, Option<TimestampWithTimeZone>),
        name!(tags, i32),
        name!(mailboxes_in_use, i32),
        name!(jobs_pending, i32),
        name!(errors, i64),
        name!(last_error, Option<String>),
        name!(last_error_time, Option<TimestampWithTimeZone>),
        name!(clocks_open, bool),
    ),
> {
    let s = shmem::server().ok_or(SeqgenError::NotPreloaded).or_raise();
    let open = s.clocks_open.load(Ordering::Acquire) != 0;
    let mut rows = vec![];
    for h in shmem::areas(s) {
        let db = h.db.load(Ordering::Acquire);
        if db != 0 {
            let r = row(h, db);
            rows.push((
                r.database,
                r.running,
                r.pid,
                r.started,
                r.last_cycle,
                r.tags,
                r.mailboxes_in_use,
                r.jobs_pending,
                r.errors,
                r.last_error,
                r.last_error_time,
                open,
            ));
        }
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    TableIterator::new(rows)
}

/// One database's allocator, as both functions report it.
#[derive(Default)]
struct Row {
    database: Option<String>,
    running: bool,
    pid: Option<i32>,
    started: Option<TimestampWithTimeZone>,
    last_cycle: Option<TimestampWithTimeZone>,
    tags: i32,
    mailboxes_in_use: i32,
    jobs_pending: i32,
    reclaimed: i64,
    errors: i64,
    last_error: Option<String>,
    last_error_time: Option<TimestampWithTimeZone>,
}

fn row(h: &'static shmem::Header, db: u32) -> Row {
    let name = unsafe {
        let p = pg_sys::get_database_name(pg_sys::Oid::from(db));
        (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
    };
    let running = h.worker_status() == WorkerStatus::Running;
    let pid = h.worker_pid.load(Ordering::Acquire);
    let mut in_use = 0;
    let mut pending = 0;
    let mut tags = 0;
    for mb in &h.mailboxes {
        match mb.load().1 {
            shmem::MB_FREE => {}
            shmem::MB_POSTED => {
                in_use += 1;
                pending += 1;
            }
            _ => in_use += 1,
        }
    }
    for s in shmem::slots(h) {
        if s.state.load(Ordering::Acquire) == shmem::SLOT_ACTIVE {
            tags += 1;
            pending += (s.want.load(Ordering::Relaxed) != 0) as i32 + (s.ord_want.load(Ordering::Relaxed) != 0) as i32;
        }
    }
    pending += (h.snowflake.want.load(Ordering::Relaxed) != 0) as i32;
    pending += (h.uuid.want.load(Ordering::Relaxed) != 0) as i32;
    pending += (h.snowflake53.want.load(Ordering::Relaxed) != 0) as i32;
    let hl = &h.health;
    let error = hl.last_error.read();
    Row {
        database: name,
        running,
        pid: (running && pid != 0).then_some(pid),
        started: recorded(hl.started_ms.load(Ordering::Acquire)),
        last_cycle: recorded(hl.last_cycle_ms.load(Ordering::Acquire)),
        tags,
        mailboxes_in_use: in_use,
        jobs_pending: pending,
        reclaimed: hl.reclaimed.load(Ordering::Relaxed) as i64,
        errors: hl.errors.load(Ordering::Relaxed) as i64,
        last_error: (!error.is_empty()).then_some(error),
        last_error_time: recorded(hl.last_error_ms.load(Ordering::Acquire)),
    }
}

/// This node's identity in the current database: the node id its IDs carry, where it comes
/// from (`setting`: `seqgen.node_id`; `citus`: the Citus coordinator's node id for this node's
/// group, shown as `citus_group`; `citus group not confirmed`: refused until the node confirmed
/// its group as its own; `not in citus metadata`: refused until the node joins; `unknown`: not
/// read yet), and on a Citus worker when the
/// last successful read of the coordinator's tag definitions began (every change committed
/// there before it has been applied here, or is listed as refused) and when one last changed
/// something here.
#[pg_extern(volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
fn seqgen_node() -> TableIterator<
    'static,
    (
        name!(node_id, Option<i32>),
        name!(source, String),
        name!(citus_group, Option<i32>),
        name!(definitions_read, Option<TimestampWithTimeZone>),
        name!(definitions_changed, Option<TimestampWithTimeZone>),
    ),
> {
    use crate::plumbing::node;
    let h = crate::plumbing::directory::attach().or_raise();
    let id = node::id(h).ok().map(|n| n as i32);
    let g = h.citus_node.load(Ordering::Acquire);
    let source = match g {
        g if g >= 0 => "citus",
        node::NOT_CITUS => "setting",
        node::NOT_MEMBER => "not in citus metadata",
        node::UNCONFIRMED => "citus group not confirmed",
        _ => "unknown",
    };
    TableIterator::once((
        id,
        source.to_string(),
        match g {
            g if g >= 0 => Some(node::group_of(g) as i32),
            node::UNCONFIRMED => Some(h.citus_candidate.load(Ordering::Acquire) as i32),
            _ => None,
        },
        recorded(h.sync_ok_ms.load(Ordering::Acquire)),
        recorded(h.sync_applied_ms.load(Ordering::Acquire)),
    ))
}

/// Microseconds as milliseconds.
fn ms(us: &std::sync::atomic::AtomicU64) -> f64 {
    us.load(Ordering::Relaxed) as f64 / 1000.0
}

/// One row: this database's cumulative counters since the server started, the extension was
/// created, or `seqgen_stats_reset()`.
#[pg_extern(volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
fn seqgen_stats() -> TableIterator<
    'static,
    (
        name!(drawn, i64),
        name!(segments, i64),
        name!(reserved, i64),
        name!(cached, i64),
        name!(lost_eviction, i64),
        name!(lost_change, i64),
        name!(lost_session, i64),
        name!(lost_period, i64),
        name!(evictions, i64),
        name!(waits, i64),
        name!(wait_time, f64),
        name!(longest_wait, f64),
        name!(wait_timeouts, i64),
        name!(gapless_draws, i64),
        name!(gapless_time, f64),
        name!(longest_gapless, f64),
        name!(gapless_timeouts, i64),
        name!(stats_reset, Option<TimestampWithTimeZone>),
    ),
> {
    shmem::server().ok_or(SeqgenError::NotPreloaded).or_raise();
    let Some(h) = shmem::header() else {
        // no area: nothing counted in this database yet
        return TableIterator::once((0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0.0, 0, 0, 0.0, 0.0, 0, None));
    };
    let st = &h.stats;
    let n = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed).min(i64::MAX as u64) as i64;
    // the slots' sums and the retired ones' read together: no slot is retired (exclusive) and
    // no segment published (shared, but counted with its publication) in between
    let (live, cached, taken_retired, skipped_retired, reserved) = shmem::with_dir_lock(h, false, || {
        let (live, cached) = shmem::live_sums(h);
        (
            live,
            cached,
            st.taken_retired.load(Ordering::Relaxed),
            st.skipped_retired.load(Ordering::Relaxed),
            n(&st.reserved),
        )
    });
    let big = |v: u64| v.min(i64::MAX as u64) as i64;
    let taken = taken_retired.saturating_add(big(live.taken));
    let skipped = skipped_retired.saturating_add(big(live.skipped));
    TableIterator::once((
        taken.max(0),
        n(&st.segments),
        reserved,
        big(cached),
        n(&st.lost_eviction),
        n(&st.lost_change),
        n(&st.lost_session),
        skipped.max(0),
        n(&st.evictions),
        n(&st.waits),
        ms(&st.wait_us),
        ms(&st.longest_wait_us),
        n(&st.wait_timeouts),
        n(&st.gapless),
        ms(&st.gapless_us),
        ms(&st.longest_gapless_us),
        n(&st.gapless_timeouts),
        recorded(st.reset_ms.load(Ordering::Relaxed)),
    ))
}

/// Set this database's counters of `seqgen_stats()` to zero (superusers, and the roles
/// granted EXECUTE on it).
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_stats_reset() {
    shmem::server().ok_or(SeqgenError::NotPreloaded).or_raise();
    if let Some(h) = shmem::header() {
        // no slot retired between the sums and the reset (their totals would be lost)
        shmem::with_dir_lock(h, false, || h.stats.reset(shmem::now_ms(), shmem::live_sums(h).0));
    }
}
