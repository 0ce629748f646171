//! The launcher: one static background worker per server that starts an allocator (a
//! dynamic background worker, `worker.rs`) for every database with pg_seqgen installed.
//!
//! At start-up (and after a crash re-initialised shared memory) it lists every database that
//! accepts connections and starts a reader for each, two at a time: a short-lived worker that
//! connects, reads the database's snowflake and UUIDv7 reservations (if the extension is
//! there), raises the server's generators above them, reports whether the extension is
//! installed, and exits. An area is claimed for every database that has it. Once every
//! database has been read, the launcher opens the clock-ordered generators (`clocks_open`):
//! no reservation is extended before, so no snowflake or UUIDv7 is issued below one a database
//! not yet read may hold. Reading needs no area, so more databases with the extension than
//! `seqgen.max_databases` (copied from a template that has it) delay nothing.
//!
//! Afterwards it keeps one allocator running for every claimed area: areas claimed by the
//! scan, by `CREATE EXTENSION` (at its commit) or by a first call in a database without one,
//! allocators that exited or crashed (started again after a second), and none for an area
//! held by a backend (a `DROP DATABASE` waiting for the allocator to leave). An area whose
//! database no longer exists is released.

use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder, BackgroundWorkerStatus, DynamicBackgroundWorker};
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::background::{signals, worker};
use crate::plumbing::shmem::{self, Header, Server, WorkerStatus};

pub fn register() {
    BackgroundWorkerBuilder::new("pg_seqgen launcher")
        .set_type("pg_seqgen launcher")
        .set_function("pg_seqgen_launcher_main")
        .set_library("pg_seqgen")
        .enable_spi_access()
        .set_start_time(pgrx::bgworkers::BgWorkerStartTime::RecoveryFinished)
        .set_restart_time(Some(Duration::from_secs(1)))
        .load();
}

#[pg_guard]
unsafe extern "C-unwind" fn on_exit(_code: i32, _arg: pg_sys::Datum) {
    if let Some(s) = shmem::server() {
        s.launcher_latch.store(std::ptr::null_mut(), Ordering::Release);
        s.launcher_pid.store(0, Ordering::Release);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn on_sigterm(signo: std::ffi::c_int) {
    unsafe { pg_sys::die(signo) };
}

/// How many readers run at once during the start-up scan.
const READERS: usize = 2;

/// A database of the start-up scan whose reservations are being read: its reader, and when it
/// started.
struct Reading {
    handle: Option<DynamicBackgroundWorker>,
    at: Instant,
}

/// An allocator this launcher started (or tried to): its handle, and when.
struct Started {
    handle: Option<DynamicBackgroundWorker>,
    /// The claim of the area it was started for.
    epoch: u64,
    at: Instant,
}

#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn pg_seqgen_launcher_main(_arg: pg_sys::Datum) {
    unsafe {
        signals::set_signal(pg_sys::SIGHUP, signals::on_sighup);
        signals::set_signal(pg_sys::SIGTERM, on_sigterm);
        pg_sys::BackgroundWorkerUnblockSignals();
    }
    let Some(s) = shmem::server() else {
        log!("pg_seqgen launcher: shared memory is not initialised; exiting");
        return;
    };
    // no database: the launcher reads only the shared catalog pg_database
    BackgroundWorker::connect_worker_to_spi(None, None);
    unsafe {
        pg_sys::before_shmem_exit(Some(on_exit), pg_sys::Datum::from(0));
        s.launcher_pid.store(pg_sys::MyProcPid, Ordering::Release);
        s.launcher_latch.store(pg_sys::MyLatch, Ordering::Release);
    }
    // databases whose reservations must be read before the clocks open
    let mut to_read: Vec<u32> = if s.clocks_open.load(Ordering::Acquire) == 0 {
        databases().into_iter().map(|(oid, _)| oid).collect()
    } else {
        vec![] // the launcher alone restarted: the scan was done
    };
    let mut reading: HashMap<u32, Reading> = HashMap::new();
    let mut started: HashMap<usize, Started> = HashMap::new();
    let mut warned: Option<Instant> = None;
    loop {
        pgrx::check_for_interrupts!();
        if unsafe { pg_sys::ConfigReloadPending } != 0 {
            unsafe {
                pg_sys::ConfigReloadPending = 0;
                pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP);
            }
        }
        scan(s, &mut to_read, &mut reading, &mut warned);
        supervise(s, &mut started);
        let busy = !reading.is_empty() || !to_read.is_empty();
        unsafe {
            pg_sys::WaitLatch(
                pg_sys::MyLatch,
                (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
                if busy { 50 } else { 1000 },
                pg_sys::PG_WAIT_EXTENSION,
            );
            pg_sys::ResetLatch(pg_sys::MyLatch);
        }
    }
}

/// The start-up scan: a reader per database (at most `READERS` at once) reads its
/// reservations and reports whether the extension is installed; an area is claimed for each
/// database that has it. A reader that ends without a report is started again a second later
/// (its database, if it still exists). Once every database is read, the clocks open.
fn scan(s: &'static Server, to_read: &mut Vec<u32>, reading: &mut HashMap<u32, Reading>, warned: &mut Option<Instant>) {
    for (db, found) in shmem::take_reports(s) {
        reading.remove(&db);
        if found && shmem::claim_area(s, db, 0).is_err() {
            warning!(
                "pg_seqgen launcher: database {db} has pg_seqgen but every area (seqgen.max_databases = {}) is taken; it is not served",
                s.max_databases
            );
        }
    }
    let gone: Vec<u32> = reading
        .iter()
        .filter(|(_, r)| r.at.elapsed() >= Duration::from_secs(1) && !r.handle.as_ref().is_some_and(still_running))
        .map(|(db, _)| *db)
        .collect();
    if !gone.is_empty() {
        let known: HashMap<u32, String> = databases().into_iter().collect();
        for db in gone {
            reading.remove(&db);
            if known.contains_key(&db) {
                to_read.insert(0, db); // read again, after the others
                if warned.is_none_or(|w| w.elapsed() >= Duration::from_secs(10)) {
                    warning!(
                        "pg_seqgen launcher: the reservations of database \"{}\" could not be read yet; snowflake and UUIDv7 IDs wait for them (see the server log)",
                        known[&db]
                    );
                    *warned = Some(Instant::now());
                }
            }
        }
    }
    while reading.len() < READERS {
        let Some(db) = to_read.pop() else { break };
        reading.insert(db, Reading { handle: worker::start(db, true), at: Instant::now() });
    }
    if s.clocks_open.load(Ordering::Acquire) == 0 && to_read.is_empty() && reading.is_empty() {
        s.clocks_open.store(1, Ordering::Release);
        log!("pg_seqgen launcher: every database's snowflake and UUIDv7 reservations are read");
        for h in shmem::areas(s) {
            h.ring();
        }
    }
}

/// Start an allocator for every claimed area that has none, at most once a second per area;
/// release areas whose database is gone.
fn supervise(s: &'static Server, started: &mut HashMap<usize, Started>) {
    let mut dbs: Option<HashMap<u32, String>> = None;
    for h in shmem::areas(s) {
        let i = h.index as usize;
        let db = h.db.load(Ordering::Acquire);
        let epoch = h.epoch.load(Ordering::Acquire);
        let running = matches!(started.get(&i), Some(Started { handle: Some(hd), epoch: e, .. }) if *e == epoch && still_running(hd));
        if db == 0 {
            started.remove(&i);
            continue;
        }
        if running
            || crate::background::process::alive(h.worker_pid.load(Ordering::Acquire))
            || crate::background::process::alive(h.hold.load(Ordering::Acquire))
        {
            continue;
        }
        if started.get(&i).is_some_and(|st| st.epoch == epoch && st.at.elapsed() < Duration::from_secs(1)) {
            continue; // started less than a second ago and already gone: wait
        }
        let known = dbs.get_or_insert_with(|| databases().into_iter().collect());
        if !known.contains_key(&db) {
            release_gone(h, db);
            started.remove(&i);
            continue;
        }
        let handle = worker::start(db, false);
        if handle.is_none() && h.worker_status() != WorkerStatus::Stopped {
            // no free background worker slot: tried again in a second
            h.worker_status.store(WorkerStatus::Stopped as u32, Ordering::Release);
            warning!(
                "pg_seqgen launcher: no background worker slot for the allocator of database \"{}\"; raise max_worker_processes",
                known.get(&db).map(String::as_str).unwrap_or("?")
            );
        }
        started.insert(i, Started { handle, epoch, at: Instant::now() });
    }
}

fn still_running(handle: &DynamicBackgroundWorker) -> bool {
    !matches!(handle.pid(), Err(BackgroundWorkerStatus::Stopped | BackgroundWorkerStatus::PostmasterDied))
}

/// The database of area `h` no longer exists: release the area.
fn release_gone(h: &'static Header, db: u32) {
    let epoch = h.epoch.load(Ordering::Acquire);
    if h.db.load(Ordering::Acquire) == db && shmem::release_area(h, epoch, false) {
        log!("pg_seqgen launcher: database {db} no longer exists; its allocator's area is free");
    }
}

/// Every database that accepts connections (OID, name), from the shared catalog
/// `pg_database`. Databases left invalid by an interrupted `DROP DATABASE` are skipped.
fn databases() -> Vec<(u32, String)> {
    let mut out = vec![];
    unsafe {
        pg_sys::SetCurrentStatementStartTimestamp();
        pg_sys::StartTransactionCommand();
        pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
        let rel = pg_sys::table_open(pg_sys::DatabaseRelationId, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let scan = pg_sys::table_beginscan_catalog(rel, 0, std::ptr::null_mut());
        loop {
            let tup = pg_sys::heap_getnext(scan, pg_sys::ScanDirection::ForwardScanDirection);
            if tup.is_null() {
                break;
            }
            let d = &*pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_database>(tup);
            if d.datallowconn && d.datconnlimit != pg_sys::DATCONNLIMIT_INVALID_DB {
                let name = CStr::from_ptr(d.datname.data.as_ptr()).to_string_lossy().into_owned();
                out.push((d.oid.to_u32(), name));
            }
        }
        pg_sys::table_endscan(scan);
        pg_sys::table_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        pg_sys::PopActiveSnapshot();
        pg_sys::CommitTransactionCommand();
    }
    out
}
