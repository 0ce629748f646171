//! The backend's own epoch of privilege answers: bumped when role memberships change (a
//! syscache callback, `acl.rs`) or when this backend changes who may draw from a tag in a
//! transaction not yet committed, and when a transaction that cached answers read from its own
//! writes rolls back (`pending.rs` tells). A leaf: `acl` and `pending` both stand on it.

use std::cell::Cell;

/// A backend-local cell (a backend is single-threaded).
pub(super) struct Local(pub(super) Cell<u64>);
// SAFETY: a backend is single-threaded; pg_seqgen never touches this from other threads.
unsafe impl Sync for Local {}

/// Bumped by role membership changes and by this backend's own grants and revokes.
static MEMBERSHIPS: Local = Local(Cell::new(0));

/// Set when this backend cached an answer read from a row version its own transaction wrote
/// (a tag dropped and created again, say): cleared when the transaction ends.
static OWN_WRITES: Local = Local(Cell::new(0));

/// The epoch now (part of every cached answer's stamp, `acl::Stamp`).
#[inline]
pub fn epoch() -> u64 {
    MEMBERSHIPS.0.get()
}

/// This backend changed who may draw from a tag (in a transaction not committed yet): its own
/// cached answers no longer count (other backends learn it at the commit).
pub fn changed_here() {
    MEMBERSHIPS.0.set(MEMBERSHIPS.0.get().wrapping_add(1));
}

/// An answer read from a row version this transaction wrote is being cached (see
/// `acl::cached_from_own_write`).
pub(super) fn own_write_cached() {
    OWN_WRITES.0.set(1);
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
