//! The tag index of an area (slot names hashed to slots: linear probing, backward-shift
//! deletion) and the slots' requests to the allocator.

use super::*;

/// The tag index: slot index + 1 of every active slot, at the position its name hashes to
/// (linear probing; 0 is empty). Read under `dir_lock` (either mode), written under
/// `dir_lock` exclusive.
pub(super) fn index(h: &'static Header) -> &'static [AtomicU32] {
    unsafe {
        let base = (h as *const Header as *const u8).add(index_offset(h.max_tags as usize)) as *const AtomicU32;
        std::slice::from_raw_parts(base, h.index_len as usize)
    }
}

fn asked(h: &'static Header) -> &'static [AtomicU64] {
    unsafe {
        let base = (h as *const Header as *const u8).add(asked_offset(h.max_tags as usize)) as *const AtomicU64;
        std::slice::from_raw_parts(base, h.asked_len as usize)
    }
}

/// Mark slot `s` as having asked the allocator for something (its flag is set by the caller),
/// and wake the allocator.
pub fn ask(h: &'static Header, s: &TagSlot) {
    let idx = (s as *const TagSlot as usize - all_slots(h).as_ptr() as usize) / std::mem::size_of::<TagSlot>();
    if let Some(word) = asked(h).get(idx / 64) {
        word.fetch_or(1 << (idx % 64), Ordering::AcqRel);
    }
    h.ring();
}

/// The slots that asked since the last call (allocator only).
pub fn take_asked(h: &'static Header) -> Vec<usize> {
    let mut out = vec![];
    for (w, word) in asked(h).iter().enumerate() {
        if word.load(Ordering::Relaxed) == 0 {
            continue;
        }
        let mut bits = word.swap(0, Ordering::AcqRel);
        while bits != 0 {
            out.push(w * 64 + bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
    }
    out
}

/// Where a tag name starts probing (the same in every process: FxHash has no random seed).
fn home(h: &Header, name: &[u8]) -> usize {
    use std::hash::Hasher;
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write(name);
    hasher.finish() as usize & (h.index_len as usize - 1)
}

/// The active slot of `name` (its index). Caller holds `dir_lock` (either mode).
pub fn find_slot(h: &'static Header, name: &[u8]) -> Option<usize> {
    let (index, slots) = (index(h), all_slots(h));
    let mask = index.len() - 1;
    let mut i = home(h, name);
    // at most half full, so an empty entry ends every probe; the bound is for robustness
    for _ in 0..index.len() {
        match index[i].load(Ordering::Relaxed) {
            0 => return None,
            e => {
                let s = &slots[e as usize - 1];
                if s.state.load(Ordering::Acquire) == SLOT_ACTIVE && s.name() == name {
                    return Some(e as usize - 1);
                }
            }
        }
        i = (i + 1) & mask;
    }
    None
}

/// Enter slot `idx` (active, named) in the index. Caller holds `dir_lock` exclusive.
pub fn index_insert(h: &'static Header, idx: usize) {
    let index = index(h);
    let mask = index.len() - 1;
    let mut i = home(h, all_slots(h)[idx].name());
    for _ in 0..index.len() {
        if index[i].load(Ordering::Relaxed) == 0 {
            index[i].store(idx as u32 + 1, Ordering::Relaxed);
            return;
        }
        i = (i + 1) & mask;
    }
}

/// Take slot `idx` out of the index (backward-shift deletion: no tombstones, so lookups stay
/// short however often tags come and go). Caller holds `dir_lock` exclusive.
pub(super) fn index_remove(h: &'static Header, idx: usize) {
    let (index, slots) = (index(h), all_slots(h));
    let mask = index.len() - 1;
    let Some(mut hole) = (0..index.len()).map(|k| (home(h, slots[idx].name()) + k) & mask).find(|&i| {
        let e = index[i].load(Ordering::Relaxed);
        e == idx as u32 + 1 || e == 0
    }) else {
        return;
    };
    if index[hole].load(Ordering::Relaxed) != idx as u32 + 1 {
        return; // not entered
    }
    let mut i = hole;
    loop {
        i = (i + 1) & mask;
        let e = index[i].load(Ordering::Relaxed);
        if e == 0 {
            break;
        }
        // an entry may move back into the hole if its home is not between the hole and it
        let h_i = home(h, slots[e as usize - 1].name());
        let between = if hole <= i { hole < h_i && h_i <= i } else { hole < h_i || h_i <= i };
        if !between {
            index[hole].store(e, Ordering::Relaxed);
            hole = i;
        }
    }
    index[hole].store(0, Ordering::Relaxed);
}
