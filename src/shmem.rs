//! The shared-memory layout, in one place.
//!
//! ```text
//! Shared (one per server, sized at start-up from seqgen.max_tags)
//! ├── Header
//! │   ├── worker: pid, latch, status, database it serves, catalog oid
//! │   ├── dir_lock: LWLock guarding the tag directory (slot names and states)
//! │   ├── cv: ConditionVariable the worker broadcasts after every batch of work
//! │   ├── mailboxes[MAILBOXES]: synchronous requests (load a tag, reserve a batch range)
//! │   └── snowflake: the generator word, the reservation, clock-event counters
//! └── slots[max_tags]: TagSlot
//!     ├── seg: SegmentBuffer (cursor on its own cache line, ring of published segments)
//!     ├── gen: generation, bumped whenever the slot stops serving its tag
//!     ├── name, state (directory; written under dir_lock)
//!     └── worker bookkeeping: prefetch request flag, adaptive step, errors, rates
//! ```
//!
//! Backends only read the directory (under `dir_lock` shared, on a cache miss) and draw from
//! `seg` without any lock. The worker is the only writer of directory entries and of `seg`,
//! except that a backend committing the deletion of a tag retires its slot (under `dir_lock`
//! exclusive).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use pgrx::pg_sys;
use seqgen_core::segment::SegmentBuffer;

use crate::snowflake::SnowflakeShared;

use crate::guc;

/// Longest tag name in bytes (PostgreSQL's identifier limit).
pub const NAME_MAX: usize = 63;
/// Synchronous request slots; a backend that finds none free waits for one.
pub const MAILBOXES: usize = 64;

const SHMEM_NAME: &std::ffi::CStr = c"pg_seqgen";
const TRANCHE_NAME: &std::ffi::CStr = c"pg_seqgen";

/// What the worker is doing, for error messages and `seqgen_worker_status()`.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerStatus {
    NotStarted = 0,
    Running = 1,
    Stopped = 2,
}

#[repr(C)]
pub struct Header {
    pub max_tags: u32,
    pub worker_pid: AtomicI32,
    pub worker_latch: AtomicPtr<pg_sys::Latch>,
    pub worker_status: AtomicU32,
    pub served_db: AtomicU32,
    /// Has the worker found the catalog in its database (is the extension created there)?
    pub catalog_oid: AtomicU32,
    /// High-water mark of assigned slots: slots at or above it have never been used.
    pub slots_used: AtomicU32,
    pub dir_lock: AtomicPtr<pg_sys::LWLock>,
    cv: UnsafeCell<pg_sys::ConditionVariable>,
    /// Bumped by every request so the worker knows there is work without scanning.
    pub doorbell: AtomicU64,
    pub mailboxes: [Mailbox; MAILBOXES],
    pub snowflake: SnowflakeShared,
}

/// Slot states.
pub const SLOT_FREE: u32 = 0;
pub const SLOT_ACTIVE: u32 = 1;

/// Prefetch-request flag values in `TagSlot::want`.
pub const WANT_SEGMENT: u32 = 1;

#[repr(C, align(64))]
pub struct TagSlot {
    pub seg: SegmentBuffer,
    pub gen: AtomicU64,
    pub state: AtomicU32,
    name_len: AtomicU32,
    name: UnsafeCell<[u8; NAME_MAX + 1]>,
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
    /// ids_per_sec as f64 bits, and the sample it was computed from.
    pub rate_bits: AtomicU64,
    pub rate_total: AtomicU64,
    pub rate_ms: AtomicI64,
}

impl TagSlot {
    /// The tag name. Caller holds `dir_lock` (either mode) or is the worker.
    pub fn name(&self) -> &[u8] {
        let len = self.name_len.load(Ordering::Relaxed) as usize;
        // SAFETY: written only under dir_lock exclusive while the slot is FREE.
        unsafe { &(&*self.name.get())[..len.min(NAME_MAX)] }
    }

    /// Caller holds `dir_lock` exclusive and the slot is FREE.
    pub fn set_name(&self, name: &[u8]) {
        let len = name.len().min(NAME_MAX);
        unsafe {
            let buf = &mut *self.name.get();
            buf[..len].copy_from_slice(&name[..len]);
        }
        self.name_len.store(len as u32, Ordering::Relaxed);
    }
}

/// Mailbox states.
pub const MB_FREE: u32 = 0;
pub const MB_FILLING: u32 = 1;
pub const MB_POSTED: u32 = 2;
pub const MB_DONE: u32 = 3;
pub const MB_ABANDONED: u32 = 4;

/// Mailbox request kinds.
pub const REQ_LOAD: u32 = 1;
pub const REQ_RANGE: u32 = 2;

/// One synchronous request from a backend to the worker.
#[repr(C)]
pub struct Mailbox {
    pub state: AtomicU32,
    pub kind: AtomicU32,
    pub slot: AtomicU32,
    pub gen: AtomicU64,
    pub n: AtomicI64,
    name_len: AtomicU32,
    name: UnsafeCell<[u8; NAME_MAX + 1]>,
    // results
    pub result: AtomicU32,
    pub r_start: AtomicI64,
    pub r_len: AtomicI64,
    detail_len: AtomicU32,
    detail: UnsafeCell<[u8; 256]>,
}

impl Mailbox {
    /// Owner only, while FILLING.
    pub fn set_name(&self, name: &[u8]) {
        let len = name.len().min(NAME_MAX);
        unsafe { (&mut *self.name.get())[..len].copy_from_slice(&name[..len]) };
        self.name_len.store(len as u32, Ordering::Relaxed);
    }

    /// Worker only, while POSTED.
    pub fn name(&self) -> Vec<u8> {
        let len = self.name_len.load(Ordering::Relaxed) as usize;
        unsafe { (&*self.name.get())[..len.min(NAME_MAX)].to_vec() }
    }

    /// Worker only, while POSTED.
    pub fn set_detail(&self, text: &str) {
        let bytes = text.as_bytes();
        let mut len = bytes.len().min(255);
        while !text.is_char_boundary(len) {
            len -= 1;
        }
        unsafe { (&mut *self.detail.get())[..len].copy_from_slice(&bytes[..len]) };
        self.detail_len.store(len as u32, Ordering::Relaxed);
    }

    /// Owner only, once DONE.
    pub fn detail(&self) -> String {
        let len = self.detail_len.load(Ordering::Relaxed) as usize;
        let bytes = unsafe { &(&*self.detail.get())[..len.min(255)] };
        String::from_utf8_lossy(bytes).into_owned()
    }
}

// SAFETY: every field is an atomic or is written under the protocol documented above.
unsafe impl Sync for Header {}
unsafe impl Sync for TagSlot {}
unsafe impl Sync for Mailbox {}
impl std::panic::RefUnwindSafe for Header {}
impl std::panic::RefUnwindSafe for TagSlot {}
impl std::panic::RefUnwindSafe for Mailbox {}

static SHARED: AtomicPtr<Header> = AtomicPtr::new(std::ptr::null_mut());

fn slots_offset() -> usize {
    std::mem::size_of::<Header>().next_multiple_of(std::mem::align_of::<TagSlot>())
}

fn total_size(max_tags: usize) -> usize {
    // + alignment slack: ShmemInitStruct only promises MAXALIGN.
    slots_offset() + max_tags * std::mem::size_of::<TagSlot>() + std::mem::align_of::<TagSlot>()
}

/// The shared header, or `None` when the library was not preloaded.
#[inline]
pub fn header() -> Option<&'static Header> {
    let p = SHARED.load(Ordering::Acquire);
    // SAFETY: set once in the shmem startup hook to memory that lives as long as the server.
    unsafe { p.as_ref() }
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
    let mode = if exclusive {
        pg_sys::LWLockMode::LW_EXCLUSIVE
    } else {
        pg_sys::LWLockMode::LW_SHARED
    };
    unsafe { pg_sys::LWLockAcquire(h.lock(), mode) };
    // LWLocks are released by PostgreSQL's error cleanup if `f` raises an ERROR.
    let r = f();
    unsafe { pg_sys::LWLockRelease(h.lock()) };
    r
}

static mut PREV_SHMEM_STARTUP_HOOK: pg_sys::shmem_startup_hook_type = None;
#[cfg(not(any(feature = "pg13", feature = "pg14")))]
static mut PREV_SHMEM_REQUEST_HOOK: pg_sys::shmem_request_hook_type = None;

/// Called from `_PG_init` while preloading.
pub fn install_hooks() {
    unsafe {
        #[cfg(any(feature = "pg13", feature = "pg14"))]
        request();
        #[cfg(not(any(feature = "pg13", feature = "pg14")))]
        {
            PREV_SHMEM_REQUEST_HOOK = pg_sys::shmem_request_hook;
            pg_sys::shmem_request_hook = Some(shmem_request);
        }
        PREV_SHMEM_STARTUP_HOOK = pg_sys::shmem_startup_hook;
        pg_sys::shmem_startup_hook = Some(shmem_startup);
    }
}

unsafe fn request() {
    unsafe {
        pg_sys::RequestAddinShmemSpace(total_size(guc::MAX_TAGS.get() as usize));
        pg_sys::RequestNamedLWLockTranche(TRANCHE_NAME.as_ptr(), 1);
    }
}

#[cfg(not(any(feature = "pg13", feature = "pg14")))]
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
        let size = total_size(max_tags);
        pg_sys::LWLockAcquire(addin_shmem_init_lock(), pg_sys::LWLockMode::LW_EXCLUSIVE);
        let mut found = false;
        let raw = pg_sys::ShmemInitStruct(SHMEM_NAME.as_ptr(), size, &mut found) as *mut u8;
        let aligned = raw.add(raw.align_offset(std::mem::align_of::<TagSlot>())) as *mut Header;
        if !found {
            std::ptr::write_bytes(raw, 0, size);
            // All-zero bytes are a valid initial state for every atomic; the rest is set here.
            let h = &mut *aligned;
            h.max_tags = max_tags as u32;
            pg_sys::ConditionVariableInit(h.cv.get());
            let tranche = pg_sys::GetNamedLWLockTranche(TRANCHE_NAME.as_ptr());
            h.dir_lock.store(&raw mut (*tranche).lock, Ordering::Release);
            for slot in all_slots(h) {
                slot.seg.reset();
            }
        }
        SHARED.store(aligned, Ordering::Release);
        pg_sys::LWLockRelease(addin_shmem_init_lock());
    }
}

/// Milliseconds since the Unix epoch, from the system clock.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// PostgreSQL's `AddinShmemInitLock` (a macro in C: `&MainLWLockArray[21].lock`).
unsafe fn addin_shmem_init_lock() -> *mut pg_sys::LWLock {
    unsafe { &raw mut (*pg_sys::MainLWLockArray.add(21)).lock }
}
