//! SQL against the catalog. Every statement is schema-qualified and takes its values as SPI
//! arguments; none is built by string formatting.

use pgrx::pg_sys::{PgBuiltInOids, PgOid};
use pgrx::prelude::*;
use pgrx::spi::{OwnedPreparedStatement, SpiClient, SpiTupleTable};
use seqgen_core::adaptive::{reserve_up_to, Reservation, MAX_NODE_BITS};
use seqgen_core::opaque::Key;
use seqgen_core::template::{self, counter_block, CounterBlock};

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
}

const LOCK_ROW: &str = "SELECT max_id, step, opaque_from, node_bits FROM seqgen.alloc \
     WHERE biz_tag OPERATOR(pg_catalog.=) $1 FOR UPDATE SKIP LOCKED";
const ROW_EXISTS: &str = "SELECT true FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1";
const KEY_READ: &str = "SELECT key FROM seqgen.opaque_key WHERE biz_tag OPERATOR(pg_catalog.=) $1";
const TAG_STEP: &str = "SELECT step FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1";
const SET_MAX_ID: &str = "UPDATE seqgen.alloc SET max_id = $2, update_time = pg_catalog.now() \
     WHERE biz_tag OPERATOR(pg_catalog.=) $1";

const SNOWFLAKE_READ: &str = "SELECT reserved_id FROM seqgen.snowflake";
const SNOWFLAKE_WRITE: &str = "INSERT INTO seqgen.snowflake (singleton, reserved_id) VALUES (true, $1) \
     ON CONFLICT (singleton) DO UPDATE \
     SET reserved_id = GREATEST(seqgen.snowflake.reserved_id, EXCLUDED.reserved_id)";

const TEMPLATE_READ: &str = "SELECT t.template, t.time_zone, k.key FROM seqgen.template t \
     LEFT JOIN seqgen.opaque_key k ON k.biz_tag OPERATOR(pg_catalog.=) t.biz_tag \
     WHERE t.biz_tag OPERATOR(pg_catalog.=) $1";
const ORDER_LOCK: &str = "SELECT t.period_key, t.period_max, a.step, t.template \
     FROM seqgen.template t JOIN seqgen.alloc a ON a.biz_tag OPERATOR(pg_catalog.=) t.biz_tag \
     WHERE t.biz_tag OPERATOR(pg_catalog.=) $1 FOR UPDATE OF t SKIP LOCKED";
const ORDER_EXISTS: &str = "SELECT true FROM seqgen.template WHERE biz_tag OPERATOR(pg_catalog.=) $1";
const ORDER_SET: &str = "UPDATE seqgen.template SET period_key = $2, period_max = $3 \
     WHERE biz_tag OPERATOR(pg_catalog.=) $1";

/// What reserving a block of order-number counter values came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderReserve {
    Done(CounterBlock),
    /// The tag has no template.
    Missing,
    Locked,
    /// The period's counter is full.
    Overflow(i64),
}

/// The worker's statements, planned once and kept across transactions (SPI_keepplan).
pub struct Plans {
    lock_row: OwnedPreparedStatement,
    row_exists: OwnedPreparedStatement,
    set_max_id: OwnedPreparedStatement,
    tag_step: OwnedPreparedStatement,
    key_read: OwnedPreparedStatement,
    snowflake_read: OwnedPreparedStatement,
    snowflake_write: OwnedPreparedStatement,
    template_read: OwnedPreparedStatement,
    order_lock: OwnedPreparedStatement,
    order_exists: OwnedPreparedStatement,
    order_set: OwnedPreparedStatement,
}

impl Plans {
    pub fn prepare(client: &SpiClient<'_>) -> spi::Result<Self> {
        let text = PgOid::BuiltIn(PgBuiltInOids::TEXTOID);
        let int8 = PgOid::BuiltIn(PgBuiltInOids::INT8OID);
        Ok(Plans {
            lock_row: client.prepare_mut(LOCK_ROW, &[text])?.keep(),
            row_exists: client.prepare(ROW_EXISTS, &[text])?.keep(),
            set_max_id: client.prepare_mut(SET_MAX_ID, &[text, int8])?.keep(),
            tag_step: client.prepare(TAG_STEP, &[text])?.keep(),
            key_read: client.prepare(KEY_READ, &[text])?.keep(),
            snowflake_read: client.prepare(SNOWFLAKE_READ, &[])?.keep(),
            snowflake_write: client.prepare_mut(SNOWFLAKE_WRITE, &[int8])?.keep(),
            template_read: client.prepare(TEMPLATE_READ, &[text])?.keep(),
            order_lock: client.prepare_mut(ORDER_LOCK, &[text])?.keep(),
            order_exists: client.prepare(ORDER_EXISTS, &[text])?.keep(),
            order_set: client.prepare_mut(ORDER_SET, &[text, int8, int8])?.keep(),
        })
    }

    /// A tag's template and time zone, if it has one.
    /// A tag's template, time zone and opaque key, if it has a template.
    pub fn template_read(
        &self,
        client: &SpiClient<'_>,
        tag: &str,
    ) -> spi::Result<Option<(String, String, Option<Key>)>> {
        let t = client.select(&self.template_read, Some(1), &[tag.into()])?;
        if t.is_empty() {
            return Ok(None);
        }
        let (text, zone, key) = t.first().get_three::<String, String, Vec<u8>>()?;
        Ok(Some((text.unwrap_or_default(), zone.unwrap_or_default(), key.and_then(|b| Key::from_bytes(&b)))))
    }

    /// Reserve the next block of order-number counter values for `tag`, for period `want`
    /// or (never earlier than) the stored period. Never blocks on a row lock.
    pub fn order_block(
        &self,
        client: &mut SpiClient<'_>,
        tag: &str,
        want: i64,
        size: impl FnOnce(i64) -> i64,
    ) -> spi::Result<OrderReserve> {
        let row = client.update(&self.order_lock, Some(1), &[tag.into()])?;
        if row.is_empty() {
            let exists = client.select(&self.order_exists, Some(1), &[tag.into()])?;
            return Ok(if exists.is_empty() { OrderReserve::Missing } else { OrderReserve::Locked });
        }
        let row = row.first();
        let period: i64 = row.get(1)?.unwrap_or(i64::MIN);
        let max: i64 = row.get(2)?.unwrap_or(0);
        let step: i32 = row.get(3)?.unwrap_or(1);
        let text: String = row.get(4)?.unwrap_or_default();
        let Ok(t) = template::parse(&text) else {
            return Ok(OrderReserve::Missing);
        };
        // At most a tenth of the period's capacity per block: what a period change leaves
        // unused in a prefetched block is lost to that period, so this bounds the loss.
        let block = size(step as i64).min((t.capacity() / 10).max(1));
        match counter_block((period, max), want, block, t.capacity()) {
            Ok(block) => {
                client.update(&self.order_set, None, &[tag.into(), block.period.into(), block.end.into()])?;
                Ok(OrderReserve::Done(block))
            }
            Err(o) => Ok(OrderReserve::Overflow(o.period)),
        }
    }

    /// The configured step of `tag`, if it exists (committed).
    pub fn tag_step(&self, client: &SpiClient<'_>, tag: &str) -> spi::Result<Option<i64>> {
        let t = client.select(&self.tag_step, Some(1), &[tag.into()])?;
        if t.is_empty() {
            return Ok(None);
        }
        Ok(Some(t.first().get_one::<i32>()?.unwrap_or(1) as i64))
    }

    /// The persisted snowflake high-water ID (every ID issued before is below it).
    pub fn snowflake_read(&self, client: &SpiClient<'_>) -> spi::Result<i64> {
        let t = client.select(&self.snowflake_read, Some(1), &[])?;
        Ok(if t.is_empty() { 0 } else { t.first().get_one::<i64>()?.unwrap_or(0) })
    }

    /// Persist a snowflake high-water ID (never lowers it).
    pub fn snowflake_write(&self, client: &mut SpiClient<'_>, id: i64) -> spi::Result<()> {
        client.update(&self.snowflake_write, None, &[id.into()]).map(|_| ())
    }

    /// Reserve values for `tag` inside the current (worker) transaction. `size` is given the
    /// tag's configured step and returns how many values to reserve. Never blocks on a row
    /// lock.
    pub fn reserve_for(
        &self,
        client: &mut SpiClient<'_>,
        tag: &str,
        size: impl FnOnce(i64) -> i64,
    ) -> spi::Result<Reserve> {
        let row = client.update(&self.lock_row, Some(1), &[tag.into()])?;
        if row.is_empty() {
            let exists = client.select(&self.row_exists, Some(1), &[tag.into()])?;
            return Ok(if exists.is_empty() { Reserve::Missing } else { Reserve::Locked });
        }
        let row = row.first();
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
) -> crate::error::Result<Option<R>> {
    Spi::connect_mut(|c| {
        let t = if locks { c.update(sql, Some(1), args)? } else { c.select(sql, Some(1), args)? };
        if t.is_empty() {
            return Ok(None);
        }
        read(&t.first()).map(Some)
    })
    .map_err(|e| crate::error::SeqgenError::Internal(e.to_string()))
}

/// The OID of the catalog table in the current database, if the extension is installed.
pub fn catalog_oid(client: &SpiClient<'_>) -> spi::Result<Option<u32>> {
    let oid = client
        .select("SELECT pg_catalog.to_regclass('seqgen.alloc')::pg_catalog.oid", Some(1), &[])?
        .first()
        .get_one::<pg_sys::Oid>()?;
    Ok(oid.map(|o| o.to_u32()))
}
