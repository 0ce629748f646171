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
use std::sync::atomic::{AtomicU64, Ordering};

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::plumbing::error::{Result, SeqgenError};
use crate::plumbing::memberships::{self, Local};
use crate::plumbing::session::as_superuser;

/// Whether this backend registered its syscache callback for role memberships.
static HOOKED: Local = Local(Cell::new(0));

#[pg_guard]
unsafe extern "C-unwind" fn memberships_changed(_arg: pg_sys::Datum, _cache: std::ffi::c_int, _hash: u32) {
    memberships::changed_here();
}

/// An answer read from a row version this transaction wrote is being cached: should the
/// transaction, or a subtransaction, roll back, the answers no longer count.
pub fn cached_from_own_write() {
    memberships::own_write_cached();
    crate::plumbing::pending::register();
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
        Stamp { user, epoch: area_epoch.wrapping_add(memberships::epoch() << 40) }
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

pub use crate::plumbing::grants::Grants;

/// What the current user may do with a tag of these grants.
impl Grants {
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
