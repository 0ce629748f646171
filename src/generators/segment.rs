//! SQL functions of the segment generator: `seqgen_create`, `seqgen_next`,
//! `seqgen_next_batch`, `seqgen_status`, `seqgen_drop`.

use std::sync::atomic::Ordering;

use pgrx::prelude::*;
use seqgen_core::segment::{Claim, Draw};

use crate::plumbing::catalog::MODE_OPAQUE;
use crate::plumbing::directory::{self, admin_checks, forget, resolve, Resolved};
use crate::plumbing::error::{check_tag, OrRaise, Result, SeqgenError};
use crate::plumbing::guc;
use crate::plumbing::shmem::{self, Header, WorkerStatus};
use crate::plumbing::wait::wait_for;
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
/// `counter << node_bits | seqgen.node_id`. Values stay above every ID issued before. Set once:
/// node bits never change afterwards (see `set_node_bits`). Transactional.
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
    let row = crate::plumbing::catalog::first_row(
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
    if bits == current {
        return Ok(());
    }
    if current != 0 {
        // Fewer bits let later values meet earlier ones on this server. More bits let them
        // meet another server's: a server added with a node id that only the wider field can
        // hold counts from its own (low) counter, onto values this server issued before.
        return Err(SeqgenError::InvalidArgument(format!(
            "tag \"{tag}\" already has {current} node bits, and node bits cannot change once set: \
             with other widths, values of this server and of servers added later could meet"
        )));
    }
    Spi::run_with_args(
        "UPDATE seqgen.alloc SET node_bits = $2 WHERE biz_tag OPERATOR(pg_catalog.=) $1",
        &[tag.into(), bits.into()],
    )
    .map_err(|e| SeqgenError::Internal(e.to_string()))?;
    // from the commit on, no value in the old form is handed out
    crate::plumbing::pending::at_commit(crate::plumbing::pending::Action::Retire(tag.to_string()));
    Ok(())
}

/// Change a tag's configured step and/or description (NULL leaves it as it is). The worker
/// reads the step under the row lock at every reservation, so the new step takes effect from
/// the next segment; nothing cached is discarded. Transactional.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_alter(
    biz_tag: Option<&str>,
    step: default!(Option<i32>, "NULL"),
    description: default!(Option<&str>, "NULL"),
) {
    alter(biz_tag, step, description).or_raise()
}

fn alter(tag: Option<&str>, step: Option<i32>, description: Option<&str>) -> Result<()> {
    let tag = tag.ok_or(SeqgenError::NullArgument("biz_tag"))?;
    check_tag(tag)?;
    if let Some(step) = step {
        if step <= 0 {
            return Err(SeqgenError::InvalidArgument(format!("step must be positive, got {step}")));
        }
    }
    admin_checks()?;
    let updated = returns_row(
        "UPDATE seqgen.alloc SET step = COALESCE($2, step), \
         description = COALESCE($3, description), update_time = pg_catalog.now() \
         WHERE biz_tag OPERATOR(pg_catalog.=) $1 RETURNING true",
        &[tag.into(), step.into(), description.into()],
    )?;
    if !updated {
        return Err(SeqgenError::UnknownTag(tag.to_string()));
    }
    Ok(())
}

/// Move a tag's numbering up: from the commit on, every session draws `start_with` and above
/// (segments cached or prefetched before are discarded: a gap). Refused, with the current
/// floor, for any `start_with` at or below the highest value reserved so far: numbering never
/// goes down. Transactional (the row stays locked until the caller commits).
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_restart(biz_tag: &str, start_with: i64) {
    restart(biz_tag, start_with).or_raise()
}

fn restart(tag: &str, start_with: i64) -> Result<()> {
    check_tag(tag)?;
    admin_checks()?;
    let row = crate::plumbing::catalog::first_row(
        "SELECT max_id, opaque_from IS NOT NULL, node_bits FROM seqgen.alloc \
         WHERE biz_tag OPERATOR(pg_catalog.=) $1 FOR UPDATE",
        &[tag.into()],
        true,
        |r| r.get_three::<i64, bool, i32>(),
    )?;
    let Some((Some(max_id), opaque, node_bits)) = row else {
        return Err(SeqgenError::UnknownTag(tag.to_string()));
    };
    if opaque == Some(true) || node_bits.unwrap_or(0) != 0 {
        return Err(SeqgenError::Unsupported(format!(
            "tag \"{tag}\" is opaque or node-interleaved: its values are not its counter, so it cannot be restarted at a value"
        )));
    }
    if start_with <= max_id {
        return Err(SeqgenError::InvalidArgument(format!(
            "start_with {start_with} is not above {max_id}, the highest value tag \"{tag}\" has reserved: numbering only moves up"
        )));
    }
    Spi::run_with_args(
        "UPDATE seqgen.alloc SET max_id = $2, update_time = pg_catalog.now() \
         WHERE biz_tag OPERATOR(pg_catalog.=) $1",
        &[tag.into(), (start_with - 1).into()],
    )
    .map_err(|e| SeqgenError::Internal(e.to_string()))?;
    // from the commit on, nothing cached below start_with is handed out
    crate::plumbing::pending::at_commit(crate::plumbing::pending::Action::Retire(tag.to_string()));
    Ok(())
}

/// The next ID of a tag. Steady state: one atomic increment in shared memory, no lock, no
/// table access.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_next(biz_tag: &str) -> i64 {
    crate::plumbing::wait::begin_call();
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
                if mode == 0 {
                    if r.slot.gen.load(Ordering::Acquire) == r.gen {
                        return Ok(value);
                    }
                } else {
                    // read the key (or node bits) before re-checking the generation: a slot
                    // retired and reassigned meanwhile has another key
                    let p = Presenter::capture(&r, mode);
                    if r.slot.gen.load(Ordering::Acquire) == r.gen {
                        return Ok(p?.present(value));
                    }
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
            Draw::Lost => r = after_lost(tag, r)?,
        }
    }
}

/// A draw or claim found its segment entry recycled (or being reset): check for interrupts,
/// and resolve again if the slot stopped serving the tag meanwhile.
#[cold]
fn after_lost(tag: &str, r: Resolved) -> Result<Resolved> {
    pgrx::check_for_interrupts!();
    if r.slot.gen.load(Ordering::Acquire) == r.gen {
        return Ok(r);
    }
    forget(tag);
    resolve(tag)
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
    let outcome = wait_for(h, || {
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
        // a worker that is not running is waited for until the timeout: the postmaster
        // restarts it within a second, and it serves the request then
        None
    });
    match outcome {
        Some(Ok(())) => Ok(r),
        Some(Err(None)) => {
            forget(tag);
            resolve(tag)
        }
        Some(Err(Some(u32::MAX))) => Err(SeqgenError::WorkerNotRunning),
        Some(Err(Some(c))) => Err(directory::slot_failure(h, c, tag)),
        None if h.worker_status() != WorkerStatus::Running => Err(SeqgenError::WorkerNotRunning),
        None if r.slot.locked.load(Ordering::Relaxed) != 0 => Err(SeqgenError::RowLocked(tag.to_string())),
        None => Err(SeqgenError::Timeout { tag: tag.to_string(), ms: timeout }),
    }
}

/// `n` IDs of a tag at once.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_next_batch(biz_tag: &str, n: i32) -> SetOfIterator<'static, i64> {
    crate::plumbing::wait::begin_call();
    let ranges = next_batch(biz_tag, n).or_raise();
    // `start + i` never overflows: a range ends at or below i64::MAX (`start + len` may not)
    SetOfIterator::new(ranges.into_iter().flat_map(|(start, len, p)| (0..len).map(move |i| p.present(start + i))))
}

/// How a segment's counter values become IDs, captured (with the tag's key) when the values
/// were claimed, so a batch that is read out later never depends on the slot any more.
#[derive(Clone, Copy)]
pub struct Presenter {
    mode: i64,
    key: Option<(i64, seqgen_core::opaque::Key)>,
}

impl Presenter {
    /// Capture the presentation of `mode` for the slot of `r` (whose generation the caller
    /// checks after this).
    fn capture(r: &Resolved, mode: i64) -> Result<Presenter> {
        if mode & MODE_OPAQUE != 0 {
            let key = r.slot.key().ok_or_else(|| SeqgenError::Internal("opaque segment without its key".into()))?;
            return Ok(Presenter { mode, key: Some((r.slot.opaque_from.load(Ordering::Acquire), key)) });
        }
        let bits = ((mode >> 8) & 0xff) as u32;
        let node = guc::NODE_ID.get().max(0) as u32;
        if node as u64 >= 1u64 << bits {
            return Err(SeqgenError::NodeDoesNotFit { node, bits });
        }
        Ok(Presenter { mode, key: None })
    }

    #[inline]
    fn present(&self, v: i64) -> i64 {
        match self.key {
            Some((from, key)) => crate::generators::opaque::permute_with(from, &key, v),
            None if self.mode == 0 => v,
            None => interleave(v, ((self.mode >> 8) & 0xff) as u32, guc::NODE_ID.get().max(0) as u32),
        }
    }
}

/// The ranges making up a batch, `(start, len, presenter)`: what the current segment can
/// give, the rest reserved for this call alone by the worker (one round trip, whatever `n`).
/// Each range is presented with what its slot held when it was claimed, checked against the
/// slot's generation after the claim.
pub fn next_batch(tag: &str, n: i32) -> Result<Vec<(i64, i64, Presenter)>> {
    if n <= 0 || n > guc::MAX_BATCH {
        return Err(SeqgenError::InvalidArgument(format!("n must be between 1 and {}, got {n}", guc::MAX_BATCH)));
    }
    let mut r = resolve(tag)?;
    let mut out = vec![];
    let mut left = n as u64;
    let mut tries = 0;
    while tries < 3 {
        match r.slot.seg.claim_range(left) {
            Claim::Range { start, len, period: mode } => {
                let p = Presenter::capture(&r, mode);
                if r.slot.gen.load(Ordering::Acquire) != r.gen {
                    forget(tag);
                    r = resolve(tag)?;
                    tries += 1;
                    continue;
                }
                out.push((start, len as i64, p?));
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
                tries += 1;
            }
            Claim::Lost => {
                r = after_lost(tag, r)?;
                tries += 1;
            }
        }
    }
    while left > 0 {
        match directory::reserve_range(tag, r, left as i64)? {
            Some((start, len, mode)) => {
                let p = Presenter::capture(&r, mode);
                // the worker reserved from the row this slot serves and stored its key in the
                // slot; a retirement since then would make the key unreliable
                if r.slot.gen.load(Ordering::Acquire) != r.gen {
                    forget(tag);
                    r = resolve(tag)?;
                    continue;
                }
                out.push((start, len, p?));
                left -= len as u64;
            }
            None => {
                // the slot was retired (the tag dropped or changed) while we asked
                tries += 1;
                if tries > 10 {
                    return Err(SeqgenError::Timeout { tag: tag.to_string(), ms: guc::ALLOCATION_TIMEOUT.get() });
                }
                pgrx::check_for_interrupts!();
                forget(tag);
                r = resolve(tag)?;
            }
        }
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
