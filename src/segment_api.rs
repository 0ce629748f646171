//! SQL functions of the segment generator: `seqgen_create`, `seqgen_next`,
//! `seqgen_next_batch`, `seqgen_status`, `seqgen_drop`.

use std::sync::atomic::Ordering;

use pgrx::prelude::*;
use seqgen_core::segment::{Claim, Draw};

use crate::directory::{self, forget, resolve, Resolved};
use crate::error::{check_tag, OrRaise, Result, SeqgenError};
use crate::guc;
use crate::shmem::{self, Header, WorkerStatus};
use crate::wait::wait_for;
use crate::worker::MODE_OPAQUE;
use seqgen_core::adaptive::{interleave, MAX_NODE_BITS};

/// Create a tag (a catalog row). Transactional: the tag exists for the worker once the
/// calling transaction commits.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_create(
    biz_tag: Option<&str>,
    step: default!(Option<i32>, 1000),
    start_with: default!(Option<i64>, 1),
    description: default!(Option<&str>, "NULL"),
) {
    create(biz_tag, step, start_with, description).or_raise()
}

fn create(tag: Option<&str>, step: Option<i32>, start_with: Option<i64>, description: Option<&str>) -> Result<()> {
    let tag = tag.ok_or(SeqgenError::NullArgument("biz_tag"))?;
    let step = step.ok_or(SeqgenError::NullArgument("step"))?;
    let start_with = start_with.ok_or(SeqgenError::NullArgument("start_with"))?;
    check_tag(tag)?;
    if step <= 0 {
        return Err(SeqgenError::InvalidArgument(format!("step must be positive, got {step}")));
    }
    if start_with < 1 {
        return Err(SeqgenError::InvalidArgument(format!("start_with must be at least 1, got {start_with}")));
    }
    admin_checks()?;
    let count = Spi::get_one::<i64>("SELECT pg_catalog.count(*) FROM seqgen.alloc")
        .map_err(|e| SeqgenError::Internal(e.to_string()))?
        .unwrap_or(0);
    if count >= guc::MAX_TAGS.get() as i64 {
        return Err(SeqgenError::TooManyTags(guc::MAX_TAGS.get()));
    }
    let inserted = returns_row(
        "INSERT INTO seqgen.alloc (biz_tag, max_id, step, description) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (biz_tag) DO NOTHING RETURNING true",
        &[tag.into(), (start_with - 1).into(), step.into(), description.into()],
    )?;
    if !inserted {
        return Err(SeqgenError::DuplicateTag(tag.to_string()));
    }
    Ok(())
}

/// Run a data-modifying statement; did it return a row?
fn returns_row(sql: &str, args: &[pgrx::datum::DatumWithOid<'_>]) -> Result<bool> {
    Spi::connect_mut(|c| c.update(sql, None, args).map(|t| !t.is_empty()))
        .map_err(|e| SeqgenError::Internal(e.to_string()))
}

/// Checks shared by the functions that change the catalog: preloaded, primary, served database.
pub fn admin_checks() -> Result<()> {
    shmem::header().ok_or(SeqgenError::NotPreloaded)?;
    if unsafe { pg_sys::RecoveryInProgress() } {
        return Err(SeqgenError::HotStandby);
    }
    directory::check_database()
}

/// Drop a tag. Its slot is retired when the calling transaction commits.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_drop(biz_tag: &str) {
    drop_tag(biz_tag).or_raise()
}

fn drop_tag(tag: &str) -> Result<()> {
    check_tag(tag)?;
    admin_checks()?;
    let deleted =
        returns_row("DELETE FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1 RETURNING true", &[tag.into()])?;
    if !deleted {
        return Err(SeqgenError::UnknownTag(tag.to_string()));
    }
    Ok(())
}

/// Let several independent servers (each with its own catalog and a distinct
/// `seqgen.node_id`) draw from this tag without collisions: from the commit on, its IDs are
/// `counter << node_bits | seqgen.node_id`. Values stay above every ID issued before; node bits
/// can grow later but never shrink. Transactional.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_set_node_bits(biz_tag: &str, node_bits: i32) {
    set_node_bits(biz_tag, node_bits).or_raise()
}

fn set_node_bits(tag: &str, bits: i32) -> Result<()> {
    check_tag(tag)?;
    if !(1..=MAX_NODE_BITS as i32).contains(&bits) {
        return Err(SeqgenError::InvalidArgument(format!(
            "node_bits must be between 1 and {MAX_NODE_BITS}, got {bits}"
        )));
    }
    let node = guc::NODE_ID.get().max(0) as u32;
    if node as u64 >= 1u64 << bits {
        return Err(SeqgenError::NodeDoesNotFit { node, bits: bits as u32 });
    }
    admin_checks()?;
    let row = crate::catalog::first_row(
        "SELECT node_bits, opaque_from IS NOT NULL FROM seqgen.alloc \
         WHERE biz_tag OPERATOR(pg_catalog.=) $1 FOR UPDATE",
        &[tag.into()],
        true,
        |r| r.get_two::<i32, bool>(),
    )?;
    let Some((current, opaque)) = row else {
        return Err(SeqgenError::UnknownTag(tag.to_string()));
    };
    if opaque == Some(true) {
        return Err(SeqgenError::Unsupported("node bits cannot be combined with opaque IDs".into()));
    }
    let current = current.unwrap_or(0);
    if bits < current {
        return Err(SeqgenError::InvalidArgument(format!(
            "node bits can only grow (tag \"{tag}\" has {current}): fewer bits would let later IDs meet earlier ones"
        )));
    }
    if bits == current {
        return Ok(());
    }
    Spi::run_with_args(
        "UPDATE seqgen.alloc SET node_bits = $2 WHERE biz_tag OPERATOR(pg_catalog.=) $1",
        &[tag.into(), bits.into()],
    )
    .map_err(|e| SeqgenError::Internal(e.to_string()))?;
    // from the commit on, no value in the old form is handed out
    let name = tag.to_string();
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, move || directory::retire(name.as_bytes()));
    Ok(())
}

/// The next ID of a tag. Steady state: one atomic increment in shared memory, no lock, no
/// table access.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_next(biz_tag: &str) -> i64 {
    next(biz_tag).or_raise()
}

#[inline]
pub fn next(tag: &str) -> Result<i64> {
    let mut r = resolve(tag)?;
    loop {
        match r.slot.seg.draw() {
            Draw::Value { value, prefetch, period: mode, .. } => {
                if prefetch {
                    request_segment(r.slot);
                }
                if r.slot.gen.load(Ordering::Acquire) == r.gen {
                    return if mode == 0 { Ok(value) } else { present(r.slot, value, mode) };
                }
                // The slot was retired while we drew: discard the value and resolve again.
                forget(tag);
                r = resolve(tag)?;
            }
            Draw::Exhausted { epoch } => {
                if !r.slot.seg.switch_from(epoch) {
                    r = wait_for_segment(tag, r, epoch)?;
                }
            }
            Draw::Lost => {}
        }
    }
}

/// Ask the worker for the next segment of a slot.
fn request_segment(slot: &shmem::TagSlot) {
    slot.want.store(shmem::WANT_SEGMENT, Ordering::Release);
    if let Some(h) = shmem::header() {
        h.ring();
    }
}

/// The current segment is used up and the next is not there yet: wait for the worker.
/// Returns the (possibly re-resolved) tag to retry with.
#[cold]
#[inline(never)]
fn wait_for_segment(tag: &str, r: Resolved, epoch: u32) -> Result<Resolved> {
    let h: &Header = directory::ready_header()?;
    r.slot.waits.fetch_add(1, Ordering::Relaxed);
    let err_before = r.slot.err_seq.load(Ordering::Acquire);
    request_segment(r.slot);
    let timeout = guc::ALLOCATION_TIMEOUT.get();
    let outcome = wait_for(h, timeout, || {
        if r.slot.gen.load(Ordering::Acquire) != r.gen {
            return Some(Err(None));
        }
        if r.slot.seg.switch_from(epoch) {
            return Some(Ok(()));
        }
        if r.slot.locked.load(Ordering::Relaxed) != 0 {
            // the row was locked at the last try: ask again (the worker retries only while
            // someone is waiting)
            request_segment(r.slot);
        }
        if r.slot.err_seq.load(Ordering::Acquire) != err_before {
            return Some(Err(Some(r.slot.err_code.load(Ordering::Relaxed))));
        }
        if h.worker_status() != WorkerStatus::Running {
            return Some(Err(Some(u32::MAX)));
        }
        None
    });
    match outcome {
        Some(Ok(())) => Ok(r),
        Some(Err(None)) => {
            forget(tag);
            resolve(tag)
        }
        Some(Err(Some(u32::MAX))) => Err(SeqgenError::WorkerNotRunning),
        Some(Err(Some(c))) => Err(directory::error_for(c, tag, "allocation failed; see the server log".into())),
        None if r.slot.locked.load(Ordering::Relaxed) != 0 => Err(SeqgenError::RowLocked(tag.to_string())),
        None => Err(SeqgenError::Timeout { tag: tag.to_string(), ms: timeout }),
    }
}

/// `n` IDs of a tag at once.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_next_batch(biz_tag: &str, n: i32) -> SetOfIterator<'static, i64> {
    let tag = biz_tag.to_string();
    let ranges = next_batch(biz_tag, n).or_raise();
    let slot = ranges.iter().any(|r| r.2 != 0).then(|| resolve(&tag).or_raise().slot);
    SetOfIterator::new(ranges.into_iter().flat_map(move |(start, len, mode)| {
        (start..start + len).map(move |v| match (mode, slot) {
            (0, _) | (_, None) => v,
            (m, Some(s)) => present(s, v, m).or_raise(),
        })
    }))
}

/// The ID for counter value `v` of a segment in `mode` (see [`crate::worker::mode`]).
#[inline]
fn present(slot: &shmem::TagSlot, v: i64, mode: i64) -> Result<i64> {
    if mode & MODE_OPAQUE != 0 {
        return Ok(crate::opaque::permute_id(slot, v));
    }
    let bits = ((mode >> 8) & 0xff) as u32;
    let node = guc::NODE_ID.get().max(0) as u32;
    if node as u64 >= 1u64 << bits {
        return Err(SeqgenError::NodeDoesNotFit { node, bits });
    }
    Ok(interleave(v, bits, node))
}

/// The ranges making up a batch, `(start, len, mode)`: what the current segment can give,
/// the rest reserved for this call alone by the worker (one round trip, whatever `n`).
pub fn next_batch(tag: &str, n: i32) -> Result<Vec<(i64, i64, i64)>> {
    if n <= 0 || n > guc::MAX_BATCH {
        return Err(SeqgenError::InvalidArgument(format!("n must be between 1 and {}, got {n}", guc::MAX_BATCH)));
    }
    let mut r = resolve(tag)?;
    let mut out = vec![];
    let mut left = n as u64;
    for _ in 0..2 {
        match r.slot.seg.claim_range(left) {
            Claim::Range { start, len, period: mode } => {
                if r.slot.gen.load(Ordering::Acquire) != r.gen {
                    forget(tag);
                    r = resolve(tag)?;
                    continue;
                }
                out.push((start, len as i64, mode));
                left -= len;
                if r.slot.seg.wants_next() {
                    request_segment(r.slot);
                }
                break;
            }
            Claim::Exhausted { epoch } => {
                if !r.slot.seg.switch_from(epoch) {
                    request_segment(r.slot);
                    break;
                }
            }
        }
    }
    if left > 0 {
        out.push(directory::reserve_range(tag, left as i64)?);
    }
    Ok(out)
}

/// One row per tag: the catalog joined with what shared memory holds for it.
#[pg_extern(volatile, parallel_unsafe)]
#[allow(clippy::type_complexity)]
fn seqgen_status() -> TableIterator<
    'static,
    (
        name!(biz_tag, String),
        name!(step, i32),
        name!(max_id, i64),
        name!(next_value, Option<i64>),
        name!(segment_end, Option<i64>),
        name!(next_segment_ready, bool),
        name!(ids_per_sec, f64),
        name!(current_step, Option<i64>),
        name!(waits, i64),
        name!(opaque, bool),
        name!(node_bits, i32),
        name!(description, Option<String>),
        name!(update_time, Option<pgrx::datum::TimestampWithTimeZone>),
    ),
> {
    let h = shmem::header().ok_or(SeqgenError::NotPreloaded).or_raise();
    let rows = Spi::connect(|c| {
        let mut rows = vec![];
        let t = c.select(
            "SELECT biz_tag, step, max_id, description, update_time, opaque_from IS NOT NULL, node_bits \
             FROM seqgen.alloc ORDER BY biz_tag",
            None,
            &[],
        )?;
        for row in t {
            let tag: String = row.get(1)?.unwrap_or_default();
            let step: i32 = row.get(2)?.unwrap_or_default();
            let max_id: i64 = row.get(3)?.unwrap_or_default();
            let desc: Option<String> = row.get(4)?;
            let time: Option<pgrx::datum::TimestampWithTimeZone> = row.get(5)?;
            let opaque: bool = row.get(6)?.unwrap_or(false);
            let node_bits: i32 = row.get(7)?.unwrap_or(0);
            rows.push((tag, step, max_id, desc, time, opaque, node_bits));
        }
        Ok::<_, pgrx::spi::Error>(rows)
    })
    .map_err(|e| SeqgenError::Internal(e.to_string()))
    .or_raise();
    let out: Vec<_> = rows
        .into_iter()
        .map(|(tag, step, max_id, desc, time, opaque, node_bits)| {
            let live = directory::lookup(h, tag.as_bytes());
            let snap = live.map(|r| (r.slot.seg.snapshot(), r.slot));
            let (next_value, segment_end, next_ready, rate, cur_step, waits) = match snap {
                Some((s, slot)) => {
                    let cur = s.current.filter(|c| s.used < c.len);
                    (
                        cur.map(|c| c.start + s.used as i64),
                        cur.map(|c| c.start + c.len as i64 - 1),
                        s.next.is_some(),
                        f64::from_bits(slot.rate_bits.load(Ordering::Relaxed)),
                        Some(slot.cur_step.load(Ordering::Relaxed)),
                        slot.waits.load(Ordering::Relaxed) as i64,
                    )
                }
                None => (None, None, false, 0.0, None, 0),
            };
            (
                tag,
                step,
                max_id,
                next_value,
                segment_end,
                next_ready,
                rate,
                cur_step,
                waits,
                opaque,
                node_bits,
                desc,
                time,
            )
        })
        .collect();
    TableIterator::new(out)
}
