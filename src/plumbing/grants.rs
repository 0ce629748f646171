//! A tag's owner and grants as data: as a backend read them from the catalog ([`Grants`]; what
//! they allow the current user is `acl.rs`'s), and as a tag's shared-memory slot keeps them
//! for the first draws of other backends ([`SharedGrants`]).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use pgrx::pg_sys;

/// A tag's owner and grants, as the latest committed catalog has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grants {
    pub(super) owner: pg_sys::Oid,
    pub(super) public: bool,
    pub(super) drawers: Vec<pg_sys::Oid>,
    /// Read from a row version this transaction wrote (not committed yet).
    pub written_here: bool,
}

impl Grants {
    /// The grants of a committed catalog row (the allocator's read of a tag it loads).
    pub fn committed(owner: u32, public: bool, drawers: &[u32]) -> Grants {
        let drawers = drawers.iter().map(|&d| pg_sys::Oid::from(d)).collect();
        Grants { owner: pg_sys::Oid::from(owner), public, drawers, written_here: false }
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
