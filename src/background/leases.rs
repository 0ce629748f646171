//! The allocator's leases of new keys (`catalog::Lease`): which it holds, which commits must
//! wait for the flush, and which leases it gives back.
//!
//! A new key's first segment needs its row durable before a value of it is given out, or a
//! crash could hand the values out again. Without a lease that is the commit's flush, one per
//! cycle. With one, the tag's `key_floor` (flushed before) already covers the segment, so a
//! cycle that only makes keys under leases commits without waiting for its flush
//! (`synchronous_commit = off` for that transaction): the keys' rows reach the disk with the
//! next flush, and a crash before then leaves them covered by the floor.

use std::collections::HashMap;

use pgrx::pg_sys;

use crate::background::jobs::{InCycle, Job, Outcome};
use crate::plumbing::catalog::{Birth, Lease, OrderReserve, Reserve};
use crate::plumbing::guc;
use crate::plumbing::shmem;

/// The leases the allocator holds, by tag, each with when a key was last made under it.
#[derive(Default)]
pub(super) struct Leases {
    held: HashMap<String, (Lease, i64)>,
}

impl Leases {
    /// The leases idle since `seqgen.key_floor_hold` before `now`, no longer held, as jobs
    /// that give them back (their floors lowered again, so that keys made after a restart
    /// still start at `start_with`); not those of tags a load in `jobs` may make a key of (the
    /// lease serves it: given back in the same cycle, the key would start a lease above it,
    /// and the floor would stay up for good). A lease given back is not held from here on,
    /// whatever the job comes to: the next key starts a lease above the floor as the row has
    /// it then.
    pub(super) fn give_back_idle(&mut self, now: i64, jobs: &[Job]) -> Vec<Job> {
        let hold = i64::from(guc::KEY_FLOOR_HOLD.get());
        let keyed: std::collections::HashSet<&str> = jobs
            .iter()
            .filter_map(|j| match j {
                Job::Load { tag, .. } => Some(shmem::split_name(tag).0),
                _ => None,
            })
            .collect();
        let idle: Vec<String> = self
            .held
            .iter()
            .filter(|(t, (_, at))| now - at >= hold && !keyed.contains(t.as_str()))
            .map(|(t, _)| t.clone())
            .collect();
        idle.into_iter()
            .filter_map(|tag| self.held.remove(&tag).map(|(lease, _)| Job::ReturnLease { tag, lease }))
            .collect()
    }

    /// The leases for the transaction of a cycle: those held, and those its keys start.
    pub(super) fn in_cycle(&self) -> InCycle<'_> {
        InCycle::new(&self.held)
    }

    /// After a commit that returned, not cut short by a signal: hold the leases it started
    /// (such a commit waited for the flush: `needs_flush`), and note the ones it used.
    pub(super) fn committed(&mut self, jobs: &[Job], outcomes: &[Outcome], now: i64) {
        for (job, o) in jobs.iter().zip(outcomes) {
            let (Job::Load { tag, .. }, Outcome::Loaded(_, Some((_, birth)))) = (job, o) else { continue };
            let tag = shmem::split_name(tag).0;
            match birth {
                Birth::Started(l) => {
                    self.held.insert(tag.to_string(), (*l, now));
                }
                Birth::Leased => {
                    if let Some((_, at)) = self.held.get_mut(tag) {
                        *at = now;
                    }
                }
                Birth::Durable => {}
            }
        }
    }

    /// Every lease held, no longer held (the allocator is stopping: see `worker::give_back_all`).
    pub(super) fn take_all(&mut self) -> Vec<(String, Lease)> {
        self.held.drain().map(|(tag, (lease, _))| (tag, lease)).collect()
    }

    /// Forget every lease (the catalog went away, or the allocator's state is reset).
    pub(super) fn clear(&mut self) {
        self.held.clear();
    }
}

/// Does the commit of a cycle with these outcomes have to wait for its flush? Only writes of
/// new keys under a lease do not; reads write nothing, and failed jobs were rolled back.
pub(super) fn needs_flush(outcomes: &[Outcome]) -> bool {
    outcomes.iter().any(|o| match o {
        Outcome::Loaded(_, Some((Reserve::Done { .. }, Birth::Leased))) => false,
        Outcome::Loaded(_, first) => first.is_some(),
        Outcome::Reserved(r) => matches!(r, Reserve::Done { .. }),
        Outcome::Order(r) => matches!(r, OrderReserve::Done(_)),
        Outcome::Snowflake(_) | Outcome::Returned => true,
        Outcome::Template(_) | Outcome::Stale(_) | Outcome::CatalogMissing | Outcome::NeedsUpdate(_) => false,
        Outcome::Failed(_) => false,
    })
}

/// Let the current transaction's commit return before its flush (`synchronous_commit = off`
/// for this transaction only, as `SET LOCAL` would: back to the allocator's `on` when it ends).
pub(super) fn commit_without_flush() {
    commit_as(c"off");
}

/// Let the current transaction's commit wait for the local flush only, not for a synchronous
/// standby (`synchronous_commit = local` for this transaction only): for the leases given back
/// as the allocator stops, which a standby that is gone must not keep waiting. (A floor lowered
/// is written after every row made under its lease: whatever WAL holds the lowering holds the
/// rows, so no replica can have the one without the others.)
pub(super) fn commit_locally() {
    commit_as(c"local");
}

/// `synchronous_commit` for the current transaction only. With the source of a `SET`: one of
/// `PGC_S_OVERRIDE` (the allocator's own setting's) or below would set the value to return to
/// as well, for good.
fn commit_as(value: &std::ffi::CStr) {
    unsafe {
        pg_sys::set_config_option(
            c"synchronous_commit".as_ptr(),
            value.as_ptr(),
            pg_sys::GucContext::PGC_SUSET,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_LOCAL,
            true,
            0,
            false,
        );
    }
}
