//! The allocation worker.
//!
//! Protocol: a backend posts a request (a mailbox, or a slot's `want` flag) and sets the
//! worker's latch. The worker wakes, gathers every pending request, and serves them all in
//! one transaction of its own: per tag one `SELECT ... FOR UPDATE SKIP LOCKED` and one
//! `UPDATE`, with SPI arguments. It commits with `synchronous_commit = on`, and only after the
//! commit returns does it publish the reserved segments to shared memory, answer mailboxes and
//! broadcast the condition variable the backends sleep on. A segment is therefore durable
//! (and, with a synchronous standby, replicated) before any of its values is handed out, and
//! nothing a caller's transaction does (commit or rollback) can give it back.
//!
//! The worker never blocks on a row lock (SKIP LOCKED): a tag whose row is locked by a user's
//! transaction is retried every few milliseconds while other tags are served.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder, SignalWakeFlags};
use pgrx::pg_sys;
use pgrx::pg_sys::panic::CaughtError;
use pgrx::prelude::*;
use seqgen_core::adaptive::Reservation;
use seqgen_core::opaque::Key;
use seqgen_core::segment::{trigger_offset, Segment};
use seqgen_core::template::{self, Template, Tz};

use crate::catalog::{self, OrderReserve, Reserve};
use crate::directory::code;
use crate::guc;
use crate::shmem::{self, Header, Mailbox, TagSlot, WorkerStatus};
use crate::snowflake::{self, SnowflakeJob};

pub fn register() {
    BackgroundWorkerBuilder::new("pg_seqgen allocator")
        .set_type("pg_seqgen allocator")
        .set_function("pg_seqgen_worker_main")
        .set_library("pg_seqgen")
        .enable_spi_access()
        .set_restart_time(Some(Duration::from_secs(1)))
        .load();
}

#[pg_guard]
unsafe extern "C-unwind" fn on_exit(_code: i32, _arg: pg_sys::Datum) {
    if let Some(h) = shmem::header() {
        h.worker_latch.store(std::ptr::null_mut(), Ordering::Release);
        h.worker_status.store(WorkerStatus::Stopped as u32, Ordering::Release);
        h.broadcast();
    }
}

#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn pg_seqgen_worker_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    let Some(h) = shmem::header() else {
        log!("pg_seqgen allocator: shared memory is not initialised; exiting");
        return;
    };
    BackgroundWorker::connect_worker_to_spi(Some(&guc::database_name()), None);
    unsafe {
        // Durable before use: the worker's commits always wait for the WAL flush (and for a
        // synchronous standby, when one is configured), whatever the server default.
        set_option(c"synchronous_commit", c"on");
        set_option(c"search_path", c"pg_catalog, pg_temp");
        pg_sys::before_shmem_exit(Some(on_exit), pg_sys::Datum::from(0));
        h.served_db.store(pg_sys::MyDatabaseId.to_u32(), Ordering::Release);
        h.worker_pid.store(pg_sys::MyProcPid, Ordering::Release);
        h.worker_latch.store(pg_sys::MyLatch, Ordering::Release);
    }
    h.worker_status.store(WorkerStatus::Running as u32, Ordering::Release);
    log!("pg_seqgen allocator started, serving database \"{}\"", guc::database_name());
    h.broadcast();

    let mut w = Worker { last_periodic_ms: 0, templates: HashMap::new(), retry_soon: false, plans: None };
    loop {
        w.cycle(h);
        h.broadcast();
        let timeout = if w.retry_soon { Duration::from_millis(5) } else { Duration::from_millis(1000) };
        if !BackgroundWorker::wait_latch(Some(timeout)) {
            break;
        }
        if BackgroundWorker::sighup_received() {
            unsafe { pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP) };
        }
    }
    log!("pg_seqgen allocator shutting down");
    // Exit code 1: the postmaster restarts the worker (after 1 s) unless the server itself is
    // shutting down. Exit code 0 would unregister it for good, e.g. after pg_terminate_backend.
    unsafe { pg_sys::proc_exit(1) }
}

unsafe fn set_option(name: &std::ffi::CStr, value: &std::ffi::CStr) {
    unsafe {
        pg_sys::SetConfigOption(
            name.as_ptr(),
            value.as_ptr(),
            pg_sys::GucContext::PGC_SUSET,
            pg_sys::GucSource::PGC_S_OVERRIDE,
        );
    }
}

/// One unit of work gathered from shared memory.
enum Job {
    /// Load a tag into a free slot (mailbox index, tag).
    Load { mb: usize, tag: String },
    /// Reserve a dedicated range (mailbox index, tag, size).
    Range { mb: usize, tag: String, n: i64 },
    /// Reserve the next segment of an active slot. `asked`: a caller is waiting for it.
    Prefetch { slot: usize, gen: u64, tag: String, asked: bool },
    /// Load or extend the snowflake reservation; `ts` is the reservation to persist.
    Snowflake { job: SnowflakeJob, ts: i64 },
    /// Read a tag's template into its slot (mailbox index, tag).
    Template { mb: usize, tag: String },
    /// Reserve the next order-number counter block of a slot, for period `want` or later.
    Order { slot: usize, gen: u64, tag: String, want: i64, asked: bool },
}

struct Worker {
    last_periodic_ms: i64,
    /// Parsed templates of the slots (slot index -> template version, template, zone).
    templates: HashMap<usize, (u64, Template, Tz)>,
    /// Prepared once the catalog exists; dropped after an error and prepared again.
    plans: Option<catalog::Plans>,
    /// Some tag's row was locked: come back in a few milliseconds.
    retry_soon: bool,
}

impl Worker {
    fn cycle(&mut self, h: &'static Header) {
        let now = shmem::now_ms();
        let periodic = now - self.last_periodic_ms >= 1000;
        let mut jobs = gather(h, now, periodic);
        jobs.extend(self.gather_orders(h, now));
        if jobs.is_empty() && !periodic {
            return;
        }
        if periodic {
            self.last_periodic_ms = now;
            update_rates(h, now);
        }
        let policy = guc::step_policy();
        let slots = shmem::slots(h);
        // Check the catalog is there once a second, or when we have no plans yet.
        let check_catalog = self.plans.is_none() || self.last_periodic_ms == now;
        let mut plans = self.plans.take();
        let result = in_transaction(std::panic::AssertUnwindSafe(|| {
            Spi::connect_mut(|client| {
                let oid = if check_catalog {
                    catalog::catalog_oid(client)?
                } else {
                    Some(h.catalog_oid.load(Ordering::Acquire))
                };
                if oid.is_none() {
                    plans = None;
                } else if plans.is_none() {
                    plans = Some(catalog::Plans::prepare(client)?);
                }
                let outcomes = run_jobs(client, plans.as_ref(), &jobs, slots, &policy)?;
                Ok::<_, pgrx::spi::Error>((oid, outcomes))
            })
        }));
        self.retry_soon = false;
        match result {
            Ok(Ok((oid, outcomes))) => {
                self.plans = plans;
                note_catalog(h, oid);
                for (job, outcome) in jobs.iter().zip(outcomes) {
                    // a locked row is tried again soon only while a caller waits for it (the
                    // caller asks again each time it wakes, and stops when it gives up)
                    let locked =
                        matches!(outcome, Outcome::Reserved(Reserve::Locked) | Outcome::Order(OrderReserve::Locked));
                    let asked = matches!(
                        job,
                        Job::Prefetch { asked: true, .. }
                            | Job::Order { asked: true, .. }
                            | Job::Load { .. }
                            | Job::Range { .. }
                    );
                    if locked && asked {
                        self.retry_soon = true;
                    }
                    finish(h, job, outcome, now);
                }
            }
            Ok(Err(e)) => fail_all(h, &jobs, &e.to_string()),
            Err(msg) => fail_all(h, &jobs, &msg),
        }
    }
}

impl Worker {
    /// Order-number blocks to reserve: asked for by a caller, past the prefetch threshold, or
    /// (when the current block is less than half used) the next period's first block shortly
    /// before the period starts, so its first number need not wait.
    fn gather_orders(&mut self, h: &'static Header, now: i64) -> Vec<Job> {
        let mut jobs = vec![];
        for (i, s) in shmem::slots(h).iter().enumerate() {
            if s.state.load(Ordering::Acquire) != shmem::SLOT_ACTIVE
                || s.tpl.state.load(Ordering::Acquire) != shmem::TPL_READY
            {
                continue;
            }
            let asked = s.ord_want.swap(0, Ordering::AcqRel) != 0;
            if s.ord.has_next() {
                continue;
            }
            let Some((template, tz)) = self.template_of(i, s) else { continue };
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
            if let Some(want) = job_want {
                let gen = s.gen.load(Ordering::Acquire);
                jobs.push(Job::Order {
                    slot: i,
                    gen,
                    tag: String::from_utf8_lossy(s.name()).into_owned(),
                    want,
                    asked,
                });
            }
        }
        jobs
    }

    fn template_of(&mut self, idx: usize, s: &TagSlot) -> Option<(Template, Tz)> {
        let version = s.tpl.version.load(Ordering::Acquire);
        if let Some((v, t, z)) = self.templates.get(&idx) {
            if *v == version {
                return Some((t.clone(), *z));
            }
        }
        let (version, state, text, zone) = s.tpl.read();
        if state != shmem::TPL_READY {
            return None;
        }
        let t = template::parse(&text).ok()?;
        let z = template::parse_time_zone(&zone).ok()?;
        self.templates.insert(idx, (version, t.clone(), z));
        Some((t, z))
    }
}

fn gather(h: &'static Header, now: i64, periodic: bool) -> Vec<Job> {
    let mut jobs = vec![];
    if let Some(job) = snowflake::worker_wants(h, now, periodic) {
        jobs.push(Job::Snowflake { job, ts: snowflake::next_reservation(h, now) });
    }
    for (i, mb) in h.mailboxes.iter().enumerate() {
        if mb.state.load(Ordering::Acquire) != shmem::MB_POSTED {
            continue;
        }
        let tag = String::from_utf8_lossy(&mb.name()).into_owned();
        match mb.kind.load(Ordering::Relaxed) {
            shmem::REQ_LOAD => jobs.push(Job::Load { mb: i, tag }),
            shmem::REQ_TEMPLATE => jobs.push(Job::Template { mb: i, tag }),
            shmem::REQ_RANGE => jobs.push(Job::Range { mb: i, tag, n: mb.n.load(Ordering::Relaxed) }),
            _ => answer(mb, code::INTERNAL, 0, 0, "unknown request kind"),
        }
    }
    for (i, s) in shmem::slots(h).iter().enumerate() {
        if s.state.load(Ordering::Acquire) != shmem::SLOT_ACTIVE {
            continue;
        }
        let asked = s.want.swap(0, Ordering::AcqRel) != 0;
        // One segment ahead at most: a request that arrives when the next segment is already
        // waiting (e.g. both the trigger and a caller at the end of the segment asked) is moot.
        if s.seg.has_next() {
            continue;
        }
        // A tag that failed for good (bigint exhausted) is retried only when a caller asks.
        let failed = s.err_code.load(Ordering::Relaxed) == code::EXHAUSTED;
        if asked || (!failed && s.seg.wants_next()) {
            let gen = s.gen.load(Ordering::Acquire);
            jobs.push(Job::Prefetch { slot: i, gen, tag: String::from_utf8_lossy(s.name()).into_owned(), asked });
        }
    }
    jobs
}

enum Outcome {
    Reserved(Reserve),
    /// Snowflake: the persisted high-water ID was read (Load) or written (Extend).
    Snowflake(i64),
    /// Loads: the tag exists, with this configured step.
    Loaded(i64),
    /// A tag's template and zone (None: no template).
    Template(Option<(String, String, Option<Key>)>),
    Order(OrderReserve),
    /// Loads only: the tag already has a slot.
    AlreadyLoaded,
    NoFreeSlot,
    CatalogMissing,
}

fn run_jobs(
    client: &mut pgrx::spi::SpiClient<'_>,
    plans: Option<&catalog::Plans>,
    jobs: &[Job],
    slots: &'static [TagSlot],
    policy: &seqgen_core::adaptive::StepPolicy,
) -> pgrx::spi::Result<Vec<Outcome>> {
    let mut out = Vec::with_capacity(jobs.len());
    let mut loading: Vec<&str> = vec![];
    // Slots above the high-water mark are all free.
    let max_tags = shmem::header().map_or(0, |h| h.max_tags as usize);
    let mut free = max_tags - slots.iter().filter(|s| s.state.load(Ordering::Acquire) != shmem::SLOT_FREE).count();
    let now = shmem::now_ms();
    for job in jobs {
        let Some(plans) = plans else {
            out.push(Outcome::CatalogMissing);
            continue;
        };
        let o = match job {
            Job::Load { tag, .. } => {
                let loaded = slots
                    .iter()
                    .any(|s| s.state.load(Ordering::Acquire) == shmem::SLOT_ACTIVE && s.name() == tag.as_bytes());
                if loaded || loading.contains(&tag.as_str()) {
                    Outcome::AlreadyLoaded
                } else if free == 0 {
                    Outcome::NoFreeSlot
                } else {
                    // Loading only reads the tag's step: the first segment (or order-number
                    // block) is reserved when it is first needed, so a call that fails later
                    // (e.g. a tag without a template) has reserved nothing.
                    match plans.tag_step(client, tag)? {
                        Some(step) => {
                            free -= 1;
                            loading.push(tag);
                            Outcome::Loaded(step)
                        }
                        None => Outcome::Reserved(Reserve::Missing),
                    }
                }
            }
            Job::Range { tag, n, .. } => Outcome::Reserved(plans.reserve_for(client, tag, |_| *n)?),
            Job::Template { tag, .. } => Outcome::Template(plans.template_read(client, tag)?),
            Job::Order { slot, tag, want, .. } => {
                let s = &slots[*slot];
                let cur = s.ord_cur_step.load(Ordering::Relaxed);
                let lasted = Duration::from_millis((now - s.ord_last_ms.load(Ordering::Relaxed)).max(0) as u64);
                Outcome::Order(plans.order_block(client, tag, *want, |step| policy.next_step(cur, step, Some(lasted)))?)
            }
            Job::Snowflake { job: SnowflakeJob::Load, .. } => Outcome::Snowflake(plans.snowflake_read(client)?),
            Job::Snowflake { job: SnowflakeJob::Extend, ts } => {
                let id = snowflake::layout().id_floor(*ts);
                plans.snowflake_write(client, id)?;
                Outcome::Snowflake(id)
            }
            Job::Prefetch { slot, tag, .. } => {
                let s = &slots[*slot];
                let cur = s.cur_step.load(Ordering::Relaxed);
                let last = s.last_alloc_ms.load(Ordering::Relaxed);
                let lasted = Duration::from_millis((now - last).max(0) as u64);
                Outcome::Reserved(plans.reserve_for(client, tag, |step| policy.next_step(cur, step, Some(lasted)))?)
            }
        };
        out.push(o);
    }
    Ok(out)
}

/// Run `f` in a transaction of its own and commit it. An ERROR anywhere aborts the
/// transaction and comes back as `Err(message)`; the worker carries on.
fn in_transaction<R>(f: impl FnOnce() -> R + std::panic::UnwindSafe) -> Result<R, String> {
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
        let msg = match &e {
            CaughtError::PostgresError(r) | CaughtError::ErrorReport(r) => r.message().to_string(),
            CaughtError::RustPanic { ereport, .. } => ereport.message().to_string(),
        };
        warning!("pg_seqgen allocator: {msg}");
        unsafe { pg_sys::AbortCurrentTransaction() };
        Err(msg)
    })
    .execute()
}

fn note_catalog(h: &'static Header, oid: Option<u32>) {
    let oid = oid.unwrap_or(0);
    let before = h.catalog_oid.swap(oid, Ordering::AcqRel);
    if before != 0 && before != oid {
        // The extension was dropped (and maybe created again): every loaded tag is stale.
        shmem::with_dir_lock(h, true, || {
            for s in shmem::slots(h) {
                if s.state.load(Ordering::Acquire) == shmem::SLOT_ACTIVE {
                    s.gen.fetch_add(1, Ordering::AcqRel);
                    s.state.store(shmem::SLOT_FREE, Ordering::Release);
                }
            }
        });
    }
}

fn answer(mb: &Mailbox, code: u32, start: i64, len: i64, detail: &str) {
    mb.result.store(code, Ordering::Relaxed);
    mb.r_start.store(start, Ordering::Relaxed);
    mb.r_len.store(len, Ordering::Relaxed);
    mb.set_detail(detail);
    if mb.state.compare_exchange(shmem::MB_POSTED, shmem::MB_DONE, Ordering::AcqRel, Ordering::Acquire).is_err() {
        // the caller gave up waiting; the mailbox is ours to free
        mb.state.store(shmem::MB_FREE, Ordering::Release);
    }
}

fn segment_of(range: Reservation) -> Segment {
    let len = range.len();
    Segment { start: range.start, len, trigger: trigger_offset(len, guc::PREFETCH_THRESHOLD.get() as u32), period: 0 }
}

fn reserve_code(r: &Reserve) -> u32 {
    match r {
        Reserve::Done { .. } => code::OK,
        Reserve::Missing => code::UNKNOWN_TAG,
        Reserve::Locked => code::LOCKED,
        Reserve::Exhausted => code::EXHAUSTED,
    }
}

/// Apply a committed outcome to shared memory.
fn finish(h: &'static Header, job: &Job, outcome: Outcome, now: i64) {
    let slots = shmem::slots(h);
    match (job, outcome) {
        (Job::Load { mb, tag }, Outcome::AlreadyLoaded) => match crate::directory::lookup(h, tag.as_bytes()) {
            Some(r) => answer(&h.mailboxes[*mb], code::OK, slot_index(slots, r.slot), r.gen as i64, ""),
            None => answer(&h.mailboxes[*mb], code::INTERNAL, 0, 0, "tag vanished while loading; retry"),
        },
        (Job::Load { mb, tag }, Outcome::Loaded(step)) => match assign_slot(h, tag, step) {
            Some((idx, gen)) => answer(&h.mailboxes[*mb], code::OK, idx as i64, gen as i64, ""),
            None => answer(&h.mailboxes[*mb], code::TOO_MANY_TAGS, 0, 0, ""),
        },
        (Job::Range { mb, tag, .. }, Outcome::Reserved(Reserve::Done { range, opaque, node_bits, .. })) => {
            let mb = &h.mailboxes[*mb];
            if let Some((from, key)) = opaque {
                // the caller permutes the range with the key of its slot
                match crate::directory::lookup(h, tag.as_bytes()) {
                    Some(r) => set_opaque(r.slot, from, &key),
                    None => return answer(mb, code::INTERNAL, 0, 0, "tag vanished while reserving; retry"),
                }
            }
            mb.r_mode.store(mode(opaque.is_some(), node_bits) as u32, Ordering::Relaxed);
            answer(mb, code::OK, range.start, range.len() as i64, "")
        }
        (Job::Load { mb, .. } | Job::Range { mb, .. }, o) => {
            let c = match o {
                Outcome::Reserved(r) => reserve_code(&r),
                Outcome::NoFreeSlot => code::TOO_MANY_TAGS,
                Outcome::CatalogMissing => code::CATALOG_MISSING,
                _ => code::INTERNAL,
            };
            answer(&h.mailboxes[*mb], c, 0, 0, "")
        }
        (Job::Template { mb, tag }, o) => {
            let found = match o {
                Outcome::Template(t) => t,
                Outcome::CatalogMissing => return answer(&h.mailboxes[*mb], code::CATALOG_MISSING, 0, 0, ""),
                _ => return answer(&h.mailboxes[*mb], code::INTERNAL, 0, 0, ""),
            };
            let c = shmem::with_dir_lock(h, true, || {
                let Some(s) = slots
                    .iter()
                    .find(|s| s.state.load(Ordering::Acquire) == shmem::SLOT_ACTIVE && s.name() == tag.as_bytes())
                else {
                    return code::UNKNOWN_TAG;
                };
                match &found {
                    Some((text, zone, key)) => {
                        if let Some(k) = key {
                            s.set_key(k);
                        }
                        s.tpl.write(text, zone);
                        code::OK
                    }
                    None => {
                        s.tpl.set_state(shmem::TPL_MISSING);
                        code::NO_TEMPLATE
                    }
                }
            });
            answer(&h.mailboxes[*mb], c, 0, 0, "")
        }
        (Job::Order { slot, gen, .. }, o) => {
            let s = &slots[*slot];
            if s.gen.load(Ordering::Acquire) != *gen {
                return;
            }
            match o {
                Outcome::Order(OrderReserve::Done(b)) => {
                    s.ord_locked.store(0, Ordering::Relaxed);
                    if s.ord_err_code.load(Ordering::Relaxed) == code::OVERFLOW {
                        s.ord_err_code.store(code::OK, Ordering::Relaxed);
                    }
                    let len = (b.end - b.start + 1) as u64;
                    s.ord_cur_step.store(len as i64, Ordering::Relaxed);
                    s.ord_last_ms.store(now, Ordering::Relaxed);
                    let trigger = trigger_offset(len, guc::PREFETCH_THRESHOLD.get() as u32);
                    // a gap, never a duplicate, if a block is already waiting
                    let _ = s.ord.publish(Segment { start: b.start, len, trigger, period: b.period });
                }
                Outcome::Order(OrderReserve::Locked) => s.ord_locked.store(1, Ordering::Relaxed),
                Outcome::Order(OrderReserve::Overflow(period)) => {
                    s.ord_err_period.store(period, Ordering::Relaxed);
                    order_error(s, code::OVERFLOW);
                }
                Outcome::Order(OrderReserve::Missing) => {
                    shmem::with_dir_lock(h, true, || s.tpl.set_state(shmem::TPL_MISSING));
                    order_error(s, code::NO_TEMPLATE);
                }
                Outcome::CatalogMissing => order_error(s, code::CATALOG_MISSING),
                _ => order_error(s, code::INTERNAL),
            }
        }
        (Job::Snowflake { job: SnowflakeJob::Load, .. }, Outcome::Snowflake(id)) => snowflake::resume(h, id),
        (Job::Snowflake { job: SnowflakeJob::Extend, ts }, Outcome::Snowflake(_)) => {
            snowflake::publish_reservation(h, *ts)
        }
        (Job::Snowflake { .. }, _) => snowflake::report_failure(h),
        (Job::Prefetch { slot, gen, .. }, o) => {
            let s = &slots[*slot];
            if s.gen.load(Ordering::Acquire) != *gen {
                return; // retired meanwhile; the reservation is simply skipped
            }
            match o {
                Outcome::Reserved(Reserve::Done { range, opaque, node_bits, .. }) => {
                    s.locked.store(0, Ordering::Relaxed);
                    s.err_code.store(code::OK, Ordering::Relaxed);
                    s.cur_step.store(range.len() as i64, Ordering::Relaxed);
                    s.last_alloc_ms.store(now, Ordering::Relaxed);
                    let mut seg = segment_of(range);
                    if let Some((from, key)) = &opaque {
                        set_opaque(s, *from, key);
                    }
                    seg.period = mode(opaque.is_some(), node_bits);
                    // Publishing fails only if a segment is already waiting; then this one is
                    // skipped (a gap, never a duplicate).
                    let _ = s.seg.publish(seg);
                }
                Outcome::Reserved(Reserve::Locked) => s.locked.store(1, Ordering::Relaxed),
                Outcome::Reserved(Reserve::Missing) => {
                    // The row is gone (deleted without our trigger seeing it commit, e.g. by
                    // DROP EXTENSION): retire the slot; callers reload and get "unknown tag".
                    crate::directory::retire(s.name());
                }
                Outcome::Reserved(Reserve::Exhausted) => slot_error(s, code::EXHAUSTED),
                Outcome::CatalogMissing => slot_error(s, code::CATALOG_MISSING),
                _ => {}
            }
        }
    }
}

/// A segment tag's segments carry in their `period` field how their counter values become
/// IDs, as decided when they were reserved: bit 0 set for an opaque tag (a keyed
/// permutation), bits 8 to 15 the node bits of a node-interleaved tag.
pub const MODE_OPAQUE: i64 = 1;

pub fn mode(opaque: bool, node_bits: u32) -> i64 {
    opaque as i64 | (node_bits as i64) << 8
}

/// Record an opaque tag's key and domain in its slot (before publishing anything opaque).
fn set_opaque(s: &TagSlot, from: i64, key: &Key) {
    s.opaque_from.store(from, Ordering::Relaxed);
    s.set_key(key);
}

fn order_error(s: &TagSlot, c: u32) {
    s.ord_err_code.store(c, Ordering::Relaxed);
    s.ord_err_seq.fetch_add(1, Ordering::AcqRel);
}

fn slot_error(s: &TagSlot, c: u32) {
    s.err_code.store(c, Ordering::Relaxed);
    s.err_seq.fetch_add(1, Ordering::AcqRel);
}

fn slot_index(slots: &[TagSlot], s: &TagSlot) -> i64 {
    ((s as *const TagSlot as usize - slots.as_ptr() as usize) / std::mem::size_of::<TagSlot>()) as i64
}

/// Put a freshly loaded tag into a free slot with its first segment.
/// Put a freshly loaded tag into a free slot, with no segment yet. The last-reservation times
/// start at 0 so the first segment and block have the configured step (Leaf's rule then sees a
/// "slow" previous segment and does not grow the step).
fn assign_slot(h: &'static Header, tag: &str, step: i64) -> Option<(usize, u64)> {
    shmem::with_dir_lock(h, true, || {
        let slots = shmem::all_slots(h);
        let (idx, s) = slots.iter().enumerate().find(|(_, s)| s.state.load(Ordering::Acquire) == shmem::SLOT_FREE)?;
        h.slots_used.fetch_max(idx as u32 + 1, Ordering::AcqRel);
        s.gen.fetch_add(1, Ordering::AcqRel);
        s.seg.reset();
        s.set_name(tag.as_bytes());
        s.want.store(0, Ordering::Relaxed);
        s.err_code.store(code::OK, Ordering::Relaxed);
        s.locked.store(0, Ordering::Relaxed);
        s.cur_step.store(step, Ordering::Relaxed);
        s.last_alloc_ms.store(0, Ordering::Relaxed);
        s.rate_bits.store(0f64.to_bits(), Ordering::Relaxed);
        s.rate_total.store(0, Ordering::Relaxed);
        s.rate_ms.store(shmem::now_ms(), Ordering::Relaxed);
        s.waits.store(0, Ordering::Relaxed);
        s.ord.reset();
        s.ord_want.store(0, Ordering::Relaxed);
        s.ord_want_period.store(i64::MIN, Ordering::Relaxed);
        s.ord_err_code.store(code::OK, Ordering::Relaxed);
        s.ord_locked.store(0, Ordering::Relaxed);
        s.ord_waits.store(0, Ordering::Relaxed);
        s.ord_cur_step.store(step, Ordering::Relaxed);
        s.ord_last_ms.store(0, Ordering::Relaxed);
        s.tpl.set_state(shmem::TPL_UNKNOWN);
        s.key_set.store(0, Ordering::Relaxed);
        s.opaque_from.store(0, Ordering::Relaxed);
        let gen = s.gen.load(Ordering::Acquire);
        s.state.store(shmem::SLOT_ACTIVE, Ordering::Release);
        Some((idx, gen))
    })
}

fn fail_all(h: &'static Header, jobs: &[Job], msg: &str) {
    let slots = shmem::slots(h);
    for job in jobs {
        match job {
            Job::Load { mb, .. } | Job::Range { mb, .. } => answer(&h.mailboxes[*mb], code::INTERNAL, 0, 0, msg),
            Job::Prefetch { slot, .. } => slot_error(&slots[*slot], code::INTERNAL),
            Job::Snowflake { .. } => snowflake::report_failure(h),
            Job::Template { mb, .. } => answer(&h.mailboxes[*mb], code::INTERNAL, 0, 0, msg),
            Job::Order { slot, .. } => order_error(&slots[*slot], code::INTERNAL),
        }
    }
}

fn update_rates(h: &'static Header, now: i64) {
    for s in shmem::slots(h) {
        if s.state.load(Ordering::Acquire) != shmem::SLOT_ACTIVE {
            continue;
        }
        let total = s.seg.snapshot().total_used;
        let prev_total = s.rate_total.swap(total, Ordering::Relaxed);
        let prev_ms = s.rate_ms.swap(now, Ordering::Relaxed);
        if now > prev_ms {
            let rate = total.saturating_sub(prev_total) as f64 * 1000.0 / (now - prev_ms) as f64;
            s.rate_bits.store(rate.to_bits(), Ordering::Relaxed);
        }
    }
}
