//! What every pg_seqgen background process needs (the allocator, the Citus sync reader, the
//! launcher): whether a process lives, settings for the rest of the process, and running work
//! in a transaction or a subtransaction of its own, with a failure handed back as a
//! [`JobError`] (its SQLSTATE and message) rather than ending the process.

use pgrx::pg_sys;
use pgrx::pg_sys::panic::CaughtError;
use pgrx::prelude::*;
use pgrx::spi::SpiClient;

/// Is `pid` a live process of this server?
/// (A background worker is in the process array only once it has connected: before, only
/// the process itself tells.)
pub fn alive(pid: i32) -> bool {
    pid != 0 && (!unsafe { pg_sys::BackendPidGetProc(pid) }.is_null() || unsafe { libc::kill(pid, 0) } == 0)
}

/// Set a setting for the rest of this background process (what a superuser may set).
pub(crate) unsafe fn set_option(name: &std::ffi::CStr, value: &std::ffi::CStr) {
    unsafe {
        pg_sys::SetConfigOption(
            name.as_ptr(),
            value.as_ptr(),
            pg_sys::GucContext::PGC_SUSET,
            pg_sys::GucSource::PGC_S_OVERRIDE,
        );
    }
}

/// A failed job: its SQLSTATE and message. `locked`: it failed on a lock (lock_timeout), and
/// is tried again while someone waits for it.
pub(crate) struct JobError {
    pub locked: bool,
    pub state: i32,
    pub msg: String,
}

impl JobError {
    pub fn from_caught(e: &CaughtError) -> JobError {
        JobError::from_report(match e {
            CaughtError::PostgresError(r) | CaughtError::ErrorReport(r) => r,
            CaughtError::RustPanic { ereport, .. } => ereport,
        })
    }

    pub fn from_report(r: &pgrx::pg_sys::panic::ErrorReportWithLevel) -> JobError {
        let code = r.sql_error_code();
        JobError {
            locked: code == pg_sys::errcodes::PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
            state: code as i32,
            msg: r.message().to_string(),
        }
    }
}

/// Run `f` in a transaction of its own and commit it. An ERROR in the commit aborts the
/// transaction and comes back as `Err`; the worker carries on.
pub(crate) fn in_transaction<R>(f: impl FnOnce() -> R + std::panic::UnwindSafe) -> Result<R, JobError> {
    in_transaction_logged(Some("pg_seqgen allocator"), f)
}

/// [`in_transaction`], warning of a failure with `who` as the prefix (`None`: the caller
/// reports it).
pub(crate) fn in_transaction_logged<R>(
    who: Option<&'static str>,
    f: impl FnOnce() -> R + std::panic::UnwindSafe,
) -> Result<R, JobError> {
    unsafe {
        pg_sys::SetCurrentStatementStartTimestamp();
        pg_sys::StartTransactionCommand();
        pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
    }
    PgTryBuilder::new(move || {
        let r = f();
        unsafe {
            pg_sys::PopActiveSnapshot();
            pg_sys::CommitTransactionCommand();
        }
        Ok(r)
    })
    .catch_others(|e| {
        let err = JobError::from_caught(&e);
        if let Some(who) = who {
            warning!("{who}: {}", err.msg);
        }
        unsafe { pg_sys::AbortCurrentTransaction() };
        Err(err)
    })
    .execute()
}

/// Run `f` with an SPI connection in a subtransaction of its own: released when `f`
/// succeeds, rolled back (with whatever `f` wrote) when it fails, and either way the
/// surrounding transaction goes on.
pub(crate) fn in_subtransaction<R>(f: impl FnOnce(&mut SpiClient<'_>) -> pgrx::spi::Result<R>) -> Result<R, JobError> {
    crate::plumbing::session::subtransaction_with(
        || Spi::connect_mut(f).map_err(|e| JobError { locked: false, state: 0, msg: e.to_string() }),
        JobError::from_report,
    )
}
