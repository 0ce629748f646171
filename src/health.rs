//! `seqgen_worker_status()`: the allocation worker's health, in SQL.

use std::sync::atomic::Ordering;

use pgrx::datum::TimestampWithTimeZone;
use pgrx::prelude::*;

use crate::error::{OrRaise, SeqgenError};
use crate::shmem::{self, WorkerStatus};

/// A moment the worker recorded (ms since the Unix epoch; 0: never).
fn recorded(unix_ms: i64) -> Option<TimestampWithTimeZone> {
    (unix_ms > 0).then(|| crate::snowflake::to_timestamptz(unix_ms))
}

/// One row: is the worker running, since when, when it last finished a cycle, how many
/// mailboxes are in use and how many jobs wait, and its last error.
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
    let h = shmem::header().ok_or(SeqgenError::NotPreloaded).or_raise();
    let running = h.worker_status() == WorkerStatus::Running;
    let pid = h.worker_pid.load(Ordering::Acquire);
    let mut in_use = 0;
    let mut pending = 0;
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
            pending += (s.want.load(Ordering::Relaxed) != 0) as i32 + (s.ord_want.load(Ordering::Relaxed) != 0) as i32;
        }
    }
    pending += (h.snowflake.want.load(Ordering::Relaxed) != 0) as i32;
    pending += (h.uuid.want.load(Ordering::Relaxed) != 0) as i32;
    let hl = &h.health;
    let error = hl.last_error.read();
    TableIterator::once((
        running,
        (running && pid != 0).then_some(pid),
        recorded(hl.started_ms.load(Ordering::Acquire)),
        recorded(hl.last_cycle_ms.load(Ordering::Acquire)),
        in_use,
        pending,
        hl.reclaimed.load(Ordering::Relaxed) as i64,
        hl.errors.load(Ordering::Relaxed) as i64,
        (!error.is_empty()).then_some(error),
        recorded(hl.last_error_ms.load(Ordering::Acquire)),
    ))
}
