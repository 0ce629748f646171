//! `seqgen_worker_status()`: the allocators' health, in SQL (one row per database).

use std::sync::atomic::Ordering;

use pgrx::datum::TimestampWithTimeZone;
use pgrx::prelude::*;

use crate::error::{OrRaise, SeqgenError};
use crate::shmem::{self, WorkerStatus};

/// A moment the worker recorded (ms since the Unix epoch; 0: never).
fn recorded(unix_ms: i64) -> Option<TimestampWithTimeZone> {
    (unix_ms > 0).then(|| crate::snowflake::to_timestamptz(unix_ms))
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
    let r = match shmem::header() {
        Some(h) => row(h, h.db.load(Ordering::Acquire)),
        // no allocator for this database (yet)
        None => (None, false, None, None, None, 0, 0, 0, 0, 0, None, None),
    };
    TableIterator::once((r.1, r.2, r.3, r.4, r.6, r.7, r.8, r.9, r.10, r.11))
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
            rows.push((r.0, r.1, r.2, r.3, r.4, r.5, r.6, r.7, r.9, r.10, r.11, open));
        }
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    TableIterator::new(rows)
}

/// database, running, pid, started, last cycle, tags, mailboxes in use, jobs pending,
/// reclaimed, errors, last error, its time.
type Row = (
    Option<String>,
    bool,
    Option<i32>,
    Option<TimestampWithTimeZone>,
    Option<TimestampWithTimeZone>,
    i32,
    i32,
    i32,
    i64,
    i64,
    Option<String>,
    Option<TimestampWithTimeZone>,
);

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
    let hl = &h.health;
    let error = hl.last_error.read();
    (
        name,
        running,
        (running && pid != 0).then_some(pid),
        recorded(hl.started_ms.load(Ordering::Acquire)),
        recorded(hl.last_cycle_ms.load(Ordering::Acquire)),
        tags,
        in_use,
        pending,
        hl.reclaimed.load(Ordering::Relaxed) as i64,
        hl.errors.load(Ordering::Relaxed) as i64,
        (!error.is_empty()).then_some(error),
        recorded(hl.last_error_ms.load(Ordering::Acquire)),
    )
}
