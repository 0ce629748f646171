//! The mailboxes: synchronous requests from a backend to the allocator (load a tag, reserve a
//! range, read a template), each owned by one process at a time.

use super::*;

/// Mailbox states (the low byte of `Mailbox::word`).
pub const MB_FREE: u32 = 0;
pub const MB_FILLING: u32 = 1;
pub const MB_POSTED: u32 = 2;
pub const MB_DONE: u32 = 3;
pub const MB_ABANDONED: u32 = 4;

/// Mailbox request kinds.
pub const REQ_LOAD: u32 = 1;
pub const REQ_RANGE: u32 = 2;
pub const REQ_TEMPLATE: u32 = 3;

/// One synchronous request from a backend to the worker.
///
/// `word` is `sequence << 8 | state`. The sequence grows every time the mailbox is freed, so
/// an answer or a reclaim meant for one use of the mailbox can never land on the next one:
/// every transition is a compare-and-swap on the whole word.
///
/// * owner: FREE -> FILLING (claim) -> POSTED (post), then reads the answer and frees it
///   (DONE -> FREE), or gives up (POSTED -> ABANDONED; DONE or FILLING -> FREE).
/// * worker: POSTED -> DONE (answer); ABANDONED -> FREE (reclaim); any state but FREE whose
///   owner process is gone -> FREE (reclaim).
/// * a backend that exits (even by FATAL, e.g. `pg_terminate_backend` while it waits) gives
///   up its mailbox in a `before_shmem_exit` callback.
#[repr(C)]
pub struct Mailbox {
    pub word: AtomicU64,
    /// The pid of the process that claimed the mailbox.
    pub owner: AtomicI32,
    /// The area's epoch when the request was posted: a request posted to an area that was
    /// released (and maybe claimed for another database) since is answered STALE.
    pub epoch: AtomicU64,
    pub kind: AtomicU32,
    /// For requests about a resolved tag: its slot and the slot's generation.
    pub slot: AtomicU32,
    pub gen: AtomicU64,
    /// RANGE: how many values; LOAD: the role whose first draw of a keyed counter asked for
    /// it (its OID; 0: a load only).
    pub n: AtomicI64,
    name_len: AtomicU32,
    name: UnsafeCell<[u8; SLOT_NAME_MAX + 1]>,
    // results
    pub result: AtomicU32,
    pub r_start: AtomicI64,
    pub r_len: AtomicI64,
    /// The segment mode of the range (see `catalog::mode`).
    pub r_mode: AtomicI64,
    detail_len: AtomicU32,
    detail: UnsafeCell<[u8; 256]>,
}

#[inline]
pub fn mb_word(seq: u64, state: u32) -> u64 {
    seq << 8 | state as u64
}

#[inline]
pub fn mb_unpack(word: u64) -> (u64, u32) {
    (word >> 8, (word & 0xff) as u32)
}

impl Mailbox {
    /// (sequence, state).
    pub fn load(&self) -> (u64, u32) {
        mb_unpack(self.word.load(Ordering::Acquire))
    }

    /// Move from `(seq, from)` to `(seq, to)`; false if the mailbox is not in that state.
    pub fn transition(&self, seq: u64, from: u32, to: u32) -> bool {
        self.word.compare_exchange(mb_word(seq, from), mb_word(seq, to), Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// Free the mailbox if it is still in use number `seq` in state `from`.
    pub fn free(&self, seq: u64, from: u32) -> bool {
        let owner = self.owner.load(Ordering::Acquire);
        let ok = self
            .word
            .compare_exchange(mb_word(seq, from), mb_word(seq + 1, MB_FREE), Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if ok {
            // only if no new owner claimed it meanwhile
            let _ = self.owner.compare_exchange(owner, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
        ok
    }

    /// Owner only, while FILLING.
    pub fn set_name(&self, name: &[u8]) {
        let len = name.len().min(SLOT_NAME_MAX);
        unsafe { (&mut *self.name.get())[..len].copy_from_slice(&name[..len]) };
        self.name_len.store(len as u32, Ordering::Relaxed);
    }

    /// Worker only, while POSTED.
    pub fn name(&self) -> Vec<u8> {
        let len = self.name_len.load(Ordering::Relaxed) as usize;
        unsafe { (&*self.name.get())[..len.min(SLOT_NAME_MAX)].to_vec() }
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
