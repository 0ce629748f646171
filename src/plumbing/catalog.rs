//! SQL against the catalog. Every statement is schema-qualified and takes its values as SPI
//! arguments; none is built by string formatting.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Instant;

use pgrx::pg_sys::{self, PgBuiltInOids, PgOid};
use pgrx::prelude::*;
use pgrx::spi::{OwnedPreparedStatement, SpiClient, SpiTupleTable};
use seqgen_core::adaptive::{reserve_up_to, Reservation, MAX_NODE_BITS};
use seqgen_core::opaque::Key;
use seqgen_core::template::{self, counter_block, CounterBlock};

use crate::plumbing::shmem::{split_name, Ident};

mod keys;
pub use keys::{Birth, Lease, NEW_KEY_STEP};
use keys::{FLOOR_LOCK, FLOOR_SET, KEYS_INSERT, KEYS_OF_OWNER, KEY_INSERT, KEY_ROW, KEY_STEP, KEY_TAG_ROW, KEY_UPDATE};

/// What reserving values for a tag came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reserve {
    /// Reserved and written (the transaction still has to commit). `step` is the tag's
    /// configured step; `opaque`: the tag's IDs are permuted above this value, with this key.
    Done {
        range: Reservation,
        step: i64,
        opaque: Option<(i64, Key)>,
        node_bits: u32,
    },
    Missing,
    /// The row is locked by another transaction; try again later.
    Locked,
    Exhausted,
    /// The row is another incarnation of the tag than the slot serves.
    Stale,
    /// The tag is gapless: no segment generator serves it.
    Gapless,
    /// A keyed counter of an opaque tag (keys count in the clear; not supported).
    KeyedOpaque,
    /// A new key, and the tag's owner has `seqgen.max_keys_per_role` keys.
    KeyLimit,
    /// A key's first segment with its load: the drawing role may not draw from the tag.
    NotAllowed,
}

/// Every statement reads rows with `FOR NO KEY UPDATE SKIP LOCKED` (never waiting for a row
/// lock, and not conflicting with the KEY SHARE locks that foreign keys take); the worker's
/// `lock_timeout` bounds every other lock wait.
const LOCK_ROW: &str = "SELECT max_id, step, opaque_from, node_bits, tableoid::pg_catalog.int8, tag_id \
     FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1 FOR NO KEY UPDATE SKIP LOCKED";
const ROW_EXISTS: &str = "SELECT true FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1";
const KEY_READ: &str = "SELECT key FROM seqgen.opaque_key WHERE biz_tag OPERATOR(pg_catalog.=) $1";
const TAG_LOAD: &str = "SELECT step, tableoid::pg_catalog.int8, tag_id, gapless, owner::pg_catalog.oid::pg_catalog.int8, \
     public_draw, drawers::pg_catalog.oid[]::pg_catalog.int8[] FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1";
const VERIFY: &str = "SELECT biz_tag, tableoid::pg_catalog.int8, tag_id FROM seqgen.alloc \
     WHERE biz_tag OPERATOR(pg_catalog.=) ANY ($1)";
const SET_MAX_ID: &str = "UPDATE seqgen.alloc SET max_id = $2, update_time = pg_catalog.now() \
     WHERE biz_tag OPERATOR(pg_catalog.=) $1";
/// The reservation tables of the clock-ordered generators, by index: snowflake IDs, UUIDv7s,
/// 53-bit snowflakes. Each has one row, `reserved_id`: an ID value of the generator's layout
/// above every issued one.
pub const RESERVATION_TABLES: [&str; 3] = ["seqgen.snowflake", "seqgen.uuidv7", "seqgen.snowflake53"];

/// The statements of one reservation table.
struct ReservationPlans {
    read: OwnedPreparedStatement,
    lock: OwnedPreparedStatement,
    update: OwnedPreparedStatement,
    insert: OwnedPreparedStatement,
}

impl ReservationPlans {
    /// `table` is one of [`RESERVATION_TABLES`] (a constant identifier; values are arguments).
    fn prepare(client: &SpiClient<'_>, table: &str) -> spi::Result<Self> {
        let int8 = PgOid::BuiltIn(PgBuiltInOids::INT8OID);
        Ok(ReservationPlans {
            read: client.prepare(&format!("SELECT reserved_id FROM {table}"), &[])?.keep(),
            lock: client
                .prepare_mut(&format!("SELECT reserved_id FROM {table} FOR NO KEY UPDATE SKIP LOCKED"), &[])?
                .keep(),
            update: client
                .prepare_mut(
                    &format!(
                        "UPDATE {table} SET reserved_id = pg_catalog.int8larger(reserved_id, $1) WHERE singleton \
                         RETURNING reserved_id"
                    ),
                    &[int8],
                )?
                .keep(),
            insert: client
                .prepare_mut(
                    &format!(
                        "INSERT INTO {table} (singleton, reserved_id) VALUES (true, $1) \
                         ON CONFLICT (singleton) DO NOTHING RETURNING reserved_id"
                    ),
                    &[int8],
                )?
                .keep(),
        })
    }
}

const TEMPLATE_READ: &str = "SELECT t.template, t.time_zone, k.key FROM seqgen.template t \
     LEFT JOIN seqgen.opaque_key k ON k.biz_tag OPERATOR(pg_catalog.=) t.biz_tag \
     WHERE t.biz_tag OPERATOR(pg_catalog.=) $1";
const ORDER_LOCK: &str = "SELECT t.template, a.step, a.tableoid::pg_catalog.int8, a.tag_id, t.time_zone, \
     a.owner::pg_catalog.oid::pg_catalog.int8 FROM seqgen.template t JOIN seqgen.alloc a ON a.biz_tag OPERATOR(pg_catalog.=) t.biz_tag \
     WHERE t.biz_tag OPERATOR(pg_catalog.=) $1 FOR NO KEY UPDATE OF t SKIP LOCKED";
const ORDER_EXISTS: &str = "SELECT true FROM seqgen.template WHERE biz_tag OPERATOR(pg_catalog.=) $1";
const COUNTER_READ: &str = "SELECT period_key, period_max FROM seqgen.order_counter \
     WHERE biz_tag OPERATOR(pg_catalog.=) $1 AND unit OPERATOR(pg_catalog.=) $2";
const COUNTER_SET: &str = "INSERT INTO seqgen.order_counter (biz_tag, unit, period_key, period_max) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (biz_tag, unit) DO UPDATE \
     SET period_key = EXCLUDED.period_key, period_max = EXCLUDED.period_max, update_time = pg_catalog.now()";
const KEY_COUNTER_READ: &str = "SELECT period_key, period_max FROM seqgen.key_order_counter \
     WHERE biz_tag OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2 AND unit OPERATOR(pg_catalog.=) $3";
const KEY_COUNTER_ANY: &str = "SELECT true FROM seqgen.key_order_counter \
     WHERE biz_tag OPERATOR(pg_catalog.=) $1 AND key OPERATOR(pg_catalog.=) $2 LIMIT 1";
const KEY_COUNTER_SET: &str = "INSERT INTO seqgen.key_order_counter (biz_tag, key, unit, period_key, period_max) \
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (biz_tag, key, unit) DO UPDATE \
     SET period_key = EXCLUDED.period_key, period_max = EXCLUDED.period_max, update_time = pg_catalog.now()";

/// What reserving a block of order-number counter values came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderReserve {
    Done(CounterBlock),
    /// The tag has no template.
    Missing,
    Locked,
    /// The period's counter is full.
    Overflow(i64),
    /// The tag or its template is not the one the request was made for.
    Stale,
    /// A new key, and the tag's owner has `seqgen.max_keys_per_role` keys.
    KeyLimit,
}

/// A tag's template as the worker read it.
pub enum TemplateRead {
    Found {
        text: String,
        zone: String,
        key: Option<Key>,
    },
    Missing,
    /// The tag's row is not the one the slot serves.
    Stale,
}

fn ident_of(rel: Option<i64>, tag_id: Option<i64>) -> Ident {
    Ident { rel: rel.unwrap_or(0) as u32, tag_id: tag_id.unwrap_or(0) }
}

/// What loading a tag (or a key of it) reads: its step (a key's own), its row's identity,
/// whether it is gapless, and its owner (the role whose slots an eviction for this tag takes
/// first).
#[derive(Debug, Clone)]
pub struct Loaded {
    pub step: i64,
    pub ident: Ident,
    pub gapless: bool,
    pub owner: u32,
    /// Everyone may draw (`public_draw`), and the roles granted (`drawers`).
    pub public: bool,
    pub drawers: Vec<u32>,
}

/// May `role` draw from a tag whose row has this owner and these grants: a superuser, a member
/// of its owner or of a role it was granted to, or anyone when it is public (as
/// `acl::Grants::may_draw` decides for the current user), with the role memberships this
/// process's catalog snapshot sees.
fn may_draw_as(role: u32, owner: u32, public: bool, drawers: &[u32]) -> bool {
    let me = pg_sys::Oid::from(role);
    let has = |g: u32| unsafe { pg_sys::has_privs_of_role(me, pg_sys::Oid::from(g)) };
    public || unsafe { pg_sys::superuser_arg(me) } || has(owner) || drawers.iter().any(|&g| has(g))
}

/// Role OIDs of an `int8[]` column (NULL elements left out).
fn oids(v: Option<Vec<Option<i64>>>) -> Vec<u32> {
    v.unwrap_or_default().into_iter().flatten().map(|g| g as u32).collect()
}

/// The worker's statements, planned once and kept across transactions (SPI_keepplan).
pub struct Plans {
    lock_row: OwnedPreparedStatement,
    row_exists: OwnedPreparedStatement,
    set_max_id: OwnedPreparedStatement,
    tag_load: OwnedPreparedStatement,
    verify: OwnedPreparedStatement,
    key_read: OwnedPreparedStatement,
    reservations: [ReservationPlans; 3],
    template_read: OwnedPreparedStatement,
    order_lock: OwnedPreparedStatement,
    order_exists: OwnedPreparedStatement,
    counter_read: OwnedPreparedStatement,
    counter_set: OwnedPreparedStatement,
    key_counter_read: OwnedPreparedStatement,
    key_counter_set: OwnedPreparedStatement,
    key_counter_any: OwnedPreparedStatement,
    key_tag_row: OwnedPreparedStatement,
    key_row: OwnedPreparedStatement,
    key_step: OwnedPreparedStatement,
    key_insert: OwnedPreparedStatement,
    keys_insert: OwnedPreparedStatement,
    key_update: OwnedPreparedStatement,
    keys_of_owner: OwnedPreparedStatement,
    floor_lock: OwnedPreparedStatement,
    floor_set: OwnedPreparedStatement,
    /// Keys per tag owner (oid): (the count when last counted plus the keys made since, when
    /// last counted, on the monotonic clock: a wall clock stepped back must not delay a count). High after a rolled-back job or a dropped tag: counted again at
    /// the bound. Gapless keys, made by committing sessions, are seen at the next count.
    key_counts: RefCell<HashMap<i64, (i64, Option<Instant>)>>,
}

impl Plans {
    pub fn prepare(client: &SpiClient<'_>) -> spi::Result<Self> {
        let text = PgOid::BuiltIn(PgBuiltInOids::TEXTOID);
        let texts = PgOid::BuiltIn(PgBuiltInOids::TEXTARRAYOID);
        let int8 = PgOid::BuiltIn(PgBuiltInOids::INT8OID);
        let int4 = PgOid::BuiltIn(PgBuiltInOids::INT4OID);
        Ok(Plans {
            lock_row: client.prepare_mut(LOCK_ROW, &[text])?.keep(),
            row_exists: client.prepare(ROW_EXISTS, &[text])?.keep(),
            set_max_id: client.prepare_mut(SET_MAX_ID, &[text, int8])?.keep(),
            tag_load: client.prepare(TAG_LOAD, &[text])?.keep(),
            verify: client.prepare(VERIFY, &[texts])?.keep(),
            key_read: client.prepare(KEY_READ, &[text])?.keep(),
            reservations: [
                ReservationPlans::prepare(client, RESERVATION_TABLES[0])?,
                ReservationPlans::prepare(client, RESERVATION_TABLES[1])?,
                ReservationPlans::prepare(client, RESERVATION_TABLES[2])?,
            ],
            template_read: client.prepare(TEMPLATE_READ, &[text])?.keep(),
            order_lock: client.prepare_mut(ORDER_LOCK, &[text])?.keep(),
            order_exists: client.prepare(ORDER_EXISTS, &[text])?.keep(),
            counter_read: client.prepare(COUNTER_READ, &[text, text])?.keep(),
            counter_set: client.prepare_mut(COUNTER_SET, &[text, text, int8, int8])?.keep(),
            key_counter_read: client.prepare(KEY_COUNTER_READ, &[text, text, text])?.keep(),
            key_counter_set: client.prepare_mut(KEY_COUNTER_SET, &[text, text, text, int8, int8])?.keep(),
            key_counter_any: client.prepare(KEY_COUNTER_ANY, &[text, text])?.keep(),
            key_tag_row: client.prepare_mut(KEY_TAG_ROW, &[text])?.keep(),
            key_row: client.prepare_mut(KEY_ROW, &[text, text])?.keep(),
            key_step: client.prepare(KEY_STEP, &[text, text])?.keep(),
            key_insert: client.prepare_mut(KEY_INSERT, &[text, text, int8, int4])?.keep(),
            keys_insert: client.prepare_mut(KEYS_INSERT, &[text, texts, int8, int4])?.keep(),
            key_update: client.prepare_mut(KEY_UPDATE, &[text, text, int8, int4])?.keep(),
            keys_of_owner: client.prepare(KEYS_OF_OWNER, &[int8])?.keep(),
            floor_lock: client.prepare_mut(FLOOR_LOCK, &[text, int8])?.keep(),
            floor_set: client.prepare_mut(FLOOR_SET, &[text, int8])?.keep(),
            key_counts: RefCell::new(HashMap::new()),
        })
    }

    /// The tag's configured step, identity and owner, if it exists (committed), and whether it is
    /// gapless (then the segment generators refuse it).
    /// For a keyed counter (`name` is a tag and a key), the step is the one the key last
    /// reserved (1 for a new key): a key's step adapts to its own rate, from 1 up.
    pub fn tag_load(&self, client: &SpiClient<'_>, name: &str) -> spi::Result<Option<Loaded>> {
        let (tag, key) = split_name(name);
        let Some(mut row) = self.tag_row(client, tag)? else { return Ok(None) };
        let Some(key) = key else { return Ok(Some(row)) };
        let t = client.select(&self.key_step, Some(1), &[tag.into(), key.into()])?;
        let stored = if t.is_empty() { None } else { t.first().get_one::<i32>()? };
        // a new key's first segment: two values, so that its first draw does not ask for the
        // next segment at once (a new key drawn once, as most are in a burst of new keys, then
        // costs no second reservation, whose commit would wait for the flush; see `Lease`)
        row.step = stored.map_or(NEW_KEY_STEP, i64::from).max(1);
        Ok(Some(row))
    }

    fn tag_row(&self, client: &SpiClient<'_>, tag: &str) -> spi::Result<Option<Loaded>> {
        let t = client.select(&self.tag_load, Some(1), &[tag.into()])?;
        if t.is_empty() {
            return Ok(None);
        }
        let row = t.first();
        let (step, rel, id) = row.get_three::<i32, i64, i64>()?;
        let gapless = row.get::<bool>(4)?.unwrap_or(false);
        let owner = row.get::<i64>(5)?.unwrap_or(0) as u32;
        let public = row.get::<bool>(6)?.unwrap_or(false);
        let drawers = oids(row.get::<Vec<Option<i64>>>(7)?);
        Ok(Some(Loaded { step: step.unwrap_or(1) as i64, ident: ident_of(rel, id), gapless, owner, public, drawers }))
    }

    /// The identities of the named tags that exist.
    /// (Of a keyed counter, its tag's.)
    pub fn verify(&self, client: &SpiClient<'_>, names: Vec<String>) -> spi::Result<Vec<(String, Ident)>> {
        let names: Vec<String> = names.iter().map(|n| split_name(n).0.to_string()).collect();
        let t = client.select(&self.verify, None, &[names.into()])?;
        let mut out = vec![];
        for row in t {
            let (name, rel, id) = (row.get::<String>(1)?, row.get::<i64>(2)?, row.get::<i64>(3)?);
            out.push((name.unwrap_or_default(), ident_of(rel, id)));
        }
        Ok(out)
    }

    /// The template, time zone and opaque key of the tag whose row is `expect`.
    pub fn template_read(&self, client: &SpiClient<'_>, tag: &str, expect: Ident) -> spi::Result<TemplateRead> {
        match self.tag_load(client, tag)? {
            Some(l) if l.ident == expect => {}
            _ => return Ok(TemplateRead::Stale),
        }
        // a key's counter has its tag's template
        let tag = split_name(tag).0;
        let t = client.select(&self.template_read, Some(1), &[tag.into()])?;
        if t.is_empty() {
            return Ok(TemplateRead::Missing);
        }
        let (text, zone, key) = t.first().get_three::<String, String, Vec<u8>>()?;
        Ok(TemplateRead::Found {
            text: text.unwrap_or_default(),
            zone: zone.unwrap_or_default(),
            key: key.and_then(|b| Key::from_bytes(&b)),
        })
    }

    /// Reserve the next block of order-number counter values for `tag`, whose row is `expect`
    /// and whose template and zone are `template`, for period `want` or (never earlier than) the latest
    /// period its template's unit has used. Counters are kept per unit: a period a template
    /// of that unit used is continued above its highest number, however the template changed
    /// in between. Never blocks on a row lock. For a key's counter (`name` is a tag and a
    /// key) the counters are the key's, in `seqgen.key_order_counter`.
    pub fn order_block(
        &self,
        client: &mut SpiClient<'_>,
        name: &str,
        expect: Ident,
        template: (&str, &str),
        want: i64,
        size: impl FnOnce(i64) -> i64,
    ) -> spi::Result<OrderReserve> {
        let (tag, key) = split_name(name);
        let row = client.update(&self.order_lock, Some(1), &[tag.into()])?;
        if row.is_empty() {
            let exists = client.select(&self.order_exists, Some(1), &[tag.into()])?;
            return Ok(if exists.is_empty() { OrderReserve::Missing } else { OrderReserve::Locked });
        }
        let row = row.first();
        let current: String = row.get(1)?.unwrap_or_default();
        let step: i32 = row.get(2)?.unwrap_or(1);
        let zone: String = row.get(5)?.unwrap_or_default();
        let owner = row.get::<i64>(6)?.unwrap_or(0);
        if ident_of(row.get(3)?, row.get(4)?) != expect || (current.as_str(), zone.as_str()) != template {
            return Ok(OrderReserve::Stale);
        }
        let (Ok(t), Ok(tz)) = (template::parse(&current), template::parse_time_zone(&zone)) else {
            return Ok(OrderReserve::Missing);
        };
        if t.has_key() != key.is_some() {
            // the template changed between keyed and plain: callers reload it
            return Ok(OrderReserve::Stale);
        }
        let unit = template::unit_name(t.unit());
        let stored = match key {
            None => client.select(&self.counter_read, Some(1), &[tag.into(), unit.into()])?,
            Some(k) => client.select(&self.key_counter_read, Some(1), &[tag.into(), k.into(), unit.into()])?,
        };
        if let (true, Some(k)) = (stored.is_empty(), key) {
            // a key new to this tag's order numbers (not one of another unit's, after a template
            // change): counted against the owner's bound
            let known = !client.select(&self.key_counter_any, Some(1), &[tag.into(), k.into()])?.is_empty();
            if !known && !self.take_key(client, owner)? {
                return Ok(OrderReserve::KeyLimit);
            }
        }
        let stored = if stored.is_empty() {
            (i64::MIN, 0)
        } else {
            let (k, m) = stored.first().get_two::<i64, i64>()?;
            (k.unwrap_or(i64::MIN), m.unwrap_or(0))
        };
        // At most a tenth of the period's capacity per block: what a period change leaves
        // unused in a prefetched block is lost to that period, so this bounds the loss.
        let block = size(step as i64).min((t.capacity() / 10).max(1));
        let clock = t.locate(tz, crate::plumbing::shmem::now_ms()).key;
        let after = |key| t.unit().and_then(|u| template::next_key(key, u));
        match counter_block(stored, want, clock, block, t.capacity(), after) {
            Ok(block) => {
                let (period, end) = (block.period.into(), block.end.into());
                match key {
                    None => client.update(&self.counter_set, None, &[tag.into(), unit.into(), period, end])?,
                    Some(k) => {
                        client.update(&self.key_counter_set, None, &[tag.into(), k.into(), unit.into(), period, end])?
                    }
                };
                Ok(OrderReserve::Done(block))
            }
            Err(o) => Ok(OrderReserve::Overflow(o.period)),
        }
    }

    /// The persisted high-water ID of reservation table `which` (an index into
    /// [`RESERVATION_TABLES`]; every ID issued before is below it).
    pub fn reservation_read(&self, client: &SpiClient<'_>, which: usize) -> spi::Result<i64> {
        let t = client.select(&self.reservations[which].read, Some(1), &[])?;
        Ok(if t.is_empty() { 0 } else { t.first().get_one::<i64>()?.unwrap_or(0) })
    }

    /// Persist a high-water ID in reservation table `which` (never lowers it). Returns the
    /// value now stored (above `id` when someone else wrote a higher one), or `None`: the row
    /// is locked by another transaction.
    pub fn reservation_write(&self, client: &mut SpiClient<'_>, which: usize, id: i64) -> spi::Result<Option<i64>> {
        let p = &self.reservations[which];
        let stored = |t: SpiTupleTable<'_>| -> spi::Result<Option<i64>> {
            Ok(if t.is_empty() { None } else { t.first().get_one::<i64>()? })
        };
        if !client.update(&p.lock, Some(1), &[])?.is_empty() {
            return stored(client.update(&p.update, None, &[id.into()])?);
        }
        // no row we could lock: none yet, or one locked by someone else
        stored(client.update(&p.insert, None, &[id.into()])?)
    }

    /// Reserve values for `tag` (whose row must be `expect`) inside the current (worker)
    /// transaction. `size` is given the tag's configured step and returns how many values to
    /// reserve. Never blocks on a row lock.
    pub fn reserve_for(
        &self,
        client: &mut SpiClient<'_>,
        tag: &str,
        expect: Ident,
        size: impl FnOnce(i64) -> i64,
    ) -> spi::Result<Reserve> {
        if let (tag, Some(key)) = split_name(tag) {
            return Ok(self.reserve_for_key(client, tag, key, expect, size, None, None)?.0);
        }
        let row = client.update(&self.lock_row, Some(1), &[tag.into()])?;
        if row.is_empty() {
            let exists = client.select(&self.row_exists, Some(1), &[tag.into()])?;
            return Ok(if exists.is_empty() { Reserve::Missing } else { Reserve::Locked });
        }
        let row = row.first();
        if ident_of(row.get(5)?, row.get(6)?) != expect {
            return Ok(Reserve::Stale);
        }
        let (max_id, step, opaque_from) = (row.get::<i64>(1)?, row.get::<i32>(2)?, row.get::<i64>(3)?);
        let node_bits = row.get::<i32>(4)?.unwrap_or(0).clamp(0, MAX_NODE_BITS as i32) as u32;
        let (max_id, step) = (max_id.unwrap_or(0), step.unwrap_or(1) as i64);
        let opaque = match opaque_from {
            Some(from) => match self.key(client, tag)? {
                Some(k) => Some((from, k)),
                // an opaque tag without its key: refuse rather than hand out plain values
                None => return Ok(Reserve::Missing),
            },
            None => None,
        };
        // an interleaved counter is shifted left by its node bits: keep it below i64::MAX >> bits
        let Ok(range) = reserve_up_to(max_id, size(step).max(1), i64::MAX >> node_bits) else {
            return Ok(Reserve::Exhausted);
        };
        client.update(&self.set_max_id, None, &[tag.into(), range.end.into()])?;
        Ok(Reserve::Done { range, step, opaque, node_bits })
    }

    /// A tag's opaque key, if it has one.
    pub fn key(&self, client: &SpiClient<'_>, tag: &str) -> spi::Result<Option<Key>> {
        let t = client.select(&self.key_read, Some(1), &[tag.into()])?;
        if t.is_empty() {
            return Ok(None);
        }
        Ok(t.first().get_one::<Vec<u8>>()?.and_then(|b| Key::from_bytes(&b)))
    }
}

/// Run `sql` with `args` in the caller's session and read its first row with `read`; `None`
/// when it returns no row. (For the functions that read or lock one catalog row.) `locks`:
/// the statement locks rows (`FOR UPDATE`); otherwise it runs read-only, so it needs no
/// transaction id and works on a hot standby.
pub fn first_row<R>(
    sql: &str,
    args: &[pgrx::datum::DatumWithOid<'_>],
    locks: bool,
    read: impl FnOnce(&SpiTupleTable<'_>) -> spi::Result<R>,
) -> crate::plumbing::error::Result<Option<R>> {
    Spi::connect_mut(|c| {
        let t = if locks { c.update(sql, Some(1), args)? } else { c.select(sql, Some(1), args)? };
        if t.is_empty() {
            return Ok(None);
        }
        read(&t.first()).map(Some)
    })
    .map_err(|e| crate::plumbing::error::SeqgenError::Internal(e.to_string()))
}

/// A segment tag's segments carry in their `period` field how their counter values become
/// IDs, as decided when they were reserved: bit 0 set for an opaque tag (a keyed
/// permutation), bits 8 to 15 the node bits of a node-interleaved tag.
pub const MODE_OPAQUE: i64 = 1;
/// The segment belongs to a tag without node bits in a Citus database: refused when drawn
/// (see `plumbing::node`).
pub const MODE_NO_NODE: i64 = 2;

/// `citus`: the database is a Citus node (plain and opaque tags are refused there).
pub fn mode(opaque: bool, node_bits: u32, citus: bool) -> i64 {
    let no_node = if citus && node_bits == 0 { MODE_NO_NODE } else { 0 };
    opaque as i64 | (node_bits as i64) << 8 | no_node
}

/// The library's version: the catalog must be at the same version.
pub const LIB_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Is the extension installed in the worker's database, and at the library's version?
pub enum CatalogState {
    Missing,
    /// Installed at another version (`ALTER EXTENSION pg_seqgen UPDATE` is due).
    OtherVersion(String),
    /// The extension is not installed in this database.
    Absent,
    /// Installed; the OID of `seqgen.alloc`.
    Ready(u32),
}

pub fn catalog_state(client: &SpiClient<'_>) -> spi::Result<CatalogState> {
    let t = client.select(
        "SELECT e.extversion::pg_catalog.text, pg_catalog.to_regclass('seqgen.alloc')::pg_catalog.oid::pg_catalog.int8 \
         FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'pg_seqgen'",
        Some(1),
        &[],
    )?;
    if t.is_empty() {
        return Ok(CatalogState::Absent);
    }
    let (version, oid) = t.first().get_two::<String, i64>()?;
    let version = version.unwrap_or_default();
    Ok(match oid {
        None => CatalogState::Missing,
        Some(_) if version != LIB_VERSION => CatalogState::OtherVersion(version),
        Some(oid) => CatalogState::Ready(oid as u32),
    })
}

/// Refuse (55000, with the hint to update) a call that reads or writes the catalog itself when
/// the catalog is at another version than the library (installed, the server restarted,
/// `ALTER EXTENSION pg_seqgen UPDATE` not run yet): its tables may lack what the library
/// reads, as draws are refused by the allocator. For SQL calls only, which no extension script
/// makes (during an update step, `extversion` is already that step's target version).
pub fn require_current() -> crate::plumbing::error::Result<()> {
    let version =
        Spi::connect(extension_version).map_err(|e| crate::plumbing::error::SeqgenError::Internal(e.to_string()))?;
    match version {
        Some(v) if v != LIB_VERSION => Err(crate::plumbing::error::SeqgenError::NeedsUpdate(v)),
        _ => Ok(()),
    }
}

/// The installed version of pg_seqgen in this database, if it is installed.
pub fn extension_version(client: &SpiClient<'_>) -> spi::Result<Option<String>> {
    let t = client.select(
        "SELECT e.extversion::pg_catalog.text FROM pg_catalog.pg_extension e \
         WHERE e.extname OPERATOR(pg_catalog.=) 'pg_seqgen'",
        Some(1),
        &[],
    )?;
    Ok(if t.is_empty() { None } else { t.first().get_one::<String>()? })
}

/// The persisted high-water ID in reservation table `which`, whatever the catalog's version
/// (0 when the table or its row does not exist: 0.1.0 has no UUIDv7 table).
pub fn reservation_read_any(client: &SpiClient<'_>, which: usize) -> spi::Result<i64> {
    let table = RESERVATION_TABLES[which];
    let exists = client
        .select("SELECT pg_catalog.to_regclass($1) IS NOT NULL", Some(1), &[table.into()])?
        .first()
        .get_one::<bool>()?
        .unwrap_or(false);
    if !exists {
        return Ok(0);
    }
    // the table name is one of two constants, never input
    let t = client.select(&format!("SELECT pg_catalog.max(reserved_id) FROM {table}"), Some(1), &[])?;
    Ok(if t.is_empty() { 0 } else { t.first().get_one::<i64>()?.unwrap_or(0) })
}

/// The highest `reserved_id` of reservation table `which` (an index into
/// [`RESERVATION_TABLES`]) over every version of its row on disk, read without locking the
/// table: `None` when the table does not exist. For the start-up readers when the table is
/// locked (a prepared transaction holding `LOCK TABLE`, an interrupted `ALTER`): a value being
/// written by a transaction still in progress, or a version already replaced, counts too.
/// Reservations only grow, so the maximum over those versions is at least the committed
/// value, and raising the generators above it is safe. Versions written by a transaction that
/// rolled back (or was in progress at a crash) do not count: a rolled-back raise changes
/// nothing (counted, a raise of an hour rolled back refused every call for an hour after the
/// next restart; the fuzzer found it). Runs in a transaction.
pub fn reservation_read_unlocked(which: usize) -> Option<i64> {
    let name = RESERVATION_TABLES[which].strip_prefix("seqgen.").expect("seqgen.<table>");
    let name = std::ffi::CString::new(name).expect("no NUL");
    unsafe {
        let nsp = pg_sys::get_namespace_oid(c"seqgen".as_ptr(), true);
        if nsp == pg_sys::InvalidOid {
            return None;
        }
        let relid = pg_sys::get_relname_relid(name.as_ptr(), nsp);
        if relid == pg_sys::InvalidOid {
            return None;
        }
        let attno = pg_sys::get_attnum(relid, c"reserved_id".as_ptr());
        // the relation cache entry, not the relation lock (relation_open would wait for it)
        let rel = pg_sys::RelationIdGetRelation(relid);
        if rel.is_null() || attno < 1 {
            return None;
        }
        let desc = (*rel).rd_att;
        let natts = (*desc).natts as usize;
        let mut values = vec![pg_sys::Datum::from(0); natts];
        let mut nulls = vec![true; natts];
        let flags = pg_sys::ScanOptions::SO_TYPE_SEQSCAN | pg_sys::ScanOptions::SO_ALLOW_PAGEMODE;
        let scan = pg_sys::heap_beginscan(
            rel,
            &raw mut pg_sys::SnapshotAnyData,
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            flags,
        );
        let mut max = 0i64;
        loop {
            let tuple = pg_sys::heap_getnext(scan, pg_sys::ScanDirection::ForwardScanDirection);
            if tuple.is_null() {
                break;
            }
            if !inserter_may_commit((*tuple).t_data) {
                continue;
            }
            pg_sys::heap_deform_tuple(tuple, desc, values.as_mut_ptr(), nulls.as_mut_ptr());
            let i = attno as usize - 1;
            if i < natts && !nulls[i] {
                max = max.max(values[i].value() as i64);
            }
        }
        pg_sys::heap_endscan(scan);
        pg_sys::RelationClose(rel);
        Some(max)
    }
}

/// Did (or may) the transaction that wrote this tuple version commit? Hint bits first (a
/// frozen tuple's xmin may be older than the commit log), then in progress (a prepared
/// transaction is), then the commit log; anything else rolled back or crashed.
unsafe fn inserter_may_commit(t: pg_sys::HeapTupleHeader) -> bool {
    const COMMITTED: u16 = pg_sys::HEAP_XMIN_COMMITTED as u16;
    const INVALID: u16 = pg_sys::HEAP_XMIN_INVALID as u16;
    let mask = (*t).t_infomask;
    if mask & COMMITTED != 0 {
        return true; // committed, or frozen (both bits)
    }
    if mask & INVALID != 0 {
        return false;
    }
    let xmin = (*t).t_choice.t_heap.t_xmin;
    pg_sys::TransactionIdIsCurrentTransactionId(xmin)
        || pg_sys::TransactionIdIsInProgress(xmin)
        || pg_sys::TransactionIdDidCommit(xmin)
}
