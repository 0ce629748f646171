//! Waiting for the worker: a condition-variable sleep with a deadline, and the deadline of the
//! current call.
//!
//! Every SQL call that may wait (`seqgen_next`, `seqgen_next_batch`, `seqgen_order_no`,
//! `seqgen_snowflake`, ...) has one deadline, `seqgen.allocation_timeout` after its first wait
//! began: waiting for a free mailbox, for the worker's answer, for a segment, for a lock held
//! by someone else all count against it, so no call waits longer than the timeout in all.

use std::cell::Cell;
use std::time::{Duration, Instant};

use pgrx::pg_sys;

use crate::plumbing::guc;
use crate::plumbing::shmem::Header;

/// Backend-local cells (a backend is single-threaded; see `local.rs`).
struct Local<T>(Cell<T>);
// SAFETY: a backend is single-threaded; pg_seqgen never touches these from other threads.
unsafe impl<T> Sync for Local<T> {}

/// Numbers the calls of this backend; the deadline belongs to one call number.
static CALL: Local<u64> = Local(Cell::new(0));
static DEADLINE: Local<Option<(u64, Instant)>> = Local(Cell::new(None));

/// Start a new call (at the top of every SQL function that may wait). Two plain memory
/// operations: cheap enough for functions that run once per row.
#[inline]
pub fn begin_call() {
    CALL.0.set(CALL.0.get().wrapping_add(1));
}

/// The deadline of the current call: `seqgen.allocation_timeout` after its first wait.
pub fn call_deadline() -> Instant {
    let call = CALL.0.get();
    match DEADLINE.0.get() {
        Some((c, d)) if c == call => d,
        _ => {
            let d = Instant::now() + Duration::from_millis(guc::ALLOCATION_TIMEOUT.get().max(1) as u64);
            DEADLINE.0.set(Some((call, d)));
            d
        }
    }
}

/// Poll `ready` until it yields a value or `deadline` passes, sleeping on the shared
/// condition variable the worker broadcasts after every batch of work. Interrupts (query
/// cancel, statement timeout, terminate) are honoured while sleeping.
pub fn wait_until<T>(h: &Header, deadline: Instant, ready: impl FnMut() -> Option<T>) -> Option<T> {
    sleep_until(h, deadline, ready, true)
}

/// [`wait_until`], not counted in `seqgen_stats()` (a pause between tries, or a wait whose end
/// is no failure): the caller counts what it waited for, if anything.
pub fn wait_quietly_until<T>(h: &Header, deadline: Instant, ready: impl FnMut() -> Option<T>) -> Option<T> {
    sleep_until(h, deadline, ready, false)
}

fn sleep_until<T>(h: &Header, deadline: Instant, mut ready: impl FnMut() -> Option<T>, counted: bool) -> Option<T> {
    if let Some(v) = ready() {
        return Some(v);
    }
    unsafe { pg_sys::ConditionVariablePrepareToSleep(h.cv()) };
    let mut slept: Option<Instant> = None;
    let result = loop {
        if let Some(v) = ready() {
            break Some(v);
        }
        let now = Instant::now();
        if now >= deadline {
            break None;
        }
        slept.get_or_insert(now);
        // Wake at least every 50 ms to notice a worker that died without broadcasting.
        let left = (deadline - now).as_millis().clamp(1, 50) as std::ffi::c_long;
        unsafe { pg_sys::ConditionVariableTimedSleep(h.cv(), left, pg_sys::PG_WAIT_EXTENSION) };
    };
    // An ERROR raised while sleeping (query cancel) is cleaned up by AbortTransaction, which
    // also cancels the sleep.
    unsafe { pg_sys::ConditionVariableCancelSleep() };
    // (a call whose deadline had passed before this wait gave up without sleeping)
    if counted && (slept.is_some() || result.is_none()) {
        h.stats.waited(slept.map_or(0, |t| t.elapsed().as_micros() as u64), result.is_none());
    }
    result
}

/// [`wait_until`] the current call's deadline.
pub fn wait_for<T>(h: &Header, ready: impl FnMut() -> Option<T>) -> Option<T> {
    wait_until(h, call_deadline(), ready)
}
