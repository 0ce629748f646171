//! Server-wide monotonic UUIDv7: `seqgen_uuidv7()`, `seqgen_uuidv7_at()`,
//! `seqgen_uuidv7_decode()`, `seqgen_uuidv7_status()`.
//!
//! The layout and its properties are `seqgen_core::uuid`. `(unix ms, counter)` comes from the
//! server's second clock-ordered generator ([`Kind::Uuid`]: one compare-and-swap word in shared
//! memory, the snowflake clock policy, a reservation the worker persists in `seqgen.uuidv7`),
//! so every UUID the server issues is above every one it issued before, from any session and
//! across restarts. The low 53 bits come from a per-backend ChaCha12 generator seeded from
//! `pg_strong_random()`.

use std::cell::RefCell;

use pgrx::datum::{TimestampWithTimeZone, Uuid};
use pgrx::prelude::*;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha12Rng;
use seqgen_core::uuid::{self as layout, COUNTER_BITS};

use crate::generators::snowflake::{self, iso, status_row, to_timestamptz, unix_ms_of, Kind};
use crate::plumbing::error::{required, OrRaise, Result, SeqgenError};

thread_local! {
    /// This backend's CSPRNG, seeded on first use (never in the postmaster, so no two
    /// backends share a stream).
    static RNG: RefCell<Option<ChaCha12Rng>> = const { RefCell::new(None) };
}

fn random_u64() -> u64 {
    RNG.with(|r| {
        let mut r = r.borrow_mut();
        r.get_or_insert_with(|| {
            let mut seed = [0u8; 32];
            // SAFETY: a valid buffer of the length given.
            let ok = unsafe { pg_sys::pg_strong_random(seed.as_mut_ptr().cast(), seed.len()) };
            if !ok {
                error!("pg_seqgen: pg_strong_random() failed to seed the UUID generator");
            }
            ChaCha12Rng::from_seed(seed)
        })
        .next_u64()
    })
}

#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_uuidv7() -> Uuid {
    crate::plumbing::wait::begin_call();
    next().or_raise()
}

/// The next UUID: one compare-and-swap, one clock read, one ChaCha12 word.
#[inline]
pub fn next() -> Result<Uuid> {
    let id = snowflake::next(Kind::Uuid)?;
    Ok(Uuid::from_bytes(layout::compose_position(id, random_u64())))
}

/// The lowest version 7 UUID of the millisecond `ts`, for `WHERE id >= seqgen_uuidv7_at(...)`
/// and partition bounds. IMMUTABLE: the UUID layout has no settings.
#[pg_extern(immutable, strict, parallel_safe)]
fn seqgen_uuidv7_at(ts: TimestampWithTimeZone) -> Uuid {
    uuid_at(ts).or_raise()
}

fn uuid_at(ts: TimestampWithTimeZone) -> Result<Uuid> {
    let ms = unix_ms_of(ts)?;
    layout::floor(ms).map(Uuid::from_bytes).ok_or_else(|| {
        SeqgenError::DatetimeOutOfRange(format!(
            "{} is outside the 48-bit millisecond range of a version 7 UUID (1970 to 10889)",
            iso(ms)
        ))
    })
}

/// A version 7 UUID in the generator's units, `ms << 21 | counter` (22023 for another version,
/// or a millisecond past the generator's last, in 2109).
fn generator_id(id: Uuid) -> Result<i64> {
    let bytes: [u8; 16] = *id;
    let d = layout::decode(&bytes).map_err(|e| SeqgenError::InvalidArgument(format!("{id} is {e}")))?;
    if d.unix_ms >= 1 << layout::GENERATOR_TIME_BITS {
        return Err(SeqgenError::InvalidArgument(format!(
            "{id} is from {}, after 2109, the last millisecond of this generator",
            iso(d.unix_ms)
        )));
    }
    Ok(d.unix_ms << COUNTER_BITS | d.counter as i64)
}

/// The lowest UUID of a generator position (its random bits zero).
fn uuid_of(id: i64) -> Uuid {
    Uuid::from_bytes(layout::compose_position(id, 0))
}

/// Raise the UUIDv7 generator at once so that every later UUID is above `min_id`, as
/// `seqgen_snowflake_advance` does for snowflakes: the failover runbook's call after the
/// promotion of an asynchronous standby (give it the highest UUID the old primary may have
/// issued, or `seqgen_uuidv7_at` of a moment after the failover). Never lowers the generator;
/// a floor further ahead of the clock than `seqgen.snowflake_max_borrow` is refused unless
/// `force`. Returns the generator's position, as the lowest UUID of its millisecond and counter.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_uuidv7_advance(min_id: Option<Uuid>, force: default!(Option<bool>, false)) -> Uuid {
    let force = required(force, "force");
    let min_id = generator_id(required(min_id, "min_id")).or_raise();
    crate::plumbing::wait::begin_call();
    uuid_of(snowflake::advance(Kind::Uuid, min_id, force).or_raise())
}

/// The way back from a UUIDv7 floor accepted by mistake, as `seqgen_snowflake_rewind`: lowers
/// this database's persisted reservation to `to_id` (taking effect at the next restart).
/// Superusers only. Returns the reservation now stored, as the lowest UUID of its position.
#[pg_extern(volatile, parallel_unsafe, name = "seqgen_uuidv7_rewind")]
fn seqgen_uuidv7_rewind_uuid(to_id: Option<Uuid>) -> Uuid {
    let to_id = generator_id(required(to_id, "to_id")).or_raise();
    uuid_of(snowflake::rewind(Kind::Uuid, to_id).or_raise())
}

/// The timestamp and counter of a version 7 UUID (22023 for other versions and variants).
#[pg_extern(immutable, strict, parallel_safe)]
fn seqgen_uuidv7_decode(id: Uuid) -> TableIterator<'static, (name!(ts, TimestampWithTimeZone), name!(counter, i32))> {
    let bytes: [u8; 16] = *id;
    let d =
        layout::decode(&bytes).map_err(|e| SeqgenError::InvalidArgument(format!("cannot decode {id}: {e}"))).or_raise();
    TableIterator::once((to_timestamptz(d.unix_ms), d.counter as i32))
}

#[pg_extern(volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
fn seqgen_uuidv7_status() -> TableIterator<
    'static,
    (
        name!(last_ts, Option<TimestampWithTimeZone>),
        name!(last_counter, i64),
        name!(reserved_until, Option<TimestampWithTimeZone>),
        name!(lag_ms, i64),
        name!(waits, i64),
        name!(counter_waits, i64),
        name!(borrows, i64),
        name!(refusals, i64),
    ),
> {
    TableIterator::once(status_row(Kind::Uuid))
}
