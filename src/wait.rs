//! Waiting for the worker: a condition-variable sleep with a deadline.

use std::time::{Duration, Instant};

use pgrx::pg_sys;

use crate::shmem::Header;

/// Poll `ready` until it yields a value or `timeout_ms` passes, sleeping on the shared
/// condition variable the worker broadcasts after every batch of work. Interrupts (query
/// cancel, terminate) are honoured while sleeping.
pub fn wait_for<T>(h: &Header, timeout_ms: i32, mut ready: impl FnMut() -> Option<T>) -> Option<T> {
    if let Some(v) = ready() {
        return Some(v);
    }
    let deadline = Instant::now() + Duration::from_millis(timeout_ms.max(1) as u64);
    unsafe { pg_sys::ConditionVariablePrepareToSleep(h.cv()) };
    let result = loop {
        if let Some(v) = ready() {
            break Some(v);
        }
        let now = Instant::now();
        if now >= deadline {
            break None;
        }
        // Wake at least every 50 ms to notice a worker that died without broadcasting.
        let left = (deadline - now).as_millis().clamp(1, 50) as std::ffi::c_long;
        unsafe { pg_sys::ConditionVariableTimedSleep(h.cv(), left, pg_sys::PG_WAIT_EXTENSION) };
    };
    // An ERROR raised while sleeping (query cancel) is cleaned up by AbortTransaction, which
    // also cancels the sleep.
    unsafe { pg_sys::ConditionVariableCancelSleep() };
    result
}
