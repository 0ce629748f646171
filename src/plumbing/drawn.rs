//! What `seqgen_next` returned to this session, for `seqgen_currval` and `seqgen_lastval` (as
//! PostgreSQL keeps `currval` and `lastval` for sequences). Kept beside the cache
//! entries (`cache.rs`), by entry index: the draw's fast path already found the entry, so
//! remembering the value is a store, with no lookup and no copy of the name. A value whose
//! entry goes (the tag's slot moved on, the cache emptied) is kept by name instead; a key's is
//! not (keys are many: `seqgen_currval` names a tag, and only the latest draw of all is kept
//! for `seqgen_lastval`). `DISCARD SEQUENCES` and `DISCARD ALL` forget them all.

use std::collections::HashMap;

use crate::plumbing::shmem::KEY_SEP;

/// No entry: `recent` after a call whose draw did not come from the fast path, `latest_at`
/// when the latest draw's entry went.
pub const NONE: u32 = u32::MAX;

pub struct Values {
    /// The value last drawn from each cache entry, by its index (`None`: none since the entry
    /// was made). As long as the cache's entries.
    at: Vec<Option<i64>>,
    /// The latest value of each tag whose entry went.
    spilled: HashMap<Box<[u8]>, i64, rustc_hash::FxBuildHasher>,
    /// The latest draw of all: its value, and its entry, or (`latest_at` = [`NONE`]) its slot
    /// name.
    latest: Option<i64>,
    latest_at: u32,
    latest_name: Vec<u8>,
    /// The entry the current call's draw came from: set by the fast path of a draw, taken by
    /// [`record`](crate::plumbing::cache::record).
    pub recent: u32,
}

impl Default for Values {
    fn default() -> Values {
        Values {
            at: vec![],
            spilled: HashMap::default(),
            latest: None,
            latest_at: NONE,
            latest_name: vec![],
            recent: NONE,
        }
    }
}

/// Where the latest draw's value is: an entry of the cache, or a slot name.
pub enum Latest<'a> {
    At(usize),
    Name(&'a [u8]),
}

impl Values {
    /// Entry `at` was made (pushed, or a free index taken again): nothing drawn from it yet.
    pub fn made(&mut self, at: usize) {
        if at == self.at.len() {
            self.at.push(None);
        } else if let Some(v) = self.at.get_mut(at) {
            *v = None;
        }
    }

    /// Entry `at`, of slot `name`, goes: its value is kept by name.
    #[cold]
    pub fn spill(&mut self, at: usize, name: &[u8]) {
        if let Some(v) = self.at.get_mut(at).and_then(Option::take) {
            if !name.contains(&KEY_SEP) {
                self.spilled.insert(name.into(), v);
            }
        }
        if self.latest_at == at as u32 {
            self.latest_at = NONE;
            self.latest_name.clear();
            self.latest_name.extend_from_slice(name);
        }
    }

    /// Every entry went (their values were spilled).
    pub fn cleared(&mut self) {
        self.at.clear();
    }

    /// The draw of the current call came from entry `at`.
    #[inline]
    pub fn record_at(&mut self, at: u32, value: i64) -> bool {
        match self.at.get_mut(at as usize) {
            Some(v) => {
                *v = Some(value);
                self.latest = Some(value);
                self.latest_at = at;
                true
            }
            None => false,
        }
    }

    /// The draw of the current call, of a key, came from entry `at`: only `seqgen_lastval`
    /// keeps it (keys have no `seqgen_currval`), so the entry's own value is not written (a
    /// store per draw into memory as large as the cache).
    #[inline]
    pub fn record_latest_at(&mut self, at: u32, value: i64) -> bool {
        if (at as usize) < self.at.len() {
            self.latest = Some(value);
            self.latest_at = at;
            true
        } else {
            false
        }
    }

    /// A draw of slot `name`, which has no entry.
    #[cold]
    pub fn record_name(&mut self, name: &[u8], value: i64) {
        if !name.contains(&KEY_SEP) {
            self.spilled.insert(name.into(), value);
        }
        self.latest = Some(value);
        self.latest_at = NONE;
        self.latest_name.clear();
        self.latest_name.extend_from_slice(name);
    }

    pub fn value_at(&self, at: usize) -> Option<i64> {
        self.at.get(at).copied().flatten()
    }

    pub fn spilled(&self, name: &[u8]) -> Option<i64> {
        self.spilled.get(name).copied()
    }

    pub fn latest(&self) -> Option<(i64, Latest<'_>)> {
        let where_ =
            if self.latest_at == NONE { Latest::Name(&self.latest_name) } else { Latest::At(self.latest_at as usize) };
        Some((self.latest?, where_))
    }

    /// Forget every value (`DISCARD`).
    pub fn discard(&mut self) {
        self.at.iter_mut().for_each(|v| *v = None);
        self.spilled.clear();
        self.latest = None;
        self.latest_at = NONE;
        self.latest_name.clear();
    }
}
