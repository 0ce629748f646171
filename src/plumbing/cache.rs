//! The backend's cache of resolved tags: the last tag inline, the others in a map of 32-byte
//! entries with their blocks of values, the privilege answers, and the values drawn
//! (`seqgen_currval`, `seqgen_lastval`). The draw's hot path runs on an entry in place
//! ([`with_cached`]); resolving and loading a tag is `directory`'s, which keeps what it
//! resolved here ([`remember`]).

use std::sync::atomic::Ordering;

use pgrx::pg_sys;
use pgrx::prelude::*;

use hashbrown::HashTable;
use seqgen_core::adaptive::BlockClock;
use seqgen_core::segment::Hint;

use crate::plumbing::acl::Stamp;
use crate::plumbing::drawn::{Latest, Values, NONE};
use crate::plumbing::guc;
use crate::plumbing::local::BackendLocal;
use crate::plumbing::shmem::{self, Header, TagSlot};
use crate::plumbing::stats::Lost;

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
pub struct Entry {
    pub acl: Stamp,
    pub r: Resolved,
    /// The segment this backend last drew from (see `SegmentBuffer::draw_hinted`); it belongs
    /// to the slot's generation in `r`, like everything else here.
    pub hint: Hint,
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
        // (`acl_now` is `None` only before the first: then `acl_gen` is 0)
        if self.acl_now != Some(now) {
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

    /// Statement time `now_us` on the blocks' clock. Past the clock's span (once every 9
    /// minutes), or before a statement time it was given earlier (the clock stepped back),
    /// every block is dropped (a gap) and the clock starts again at `now_us`.
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
        self.clock = BlockClock::starting(now_us);
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

/// The last tag's resolution and hint, if `tag` is the last tag resolved and the current user
/// may still draw from it.
#[inline]
pub fn last_hit(tag: &str) -> Option<(Resolved, Hint)> {
    match &*CACHE.get() {
        Cache { last: Some((name, e)), area: Some(h), .. } if name.is(tag) && e.acl.is_current(&h.acl_epoch) => {
            Some((e.r, e.hint))
        }
        _ => None,
    }
}

/// `tag`'s entry, with the area the cache belongs to.
pub fn cached_entry(tag: &str) -> Option<(Entry, &'static Header)> {
    let c = CACHE.get();
    c.area.and_then(|h| c.find_entry(tag).map(|e| (e, h)))
}

/// Keep `e` (just checked) as `tag`'s entry and the last tag resolved, in the cache of `area`
/// (emptied first when it belongs to another area, or its long names took their room), within
/// `seqgen.backend_cache_size`.
pub fn remember(tag: &str, e: Entry, area: &'static Header) {
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
}

/// The hot path of a draw: `last` runs on this backend's cache entry of `tag` in place (its
/// resolution and the segment hint it may update) when `tag` is the last tag resolved and the
/// current user may still draw from it. Otherwise the tag's entry in the map is tried (see
/// [`with_mapped`]), and `mapped` runs on it. `None` when neither serves: then
/// `directory::resolve_hinted`. Neither closure may call back into the directory.
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
    record_in(name, value, true)
}

/// [`record`] for a key's slot `name` (a tag and a key): kept for `seqgen_lastval` only.
#[inline]
pub fn record_key(name: &str, value: i64) {
    record_in(name, value, false)
}

/// `per_entry`: the entry keeps the value too (`seqgen_currval` of a tag).
#[inline(always)]
fn record_in(name: &str, value: i64, per_entry: bool) {
    let mut c = CACHE.get();
    let at = std::mem::replace(&mut c.drawn.recent, NONE);
    let kept = if per_entry { c.drawn.record_at(at, value) } else { c.drawn.record_latest_at(at, value) };
    if !kept {
        record_slow(&mut c, name, value, per_entry);
    }
}

#[cold]
#[inline(never)]
fn record_slow(c: &mut Cache, name: &str, value: i64, per_entry: bool) {
    match c.find_at(name) {
        Some(at) if per_entry => {
            c.drawn.record_at(at as u32, value);
        }
        Some(at) => {
            c.drawn.record_latest_at(at as u32, value);
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
