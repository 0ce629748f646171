//! A tag's template and time zone in its slot (`TagSlot::tpl`), as the allocator read them
//! from the catalog: written under the directory lock, read by backends without one (a
//! seqlock).

use super::*;

/// Template cell states.
pub const TPL_UNKNOWN: u32 = 0;
pub const TPL_READY: u32 = 1;
pub const TPL_MISSING: u32 = 2;

/// Longest template text in bytes, and longest time-zone name.
pub const TPL_MAX_BYTES: usize = 800;
pub const TZ_MAX_BYTES: usize = 64;

/// A tag's template and time zone as the worker read them from the catalog. Writers hold
/// `dir_lock` exclusive (the worker filling it, a backend whose template change commits);
/// backends read it without a lock, with a seqlock on `version` (odd while being written).
#[repr(C)]
pub struct TemplateCell {
    pub state: AtomicU32,
    pub version: AtomicU64,
    len: AtomicU32,
    tz_len: AtomicU32,
    text: [AtomicU8; TPL_MAX_BYTES],
    tz: [AtomicU8; TZ_MAX_BYTES],
}

impl TemplateCell {
    /// Caller holds `dir_lock` exclusive.
    pub fn write(&self, text: &str, tz: &str) {
        let v = self.version.load(Ordering::Relaxed);
        self.version.store(v | 1, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        let (t, z) = (&text.as_bytes()[..text.len().min(TPL_MAX_BYTES)], &tz.as_bytes()[..tz.len().min(TZ_MAX_BYTES)]);
        for (cell, b) in self.text.iter().zip(t) {
            cell.store(*b, Ordering::Relaxed);
        }
        for (cell, b) in self.tz.iter().zip(z) {
            cell.store(*b, Ordering::Relaxed);
        }
        self.len.store(t.len() as u32, Ordering::Relaxed);
        self.tz_len.store(z.len() as u32, Ordering::Relaxed);
        self.state.store(TPL_READY, Ordering::Relaxed);
        self.version.store((v | 1) + 1, Ordering::Release);
    }

    /// The tag has no template (`TPL_MISSING`), or it must be read again (`TPL_UNKNOWN`).
    /// Caller holds `dir_lock` exclusive.
    pub fn set_state(&self, state: u32) {
        let v = self.version.load(Ordering::Relaxed);
        self.version.store(v | 1, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        self.state.store(state, Ordering::Relaxed);
        self.version.store((v | 1) + 1, Ordering::Release);
    }

    /// A consistent copy: (version, state, template, time zone).
    pub fn read(&self) -> (u64, u32, String, String) {
        loop {
            let v = self.version.load(Ordering::Acquire);
            if v & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let state = self.state.load(Ordering::Relaxed);
            let len = (self.len.load(Ordering::Relaxed) as usize).min(TPL_MAX_BYTES);
            let tz_len = (self.tz_len.load(Ordering::Relaxed) as usize).min(TZ_MAX_BYTES);
            let text: Vec<u8> = self.text[..len].iter().map(|b| b.load(Ordering::Relaxed)).collect();
            let tz: Vec<u8> = self.tz[..tz_len].iter().map(|b| b.load(Ordering::Relaxed)).collect();
            std::sync::atomic::fence(Ordering::Acquire);
            if self.version.load(Ordering::Relaxed) == v {
                let s = |b: Vec<u8>| String::from_utf8(b).unwrap_or_default();
                return (v, state, s(text), s(tz));
            }
        }
    }
}
