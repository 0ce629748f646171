//! Backend side of the tag directory: resolving a tag to its shared-memory slot, asking the
//! worker to load tags and reserve ranges, and retiring the slot of a deleted tag.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use pgrx::pg_sys;
use pgrx::prelude::*;

use hashbrown::HashTable;
use seqgen_core::segment::Hint;

use crate::plumbing::acl::Stamp;
use crate::plumbing::drawn::{Latest, Values, NONE};
use crate::plumbing::error::{check_name, Result, SeqgenError};
use crate::plumbing::guc;
use crate::plumbing::local::BackendLocal;
use crate::plumbing::shmem::{self, Header, Mailbox, TagSlot};
use crate::plumbing::stats::Lost;
use crate::plumbing::wait::{call_deadline, wait_for, wait_quietly_until};
use seqgen_core::adaptive::BlockClock;

/// Result codes the worker writes into a mailbox or a slot's `err_code`.
pub mod code {
    pub const OK: u32 = 0;
    pub const UNKNOWN_TAG: u32 = 1;
    pub const EXHAUSTED: u32 = 2;
    // 3 was "too many tags" (0.3.0): shared memory is a cache now, and a full one evicts
    pub const LOCKED: u32 = 4;
    pub const CATALOG_MISSING: u32 = 5;
    pub const INTERNAL: u32 = 6;
    pub const NO_TEMPLATE: u32 = 7;
    pub const OVERFLOW: u32 = 8;
    /// The slot the request was about no longer serves the catalog row it was loaded from
    /// (the tag was dropped, or dropped and created again): resolve the tag again.
    pub const STALE: u32 = 9;
    /// The catalog's version is older than the library's: `ALTER EXTENSION pg_seqgen UPDATE`.
    pub const NEEDS_UPDATE: u32 = 10;
    /// The tag is gapless (`generators::gapless`).
    pub const GAPLESS: u32 = 11;
    /// A keyed counter of an opaque tag.
    pub const KEYED_OPAQUE: u32 = 12;
    /// A new key, and the tag's owner has `seqgen.max_keys_per_role` keys.
    pub const KEY_LIMIT: u32 = 13;
}

/// A resolved tag: its slot and the generation the slot had when resolved. A draw is valid
/// only if the slot still has this generation after the draw.
#[derive(Clone, Copy)]
pub struct Resolved {
    pub slot: &'static TagSlot,
    pub gen: u64,
}

/// A tag this backend resolved, and whether the current user may draw from it (`acl`: the
/// stamp under which drawing was allowed; see `acl.rs`). (A map entry keeps `acl` in its
/// [`Mapped`] half and the rest in its [`Cold`] half.)
#[derive(Clone, Copy)]
struct Entry {
    acl: Stamp,
    r: Resolved,
    /// The segment this backend last drew from (see `SegmentBuffer::draw_hinted`); it belongs
    /// to the slot's generation in `r`, like everything else here.
    hint: Hint,
}

/// What a draw from a map entry's block reads, 16 bytes. The block: values of a tag this
/// backend claimed from the shared segment at once, to hand out itself (see
/// `seqgen_core::adaptive::BlockPolicy`), `left` values from `next` on, claimed at tick
/// `claimed` of the cache's [`BlockClock`]. Two stamps of the cache's own (0: none), each
/// standing for a 64-bit one while it is current: `blk_gen` the area's `retire_epoch` when the
/// block's slot was last found serving the tag (see [`Cache::blk_gen`]), `acl_gen` the
/// privilege stamp under which the entry's [`Cold::acl`] was last found current (see
/// [`Cache::acl_gen`]).
#[derive(Clone, Copy, Default)]
#[repr(C)]
pub struct Hot {
    next: i64,
    left: u16,
    blk_gen: u16,
    claimed: u16,
    acl_gen: u16,
}

impl Hot {
    /// The block's values are a gap now (counted in `seqgen_stats()`); it is empty after.
    #[cold]
    fn lose(&mut self, area: Option<&'static Header>) {
        if self.left > 0 {
            if let Some(h) = area {
                h.stats.lose(Lost::Session, self.left as u64);
            }
            self.left = 0;
        }
    }

    /// The next value of the block (`left` > 0). `next + 1` is computed only when a value is
    /// left after it, so a block ending at `i64::MAX` never overflows.
    #[inline]
    fn take(&mut self) -> i64 {
        let v = self.next;
        self.left -= 1;
        if self.left > 0 {
            self.next = v + 1;
        }
        v
    }
}

/// What a draw from a map entry needs to claim a block (see [`with_cached`]).
pub struct Refill<'a> {
    hot: &'a mut Hot,
    size: &'a mut u16,
    last_us: &'a mut i64,
    off: &'a mut bool,
    now_us: i64,
    tick: u16,
}

impl Refill<'_> {
    /// How many values to claim now (1: draw as usual), by the policy and
    /// `seqgen.backend_block`; remembered for the next claim.
    #[inline]
    pub fn size(&mut self) -> u32 {
        if *self.off {
            return 1;
        }
        let policy = seqgen_core::adaptive::BlockPolicy { max: guc::BACKEND_BLOCK.get().clamp(1, 1024) as u32 };
        let last = (*self.last_us != 0).then_some(*self.last_us);
        let size = policy.size(*self.size as u32, last, self.now_us);
        *self.size = size as u16;
        *self.last_us = self.now_us;
        size
    }

    /// Keep `left` values from `next` on for the following draws.
    #[inline]
    pub fn keep(&mut self, next: i64, left: u64) {
        count_blocks_at_exit();
        self.hot.next = next;
        // (at most `seqgen.backend_block` - 1, 1023)
        self.hot.left = left.min(u16::MAX as u64) as u16;
        self.hot.claimed = self.tick;
    }

    /// No blocks for this entry (its values are not plain).
    pub fn turn_off(&mut self) {
        *self.off = true;
    }
}

/// The part of an entry of [`Cache::map`] a draw from its block reads: half a cache line (the
/// name, inline up to 15 bytes, else in `Cache::names`; the block and the stamps). 32 bytes:
/// 100,000 keys take 3.2 MB, which stays mostly in the CPU's second-level cache (4 MB here;
/// at 64 bytes, 100,000 keys drawn at random cost 2.4 times their floor, 50,000 1.8 times).
/// The rest of the entry is its [`Cold`] part, at the same index.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Mapped {
    name: Short,
    hot: Hot,
}

/// The rest of a map entry: the resolution, the segment hint (read when the block is empty),
/// the privilege stamp, and the block policy's state: the size of the last claim, when it was
/// made (statement start, microseconds; 0: never), and whether blocks are off for this entry
/// (a tag whose values are not plain: opaque, node bits).
#[derive(Clone, Copy)]
struct Cold {
    r: Resolved,
    hint: Hint,
    acl: Stamp,
    last_us: i64,
    size: u16,
    off: bool,
}

impl Cold {
    fn new(e: &Entry) -> Cold {
        Cold { r: e.r, hint: e.hint, acl: e.acl, last_us: 0, size: 0, off: false }
    }
}

const _: () = assert!(std::mem::size_of::<Mapped>() == 32);

/// A tag's name in a map entry: `len`, then the bytes when `len` <= 15, else the offset of
/// the name in `Cache::names` (a length byte, then the bytes) in the first four.
#[derive(Clone, Copy)]
#[repr(C)]
struct Short {
    len: u8,
    bytes: [u8; 15],
}

const SHORT_MAX: usize = 15;

mod unguarded {
    unsafe extern "C" {
        /// PostgreSQL's `GetCurrentStatementStartTimestamp()`: it returns a variable (called
        /// without pgrx's per-call guard, as `acl.rs` does `GetUserId`).
        pub fn GetCurrentStatementStartTimestamp() -> i64;
    }
}

/// When the current statement started (microseconds): the blocks' clock.
#[inline]
fn statement_us() -> i64 {
    // SAFETY: a plain read of backend state
    unsafe { unguarded::GetCurrentStatementStartTimestamp() }
}

/// A slot name held inline (a tag of at most 63 bytes, or a tag and a key): the cache's key
/// compares without a pointer to chase, and remembering the last tag of a call copies a few
/// bytes where a `Box<str>` would allocate.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Name {
    len: u8,
    bytes: [u8; shmem::SLOT_NAME_MAX],
}

impl Name {
    fn new(tag: &str) -> Name {
        let mut bytes = [0u8; shmem::SLOT_NAME_MAX];
        let len = tag.len().min(shmem::SLOT_NAME_MAX);
        bytes[..len].copy_from_slice(&tag.as_bytes()[..len]);
        Name { len: len as u8, bytes }
    }

    #[inline]
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    #[inline]
    fn is(&self, tag: &str) -> bool {
        same_bytes(self.as_bytes(), tag.as_bytes())
    }
}

/// Tags are short: compared 8 bytes at a time (a call to `memcmp` would cost more than the
/// comparison).
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (mut ca, mut cb) = (a.chunks_exact(8), b.chunks_exact(8));
    for (x, y) in (&mut ca).zip(&mut cb) {
        if u64::from_ne_bytes(x.try_into().unwrap_or_default()) != u64::from_ne_bytes(y.try_into().unwrap_or_default())
        {
            return false;
        }
    }
    ca.remainder().iter().zip(cb.remainder()).all(|(x, y)| x == y)
}

/// FxHash of a tag's bytes: short keys, and no need for a random seed in a cache of our own
/// tag names.
#[inline]
fn hash_of(tag: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(tag)
}

#[derive(Default)]
struct Cache {
    /// The last tag resolved, for the common `seqgen_next('same tag')` per row.
    last: Option<(Name, Entry)>,
    /// The index of `last`'s entry in `entries`.
    last_at: u32,
    /// This database's area, which every cached tag belongs to (set with the first entry; a
    /// different area empties the cache): its `acl_epoch` stamps the privilege answers, its
    /// `retire_epoch` the blocks.
    area: Option<&'static Header>,
    /// The area's claim (`Header::epoch`) when it was set: after the extension is dropped and
    /// created again the area serves another claim, whose counters a lost block is not.
    area_epoch: u64,
    /// Every tag resolved: the index of its entry in `entries`. Cleared when it grows past the
    /// shared slots several times over.
    map: HashTable<u32>,
    /// The entries, in the order the tags were first resolved: 4 bytes an index keep the table
    /// in the CPU's second-level cache with 100,000 tags, and tags drawn in a repeating order
    /// read their entries in order (which the CPU prefetches).
    entries: Vec<Mapped>,
    /// The other half of each entry, at the same index.
    colds: Vec<Cold>,
    /// Entries removed (a tag forgotten), reused by the next tags cached.
    free: Vec<u32>,
    /// The names of `map`'s entries.
    names: Vec<u8>,
    /// What `seqgen_next` returned to this session, by entry (`seqgen_currval`).
    drawn: Values,
    /// Where [`Cache::evict_one`] looks next.
    hand: u32,
    /// The privilege stamp that `acl_gen` stands for in the entries' [`Hot::acl_gen`].
    acl_now: Option<Stamp>,
    acl_gen: u16,
    /// The area's `retire_epoch` that `blk_gen` stands for in the entries' [`Hot::blk_gen`].
    retire_seen: u64,
    blk_gen: u16,
    /// The blocks' clock.
    clock: BlockClock,
}

impl Cache {
    #[inline]
    fn name_at(names: &[u8], at: u32) -> &[u8] {
        let at = at as usize;
        let len = names.get(at).copied().unwrap_or(0) as usize;
        names.get(at + 1..at + 1 + len).unwrap_or_default()
    }

    /// The area, while it still serves the claim it had when the cache was made.
    fn live_area(&self) -> Option<&'static Header> {
        self.area.filter(|a| a.epoch.load(Ordering::Acquire) == self.area_epoch)
    }

    /// The name of a map entry.
    #[inline]
    fn name_of<'a>(names: &'a [u8], m: &'a Mapped) -> &'a [u8] {
        let len = m.name.len as usize;
        if len <= SHORT_MAX {
            &m.name.bytes[..len]
        } else {
            let at = u32::from_ne_bytes([m.name.bytes[0], m.name.bytes[1], m.name.bytes[2], m.name.bytes[3]]);
            Cache::name_at(names, at)
        }
    }

    /// The index of `tag`'s entry.
    #[inline]
    fn find_at(&self, tag: &str) -> Option<usize> {
        let (names, entries) = (&self.names, &self.entries);
        let at = *self.map.find(hash_of(tag.as_bytes()), |&i| {
            same_bytes(Cache::name_of(names, &entries[i as usize]), tag.as_bytes())
        })?;
        Some(at as usize)
    }

    /// The cache's 16-bit stamp for the privilege stamp now ([`Stamp::now`]): the same while
    /// that stamp is, a new one when it changes. An entry whose [`Hot::acl_gen`] is this one has
    /// the current stamp in [`Cold::acl`].
    #[inline]
    fn acl_gen(&mut self, area: &Header) -> u16 {
        let now = Stamp::now(area.acl_epoch.load(Ordering::Acquire));
        if self.acl_gen == 0 || self.acl_now != Some(now) {
            self.new_acl_gen(now);
        }
        self.acl_gen
    }

    #[cold]
    #[inline(never)]
    fn new_acl_gen(&mut self, now: Stamp) {
        self.acl_now = Some(now);
        self.acl_gen = self.acl_gen.wrapping_add(1);
        if self.acl_gen == 0 {
            // every value was given: none may still stand in an entry for an older stamp
            self.entries.iter_mut().for_each(|m| m.hot.acl_gen = 0);
            self.acl_gen = 1;
        }
    }

    /// The cache's 16-bit stamp for the area's `retire_epoch` now (loaded here, before a
    /// caller checks a slot's generation or claims: a retirement after this load is seen by the
    /// next draw). An entry whose [`Hot::blk_gen`] is this one had its slot serving the tag
    /// when no slot of the area had been retired since (`retire_epoch` only grows).
    #[inline]
    fn blk_gen(&mut self, area: &Header) -> u16 {
        let retire = area.retire_epoch.load(Ordering::Acquire);
        if self.blk_gen == 0 || retire != self.retire_seen {
            self.new_blk_gen(retire);
        }
        self.blk_gen
    }

    #[cold]
    #[inline(never)]
    fn new_blk_gen(&mut self, retire: u64) {
        self.retire_seen = retire;
        self.blk_gen = self.blk_gen.wrapping_add(1);
        if self.blk_gen == 0 {
            self.entries.iter_mut().for_each(|m| m.hot.blk_gen = 0);
            self.blk_gen = 1;
        }
    }

    /// Statement time `now_us` on the blocks' clock. Past the clock's span, or before its
    /// base (the clock stepped back), every block is dropped (a gap) and the clock starts
    /// again at `now_us`: once every 9 minutes.
    #[inline]
    fn tick(&mut self, now_us: i64) -> u16 {
        match self.clock.tick(now_us) {
            Some(t) => t,
            None => self.restart_clock(now_us),
        }
    }

    #[cold]
    #[inline(never)]
    fn restart_clock(&mut self, now_us: i64) -> u16 {
        let area = self.live_area();
        self.entries.iter_mut().for_each(|m| m.hot.lose(area));
        self.clock = BlockClock { base_us: now_us };
        0
    }

    /// Does entry `at` answer "may the current user draw" without the catalog: its privilege
    /// stamp is current and its slot still serves the tag it resolved (a grant changes the
    /// stamp's epoch, but a drop and a re-creation of the tag do not: they retire the slot).
    fn may_draw_at(&self, at: usize) -> bool {
        let current = self.area.is_some_and(|a| self.colds[at].acl.is_current(&a.acl_epoch));
        let r = self.colds[at].r;
        current && r.slot.gen().load(Ordering::Acquire) == r.gen
    }

    /// `tag`'s entry, as the last tag's is kept.
    fn find_entry(&self, tag: &str) -> Option<Entry> {
        let at = self.find_at(tag)?;
        let c = &self.colds[at];
        Some(Entry { acl: c.acl, r: c.r, hint: c.hint })
    }

    fn remove(&mut self, tag: &[u8]) {
        let (names, entries) = (&self.names, &self.entries);
        let found =
            self.map.find_entry(hash_of(tag), |&i| same_bytes(Cache::name_of(names, &entries[i as usize]), tag));
        if let Ok(o) = found {
            let (at, _) = o.remove();
            // its block, if any, is a gap
            let area = self.live_area();
            self.entries[at as usize].hot.lose(area);
            self.entries[at as usize].hot = Hot::default();
            let name = Cache::name_of(&self.names, &self.entries[at as usize]).to_vec();
            self.drawn.spill(at as usize, &name);
            // a free entry has no name
            self.entries[at as usize].name.len = 0;
            self.free.push(at);
        }
    }

    /// Make room for one more entry: forget the entry under the clock hand (one that is not
    /// free, and not the last tag's), as shared memory evicts a slot for a new tag. A tag
    /// forgotten is resolved again on its next draw (from the slot, with its grants).
    fn evict_one(&mut self) -> bool {
        let n = self.entries.len();
        for _ in 0..n {
            let at = self.hand as usize % n;
            self.hand = (at + 1) as u32;
            if at as u32 == self.last_at || self.entries[at].name.len == 0 {
                continue;
            }
            let name = Cache::name_of(&self.names, &self.entries[at]).to_vec();
            self.remove(&name);
            return true;
        }
        false
    }

    /// Cache `e` for `tag` (a block kept for an earlier resolution becomes a gap); the index of
    /// its entry.
    fn insert(&mut self, tag: &str, e: Entry) -> u32 {
        let cold = Cold::new(&e);
        if let Some(at) = self.find_at(tag) {
            let area = self.live_area();
            let old = &mut self.entries[at];
            old.hot.lose(area);
            *old = Mapped { name: old.name, hot: Hot::default() };
            self.colds[at] = cold;
            return at as u32;
        }
        let mut name = Short { len: tag.len() as u8, bytes: [0; SHORT_MAX] };
        if tag.len() <= SHORT_MAX {
            name.bytes[..tag.len()].copy_from_slice(tag.as_bytes());
        } else {
            let at = self.names.len() as u32;
            name.bytes[..4].copy_from_slice(&at.to_ne_bytes());
            self.names.push(tag.len() as u8);
            self.names.extend_from_slice(tag.as_bytes());
        }
        let m = Mapped { name, hot: Hot::default() };
        let at = match self.free.pop() {
            Some(at) => {
                self.entries[at as usize] = m;
                self.colds[at as usize] = cold;
                at
            }
            None => {
                self.entries.push(m);
                self.colds.push(cold);
                self.entries.len() as u32 - 1
            }
        };
        self.drawn.made(at as usize);
        let (names, entries) = (&self.names, &self.entries);
        self.map.insert_unique(hash_of(tag.as_bytes()), at, |&i| hash_of(Cache::name_of(names, &entries[i as usize])));
        at
    }

    fn clear(&mut self) {
        // the values drawn are kept by name (a freed entry has none)
        for at in 0..self.entries.len() {
            let name = Cache::name_of(&self.names, &self.entries[at]).to_vec();
            self.drawn.spill(at, &name);
            let area = self.live_area();
            self.entries[at].hot.lose(area);
        }
        self.drawn.cleared();
        self.last = None;
        self.map.clear();
        self.entries.clear();
        self.colds.clear();
        self.free.clear();
        self.names.clear();
    }
}

static CACHE: BackendLocal<Cache> = BackendLocal::new();

/// Resolve `tag` to its slot, loading it through the worker on first use, and check that the
/// current user may draw from it. Steady state: a string comparison (or a hash lookup when
/// the tag changes from call to call) and a comparison of the privilege stamp.
#[inline]
pub fn resolve(tag: &str) -> Result<Resolved> {
    resolve_hinted(tag).map(|(r, _)| r)
}

/// [`resolve`], with the segment hint this backend keeps for the tag.
#[inline]
pub fn resolve_hinted(tag: &str) -> Result<(Resolved, Hint)> {
    let hit = match &*CACHE.get() {
        Cache { last: Some((name, e)), area: Some(h), .. } if name.is(tag) && e.acl.is_current(&h.acl_epoch) => {
            Some((e.r, e.hint))
        }
        _ => None,
    };
    match hit {
        Some(h) => Ok(h),
        None => resolve_slow(tag, false),
    }
}

/// [`resolve_hinted`] for a draw from the tag's own counter (`seqgen_next`): a keyed
/// counter's load also reserves its first segment when the current user may draw from the tag.
pub fn resolve_for_draw(tag: &str) -> Result<(Resolved, Hint)> {
    resolve_slow(tag, true)
}

/// The hot path of a draw: `last` runs on this backend's cache entry of `tag` in place (its
/// resolution and the segment hint it may update) when `tag` is the last tag resolved and the
/// current user may still draw from it. Otherwise the tag's entry in the map is tried (see
/// [`with_mapped`]), and `mapped` runs on it. `None` when neither serves: then
/// [`resolve_hinted`]. Neither closure may call back into the directory.
///
/// The two paths take closures of their own, so the last tag's (one tag per row: a string
/// comparison and a stamp comparison before the draw) carries no block code. (One closure with
/// an optional refill made it 2 ns slower; `with_mapped` not inlined made many tags in turn 4%
/// slower, measured with `bench/tags.sql` on twin clusters.)
#[inline]
pub fn with_cached<E>(
    tag: &str,
    last: impl FnOnce(Resolved, &mut Hint) -> std::result::Result<i64, E>,
    mapped: impl FnOnce(Resolved, &mut Hint, Refill<'_>) -> std::result::Result<i64, E>,
) -> Option<std::result::Result<i64, E>> {
    let mut c = CACHE.get();
    let c = &mut *c;
    c.drawn.recent = NONE;
    let area = c.area?;
    if let Some((name, e)) = &mut c.last {
        if name.is(tag) && e.acl.is_current(&area.acl_epoch) {
            let drawn = last(e.r, &mut e.hint);
            if drawn.is_ok() {
                c.drawn.recent = c.last_at;
            }
            return Some(drawn);
        }
    }
    with_mapped(c, area, tag, mapped)
}

/// The map's half of [`with_cached`] (many tags in turn). A tag drawn from the map may have a
/// block of values this backend claimed: the next one is returned without touching shared
/// memory while no slot of the area was retired since the claim (else its slot's generation
/// is checked), and the statement started within a second of the claim (else the rest is a
/// gap). Without one, `f` gets a [`Refill`] to claim the next block with.
#[inline]
fn with_mapped<E>(
    c: &mut Cache,
    area: &'static Header,
    tag: &str,
    f: impl FnOnce(Resolved, &mut Hint, Refill<'_>) -> std::result::Result<i64, E>,
) -> Option<std::result::Result<i64, E>> {
    let at = c.find_at(tag)?;
    let acl = c.acl_gen(area);
    let blk = c.blk_gen(area);
    let now_us = statement_us();
    let tick = c.tick(now_us);
    let acl_now = c.acl_now;
    let m = &mut c.entries[at].hot;
    let cold = &mut c.colds[at];
    if m.acl_gen != acl {
        // the entry's own stamp, once per entry after the stamp changed
        if acl_now != Some(cold.acl) {
            return None;
        }
        m.acl_gen = acl;
    }
    if m.left > 0 {
        if BlockClock::fresh(m.claimed, tick)
            && (m.blk_gen == blk || cold.r.slot.gen().load(Ordering::Acquire) == cold.r.gen)
        {
            m.blk_gen = blk;
            c.drawn.recent = at as u32;
            return Some(Ok(m.take()));
        }
        // expired, or its slot no longer serves the tag: the rest is a gap
        m.lose(Some(area).filter(|a| a.epoch.load(Ordering::Acquire) == c.area_epoch));
    }
    if cold.r.slot.gen().load(Ordering::Acquire) != cold.r.gen {
        return None;
    }
    m.blk_gen = blk;
    let refill = Refill { hot: m, size: &mut cold.size, last_us: &mut cold.last_us, off: &mut cold.off, now_us, tick };
    let drawn = f(cold.r, &mut cold.hint, refill);
    if drawn.is_ok() {
        c.drawn.recent = at as u32;
    }
    Some(drawn)
}

/// Drop this backend's block of `tag`, if it has one (its values become a gap): a caller about
/// to draw from the shared segment another way (`seqgen_next_batch`) would otherwise hand out
/// values above the block's, and the block's after them.
pub fn drop_block(tag: &str) {
    let mut c = CACHE.get();
    if let Some(at) = c.find_at(tag) {
        let area = c.live_area();
        c.entries[at].hot.lose(area);
    }
}

/// Keep `hint` for the tag just resolved (after a draw moved to another segment: once per
/// segment, not per draw).
#[cold]
pub fn remember_hint(tag: &str, r: Resolved, hint: Hint) {
    let mut c = CACHE.get();
    if let Some((name, e)) = c.last.as_mut() {
        if name.is(tag) && e.r.gen == r.gen && std::ptr::eq(e.r.slot, r.slot) {
            e.hint = hint;
        }
    }
    if let Some(at) = c.find_at(tag) {
        let e = &mut c.colds[at];
        if e.r.gen == r.gen && std::ptr::eq(e.r.slot, r.slot) {
            e.hint = hint;
        }
    }
}

/// `seqgen_next` (of slot `name`: a tag, or a tag and a key) returned `value` to this session.
/// Right after the draw: a draw served by [`with_cached`] left its entry in `recent`.
#[inline]
pub fn record(name: &str, value: i64) {
    let mut c = CACHE.get();
    let at = std::mem::replace(&mut c.drawn.recent, NONE);
    if !c.drawn.record_at(at, value) {
        record_slow(&mut c, name, value);
    }
}

/// [`record`] for a key's slot `name` (a tag and a key): kept for `seqgen_lastval` only.
#[inline]
pub fn record_key(name: &str, value: i64) {
    let mut c = CACHE.get();
    let at = std::mem::replace(&mut c.drawn.recent, NONE);
    if !c.drawn.record_latest_at(at, value) {
        record_slow(&mut c, name, value);
    }
}

#[cold]
#[inline(never)]
fn record_slow(c: &mut Cache, name: &str, value: i64) {
    match c.find_at(name) {
        Some(at) => {
            c.drawn.record_at(at as u32, value);
        }
        None => c.drawn.record_name(name.as_bytes(), value),
    }
}

/// What `seqgen_next(tag)` last returned to this session, and whether the current user may
/// still draw from the tag by what this backend knows (`false`: ask the catalog).
pub fn drawn_value(tag: &str) -> Option<(i64, bool)> {
    let c = CACHE.get();
    if let Some(at) = c.find_at(tag) {
        if let Some(v) = c.drawn.value_at(at) {
            return Some((v, c.may_draw_at(at)));
        }
    }
    c.drawn.spilled(tag.as_bytes()).map(|v| (v, false))
}

/// What `seqgen_next` last returned to this session, of any tag or key: the value, the tag,
/// and whether the current user may still draw from it by what this backend knows.
pub fn latest_drawn() -> Option<(i64, String, bool)> {
    let c = CACHE.get();
    let (v, at) = c.drawn.latest()?;
    let (name, allowed) = match at {
        Latest::At(at) => (Cache::name_of(&c.names, &c.entries[at]), c.may_draw_at(at)),
        Latest::Name(name) => (name, false),
    };
    let name = String::from_utf8_lossy(name);
    Some((v, shmem::split_name(&name).0.to_string(), allowed))
}

/// Forget every value drawn (`DISCARD SEQUENCES`, `DISCARD ALL`).
pub fn discard_drawn() {
    CACHE.get().drawn.discard();
}

/// Forget a cached resolution (its slot changed generation).
pub fn forget(tag: &str) {
    let mut c = CACHE.get();
    c.remove(tag.as_bytes());
    if matches!(&c.last, Some((n, _)) if n.is(tag)) {
        c.last = None;
    }
}

fn resolve_slow(tag: &str, draw: bool) -> Result<(Resolved, Hint)> {
    let cached = {
        let c = CACHE.get();
        c.area.and_then(|h| c.find_entry(tag).map(|e| (e, h)))
    };
    if let Some((e, area)) = cached {
        if e.r.slot.gen().load(Ordering::Acquire) == e.r.gen {
            if e.acl.is_current(&area.acl_epoch) {
                // not made the `last` one: a call that changes the tag every row (a tag per
                // tenant, say) would pay for it every row
                return Ok((e.r, e.hint));
            }
            return check_and_remember(tag, e.r, area);
        }
        forget(tag);
    }
    load_cold(tag, draw)
}

#[cold]
#[inline(never)]
fn load_cold(tag: &str, draw: bool) -> Result<(Resolved, Hint)> {
    let h = ready_header()?;
    check_name(tag)?;
    // the new side of a switchover draws only once the catalog stops coming in (checked before
    // the allocator loads the tag: a segment reserved here would be a write the incoming
    // catalog then collides with)
    crate::plumbing::replication::refuse_while_receiving(shmem::split_name(tag).0)?;
    // a Citus worker back from downtime reads the coordinator's definitions once before it
    // serves a tag: a drop or a revoke made while it was down holds from its first call (if
    // that read fails, it draws on with the definitions it has)
    if crate::plumbing::node::is_citus_worker(h)
        && h.sync_ok_ms.load(Ordering::Acquire) == 0
        && h.sync_failing.load(Ordering::Acquire) == 0
        && h.first_read_gave_up.load(Ordering::Acquire) == 0
    {
        // at most FIRST_READ_WAIT of the call's time, and only until one wait gave up (a
        // coordinator that does not answer, a group not confirmed): later calls do not wait
        let until = crate::plumbing::wait::call_deadline().min(std::time::Instant::now() + FIRST_READ_WAIT);
        let read = crate::plumbing::node::sync_now_until(h, until);
        if !matches!(read, Ok(true)) {
            h.first_read_gave_up.store(1, Ordering::Release);
        }
        read?;
    }
    let r = match lookup(h, tag.as_bytes()) {
        Some(r) => r,
        None => {
            // a keyed counter's first segment comes with its load, for a user the allocator
            // finds allowed on the committed catalog; not while this transaction changed the
            // catalog or a prepared one may (then only the check below decides, on what this
            // transaction sees)
            let keyed = shmem::split_name(tag).1.is_some();
            let settled =
                h.acl_prepared.load(Ordering::Acquire) == 0 && !crate::plumbing::pending::catalog_changed_here();
            let draw_as = if draw && keyed && settled { unsafe { pg_sys::GetUserId() }.to_u32() } else { 0 };
            load(h, tag, draw_as)?
        }
    };
    check_and_remember(tag, r, h)
}

/// Ask the catalog whether the current user may draw from `tag`, and remember the answer.
#[cold]
#[inline(never)]
fn check_and_remember(tag: &str, r: Resolved, area: &'static Header) -> Result<(Resolved, Hint)> {
    // the stamp before the read: a change that commits meanwhile makes the answer stale
    let epoch = area.acl_epoch.load(Ordering::Acquire);
    let stamp = Stamp::now(epoch);
    // a keyed counter is drawn with its tag's privileges
    let owner_tag = shmem::split_name(tag).0;
    // a prepared transaction may change the answer when it commits: then the catalog is asked,
    // and nothing is remembered; a transaction that changed grants or dropped tags asks the
    // catalog too (it sees its own changes there), and keeps nothing in shared memory (they
    // are not everyone's; nor is a row it wrote, see `Grants::written_here`)
    let settled = area.acl_prepared.load(Ordering::Acquire) == 0;
    let shared = settled && !crate::plumbing::pending::catalog_changed_here();
    let grants = match shared.then(|| r.slot.grants.read(r.gen, epoch)).flatten() {
        // what a backend read from the catalog for this slot, still current
        Some(g) => g,
        None => {
            let g = crate::plumbing::acl::grants(owner_tag)?;
            if shared {
                r.slot.grants.publish(r.gen, epoch, &g);
            }
            g
        }
    };
    if !grants.may_draw() {
        return Err(SeqgenError::TagPermission(owner_tag.to_string()));
    }
    let e = Entry { r, acl: stamp, hint: Hint::default() };
    if !settled {
        return Ok((r, e.hint));
    }
    if grants.written_here {
        // a rollback of what this transaction wrote makes the answer stale
        crate::plumbing::acl::cached_from_own_write();
    }
    let mut c = CACHE.get();
    let limit = guc::BACKEND_CACHE_SIZE.get().max(1) as usize;
    // (the last tag's entry is kept: with a limit of 1 the cache may hold 2)
    let same_area = c.area.is_some_and(|a| std::ptr::eq(a, area));
    // long names (a tag and a key) take room of their own, reclaimed by emptying the cache
    if !same_area || c.names.len() >= limit * 32 {
        c.clear();
        c.area = Some(area);
        c.area_epoch = area.epoch.load(Ordering::Acquire);
    }
    // (a tag checked again keeps its entry)
    if c.find_at(tag).is_none() {
        while c.map.len() >= limit && c.evict_one() {}
    }
    c.last_at = c.insert(tag, e);
    c.last = Some((Name::new(tag), e));
    Ok((r, e.hint))
}

/// This database's allocator, after checking everything a call needs before it can use it:
/// preloaded, primary, an area claimed for this database, its worker running.
pub fn ready_header() -> Result<&'static Header> {
    let h = attach()?;
    wait_for_worker(h)?;
    Ok(h)
}

/// Checks shared by the functions that change the catalog: preloaded, primary, an area for this
/// database (so its allocator runs), and the catalog at the library's version (before `ALTER
/// EXTENSION pg_seqgen UPDATE` its tables may lack columns the calls write: 55000 with the hint
/// rather than a missing column).
pub fn admin_checks() -> Result<()> {
    crate::plumbing::node::refuse_definitions_on_worker(attach()?)?;
    crate::plumbing::catalog::require_current()
}

/// The area serving this database. Claimed here, and its worker asked of the launcher, when
/// none is yet: the extension was created while the server ran in a transaction whose
/// commit could not claim one, or the launcher has not reached this database since the
/// server started.
pub fn attach() -> Result<&'static Header> {
    let s = shmem::server().ok_or(SeqgenError::NotPreloaded)?;
    if unsafe { pg_sys::RecoveryInProgress() } {
        return Err(SeqgenError::HotStandby);
    }
    if let Some(h) = shmem::header() {
        return Ok(h);
    }
    let db = unsafe { pg_sys::MyDatabaseId }.to_u32();
    // in the transaction that creates the extension, the allocator would not find it yet:
    // hold the area until the commit ends
    let creating = crate::plumbing::pending::creating_extension();
    let hold = if creating { unsafe { pg_sys::MyProcPid } } else { 0 };
    let h = shmem::claim_area(s, db, hold).map_err(|_| SeqgenError::TooManyDatabases(guc::MAX_DATABASES.get()))?;
    if creating {
        crate::plumbing::pending::hold_until_commit(h);
    }
    s.ring_launcher();
    Ok(h)
}

/// The name of the current database.
pub fn current_database() -> String {
    unsafe {
        let p = pg_sys::get_database_name(pg_sys::MyDatabaseId);
        if p.is_null() {
            String::new()
        } else {
            std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }
}

fn wait_for_worker(h: &'static Header) -> Result<()> {
    let epoch = h.epoch.load(Ordering::Acquire);
    let ready = || {
        if h.epoch.load(Ordering::Acquire) != epoch {
            // the worker found no extension here, or the database is being dropped
            return Some(Err(SeqgenError::CatalogMissing(current_database())));
        }
        (h.worker_status() == shmem::WorkerStatus::Running).then_some(Ok(()))
    };
    wait_for(h, ready).unwrap_or(Err(SeqgenError::WorkerNotRunning))
}

/// Find the active slot of `name` (directory lock shared; one probe of the tag index).
pub fn lookup(h: &'static Header, name: &[u8]) -> Option<Resolved> {
    shmem::with_dir_lock(h, false, || {
        shmem::find_slot(h, name).map(|idx| {
            let s = &shmem::all_slots(h)[idx];
            Resolved { slot: s, gen: s.gen().load(Ordering::Acquire) }
        })
    })
}

/// Turn a worker result code into an error for `tag`. `detail` and `state` (a SQLSTATE, 0 if
/// unknown) describe a failed job.
pub fn error_for(code: u32, tag: &str, detail: String, state: i32) -> SeqgenError {
    match code {
        code::UNKNOWN_TAG => crate::plumbing::replication::unknown_tag(shmem::split_name(tag).0),
        code::EXHAUSTED => SeqgenError::Exhausted(tag.to_string()),
        code::LOCKED => SeqgenError::RowLocked(tag.to_string()),
        code::CATALOG_MISSING => SeqgenError::CatalogMissing(current_database()),
        code::NO_TEMPLATE => SeqgenError::NoTemplate(shmem::split_name(tag).0.to_string()),
        code::NEEDS_UPDATE => SeqgenError::NeedsUpdate(detail),
        code::GAPLESS => SeqgenError::Gapless(shmem::split_name(tag).0.to_string()),
        code::KEYED_OPAQUE => SeqgenError::Unsupported(format!(
            "keyed counters of an opaque tag (\"{}\" is opaque; keys count in the clear)",
            shmem::split_name(tag).0
        )),
        code::KEY_LIMIT => SeqgenError::KeyLimit {
            tag: shmem::split_name(tag).0.to_string(),
            limit: i64::from(crate::plumbing::guc::MAX_KEYS_PER_ROLE.get()),
        },
        _ => SeqgenError::WorkerFailed { tag: tag.to_string(), detail, state },
    }
}

/// The error for a failed job reported through a slot (prefetch, order block, snowflake):
/// the worker's last error message and SQLSTATE.
pub fn slot_failure(h: &Header, code: u32, tag: &str) -> SeqgenError {
    error_for(code, tag, h.health.last_error.read(), h.health.last_error_state.load(Ordering::Acquire))
}

/// The longest a Citus worker's first cold load after start waits for its first read of the
/// coordinator's definitions.
const FIRST_READ_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Ask the worker to load `tag` into a slot (`draw_as`: see [`resolve_for_draw`]).
fn load(h: &'static Header, tag: &str, draw_as: u32) -> Result<Resolved> {
    let ask = || {
        call_worker_retrying(h, tag, |mb| {
            mb.kind.store(shmem::REQ_LOAD, Ordering::Relaxed);
            mb.n.store(i64::from(draw_as), Ordering::Relaxed);
        })
    };
    let mut reply = ask()?;
    if reply.code == code::UNKNOWN_TAG && crate::plumbing::node::sync_now(h)? {
        // a Citus worker that had not read the coordinator's definitions since the tag was made
        reply = ask()?;
    }
    match reply.code {
        code::OK => {
            let slot = &shmem::slots(h)[reply.start as usize];
            Ok(Resolved { slot, gen: reply.len as u64 })
        }
        code::UNKNOWN_TAG if tag_visible_to_me(shmem::split_name(tag).0) => {
            Err(SeqgenError::TagNotCommitted(shmem::split_name(tag).0.to_string()))
        }
        code::STALE => Err(SeqgenError::CatalogMissing(current_database())),
        c => Err(error_for(c, tag, reply.detail, reply.len as i32)),
    }
}

/// The index of a slot in the slot array.
pub fn slot_index(h: &'static Header, s: &TagSlot) -> usize {
    (s as *const TagSlot as usize - shmem::all_slots(h).as_ptr() as usize) / std::mem::size_of::<TagSlot>()
}

/// Ask the worker to read the template of the resolved tag `r` into its slot. `Ok(false)`:
/// the slot no longer serves the tag; resolve it again.
pub fn load_template(tag: &str, r: Resolved) -> Result<bool> {
    let h = ready_header()?;
    let reply = call_worker_retrying(h, tag, |mb| {
        mb.kind.store(shmem::REQ_TEMPLATE, Ordering::Relaxed);
        mb.slot.store(slot_index(h, r.slot) as u32, Ordering::Relaxed);
        mb.gen.store(r.gen, Ordering::Relaxed);
    })?;
    match reply.code {
        code::OK => Ok(true),
        code::STALE => Ok(false),
        code::NO_TEMPLATE => Err(SeqgenError::NoTemplate(shmem::split_name(tag).0.to_string())),
        c => Err(error_for(c, tag, reply.detail, reply.len as i32)),
    }
}

/// Ask the worker for a dedicated range of `n` values of the resolved tag `r` (for large
/// batches): `Some((start, len, mode))`, reserved from the catalog row the slot serves; `None`
/// when the slot no longer serves the tag (resolve it again).
pub fn reserve_range(tag: &str, r: Resolved, n: i64) -> Result<Option<(i64, i64, i64)>> {
    let h = ready_header()?;
    let reply = call_worker_retrying(h, tag, |mb| {
        mb.kind.store(shmem::REQ_RANGE, Ordering::Relaxed);
        mb.n.store(n, Ordering::Relaxed);
        mb.slot.store(slot_index(h, r.slot) as u32, Ordering::Relaxed);
        mb.gen.store(r.gen, Ordering::Relaxed);
    })?;
    match reply.code {
        code::OK => {
            // reserved for this call alone: taken at once, as a segment's values when drawn
            h.stats.reserved.fetch_add(reply.len.max(0) as u64, Ordering::Relaxed);
            h.stats.taken(reply.len.max(0) as u64);
            Ok(Some((reply.start, reply.len, reply.mode)))
        }
        code::STALE => Ok(None),
        code::UNKNOWN_TAG if tag_visible_to_me(shmem::split_name(tag).0) => {
            Err(SeqgenError::TagNotCommitted(shmem::split_name(tag).0.to_string()))
        }
        c => Err(error_for(c, tag, reply.detail, reply.len as i32)),
    }
}

/// Is there a catalog row for `tag` in this transaction's snapshot? Tells "unknown tag" from
/// "created by a transaction that has not committed".
/// Read with the extension's privileges (an unknown tag is 42704 whoever asks), waiting for a
/// lock on the catalog no longer than a draw may wait.
fn tag_visible_to_me(tag: &str) -> bool {
    crate::plumbing::session::bounded_lock_wait(|| {
        crate::plumbing::session::as_superuser(|| {
            Spi::get_one_with_args::<bool>(
                "SELECT EXISTS (SELECT FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1)",
                &[tag.into()],
            )
        })
    })
    .ok()
    .flatten()
    .unwrap_or(false)
}

struct Reply {
    code: u32,
    start: i64,
    len: i64,
    mode: i64,
    detail: String,
}

/// [`call_worker`], repeated while the tag's catalog row is locked by another transaction,
/// for up to `seqgen.allocation_timeout` (the worker itself never waits for row locks).
fn call_worker_retrying(h: &'static Header, tag: &str, fill: impl Fn(&Mailbox)) -> Result<Reply> {
    let deadline = call_deadline();
    let mut paused: Option<Instant> = None;
    loop {
        let reply = call_worker(h, tag, &fill)?;
        if reply.code != code::LOCKED || Instant::now() >= deadline {
            // the tries for a locked row are one wait (a timeout when the row stayed locked)
            if let Some(since) = paused {
                h.stats.waited(since.elapsed().as_micros() as u64, reply.code == code::LOCKED);
            }
            return Ok(reply);
        }
        paused.get_or_insert_with(Instant::now);
        wait_quietly_until(h, (Instant::now() + Duration::from_millis(10)).min(deadline), || None::<()>);
    }
}

/// The mailbox this backend has claimed, if any: (area, index, sequence). Given up when the
/// backend exits, whatever way it exits.
static CLAIMED: BackendLocal<Option<(&'static Header, usize, u64)>> = BackendLocal::new();
static EXIT_HOOKED: BackendLocal<bool> = BackendLocal::new();
static BLOCKS_HOOKED: BackendLocal<bool> = BackendLocal::new();

/// Count the values left in this backend's blocks as lost when it exits (once a block is kept).
#[cold]
fn count_blocks_at_exit() {
    let mut hooked = BLOCKS_HOOKED.get();
    if !*hooked {
        unsafe { pg_sys::before_shmem_exit(Some(blocks_lost_on_exit), pg_sys::Datum::from(0)) };
        *hooked = true;
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn blocks_lost_on_exit(_code: std::ffi::c_int, _arg: pg_sys::Datum) {
    // (not if an error left the cache borrowed: what its blocks held goes uncounted)
    let Some(mut c) = CACHE.try_get() else { return };
    let area = c.live_area();
    for m in c.entries.iter_mut() {
        m.hot.lose(area);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn give_up_on_exit(_code: std::ffi::c_int, _arg: pg_sys::Datum) {
    if let Some((h, i, seq)) = CLAIMED.get().take() {
        give_up(&h.mailboxes[i], seq);
    }
}

/// The owner no longer wants the answer of use `seq` of `mb`: hand a posted mailbox back to
/// the worker (which frees it when it answers or reclaims), free it otherwise.
fn give_up(mb: &Mailbox, seq: u64) {
    if mb.transition(seq, shmem::MB_POSTED, shmem::MB_ABANDONED) {
        return;
    }
    for state in [shmem::MB_DONE, shmem::MB_FILLING] {
        if mb.free(seq, state) {
            return;
        }
    }
}

/// Claim a free mailbox (waiting for one up to `timeout` ms).
fn claim(h: &'static Header, tag: &str) -> Result<(&'static Mailbox, u64)> {
    {
        let mut hooked = EXIT_HOOKED.get();
        if !*hooked {
            unsafe { pg_sys::before_shmem_exit(Some(give_up_on_exit), pg_sys::Datum::from(0)) };
            *hooked = true;
        }
    }
    let me = unsafe { pg_sys::MyProcPid };
    let try_claim = || {
        h.mailboxes.iter().enumerate().find_map(|(i, mb)| {
            let (seq, state) = mb.load();
            (state == shmem::MB_FREE && mb.transition(seq, shmem::MB_FREE, shmem::MB_FILLING)).then(|| {
                mb.owner.store(me, Ordering::Release);
                *CLAIMED.get() = Some((h, i, seq));
                (mb, seq)
            })
        })
    };
    wait_for(h, try_claim)
        .ok_or_else(|| SeqgenError::Timeout { tag: tag.to_string(), ms: guc::ALLOCATION_TIMEOUT.get() })
}

/// Post a request in a free mailbox, wake the worker and wait for its answer.
fn call_worker(h: &'static Header, tag: &str, fill: impl FnOnce(&Mailbox)) -> Result<Reply> {
    let timeout = guc::ALLOCATION_TIMEOUT.get();
    let (mb, seq) = claim(h, tag)?;
    mb.set_name(tag.as_bytes());
    // the area must still serve this database: a request posted to it after it was released
    // (and maybe claimed for another database) is answered STALE by the worker
    let epoch = h.epoch.load(Ordering::Acquire);
    mb.epoch.store(epoch, Ordering::Relaxed);
    if h.db.load(Ordering::Acquire) != unsafe { pg_sys::MyDatabaseId }.to_u32() {
        give_up(mb, seq);
        *CLAIMED.get() = None;
        return Err(SeqgenError::CatalogMissing(current_database()));
    }
    fill(mb);
    mb.result.store(code::INTERNAL, Ordering::Relaxed);
    mb.r_mode.store(0, Ordering::Relaxed);
    mb.transition(seq, shmem::MB_FILLING, shmem::MB_POSTED);
    h.ring();

    let release = || {
        give_up(mb, seq);
        *CLAIMED.get() = None;
    };
    // If the wait is interrupted (query cancel), hand the mailbox back to the worker.
    let done = PgTryBuilder::new(|| {
        wait_for(h, || match mb.load() {
            (s, shmem::MB_DONE) if s == seq => Some(Ok(())),
            (s, _) if s != seq => Some(Err(SeqgenError::WorkerFailed {
                tag: tag.to_string(),
                detail: "the request was reclaimed by the worker".into(),
                state: 0,
            })),
            _ => None,
        })
    })
    .catch_others(|e| {
        release();
        e.rethrow()
    })
    .execute();
    match done {
        Some(Ok(())) => {
            let reply = Reply {
                code: mb.result.load(Ordering::Relaxed),
                start: mb.r_start.load(Ordering::Relaxed),
                len: mb.r_len.load(Ordering::Relaxed),
                mode: mb.r_mode.load(Ordering::Relaxed),
                detail: mb.detail(),
            };
            release();
            Ok(reply)
        }
        Some(Err(e)) => {
            release();
            Err(e)
        }
        None => {
            release();
            Err(if h.worker_status() != shmem::WorkerStatus::Running {
                SeqgenError::WorkerNotRunning
            } else {
                SeqgenError::Timeout { tag: tag.to_string(), ms: timeout }
            })
        }
    }
}
