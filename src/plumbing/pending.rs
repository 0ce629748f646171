//! Shared-memory changes that must happen when a catalog change commits: retiring the slot of
//! a dropped (or changed) tag, or every slot when the catalog itself is dropped.
//!
//! A transaction that deletes a tag's row (by `seqgen_drop`, a hand-written `DELETE`, a
//! cascade, logical replication's apply worker, or under `session_replication_role =
//! replica`: the catalog's triggers are `ENABLE ALWAYS`) queues a retirement here. It is
//! carried out when the transaction commits, and also when it is prepared for two-phase
//! commit: a prepared transaction may commit from another session later, and retiring early
//! is always safe (the slot reloads from the catalog, and the row stays locked until the
//! prepared transaction ends). An abort forgets the queue, so nothing leaks into the
//! backend's next transaction.
//!
//! Every action belongs to the subtransaction that queued it: rolling back to a savepoint
//! forgets what was queued since (`ROLLBACK TO SAVEPOINT`, a PL/pgSQL exception block, a
//! failed statement of a client that retries with savepoints), and a released savepoint hands
//! its actions to its parent.
//!
//! An action that must run exactly when the transaction commits (`BeforeCommit`: raising a
//! generator above a reservation written in the transaction) cannot follow a prepared
//! transaction: its commit (`COMMIT PREPARED`, from any session, maybe after a restart that
//! lost this backend's queue) comes later, and its rollback must leave no trace. So such a
//! transaction cannot be prepared (SQLSTATE 0A000, as PostgreSQL refuses to prepare a
//! transaction that used temporary objects); every other action is safe to carry out early, at
//! the prepare.
//!
//! `DROP EXTENSION` (or `DROP SCHEMA seqgen CASCADE`) fires no row trigger; an object-access
//! hook sees the catalog table being dropped and queues the retirement of every slot.
//!
//! `CREATE EXTENSION pg_seqgen` claims the database's area (its allocator) before the commit:
//! beyond `seqgen.max_databases` the commit fails with 53400. The area is held until the commit
//! ends, so the launcher starts the allocator only once the extension is visible to it.

use std::ffi::CStr;

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::plumbing::local::BackendLocal;

pub enum Action {
    /// Retire the slot serving this tag name.
    Retire(String),
    /// Retire every slot (the catalog was dropped).
    RetireAll,
    /// Who may draw from a tag changed: every backend checks again.
    AclChanged,
    /// An extension (this OID) was created: if it is pg_seqgen, claim this database's area
    /// before the commit (refusing the commit when none is free) and have its allocator
    /// started once the commit is visible.
    Attach(pg_sys::Oid),
    /// Run just before the commit (or prepare) becomes visible, e.g. raise a clock-ordered
    /// generator above a reservation written in this transaction.
    BeforeCommit(Box<dyn FnOnce()>),
}

impl Action {
    /// Does it change who may draw from a tag, or drop one (which a transaction may create
    /// again under another owner)?
    fn changes_grants(&self) -> bool {
        matches!(self, Action::AclChanged | Action::Retire(_) | Action::RetireAll)
    }
}

#[derive(Default)]
struct Queue {
    registered: bool,
    /// Each action with the subtransaction that queued it (or that inherited it from a
    /// released child).
    actions: Vec<(pg_sys::SubTransactionId, Action)>,
    /// The areas this transaction holds until it ends (claimed for `CREATE EXTENSION`, or
    /// held by a command that needs a database to itself).
    holding: Vec<&'static crate::plumbing::shmem::Header>,
}

static QUEUE: BackendLocal<Queue> = BackendLocal::new();

/// Queue `action` for the commit (or prepare) of the current transaction.
pub fn at_commit(action: Action) {
    register();
    let sub = unsafe { pg_sys::GetCurrentSubTransactionId() };
    QUEUE.get().actions.push((sub, action));
}

/// Did this transaction (in a subtransaction not rolled back) change who may draw from a tag,
/// or drop one (maybe to create it again)? Then what it reads of the grants is not yet
/// everyone's, and what shared memory keeps of them is not yet its own.
pub fn catalog_changed_here() -> bool {
    QUEUE.get().actions.iter().any(|(_, a)| a.changes_grants())
}

/// Have this backend's transaction callbacks run from now on (queuing an action does it; see
/// also `acl::cached_from_own_write`).
pub fn register() {
    let mut q = QUEUE.get();
    if !q.registered {
        unsafe {
            pg_sys::RegisterXactCallback(Some(xact_callback), std::ptr::null_mut());
            pg_sys::RegisterSubXactCallback(Some(subxact_callback), std::ptr::null_mut());
        }
        q.registered = true;
    }
}

/// A subtransaction ends: a rolled-back one takes its actions with it, a released one hands
/// them to its parent.
#[pg_guard]
unsafe extern "C-unwind" fn subxact_callback(
    event: pg_sys::SubXactEvent::Type,
    my_subid: pg_sys::SubTransactionId,
    parent_subid: pg_sys::SubTransactionId,
    _arg: *mut std::ffi::c_void,
) {
    use pg_sys::SubXactEvent::*;
    let mut q = QUEUE.get();
    match event {
        SUBXACT_EVENT_ABORT_SUB => {
            let acl = q.actions.iter().any(|(sub, a)| *sub == my_subid && a.changes_grants());
            q.actions.retain(|(sub, _)| *sub != my_subid);
            if acl {
                // this backend cached answers while the rolled-back grant, revoke or drop was
                // visible to it: they no longer count
                crate::plumbing::memberships::changed_here();
            }
            // nor do answers read from rows the subtransaction may have written
            crate::plumbing::memberships::rolled_back();
        }
        SUBXACT_EVENT_COMMIT_SUB => {
            for (sub, _) in q.actions.iter_mut().filter(|(sub, _)| *sub == my_subid) {
                *sub = parent_subid;
            }
        }
        _ => {}
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn xact_callback(event: pg_sys::XactEvent::Type, _arg: *mut std::ffi::c_void) {
    use pg_sys::XactEvent::*;
    match event {
        XACT_EVENT_PRE_COMMIT | XACT_EVENT_PARALLEL_PRE_COMMIT | XACT_EVENT_PRE_PREPARE => {
            let before = take_before_commit();
            if event == XACT_EVENT_PRE_PREPARE && !before.is_empty() {
                // the transaction aborts; its queue is cleared by the abort
                crate::plumbing::error::SeqgenError::PreparedReservation.raise();
            }
            for f in before {
                f();
            }
            // may raise "too many databases": the transaction (CREATE EXTENSION) aborts
            if creating_extension() {
                if let Some(h) = claim_for_commit().unwrap_or_else(|e| e.raise()) {
                    hold_until_commit(h);
                }
            }
        }
        XACT_EVENT_COMMIT | XACT_EVENT_PARALLEL_COMMIT | XACT_EVENT_PREPARE => {
            let actions = std::mem::take(&mut QUEUE.get().actions);
            for (_, a) in actions {
                match a {
                    Action::Retire(name) => crate::plumbing::shmem::retire(name.as_bytes()),
                    Action::RetireAll => crate::plumbing::shmem::retire_all(),
                    // prepared: it counts from its COMMIT PREPARED, which runs no code of ours
                    Action::AclChanged if event == XACT_EVENT_PREPARE => crate::plumbing::shmem::acl_prepared(),
                    Action::AclChanged => crate::plumbing::shmem::acl_changed(),
                    Action::Attach(_) | Action::BeforeCommit(_) => {}
                }
            }
            if event == XACT_EVENT_PREPARE {
                // it may yet roll back: answers read from what it wrote no longer count
                crate::plumbing::memberships::rolled_back();
            }
            crate::plumbing::memberships::transaction_ended();
            release_hold();
        }
        XACT_EVENT_ABORT | XACT_EVENT_PARALLEL_ABORT => {
            let mut q = QUEUE.get();
            if q.actions.iter().any(|(_, a)| a.changes_grants()) {
                // answers cached while the aborted grant, revoke or drop was visible here
                crate::plumbing::memberships::changed_here();
            }
            crate::plumbing::memberships::rolled_back();
            crate::plumbing::memberships::transaction_ended();
            q.actions.clear();
            drop(q);
            release_hold();
        }
        _ => {}
    }
}

/// The queued `BeforeCommit` actions, removed from the queue (which is not borrowed while
/// they run).
fn take_before_commit() -> Vec<Box<dyn FnOnce()>> {
    let mut q = QUEUE.get();
    let (before, rest): (Vec<_>, Vec<_>) =
        std::mem::take(&mut q.actions).into_iter().partition(|(_, a)| matches!(a, Action::BeforeCommit(_)));
    q.actions = rest;
    before.into_iter().filter_map(|(_, a)| if let Action::BeforeCommit(f) = a { Some(f) } else { None }).collect()
}

/// Is this transaction creating pg_seqgen (its commit will claim the area)? Other
/// extensions created meanwhile do not count.
pub fn creating_extension() -> bool {
    let created: Vec<pg_sys::Oid> = QUEUE
        .get()
        .actions
        .iter()
        .filter_map(|(_, a)| if let Action::Attach(o) = a { Some(*o) } else { None })
        .collect();
    if created.is_empty() {
        return false;
    }
    let ours = unsafe { pg_sys::get_extension_oid(c"pg_seqgen".as_ptr(), true) };
    ours != pg_sys::InvalidOid && created.contains(&ours)
}

/// Keep area `h` (held with this backend's pid) held until the transaction ends.
pub fn hold_until_commit(h: &'static crate::plumbing::shmem::Header) {
    register();
    let mut q = QUEUE.get();
    if !q.holding.iter().any(|x| std::ptr::eq(*x, h)) {
        q.holding.push(h);
    }
}

/// Claim this database's area, held (its worker not started) until the commit ends.
fn claim_for_commit() -> crate::plumbing::error::Result<Option<&'static crate::plumbing::shmem::Header>> {
    let Some(s) = crate::plumbing::shmem::server() else { return Ok(None) };
    let db = unsafe { pg_sys::MyDatabaseId }.to_u32();
    let me = unsafe { pg_sys::MyProcPid };
    crate::plumbing::shmem::claim_area(s, db, me)
        .map(Some)
        .map_err(|_| crate::plumbing::error::SeqgenError::TooManyDatabases(crate::plumbing::guc::MAX_DATABASES.get()))
}

/// The commit is over (committed or not): the launcher may start the area's worker, which
/// finds the extension, or releases the area if it does not.
fn release_hold() {
    let held = std::mem::take(&mut QUEUE.get().holding);
    if held.is_empty() {
        return;
    }
    let me = unsafe { pg_sys::MyProcPid };
    for h in held {
        let _ =
            h.hold.compare_exchange(me, 0, std::sync::atomic::Ordering::AcqRel, std::sync::atomic::Ordering::Relaxed);
    }
    if let Some(s) = crate::plumbing::shmem::server() {
        s.ring_launcher();
    }
}

static mut PREV_OBJECT_ACCESS_HOOK: pg_sys::object_access_hook_type = None;

/// Called from `_PG_init` (every process that loads the library).
pub fn install_hook() {
    unsafe {
        PREV_OBJECT_ACCESS_HOOK = pg_sys::object_access_hook;
        pg_sys::object_access_hook = Some(object_access);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn object_access(
    access: pg_sys::ObjectAccessType::Type,
    class_id: pg_sys::Oid,
    object_id: pg_sys::Oid,
    sub_id: std::ffi::c_int,
    arg: *mut std::ffi::c_void,
) {
    unsafe {
        if let Some(prev) = PREV_OBJECT_ACCESS_HOOK {
            prev(access, class_id, object_id, sub_id, arg);
        }
        if access == pg_sys::ObjectAccessType::OAT_POST_CREATE && class_id == pg_sys::ExtensionRelationId {
            at_commit(Action::Attach(object_id));
        }
        if access == pg_sys::ObjectAccessType::OAT_DROP
            && class_id == pg_sys::RelationRelationId
            && sub_id == 0
            && is_catalog_table(object_id)
        {
            at_commit(Action::RetireAll);
        }
    }
}

/// Is `relid` the table `seqgen.alloc`?
unsafe fn is_catalog_table(relid: pg_sys::Oid) -> bool {
    unsafe {
        let name = pg_sys::get_rel_name(relid);
        if name.is_null() || CStr::from_ptr(name).to_bytes() != b"alloc" {
            return false;
        }
        let nsp = pg_sys::get_namespace_name(pg_sys::get_rel_namespace(relid));
        !nsp.is_null() && CStr::from_ptr(nsp).to_bytes() == b"seqgen"
    }
}
