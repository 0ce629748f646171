//! Backend side of the tag directory: resolving a tag to its shared-memory slot, asking the
//! worker to load tags and reserve ranges, and retiring the slot of a deleted tag.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::error::{check_tag, Result, SeqgenError};
use crate::guc;
use crate::local::BackendLocal;
use crate::shmem::{self, Header, Mailbox, TagSlot};
use crate::wait::wait_for;

/// Result codes the worker writes into a mailbox or a slot's `err_code`.
pub mod code {
    pub const OK: u32 = 0;
    pub const UNKNOWN_TAG: u32 = 1;
    pub const EXHAUSTED: u32 = 2;
    pub const TOO_MANY_TAGS: u32 = 3;
    pub const LOCKED: u32 = 4;
    pub const CATALOG_MISSING: u32 = 5;
    pub const INTERNAL: u32 = 6;
    pub const NO_TEMPLATE: u32 = 7;
    pub const OVERFLOW: u32 = 8;
}

/// A resolved tag: its slot and the generation the slot had when resolved. A draw is valid
/// only if the slot still has this generation after the draw.
#[derive(Clone, Copy)]
pub struct Resolved {
    pub slot: &'static TagSlot,
    pub gen: u64,
}

#[derive(Default)]
struct Cache {
    /// The last tag resolved, for the common `seqgen_next('same tag')` per row.
    last: Option<(Box<str>, Resolved)>,
    map: HashMap<Box<str>, Resolved>,
}

static CACHE: BackendLocal<Cache> = BackendLocal::new();

/// Resolve `tag` to its slot, loading it through the worker on first use.
#[inline]
pub fn resolve(tag: &str) -> Result<Resolved> {
    let hit = match &CACHE.get().last {
        Some((name, r)) if &**name == tag => Some(*r),
        _ => None,
    };
    match hit {
        Some(r) => Ok(r),
        None => resolve_slow(tag),
    }
}

/// Forget a cached resolution (its slot changed generation).
pub fn forget(tag: &str) {
    let mut c = CACHE.get();
    c.map.remove(tag);
    if matches!(&c.last, Some((n, _)) if &**n == tag) {
        c.last = None;
    }
}

#[cold]
fn resolve_slow(tag: &str) -> Result<Resolved> {
    let cached = CACHE.get().map.get(tag).copied();
    if let Some(r) = cached {
        if r.slot.gen.load(Ordering::Acquire) == r.gen {
            remember(tag, r);
            return Ok(r);
        }
        forget(tag);
    }
    let h = ready_header()?;
    check_tag(tag)?;
    let r = match lookup(h, tag.as_bytes()) {
        Some(r) => r,
        None => load(h, tag)?,
    };
    remember(tag, r);
    Ok(r)
}

fn remember(tag: &str, r: Resolved) {
    let mut c = CACHE.get();
    if c.map.len() > 4096 {
        c.map.clear();
    }
    c.map.insert(tag.into(), r);
    c.last = Some((tag.into(), r));
}

/// The shared header, after checking everything a call needs before it can use the worker:
/// preloaded, primary, the served database, a running worker.
pub fn ready_header() -> Result<&'static Header> {
    let h = shmem::header().ok_or(SeqgenError::NotPreloaded)?;
    if unsafe { pg_sys::RecoveryInProgress() } {
        return Err(SeqgenError::HotStandby);
    }
    check_database()?;
    wait_for_worker(h)?;
    Ok(h)
}

pub fn check_database() -> Result<()> {
    let served = guc::database_name();
    let current = unsafe {
        let p = pg_sys::get_database_name(pg_sys::MyDatabaseId);
        if p.is_null() {
            String::new()
        } else {
            std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    if current != served {
        return Err(SeqgenError::WrongDatabase { served });
    }
    Ok(())
}

fn wait_for_worker(h: &Header) -> Result<()> {
    let running = || (h.worker_status() == shmem::WorkerStatus::Running).then_some(());
    wait_for(h, guc::ALLOCATION_TIMEOUT.get(), running).ok_or(SeqgenError::WorkerNotRunning)
}

/// Find the active slot of `name` (directory lock shared).
pub fn lookup(h: &'static Header, name: &[u8]) -> Option<Resolved> {
    shmem::with_dir_lock(h, false, || {
        shmem::slots(h).iter().find_map(|s| {
            (s.state.load(Ordering::Acquire) == shmem::SLOT_ACTIVE && s.name() == name)
                .then(|| Resolved { slot: s, gen: s.gen.load(Ordering::Acquire) })
        })
    })
}

/// Turn a worker result code into an error for `tag`.
pub fn error_for(code: u32, tag: &str, detail: String) -> SeqgenError {
    match code {
        code::UNKNOWN_TAG => SeqgenError::UnknownTag(tag.to_string()),
        code::EXHAUSTED => SeqgenError::Exhausted(tag.to_string()),
        code::TOO_MANY_TAGS => SeqgenError::TooManyTags(guc::MAX_TAGS.get()),
        code::LOCKED => SeqgenError::RowLocked(tag.to_string()),
        code::CATALOG_MISSING => SeqgenError::CatalogMissing(guc::database_name()),
        code::NO_TEMPLATE => SeqgenError::NoTemplate(tag.to_string()),
        _ => SeqgenError::Internal(detail),
    }
}

/// Ask the worker to load `tag` into a slot.
fn load(h: &'static Header, tag: &str) -> Result<Resolved> {
    let reply = call_worker_retrying(h, tag, |mb| {
        mb.kind.store(shmem::REQ_LOAD, Ordering::Relaxed);
    })?;
    match reply.code {
        code::OK => {
            let slot = &shmem::slots(h)[reply.start as usize];
            Ok(Resolved { slot, gen: reply.len as u64 })
        }
        code::UNKNOWN_TAG if tag_visible_to_me(tag) => Err(SeqgenError::TagNotCommitted(tag.to_string())),
        c => Err(error_for(c, tag, reply.detail)),
    }
}

/// Ask the worker to read the template of `tag` (already resolved) into its slot.
pub fn load_template(tag: &str) -> Result<()> {
    let h = ready_header()?;
    let reply = call_worker_retrying(h, tag, |mb| {
        mb.kind.store(shmem::REQ_TEMPLATE, Ordering::Relaxed);
    })?;
    match reply.code {
        code::OK => Ok(()),
        code::NO_TEMPLATE => Err(SeqgenError::NoTemplate(tag.to_string())),
        c => Err(error_for(c, tag, reply.detail)),
    }
}

/// Ask the worker for a dedicated range of `n` values of `tag` (for large batches):
/// `(start, len, mode)`.
pub fn reserve_range(tag: &str, n: i64) -> Result<(i64, i64, i64)> {
    let h = ready_header()?;
    let reply = call_worker_retrying(h, tag, |mb| {
        mb.kind.store(shmem::REQ_RANGE, Ordering::Relaxed);
        mb.n.store(n, Ordering::Relaxed);
    })?;
    match reply.code {
        code::OK => Ok((reply.start, reply.len, reply.mode)),
        code::UNKNOWN_TAG if tag_visible_to_me(tag) => Err(SeqgenError::TagNotCommitted(tag.to_string())),
        c => Err(error_for(c, tag, reply.detail)),
    }
}

/// Is there a catalog row for `tag` in this transaction's snapshot? Tells "unknown tag" from
/// "created by a transaction that has not committed".
fn tag_visible_to_me(tag: &str) -> bool {
    Spi::get_one_with_args::<bool>(
        "SELECT EXISTS (SELECT FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1)",
        &[tag.into()],
    )
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
    let deadline = Instant::now() + Duration::from_millis(guc::ALLOCATION_TIMEOUT.get() as u64);
    loop {
        let reply = call_worker(h, tag, &fill)?;
        if reply.code != code::LOCKED || Instant::now() >= deadline {
            return Ok(reply);
        }
        wait_for(h, 10, || None::<()>);
    }
}

/// Post a request in a free mailbox, wake the worker and wait for its answer.
fn call_worker(h: &'static Header, tag: &str, fill: impl FnOnce(&Mailbox)) -> Result<Reply> {
    let timeout = guc::ALLOCATION_TIMEOUT.get();
    let claim = || {
        h.mailboxes.iter().find(|mb| {
            mb.state.compare_exchange(shmem::MB_FREE, shmem::MB_FILLING, Ordering::AcqRel, Ordering::Relaxed).is_ok()
        })
    };
    let mb = wait_for(h, timeout, claim).ok_or_else(|| SeqgenError::Timeout { tag: tag.to_string(), ms: timeout })?;
    mb.set_name(tag.as_bytes());
    fill(mb);
    mb.result.store(code::INTERNAL, Ordering::Relaxed);
    mb.r_mode.store(0, Ordering::Relaxed);
    mb.state.store(shmem::MB_POSTED, Ordering::Release);
    h.ring();

    // If the wait is interrupted (query cancel), hand the mailbox back to the worker.
    let abandon = || {
        if mb
            .state
            .compare_exchange(shmem::MB_POSTED, shmem::MB_ABANDONED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // already answered: free it ourselves
            mb.state.store(shmem::MB_FREE, Ordering::Release);
        }
    };
    let done = PgTryBuilder::new(|| {
        wait_for(h, timeout, || {
            if mb.state.load(Ordering::Acquire) == shmem::MB_DONE {
                Some(Ok(()))
            } else if h.worker_status() != shmem::WorkerStatus::Running {
                Some(Err(SeqgenError::WorkerNotRunning))
            } else {
                None
            }
        })
    })
    .catch_others(|e| {
        abandon();
        e.rethrow()
    })
    .execute();
    match done {
        Some(Ok(())) => {
            let reply = Reply {
                code: mb.result.load(Ordering::Relaxed),
                start: mb.r_start.load(Ordering::Relaxed),
                len: mb.r_len.load(Ordering::Relaxed),
                mode: mb.r_mode.load(Ordering::Relaxed) as i64,
                detail: mb.detail(),
            };
            mb.state.store(shmem::MB_FREE, Ordering::Release);
            Ok(reply)
        }
        Some(Err(e)) => {
            abandon();
            Err(e)
        }
        None => {
            abandon();
            Err(SeqgenError::Timeout { tag: tag.to_string(), ms: timeout })
        }
    }
}

/// The template of `name` changed (a committed insert, update or delete): make the next call
/// read it again.
pub fn template_changed(name: &[u8]) {
    let Some(h) = shmem::header() else { return };
    shmem::with_dir_lock(h, true, || {
        for s in shmem::slots(h) {
            if s.state.load(Ordering::Acquire) == shmem::SLOT_ACTIVE && s.name() == name {
                s.tpl.set_state(shmem::TPL_UNKNOWN);
            }
        }
    });
}

/// Retire the slot of `name`: every cached resolution of it becomes invalid, draws in flight
/// are discarded, and the next call reloads the tag from the catalog. Called when a deletion
/// of the tag's catalog row commits.
pub fn retire(name: &[u8]) {
    let Some(h) = shmem::header() else { return };
    shmem::with_dir_lock(h, true, || {
        for s in shmem::slots(h) {
            if s.state.load(Ordering::Acquire) == shmem::SLOT_ACTIVE && s.name() == name {
                s.gen.fetch_add(1, Ordering::AcqRel);
                s.state.store(shmem::SLOT_FREE, Ordering::Release);
            }
        }
    });
    h.broadcast();
}
