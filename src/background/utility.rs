//! Commands that need a database to themselves.
//!
//! `DROP DATABASE`, `CREATE DATABASE ... TEMPLATE`, `ALTER DATABASE ... RENAME` and
//! `ALTER DATABASE ... SET TABLESPACE` fail while another process is connected to the
//! database, and an allocator stays connected to its database. A utility hook sees these
//! commands and, before PostgreSQL checks for other sessions, holds the database's area (the
//! launcher starts no allocator for it) and waits for its allocator to exit. When the
//! command's transaction ends, whatever its outcome, the hold is lifted (`pending.rs`): the
//! launcher restarts the allocator, or releases the area if the database is gone.

use std::ffi::CStr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::background::process::alive;
use crate::plumbing::shmem::{self, Header};

static mut PREV_PROCESS_UTILITY: pg_sys::ProcessUtility_hook_type = None;

/// Called from `_PG_init` while preloading.
pub fn install_hook() {
    unsafe {
        PREV_PROCESS_UTILITY = pg_sys::ProcessUtility_hook;
        pg_sys::ProcessUtility_hook = Some(process_utility);
    }
}

#[pg_guard]
#[allow(clippy::too_many_arguments)]
unsafe extern "C-unwind" fn process_utility(
    pstmt: *mut pg_sys::PlannedStmt,
    query_string: *const std::ffi::c_char,
    read_only_tree: bool,
    context: pg_sys::ProcessUtilityContext::Type,
    params: pg_sys::ParamListInfo,
    query_env: *mut pg_sys::QueryEnvironment,
    dest: *mut pg_sys::DestReceiver,
    qc: *mut pg_sys::QueryCompletion,
) {
    let discards = unsafe { discards_sequences(pstmt) };
    if let Some(db) = unsafe { database_needed(pstmt) } {
        // Held until the command's transaction ends (commit or abort: the hold is lifted by
        // the transaction callback, also when an ERROR skips everything below); the allocator
        // is stopped first, interruptibly.
        if let Some(h) = hold_database(db) {
            wait_for_allocator_exit(h, db);
        }
    }
    unsafe {
        match PREV_PROCESS_UTILITY {
            Some(prev) => pg_sys::ffi::pg_guard_ffi_boundary(|| {
                prev(pstmt, query_string, read_only_tree, context, params, query_env, dest, qc)
            }),
            None => pg_sys::standard_ProcessUtility(
                pstmt,
                query_string,
                read_only_tree,
                context,
                params,
                query_env,
                dest,
                qc,
            ),
        }
    }
    if discards {
        // as PostgreSQL forgets its sequences' currval and lastval
        crate::plumbing::cache::discard_drawn();
    }
}

/// Is the command `DISCARD SEQUENCES` or `DISCARD ALL`?
unsafe fn discards_sequences(pstmt: *mut pg_sys::PlannedStmt) -> bool {
    unsafe {
        let node = (*pstmt).utilityStmt;
        if node.is_null() || (*node).type_ != pg_sys::NodeTag::T_DiscardStmt {
            return false;
        }
        let target = (*(node as *mut pg_sys::DiscardStmt)).target;
        target == pg_sys::DiscardMode::DISCARD_ALL || target == pg_sys::DiscardMode::DISCARD_SEQUENCES
    }
}

/// The database (OID) a command needs to itself, if it is one of those commands.
unsafe fn database_needed(pstmt: *mut pg_sys::PlannedStmt) -> Option<u32> {
    unsafe {
        let node = (*pstmt).utilityStmt;
        if node.is_null() {
            return None;
        }
        let name: *const std::ffi::c_char = match (*node).type_ {
            pg_sys::NodeTag::T_DropdbStmt => (*(node as *mut pg_sys::DropdbStmt)).dbname,
            pg_sys::NodeTag::T_CreatedbStmt => {
                // no TEMPLATE, or TEMPLATE DEFAULT (no argument): template1
                match option(node_options((*(node as *mut pg_sys::CreatedbStmt)).options), c"template") {
                    Some(p) if !p.is_null() => p,
                    _ => c"template1".as_ptr(),
                }
            }
            pg_sys::NodeTag::T_RenameStmt => {
                let r = node as *mut pg_sys::RenameStmt;
                if (*r).renameType != pg_sys::ObjectType::OBJECT_DATABASE {
                    return None;
                }
                (*r).subname
            }
            pg_sys::NodeTag::T_AlterDatabaseStmt => {
                let a = node as *mut pg_sys::AlterDatabaseStmt;
                option(node_options((*a).options), c"tablespace")?;
                (*a).dbname
            }
            _ => return None,
        };
        if name.is_null() {
            return None;
        }
        let oid = pg_sys::get_database_oid(name, true);
        (oid != pg_sys::InvalidOid).then(|| oid.to_u32())
    }
}

unsafe fn node_options(list: *mut pg_sys::List) -> Vec<*mut pg_sys::DefElem> {
    if list.is_null() {
        return vec![];
    }
    unsafe {
        (0..(*list).length as usize).map(|i| (*(*list).elements.add(i)).ptr_value as *mut pg_sys::DefElem).collect()
    }
}

/// The string value of option `name` of a statement's option list.
unsafe fn option(options: Vec<*mut pg_sys::DefElem>, name: &CStr) -> Option<*const std::ffi::c_char> {
    unsafe {
        options.into_iter().find(|d| !(**d).defname.is_null() && CStr::from_ptr((**d).defname) == name).map(|d| {
            if (*d).arg.is_null() {
                std::ptr::null()
            } else {
                pg_sys::defGetString(d) as *const _
            }
        })
    }
}

/// Keep the launcher from starting an allocator for database `db` (if it has an area) until
/// this transaction ends.
fn hold_database(db: u32) -> Option<&'static Header> {
    let h = shmem::find_area(shmem::server()?, db)?;
    h.hold.store(unsafe { pg_sys::MyProcPid }, Ordering::Release);
    crate::plumbing::pending::hold_until_commit(h);
    Some(h)
}

/// Stop the allocator of database `db` and wait, up to 10 seconds, for it to exit.
/// Interruptible; the caller lifts the hold whatever happens.
fn wait_for_allocator_exit(h: &'static Header, db: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pid = h.worker_pid.load(Ordering::Acquire);
        if !alive(pid) || h.db.load(Ordering::Acquire) != db {
            return;
        }
        unsafe { libc::kill(pid, libc::SIGTERM) };
        if Instant::now() >= deadline {
            return; // PostgreSQL reports the session that stayed
        }
        unsafe { pg_sys::pg_usleep(10_000) };
        pgrx::check_for_interrupts!();
    }
}
