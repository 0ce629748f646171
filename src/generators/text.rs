//! Sortable text for IDs (`seqgen_core::text`): any bigint ID (a tag's, a snowflake) and any
//! uuid (a UUIDv7 becomes a ULID) as fixed-width Crockford base32 whose text order is the
//! numeric order, and back. Plain functions of their argument, for column DEFAULTs of `text`
//! columns (`DEFAULT seqgen_encode(seqgen_next('order'))`) and for reading IDs back.

use crate::plumbing::error::{OrRaise, SeqgenError};
use pgrx::prelude::*;
use seqgen_core::text;

/// The text of `value` (0 or more) in `width` characters of Crockford base32 (13 by default,
/// enough for every bigint; 11 for a 53-bit snowflake), with leading zeros: of two values, the
/// smaller has the smaller text.
#[pg_extern(immutable, strict, parallel_safe)]
fn seqgen_encode(value: i64, width: default!(i32, 13)) -> String {
    text::encode_i64(value, width.into()).map_err(SeqgenError::from).or_raise()
}

/// The bigint whose text `id` is (1 to 13 characters, either case).
#[pg_extern(immutable, strict, parallel_safe)]
fn seqgen_decode(id: &str) -> i64 {
    text::decode_i64(id).map_err(SeqgenError::from).or_raise()
}

/// The 26 characters of Crockford base32 of a uuid's 128 bits: for a UUIDv7, a ULID with the
/// same millisecond. Of two uuids, the smaller has the smaller text.
#[pg_extern(immutable, strict, parallel_safe)]
fn seqgen_encode_uuid(value: pgrx::Uuid) -> String {
    text::encode_u128(u128::from_be_bytes(*value.as_bytes()))
}

/// The uuid whose text `id` is (26 characters, either case: a ULID).
#[pg_extern(immutable, strict, parallel_safe)]
fn seqgen_decode_uuid(id: &str) -> pgrx::Uuid {
    let v = text::decode_u128(id).map_err(SeqgenError::from).or_raise();
    pgrx::Uuid::from_bytes(v.to_be_bytes())
}

/// A bigint ID with its type: `prefix`, `_` and the 13 lower-case characters of its text
/// (`seqgen_encode_typed('inv', 31)` is `inv_000000000000z`).
#[pg_extern(immutable, strict, parallel_safe)]
fn seqgen_encode_typed(prefix: &str, value: i64) -> String {
    text::encode_typed_i64(prefix, value).map_err(SeqgenError::from).or_raise()
}

/// The bigint of a typed ID, which must be of type `prefix` (22023 otherwise).
#[pg_extern(immutable, strict, parallel_safe)]
fn seqgen_decode_typed(prefix: &str, id: &str) -> i64 {
    text::decode_typed_i64(prefix, id).map_err(SeqgenError::from).or_raise()
}

/// A uuid as a TypeID: `prefix`, `_` and the 26 lower-case characters of its ULID
/// (`user_01h455vb4pex5vsknk084sn02q`).
#[pg_extern(immutable, strict, parallel_safe)]
fn seqgen_encode_typeid(prefix: &str, value: pgrx::Uuid) -> String {
    let v = u128::from_be_bytes(*value.as_bytes());
    text::encode_typeid(prefix, v).map_err(SeqgenError::from).or_raise()
}

/// The uuid of a TypeID, which must be of type `prefix` (22023 otherwise).
#[pg_extern(immutable, strict, parallel_safe)]
fn seqgen_decode_typeid(prefix: &str, id: &str) -> pgrx::Uuid {
    let v = text::decode_typeid(prefix, id).map_err(SeqgenError::from).or_raise();
    pgrx::Uuid::from_bytes(v.to_be_bytes())
}
