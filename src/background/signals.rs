//! The background workers' signal handlers: SIGHUP reloads the settings, SIGINT cancels what
//! the allocator is doing, SIGTERM ends it (`die`) until it serves its database, and from then
//! on asks it to stop, giving back its leases first (see `worker.rs`).

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use pgrx::pg_sys;
use pgrx::prelude::*;

/// A cancel or terminate signal arrived since the current transaction started.
pub(super) static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// The allocator is in its cycle's transaction: a SIGTERM cancels what runs there (a lock or
/// synchronous-standby wait); outside it, a cancel would only end the worker with an ERROR.
pub(super) static IN_TRANSACTION: AtomicBool = AtomicBool::new(false);

/// When (the monotonic clock's milliseconds, never 0) a SIGTERM arrived while the worker served
/// its database (0: none): it gives back its leases and exits.
static STOPPING_SINCE_MS: AtomicI64 = AtomicI64::new(0);

/// A SIGTERM this long after the first ends the worker at once; one sooner is the same request
/// (the postmaster sends each signal to the process and to its process group: two may arrive).
const STOP_REPEAT_MS: i64 = 1000;

/// A SIGTERM asked the worker to stop ([`on_sigterm_serving`]).
pub(super) fn stopping() -> bool {
    STOPPING_SINCE_MS.load(Ordering::SeqCst) != 0
}

/// The monotonic clock in milliseconds, from a signal handler (`clock_gettime` is
/// async-signal-safe); at least 1.
fn monotonic_ms() -> i64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    (t.tv_sec * 1000 + t.tv_nsec / 1_000_000).max(1)
}

#[pg_guard]
pub(super) unsafe extern "C-unwind" fn on_sigint(signo: std::ffi::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    unsafe { pg_sys::StatementCancelHandler(signo) };
}

#[pg_guard]
pub(super) unsafe extern "C-unwind" fn on_sigterm(signo: std::ffi::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    unsafe { pg_sys::die(signo) };
}

/// SIGTERM once the worker serves its database: the first asks it to stop (it gives back its
/// leases first), and cancels what runs in its cycle's transaction, as SIGINT does (outside it,
/// it wakes the worker). One within `STOP_REPEAT_MS` of the first changes nothing (a fast or
/// smart shutdown's one SIGTERM may arrive twice, and a second cancel would cut the leases'
/// return short); a later one ends the worker as SIGTERM does before it serves (`on_sigterm`).
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn on_sigterm_serving(signo: std::ffi::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    let now = monotonic_ms();
    match STOPPING_SINCE_MS.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) if IN_TRANSACTION.load(Ordering::SeqCst) => unsafe { pg_sys::StatementCancelHandler(signo) },
        Ok(_) => unsafe {
            let saved = *libc::__errno_location();
            pg_sys::SetLatch(pg_sys::MyLatch);
            *libc::__errno_location() = saved;
        },
        Err(since) if now - since >= STOP_REPEAT_MS => unsafe { pg_sys::die(signo) },
        Err(_) => {}
    }
}

#[pg_guard]
pub(super) unsafe extern "C-unwind" fn on_sighup(_signo: std::ffi::c_int) {
    unsafe {
        pg_sys::ConfigReloadPending = 1;
        pg_sys::SetLatch(pg_sys::MyLatch);
    }
}

pub(super) unsafe fn set_signal(signo: u32, f: unsafe extern "C-unwind" fn(std::ffi::c_int)) {
    unsafe {
        #[cfg(not(feature = "pg18"))]
        pg_sys::pqsignal(signo as i32, Some(f));
        #[cfg(feature = "pg18")]
        pg_sys::pqsignal_be(signo as i32, Some(f));
    }
}
