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

/// Run `f` in a subtransaction of its own: kept when `f` returns `Ok`, rolled back (with all
/// it wrote, the role and settings it changed, and the actions it queued for the commit) when
/// it returns an error or raises one (turned into an error by `caught`); either way the
/// surrounding transaction goes on.
pub fn subtransaction_with<R, E>(
    f: impl FnOnce() -> std::result::Result<R, E>,
    caught: fn(&pg_sys::panic::ErrorReportWithLevel) -> E,
) -> std::result::Result<R, E> {
    let (ctx, owner) = unsafe { (pg_sys::CurrentMemoryContext, pg_sys::CurrentResourceOwner) };
    unsafe {
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(ctx);
    }
    let result = PgTryBuilder::new(std::panic::AssertUnwindSafe(f))
        .catch_others(|e| {
            Err(caught(match &e {
                pg_sys::panic::CaughtError::PostgresError(r) | pg_sys::panic::CaughtError::ErrorReport(r) => r,
                pg_sys::panic::CaughtError::RustPanic { ereport, .. } => ereport,
            }))
        })
        .execute();
    unsafe {
        if result.is_ok() {
            pg_sys::ReleaseCurrentSubTransaction();
        } else {
            pg_sys::RollbackAndReleaseCurrentSubTransaction();
        }
        pg_sys::MemoryContextSwitchTo(ctx);
        pg_sys::CurrentResourceOwner = owner;
    }
    result
}

/// [`subtransaction_with`] for pg_seqgen's own calls: a raised ERROR comes back as
/// [`SeqgenError::Raised`](crate::plumbing::error::SeqgenError::Raised), with its message and SQLSTATE.
pub fn subtransaction<R>(f: impl FnOnce() -> crate::plumbing::error::Result<R>) -> crate::plumbing::error::Result<R> {
    subtransaction_with(f, |r| crate::plumbing::error::SeqgenError::Raised {
        state: r.sql_error_code() as i32,
        message: r.message().to_string(),
    })
}

/// A column value read by [`latest`].
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Null,
    Int(i64),
    Text(String),
    Bool(bool),
    Ints(Vec<i64>),
}

impl Val {
    pub fn int(&self) -> Option<i64> {
        match self {
            Val::Int(v) => Some(*v),
            _ => None,
        }
    }
    pub fn bool(&self) -> Option<bool> {
        match self {
            Val::Bool(v) => Some(*v),
            _ => None,
        }
    }
    pub fn ints(&self) -> Option<Vec<i64>> {
        match self {
            Val::Ints(v) => Some(v.clone()),
            _ => None,
        }
    }
    pub fn text(&self) -> Option<String> {
        match self {
            Val::Text(v) => Some(v.clone()),
            _ => None,
        }
    }
}

/// Run one statement (a read, a row lock or a change) against the latest committed state, as
/// PostgreSQL's own foreign-key checks do, whatever the transaction's isolation level: under
/// REPEATABLE READ or SERIALIZABLE the transaction's snapshot is older, and a check that
/// guards uniqueness (a template change) must not decide on it (it missed a counter row an
/// allocator committed after the snapshot, and accepted a template that repeated numbers).
/// Under READ COMMITTED this is what every statement sees anyway. Columns of type bigint,
/// integer, smallint, text, boolean and bigint[] are returned; another type is an error.
pub fn latest(sql: &str, args: &[pgrx::datum::DatumWithOid<'_>]) -> Result<Vec<Vec<Val>>, pgrx::spi::Error> {
    use pgrx::FromDatum;
    Spi::connect_mut(|_c| {
        let query = CString::new(sql).expect("no NUL in SQL");
        let mut types: Vec<pg_sys::Oid> = args.iter().map(|a| a.oid()).collect();
        let mut values: Vec<pg_sys::Datum> =
            args.iter().map(|a| a.datum().map_or(pg_sys::Datum::from(0usize), |d| d.sans_lifetime())).collect();
        let nulls: Vec<std::os::raw::c_char> =
            args.iter().map(|a| if a.datum().is_some() { b' ' as _ } else { b'n' as _ }).collect();
        unsafe {
            let plan = pg_sys::SPI_prepare(query.as_ptr(), types.len() as i32, types.as_mut_ptr());
            if plan.is_null() {
                return Err(spi_code(pg_sys::SPI_result));
            }
            let rc = pg_sys::SPI_execute_snapshot(
                plan,
                values.as_mut_ptr(),
                nulls.as_ptr(),
                pg_sys::GetLatestSnapshot(),
                std::ptr::null_mut(),
                false,
                true,
                0,
            );
            if rc < 0 {
                pg_sys::SPI_freeplan(plan);
                return Err(spi_code(rc));
            }
            let table = pg_sys::SPI_tuptable;
            let mut rows = vec![];
            if table.is_null() {
                pg_sys::SPI_freeplan(plan);
                return Ok(rows);
            }
            let desc = (*table).tupdesc;
            let natts = (*desc).natts;
            for i in 0..pg_sys::SPI_processed as usize {
                let tuple = *(*table).vals.add(i);
                let mut row = Vec::with_capacity(natts as usize);
                for col in 1..=natts {
                    let mut isnull = false;
                    let d = pg_sys::SPI_getbinval(tuple, desc, col, &mut isnull);
                    let ty = pg_sys::SPI_gettypeid(desc, col);
                    let v = if isnull {
                        Val::Null
                    } else if ty == pg_sys::INT8OID {
                        i64::from_datum(d, false).map_or(Val::Null, Val::Int)
                    } else if ty == pg_sys::INT4OID {
                        i32::from_datum(d, false).map_or(Val::Null, |v| Val::Int(v as i64))
                    } else if ty == pg_sys::INT2OID {
                        i16::from_datum(d, false).map_or(Val::Null, |v| Val::Int(v as i64))
                    } else if ty == pg_sys::TEXTOID {
                        String::from_datum(d, false).map_or(Val::Null, Val::Text)
                    } else if ty == pg_sys::BOOLOID {
                        bool::from_datum(d, false).map_or(Val::Null, Val::Bool)
                    } else if ty == pg_sys::INT8ARRAYOID {
                        Vec::<i64>::from_datum(d, false).map_or(Val::Null, Val::Ints)
                    } else {
                        pg_sys::SPI_freeplan(plan);
                        return Err(spi_code(pg_sys::SPI_ERROR_TYPUNKNOWN));
                    };
                    row.push(v);
                }
                rows.push(row);
            }
            pg_sys::SPI_freeplan(plan);
            Ok(rows)
        }
    })
}

fn spi_code(code: i32) -> pgrx::spi::Error {
    pgrx::spi::SpiError::SpiError(
        pgrx::spi::SpiErrorCodes::try_from(code).unwrap_or(pgrx::spi::SpiErrorCodes::Argument),
    )
}
