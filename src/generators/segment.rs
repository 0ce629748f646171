//! Segment IDs: `seqgen_next` and `seqgen_next_batch` (the tags themselves are `tags.rs`).

use std::sync::atomic::Ordering;

use pgrx::prelude::*;
use seqgen_core::segment::{Claim, Draw, Hint};

use crate::plumbing::args::{KeyArg, TagArg};
use crate::plumbing::cache::{self, forget, Resolved};
use crate::plumbing::catalog::{MODE_NO_NODE, MODE_OPAQUE};
use crate::plumbing::directory::{self, resolve};
use crate::plumbing::error::{OrRaise, Result, SeqgenError};
use crate::plumbing::guc;
use crate::plumbing::node;
use crate::plumbing::shmem::{self, Header, WorkerStatus};
use crate::plumbing::wait::wait_for;
use seqgen_core::adaptive::interleave;

/// `seqgen.seqgen_next(text)`: 0.x's `seqgen_next(biz_tag)`, kept for what stored it by OID
/// (column DEFAULTs, views made before 1.0: the update moved it into schema `seqgen`) and for
/// dumps of such databases; the same draw as `seqgen_next(biz_tag)`. Its C symbol is 0.x's.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_next(biz_tag: TagArg<'_>) -> i64 {
    crate::plumbing::wait::begin_call();
    draw(biz_tag.0)
}

/// The next ID of the tag's own counter, remembered for `seqgen_currval`.
#[inline]
fn draw(biz_tag: &str) -> i64 {
    let value = next(biz_tag).or_raise();
    cache::record(biz_tag, value);
    value
}

/// The next ID of a tag (`key` empty, the default), or of the tag's counter for `key` (a
/// tenant, a project, a branch): every key has its own counter from its first use, starting at
/// the tag's `start_with`, with a slot of its own while it is in use (its step adapts to its
/// own rate). Steady state: one atomic increment in shared memory, no lock, no table access.
/// (The C symbol is 0.6.0's keyed form, whose OID this function kept in the update.)
#[pg_extern(volatile, parallel_unsafe, name = "seqgen_next")]
fn seqgen_next_key(biz_tag: TagArg<'_>, key: default!(KeyArg<'_>, "''")) -> i64 {
    let TagArg(biz_tag) = biz_tag;
    crate::plumbing::wait::begin_call();
    let KeyArg(Some(key)) = key else {
        return draw(biz_tag);
    };
    with_key_name(biz_tag, key, |name| {
        let value = next(name)?;
        cache::record_key(name, value);
        Ok(value)
    })
    .or_raise()
}

/// Run `f` on the slot name of `tag`'s counter for `key` (the tag, [`shmem::KEY_SEP`], the key),
/// built on the stack. (A `text` argument never holds the separator, NUL.)
#[inline]
pub fn with_key_name<R>(tag: &str, key: &str, f: impl FnOnce(&str) -> Result<R>) -> Result<R> {
    let (t, k) = (tag.as_bytes(), key.as_bytes());
    if t.len() > shmem::NAME_MAX || k.len() > shmem::KEY_MAX {
        // refused with the right message by the checks of a cold load
        crate::plumbing::error::check_tag(tag)?;
        crate::plumbing::error::check_key(key)?;
    }
    // not zeroed first: per row, that cost more than the copies
    let mut buf = std::mem::MaybeUninit::<[u8; shmem::SLOT_NAME_MAX]>::uninit();
    let p = buf.as_mut_ptr() as *mut u8;
    let len = t.len() + 1 + k.len();
    if len > shmem::SLOT_NAME_MAX {
        return Err(SeqgenError::Internal("a key's slot name is too long".into()));
    }
    // SAFETY: `len` <= SLOT_NAME_MAX; every byte of `..len` is written before
    // it is read; two UTF-8 strings joined by an ASCII byte are UTF-8
    let name = unsafe {
        std::ptr::copy_nonoverlapping(t.as_ptr(), p, t.len());
        *p.add(t.len()) = shmem::KEY_SEP;
        std::ptr::copy_nonoverlapping(k.as_ptr(), p.add(t.len() + 1), k.len());
        std::str::from_utf8_unchecked(std::slice::from_raw_parts(p, len))
    };
    f(name)
}

#[inline]
pub fn next(tag: &str) -> Result<i64> {
    // steady state: a plain value from the current segment, drawn on the cache entry in place
    // (or, for a tag drawn from the map, from its block of values)
    let fast = cache::with_cached(tag, draw_plain, |r, hint, mut refill| {
        let size = refill.size();
        if size > 1 && hint.period() == Some(0) {
            if let Some(claimed) = claim_block(r, &mut refill, size) {
                return claimed.map_err(|()| (r, *hint, Draw::Lost));
            }
        }
        draw_plain(r, hint)
    });
    match fast {
        Some(Ok(value)) => Ok(value),
        Some(Err((r, hint, d))) => next_from(tag, r, hint, Some(d)),
        None => {
            let (r, hint) = directory::resolve_for_draw(tag)?;
            next_from(tag, r, hint, None)
        }
    }
}

/// One draw from the current segment on a cache entry: a plain value, or what the draw gave
/// for [`next_from`] to finish.
#[inline(always)]
fn draw_plain(r: Resolved, hint: &mut Hint) -> std::result::Result<i64, (Resolved, Hint, Draw)> {
    let d = r.slot.seg.draw_hinted(hint);
    // the hint is kept where it is (a new segment read into it needs no remembering)
    hint.refreshed = false;
    if let Draw::Value { value, prefetch, period: 0, .. } = d {
        if r.slot.gen().load(Ordering::Acquire) == r.gen {
            if prefetch {
                request_segment(r.slot);
            }
            return Ok(value);
        }
    }
    Err((r, *hint, d))
}

/// Claim `size` plain values of `r`'s current segment for this backend: the first is returned,
/// the rest kept in the cache entry's block. `None` when the segment cannot give a range
/// (used up, or moved on: draw as usual); `Err` when the slot stopped serving the tag meanwhile
/// (the claimed values are a gap).
#[inline(never)]
fn claim_block(r: Resolved, refill: &mut cache::Refill<'_>, size: u32) -> Option<std::result::Result<i64, ()>> {
    match r.slot.seg.claim_range(size as u64) {
        Claim::Range { start, len, period } => {
            if r.slot.gen().load(Ordering::Acquire) != r.gen {
                return Some(Err(()));
            }
            if r.slot.seg.wants_next() {
                // the claim may have passed the trigger offset that prefetches the next segment
                request_segment(r.slot);
            }
            if period != 0 {
                // not plain values (opaque, node bits): a gap, and no blocks for this entry
                refill.turn_off();
                return Some(Err(()));
            }
            if len > 1 {
                refill.keep(start + 1, len - 1);
            }
            Some(Ok(start))
        }
        Claim::Exhausted { .. } | Claim::Lost => None,
    }
}

/// The rest of [`next`]: from a draw already made on `r` (`first`), or from a new one.
#[inline(never)]
fn next_from(tag: &str, r: Resolved, hint: Hint, first: Option<Draw>) -> Result<i64> {
    let (value, p) = counter_from(tag, r, hint, first)?;
    Ok(p.map_or(value, |p| p.present(value)))
}

/// The next counter value of a tag, before it becomes an ID: with how it becomes one (`None`:
/// it is the ID). For what else is made of counter values (short codes).
pub fn next_counter(tag: &str) -> Result<(i64, Option<Presenter>)> {
    let (r, hint) = directory::resolve_hinted(tag)?;
    counter_from(tag, r, hint, None)
}

/// A counter value drawn on `r` (from `first`, or a new draw), with its presentation.
fn counter_from(
    tag: &str,
    mut r: Resolved,
    mut hint: Hint,
    mut first: Option<Draw>,
) -> Result<(i64, Option<Presenter>)> {
    // `hint` belongs to the generation of `r`: every time `r` is resolved again, the hint goes
    // with it (a slot evicted and loaded again restarts its epochs, and a hint kept across
    // that would hand out values of the old incarnation; the fuzzer found that one)
    loop {
        match first.take().unwrap_or_else(|| r.slot.seg.draw_hinted(&mut hint)) {
            Draw::Value { value, prefetch, period: mode, .. } => {
                // a new segment: kept for the next draw of this tag (the generation check
                // below throws the value, and the tag's cache entry, away if the slot moved on)
                if hint.refreshed {
                    hint.refreshed = false;
                    cache::remember_hint(tag, r, hint);
                }
                if prefetch {
                    request_segment(r.slot);
                }
                if mode == 0 {
                    if r.slot.gen().load(Ordering::Acquire) == r.gen {
                        return Ok((value, None));
                    }
                } else {
                    // read the key (or node bits) before re-checking the generation: a slot
                    // retired and reassigned meanwhile has another key
                    let p = Presenter::capture(tag, &r, mode);
                    if r.slot.gen().load(Ordering::Acquire) == r.gen {
                        return Ok((value, Some(p?)));
                    }
                }
                // The slot was retired while we drew: discard the value and resolve again.
                forget(tag);
                (r, hint) = (resolve(tag)?, Hint::default());
            }
            Draw::Exhausted { epoch } => {
                if !r.slot.seg.switch_from(epoch) {
                    (r, hint) = (wait_for_segment(tag, r, epoch)?, Hint::default());
                }
            }
            Draw::Lost => (r, hint) = (after_lost(tag, r)?, Hint::default()),
        }
    }
}

/// A draw or claim found its segment entry recycled (or being reset): check for interrupts,
/// and resolve again if the slot stopped serving the tag meanwhile.
#[cold]
fn after_lost(tag: &str, r: Resolved) -> Result<Resolved> {
    pgrx::check_for_interrupts!();
    if r.slot.gen().load(Ordering::Acquire) == r.gen {
        return Ok(r);
    }
    forget(tag);
    resolve(tag)
}

/// Ask the worker for the next segment of a slot.
fn request_segment(slot: &shmem::TagSlot) {
    slot.want.store(shmem::WANT_SEGMENT, Ordering::Release);
    if let Some(h) = shmem::header() {
        shmem::ask(h, slot);
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
        if r.slot.gen().load(Ordering::Acquire) != r.gen {
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

/// The step of the slot of `r` while it still serves `r`'s tag; `None` once it was retired
/// (the step read may then be another tag's). The worker bumps the generation before it
/// stores a new tag's step (`Release`), so a step read before an unchanged generation is
/// this tag's.
fn current_step(r: &Resolved) -> Option<u64> {
    let step = r.slot.cur_step.load(Ordering::Acquire).max(1) as u64;
    (r.slot.gen().load(Ordering::Acquire) == r.gen).then_some(step)
}

/// The tag resolved again after its slot was retired under a batch; a tag retired eleven
/// times in one call is reported as the allocator's timeout.
fn resolve_again(tag: &str, retired: &mut u32) -> Result<Resolved> {
    *retired += 1;
    if *retired > 10 {
        return Err(SeqgenError::Timeout { tag: tag.to_string(), ms: guc::ALLOCATION_TIMEOUT.get() });
    }
    pgrx::check_for_interrupts!();
    forget(tag);
    resolve(tag)
}

/// `n` values of a tag drawn one by one as `seqgen_next` draws them, each run of consecutive
/// values kept as one range (a million values are a few ranges, not a million).
fn draw_each(tag: &str, n: u64, out: &mut Vec<(i64, i64, Presenter)>) -> Result<()> {
    let mut runs = seqgen_core::segment::Runs::default();
    for _ in 0..n {
        runs.push(next(tag)?);
    }
    out.extend(runs.into_ranges().into_iter().map(|(start, len)| (start, len, Presenter::PLAIN)));
    Ok(())
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
    /// This node's id (for node-interleaved tags), read when the range was claimed.
    node: u32,
}

impl Presenter {
    /// Values that are IDs already.
    const PLAIN: Presenter = Presenter { mode: 0, key: None, node: 0 };

    /// Capture the presentation of `mode` for the slot of `r` (whose generation the caller
    /// checks after this).
    fn capture(tag: &str, r: &Resolved, mode: i64) -> Result<Presenter> {
        if mode & MODE_NO_NODE != 0 {
            // a tag without node bits in a Citus database: its values would meet other nodes'
            return Err(SeqgenError::CitusNeedsNodeBits(tag.to_string()));
        }
        let key = if mode & MODE_OPAQUE != 0 {
            let key = r.slot.key().ok_or_else(|| SeqgenError::Internal("opaque segment without its key".into()))?;
            Some((r.slot.opaque_from.load(Ordering::Acquire), key))
        } else {
            None
        };
        let bits = ((mode >> 8) & 0xff) as u32;
        if bits == 0 {
            return Ok(Presenter { mode, key, node: 0 });
        }
        let node = node_here()?;
        if node as u64 >= 1u64 << bits {
            return Err(SeqgenError::NodeDoesNotFit { node, bits });
        }
        Ok(Presenter { mode, key, node })
    }

    /// The key of an opaque tag, and the counter value above which its values are permuted.
    pub fn opaque_key(&self) -> Option<(i64, seqgen_core::opaque::Key)> {
        self.key
    }

    /// The node bits of a node-interleaved tag (0 for others).
    pub fn node_bits(&self) -> u32 {
        ((self.mode >> 8) & 0xff) as u32
    }

    #[inline]
    fn present(&self, v: i64) -> i64 {
        let bits = ((self.mode >> 8) & 0xff) as u32;
        match self.key {
            Some((from, key)) if bits == 0 => crate::generators::opaque::permute_with(from, 0, 0, &key, v),
            // opaque on Citus: the permuted counter, interleaved with the node
            Some((from, key)) => {
                interleave(crate::generators::opaque::permute_with(from, bits, self.node, &key, v), bits, self.node)
            }
            None if self.mode == 0 => v,
            None => interleave(v, bits, self.node),
        }
    }
}

/// This node's id for a node-interleaved tag: `seqgen.node_id` unless Citus is preloaded (then
/// the area is looked up for its group).
#[inline]
fn node_here() -> Result<u32> {
    if !node::citus_preloaded() {
        return Ok(guc::NODE_ID.get().max(0) as u32);
    }
    let h = match shmem::header() {
        Some(h) => h,
        None => directory::attach()?,
    };
    node::id(h)
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
    // this session's values of the tag keep increasing: a block kept ahead is a gap now
    cache::drop_block(tag);
    let mut out = vec![];
    let mut left = n as u64;
    let mut tries = 0;
    while tries < 3 && left > 0 {
        match r.slot.seg.claim_range(left) {
            Claim::Range { start, len, period: mode } => {
                let p = Presenter::capture(tag, &r, mode);
                if r.slot.gen().load(Ordering::Acquire) != r.gen {
                    forget(tag);
                    r = resolve(tag)?;
                    tries += 1;
                    continue;
                }
                out.push((start, len as i64, p?));
                left -= len;
                if left == 0 {
                    if r.slot.seg.wants_next() {
                        request_segment(r.slot);
                    }
                    break;
                }
                // the rest from the next segment if one is published (then from a
                // dedicated reservation): what is cached is used before anything new
            }
            Claim::Exhausted { epoch } => {
                if !r.slot.seg.switch_from(epoch) {
                    let Some(step) = current_step(&r) else {
                        // retired since the claim: its step is another tag's
                        forget(tag);
                        r = resolve(tag)?;
                        tries += 1;
                        continue;
                    };
                    if left <= step {
                        // no more than a segment left: wait for the next one (being reserved,
                        // or asked for now), as a draw would; a reservation of its own would
                        // sit above it, and the session's next draws would then go down
                        r = wait_for_segment(tag, r, epoch)?;
                        tries += 1;
                        continue;
                    }
                    // the dedicated reservation below serves the rest (a segment asked for
                    // now would take values from it near the end of the range)
                    break;
                }
                tries += 1;
            }
            Claim::Lost => {
                // another backend's claim won the segment's cursor first: not a try (it made
                // progress, and the segment runs out soon enough); interrupts are checked
                r = after_lost(tag, r)?;
            }
        }
    }
    // the rest: no more than the tag's current step is drawn value by value, as any call would
    // draw it (a reservation of its own would sit above the next segment, and this session's
    // next draws would then go down); more is reserved for this call alone
    let mut retired = 0;
    while left > 0 {
        let Some(step) = current_step(&r) else {
            // the slot was retired (and maybe reused) since the last claim or reservation
            r = resolve_again(tag, &mut retired)?;
            continue;
        };
        if left <= step {
            draw_each(tag, left, &mut out)?;
            break;
        }
        let reserved = match directory::reserve_range(tag, r, left as i64) {
            // the last values of the range may sit in a segment the worker is publishing (a
            // prefetch in flight when the current one ran out): drawn one by one, like any
            // call would; `next` reports the exhaustion when there truly is nothing left
            Err(SeqgenError::Exhausted(_)) => {
                draw_each(tag, left, &mut out)?;
                break;
            }
            other => other?,
        };
        match reserved {
            Some((start, len, mode)) => {
                let p = Presenter::capture(tag, &r, mode);
                // the worker reserved from the row this slot serves and stored its key in the
                // slot; a retirement since then would make the key unreliable
                if r.slot.gen().load(Ordering::Acquire) != r.gen {
                    r = resolve_again(tag, &mut retired)?;
                    continue;
                }
                out.push((start, len, p?));
                left -= len as u64;
            }
            // the slot was retired (the tag dropped or changed) while we asked
            None => r = resolve_again(tag, &mut retired)?,
        }
    }
    Ok(out)
}

/// The keyed counters of a tag (all of them, or the one of `only_key`), on demand: the catalog
/// row of each key joined with what shared memory holds for it (`seqgen_status` shows the
/// tags only: a tag may have a million keys).
#[pg_extern(volatile, parallel_unsafe)]
#[allow(clippy::type_complexity)]
fn seqgen_key_status(
    biz_tag: Option<&str>,
    only_key: default!(Option<&str>, "NULL"),
) -> TableIterator<
    'static,
    (
        name!(key, String),
        name!(max_id, i64),
        name!(step, i32),
        name!(next_value, Option<i64>),
        name!(segment_end, Option<i64>),
        name!(loaded, bool),
        name!(update_time, Option<pgrx::datum::TimestampWithTimeZone>),
    ),
> {
    let biz_tag = crate::plumbing::error::required(biz_tag, "biz_tag");
    let h = shmem::header().ok_or(SeqgenError::NotPreloaded).or_raise();
    crate::plumbing::catalog::require_current().or_raise();
    // a tag that does not exist is 42704 (not zero rows), and one the caller may not draw from
    // shows none of its keys (42501): keys name tenants
    if !crate::plumbing::acl::may_draw(biz_tag).or_raise() {
        SeqgenError::TagPermission(biz_tag.to_string()).raise()
    }
    // read with the extension's privileges (the catalog's schema is private): the caller may
    // draw from the tag, checked above
    let rows = crate::plumbing::session::bounded_lock_wait(|| {
        crate::plumbing::session::as_superuser(|| Spi::connect(|c| {
            let t = c.select(
                "SELECT key, max_id, step, update_time FROM seqgen.key_counter \
                 WHERE biz_tag OPERATOR(pg_catalog.=) $1 AND ($2::pg_catalog.text IS NULL OR key OPERATOR(pg_catalog.=) $2) \
                 ORDER BY key",
                None,
                &[biz_tag.into(), only_key.into()],
            )?;
            let mut rows = vec![];
            for row in t {
                let k: String = row.get(1)?.unwrap_or_default();
                let max_id: i64 = row.get(2)?.unwrap_or_default();
                let step: i32 = row.get(3)?.unwrap_or_default();
                rows.push((k, max_id, step, row.get::<pgrx::datum::TimestampWithTimeZone>(4)?));
            }
            Ok::<_, pgrx::spi::Error>(rows)
        }))
    })
    .map_err(|e| SeqgenError::Internal(e.to_string()))
    .or_raise();
    let out: Vec<_> = rows
        .into_iter()
        .map(|(k, max_id, step, time)| {
            let live = with_key_name(biz_tag, &k, |n| Ok(directory::lookup(h, n.as_bytes()))).ok().flatten();
            let cur = live.and_then(|r| r.slot.seg.snapshot().next_value());
            (k, max_id, step, cur.map(|c| c.0), cur.map(|c| c.1), live.is_some(), time)
        })
        .collect();
    TableIterator::new(out)
}
