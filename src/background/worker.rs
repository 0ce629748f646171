//! The allocation worker.
//!
//! Protocol: a backend posts a request (a mailbox, or a slot's `want` flag) and sets the
//! worker's latch. The worker wakes, reclaims abandoned mailboxes, gathers every pending
//! request, and serves them all in one transaction of its own, each job in a subtransaction
//! of its own: a job that fails (a lock it may not wait for, a bad catalog row) is rolled back
//! alone and its callers get its error, while the other jobs go on. Rows are read with
//! `FOR NO KEY UPDATE SKIP LOCKED`; every other lock wait is cut short by `lock_timeout`
//! (`seqgen.worker_lock_timeout`); the transaction is READ COMMITTED and read-write whatever
//! the server defaults say. It commits with `synchronous_commit = on`, and only after the
//! commit returns, and only if no cancel or terminate signal arrived meanwhile (a cancelled
//! synchronous-replication wait leaves a commit that is local only), does it publish the
//! reserved segments to shared memory, answer mailboxes and broadcast the condition variable
//! the backends sleep on. A segment is therefore durable (and, with a synchronous standby,
//! replicated) before any of its values is handed out, and nothing a caller's transaction does
//! (commit or rollback) can give it back.
//!
//! Every slot job names the catalog row the slot serves (its identity: table OID and tag_id);
//! a reservation from any other row is refused, and the slot retired. Once a second the
//! worker also checks every loaded slot against the catalog.
//!
//! Signals: SIGINT cancels what the worker is doing (the jobs fail and are asked again); SIGHUP
//! reloads the settings. SIGTERM, once the worker serves its database, cancels what runs in the
//! cycle's transaction as SIGINT does, then the worker gives back the leases it holds
//! (`Worker::give_back_all`: so that a clean stop or restart of the server leaves no floor up
//! under new keys) and exits; a SIGTERM a second or more after that one, or one before it
//! serves, ends it at the next interrupt check, even while it waits for a lock or for a
//! synchronous standby (`signals.rs`). The launcher starts it again when it is still needed.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder};
use pgrx::pg_sys;
use pgrx::prelude::*;
use seqgen_core::template::{self, Template, Tz};

use crate::background::gather::{gather, reclaim_mailboxes, requeue};
use crate::background::jobs::{first_segment, make_new_keys, run_job, Job, Outcome, SlotRef};
use crate::background::leases::{self, Leases};
use crate::background::process::{alive, in_subtransaction, in_transaction, set_option, JobError};
use crate::background::publish::finish;
use crate::background::signals::{
    on_sighup, on_sigint, on_sigterm, on_sigterm_serving, set_signal, stopping, INTERRUPTED, IN_TRANSACTION,
};
use crate::background::slots::update_rates;
use crate::generators::snowflake::{self, Kind};
use crate::plumbing::catalog::{self, CatalogState, OrderReserve, Reserve};
use crate::plumbing::directory::code;
use crate::plumbing::guc;
use crate::plumbing::node;
use crate::plumbing::shmem::{self, Header, TagSlot, WorkerStatus};

/// Start the allocator of database `db` (from the launcher): a dynamic background worker
/// that the launcher, not the postmaster, restarts. `reader`: only read the database's
/// reservations at start-up and report to the launcher (see `launcher.rs`).
pub fn start(db: u32, reader: bool) -> Option<pgrx::bgworkers::DynamicBackgroundWorker> {
    let (name, kind) = if reader {
        (format!("pg_seqgen reader for database {db}"), "pg_seqgen reader")
    } else {
        (format!("pg_seqgen allocator for database {db}"), "pg_seqgen allocator")
    };
    BackgroundWorkerBuilder::new(&name)
        .set_type(kind)
        .set_function("pg_seqgen_worker_main")
        .set_library("pg_seqgen")
        .enable_spi_access()
        .set_start_time(pgrx::bgworkers::BgWorkerStartTime::RecoveryFinished)
        .set_restart_time(None)
        .set_argument(Some(pg_sys::Datum::from(db as u64 | (reader as u64) << 32)))
        .set_notify_pid(unsafe { pg_sys::MyProcPid })
        .load_dynamic()
        .ok()
}

/// The area this worker serves, for its exit callback.
static SERVING: std::sync::atomic::AtomicPtr<Header> = std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

#[pg_guard]
unsafe extern "C-unwind" fn on_exit(_code: i32, _arg: pg_sys::Datum) {
    let p = SERVING.load(Ordering::Acquire);
    // SAFETY: an area in shared memory, which outlives this process
    if let Some(h) = unsafe { p.as_ref() } {
        h.worker_latch.store(std::ptr::null_mut(), Ordering::Release);
        h.worker_status.store(WorkerStatus::Stopped as u32, Ordering::Release);
        let _ = h.worker_pid.compare_exchange(unsafe { pg_sys::MyProcPid }, 0, Ordering::AcqRel, Ordering::Relaxed);
        h.broadcast();
        if let Some(s) = shmem::server() {
            s.ring_launcher();
        }
    }
}

/// Why the worker's start-up check ended it.
enum Probe {
    /// The extension is installed (in the database of this name): both reservations were
    /// read and the generators raised above them.
    Serving(String),
    /// No extension in this database: the area is released.
    Absent,
}

/// In a transaction: is the extension installed here? If so, read the persisted snowflake
/// and UUIDv7 reservations (whatever the catalog's version: a database not yet updated
/// still holds IDs) and raise the server's generators above them (`raised`: what to do with
/// each).
///
/// A lock that keeps the read waiting (a reservation table or `pg_extension` locked by a
/// prepared transaction, say) is waited for at most `STARTUP_LOCK_TIMEOUT`; then every
/// version of the reservation rows is read without the lock (`reservation_read_unlocked`,
/// an upper bound of the committed value), with a warning, so that one database cannot keep
/// the clocks of the others closed, nor its own.
fn probe(raised: impl Fn(Kind, i64)) -> Result<Probe, JobError> {
    let normal = in_transaction(std::panic::AssertUnwindSafe(|| {
        in_subtransaction(|c| {
            c.update(&format!("SET LOCAL lock_timeout = {STARTUP_LOCK_TIMEOUT}"), None, &[])?;
            if catalog::extension_version(c)?.is_none() {
                return Ok(None);
            }
            let read = [
                catalog::reservation_read_any(c, 0)?,
                catalog::reservation_read_any(c, 1)?,
                catalog::reservation_read_any(c, 2)?,
            ];
            Ok(Some((read, crate::plumbing::directory::current_database())))
        })
    }))
    .and_then(|r| r);
    let (found, how) = match normal {
        Ok(found) => (found, None),
        Err(e) if e.locked => {
            // installed: its reservation tables exist (0.1.0 had no UUIDv7 table: 0)
            let found = in_transaction(|| {
                let read = Kind::ALL.map(|k| catalog::reservation_read_unlocked(k.table()));
                read[Kind::Snowflake.table()]
                    .is_some()
                    .then(|| (read.map(|v| v.unwrap_or(0)), crate::plumbing::directory::current_database()))
            })?;
            (found, Some(e.msg))
        }
        Err(e) => return Err(e),
    };
    let Some((reserved, db)) = found else { return Ok(Probe::Absent) };
    for kind in Kind::ALL {
        raised(kind, reserved[kind.table()]);
    }
    if let Some(msg) = how {
        warning!(
            "pg_seqgen: the snowflake and UUIDv7 reservations of database \"{db}\" could not be read within {STARTUP_LOCK_TIMEOUT} ms ({msg}); \
             every version of their rows was read without the lock instead (see pg_locks and pg_prepared_xacts for the holder)"
        );
    }
    Ok(Probe::Serving(db))
}

/// How long a start-up read waits for a lock before it reads without one (see [`probe`]).
const STARTUP_LOCK_TIMEOUT: &str = "1000";

/// A reader: read the database's reservations, raise the server's generators above them,
/// report to the launcher whether the extension is installed, exit.
fn read_and_report(s: &'static shmem::Server, db: u32) {
    let found = match probe(snowflake::raise_server) {
        Ok(Probe::Serving(_)) => true,
        Ok(Probe::Absent) => false,
        Err(e) => {
            warning!("pg_seqgen reader for database {db}: reading the reservations failed: {}", e.msg);
            return; // no report: the launcher tries again
        }
    };
    while !shmem::report_read(s, db, found) {
        // every report cell is taken: the launcher drains them every 50 ms
        unsafe { pg_sys::pg_usleep(10_000) };
        pgrx::check_for_interrupts!();
    }
    s.ring_launcher();
}

#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn pg_seqgen_worker_main(arg: pg_sys::Datum) {
    unsafe {
        set_signal(pg_sys::SIGHUP, on_sighup);
        set_signal(pg_sys::SIGTERM, on_sigterm);
        set_signal(pg_sys::SIGINT, on_sigint);
        pg_sys::BackgroundWorkerUnblockSignals();
    }
    let db = (arg.value() & 0xffff_ffff) as u32;
    let reader = arg.value() >> 32 & 1 == 1;
    let Some(s) = shmem::server() else {
        log!("pg_seqgen allocator: shared memory is not initialised; exiting");
        return;
    };
    if reader {
        BackgroundWorker::connect_worker_to_spi_by_oid(Some(pg_sys::Oid::from(db)), None);
        unsafe { set_option(c"search_path", c"pg_catalog, pg_temp") };
        read_and_report(s, db);
        return;
    }
    // the area must be claimed for this database, and nobody may hold it (a DROP DATABASE
    // waits for this worker to leave)
    let held = |h: &Header| alive(h.hold.load(Ordering::Acquire));
    let Some(h) = shmem::find_area(s, db).filter(|h| !held(h)) else { return };
    let epoch = h.epoch.load(Ordering::Acquire);
    let me = unsafe { pg_sys::MyProcPid };
    let owner = h.worker_pid.load(Ordering::Acquire);
    if (owner != 0 && owner != me && alive(owner))
        || h.worker_pid.compare_exchange(owner, me, Ordering::AcqRel, Ordering::Acquire).is_err()
    {
        return; // another allocator serves it
    }
    SERVING.store(h as *const Header as *mut Header, Ordering::Release);
    unsafe { pg_sys::before_shmem_exit(Some(on_exit), pg_sys::Datum::from(0)) };
    BackgroundWorker::connect_worker_to_spi_by_oid(Some(pg_sys::Oid::from(db)), None);
    if held(h) || h.epoch.load(Ordering::Acquire) != epoch || h.worker_pid.load(Ordering::Acquire) != me {
        return; // held, released, or taken over while this process connected
    }
    unsafe {
        // Durable before use: the worker's commits always wait for the WAL flush (and for a
        // synchronous standby, when one is configured), whatever the server default. Its
        // transactions are READ COMMITTED and read-write, and never wait long for a lock.
        set_option(c"synchronous_commit", c"on");
        set_option(c"search_path", c"pg_catalog, pg_temp");
        set_option(c"default_transaction_isolation", c"read committed");
        set_option(c"default_transaction_read_only", c"off");
        set_option(c"statement_timeout", c"0");
        apply_lock_timeout();
    }
    let resume = |kind, id| snowflake::resume(h, kind, id);
    let name = match probe(resume) {
        Ok(Probe::Serving(name)) => name,
        Ok(Probe::Absent) => {
            // No allocator where the extension is not installed. A CREATE EXTENSION that was
            // prepared (two-phase: Citus creates it so on its workers) released the area at
            // its PREPARE, and its COMMIT PREPARED runs no code of ours: while this database
            // has a prepared transaction (any may be creating the extension), the area is kept
            // and the launcher starts this allocator again a second later, to look again.
            // Otherwise looked at again with a new snapshot: a CREATE EXTENSION may have
            // committed since the first look (also one that was prepared, after the count).
            if prepared_here() == Some(0) && matches!(probe(resume), Ok(Probe::Absent)) {
                shmem::release_area(h, epoch, true);
            }
            return;
        }
        Err(e) => {
            warning!("pg_seqgen allocator for database {db}: reading the reservations failed: {}", e.msg);
            return;
        }
    };
    read_identity(h);
    // a transaction prepared before a restart may hold a grant or a revoke: then no privilege
    // answer is cached until the periodic passes find none left (see `clear_acl_prepared`)
    if prepared_catalog_writers() != Some(0) {
        h.acl_prepared.fetch_add(1, Ordering::AcqRel);
        h.acl_epoch.fetch_add(1, Ordering::AcqRel);
    }
    unsafe { h.worker_latch.store(pg_sys::MyLatch, Ordering::Release) };
    h.health.started_ms.store(shmem::now_ms(), Ordering::Release);
    h.worker_status.store(WorkerStatus::Running as u32, Ordering::Release);
    log!("pg_seqgen allocator started, serving database \"{name}\"");
    h.broadcast();
    unsafe { set_signal(pg_sys::SIGTERM, on_sigterm_serving) };

    let mut w = Worker {
        last_periodic_ms: 0,
        templates: HashMap::new(),
        retry_soon: false,
        plans: None,
        catalog: 0,
        absent: false,
        templated: Default::default(),
        verify_hand: 0,
        sync: Default::default(),
        leases: Default::default(),
    };
    loop {
        unsafe {
            // a cancel that arrives while nothing runs cancels nothing (held off while the
            // interrupts are checked: a SIGINT arriving in between would end the worker with an
            // ERROR outside a transaction; a SIGTERM cancels only inside the cycle's)
            pg_sys::QueryCancelHoldoffCount += 1;
            pgrx::check_for_interrupts!();
            pg_sys::QueryCancelHoldoffCount -= 1;
            pg_sys::QueryCancelPending = 0;
        }
        if unsafe { pg_sys::ConfigReloadPending } != 0 {
            unsafe {
                pg_sys::ConfigReloadPending = 0;
                pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP);
                apply_lock_timeout();
            }
        }
        if h.epoch.load(Ordering::Acquire) != epoch || held(h) {
            // released (the database is dropped) or held (a command needs the database to
            // itself): leave; the launcher starts the allocator again if it is still needed
            return;
        }
        if stopping() {
            w.give_back_all(h);
            return;
        }
        w.cycle(h);
        if w.absent {
            log!("pg_seqgen allocator: the extension was dropped from database \"{name}\"; stopping");
            shmem::release_area(h, epoch, true);
            return;
        }
        h.health.last_cycle_ms.store(shmem::now_ms(), Ordering::Release);
        h.broadcast();
        let timeout = if w.retry_soon { 5 } else { 1000 };
        unsafe {
            pg_sys::WaitLatch(
                pg_sys::MyLatch,
                (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
                timeout,
                pg_sys::PG_WAIT_EXTENSION,
            );
            pg_sys::ResetLatch(pg_sys::MyLatch);
        }
    }
}

unsafe fn apply_lock_timeout() {
    let ms = std::ffi::CString::new(guc::WORKER_LOCK_TIMEOUT.get().to_string()).expect("digits");
    unsafe { set_option(c"lock_timeout", &ms) };
}

struct Worker {
    last_periodic_ms: i64,
    /// Parsed templates of the slots (slot index -> template version, text, zone name,
    /// template, zone).
    templates: HashMap<usize, (u64, String, String, Template, Tz)>,
    /// Prepared once the catalog exists; dropped when it goes away.
    plans: Option<catalog::Plans>,
    /// The catalog OID the plans were prepared for.
    catalog: u32,
    /// Some job failed on a lock while a caller waits: come back in a few milliseconds.
    retry_soon: bool,
    /// The extension is no longer installed in the database.
    absent: bool,
    /// Slots whose template this allocator read (looked at every cycle for the first block of
    /// the next period); the others only when they ask, and once a second.
    templated: std::collections::BTreeSet<usize>,
    /// Where the next once-a-second check of loaded slots against the catalog starts.
    verify_hand: usize,
    /// On a Citus worker: the copy of the coordinator's tag definitions.
    sync: crate::background::citus::Sync,
    /// The tags' leases for new keys (`leases.rs`).
    leases: Leases,
}

/// Loaded slots checked against the catalog per second (all of them, in turn).
const VERIFY_PER_SECOND: usize = 1024;

impl Worker {
    /// As the allocator stops (SIGTERM): give back every lease it holds (lower the floors
    /// under new keys again, `Plans::return_lease`) in a transaction of its own, so that keys
    /// made after a clean stop or restart of the server start at `start_with`, as after one
    /// that came `seqgen.key_floor_hold` after the last new key. Its commit waits for the local
    /// flush, not for a standby (`leases::commit_locally`). A tag whose row is locked keeps its
    /// floor up, as when a cycle gives it back; a SIGTERM a second or more after the first
    /// ends the worker.
    fn give_back_all(&mut self, h: &'static Header) {
        let held = self.leases.take_all();
        let Some(plans) = &self.plans else { return };
        if held.is_empty() {
            return;
        }
        unsafe {
            // a cancel since the loop's check (a SIGINT) is not of this
            pg_sys::QueryCancelPending = 0;
        }
        let given = in_transaction(std::panic::AssertUnwindSafe(|| {
            leases::commit_locally();
            let mut given = 0;
            for (tag, lease) in &held {
                match in_subtransaction(|c| plans.return_lease(c, tag, *lease)) {
                    Ok(lowered) => given += lowered as usize,
                    // (a lock on the table: the others would wait as long, one after another)
                    Err(_) => break,
                }
            }
            given
        }));
        match given {
            Ok(n) => log!(
                "pg_seqgen allocator stopping: the floor under new keys lowered again for {n} of {} tags",
                held.len()
            ),
            Err(e) => note_error(h, e.state, &e.msg),
        }
    }

    fn cycle(&mut self, h: &'static Header) {
        let now = shmem::now_ms();
        let periodic = now - self.last_periodic_ms >= 1000;
        if h.identity_want.swap(0, Ordering::AcqRel) != 0 || (periodic && node::citus_preloaded()) {
            read_identity(h);
        }
        self.sync.maybe_start(h, h.db.load(Ordering::Acquire), now);
        reclaim_mailboxes(h, periodic);
        // the slots to look at: those that asked, and once a second all of them (a request
        // whose claim was lost, a segment past its trigger)
        let asked = shmem::take_asked(h);
        let candidates: Vec<usize> = if periodic { (0..shmem::slots(h).len()).collect() } else { asked };
        let mut jobs = gather(h, now, periodic, &candidates);
        jobs.extend(self.gather_orders(h, now, &candidates));
        if periodic {
            self.last_periodic_ms = now;
            let give_back = self.leases.give_back_idle(now, &jobs);
            jobs.extend(give_back);
            update_rates(h, now);
            clear_acl_prepared(h);
            let all = shmem::slots(h);
            let start = if self.verify_hand >= all.len() { 0 } else { self.verify_hand };
            let slots: Vec<SlotRef> =
                (start..all.len()).filter_map(|i| SlotRef::of(i, &all[i])).take(VERIFY_PER_SECOND).collect();
            self.verify_hand = slots.last().map_or(all.len(), |r| r.idx + 1);
            if !slots.is_empty() {
                jobs.push(Job::Verify { slots });
            }
        }
        if jobs.is_empty() && !periodic {
            return;
        }
        let policy = guc::step_policy();
        let check_catalog = self.plans.is_none() || periodic;
        INTERRUPTED.store(false, Ordering::SeqCst);
        IN_TRANSACTION.store(true, Ordering::SeqCst);
        let result = in_transaction(std::panic::AssertUnwindSafe(|| {
            let mut missing = None;
            if check_catalog {
                match in_subtransaction(|c| catalog::catalog_state(c)) {
                    Ok(CatalogState::Ready(oid)) => {
                        if self.plans.is_none() || self.catalog != oid {
                            self.plans = None;
                            match in_subtransaction(|c| catalog::Plans::prepare(c)) {
                                Ok(p) => {
                                    self.plans = Some(p);
                                    self.catalog = oid;
                                }
                                Err(e) => missing = Some(Outcome::Failed(e)),
                            }
                        }
                    }
                    Ok(CatalogState::Absent) => {
                        self.plans = None;
                        self.leases.clear();
                        self.catalog = 0;
                        self.absent = true;
                        missing = Some(Outcome::CatalogMissing);
                    }
                    Ok(CatalogState::Missing) => {
                        self.plans = None;
                        self.leases.clear();
                        self.catalog = 0;
                        missing = Some(Outcome::CatalogMissing);
                    }
                    Ok(CatalogState::OtherVersion(v)) => {
                        self.plans = None;
                        self.catalog = 0;
                        missing = Some(Outcome::NeedsUpdate(v));
                    }
                    Err(e) => missing = Some(Outcome::Failed(e)),
                }
            }
            let slots = shmem::all_slots(h);
            // leases started in this transaction serve its later keys too (they commit, and
            // are flushed, with the floor that covers them)
            let leases = std::cell::RefCell::new(self.leases.in_cycle());
            // new keys first, at once tag by tag
            let mut made = match (&self.plans, &missing) {
                (Some(plans), None) if !stopping() => make_new_keys(plans, &jobs, &policy, &mut leases.borrow_mut()),
                _ => HashMap::new(),
            };
            let out: Vec<Outcome> = jobs
                .iter()
                .enumerate()
                .map(|(i, job)| {
                    if let Some(o) = made.remove(&i) {
                        return o;
                    }
                    if stopping() && !matches!(job, Job::ReturnLease { .. }) {
                        // a SIGTERM's cancel took one job at most: the rest are not begun (each
                        // could wait for a lock), and none is published (they are asked again);
                        // a lease this cycle gives back is given back (no longer held, it would
                        // not be as the allocator stops)
                        return Outcome::Failed(JobError {
                            locked: false,
                            state: 0,
                            msg: "the allocator is stopping".into(),
                        });
                    }
                    match (&self.plans, &missing) {
                        (Some(plans), None) => match in_subtransaction(|c| run_job(c, plans, job, slots, &policy)) {
                            // a keyed counter's first segment, in a subtransaction of its own: a
                            // failure there leaves the load done (the draw asks again, as usual)
                            Ok(Outcome::Loaded(l, None)) => match job {
                                Job::Load { tag, draw_as, .. } if *draw_as != 0 => {
                                    let lease = leases.borrow().of(tag);
                                    let first = match in_subtransaction(|c| {
                                        first_segment(c, plans, tag, &l, *draw_as, &policy, lease)
                                    }) {
                                        Ok(first) => {
                                            leases.borrow_mut().started(tag, first.as_ref());
                                            first
                                        }
                                        Err(e) => {
                                            // the draw asks for the segment as usual, and meets
                                            // the failure there too; reported like any job's
                                            report_failure(h, job, &e);
                                            None
                                        }
                                    };
                                    Outcome::Loaded(l, first)
                                }
                                _ => Outcome::Loaded(l, None),
                            },
                            Ok(o) => o,
                            Err(e) => Outcome::Failed(e),
                        },
                        (_, Some(Outcome::CatalogMissing)) | (None, None) => Outcome::CatalogMissing,
                        (_, Some(Outcome::NeedsUpdate(v))) => Outcome::NeedsUpdate(v.clone()),
                        (_, Some(Outcome::Failed(e))) => {
                            Outcome::Failed(JobError { locked: e.locked, state: e.state, msg: e.msg.clone() })
                        }
                        (_, Some(_)) => Outcome::CatalogMissing,
                    }
                })
                .collect();
            if !leases::needs_flush(&out) {
                leases::commit_without_flush();
            } else if stopping() {
                // the cancel may have gone to a job: nothing would cut a wait for a synchronous
                // standby short, and the shutdown would wait with it (published it is not)
                leases::commit_locally();
            }
            out
        }));
        self.retry_soon = false;
        let committed = result.is_ok();
        let outcomes = match result {
            Ok(o) => o,
            Err(e) => {
                // the commit itself failed: nothing was reserved
                jobs.iter()
                    .map(|_| Outcome::Failed(JobError { locked: e.locked, state: e.state, msg: e.msg.clone() }))
                    .collect()
            }
        };
        IN_TRANSACTION.store(false, Ordering::SeqCst);
        if stopping() {
            // a SIGTERM's cancel is for the transaction: after it, it would end the worker with
            // an ERROR wherever an interrupt is checked (a warning), before its leases are given
            // back (the handler cancels only while IN_TRANSACTION, and ran before the store)
            unsafe { pg_sys::QueryCancelPending = 0 };
        }
        if INTERRUPTED.load(Ordering::SeqCst) || stopping() || unsafe { pg_sys::ProcDiePending } != 0 {
            // A cancel or terminate signal arrived during the transaction. If it cut short a
            // synchronous-replication wait, the commit is local only: a standby promoted now
            // would not know these reservations. Publish nothing (the reserved values become
            // a gap) and serve the requests again in the next cycle.
            if committed && stopping() {
                // except the leases it started, held to be given back as the allocator stops
                // (no key is made under them meanwhile; their floors' lowering comes after them
                // in the WAL): else each would stay up for good
                self.leases.committed(&jobs, &outcomes, now);
            }
            note_error(h, 0, "interrupted while committing; the reservations of this cycle are skipped");
            requeue(h, &jobs);
            self.retry_soon = true;
            return;
        }
        self.leases.committed(&jobs, &outcomes, now);
        if outcomes.iter().any(|o| matches!(o, Outcome::CatalogMissing)) {
            note_catalog(h, None);
        } else if self.plans.is_some() {
            note_catalog(h, Some(self.catalog));
        }
        for (job, outcome) in jobs.iter().zip(outcomes) {
            // a locked row is tried again soon only while a caller waits for it (the caller
            // asks again each time it wakes, and stops when it gives up)
            let locked = matches!(
                outcome,
                Outcome::Reserved(Reserve::Locked)
                    | Outcome::Order(OrderReserve::Locked)
                    | Outcome::Snowflake(None)
                    | Outcome::Failed(JobError { locked: true, .. })
            );
            let asked = matches!(
                job,
                Job::Prefetch { asked: true, .. }
                    | Job::Order { asked: true, .. }
                    | Job::Load { .. }
                    | Job::Range { .. }
                    | Job::Template { .. }
                    | Job::Snowflake { .. }
            );
            if locked && asked {
                self.retry_soon = true;
            }
            if let Outcome::Failed(e) = &outcome {
                report_failure(h, job, e);
            }
            finish(h, job, outcome, now);
        }
    }

    /// Order-number blocks to reserve: asked for by a caller, past the prefetch threshold, or
    /// (when the current block is less than half used) the next period's first block shortly
    /// before the period starts, so its first number need not wait.
    fn gather_orders(&mut self, h: &'static Header, now: i64, candidates: &[usize]) -> Vec<Job> {
        let mut jobs = vec![];
        let slots = shmem::slots(h);
        let mut look: std::collections::BTreeSet<usize> = candidates.iter().copied().collect();
        look.extend(self.templated.iter().copied());
        for i in look {
            let Some(s) = slots.get(i) else { continue };
            if s.state.load(Ordering::Acquire) != shmem::SLOT_ACTIVE
                || s.tpl.state.load(Ordering::Acquire) != shmem::TPL_READY
            {
                self.templated.remove(&i);
                continue;
            }
            self.templated.insert(i);
            let asked = s.ord_want.swap(0, Ordering::AcqRel) != 0;
            if s.ord.has_next() {
                continue;
            }
            let Some((text, zone, template, tz)) = self.template_of(i, s) else { continue };
            let span = template.locate(tz, now);
            let snap = s.ord.snapshot();
            let current = snap.current.map(|c| c.period).unwrap_or(i64::MIN);
            let want = s.ord_want_period.load(Ordering::Acquire).max(current).max(span.key);
            let failed = s.ord_err_code.load(Ordering::Relaxed) == code::OVERFLOW;
            // a tenth of the period before it ends, at most a second (templates with date
            // fields only: without them the span is unbounded)
            let boundary_soon = template.unit().is_some() && {
                let lead = (span.end_ms.saturating_sub(span.start_ms) / 10).clamp(1, 1000);
                now >= span.end_ms.saturating_sub(lead)
            };
            let half_used = snap.current.is_none_or(|c| snap.used * 2 >= c.len);
            let job_want = if asked || (!failed && s.ord.wants_next()) {
                Some(want)
            } else if boundary_soon && !half_used {
                Some(template.locate(tz, span.end_ms).key.max(want))
            } else {
                None
            };
            if let (Some(want), Some(slot)) = (job_want, SlotRef::of(i, s)) {
                jobs.push(Job::Order { slot, text, zone, want, asked });
            }
        }
        jobs
    }

    fn template_of(&mut self, idx: usize, s: &TagSlot) -> Option<(String, String, Template, Tz)> {
        let version = s.tpl.version.load(Ordering::Acquire);
        if let Some((v, text, zone, t, z)) = self.templates.get(&idx) {
            if *v == version {
                return Some((text.clone(), zone.clone(), t.clone(), *z));
            }
        }
        let (version, state, text, zone) = s.tpl.read();
        if state != shmem::TPL_READY {
            return None;
        }
        let t = template::parse(&text).ok()?;
        let z = template::parse_time_zone(&zone).ok()?;
        self.templates.insert(idx, (version, text.clone(), zone.clone(), t.clone(), z));
        Some((text, zone, t, z))
    }
}

fn job_name(job: &Job) -> String {
    shmem::shown_name(match job {
        Job::Load { tag, .. } => format!("loading tag \"{tag}\""),
        Job::Range { slot, .. } => format!("reserving a range of tag \"{}\"", slot.tag),
        Job::Template { slot, .. } => format!("reading the template of tag \"{}\"", slot.tag),
        Job::Prefetch { slot, .. } => format!("reserving a segment of tag \"{}\"", slot.tag),
        Job::Order { slot, .. } => format!("reserving order numbers of tag \"{}\"", slot.tag),
        Job::Snowflake { kind, .. } => format!("persisting the {} reservation", kind.name()),
        Job::Verify { .. } => "checking loaded tags against the catalog".into(),
        Job::ReturnLease { tag, .. } => format!("giving back the floor of new keys of tag \"{tag}\""),
    })
}

/// A job failed: a warning in the log (not for a row another transaction held locked: it is
/// tried again), and the failure in the health view.
fn report_failure(h: &Header, job: &Job, e: &JobError) {
    if !e.locked {
        warning!("pg_seqgen allocator: {}: {}", job_name(job), e.msg);
    }
    note_error(h, e.state, &format!("{}: {}", job_name(job), e.msg));
}

/// Record a failure in the health view.
fn note_error(h: &Header, state: i32, msg: &str) {
    let hl = &h.health;
    hl.errors.fetch_add(1, Ordering::Relaxed);
    hl.last_error.write(msg);
    hl.last_error_state.store(state, Ordering::Release);
    hl.last_error_ms.store(shmem::now_ms(), Ordering::Release);
}

/// Once no prepared transaction holds the catalog, privilege answers may be cached again
/// (`Header::acl_prepared`): every backend checks its answers once more.
fn clear_acl_prepared(h: &'static Header) {
    // The count as this pass found it, and as the last pass (a second ago) did. It is cleared
    // only when both passes saw the same count and no prepared transaction writing the
    // catalog: a transaction prepared since the last pass changed the count. (On some minor
    // releases the PREPARE callback that counts comes before the prepared transaction's locks
    // show without a pid; a second later they do.)
    static LAST_SEEN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let seen = h.acl_prepared.load(Ordering::Acquire);
    let last = LAST_SEEN.swap(seen, Ordering::AcqRel);
    if seen == 0 || seen != last {
        return;
    }
    let left = prepared_catalog_writers();
    if left == Some(0) {
        // the epoch first: an answer a backend caches between the two is stale already
        h.acl_epoch.fetch_add(1, Ordering::AcqRel);
        if h.acl_prepared.compare_exchange(seen, 0, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            LAST_SEEN.store(0, Ordering::Release);
        }
    } else if left.is_none() {
        // the count failed: try again on a fresh pair of passes
        LAST_SEEN.store(0, Ordering::Release);
    }
}

/// How many prepared transactions this database has (None: the count failed). Any of them may
/// be creating an extension: CREATE EXTENSION leaves no lock or row to tell it by (its lock on
/// pg_extension is released as the row is written).
fn prepared_here() -> Option<i64> {
    count_in_own_transaction(
        "SELECT count(*) FROM pg_catalog.pg_prepared_xacts p \
         WHERE p.database OPERATOR(pg_catalog.=) pg_catalog.current_database()",
    )
}

/// How many prepared transactions of this database hold a write lock on the catalog (a
/// transaction that changed a grant or an owner holds RowExclusiveLock; pg_locks shows a
/// prepared transaction's locks without a pid). One that only read it, or only checked a
/// foreign key to it (a gapless number: RowShareLock), does not count. None: the count failed.
fn prepared_catalog_writers() -> Option<i64> {
    count_in_own_transaction(
        "SELECT count(*) FROM pg_catalog.pg_locks l \
         WHERE l.pid IS NULL AND l.locktype OPERATOR(pg_catalog.=) 'relation' \
           AND l.mode OPERATOR(pg_catalog.<>) ALL ('{AccessShareLock,RowShareLock}'::pg_catalog.text[]) \
           AND l.relation OPERATOR(pg_catalog.=) pg_catalog.to_regclass('seqgen.alloc') \
           AND l.database OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database d \
                           WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())",
    )
}

/// The count a fixed statement returns, read in a transaction of its own (None: it failed).
fn count_in_own_transaction(sql: &'static str) -> Option<i64> {
    match in_transaction(|| in_subtransaction(|c| c.select(sql, Some(1), &[])?.first().get::<i64>(1))) {
        Ok(Ok(n)) => n,
        _ => None,
    }
}

/// Read this node's Citus group (`plumbing::node`) in a transaction of its own and publish it.
/// A failed read keeps the last one (a group id, once read, stays this node's until Citus
/// changes it).
fn read_identity(h: &'static Header) {
    match in_transaction(|| in_subtransaction(|c| node::read_group(c))) {
        Ok(Ok(g)) => node::publish_group(h, g),
        Ok(Err(e)) | Err(e) => {
            warning!("pg_seqgen allocator: reading the Citus group id failed: {}", e.msg);
            h.identity_seq.fetch_add(1, Ordering::AcqRel);
            h.broadcast();
        }
    }
}

fn note_catalog(h: &'static Header, oid: Option<u32>) {
    let oid = oid.unwrap_or(0);
    let before = h.catalog_oid.swap(oid, Ordering::AcqRel);
    if before != 0 && before != oid {
        // The extension was dropped (and maybe created again): every loaded tag is stale, and
        // so is this node's Citus identity (its confirmation and node id went with the
        // catalog: a recreated coordinator assigns ids afresh)
        crate::plumbing::node::forget(h);
        shmem::retire_all();
    }
}
