//! Who may use a tag, like the privileges of a sequence.
//!
//! Every tag has an owner (`seqgen.alloc.owner`, the role that created it). The owner, its
//! members and superusers may draw from the tag and change it (alter, restart, template,
//! opaque, node bits, drop, grants). Anyone else may draw only once the owner granted it
//! (`seqgen_grant(tag, role)`: the role and its members; `'public'`: everyone with EXECUTE on
//! the drawing function). Drawing without it fails with 42501 naming the tag; an unknown tag
//! is 42704 for everyone.
//!
//! The catalog is read with fixed statements as the bootstrap superuser (the caller needs no
//! privilege on pg_seqgen's schema). A backend caches its answer per tag, keyed by its
//! current user and an epoch that changes when a grant, a revoke or an owner change commits
//! in the database (`Header::acl_epoch`, bumped by the catalog trigger) or when role
//! memberships change (a syscache callback): the check costs a comparison per call.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::plumbing::error::{Result, SeqgenError};
use crate::plumbing::session::as_superuser;

/// Backend-local epoch of role memberships (a backend is single-threaded).
struct Local(Cell<u64>);
// SAFETY: a backend is single-threaded; pg_seqgen never touches this from other threads.
unsafe impl Sync for Local {}
/// Bumped by role membership changes and by this backend's own grants and revokes.
static MEMBERSHIPS: Local = Local(Cell::new(0));
static HOOKED: Local = Local(Cell::new(0));

#[pg_guard]
unsafe extern "C-unwind" fn memberships_changed(_arg: pg_sys::Datum, _cache: std::ffi::c_int, _hash: u32) {
    changed_here();
}

/// This backend changed who may draw from a tag (in a transaction not committed yet): its own
/// cached answers no longer count (other backends learn it at the commit).
pub fn changed_here() {
    MEMBERSHIPS.0.set(MEMBERSHIPS.0.get().wrapping_add(1));
}

/// Set when this backend cached an answer read from a row version its own transaction wrote
/// (a tag dropped and created again, say): cleared when the transaction ends.
static OWN_WRITES: Local = Local(Cell::new(0));

/// An answer read from a row version this transaction wrote is being cached: should the
/// transaction, or a subtransaction, roll back, the answers no longer count.
pub fn cached_from_own_write() {
    OWN_WRITES.0.set(1);
    crate::plumbing::pending::register();
}

/// A transaction or subtransaction rolled back: answers that may rest on what it wrote no
/// longer count.
pub fn rolled_back() {
    if OWN_WRITES.0.get() != 0 {
        changed_here();
    }
}

/// The transaction ended (committed or rolled back, after [`rolled_back`]).
pub fn transaction_ended() {
    OWN_WRITES.0.set(0);
}

/// What a cached answer depends on besides the tag: the current user, and the epochs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    user: pg_sys::Oid,
    epoch: u64,
}

mod unguarded {
    unsafe extern "C" {
        /// PostgreSQL's `GetUserId()`: it returns a variable and never raises an ERROR, so it
        /// is called without pgrx's guard (a `sigsetjmp` per call: it cost the draw 5%).
        pub fn GetUserId() -> pgrx::pg_sys::Oid;
    }
}

impl Stamp {
    /// The stamp now, with `area_epoch` the database's `acl_epoch`.
    #[inline]
    pub fn now(area_epoch: u64) -> Stamp {
        // SAFETY: a plain read of backend state, valid in any backend once it has started
        let user = unsafe { unguarded::GetUserId() };
        Stamp { user, epoch: area_epoch.wrapping_add(MEMBERSHIPS.0.get() << 40) }
    }

    /// Is this stamp (taken when a privilege answer was cached) still the stamp now? `area_epoch`:
    /// the `acl_epoch` of the database's area.
    #[inline(always)]
    pub fn is_current(self, area_epoch: &AtomicU64) -> bool {
        self == Stamp::now(area_epoch.load(Ordering::Acquire))
    }
}

fn watch_memberships() {
    if HOOKED.0.get() == 0 {
        HOOKED.0.set(1);
        unsafe {
            for cache in [pg_sys::SysCacheIdentifier::AUTHMEMROLEMEM, pg_sys::SysCacheIdentifier::AUTHOID] {
                pg_sys::CacheRegisterSyscacheCallback(cache as i32, Some(memberships_changed), pg_sys::Datum::from(0));
            }
        }
    }
}

/// Read with the extension's privileges, waiting for a lock on the catalog no longer than a
/// draw may wait (55P03 then).
///
/// On a Citus worker the row is read with a snapshot of its own (READ COMMITTED): the
/// allocator may have just copied the tag from the coordinator, after the calling statement
/// began.
fn read(tag: &str) -> Result<Option<Grants>> {
    crate::plumbing::session::bounded_lock_wait(|| {
        as_superuser(|| {
            const SQL: &str = "SELECT owner::pg_catalog.oid::pg_catalog.int8, public_draw, \
             drawers::pg_catalog.oid[]::pg_catalog.int8[], xmin::pg_catalog.text::pg_catalog.int8 \
             FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1";
            // the latest committed row, whatever the isolation level: a grant, a revoke or a
            // new owner counts from its commit, as PostgreSQL's own privileges do (a
            // REPEATABLE READ snapshot taken before a revoke must not keep drawing, nor one
            // taken before a drop and re-create let the old owner change the new tag)
            let rows = crate::plumbing::session::latest(SQL, &[tag.into()])?;
            let Some(row) = rows.first() else { return Ok(None) };
            let oid = |v: i64| pg_sys::Oid::from(v as u32);
            // a row this transaction wrote (a drop and a create, an update in the statement
            // that draws: its triggers fire after the statement) is not everyone's yet
            let xmin = pg_sys::TransactionId::from(row[3].int().unwrap_or(0) as u32);
            Ok(Some(Grants {
                owner: oid(row[0].int().unwrap_or(0)),
                public: row[1].bool().unwrap_or(false),
                drawers: row[2].ints().unwrap_or_default().into_iter().map(oid).collect(),
                written_here: unsafe { pg_sys::TransactionIdIsCurrentTransactionId(xmin) },
            }))
        })
    })
    .map_err(|e: pgrx::spi::Error| SeqgenError::Internal(e.to_string()))
}

fn is_owner(owner: pg_sys::Oid) -> bool {
    unsafe { pg_sys::superuser() || pg_sys::has_privs_of_role(pg_sys::GetUserId(), owner) }
}

/// May the current user draw from `tag`? `Err(UnknownTag)` when the catalog has no such row.
/// (Callers cache a `true` with [`Stamp::now`].)
pub fn may_draw(tag: &str) -> Result<bool> {
    Ok(grants(tag)?.may_draw())
}

/// `tag`'s owner and grants as the latest committed catalog has them (with this transaction's
/// own changes); `Err(UnknownTag)` when the catalog has no such row.
pub fn grants(tag: &str) -> Result<Grants> {
    read(tag)?.ok_or_else(|| crate::plumbing::replication::unknown_tag(tag))
}

/// A tag's owner and grants, as the latest committed catalog has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grants {
    owner: pg_sys::Oid,
    public: bool,
    drawers: Vec<pg_sys::Oid>,
    /// Read from a row version this transaction wrote (not committed yet).
    pub written_here: bool,
}

impl Grants {
    /// The grants of a committed catalog row (the allocator's read of a tag it loads).
    pub fn committed(owner: u32, public: bool, drawers: &[u32]) -> Grants {
        let drawers = drawers.iter().map(|&d| pg_sys::Oid::from(d)).collect();
        Grants { owner: pg_sys::Oid::from(owner), public, drawers, written_here: false }
    }

    /// May the current user draw from the tag: it is public, or the user is a member of its
    /// owner or of a role it was granted to (or a superuser).
    pub fn may_draw(&self) -> bool {
        watch_memberships();
        let me = unsafe { pg_sys::GetUserId() };
        self.public || is_owner(self.owner) || self.drawers.iter().any(|g| unsafe { pg_sys::has_privs_of_role(me, *g) })
    }

    /// May the current user see the tag in the status listings: a superuser or a member of
    /// `pg_monitor` sees every tag; anyone else the tags it owns (through membership too) or
    /// may draw from.
    pub fn may_see(&self) -> bool {
        let me = unsafe { pg_sys::GetUserId() };
        let monitor = unsafe { pg_sys::has_privs_of_role(me, pg_sys::Oid::from(pg_sys::ROLE_PG_MONITOR)) };
        monitor
            || self.public
            || is_owner(self.owner)
            || self.drawers.iter().any(|g| unsafe { pg_sys::has_privs_of_role(me, *g) })
    }

    /// Does the current user own the tag (or is it a superuser)?
    pub fn owned(&self) -> bool {
        is_owner(self.owner)
    }
}

/// Every tag's grants, by name, from the latest committed catalog (whatever the isolation
/// level, as [`may_draw`] reads them). Run as the bootstrap superuser.
pub fn latest_grants() -> std::result::Result<std::collections::HashMap<String, Grants>, pgrx::spi::Error> {
    const SQL: &str = "SELECT biz_tag, owner::pg_catalog.oid::pg_catalog.int8, public_draw, \
         drawers::pg_catalog.oid[]::pg_catalog.int8[] FROM seqgen.alloc";
    let oid = |v: i64| pg_sys::Oid::from(v as u32);
    Ok(crate::plumbing::session::latest(SQL, &[])?
        .into_iter()
        .map(|row| {
            (
                row[0].text().unwrap_or_default(),
                Grants {
                    owner: oid(row[1].int().unwrap_or(0)),
                    public: row[2].bool().unwrap_or(false),
                    drawers: row[3].ints().unwrap_or_default().into_iter().map(oid).collect(),
                    written_here: false,
                },
            )
        })
        .collect())
}

/// The current user must own `tag` (or be a superuser) to change it.
pub fn require_owner(tag: &str) -> Result<()> {
    let row = read(tag)?.ok_or_else(|| SeqgenError::UnknownTag(tag.to_string()))?;
    if is_owner(row.owner) {
        Ok(())
    } else {
        Err(SeqgenError::NotTagOwner(tag.to_string()))
    }
}

/// How many roles a tag may be granted to and still have its grants kept in shared memory (a
/// tag granted to more is checked against the catalog on a backend's first use).
pub const SHARED_DRAWERS: usize = 8;

/// A tag's grants as kept in its shared-memory slot, so that a backend's first draw of a tag
/// another backend loaded needs no catalog read (issue 33): the [`Grants`] a backend read from
/// the catalog, published with the slot generation and the database's `acl_epoch` it read them
/// under. They answer only while both are still current: a grant, a revoke or an owner change
/// bumps the epoch when it commits, and a drop (or a re-creation) retires the slot.
///
/// Any backend may publish (a compare-and-swap on `version` makes it the only writer; a
/// backend that loses the race does not publish); readers take no lock: `version` is odd while
/// a write is under way, and a read that saw it change is discarded (a seqlock).
#[repr(C)]
#[derive(Default)]
pub struct SharedGrants {
    version: AtomicU64,
    /// The slot generation (`TagSlot::gen`) the grants are for, and the `acl_epoch` + 1 they
    /// were read under (0: never published).
    gen: AtomicU64,
    epoch: AtomicU64,
    owner: AtomicU32,
    /// Bit 0: public; bits 8..: how many drawers.
    flags: AtomicU32,
    drawers: [AtomicU32; SHARED_DRAWERS],
}

impl SharedGrants {
    /// Keep `g`, read from the catalog for the slot at generation `gen` with `epoch` the
    /// database's `acl_epoch` loaded before the read. Grants to more roles than the slot holds
    /// are not kept.
    pub fn publish(&self, gen: u64, epoch: u64, g: &Grants) {
        if g.drawers.len() > SHARED_DRAWERS || g.written_here {
            return;
        }
        let v = self.version.load(Ordering::Acquire);
        if v & 1 == 1 || self.version.compare_exchange(v, v + 1, Ordering::AcqRel, Ordering::Relaxed).is_err() {
            return;
        }
        // the odd version is seen before any of the fields below (a reader that saw one of
        // them sees the version changed)
        std::sync::atomic::fence(Ordering::Release);
        self.gen.store(gen, Ordering::Relaxed);
        self.epoch.store(epoch.wrapping_add(1), Ordering::Relaxed);
        self.owner.store(g.owner.to_u32(), Ordering::Relaxed);
        self.flags.store(u32::from(g.public) | ((g.drawers.len() as u32) << 8), Ordering::Relaxed);
        for (cell, d) in self.drawers.iter().zip(&g.drawers) {
            cell.store(d.to_u32(), Ordering::Relaxed);
        }
        self.version.store(v + 2, Ordering::Release);
    }

    /// The grants kept for generation `gen`, if they were read under `epoch` (the database's
    /// current `acl_epoch`) and no write was under way.
    pub fn read(&self, gen: u64, epoch: u64) -> Option<Grants> {
        let v = self.version.load(Ordering::Acquire);
        if v & 1 == 1 {
            return None;
        }
        let fresh =
            self.gen.load(Ordering::Relaxed) == gen && self.epoch.load(Ordering::Relaxed) == epoch.wrapping_add(1);
        let owner = pg_sys::Oid::from(self.owner.load(Ordering::Relaxed));
        let flags = self.flags.load(Ordering::Relaxed);
        let n = ((flags >> 8) as usize).min(SHARED_DRAWERS);
        let drawers = self.drawers[..n].iter().map(|d| pg_sys::Oid::from(d.load(Ordering::Relaxed))).collect();
        // the fields above are read before `version` is read again
        std::sync::atomic::fence(Ordering::Acquire);
        if !fresh || self.version.load(Ordering::Relaxed) != v {
            return None;
        }
        Some(Grants { owner, public: flags & 1 == 1, drawers, written_here: false })
    }
}
