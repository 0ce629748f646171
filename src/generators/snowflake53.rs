//! JavaScript-safe snowflake IDs: `seqgen_snowflake53()`, `seqgen_snowflake53_decode()`,
//! `seqgen_snowflake53_at()`, `seqgen_snowflake53_status()`, `seqgen_snowflake53_rewind()`.
//!
//! A JavaScript number holds integers up to 2^53 - 1 exactly; a 64-bit snowflake sent to a web
//! front end as a number comes back changed. These IDs are 41 bits of milliseconds since
//! `seqgen.snowflake_epoch` (69 years), 4 bits of `seqgen.node_id` (16 servers) and 8 bits of
//! sequence (256 IDs per millisecond and server), so every one is at most 2^53 - 1. They come
//! from a third clock-ordered generator ([`Kind::Snowflake53`]) with the guarantees of
//! `seqgen_snowflake()`: one compare-and-swap word per server, the same clock policy, a
//! reservation persisted per database (`seqgen.snowflake53`).

use pgrx::datum::TimestampWithTimeZone;
use pgrx::prelude::*;

use crate::generators::snowflake::{self, Kind};
use crate::plumbing::error::OrRaise;

#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_snowflake53() -> i64 {
    crate::plumbing::wait::begin_call();
    snowflake::next(Kind::Snowflake53).or_raise()
}

#[pg_extern(stable, parallel_safe)]
fn seqgen_snowflake53_decode(
    id: i64,
) -> TableIterator<'static, (name!(ts, TimestampWithTimeZone), name!(node_id, i32), name!(sequence, i32))> {
    TableIterator::once(snowflake::decode(Kind::Snowflake53, id).or_raise())
}

/// The lowest 53-bit snowflake of the millisecond `ts` (node 0, sequence 0), for range
/// queries and partition bounds. STABLE: it depends on `seqgen.snowflake_epoch`.
#[pg_extern(stable, strict, parallel_safe)]
fn seqgen_snowflake53_at(ts: TimestampWithTimeZone) -> i64 {
    snowflake::id_at(Kind::Snowflake53, ts).or_raise()
}

#[pg_extern(volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
fn seqgen_snowflake53_status() -> TableIterator<
    'static,
    (
        name!(node_id, i32),
        name!(last_ts, Option<TimestampWithTimeZone>),
        name!(last_sequence, i64),
        name!(reserved_until, Option<TimestampWithTimeZone>),
        name!(lag_ms, i64),
        name!(waits, i64),
        name!(sequence_waits, i64),
        name!(borrows, i64),
        name!(refusals, i64),
    ),
> {
    let (a, b, c, d, e, f, g, i) = snowflake::status_row(Kind::Snowflake53);
    let node = snowflake::status_node(Kind::Snowflake53.layout());
    TableIterator::once((node, a, b, c, d, e, f, g, i))
}

/// Raise the 53-bit snowflake generator at once so that every later ID is above `min_id`, as
/// `seqgen_snowflake_advance` does for snowflakes (the failover runbook's call for this
/// generator; it never lowers it, and refuses a floor further ahead of the clock than
/// `seqgen.snowflake_max_borrow` unless `force`).
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_snowflake53_advance(min_id: Option<i64>, force: default!(Option<bool>, false)) -> i64 {
    let force = crate::plumbing::error::required(force, "force");
    let min_id = crate::plumbing::error::required(min_id, "min_id");
    crate::plumbing::wait::begin_call();
    snowflake::advance(Kind::Snowflake53, min_id, force).or_raise()
}

/// The way back from a 53-bit floor accepted by mistake, as `seqgen_snowflake_rewind`.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_snowflake53_rewind(to_id: Option<i64>) -> i64 {
    snowflake::rewind(Kind::Snowflake53, crate::plumbing::error::required(to_id, "to_id")).or_raise()
}
