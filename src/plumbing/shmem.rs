//! The shared-memory layout, in one place.
//!
//! ```text
//! Server (one per server)
//! ├── launcher pid and latch, server lock, `clocks_open`
//! ├── snowflake, uuid: the server-wide generator words (every database draws from them)
//! └── areas[seqgen.max_databases]: Header (one per database served), each followed by
//!     slots[seqgen.max_tags]: TagSlot
//! Header (one database's allocator)
//! ├── db, epoch (bumped whenever the area is claimed or released), hold
//! ├── worker: pid, latch, status, catalog oid
//! ├── health: start, last cycle, error count, last error and its time (seqlock text)
//! ├── dir_lock: LWLock guarding the tag directory (slot names and states)
//! ├── cv: ConditionVariable the worker broadcasts after every batch of work
//! ├── mailboxes[MAILBOXES]: synchronous requests (load a tag, reserve a batch range,
//! │   read a template), each owned by one process: word = sequence << 8 | state
//! └── snowflake, uuid: this database's persisted reservation of each generator
//! TagSlot
//! ├── seg: SegmentBuffer (cursor on its own cache line, ring of published segments)
//! ├── ord: SegmentBuffer of order-number counter blocks (segment period = period key)
//! ├── tpl: the tag's template and time zone (seqlock)
//! ├── key, key_set, opaque_from: opaque numbers (key written once)
//! ├── gen: generation, bumped whenever the slot stops serving its tag
//! ├── name, state, identity (catalog table OID + the row's tag_id; directory, written
//! │   under dir_lock)
//! └── worker bookkeeping: prefetch request flag, adaptive step, errors, rates
//! ```
//!
//! Backends only read the directory (under `dir_lock` shared, on a cache miss) and draw from
//! `seg` without any lock. The worker is the only writer of directory entries and of `seg`,
//! except that a backend committing the deletion of a tag retires its slot (under `dir_lock`
//! exclusive). Areas are claimed and released under the server lock; a backend finds its
//! database's area by `db` and checks `epoch`, so an area released and claimed again (for
//! the same or another database) is never mistaken for the one it knew.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering};

use pgrx::pg_sys;
use seqgen_core::segment::SegmentBuffer;

use seqgen_core::snowflake::Generator;

use crate::plumbing::guc;
use crate::plumbing::stats::{Lost, SlotSums};

mod mailbox;
mod retire;
mod tag_index;
mod template;
pub use mailbox::*;
pub use retire::*;
pub use tag_index::*;
pub use template::*;

pub use crate::plumbing::names::{shown_name, split_name, KEY_MAX, KEY_SEP, NAME_MAX, SLOT_NAME_MAX};
/// Synchronous request slots; a backend that finds none free waits for one.
pub const MAILBOXES: usize = 64;

const SHMEM_NAME: &std::ffi::CStr = c"pg_seqgen 0.4.1";
const TRANCHE_NAME: &std::ffi::CStr = c"pg_seqgen";

/// What the worker is doing, for error messages and `seqgen_worker_status()`.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerStatus {
    NotStarted = 0,
    Running = 1,
    Stopped = 2,
}

/// The server-wide part of shared memory.
#[repr(C)]
pub struct Server {
    pub max_databases: u32,
    pub max_tags: u32,
    pub launcher_pid: AtomicI32,
    pub launcher_latch: AtomicPtr<pg_sys::Latch>,
    /// Guards claiming and releasing areas.
    server_lock: AtomicPtr<pg_sys::LWLock>,
    /// Set by the launcher once every database's persisted snowflake and UUIDv7
    /// reservations have been read since the server started (or the shared memory was
    /// re-initialised after a crash): until then no reservation is extended, so no clock
    /// ordered ID is issued below one that a database not yet read may hold.
    pub clocks_open: AtomicU32,
    pub snowflake: ClockShared,
    pub uuid: ClockShared,
    /// The 53-bit (JavaScript-safe) snowflake generator.
    pub snowflake53: ClockShared,
    /// Readers' reports to the launcher: a database's reservations are read (`db`, and
    /// whether the extension is installed there). `db` 0: free; `u32::MAX`: being written.
    pub reports: [Report; REPORTS],
}

pub const REPORTS: usize = 32;

#[repr(C)]
pub struct Report {
    pub db: AtomicU32,
    pub found: AtomicU32,
}

/// A reader's report (see [`Server::reports`]); false when every cell is taken.
pub fn report_read(s: &Server, db: u32, found: bool) -> bool {
    for r in &s.reports {
        if r.db.compare_exchange(0, u32::MAX, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            r.found.store(found as u32, Ordering::Release);
            r.db.store(db, Ordering::Release);
            return true;
        }
    }
    false
}

/// The launcher takes the reports: (database, extension installed).
pub fn take_reports(s: &Server) -> Vec<(u32, bool)> {
    let mut out = vec![];
    for r in &s.reports {
        let db = r.db.load(Ordering::Acquire);
        if db != 0 && db != u32::MAX {
            out.push((db, r.found.load(Ordering::Acquire) != 0));
            r.db.store(0, Ordering::Release);
        }
    }
    out
}

/// `Header::citus_node`: the database has no `citus` extension (or Citus is not preloaded).
pub const CITUS_NONE: i64 = -1;
/// `Header::citus_node`: not read since the area was claimed.
pub const CITUS_UNKNOWN: i64 = -2;
/// `Header::citus_node`: Citus is installed, but `pg_dist_node` does not list this node.
pub const CITUS_NOT_MEMBER: i64 = -3;
/// `Header::citus_node`: a worker whose group ([`Header::citus_candidate`]) is not confirmed
/// as its own yet (a promoted standby reads its primary's replicated group).
pub const CITUS_UNCONFIRMED: i64 = -4;

/// One database's allocator: its worker, mailboxes and tags.
#[repr(C)]
pub struct Header {
    pub index: u32,
    pub max_tags: u32,
    /// The database this area serves (its OID), 0 when free.
    pub db: AtomicU32,
    /// Bumped whenever the area is claimed or released.
    pub epoch: AtomicU64,
    /// The pid of a backend that keeps the allocator from running: committing the
    /// `CREATE EXTENSION` that claimed the area, or running a command that needs the
    /// database to itself (`DROP DATABASE`, `CREATE DATABASE` from it as template).
    pub hold: AtomicI32,
    pub worker_pid: AtomicI32,
    pub worker_latch: AtomicPtr<pg_sys::Latch>,
    pub worker_status: AtomicU32,
    /// Has the worker found the catalog in its database (is the extension created there)?
    pub catalog_oid: AtomicU32,
    /// High-water mark of assigned slots: slots at or above it have never been used.
    pub slots_used: AtomicU32,
    /// Length of the tag index that follows the slots (a power of two).
    index_len: u32,
    /// Retired slots below `slots_used`, as a stack (slot index + 1; 0: none), linked through
    /// `TagSlot::next_free`. Written under `dir_lock` exclusive.
    free_head: AtomicU32,
    /// Words of the bitmap of slots that asked the allocator for something (a segment, an
    /// order-number block), which follows the index: the allocator serves requests in
    /// proportion to their number, not to the slots.
    asked_len: u32,
    /// Where the allocator looks next for a slot to evict.
    pub evict_hand: AtomicU32,
    /// Slots the allocator freed for other tags (their cached values became a gap), and how
    /// many of those had served a call within the last second.
    pub evictions: AtomicU64,
    pub busy_evictions: AtomicU64,
    /// Cumulative counters (`seqgen_stats()`).
    pub stats: crate::plumbing::stats::Stats,
    /// Bumped whenever a commit changes who may draw from a tag of this database (owner,
    /// grants): every backend checks its cached answer again.
    pub acl_epoch: AtomicU64,
    /// Counts transactions that changed who may draw and were prepared (two-phase commit): their
    /// COMMIT PREPARED, from any session, runs no pg_seqgen code, so until the allocator sees
    /// no prepared transaction holding a lock on the catalog (then it clears this and bumps
    /// `acl_epoch`), backends do not cache privilege answers.
    pub acl_prepared: AtomicU32,
    /// Bumped whenever a slot of this database stops serving its tag (after its generation):
    /// a backend's block of values claimed under an older value checks its slot again.
    pub retire_epoch: AtomicU64,
    /// Bumped by every retirement a catalog change asks for ([`retire`]: the counter of the
    /// tag's bucket, [`RETIRE_BUCKETS`] by a hash of the tag's name; [`retire_all`]: every
    /// one), under the directory lock, whether or not a slot was found: a key's first segment
    /// reserved before such a change committed is published only into a slot that existed
    /// when it was retired (see `publish::finish` and [`retire_requests`]).
    retire_requests: [AtomicU64; RETIRE_BUCKETS],
    /// This node's identity on Citus (`plumbing::node::pack`: its group and the node id the
    /// coordinator assigned the group, in one word), or one of the negative states [`CITUS_NONE`], [`CITUS_UNKNOWN`],
    /// [`CITUS_NOT_MEMBER`], [`CITUS_UNCONFIRMED`]. Written by the allocator, and by the sync
    /// process that confirms a group.
    pub citus_node: AtomicI64,
    /// The Citus group the node id is for, or that a worker read while it is
    /// [`CITUS_UNCONFIRMED`]; and a hash of what `pg_dist_node` lists for it.
    pub citus_candidate: AtomicI64,
    pub citus_listing: AtomicI64,
    /// A caller wants the group read now; bumped by the allocator after every read.
    pub identity_want: AtomicU32,
    pub identity_seq: AtomicU64,
    /// On a Citus worker: a caller wants the tag definitions read from the coordinator now
    /// (it did not find a tag); bumped by the allocator after every try; the time of the
    /// last read that succeeded, and of the last change it applied.
    pub sync_want: AtomicU32,
    pub sync_seq: AtomicU64,
    pub sync_ok_ms: AtomicI64,
    pub sync_applied_ms: AtomicI64,
    /// The process reading them (a short-lived background worker, so that a coordinator that
    /// does not answer never holds up the allocator), the version it last applied (the
    /// coordinator's `seqgen.definitions` OID and version; 0: none), whether the last try
    /// failed.
    pub sync_pid: AtomicI32,
    pub sync_started_ms: AtomicI64,
    /// Requests for a read, numbered (`node::sync_now`); the number a read saw when it began,
    /// stored when it ended (successful or not): the requests up to it were made before it.
    pub sync_asked: AtomicU64,
    pub sync_answered: AtomicU64,
    /// A worker's first cold load since start gave up waiting for a first read (it then
    /// draws with the definitions it has).
    pub first_read_gave_up: AtomicU32,
    pub sync_known_oid: AtomicU64,
    pub sync_known_version: AtomicI64,
    pub sync_failing: AtomicU32,
    /// A confirmation of the group failed (and was logged) since the last that succeeded.
    pub confirm_failing: AtomicU32,
    pub dir_lock: AtomicPtr<pg_sys::LWLock>,
    cv: UnsafeCell<pg_sys::ConditionVariable>,
    /// Bumped by every request so the worker knows there is work without scanning.
    pub doorbell: AtomicU64,
    pub health: Health,
    pub mailboxes: [Mailbox; MAILBOXES],
    pub snowflake: AreaClock,
    pub uuid: AreaClock,
    pub snowflake53: AreaClock,
}

/// The worker's health, for `seqgen_worker_status()`. Written by the worker only.
#[repr(C)]
pub struct Health {
    /// When the running worker started, and when it last finished a cycle (ms since the Unix
    /// epoch).
    pub started_ms: AtomicI64,
    pub last_cycle_ms: AtomicI64,
    /// Jobs that failed, since the server started; the last failure's time and message.
    pub errors: AtomicU64,
    pub last_error_ms: AtomicI64,
    /// The SQLSTATE of the last failure (PostgreSQL's packed form), 0 if none.
    pub last_error_state: AtomicI32,
    pub last_error: SeqText<256>,
    /// Mailboxes the worker reclaimed (abandoned, or owned by a process that is gone).
    pub reclaimed: AtomicU64,
}

/// A clock-ordered generator (snowflake or UUIDv7) shared by every backend of the server,
/// whatever its database (the generator itself is in `seqgen_core`).
#[repr(C)]
pub struct ClockShared {
    pub gen: Generator,
    pub episodes: AtomicU32,
    pub waits: AtomicU64,
    pub sequence_waits: AtomicU64,
    pub borrows: AtomicU64,
    pub refusals: AtomicU64,
}

/// One database's reservation of a clock-ordered generator: IDs drawn from this database are
/// below `reserved`, which its worker has persisted in this database's reservation table (so
/// a dump of the database covers every ID issued from it).
#[repr(C)]
pub struct AreaClock {
    /// First timestamp not covered by this database's persisted reservation.
    pub reserved: AtomicI64,
    /// The worker has read this database's persisted reservation and raised the generator
    /// above it.
    pub loaded: AtomicU32,
    /// A backend wants the reservation extended.
    pub want: AtomicU32,
    /// Issuing a timestamp at or above this asks the worker to extend the reservation.
    pub refresh_at: AtomicI64,
    /// Last time (ms since the Unix epoch) an ID was issued close to the reservation, so the
    /// worker keeps extending it while there is traffic.
    pub active_ms: AtomicI64,
    /// Incremented by the worker when persisting the reservation failed; `err_code` says why.
    pub err_seq: AtomicU32,
    pub err_code: AtomicU32,
}

impl AreaClock {
    fn reset(&self) {
        self.reserved.store(0, Ordering::Release);
        self.loaded.store(0, Ordering::Release);
        self.want.store(0, Ordering::Release);
        self.refresh_at.store(i64::MIN, Ordering::Release);
        self.active_ms.store(0, Ordering::Release);
    }
}

/// A short text with one writer and lock-free readers (seqlock on `version`, odd while being
/// written).
#[repr(C)]
pub struct SeqText<const N: usize> {
    version: AtomicU64,
    len: AtomicU32,
    bytes: [AtomicU8; N],
}

impl<const N: usize> SeqText<N> {
    /// Single writer only.
    pub fn write(&self, text: &str) {
        let mut len = text.len().min(N);
        while !text.is_char_boundary(len) {
            len -= 1;
        }
        let v = self.version.load(Ordering::Relaxed);
        self.version.store(v | 1, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        for (cell, b) in self.bytes.iter().zip(&text.as_bytes()[..len]) {
            cell.store(*b, Ordering::Relaxed);
        }
        self.len.store(len as u32, Ordering::Relaxed);
        self.version.store((v | 1) + 1, Ordering::Release);
    }

    /// A consistent copy; empty if the writer kept rewriting it (a status read gives up rather
    /// than spin).
    pub fn read(&self) -> String {
        for _ in 0..1000 {
            let v = self.version.load(Ordering::Acquire);
            if v & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let len = (self.len.load(Ordering::Relaxed) as usize).min(N);
            let bytes: Vec<u8> = self.bytes[..len].iter().map(|b| b.load(Ordering::Relaxed)).collect();
            std::sync::atomic::fence(Ordering::Acquire);
            if self.version.load(Ordering::Relaxed) == v {
                return String::from_utf8_lossy(&bytes).into_owned();
            }
        }
        String::new()
    }
}

/// Which catalog row a slot serves: the OID of the `seqgen.alloc` table it was read from and
/// the row's `tag_id` (a sequence value given when the tag is created). A tag that is dropped
/// and created again, or a catalog dropped with its extension and created again, has another
/// identity, so nothing cached for the old one can be served for the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ident {
    pub rel: u32,
    pub tag_id: i64,
}

/// Slot states.
pub const SLOT_FREE: u32 = 0;
pub const SLOT_ACTIVE: u32 = 1;

/// Prefetch-request flag values in `TagSlot::want`.
pub const WANT_SEGMENT: u32 = 1;

#[repr(C, align(64))]
pub struct TagSlot {
    /// The segment cursor; the slot's generation is on its cache line (`gen()`).
    pub seg: SegmentBuffer,
    pub state: AtomicU32,
    name_len: AtomicU32,
    name: UnsafeCell<[u8; SLOT_NAME_MAX + 1]>,
    ident_rel: AtomicU32,
    ident_tag: AtomicI64,
    /// The role that owns the tag: an eviction for one of its tags (or keys) takes its own
    /// slots first, so that one role's churn does not evict another role's tags.
    pub owner: AtomicU32,
    /// Set by a backend (or the trigger offset) to ask for the next segment.
    pub want: AtomicU32,
    /// Incremented by the worker whenever an allocation for this slot fails; `err_code` says why.
    pub err_seq: AtomicU32,
    pub err_code: AtomicU32,
    /// The catalog row was locked by another transaction at the last attempt.
    pub locked: AtomicU32,
    /// The adaptive step of the last segment, and when it was reserved (ms since Unix epoch).
    pub cur_step: AtomicI64,
    pub last_alloc_ms: AtomicI64,
    /// Draws that found the segment used up and the next one not ready, and had to wait.
    pub waits: AtomicU64,
    /// Order numbers: counter blocks for the tag's template (segments whose `period` is the
    /// period key), and the worker's bookkeeping for them.
    pub ord: SegmentBuffer,
    pub ord_want: AtomicU32,
    /// The latest period a caller needs a block for.
    pub ord_want_period: AtomicI64,
    pub ord_err_seq: AtomicU32,
    pub ord_err_code: AtomicU32,
    pub ord_err_period: AtomicI64,
    pub ord_locked: AtomicU32,
    pub ord_waits: AtomicU64,
    /// The adaptive size of the last order-number block, and when it was reserved.
    pub ord_cur_step: AtomicI64,
    pub ord_last_ms: AtomicI64,
    pub tpl: TemplateCell,
    /// Opaque numbers: the tag's key (written once, before any opaque segment or template is
    /// published) and, for opaque IDs, the counter value above which IDs are permuted.
    pub key_set: AtomicU32,
    pub key: [AtomicU64; 4],
    pub opaque_from: AtomicI64,
    /// ids_per_sec as f64 bits, and the sample it was computed from.
    pub rate_bits: AtomicU64,
    pub rate_total: AtomicU64,
    pub rate_ms: AtomicI64,
    /// Order numbers handed out, at the last sample (for `active_ms`).
    pub ord_total: AtomicU64,
    /// When the slot last served a call, as far as the allocator saw (ms since the Unix
    /// epoch): the least recently used slot is the one evicted for a new tag.
    pub active_ms: AtomicI64,
    /// The next slot of the free list (see `Header::free_head`).
    next_free: AtomicU32,
    /// Who may draw from the tag (for a key: from its tag), as a backend last read it from the
    /// catalog: a new session's first draw needs no catalog read while it is current.
    pub grants: crate::plumbing::grants::SharedGrants,
}

impl TagSlot {
    /// Bumped whenever the slot stops serving its tag. Kept on the cursor's cache line: every
    /// draw re-reads it after its claim.
    #[inline]
    pub fn gen(&self) -> &AtomicU64 {
        &self.seg.owner_word
    }

    /// Store the tag's key (worker only; a key never changes while the slot serves its tag).
    pub fn set_key(&self, key: &seqgen_core::opaque::Key) {
        if self.key_set.load(Ordering::Acquire) == 0 {
            for (cell, w) in self.key.iter().zip(key.words()) {
                cell.store(w, Ordering::Relaxed);
            }
            self.key_set.store(1, Ordering::Release);
        }
    }

    /// The tag's key, once set.
    #[inline]
    pub fn key(&self) -> Option<seqgen_core::opaque::Key> {
        if self.key_set.load(Ordering::Acquire) == 0 {
            return None;
        }
        let w = [0, 1, 2, 3].map(|i| self.key[i].load(Ordering::Relaxed));
        Some(seqgen_core::opaque::Key::from_words(w))
    }

    /// The tag name. Caller holds `dir_lock` (either mode) or is the worker.
    pub fn name(&self) -> &[u8] {
        let len = self.name_len.load(Ordering::Relaxed) as usize;
        // SAFETY: written only under dir_lock exclusive while the slot is FREE.
        unsafe { &(&*self.name.get())[..len.min(SLOT_NAME_MAX)] }
    }

    /// The catalog row this slot serves. Written with the name (dir_lock exclusive, slot FREE).
    pub fn ident(&self) -> Ident {
        Ident { rel: self.ident_rel.load(Ordering::Acquire), tag_id: self.ident_tag.load(Ordering::Acquire) }
    }

    pub fn set_ident(&self, ident: Ident) {
        self.ident_rel.store(ident.rel, Ordering::Release);
        self.ident_tag.store(ident.tag_id, Ordering::Release);
    }

    /// Caller holds `dir_lock` exclusive and the slot is FREE.
    pub fn set_name(&self, name: &[u8]) {
        let len = name.len().min(SLOT_NAME_MAX);
        unsafe {
            let buf = &mut *self.name.get();
            buf[..len].copy_from_slice(&name[..len]);
        }
        self.name_len.store(len as u32, Ordering::Relaxed);
    }
}

// SAFETY: every field is an atomic or is written under the protocol documented above.
unsafe impl Sync for Server {}
unsafe impl Sync for Report {}
unsafe impl Sync for Header {}
unsafe impl Sync for TagSlot {}
unsafe impl Sync for Mailbox {}
impl std::panic::RefUnwindSafe for Server {}
impl std::panic::RefUnwindSafe for Header {}
impl std::panic::RefUnwindSafe for TagSlot {}
impl std::panic::RefUnwindSafe for Mailbox {}

static SHARED: AtomicPtr<Server> = AtomicPtr::new(std::ptr::null_mut());

const ALIGN: usize = std::mem::align_of::<TagSlot>();

fn areas_offset() -> usize {
    std::mem::size_of::<Server>().next_multiple_of(ALIGN)
}

fn slots_offset() -> usize {
    std::mem::size_of::<Header>().next_multiple_of(ALIGN)
}

fn area_stride(max_tags: usize) -> usize {
    (asked_offset(max_tags) + asked_len(max_tags) * std::mem::size_of::<AtomicU64>()).next_multiple_of(ALIGN)
}

/// The bitmap of slots that asked (see `Header::asked_len`) follows the index.
fn asked_offset(max_tags: usize) -> usize {
    (index_offset(max_tags) + index_len(max_tags) * std::mem::size_of::<AtomicU32>()).next_multiple_of(8)
}

fn asked_len(max_tags: usize) -> usize {
    max_tags.div_ceil(64)
}

/// The tag index (open addressing, at most half full) follows the slots.
fn index_offset(max_tags: usize) -> usize {
    slots_offset() + max_tags * std::mem::size_of::<TagSlot>()
}

fn index_len(max_tags: usize) -> usize {
    (max_tags * 2).next_power_of_two()
}

/// Bytes of shared memory for `max_databases` areas of `max_tags` tags each.
pub fn total_size(max_databases: usize, max_tags: usize) -> usize {
    // + alignment slack: ShmemInitStruct only promises MAXALIGN.
    areas_offset() + max_databases * area_stride(max_tags) + ALIGN
}

/// The server-wide part, or `None` when the library was not preloaded.
#[inline]
pub fn server() -> Option<&'static Server> {
    let p = SHARED.load(Ordering::Acquire);
    // SAFETY: set once in the shmem startup hook to memory that lives as long as the server.
    unsafe { p.as_ref() }
}

/// Every area, in use or not.
pub fn areas(s: &'static Server) -> impl Iterator<Item = &'static Header> {
    (0..s.max_databases as usize).map(move |i| area(s, i))
}

pub fn area(s: &'static Server, i: usize) -> &'static Header {
    assert!(i < s.max_databases as usize);
    // SAFETY: the areas follow the server part, laid out by `shmem_startup`.
    unsafe { &*area_ptr(s as *const Server as *mut Server, s.max_tags as usize, i) }
}

fn area_ptr(s: *mut Server, max_tags: usize, i: usize) -> *mut Header {
    // SAFETY (callers): `s` is the start of the shared region, which holds the areas.
    unsafe { (s as *mut u8).add(areas_offset() + i * area_stride(max_tags)) as *mut Header }
}

/// This backend's cached area: (index + 1, epoch); 0 when none.
struct Cached(std::cell::Cell<(usize, u64)>);
// SAFETY: a backend is single-threaded.
unsafe impl Sync for Cached {}
static MY_AREA: Cached = Cached(std::cell::Cell::new((0, 0)));

/// The area serving this backend's database, if one is claimed for it; `None` also when the
/// library was not preloaded (see [`server`]) or the process has no database.
#[inline]
pub fn header() -> Option<&'static Header> {
    let s = server()?;
    let db = unsafe { pg_sys::MyDatabaseId }.to_u32();
    let (i, epoch) = MY_AREA.0.get();
    if i != 0 {
        let h = area(s, i - 1);
        if h.epoch.load(Ordering::Acquire) == epoch && h.db.load(Ordering::Acquire) == db {
            return Some(h);
        }
    }
    if db == 0 {
        return None;
    }
    let h = find_area(s, db)?;
    MY_AREA.0.set((h.index as usize + 1, h.epoch.load(Ordering::Acquire)));
    Some(h)
}

/// The area claimed for database `db`, if any. (It can be released right after; callers
/// that keep it check its epoch, as [`header`] does.)
pub fn find_area(s: &'static Server, db: u32) -> Option<&'static Header> {
    areas(s).find(|h| h.db.load(Ordering::Acquire) == db)
}

/// Why an area could not be claimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoFreeArea;

/// The area of database `db`: the one claimed for it, or a free one claimed now (its worker
/// is started by the launcher). `hold`: a pid that keeps the worker from starting until it
/// clears it (0: none).
pub fn claim_area(s: &'static Server, db: u32, hold: i32) -> Result<&'static Header, NoFreeArea> {
    with_lock(s.server_lock.load(Ordering::Acquire), true, || {
        if let Some(h) = areas(s).find(|h| h.db.load(Ordering::Acquire) == db) {
            if hold != 0 {
                h.hold.store(hold, Ordering::Release);
            }
            return Ok(h);
        }
        let h = areas(s).find(|h| h.db.load(Ordering::Acquire) == 0).ok_or(NoFreeArea)?;
        h.hold.store(hold, Ordering::Release);
        h.catalog_oid.store(0, Ordering::Release);
        h.citus_node.store(CITUS_UNKNOWN, Ordering::Release);
        h.citus_candidate.store(CITUS_UNKNOWN, Ordering::Release);
        h.sync_ok_ms.store(0, Ordering::Release);
        h.sync_applied_ms.store(0, Ordering::Release);
        h.sync_pid.store(0, Ordering::Release);
        h.sync_known_oid.store(0, Ordering::Release);
        h.sync_known_version.store(0, Ordering::Release);
        h.sync_failing.store(0, Ordering::Release);
        h.first_read_gave_up.store(0, Ordering::Release);
        h.confirm_failing.store(0, Ordering::Release);
        h.worker_status.store(WorkerStatus::NotStarted as u32, Ordering::Release);
        h.snowflake.reset();
        h.uuid.reset();
        h.snowflake53.reset();
        let hl = &h.health;
        for v in [&hl.started_ms, &hl.last_cycle_ms, &hl.last_error_ms] {
            v.store(0, Ordering::Release);
        }
        hl.errors.store(0, Ordering::Release);
        hl.reclaimed.store(0, Ordering::Release);
        hl.last_error_state.store(0, Ordering::Release);
        hl.last_error.write("");
        h.stats.reset(now_ms(), SlotSums::default());
        h.epoch.fetch_add(1, Ordering::AcqRel);
        h.db.store(db, Ordering::Release);
        Ok(h)
    })
}

/// Release the area (its database dropped the extension, or was dropped) if it is still
/// claim number `epoch`: every slot is retired, so nothing cached for it is served again.
/// `unless_held`: keep it if a live backend holds it (a `CREATE EXTENSION` committing there
/// claimed it meanwhile: its allocator must start once the commit is visible).
pub fn release_area(h: &'static Header, epoch: u64, unless_held: bool) -> bool {
    let Some(s) = server() else { return false };
    let released = with_lock(s.server_lock.load(Ordering::Acquire), true, || {
        if h.epoch.load(Ordering::Acquire) != epoch || h.db.load(Ordering::Acquire) == 0 {
            return false;
        }
        let holder = h.hold.load(Ordering::Acquire);
        if unless_held && holder != 0 && !unsafe { pg_sys::BackendPidGetProc(holder) }.is_null() {
            return false;
        }
        with_dir_lock(h, true, || {
            for slot in all_slots(h) {
                slot.gen().fetch_add(1, Ordering::AcqRel);
                slot.state.store(SLOT_FREE, Ordering::Release);
            }
            h.retire_epoch.fetch_add(1, Ordering::AcqRel);
            for e in index(h) {
                e.store(0, Ordering::Relaxed);
            }
            h.free_head.store(0, Ordering::Relaxed);
            h.slots_used.store(0, Ordering::Release);
        });
        h.catalog_oid.store(0, Ordering::Release);
        h.hold.store(0, Ordering::Release);
        h.db.store(0, Ordering::Release);
        h.epoch.fetch_add(1, Ordering::AcqRel);
        true
    });
    h.broadcast();
    released
}

/// Every slot, used or not (for start-up and for assigning a free slot).
pub fn all_slots(h: &'static Header) -> &'static [TagSlot] {
    unsafe {
        let base = (h as *const Header as *const u8).add(slots_offset()) as *const TagSlot;
        std::slice::from_raw_parts(base, h.max_tags as usize)
    }
}

/// The slots that have ever been assigned (up to the high-water mark), which is all that
/// scans need to look at.
pub fn slots(h: &'static Header) -> &'static [TagSlot] {
    let used = (h.slots_used.load(Ordering::Acquire) as usize).min(h.max_tags as usize);
    &all_slots(h)[..used]
}

impl Server {
    /// Wake the launcher.
    pub fn ring_launcher(&self) {
        let latch = self.launcher_latch.load(Ordering::Acquire);
        if !latch.is_null() {
            unsafe { pg_sys::SetLatch(latch) };
        }
    }
}

impl Header {
    pub fn cv(&self) -> *mut pg_sys::ConditionVariable {
        self.cv.get()
    }

    pub fn lock(&self) -> *mut pg_sys::LWLock {
        self.dir_lock.load(Ordering::Acquire)
    }

    /// Wake the worker.
    pub fn ring(&self) {
        self.doorbell.fetch_add(1, Ordering::AcqRel);
        let latch = self.worker_latch.load(Ordering::Acquire);
        if !latch.is_null() {
            unsafe { pg_sys::SetLatch(latch) };
        }
    }

    pub fn broadcast(&self) {
        unsafe { pg_sys::ConditionVariableBroadcast(self.cv()) };
    }

    pub fn worker_status(&self) -> WorkerStatus {
        match self.worker_status.load(Ordering::Acquire) {
            1 => WorkerStatus::Running,
            2 => WorkerStatus::Stopped,
            _ => WorkerStatus::NotStarted,
        }
    }
}

/// Run `f` with the directory lock held in `mode`.
pub fn with_dir_lock<R>(h: &Header, exclusive: bool, f: impl FnOnce() -> R) -> R {
    with_lock(h.lock(), exclusive, f)
}

fn with_lock<R>(lock: *mut pg_sys::LWLock, exclusive: bool, f: impl FnOnce() -> R) -> R {
    let mode = if exclusive { pg_sys::LWLockMode::LW_EXCLUSIVE } else { pg_sys::LWLockMode::LW_SHARED };
    unsafe { pg_sys::LWLockAcquire(lock, mode) };
    // LWLocks are released by PostgreSQL's error cleanup if `f` raises an ERROR.
    let r = f();
    unsafe { pg_sys::LWLockRelease(lock) };
    r
}

static mut PREV_SHMEM_STARTUP_HOOK: pg_sys::shmem_startup_hook_type = None;
static mut PREV_SHMEM_REQUEST_HOOK: pg_sys::shmem_request_hook_type = None;

/// Called from `_PG_init` while preloading.
pub fn install_hooks() {
    unsafe {
        // PostgreSQL 15 and later: shared memory is requested from shmem_request_hook
        PREV_SHMEM_REQUEST_HOOK = pg_sys::shmem_request_hook;
        pg_sys::shmem_request_hook = Some(shmem_request);
        PREV_SHMEM_STARTUP_HOOK = pg_sys::shmem_startup_hook;
        pg_sys::shmem_startup_hook = Some(shmem_startup);
    }
}

unsafe fn request() {
    unsafe {
        let dbs = guc::MAX_DATABASES.get();
        pg_sys::RequestAddinShmemSpace(total_size(dbs as usize, guc::MAX_TAGS.get() as usize));
        // lock 0 guards the areas, lock 1 + i is area i's directory lock
        pg_sys::RequestNamedLWLockTranche(TRANCHE_NAME.as_ptr(), 1 + dbs);
    }
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn shmem_request() {
    unsafe {
        if let Some(prev) = PREV_SHMEM_REQUEST_HOOK {
            prev();
        }
        request();
    }
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn shmem_startup() {
    unsafe {
        if let Some(prev) = PREV_SHMEM_STARTUP_HOOK {
            prev();
        }
        let max_tags = guc::MAX_TAGS.get() as usize;
        let max_databases = guc::MAX_DATABASES.get() as usize;
        let size = total_size(max_databases, max_tags);
        pg_sys::LWLockAcquire(addin_shmem_init_lock(), pg_sys::LWLockMode::LW_EXCLUSIVE);
        let mut found = false;
        let raw = pg_sys::ShmemInitStruct(SHMEM_NAME.as_ptr(), size, &mut found) as *mut u8;
        let aligned = raw.add(raw.align_offset(ALIGN)) as *mut Server;
        if !found {
            std::ptr::write_bytes(raw, 0, size);
            // All-zero bytes are a valid initial state for every atomic; the rest is set here.
            let s = &mut *aligned;
            s.max_databases = max_databases as u32;
            s.max_tags = max_tags as u32;
            let tranche = pg_sys::GetNamedLWLockTranche(TRANCHE_NAME.as_ptr());
            s.server_lock.store(&raw mut (*tranche).lock, Ordering::Release);
            for i in 0..max_databases {
                let h = &mut *area_ptr(aligned, max_tags, i);
                h.index = i as u32;
                h.max_tags = max_tags as u32;
                h.index_len = index_len(max_tags) as u32;
                h.asked_len = asked_len(max_tags) as u32;
                pg_sys::ConditionVariableInit(h.cv.get());
                h.dir_lock.store(&raw mut (*tranche.add(1 + i)).lock, Ordering::Release);
                h.snowflake.reset();
                h.uuid.reset();
                h.snowflake53.reset();
                for slot in all_slots(h) {
                    slot.seg.reset();
                    slot.ord.reset();
                }
            }
        }
        SHARED.store(aligned, Ordering::Release);
        pg_sys::LWLockRelease(addin_shmem_init_lock());
    }
}

/// Milliseconds since the Unix epoch, from the system clock (CLOCK_REALTIME: the clock an
/// administrator, NTP or libfaketime can move backwards).
#[inline]
pub fn now_ms() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a valid pointer; cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

/// Like [`now_ms`], from the coarse clock: a few nanoseconds instead of tens, precise to one
/// kernel tick (typically 1 to 4 ms). Good enough to tell periods of a minute or longer.
#[inline]
pub fn coarse_now_ms() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a valid pointer; cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

/// PostgreSQL's `AddinShmemInitLock` (a macro in C: `&MainLWLockArray[21].lock`).
unsafe fn addin_shmem_init_lock() -> *mut pg_sys::LWLock {
    unsafe { &raw mut (*pg_sys::MainLWLockArray.add(21)).lock }
}
