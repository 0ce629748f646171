//! Backend side of the tag directory: resolving a tag to its shared-memory slot (through the
//! backend's cache, `cache.rs`, and on a miss the slot index or the worker), checking that the
//! current user may draw from it, asking the worker to load tags and reserve ranges.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use pgrx::pg_sys;
use pgrx::prelude::*;

use seqgen_core::segment::Hint;

use crate::plumbing::acl::Stamp;
use crate::plumbing::cache::{self, Entry, Resolved};
use crate::plumbing::error::{check_name, Result, SeqgenError};
use crate::plumbing::guc;
use crate::plumbing::local::BackendLocal;
use crate::plumbing::shmem::{self, Header, Mailbox, TagSlot};
use crate::plumbing::wait::{call_deadline, wait_for, wait_quietly_until};

/// Result codes the worker writes into a mailbox or a slot's `err_code`.
pub mod code {
    pub const OK: u32 = 0;
    pub const UNKNOWN_TAG: u32 = 1;
    pub const EXHAUSTED: u32 = 2;
    // 3 was "too many tags" (0.3.0): shared memory is a cache now, and a full one evicts
    pub const LOCKED: u32 = 4;
    pub const CATALOG_MISSING: u32 = 5;
    pub const INTERNAL: u32 = 6;
    pub const NO_TEMPLATE: u32 = 7;
    pub const OVERFLOW: u32 = 8;
    /// The slot the request was about no longer serves the catalog row it was loaded from
    /// (the tag was dropped, or dropped and created again): resolve the tag again.
    pub const STALE: u32 = 9;
    /// The catalog's version is older than the library's: `ALTER EXTENSION pg_seqgen UPDATE`.
    pub const NEEDS_UPDATE: u32 = 10;
    /// The tag is gapless (`generators::gapless`).
    pub const GAPLESS: u32 = 11;
    /// A keyed counter of an opaque tag.
    pub const KEYED_OPAQUE: u32 = 12;
    /// A new key, and the tag's owner has `seqgen.max_keys_per_role` keys.
    pub const KEY_LIMIT: u32 = 13;
}

/// Resolve `tag` to its slot, loading it through the worker on first use, and check that the
/// current user may draw from it. Steady state: a string comparison (or a hash lookup when
/// the tag changes from call to call) and a comparison of the privilege stamp.
#[inline]
pub fn resolve(tag: &str) -> Result<Resolved> {
    resolve_hinted(tag).map(|(r, _)| r)
}

/// [`resolve`], with the segment hint this backend keeps for the tag.
#[inline]
pub fn resolve_hinted(tag: &str) -> Result<(Resolved, Hint)> {
    match cache::last_hit(tag) {
        Some(h) => Ok(h),
        None => resolve_slow(tag, false),
    }
}

/// [`resolve_hinted`] for a draw from the tag's own counter (`seqgen_next`): a keyed
/// counter's load also reserves its first segment when the current user may draw from the tag.
pub fn resolve_for_draw(tag: &str) -> Result<(Resolved, Hint)> {
    resolve_slow(tag, true)
}

fn resolve_slow(tag: &str, draw: bool) -> Result<(Resolved, Hint)> {
    if let Some((e, area)) = cache::cached_entry(tag) {
        if e.r.slot.gen().load(Ordering::Acquire) == e.r.gen {
            if e.acl.is_current(&area.acl_epoch) {
                // not made the `last` one: a call that changes the tag every row (a tag per
                // tenant, say) would pay for it every row
                return Ok((e.r, e.hint));
            }
            return check_and_remember(tag, e.r, area);
        }
        cache::forget(tag);
    }
    load_cold(tag, draw)
}

#[cold]
#[inline(never)]
fn load_cold(tag: &str, draw: bool) -> Result<(Resolved, Hint)> {
    let h = ready_header()?;
    check_name(tag)?;
    // the new side of a switchover draws only once the catalog stops coming in (checked before
    // the allocator loads the tag: a segment reserved here would be a write the incoming
    // catalog then collides with)
    crate::plumbing::replication::refuse_while_receiving(shmem::split_name(tag).0)?;
    // a Citus worker back from downtime reads the coordinator's definitions once before it
    // serves a tag: a drop or a revoke made while it was down holds from its first call (if
    // that read fails, it draws on with the definitions it has)
    if crate::plumbing::node::is_citus_worker(h)
        && h.sync_ok_ms.load(Ordering::Acquire) == 0
        && h.sync_failing.load(Ordering::Acquire) == 0
        && h.first_read_gave_up.load(Ordering::Acquire) == 0
    {
        // at most FIRST_READ_WAIT of the call's time, and only until one wait gave up (a
        // coordinator that does not answer, a group not confirmed): later calls do not wait
        let until = crate::plumbing::wait::call_deadline().min(std::time::Instant::now() + FIRST_READ_WAIT);
        let read = crate::plumbing::node::sync_now_until(h, until);
        if !matches!(read, Ok(true)) {
            h.first_read_gave_up.store(1, Ordering::Release);
        }
        read?;
    }
    let r = match lookup(h, tag.as_bytes()) {
        Some(r) => r,
        None => {
            // a keyed counter's first segment comes with its load, for a user the allocator
            // finds allowed on the committed catalog; not while this transaction changed the
            // catalog or a prepared one may (then only the check below decides, on what this
            // transaction sees)
            let keyed = shmem::split_name(tag).1.is_some();
            let settled =
                h.acl_prepared.load(Ordering::Acquire) == 0 && !crate::plumbing::pending::catalog_changed_here();
            let draw_as = if draw && keyed && settled { unsafe { pg_sys::GetUserId() }.to_u32() } else { 0 };
            load(h, tag, draw_as)?
        }
    };
    check_and_remember(tag, r, h)
}

/// Ask the catalog whether the current user may draw from `tag`, and remember the answer.
#[cold]
#[inline(never)]
fn check_and_remember(tag: &str, r: Resolved, area: &'static Header) -> Result<(Resolved, Hint)> {
    // the stamp before the read: a change that commits meanwhile makes the answer stale
    let epoch = area.acl_epoch.load(Ordering::Acquire);
    let stamp = Stamp::now(epoch);
    // a keyed counter is drawn with its tag's privileges
    let owner_tag = shmem::split_name(tag).0;
    // a prepared transaction may change the answer when it commits: then the catalog is asked,
    // and nothing is remembered; a transaction that changed grants or dropped tags asks the
    // catalog too (it sees its own changes there), and keeps nothing in shared memory (they
    // are not everyone's; nor is a row it wrote, see `Grants::written_here`)
    let settled = area.acl_prepared.load(Ordering::Acquire) == 0;
    let shared = settled && !crate::plumbing::pending::catalog_changed_here();
    let grants = match shared.then(|| r.slot.grants.read(r.gen, epoch)).flatten() {
        // what a backend read from the catalog for this slot, still current
        Some(g) => g,
        None => {
            let g = crate::plumbing::acl::grants(owner_tag)?;
            if shared {
                r.slot.grants.publish(r.gen, epoch, &g);
            }
            g
        }
    };
    if !grants.may_draw() {
        return Err(SeqgenError::TagPermission(owner_tag.to_string()));
    }
    let e = Entry { r, acl: stamp, hint: Hint::default() };
    if !settled {
        return Ok((r, e.hint));
    }
    if grants.written_here {
        // a rollback of what this transaction wrote makes the answer stale
        crate::plumbing::acl::cached_from_own_write();
    }
    cache::remember(tag, e, area);
    Ok((r, e.hint))
}

/// This database's allocator, after checking everything a call needs before it can use it:
/// preloaded, primary, an area claimed for this database, its worker running.
pub fn ready_header() -> Result<&'static Header> {
    let h = attach()?;
    wait_for_worker(h)?;
    Ok(h)
}

/// Checks shared by the functions that change the catalog: preloaded, primary, an area for this
/// database (so its allocator runs), and the catalog at the library's version (before `ALTER
/// EXTENSION pg_seqgen UPDATE` its tables may lack columns the calls write: 55000 with the hint
/// rather than a missing column).
pub fn admin_checks() -> Result<()> {
    crate::plumbing::node::refuse_definitions_on_worker(attach()?)?;
    crate::plumbing::catalog::require_current()
}

/// The area serving this database. Claimed here, and its worker asked of the launcher, when
/// none is yet: the extension was created while the server ran in a transaction whose
/// commit could not claim one, or the launcher has not reached this database since the
/// server started.
pub fn attach() -> Result<&'static Header> {
    let s = shmem::server().ok_or(SeqgenError::NotPreloaded)?;
    if unsafe { pg_sys::RecoveryInProgress() } {
        return Err(SeqgenError::HotStandby);
    }
    if let Some(h) = shmem::header() {
        return Ok(h);
    }
    let db = unsafe { pg_sys::MyDatabaseId }.to_u32();
    // in the transaction that creates the extension, the allocator would not find it yet:
    // hold the area until the commit ends
    let creating = crate::plumbing::pending::creating_extension();
    let hold = if creating { unsafe { pg_sys::MyProcPid } } else { 0 };
    let h = shmem::claim_area(s, db, hold).map_err(|_| SeqgenError::TooManyDatabases(guc::MAX_DATABASES.get()))?;
    if creating {
        crate::plumbing::pending::hold_until_commit(h);
    }
    s.ring_launcher();
    Ok(h)
}

/// The name of the current database.
pub fn current_database() -> String {
    unsafe {
        let p = pg_sys::get_database_name(pg_sys::MyDatabaseId);
        if p.is_null() {
            String::new()
        } else {
            std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }
}

fn wait_for_worker(h: &'static Header) -> Result<()> {
    let epoch = h.epoch.load(Ordering::Acquire);
    let ready = || {
        if h.epoch.load(Ordering::Acquire) != epoch {
            // the worker found no extension here, or the database is being dropped
            return Some(Err(SeqgenError::CatalogMissing(current_database())));
        }
        (h.worker_status() == shmem::WorkerStatus::Running).then_some(Ok(()))
    };
    wait_for(h, ready).unwrap_or(Err(SeqgenError::WorkerNotRunning))
}

/// Find the active slot of `name` (directory lock shared; one probe of the tag index).
pub fn lookup(h: &'static Header, name: &[u8]) -> Option<Resolved> {
    shmem::with_dir_lock(h, false, || {
        shmem::find_slot(h, name).map(|idx| {
            let s = &shmem::all_slots(h)[idx];
            Resolved { slot: s, gen: s.gen().load(Ordering::Acquire) }
        })
    })
}

/// Turn a worker result code into an error for `tag`. `detail` and `state` (a SQLSTATE, 0 if
/// unknown) describe a failed job.
pub fn error_for(code: u32, tag: &str, detail: String, state: i32) -> SeqgenError {
    match code {
        code::UNKNOWN_TAG => crate::plumbing::replication::unknown_tag(shmem::split_name(tag).0),
        code::EXHAUSTED => SeqgenError::Exhausted(tag.to_string()),
        code::LOCKED => SeqgenError::RowLocked(tag.to_string()),
        code::CATALOG_MISSING => SeqgenError::CatalogMissing(current_database()),
        code::NO_TEMPLATE => SeqgenError::NoTemplate(shmem::split_name(tag).0.to_string()),
        code::NEEDS_UPDATE => SeqgenError::NeedsUpdate(detail),
        code::GAPLESS => SeqgenError::Gapless(shmem::split_name(tag).0.to_string()),
        code::KEYED_OPAQUE => SeqgenError::Unsupported(format!(
            "keyed counters of an opaque tag (\"{}\" is opaque; keys count in the clear)",
            shmem::split_name(tag).0
        )),
        code::KEY_LIMIT => SeqgenError::KeyLimit {
            tag: shmem::split_name(tag).0.to_string(),
            limit: i64::from(crate::plumbing::guc::MAX_KEYS_PER_ROLE.get()),
        },
        _ => SeqgenError::WorkerFailed { tag: tag.to_string(), detail, state },
    }
}

/// The error for a failed job reported through a slot (prefetch, order block, snowflake):
/// the worker's last error message and SQLSTATE.
pub fn slot_failure(h: &Header, code: u32, tag: &str) -> SeqgenError {
    error_for(code, tag, h.health.last_error.read(), h.health.last_error_state.load(Ordering::Acquire))
}

/// The longest a Citus worker's first cold load after start waits for its first read of the
/// coordinator's definitions.
const FIRST_READ_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Ask the worker to load `tag` into a slot (`draw_as`: see [`resolve_for_draw`]).
fn load(h: &'static Header, tag: &str, draw_as: u32) -> Result<Resolved> {
    let ask = || {
        call_worker_retrying(h, tag, |mb| {
            mb.kind.store(shmem::REQ_LOAD, Ordering::Relaxed);
            mb.n.store(i64::from(draw_as), Ordering::Relaxed);
        })
    };
    let mut reply = ask()?;
    if reply.code == code::UNKNOWN_TAG && crate::plumbing::node::sync_now(h)? {
        // a Citus worker that had not read the coordinator's definitions since the tag was made
        reply = ask()?;
    }
    match reply.code {
        code::OK => {
            let slot = &shmem::slots(h)[reply.start as usize];
            Ok(Resolved { slot, gen: reply.len as u64 })
        }
        code::UNKNOWN_TAG if tag_visible_to_me(shmem::split_name(tag).0) => {
            Err(SeqgenError::TagNotCommitted(shmem::split_name(tag).0.to_string()))
        }
        code::STALE => Err(SeqgenError::CatalogMissing(current_database())),
        c => Err(error_for(c, tag, reply.detail, reply.len as i32)),
    }
}

/// The index of a slot in the slot array.
pub fn slot_index(h: &'static Header, s: &TagSlot) -> usize {
    (s as *const TagSlot as usize - shmem::all_slots(h).as_ptr() as usize) / std::mem::size_of::<TagSlot>()
}

/// Ask the worker to read the template of the resolved tag `r` into its slot. `Ok(false)`:
/// the slot no longer serves the tag; resolve it again.
pub fn load_template(tag: &str, r: Resolved) -> Result<bool> {
    let h = ready_header()?;
    let reply = call_worker_retrying(h, tag, |mb| {
        mb.kind.store(shmem::REQ_TEMPLATE, Ordering::Relaxed);
        mb.slot.store(slot_index(h, r.slot) as u32, Ordering::Relaxed);
        mb.gen.store(r.gen, Ordering::Relaxed);
    })?;
    match reply.code {
        code::OK => Ok(true),
        code::STALE => Ok(false),
        code::NO_TEMPLATE => Err(SeqgenError::NoTemplate(shmem::split_name(tag).0.to_string())),
        c => Err(error_for(c, tag, reply.detail, reply.len as i32)),
    }
}

/// Ask the worker for a dedicated range of `n` values of the resolved tag `r` (for large
/// batches): `Some((start, len, mode))`, reserved from the catalog row the slot serves; `None`
/// when the slot no longer serves the tag (resolve it again).
pub fn reserve_range(tag: &str, r: Resolved, n: i64) -> Result<Option<(i64, i64, i64)>> {
    let h = ready_header()?;
    let reply = call_worker_retrying(h, tag, |mb| {
        mb.kind.store(shmem::REQ_RANGE, Ordering::Relaxed);
        mb.n.store(n, Ordering::Relaxed);
        mb.slot.store(slot_index(h, r.slot) as u32, Ordering::Relaxed);
        mb.gen.store(r.gen, Ordering::Relaxed);
    })?;
    match reply.code {
        code::OK => {
            // reserved for this call alone: taken at once, as a segment's values when drawn
            h.stats.reserved.fetch_add(reply.len.max(0) as u64, Ordering::Relaxed);
            h.stats.taken(reply.len.max(0) as u64);
            Ok(Some((reply.start, reply.len, reply.mode)))
        }
        code::STALE => Ok(None),
        code::UNKNOWN_TAG if tag_visible_to_me(shmem::split_name(tag).0) => {
            Err(SeqgenError::TagNotCommitted(shmem::split_name(tag).0.to_string()))
        }
        c => Err(error_for(c, tag, reply.detail, reply.len as i32)),
    }
}

/// Is there a catalog row for `tag` in this transaction's snapshot? Tells "unknown tag" from
/// "created by a transaction that has not committed".
/// Read with the extension's privileges (an unknown tag is 42704 whoever asks), waiting for a
/// lock on the catalog no longer than a draw may wait.
fn tag_visible_to_me(tag: &str) -> bool {
    crate::plumbing::session::bounded_lock_wait(|| {
        crate::plumbing::session::as_superuser(|| {
            Spi::get_one_with_args::<bool>(
                "SELECT EXISTS (SELECT FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1)",
                &[tag.into()],
            )
        })
    })
    .ok()
    .flatten()
    .unwrap_or(false)
}

struct Reply {
    code: u32,
    start: i64,
    len: i64,
    mode: i64,
    detail: String,
}

/// [`call_worker`], repeated while the tag's catalog row is locked by another transaction,
/// for up to `seqgen.allocation_timeout` (the worker itself never waits for row locks).
fn call_worker_retrying(h: &'static Header, tag: &str, fill: impl Fn(&Mailbox)) -> Result<Reply> {
    let deadline = call_deadline();
    let mut paused: Option<Instant> = None;
    loop {
        let reply = call_worker(h, tag, &fill)?;
        if reply.code != code::LOCKED || Instant::now() >= deadline {
            // the tries for a locked row are one wait (a timeout when the row stayed locked)
            if let Some(since) = paused {
                h.stats.waited(since.elapsed().as_micros() as u64, reply.code == code::LOCKED);
            }
            return Ok(reply);
        }
        paused.get_or_insert_with(Instant::now);
        wait_quietly_until(h, (Instant::now() + Duration::from_millis(10)).min(deadline), || None::<()>);
    }
}

/// The mailbox this backend has claimed, if any: (area, index, sequence). Given up when the
/// backend exits, whatever way it exits.
static CLAIMED: BackendLocal<Option<(&'static Header, usize, u64)>> = BackendLocal::new();
static EXIT_HOOKED: BackendLocal<bool> = BackendLocal::new();

#[pg_guard]
unsafe extern "C-unwind" fn give_up_on_exit(_code: std::ffi::c_int, _arg: pg_sys::Datum) {
    if let Some((h, i, seq)) = CLAIMED.get().take() {
        give_up(&h.mailboxes[i], seq);
    }
}

/// The owner no longer wants the answer of use `seq` of `mb`: hand a posted mailbox back to
/// the worker (which frees it when it answers or reclaims), free it otherwise.
fn give_up(mb: &Mailbox, seq: u64) {
    if mb.transition(seq, shmem::MB_POSTED, shmem::MB_ABANDONED) {
        return;
    }
    for state in [shmem::MB_DONE, shmem::MB_FILLING] {
        if mb.free(seq, state) {
            return;
        }
    }
}

/// Claim a free mailbox (waiting for one up to `timeout` ms).
fn claim(h: &'static Header, tag: &str) -> Result<(&'static Mailbox, u64)> {
    {
        let mut hooked = EXIT_HOOKED.get();
        if !*hooked {
            unsafe { pg_sys::before_shmem_exit(Some(give_up_on_exit), pg_sys::Datum::from(0)) };
            *hooked = true;
        }
    }
    let me = unsafe { pg_sys::MyProcPid };
    let try_claim = || {
        h.mailboxes.iter().enumerate().find_map(|(i, mb)| {
            let (seq, state) = mb.load();
            (state == shmem::MB_FREE && mb.transition(seq, shmem::MB_FREE, shmem::MB_FILLING)).then(|| {
                mb.owner.store(me, Ordering::Release);
                *CLAIMED.get() = Some((h, i, seq));
                (mb, seq)
            })
        })
    };
    wait_for(h, try_claim)
        .ok_or_else(|| SeqgenError::Timeout { tag: tag.to_string(), ms: guc::ALLOCATION_TIMEOUT.get() })
}

/// Post a request in a free mailbox, wake the worker and wait for its answer.
fn call_worker(h: &'static Header, tag: &str, fill: impl FnOnce(&Mailbox)) -> Result<Reply> {
    let timeout = guc::ALLOCATION_TIMEOUT.get();
    let (mb, seq) = claim(h, tag)?;
    mb.set_name(tag.as_bytes());
    // the area must still serve this database: a request posted to it after it was released
    // (and maybe claimed for another database) is answered STALE by the worker
    let epoch = h.epoch.load(Ordering::Acquire);
    mb.epoch.store(epoch, Ordering::Relaxed);
    if h.db.load(Ordering::Acquire) != unsafe { pg_sys::MyDatabaseId }.to_u32() {
        give_up(mb, seq);
        *CLAIMED.get() = None;
        return Err(SeqgenError::CatalogMissing(current_database()));
    }
    fill(mb);
    mb.result.store(code::INTERNAL, Ordering::Relaxed);
    mb.r_mode.store(0, Ordering::Relaxed);
    mb.transition(seq, shmem::MB_FILLING, shmem::MB_POSTED);
    h.ring();

    let release = || {
        give_up(mb, seq);
        *CLAIMED.get() = None;
    };
    // If the wait is interrupted (query cancel), hand the mailbox back to the worker.
    let done = PgTryBuilder::new(|| {
        wait_for(h, || match mb.load() {
            (s, shmem::MB_DONE) if s == seq => Some(Ok(())),
            (s, _) if s != seq => Some(Err(SeqgenError::WorkerFailed {
                tag: tag.to_string(),
                detail: "the request was reclaimed by the worker".into(),
                state: 0,
            })),
            _ => None,
        })
    })
    .catch_others(|e| {
        release();
        e.rethrow()
    })
    .execute();
    match done {
        Some(Ok(())) => {
            let reply = Reply {
                code: mb.result.load(Ordering::Relaxed),
                start: mb.r_start.load(Ordering::Relaxed),
                len: mb.r_len.load(Ordering::Relaxed),
                mode: mb.r_mode.load(Ordering::Relaxed),
                detail: mb.detail(),
            };
            release();
            Ok(reply)
        }
        Some(Err(e)) => {
            release();
            Err(e)
        }
        None => {
            release();
            Err(if h.worker_status() != shmem::WorkerStatus::Running {
                SeqgenError::WorkerNotRunning
            } else {
                SeqgenError::Timeout { tag: tag.to_string(), ms: timeout }
            })
        }
    }
}
