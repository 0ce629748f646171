//! Opaque numbers: `seqgen_make_opaque`, `seqgen_reveal`, `seqgen_reveal_order_no`, and the
//! permutation of drawn values.
//!
//! A tag's key (256 bits from PostgreSQL's strong random source) lives in `seqgen.opaque_key`,
//! readable only by the extension's owner and roles it grants. The worker copies it into the
//! tag's shared-memory slot, so drawing IDs needs no table; the reveal functions read it from
//! the table with the caller's privileges, so ordinary roles are refused.

use pgrx::prelude::*;
use seqgen_core::opaque::{Domain, Key, KEY_BYTES};
use seqgen_core::template;

use crate::plumbing::catalog::first_row;
use crate::plumbing::error::{check_tag, OrRaise, Result, SeqgenError};
use crate::plumbing::guc;

/// The opaque ID for counter value `v` of a tag whose IDs are permuted above `from` with `key`.
#[inline]
pub fn permute_with(from: i64, key: &Key, v: i64) -> i64 {
    match Domain::ids_above(from) {
        Some(d) if d.contains(v as u64) => d.permute(key, 0, v as u64) as i64,
        // cannot happen: the worker reserves opaque values only above `from`
        _ => SeqgenError::Internal(format!("opaque value {v} outside its domain")).raise(),
    }
}

fn spi_err(e: pgrx::spi::Error) -> SeqgenError {
    SeqgenError::Internal(e.to_string())
}

/// 32 bytes from PostgreSQL's strong random source.
fn new_key() -> Result<Vec<u8>> {
    let mut buf = vec![0u8; KEY_BYTES];
    if !unsafe { pg_sys::pg_strong_random(buf.as_mut_ptr().cast(), KEY_BYTES) } {
        return Err(SeqgenError::Internal("could not generate a random key".into()));
    }
    Ok(buf)
}

/// Give `tag` a key if it has none (in the caller's transaction).
pub fn ensure_key(tag: &str) -> Result<()> {
    Spi::run_with_args(
        "INSERT INTO seqgen.opaque_key (biz_tag, key) VALUES ($1, $2) ON CONFLICT (biz_tag) DO NOTHING",
        &[tag.into(), new_key()?.into()],
    )
    .map_err(spi_err)
}

/// Make a tag's IDs opaque: once the calling transaction commits, every `seqgen_next` /
/// `seqgen_next_batch` value is a keyed permutation of its counter value into
/// (max_id, 2^63 - 1], above every ID issued in the clear before. For good (there is no way
/// back).
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_make_opaque(biz_tag: &str) {
    make_opaque(biz_tag).or_raise()
}

pub(crate) fn make_opaque(tag: &str) -> Result<()> {
    crate::generators::tags::change_tag(tag, || make_opaque_locked(tag))
}

fn make_opaque_locked(tag: &str) -> Result<()> {
    // Lock the row: the worker reserves with SKIP LOCKED, so what it reserves after this
    // commits sees opaque_from, and everything it reserved before is at most max_id.
    let row = first_row(
        "SELECT max_id, opaque_from, node_bits FROM seqgen.alloc \
         WHERE biz_tag OPERATOR(pg_catalog.=) $1 FOR UPDATE",
        &[tag.into()],
        true,
        |r| r.get_three::<i64, i64, i32>(),
    )?;
    let Some((max_id, opaque_from, node_bits)) = row else {
        return Err(SeqgenError::UnknownTag(tag.to_string()));
    };
    if node_bits.unwrap_or(0) > 0 {
        // each server would permute with its own key: their IDs could meet
        return Err(SeqgenError::Unsupported("opaque IDs cannot be combined with node bits".into()));
    }
    if opaque_from.is_some() {
        return Ok(()); // already opaque
    }
    let max_id = max_id.unwrap_or(0);
    if Domain::ids_above(max_id).is_none() {
        return Err(SeqgenError::InvalidArgument(format!(
            "tag \"{tag}\" has used more than half of the bigint range (max_id {max_id}); opaque IDs need the upper half free"
        )));
    }
    ensure_key(tag)?;
    Spi::run_with_args(
        "UPDATE seqgen.alloc SET opaque_from = max_id WHERE biz_tag OPERATOR(pg_catalog.=) $1",
        &[tag.into()],
    )
    .map_err(spi_err)?;
    // From the commit on, no plain value is handed out: what is left of the segments reserved
    // in the clear is skipped (a gap) and the next reservation is opaque.
    crate::plumbing::pending::at_commit(crate::plumbing::pending::Action::Retire(tag.to_string()));
    Ok(())
}

/// For support staff: the counter value behind an opaque ID (an ID issued before the tag
/// became opaque is its own counter value). Reads the key with the caller's privileges.
#[pg_extern(volatile, parallel_safe)]
fn seqgen_reveal(biz_tag: &str, id: i64) -> i64 {
    reveal(biz_tag, id).or_raise()
}

fn reveal(tag: &str, id: i64) -> Result<i64> {
    check_tag(tag)?;
    let row = crate::plumbing::session::bounded_lock_wait(|| {
        first_row(
            "SELECT a.opaque_from, k.key FROM seqgen.alloc a \
         LEFT JOIN seqgen.opaque_key k ON k.biz_tag OPERATOR(pg_catalog.=) a.biz_tag \
         WHERE a.biz_tag OPERATOR(pg_catalog.=) $1",
            &[tag.into()],
            false,
            |r| r.get_two::<i64, Vec<u8>>(),
        )
    })?;
    let Some((from, key)) = row else {
        return Err(SeqgenError::UnknownTag(tag.to_string()));
    };
    let Some(from) = from else {
        return Err(SeqgenError::NotOpaque(tag.to_string()));
    };
    if id <= from {
        return Ok(id);
    }
    let key = key.as_deref().and_then(Key::from_bytes).ok_or_else(|| SeqgenError::NotOpaque(tag.to_string()))?;
    let d = Domain::ids_above(from).ok_or_else(|| SeqgenError::Internal("opaque domain".into()))?;
    Ok(d.unpermute(&key, 0, id as u64) as i64)
}

/// For support staff: the counter value (within its period) behind an order number of a tag
/// whose template uses `{seq:N:opaque}` (or a plain one). The template must carry the full
/// date of its period.
#[pg_extern(volatile, parallel_safe)]
fn seqgen_reveal_order_no(biz_tag: &str, order_no: &str) -> i64 {
    reveal_order_no(biz_tag, order_no).or_raise()
}

fn reveal_order_no(tag: &str, number: &str) -> Result<i64> {
    check_tag(tag)?;
    let row = crate::plumbing::session::bounded_lock_wait(|| {
        first_row(
            "SELECT t.template, k.key FROM seqgen.template t \
         LEFT JOIN seqgen.opaque_key k ON k.biz_tag OPERATOR(pg_catalog.=) t.biz_tag \
         WHERE t.biz_tag OPERATOR(pg_catalog.=) $1",
            &[tag.into()],
            false,
            |r| r.get_two::<String, Vec<u8>>(),
        )
    })?;
    let Some((text, key)) = row else {
        return Err(SeqgenError::NoTemplate(tag.to_string()));
    };
    let t = template::parse(&text.unwrap_or_default()).map_err(|e| SeqgenError::InvalidArgument(e.to_string()))?;
    let key = key.as_deref().and_then(Key::from_bytes);
    let node = guc::NODE_ID.get().max(0) as u32;
    t.reveal(number, node, tag, key).map(|(_, counter)| counter as i64).ok_or_else(|| {
        SeqgenError::InvalidArgument(format!(
            "\"{number}\" does not match the template of tag \"{tag}\" (or the template lacks the full date of its period)"
        ))
    })
}
