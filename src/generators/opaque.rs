//! Opaque numbers: `seqgen_make_opaque`, `seqgen_reveal`, `seqgen_reveal_order_no`, and the
//! permutation of drawn values.
//!
//! A tag's key (256 bits from PostgreSQL's strong random source) lives in `seqgen.opaque_key`,
//! readable only by the extension's owner and roles it grants. The worker copies it into the
//! tag's shared-memory slot, so drawing IDs needs no table; the reveal functions read it from
//! the table with the caller's privileges, so ordinary roles are refused.

use std::collections::BTreeMap;

use pgrx::prelude::*;
use seqgen_core::opaque::{Domain, Key, KEY_BYTES};
use seqgen_core::template;

use crate::plumbing::catalog::first_row;
use crate::plumbing::error::{check_tag, required, OrRaise, Result, SeqgenError};
use crate::plumbing::{guc, node};

/// The opaque counter value for counter value `v` of a tag whose counter values are permuted
/// above `from` with `key` (its ID, for a tag without node bits).
#[inline]
pub fn permute_with(from: i64, node_bits: u32, node: u32, key: &Key, v: i64) -> i64 {
    match Domain::counters_above(from, node_bits) {
        // each node permutes with its own tweak: with one key everywhere, the k-th IDs of two
        // nodes would otherwise differ only in the node bits
        Some(d) if d.contains(v as u64) => d.permute(key, node as u64, v as u64) as i64,
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

thread_local! {
    /// While a Citus worker applies the coordinator's definitions: the coordinator's keys (hex).
    static GIVEN_KEYS: std::cell::RefCell<Option<BTreeMap<String, String>>> = const { std::cell::RefCell::new(None) };
}

/// Run `f` with `keys` (tag -> key in hex) as the keys that tags given a key in it get.
pub(crate) fn with_keys<R>(keys: BTreeMap<String, String>, f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            GIVEN_KEYS.with(|k| k.borrow_mut().take());
        }
    }
    GIVEN_KEYS.with(|k| *k.borrow_mut() = Some(keys));
    let _reset = Reset;
    f()
}

/// Give `tag` a key if it has none (in the caller's transaction): the coordinator's, when a
/// Citus worker applies its definitions (checked by the table: 32 bytes), else a new one.
pub fn ensure_key(tag: &str) -> Result<()> {
    let given = GIVEN_KEYS.with(|k| k.borrow().as_ref().map(|m| m.get(tag).cloned()));
    let given = match given {
        // applying the coordinator's definitions without its key for this tag (read between
        // its drop and its creation there, say): refuse rather than make a key of our own,
        // which would stay (the next read brings the key)
        Some(None) => {
            return Err(SeqgenError::Internal(format!("the coordinator's definitions carry no key for tag \"{tag}\"")))
        }
        Some(Some(k)) => Some(k),
        None => None,
    };
    match given {
        Some(hex) => Spi::run_with_args(
            "INSERT INTO seqgen.opaque_key (biz_tag, key) VALUES ($1, pg_catalog.decode($2, 'hex')) \
             ON CONFLICT (biz_tag) DO NOTHING",
            &[tag.into(), hex.into()],
        ),
        None => Spi::run_with_args(
            "INSERT INTO seqgen.opaque_key (biz_tag, key) VALUES ($1, $2) ON CONFLICT (biz_tag) DO NOTHING",
            &[tag.into(), new_key()?.into()],
        ),
    }
    .map_err(spi_err)
}

/// Make a tag's IDs opaque: once the calling transaction commits, every `seqgen_next` /
/// `seqgen_next_batch` value is a keyed permutation of its counter value into
/// (max_id, 2^63 - 1], above every ID issued in the clear before. For good (there is no way
/// back).
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_make_opaque(biz_tag: Option<&str>) {
    make_opaque(required(biz_tag, "biz_tag")).or_raise()
}

pub(crate) fn make_opaque(tag: &str) -> Result<()> {
    check_tag(tag)?;
    // who may change the tag first: a stranger learns nothing of the tag's kind
    crate::plumbing::acl::require_owner(tag)?;
    if crate::generators::kind::is_gapless(tag)? {
        return Err(SeqgenError::Unsupported(format!(
            "tag \"{tag}\" is gapless: its numbers are sequential, not shuffled"
        )));
    }
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
    if opaque_from.is_some() {
        return Ok(()); // already opaque
    }
    let max_id = max_id.unwrap_or(0);
    let bits = node_bits.unwrap_or(0).max(0) as u32;
    // Without node bits the opaque values start above everything issued (`max_id`). A
    // node-interleaved tag is opaque on Citus only, where every node has the coordinator's key
    // (elsewhere each server would take its apart with its own): its opaque counter values
    // are the upper half of its counter range on every node, so any node can take any node's
    // ID apart, and this node's counter jumps there.
    let from = match bits {
        0 => max_id,
        _ if node::is_citus(crate::plumbing::directory::attach()?) => Domain::citus_opaque_from(bits),
        _ => return Err(SeqgenError::Unsupported(
            "opaque IDs cannot be combined with node bits outside Citus (each server would permute with its own key)"
                .into(),
        )),
    };
    if max_id > from || Domain::counters_above(from, bits).is_none() {
        return Err(SeqgenError::InvalidArgument(format!(
            "tag \"{tag}\" has used more than half of its range (max_id {max_id}); opaque IDs need the upper half free"
        )));
    }
    ensure_key(tag)?;
    Spi::run_with_args(
        // (and no restart to undo: it would take max_id below opaque_from)
        "UPDATE seqgen.alloc SET opaque_from = $2, max_id = $2, restarted_from = NULL, restarted_to = NULL \
         WHERE biz_tag OPERATOR(pg_catalog.=) $1",
        &[tag.into(), from.into()],
    )
    .map_err(spi_err)?;
    // From the commit on, no plain value is handed out: what is left of the segments reserved
    // in the clear is skipped (a gap) and the next reservation is opaque.
    crate::plumbing::pending::at_commit(crate::plumbing::pending::Action::Retire(tag.to_string()));
    Ok(())
}

/// For support staff: the counter value behind an opaque ID (an ID issued before the tag
/// became opaque is its own counter value). Reads the key with the caller's privileges. For a
/// node-interleaved tag (on Citus) it is the counter value of the node in the ID's low
/// `node_bits` bits, on any node.
#[pg_extern(volatile, parallel_safe)]
fn seqgen_reveal(biz_tag: &str, id: i64) -> i64 {
    reveal(biz_tag, id).or_raise()
}

/// A tag's opaque state, read with the caller's privileges (the key table is the extension
/// owner's).
pub(crate) struct OpaqueState {
    /// Where its opaque values start (`None`: not opaque).
    pub from: Option<i64>,
    pub key: Option<Key>,
    pub node_bits: u32,
    /// The highest counter value reserved: nothing above it was issued.
    pub max_id: i64,
}

pub(crate) fn opaque_state(tag: &str) -> Result<OpaqueState> {
    let row = crate::plumbing::session::bounded_lock_wait(|| {
        first_row(
            "SELECT a.opaque_from, k.key, a.node_bits, a.max_id FROM seqgen.alloc a \
         LEFT JOIN seqgen.opaque_key k ON k.biz_tag OPERATOR(pg_catalog.=) a.biz_tag \
         WHERE a.biz_tag OPERATOR(pg_catalog.=) $1",
            &[tag.into()],
            false,
            |r| Ok((r.get::<i64>(1)?, r.get::<Vec<u8>>(2)?, r.get::<i32>(3)?, r.get::<i64>(4)?)),
        )
    })?;
    let (from, key, bits, max_id) = row.ok_or_else(|| SeqgenError::UnknownTag(tag.to_string()))?;
    Ok(OpaqueState {
        from,
        key: key.as_deref().and_then(Key::from_bytes),
        node_bits: bits.unwrap_or(0).clamp(0, 16) as u32,
        max_id: max_id.unwrap_or(0),
    })
}

fn reveal(tag: &str, id: i64) -> Result<i64> {
    check_tag(tag)?;
    let OpaqueState { from, key, node_bits: bits, .. } = opaque_state(tag)?;
    let Some(from) = from else {
        return Err(SeqgenError::NotOpaque(tag.to_string()));
    };
    if id < 0 {
        return Err(SeqgenError::InvalidArgument(format!("{id} is not an ID of tag \"{tag}\"")));
    }
    let (counter, node) = seqgen_core::adaptive::split(id, bits);
    if counter <= from {
        return Ok(counter);
    }
    let key = key.ok_or_else(|| SeqgenError::NotOpaque(tag.to_string()))?;
    let d = Domain::counters_above(from, bits).ok_or_else(|| SeqgenError::Internal("opaque domain".into()))?;
    Ok(d.unpermute(&key, node as u64, counter as u64) as i64)
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
    nodes()?.into_iter().find_map(|node| t.reveal(number, node, tag, key)).map(|(_, counter)| counter as i64).ok_or_else(|| {
        SeqgenError::InvalidArgument(format!(
            "\"{number}\" does not match the template of tag \"{tag}\" (or the template lacks the full date of its period)"
        ))
    })
}

/// The node ids an order number of this database may carry: this server's `seqgen.node_id`,
/// or on Citus every id a Citus tag's node bits hold (numbers of any node are taken apart on
/// any node: they share the coordinator's key; the node field of the number picks its node).
fn nodes() -> Result<Vec<u32>> {
    if !node::is_citus(crate::plumbing::directory::attach()?) {
        return Ok(vec![guc::NODE_ID.get().max(0) as u32]);
    }
    Ok((0..1u32 << node::CITUS_NODE_BITS).collect())
}
