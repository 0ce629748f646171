//! Short codes (`seqgen_core::code`): `seqgen_next_code`, `seqgen_reveal_code` and
//! `seqgen_code_is_valid`.
//!
//! An opaque tag's counter values above its `opaque_from` are numbered from 0; a short code
//! is the keyed permutation of that number among all codes of its length, with a check
//! character. A counter value is drawn once, as an ID (`seqgen_next`) or as a code, so codes
//! are never repeated; a tag's codes of a length run out after `32^(length - 1)` counter values,
//! and the draw after that is refused.

use pgrx::prelude::*;
use seqgen_core::code;
use seqgen_core::text::TextIdError;

use crate::plumbing::error::{check_tag, OrRaise, Result, SeqgenError};

/// The next short code of an opaque tag: `length` characters (4 to 13, 8 by default) of
/// Crockford base32, the last a check character.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_next_code(biz_tag: &str, length: default!(i32, 8)) -> String {
    crate::plumbing::wait::begin_call();
    next_code(biz_tag, length.into()).or_raise()
}

fn node_bits(tag: &str) -> SeqgenError {
    SeqgenError::Unsupported(format!("short codes are not supported for tag \"{tag}\", which has node bits"))
}

fn next_code(tag: &str, length: i64) -> Result<String> {
    // bad input is refused before a counter value is drawn
    code::check_length(length)?;
    let (value, presenter) = crate::generators::segment::next_counter(tag)?;
    let Some((from, key)) = presenter.and_then(|p| p.opaque_key()) else {
        return Err(SeqgenError::NotOpaque(tag.to_string()));
    };
    if presenter.is_some_and(|p| p.node_bits() != 0) {
        // (on Citus: each node would need codes of its own)
        return Err(node_bits(tag));
    }
    // opaque values are reserved above `from` only
    let n = value.checked_sub(from).and_then(|d| u64::try_from(d - 1).ok());
    let n = n.ok_or_else(|| SeqgenError::Internal(format!("opaque value {value} outside its domain")))?;
    code::encode(&key, length, n).map_err(|e| match e {
        TextIdError::NoCodesLeft { length, capacity } => {
            SeqgenError::CodesUsedUp { tag: tag.to_string(), length, capacity }
        }
        e => e.into(),
    })
}

/// For support staff: the counter value behind a short code of a tag. Reads the key with the
/// caller's privileges (the extension's owner, and roles it granted the key table to).
#[pg_extern(volatile, parallel_safe)]
fn seqgen_reveal_code(biz_tag: &str, code: &str) -> i64 {
    reveal_code(biz_tag, code).or_raise()
}

fn reveal_code(tag: &str, text: &str) -> Result<i64> {
    check_tag(tag)?;
    // the text first: a mistyped code is told as such, to anyone
    code::check(text)?;
    let state = crate::generators::opaque::opaque_state(tag)?;
    let (Some(from), Some(key)) = (state.from, state.key) else {
        return Err(SeqgenError::NotOpaque(tag.to_string()));
    };
    if state.node_bits != 0 {
        return Err(node_bits(tag));
    }
    // n < 2^60 and from <= 2^62: no overflow
    let counter = from + 1 + code::decode(&key, text)? as i64;
    if counter > state.max_id && counter > latest_max_id(tag)? {
        // above everything reserved: a text that passes the check, but no code of this tag
        return Err(SeqgenError::InvalidArgument(format!("short code \"{text}\" was not issued by tag \"{tag}\"")));
    }
    Ok(counter)
}

/// The tag's `max_id` as committed last, whatever the snapshot of the caller's statement or
/// transaction (which may predate the reservation of a segment a code was just drawn from).
fn latest_max_id(tag: &str) -> Result<i64> {
    const SQL: &str = "SELECT max_id FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1";
    let rows =
        crate::plumbing::session::latest(SQL, &[tag.into()]).map_err(|e| SeqgenError::Internal(e.to_string()))?;
    Ok(rows.first().and_then(|r| r[0].int()).unwrap_or(0))
}

/// Is `code` a well-formed short code: 4 to 13 characters of the alphabet, and a check
/// character that matches? Catches every mistyped character and every swap of two neighbours
/// without the tag's key; whether the code was issued only `seqgen_reveal_code` and the table
/// holding the codes tell.
#[pg_extern(immutable, strict, parallel_safe)]
fn seqgen_code_is_valid(code: &str) -> bool {
    code::is_valid(code)
}
