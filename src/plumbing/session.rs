//! Running a piece of work under a changed session state, restored afterwards whatever
//! happens: other settings for a while (like a function's `SET` clause), or the privileges of
//! the bootstrap superuser for a catalog read that the caller's own privileges must not
//! decide (an unknown tag is 42704 for everyone, not 42501).

use std::ffi::CString;

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::plumbing::guc;

/// Run `f` with `settings` (name, value) in force, as a function's `SET` clause would: the
/// previous values come back when `f` returns, and an ERROR restores them as it aborts the
/// (sub)transaction. Inside a transaction only. The settings may be superuser-only ones (pg_seqgen's internal
/// `seqgen.rewinding`): the caller has checked that the work is allowed.
pub fn with_settings<R>(settings: &[(&str, &str)], f: impl FnOnce() -> R) -> R {
    let nest = unsafe { pg_sys::NewGUCNestLevel() };
    for (name, value) in settings {
        let (name, value) = (CString::new(*name).expect("no NUL"), CString::new(*value).expect("no NUL"));
        unsafe {
            pg_sys::set_config_option(
                name.as_ptr(),
                value.as_ptr(),
                pg_sys::GucContext::PGC_SUSET,
                pg_sys::GucSource::PGC_S_SESSION,
                pg_sys::GucAction::GUC_ACTION_SAVE,
                true,
                0,
                false,
            );
        }
    }
    let r = f();
    unsafe { pg_sys::AtEOXact_GUC(true, nest) };
    r
}

/// Run `f` (a catalog change that locks rows) with lock waits bounded by
/// `seqgen.allocation_timeout` (or the session's shorter `lock_timeout`): an administrative
/// call never waits longer than a draw would, and fails with 55P03 instead.
pub fn bounded_lock_wait<R>(f: impl FnOnce() -> R) -> R {
    let mine = guc::ALLOCATION_TIMEOUT.get().max(1);
    let session = unsafe { pg_sys::LockTimeout };
    let ms = if session > 0 { session.min(mine) } else { mine };
    with_settings(&[("lock_timeout", &ms.to_string())], f)
}

/// Run `f` as the bootstrap superuser (for reading pg_seqgen's own catalog on the caller's
/// behalf with fixed statements and SPI arguments), and restore the caller's identity
/// afterwards; an ERROR restores it as it aborts the transaction.
pub fn as_superuser<R>(f: impl FnOnce() -> R) -> R {
    as_role(pg_sys::Oid::from(pg_sys::BOOTSTRAP_SUPERUSERID), f)
}

/// Run `f` as role `role` (as a SECURITY DEFINER function would), and restore the caller's
/// identity afterwards; an ERROR restores it as it aborts the transaction.
pub fn as_role<R>(role: pg_sys::Oid, f: impl FnOnce() -> R) -> R {
    let (mut user, mut context) = (pg_sys::InvalidOid, 0);
    unsafe {
        pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
        pg_sys::SetUserIdAndSecContext(role, context | pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32);
    }
    let r = PgTryBuilder::new(std::panic::AssertUnwindSafe(f))
        .finally(|| unsafe { pg_sys::SetUserIdAndSecContext(user, context) })
        .execute();
    r
}
