//! Keyed counters in the catalog: a key's reservations, new keys made one at a time or many at
//! once (`make_keys`), the owner's `seqgen.max_keys_per_role`, and the floor under new keys
//! (`alloc.key_floor`, see [`Lease`]).

use std::time::{Duration, Instant};

use pgrx::prelude::*;
use pgrx::spi::SpiClient;
use seqgen_core::adaptive::{reserve_up_to, Reservation, MAX_NODE_BITS};

use super::{ident_of, may_draw_as, oids, Loaded, Plans, Reserve};
use crate::plumbing::guc;
use crate::plumbing::shmem::{split_name, Ident};

/// The floor under the new keys of a tag (`alloc.key_floor`), as the allocator holds it between
/// cycles: committed, and flushed, as `hi`; every key of the tag without a row may have given
/// out values up to it, none above. While the allocator holds it, a new key's first segment is
/// taken from `(lo, hi]`, where `lo` was the floor before: the commit that writes the key's
/// row need not wait for its flush, since a crash that loses the row leaves `hi` above what
/// the key gave out (and the next new keys start above it). Only a new key's first segment
/// comes from it, and each key counts for itself: a lease serves any number of keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// The identity of the tag's row the floor was raised in.
    pub ident: Ident,
    pub lo: i64,
    pub hi: i64,
}

/// How the first segment of a new key was made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Birth {
    /// By the commit (not a new key's first segment, or one reserved without a lease).
    Durable,
    /// Under the tag's lease (`alloc.key_floor`, committed and flushed before): the commit
    /// need not wait for the flush.
    Leased,
    /// By the commit, which also raises the tag's `key_floor` to start this lease: in force
    /// once the commit is flushed.
    Started(Lease),
}

/// Keyed counters: the tag's row is read `FOR KEY SHARE` (a drop, a restart or an advance, which
/// lock it `FOR UPDATE`, wait for the reservation; an alter, a grant or a revoke does not), the
/// key's row locked `FOR UPDATE`.
pub(super) const KEY_TAG_ROW: &str = "SELECT step, node_bits, tableoid::pg_catalog.int8, tag_id, start_with, \
     opaque_from IS NOT NULL, gapless, owner::pg_catalog.oid::pg_catalog.int8, public_draw, \
     drawers::pg_catalog.oid[]::pg_catalog.int8[], key_floor FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1 \
     FOR KEY SHARE SKIP LOCKED";
/// A tag's row locked to raise or lower its `key_floor` (`FLOOR_SET`); not waiting for a lock.
pub(super) const FLOOR_LOCK: &str = "SELECT key_floor FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1 \
     AND tag_id OPERATOR(pg_catalog.=) $2 FOR NO KEY UPDATE SKIP LOCKED";
pub(super) const FLOOR_SET: &str = "UPDATE seqgen.alloc SET key_floor = $2 WHERE biz_tag OPERATOR(pg_catalog.=) $1";
pub(super) const KEY_ROW: &str = "SELECT max_id, step FROM seqgen.key_counter WHERE biz_tag OPERATOR(pg_catalog.=) $1 \
     AND key OPERATOR(pg_catalog.=) $2 FOR UPDATE SKIP LOCKED";
pub(super) const KEY_STEP: &str = "SELECT step FROM seqgen.key_counter WHERE biz_tag OPERATOR(pg_catalog.=) $1 \
     AND key OPERATOR(pg_catalog.=) $2";
/// New keys `$2` of tag `$1`, each with the same first segment (each counts on its own); those
/// inserted: a key with a row is left as it is (an uncommitted insert of the same key makes
/// this wait, up to the allocator's `lock_timeout`). No plan here reads `seqgen.key_counter`
/// but through its primary key (a plan to find the keys with a row, made while the table was
/// small, read all of it per call once it had 100,000 keys).
pub(super) const KEYS_INSERT: &str = "INSERT INTO seqgen.key_counter (biz_tag, key, max_id, step) \
     SELECT $1, k, $3, $4 FROM pg_catalog.unnest($2::pg_catalog.text[]) AS k \
     ON CONFLICT (biz_tag, key) DO NOTHING RETURNING key";
pub(super) const KEY_INSERT: &str =
    "INSERT INTO seqgen.key_counter (biz_tag, key, max_id, step) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (biz_tag, key) DO NOTHING RETURNING true";
pub(super) const KEY_UPDATE: &str =
    "UPDATE seqgen.key_counter SET max_id = $3, step = $4, update_time = pg_catalog.now() \
     WHERE biz_tag OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2";
/// The keys of the tags of one owner (`seqgen.max_keys_per_role`): distinct (tag, key) of each
/// kind of keyed counter (a gapless tag's one sequence, key '', is not a key).
pub(super) const KEYS_OF_OWNER: &str = "SELECT (SELECT pg_catalog.count(*) FROM seqgen.key_counter k \
       WHERE k.biz_tag OPERATOR(pg_catalog.=) ANY (o.tags)) \
     OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM (SELECT DISTINCT k.biz_tag, k.key \
       FROM seqgen.key_order_counter k WHERE k.biz_tag OPERATOR(pg_catalog.=) ANY (o.tags)) d) \
     OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM (SELECT DISTINCT k.biz_tag, k.key \
       FROM seqgen.gapless_counter k WHERE k.biz_tag OPERATOR(pg_catalog.=) ANY (o.tags) \
       AND k.key OPERATOR(pg_catalog.<>) '') d) \
     FROM (SELECT pg_catalog.array_agg(biz_tag) AS tags FROM seqgen.alloc \
       WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $1::pg_catalog.oid) o";
/// A role at `seqgen.max_keys_per_role` is counted again (its dropped tags' keys are gone) at
/// most this often: a count reads every key of the role's tags, and the worker serves everyone.
pub(super) const RECOUNT: Duration = Duration::from_secs(10);

/// The size of a new key's first segment (`Plans::tag_load`).
pub const NEW_KEY_STEP: i64 = 2;

/// Where a new key's first segment of `len` values starts, and how it is made durable: under
/// `lease` when it is the tag's row's (`ident`, its `floor` still the lease's) and in force
/// (`Birth::Leased`); else above `start_with - 1` and the floor, and with `start` the lease it
/// would start once made (`Birth::Started`: see `Plans::start_lease`). `bound`: the highest
/// value of the tag's counter.
fn new_key_start(
    lease: Option<Lease>,
    ident: Ident,
    floor: Option<i64>,
    start_with: i64,
    len: i64,
    bound: i64,
    start: bool,
) -> (i64, i64, Birth) {
    match lease {
        Some(l) if l.ident == ident && floor == Some(l.hi) && l.lo >= start_with - 1 => {
            (l.lo, len.min(l.hi - l.lo), Birth::Leased)
        }
        _ => {
            let base = floor.unwrap_or(i64::MIN).max(start_with - 1);
            let hi = base.checked_add(len).filter(|&hi| hi <= bound && start);
            (base, len, hi.map_or(Birth::Durable, |hi| Birth::Started(Lease { ident, lo: base, hi })))
        }
    }
}

/// A tag's row as its keys are reserved (`KEY_TAG_ROW`, under its lock).
struct KeyTag {
    ident: Ident,
    /// The tag's configured step.
    step: i64,
    node_bits: u32,
    start_with: i64,
    opaque: bool,
    gapless: bool,
    owner: u32,
    public: bool,
    drawers: Vec<u32>,
    floor: Option<i64>,
}

/// New keys made at once by [`Plans::make_keys`]: their tag's row as loaded (with a new key's
/// step), the tag's configured step and node bits, how their first segment was made durable,
/// and each key's first segment if it was made there.
pub struct MadeKeys {
    pub loaded: Loaded,
    pub step: i64,
    pub node_bits: u32,
    pub birth: Birth,
    pub made: Vec<Option<Reservation>>,
}

impl Plans {
    /// Make new keys of `tag` at once, each for the first draw of a role (`keys`: key and role),
    /// in one statement: each key without a row whose role may draw from the tag (as its row
    /// has it under the reservation's lock) and whose owner's `seqgen.max_keys_per_role` leaves
    /// room, with the same first segment (`size` is given the tag's configured step), taken
    /// under `lease` when it is the tag's and in force, or starting one (see [`Lease`]).
    /// `None`: none made here (the tag's row is locked or gone, or it is opaque or gapless).
    /// A key not made here (`None` in `made`) is loaded as one at a time is, and meets there
    /// whatever kept it.
    pub fn make_keys(
        &self,
        client: &mut SpiClient<'_>,
        tag: &str,
        keys: &[(&str, u32)],
        size: impl FnOnce(i64) -> i64,
        lease: Option<Lease>,
    ) -> spi::Result<Option<MadeKeys>> {
        let Some(t) = self.key_tag(client, tag)? else { return Ok(None) };
        if t.opaque || t.gapless {
            return Ok(None);
        }
        let KeyTag { ident, step, node_bits, start_with, owner, floor, .. } = t;
        let loaded = Loaded { step: NEW_KEY_STEP, ident, gapless: false, owner, public: t.public, drawers: t.drawers };
        // a key named twice is made for its first draw (the other finds its row)
        let mut seen = std::collections::HashSet::new();
        let mut allowed = std::collections::HashMap::new();
        let mut wanted = vec![false; keys.len()];
        for (i, &(key, role)) in keys.iter().enumerate() {
            if !seen.insert(key) {
                continue;
            }
            let may =
                *allowed.entry(role).or_insert_with(|| may_draw_as(role, loaded.owner, loaded.public, &loaded.drawers));
            wanted[i] = may && self.take_key(client, i64::from(owner))?;
        }
        let none = |birth| MadeKeys { loaded: loaded.clone(), step, node_bits, birth, made: vec![None; keys.len()] };
        if !wanted.contains(&true) {
            return Ok(Some(none(Birth::Durable)));
        }
        let bound = i64::MAX >> node_bits;
        let (base, len, birth) = new_key_start(lease, ident, floor, start_with, size(step).max(1), bound, true);
        let Ok(range) = reserve_up_to(base, len, bound) else {
            self.give_keys(i64::from(owner), wanted.iter().filter(|&&w| w).count() as i64);
            return Ok(Some(none(Birth::Durable)));
        };
        let new: Vec<String> = keys.iter().zip(&wanted).filter(|(_, &w)| w).map(|((k, _), _)| k.to_string()).collect();
        let args = [tag.into(), new.into(), range.end.into(), (range.len() as i32).into()];
        let inserted: std::collections::HashSet<String> = client
            .update(&self.keys_insert, None, &args)?
            .map(|r| r.get::<String>(1))
            .collect::<spi::Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect();
        let made: Vec<Option<Reservation>> =
            keys.iter().zip(&wanted).map(|((k, _), &w)| (w && inserted.contains(*k)).then_some(range)).collect();
        // a key with a row was counted as a new one: not any more
        let had_rows = wanted.iter().filter(|&&w| w).count() - inserted.len();
        self.give_keys(i64::from(owner), had_rows as i64);
        let birth = if inserted.is_empty() { Birth::Durable } else { self.start_lease(client, tag, birth)? };
        Ok(Some(MadeKeys { loaded, step, node_bits, birth, made }))
    }

    /// Whether a tag of `owner` may have one more key under `seqgen.max_keys_per_role` (-1: no
    /// bound); if so the key is counted.
    pub(super) fn take_key(&self, client: &SpiClient<'_>, owner: i64) -> spi::Result<bool> {
        let limit = i64::from(guc::MAX_KEYS_PER_ROLE.get());
        if limit < 0 {
            return Ok(true);
        }
        let now = Instant::now();
        let mut counts = self.key_counts.borrow_mut();
        let (mut n, mut at) = counts.get(&owner).copied().unwrap_or((i64::MAX, None));
        if n >= limit && at.is_none_or(|t| now.duration_since(t) >= RECOUNT) {
            let t = client.select(&self.keys_of_owner, Some(1), &[owner.into()])?;
            n = if t.is_empty() { 0 } else { t.first().get_one::<i64>()?.unwrap_or(0) };
            at = Some(now);
        }
        if n >= limit {
            counts.insert(owner, (n, at));
            return Ok(false);
        }
        counts.insert(owner, (n + 1, at));
        Ok(true)
    }

    /// `tag`'s row, read `FOR KEY SHARE SKIP LOCKED`: `None` if it is gone or locked.
    fn key_tag(&self, client: &mut SpiClient<'_>, tag: &str) -> spi::Result<Option<KeyTag>> {
        let row = client.update(&self.key_tag_row, Some(1), &[tag.into()])?;
        if row.is_empty() {
            return Ok(None);
        }
        let row = row.first();
        Ok(Some(KeyTag {
            ident: ident_of(row.get(3)?, row.get(4)?),
            step: row.get::<i32>(1)?.unwrap_or(1) as i64,
            node_bits: row.get::<i32>(2)?.unwrap_or(0).clamp(0, MAX_NODE_BITS as i32) as u32,
            start_with: row.get::<i64>(5)?.unwrap_or(1).max(1),
            opaque: row.get::<bool>(6)?.unwrap_or(false),
            gapless: row.get::<bool>(7)?.unwrap_or(false),
            owner: row.get::<i64>(8)?.unwrap_or(0) as u32,
            public: row.get::<bool>(9)?.unwrap_or(false),
            drawers: oids(row.get::<Vec<Option<i64>>>(10)?),
            floor: row.get::<i64>(11)?,
        }))
    }

    /// Uncount `n` keys [`Plans::take_key`] counted for `owner` that turned out not to be new.
    fn give_keys(&self, owner: i64, n: i64) {
        if let Some((count, _)) = self.key_counts.borrow_mut().get_mut(&owner) {
            *count = count.saturating_sub(n);
        }
    }

    /// The first segment of the keyed counter `name` (a tag and a key) for a draw of `role`:
    /// as [`Plans::reserve_for`], if that role may draw from the tag as its row has it when
    /// locked (else `Reserve::NotAllowed`, and nothing made or reserved). A new key's segment
    /// comes from `lease` when it is the tag's, in force (see [`Lease`]); without one, its
    /// reservation starts a lease (`Birth::Started`).
    pub fn reserve_first_of_key(
        &self,
        client: &mut SpiClient<'_>,
        name: &str,
        expect: Ident,
        size: impl FnOnce(i64) -> i64,
        role: u32,
        lease: Option<Lease>,
    ) -> spi::Result<(Reserve, Birth)> {
        match split_name(name) {
            (tag, Some(key)) => self.reserve_for_key(client, tag, key, expect, size, Some(role), Some(lease)),
            _ => Ok((Reserve::NotAllowed, Birth::Durable)),
        }
    }

    /// Give back the lease `l` of `tag` once nothing it covers is unflushed: lower its
    /// `key_floor` to `l.lo` if it is still `l.hi` on the row `l` was taken on (the commit must
    /// wait for the flush: every row written under the lease is flushed with it). Skipped when
    /// the row is locked; the floor then stays where it is, which only costs new keys values.
    pub fn return_lease(&self, client: &mut SpiClient<'_>, tag: &str, l: Lease) -> spi::Result<bool> {
        let row = client.update(&self.floor_lock, Some(1), &[tag.into(), l.ident.tag_id.into()])?;
        if row.is_empty() || row.first().get_one::<i64>()? != Some(l.hi) {
            return Ok(false);
        }
        client.update(&self.floor_set, None, &[tag.into(), Some(l.lo).into()])?;
        Ok(true)
    }

    /// [`Plans::reserve_for`] of `tag`'s counter for `key` (created at its first reservation,
    /// starting at the tag's `start_with`, or above its `key_floor`). `size` is given the tag's
    /// configured step.
    /// `draw_as`: reserve only if this role may draw from the tag (checked on the locked row,
    /// before a new key counts against its owner's `seqgen.max_keys_per_role`).
    /// `lease`: `Some` for a first segment with a load, which may take a new key's values from
    /// the lease given, or start one (`None` in it: the allocator holds none for the tag).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn reserve_for_key(
        &self,
        client: &mut SpiClient<'_>,
        tag: &str,
        key: &str,
        expect: Ident,
        size: impl FnOnce(i64) -> i64,
        draw_as: Option<u32>,
        lease: Option<Option<Lease>>,
    ) -> spi::Result<(Reserve, Birth)> {
        let r = |r: Reserve| Ok((r, Birth::Durable));
        let Some(t) = self.key_tag(client, tag)? else {
            let exists = client.select(&self.row_exists, Some(1), &[tag.into()])?;
            return r(if exists.is_empty() { Reserve::Missing } else { Reserve::Locked });
        };
        if t.ident != expect {
            return r(Reserve::Stale);
        }
        if t.opaque {
            return r(Reserve::KeyedOpaque);
        }
        if t.gapless {
            return r(Reserve::Gapless);
        }
        if draw_as.is_some_and(|role| !may_draw_as(role, t.owner, t.public, &t.drawers)) {
            return r(Reserve::NotAllowed);
        }
        let KeyTag { step, node_bits, start_with, floor, .. } = t;
        let owner = i64::from(t.owner);
        let k = client.update(&self.key_row, Some(1), &[tag.into(), key.into()])?;
        let max_id = if k.is_empty() {
            let exists = client.select(&self.key_step, Some(1), &[tag.into(), key.into()])?;
            if !exists.is_empty() {
                return r(Reserve::Locked);
            }
            None
        } else {
            Some(k.first().get_one::<i64>()?.unwrap_or(0))
        };
        if max_id.is_none() && !self.take_key(client, owner)? {
            return r(Reserve::KeyLimit);
        }
        let bound = i64::MAX >> node_bits;
        let len = size(step).max(1);
        // a new key starts at start_with, and above every value a key without a row may have
        // given out (`key_floor`); under the tag's lease, above the floor before it was raised
        let (base, len, birth) = match max_id {
            Some(m) => (m, len, Birth::Durable),
            // only a first segment with a load takes a lease or starts one
            None => new_key_start(lease.flatten(), expect, floor, start_with, len, bound, lease.is_some()),
        };
        let Ok(range) = reserve_up_to(base, len, bound) else {
            return r(Reserve::Exhausted);
        };
        let args = [tag.into(), key.into(), range.end.into(), (range.len() as i32).into()];
        if max_id.is_none() {
            // created by someone else meanwhile (a restore): read it again next time
            if client.update(&self.key_insert, Some(1), &args)?.is_empty() {
                return r(Reserve::Locked);
            }
        } else {
            client.update(&self.key_update, None, &args)?;
        }
        let birth = self.start_lease(client, tag, birth)?;
        Ok((Reserve::Done { range, step, opaque: None, node_bits }, birth))
    }

    /// Once a new key is made under `birth`: if that would start a lease, raise the tag's
    /// floor to it in this transaction (after the key's row is made, so that keys found to
    /// have rows raise nothing). `Birth::Durable` if the row is locked.
    fn start_lease(&self, client: &mut SpiClient<'_>, tag: &str, birth: Birth) -> spi::Result<Birth> {
        Ok(match birth {
            Birth::Started(l) if !self.raise_floor(client, tag, l.ident, l.hi)? => Birth::Durable,
            b => b,
        })
    }

    /// Raise `tag`'s `key_floor` to `hi` in this transaction, if its row (of identity `ident`)
    /// can be locked at once; `false` if not.
    fn raise_floor(&self, client: &mut SpiClient<'_>, tag: &str, ident: Ident, hi: i64) -> spi::Result<bool> {
        let row = client.update(&self.floor_lock, Some(1), &[tag.into(), ident.tag_id.into()])?;
        if row.is_empty() || row.first().get_one::<i64>()?.is_some_and(|f| f >= hi) {
            return Ok(false);
        }
        client.update(&self.floor_set, None, &[tag.into(), hi.into()])?;
        Ok(true)
    }
}
