//! Templated order numbers: `seqgen_set_template`, `seqgen_order_no`, `seqgen_render`,
//! `seqgen_check_digit_valid`.
//!
//! The counter of a tag's template restarts at 1 in every period. Counter values come in
//! blocks that the worker reserves in `seqgen.template` (one row per tag: the latest period
//! and the highest value reserved in it) and commits before they are used; backends draw from
//! the slot's `ord` buffer, whose segments carry their period key. The period a number is
//! issued in is the later of the clock's period and the current block's: it never moves
//! backwards, even when the clock does.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use pgrx::datum::TimestampWithTimeZone;
use pgrx::prelude::*;
use seqgen_core::check::luhn_valid;
use seqgen_core::opaque::Key;
use seqgen_core::segment::Draw;
use seqgen_core::template::{self, Prepared, Span, Template, Tz, Unit};

use crate::plumbing::args::{KeyArg, TagArg};
use crate::plumbing::cache::{forget, Resolved};
use crate::plumbing::directory::{self, code, resolve};
use crate::plumbing::error::{check_tag, required, OrRaise, Result, SeqgenError};
use crate::plumbing::guc::{self, Overflow};
use crate::plumbing::local::BackendLocal;
use crate::plumbing::node;
use crate::plumbing::session::Val;
use crate::plumbing::shmem::{self, TagSlot, WorkerStatus, TPL_MAX_BYTES, TPL_MISSING, TPL_READY, TZ_MAX_BYTES};
use crate::plumbing::wait::wait_until;

/// A template as one backend has parsed it, with the period and prefix it last rendered.
struct Local {
    gen: u64,
    version: u64,
    template: Template,
    tz: Tz,
    tag: String,
    /// The counter's key, what `{key}` renders (empty for the tag's own counter).
    key_text: String,
    /// The tag's key, for `{seq:N:opaque}`.
    key: Option<Key>,
    /// This node's id when the template was read (a Citus node id is never reused, so one
    /// read before a change renders no other node's numbers).
    node: u32,
    span: Option<Span>,
    prepared: Option<Prepared>,
}

/// This backend's parsed templates: the last one used, and the others by slot.
#[derive(Default)]
struct Locals {
    last: Option<(usize, Local)>,
    others: HashMap<usize, Local>,
    /// The number being returned (pgrx copies it into a text datum).
    out: String,
}

static LOCAL: BackendLocal<Locals> = BackendLocal::new();

fn parse_template(text: &str) -> Result<Template> {
    if text.len() > TPL_MAX_BYTES {
        return Err(SeqgenError::InvalidArgument(format!("a template is at most {TPL_MAX_BYTES} bytes")));
    }
    template::parse(text).map_err(|e| SeqgenError::InvalidArgument(e.to_string()))
}

fn parse_zone(name: &str) -> Result<Tz> {
    if name.len() > TZ_MAX_BYTES {
        return Err(SeqgenError::InvalidArgument(format!("unknown time zone \"{name}\"")));
    }
    template::parse_time_zone(name).map_err(SeqgenError::InvalidArgument)
}

/// `seqgen.node_id` (what `seqgen_render` renders for `{node}`).
fn setting_node_id() -> u32 {
    guc::NODE_ID.get().max(0) as u32
}

/// This node's id in this database (on Citus the coordinator's node id for its group), and whether it comes from Citus.
fn node_id() -> Result<(u32, bool)> {
    let h = directory::attach()?;
    Ok((node::id(h)?, node::is_citus(h)))
}

/// On Citus every node counts on its own: the template must render the node id, and the id
/// must fit.
fn check_node_field(tag: &str, t: &Template) -> Result<u32> {
    let (node, citus) = node_id()?;
    if citus && !t.has_node() {
        return Err(SeqgenError::CitusNeedsNodeField(tag.to_string()));
    }
    t.check_node(node).map_err(SeqgenError::InvalidArgument)?;
    Ok(node)
}

/// [`check_node_field`] for a template being set: on Citus it must also render every node
/// id a tag's node bits hold (a worker added later has a larger one than this node), or a
/// worker would refuse it. Not checked on draws: a template set before this rule keeps
/// numbering on the nodes it fits.
fn check_new_node_field(tag: &str, t: &Template) -> Result<u32> {
    let node = check_node_field(tag, t)?;
    let largest = (1u32 << node::CITUS_NODE_BITS) - 1;
    if node_id()?.1 && t.check_node(largest).is_err() {
        return Err(SeqgenError::InvalidArgument(format!(
            "the {{node}} field of tag \"{tag}\"'s template is too narrow for Citus: it must render every node id up to {largest}, \
             so that every worker, including those added later, can number"
        )));
    }
    Ok(node)
}

/// Attach a template to a tag (transactional). Counters are kept per period unit when a
/// template is replaced: a period that a template of that unit has used continues above its
/// highest number. A template whose text cannot tell its periods apart is refused, unless
/// `allow_repeats` (e.g. `{dd}-{seq:4}`: the same numbers every month).
#[pg_extern(volatile, parallel_unsafe, name = "seqgen_set_template")]
fn seqgen_set_template_allow(
    biz_tag: Option<&str>,
    template: Option<&str>,
    time_zone: default!(Option<&str>, "'UTC'"),
    allow_repeats: default!(Option<bool>, false),
) {
    let (tag, template) = (required(biz_tag, "biz_tag"), required(template, "template"));
    let allow = required(allow_repeats, "allow_repeats");
    let zone = required(time_zone, "time_zone");
    set_template(tag, template, zone, allow).or_raise()
}

/// The C symbol of `seqgen_set_template(text, text, text)` before 0.6.0, which a catalog not
/// yet updated calls (a symbol keeps its arguments; see `seqgen_create`). No SQL.
#[pg_extern(sql = false)]
fn seqgen_set_template(biz_tag: Option<&str>, template: Option<&str>, time_zone: Option<&str>) {
    seqgen_set_template_allow(biz_tag, template, time_zone, Some(false))
}

pub(crate) fn set_template(tag: &str, text: &str, zone: &str, allow_repeats: bool) -> Result<()> {
    check_tag(tag)?;
    // before ALTER EXTENSION UPDATE the catalog may lack what is read below
    crate::plumbing::catalog::require_current()?;
    // who may change the tag first: a stranger learns nothing of the tag's kind
    crate::plumbing::acl::require_owner(tag)?;
    if crate::generators::kind::is_gapless(tag)? {
        return Err(SeqgenError::Unsupported(format!(
            "tag \"{tag}\" is gapless: its template is set once, with seqgen_create_gapless() (another could restart or repeat its numbers)"
        )));
    }
    set_any_template(tag, text, zone, allow_repeats)
}

/// [`set_template`] without the gapless check (for `seqgen_create_gapless`, which sets the
/// template of the tag it creates).
pub(crate) fn set_any_template(tag: &str, text: &str, zone: &str, allow_repeats: bool) -> Result<()> {
    let t = parse_template(text)?;
    let tz = parse_zone(zone)?;
    check_new_node_field(tag, &t)?;
    if let (Some(unit), false) = (t.repeats_every(), allow_repeats) {
        return Err(SeqgenError::InvalidArgument(format!(
            "template \"{text}\" cannot tell its periods apart: its numbers repeat every {} \
             (add the missing date fields, or pass allow_repeats => true to accept that)",
            unit.name()
        )));
    }
    crate::generators::tags::change_tag(tag, || set_template_locked(tag, text, &t, zone, tz))
}

fn spi<T>(r: std::result::Result<T, pgrx::spi::Error>) -> Result<T> {
    r.map_err(|e| SeqgenError::Internal(e.to_string()))
}

/// The latest period of `unit` for which the tag reserved order numbers, if any (locked, so
/// the allocator reserves no block meanwhile), as committed now (see [`latest`]).
fn counter_period(tag: &str, unit: Option<Unit>) -> Result<Option<i64>> {
    let rows = latest(
        "SELECT period_key FROM seqgen.order_counter \
         WHERE biz_tag OPERATOR(pg_catalog.=) $1 AND unit OPERATOR(pg_catalog.=) $2 FOR SHARE",
        &[tag.into(), template::unit_name(unit).into()],
    )?;
    Ok(rows.first().and_then(|r| r[0].int()))
}

/// One statement of a template change, against the latest committed state whatever the
/// caller's isolation level (`session::latest`): under REPEATABLE READ the check missed the
/// period counter a draw committed after the transaction's snapshot, accepted a template that
/// could repeat that period's numbers, and recorded the old one as never used.
fn latest(sql: &str, args: &[pgrx::datum::DatumWithOid<'_>]) -> Result<Vec<Vec<Val>>> {
    spi(crate::plumbing::session::latest(sql, args))
}

/// Replace the template of `tag` (its rows locked by the caller's statements here). Every
/// template the tag has used is kept in `seqgen.template_history` with the last period it
/// issued numbers in; the new template must not render a text any of them rendered:
/// templates that cannot meet are accepted at once, templates that can meet only in a period
/// the old one used are accepted once that period is over (and never issue numbers before
/// the period after it, whatever the clock does later), others are refused.
fn set_template_locked(tag: &str, text: &str, t: &Template, zone: &str, tz: Tz) -> Result<()> {
    use seqgen_core::shape::{compare, period_text, Verdict};
    // the tag's row first (concurrent changes of one tag's template wait for each other),
    // then its template row: the allocator reserves no order-number block until the commit
    let exists = latest(
        "SELECT true FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1 FOR NO KEY UPDATE",
        &[tag.into()],
    )?;
    if exists.is_empty() {
        return Err(SeqgenError::UnknownTag(tag.to_string()));
    }
    let current = latest(
        "SELECT template FROM seqgen.template WHERE biz_tag OPERATOR(pg_catalog.=) $1 FOR UPDATE",
        &[tag.into()],
    )?
    .first()
    .and_then(|r| r[0].text());
    let history: Vec<(String, Option<i64>)> = latest(
        "SELECT template, last_key FROM seqgen.template_history WHERE biz_tag OPERATOR(pg_catalog.=) $1 FOR UPDATE",
        &[tag.into()],
    )?
    .into_iter()
    .map(|r| (r[0].text().unwrap_or_default(), r[1].int()))
    .collect();
    let now = shmem::now_ms();
    let mut floor: Option<i64> = None;
    for (old_text, last_key) in history.iter().filter(|(o, _)| o != text) {
        let Ok(old) = template::parse(old_text) else { continue };
        match compare(&old, t, tag) {
            Verdict::Apart => {}
            Verdict::Meet => {
                let both = seqgen_core::shape::example(&old, t, tag)
                    .map(|e| format!(" (both can render \"{e}\")"))
                    .unwrap_or_default();
                return Err(SeqgenError::InvalidArgument(format!(
                    "template \"{text}\" can render the numbers of template \"{old_text}\", which tag \"{tag}\" used\
                     {both}: change a literal, e.g. the prefix, so that the two cannot meet"
                )));
            }
            Verdict::ApartAfter(unit) => {
                let last = if current.as_deref() == Some(old_text.as_str()) {
                    counter_period(tag, Some(unit))?
                } else {
                    *last_key
                };
                let Some(last) = last else { continue }; // it never issued a number
                let fence = template::next_key(last, unit).ok_or_else(|| {
                    SeqgenError::InvalidArgument(format!(
                        "template \"{old_text}\" used the last period of the calendar"
                    ))
                })?;
                let at = template::truncate_key(t.locate(tz, now).key, unit);
                if at < fence {
                    return Err(SeqgenError::InvalidArgument(format!(
                        "template \"{text}\" can render the numbers template \"{old_text}\" issued in the {} {}: \
                         it is accepted from {} on (in time zone {zone}), or change a literal, e.g. the prefix, so that \
                         the two cannot meet",
                        unit.name(),
                        period_text(last, unit),
                        period_text(fence, unit)
                    )));
                }
                floor = floor.max(Some(fence));
            }
        }
    }
    if t.is_opaque() {
        crate::generators::opaque::ensure_key(tag)?;
    }
    if let Some(old_text) = current.as_deref().filter(|o| *o != text) {
        // the replaced template issued nothing after the period its unit's counter is in
        let unit = template::parse(old_text).ok().and_then(|o| o.unit());
        let last = counter_period(tag, unit)?;
        latest(
            "UPDATE seqgen.template_history SET last_key = $3 \
             WHERE biz_tag OPERATOR(pg_catalog.=) $1 AND template OPERATOR(pg_catalog.=) $2",
            &[tag.into(), old_text.into(), last.into()],
        )?;
    }
    latest(
        "INSERT INTO seqgen.template_history (biz_tag, template) VALUES ($1, $2) \
         ON CONFLICT (biz_tag, template) DO UPDATE SET last_key = NULL",
        &[tag.into(), text.into()],
    )?;
    if let Some(floor) = floor {
        // never a number of the new template before that period, whatever the clock does
        latest(
            "INSERT INTO seqgen.order_counter AS c (biz_tag, unit, period_key, period_max) VALUES ($1, $2, $3, 0) \
             ON CONFLICT (biz_tag, unit) DO UPDATE SET period_key = EXCLUDED.period_key, period_max = 0, \
             update_time = pg_catalog.now() WHERE c.period_key OPERATOR(pg_catalog.<) EXCLUDED.period_key",
            &[tag.into(), template::unit_name(t.unit()).into(), floor.into()],
        )?;
    }
    // the catalog's guard lets only this write change a template
    crate::plumbing::session::with_settings(&[("seqgen.changing_template", "on")], || {
        latest(
            "INSERT INTO seqgen.template (biz_tag, template, time_zone) VALUES ($1, $2, $3) \
             ON CONFLICT (biz_tag) DO UPDATE SET template = EXCLUDED.template, time_zone = EXCLUDED.time_zone, \
             update_time = pg_catalog.now()",
            &[tag.into(), text.into(), zone.into()],
        )
        .map(|_| ())
    })
}

/// `seqgen.seqgen_order_no(text)`: 0.x's one-argument form, kept for what stored it by OID
/// (moved into schema `seqgen` by the update to 1.0, as `seqgen_next(text)` was).
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_order_no(biz_tag: TagArg<'_>) -> &str {
    crate::plumbing::wait::begin_call();
    order_no(biz_tag.0).or_raise()
}

/// The next order number of a tag (`key` empty, the default), or of `biz_tag`'s counter for
/// `key`: the tag's template must render the key (`{key}`), and its counter (restarting in
/// each period) is the key's own.
#[pg_extern(volatile, parallel_unsafe, name = "seqgen_order_no")]
fn seqgen_order_no_key<'a>(biz_tag: TagArg<'a>, key: default!(KeyArg<'a>, "''")) -> &'a str {
    let TagArg(biz_tag) = biz_tag;
    crate::plumbing::wait::begin_call();
    let KeyArg(Some(key)) = key else {
        return order_no(biz_tag).or_raise();
    };
    let out = crate::generators::segment::with_key_name(biz_tag, key, |name| {
        // the text outlives the name built on the stack: see `order_no`
        order_no(name).map(|t| (t.as_ptr(), t.len()))
    });
    let (ptr, len) = out.or_raise();
    // SAFETY: the per-backend buffer `order_no` returned, untouched until the next call
    unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(ptr, len)) }
}

/// The next order number of `tag` (a slot name: a tag, or a tag and a key). The returned text
/// lives in a per-backend buffer until the next call (pgrx copies it into the result datum at
/// once).
pub fn order_no(tag: &str) -> Result<&str> {
    let mut r = resolve(tag)?;
    loop {
        let key = slot_key(r.slot);
        let out = (|| -> Result<Option<(*const u8, usize)>> {
            let mut guard = LOCAL.get();
            let locals = &mut *guard;
            if locals.last.as_ref().map(|(k, _)| *k) != Some(key) {
                if let Some((k, prev)) = locals.last.take() {
                    locals.others.insert(k, prev);
                }
                if let Some(loc) = locals.others.remove(&key) {
                    locals.last = Some((key, loc));
                }
            }
            let fresh = matches!(&locals.last, Some((_, loc))
                if loc.gen == r.gen && loc.version == r.slot.tpl.version.load(Ordering::Acquire));
            if !fresh {
                match load_local(tag, r)? {
                    Some(loc) => locals.last = Some((key, loc)),
                    // the slot no longer serves the tag: resolve it again
                    None => return Ok(None),
                }
            }
            let (_, loc) = locals.last.as_mut().expect("set above");
            let drawn = draw_one(tag, r, loc)?;
            Ok(match drawn {
                Some((period, value)) => {
                    render(loc, period, value, &mut locals.out)?;
                    Some((locals.out.as_ptr(), locals.out.len()))
                }
                None => None,
            })
        })();
        match out? {
            // SAFETY: `out` is only written by the next call of this function in this backend,
            // after pgrx has copied the text.
            Some((ptr, len)) => {
                return Ok(unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(ptr, len)) })
            }
            None => {
                // the slot changed (tag dropped or template replaced): start over
                forget(tag);
                r = resolve(tag)?;
            }
        }
    }
}

fn slot_key(s: &TagSlot) -> usize {
    s as *const TagSlot as usize
}

/// Read (asking the worker first if needed) and parse the slot's template.
fn load_local(tag: &str, r: Resolved) -> Result<Option<Local>> {
    let (mut version, mut state, mut text, mut zone) = r.slot.tpl.read();
    if state != TPL_READY {
        if !directory::load_template(tag, r)? {
            return Ok(None);
        }
        (version, state, text, zone) = r.slot.tpl.read();
    }
    if state == TPL_MISSING || state != TPL_READY {
        return Err(SeqgenError::NoTemplate(shmem::split_name(tag).0.to_string()));
    }
    let template = parse_template(&text)?;
    let (name, key_text) = shmem::split_name(tag);
    match (template.has_key(), key_text.is_some()) {
        (true, false) => return Err(SeqgenError::TemplateHasKey(name.to_string())),
        (false, true) => return Err(SeqgenError::TemplateLacksKey(name.to_string())),
        _ => {}
    }
    let node = check_node_field(name, &template)?;
    let key = r.slot.key();
    if template.is_opaque() && key.is_none() {
        return Err(SeqgenError::Internal(format!("the opaque template of tag \"{tag}\" has no key")));
    }
    Ok(Some(Local {
        gen: r.gen,
        version,
        template,
        tz: parse_zone(&zone)?,
        tag: name.to_string(),
        key_text: key_text.unwrap_or("").to_string(),
        key,
        node,
        span: None,
        prepared: None,
    }))
}

/// One counter value and its period, or `None` when the slot changed under us.
#[inline]
fn draw_one(tag: &str, r: Resolved, loc: &mut Local) -> Result<Option<(i64, i64)>> {
    let slot = r.slot;
    loop {
        let clock_key = clock_key(loc);
        match slot.ord.draw() {
            Draw::Value { value, period, prefetch, epoch } => {
                if prefetch {
                    request_block(slot, clock_key.max(period));
                }
                if period < clock_key {
                    // this block's period is over: move on (its remaining values are skipped)
                    if !slot.ord.switch_from(epoch) && !wait_for_block(tag, r, loc, epoch, clock_key)? {
                        return Ok(None);
                    }
                    continue;
                }
                if slot.gen().load(Ordering::Acquire) != r.gen {
                    return Ok(None);
                }
                return Ok(Some((period, value)));
            }
            Draw::Exhausted { epoch } => {
                let current = slot.ord.snapshot().current.map_or(i64::MIN, |s| s.period);
                if !slot.ord.switch_from(epoch) && !wait_for_block(tag, r, loc, epoch, clock_key.max(current))? {
                    return Ok(None);
                }
            }
            Draw::Lost => {}
        }
    }
}

/// The clock's period key, from the cached span while the clock is inside it. Templates
/// without date fields need no clock; periods of a minute or longer use the coarse clock
/// (one kernel tick of precision at a period boundary); per-second periods the precise one.
#[inline]
fn clock_key(loc: &mut Local) -> i64 {
    let now = match loc.template.unit() {
        None => return 0,
        Some(Unit::Second) => shmem::now_ms(),
        Some(_) => shmem::coarse_now_ms(),
    };
    match loc.span {
        Some(s) if s.start_ms <= now && now < s.end_ms => s.key,
        _ => {
            let s = loc.template.locate(loc.tz, now);
            loc.span = Some(s);
            s.key
        }
    }
}

#[inline]
fn render(loc: &mut Local, period: i64, value: i64, out: &mut String) -> Result<()> {
    if loc.prepared.as_ref().map(|p| p.key) != Some(period) {
        // a new period (once per period): its year must fit the template
        loc.template.renders_year(period).map_err(SeqgenError::DatetimeOutOfRange)?;
        loc.prepared = Some(loc.template.prepare_keyed(period, loc.node, &loc.tag, &loc.key_text, loc.key));
    }
    let p = loc.prepared.as_ref().expect("prepared above");
    out.clear();
    // SAFETY: only the template's own text (valid UTF-8) and ASCII digits are appended
    p.render_into(value as u64, unsafe { out.as_mut_vec() });
    Ok(())
}

fn request_block(slot: &TagSlot, period: i64) {
    slot.ord_want_period.fetch_max(period, Ordering::AcqRel);
    slot.ord_want.store(1, Ordering::Release);
    if let Some(h) = shmem::header() {
        shmem::ask(h, slot);
    }
}

/// Wait for the worker to publish the next block (for `period` or later). `Ok(false)` when
/// the slot changed. Overflow of a period of a second or less waits for the next period when
/// `seqgen.order_no_overflow = wait`.
#[cold]
#[inline(never)]
fn wait_for_block(tag: &str, r: Resolved, loc: &mut Local, epoch: u32, period: i64) -> Result<bool> {
    let h = directory::ready_header()?;
    let slot = r.slot;
    slot.ord_waits.fetch_add(1, Ordering::Relaxed);
    let mut want = period;
    let deadline = crate::plumbing::wait::call_deadline();
    loop {
        let err_before = slot.ord_err_seq.load(Ordering::Acquire);
        request_block(slot, want);
        let outcome = wait_until(h, deadline, || {
            if slot.gen().load(Ordering::Acquire) != r.gen || slot.tpl.version.load(Ordering::Acquire) != loc.version {
                return Some(Ok(false));
            }
            if slot.ord.switch_from(epoch) {
                return Some(Ok(true));
            }
            if slot.ord_locked.load(Ordering::Relaxed) != 0 {
                request_block(slot, want);
            }
            if slot.ord_err_seq.load(Ordering::Acquire) != err_before {
                return Some(Err(slot.ord_err_code.load(Ordering::Relaxed)));
            }
            // a worker that is not running is waited for until the timeout (it restarts)
            None
        });
        match outcome {
            Some(Ok(v)) => return Ok(v),
            Some(Err(code::OVERFLOW)) => {
                let full = slot.ord_err_period.load(Ordering::Relaxed);
                let short = matches!(loc.template.unit(), Some(Unit::Second));
                if guc::ORDER_NO_OVERFLOW.get() == Overflow::Wait && short && Instant::now() < deadline {
                    // wait for the next period, then ask for a block of it
                    let span = loc.template.locate(loc.tz, shmem::now_ms());
                    let left = deadline.saturating_duration_since(Instant::now()).as_millis() as i64;
                    let sleep = (span.end_ms - shmem::now_ms()).clamp(1, 1000).min(left.max(1));
                    unsafe { pg_sys::pg_usleep(sleep * 1000) };
                    pgrx::check_for_interrupts!();
                    want = clock_key(loc).max(full + 1);
                    continue;
                }
                return Err(SeqgenError::OrderOverflow { tag: tag.to_string(), capacity: loc.template.capacity() });
            }
            Some(Err(u32::MAX)) => return Err(SeqgenError::WorkerNotRunning),
            Some(Err(code::NO_TEMPLATE)) => return Err(SeqgenError::NoTemplate(shmem::split_name(tag).0.to_string())),
            Some(Err(c)) => return Err(directory::slot_failure(h, c, tag)),
            None if h.worker_status() != WorkerStatus::Running => return Err(SeqgenError::WorkerNotRunning),
            None if slot.ord_locked.load(Ordering::Relaxed) != 0 => {
                return Err(SeqgenError::RowLocked(tag.to_string()))
            }
            None => return Err(SeqgenError::Timeout { tag: tag.to_string(), ms: guc::ALLOCATION_TIMEOUT.get() }),
        }
    }
}

fn to_unix_ms(at: TimestampWithTimeZone) -> Result<i64> {
    if !at.is_finite() {
        return Err(SeqgenError::InvalidArgument("the timestamp must be finite".into()));
    }
    // PostgreSQL counts microseconds since 2000-01-01
    Ok(pg_sys::TimestampTz::from(at).div_euclid(1000) + 946_684_800_000)
}

fn render_preview(text: &str, seq: i64, at: TimestampWithTimeZone, zone: &str, tag: Option<&str>) -> Result<String> {
    let t = parse_template(text)?;
    let tz = parse_zone(zone)?;
    if t.uses_tag() && tag.is_none() {
        return Err(SeqgenError::InvalidArgument("the template uses {tag}, and no biz_tag is given".into()));
    }
    if seq < 1 || seq > t.capacity() {
        return Err(SeqgenError::InvalidArgument(format!(
            "seq must be between 1 and {} for {}, got {seq}",
            t.capacity(),
            t.seq_field()
        )));
    }
    t.check_node(setting_node_id()).map_err(SeqgenError::InvalidArgument)?;
    let span = t.locate(tz, to_unix_ms(at)?);
    t.renders_year(span.key).map_err(SeqgenError::DatetimeOutOfRange)?;
    // a template of counters per key shows where the key goes
    Ok(t.render_keyed(span.key, seq as u64, setting_node_id(), tag.unwrap_or(""), "{key}"))
}

/// `seqgen.seqgen_render(text, bigint, timestamptz, text)`: 0.x's form without a tag, kept for
/// what stored it by OID (moved into schema `seqgen` by the update to 1.0).
#[pg_extern(stable, parallel_safe)]
fn seqgen_render(template: &str, seq: i64, at: TimestampWithTimeZone, time_zone: default!(&str, "'UTC'")) -> String {
    render_preview(template, seq, at, time_zone, None).or_raise()
}

/// Preview: the number `seq` of the period containing `at`, for the tag `biz_tag` when the
/// template uses `{tag}` ('' for none, the default). `{node}` renders this
/// server's `seqgen.node_id` (a setting a restart may change: STABLE, not IMMUTABLE).
#[pg_extern(stable, parallel_safe, name = "seqgen_render")]
fn seqgen_render_with_tag(
    template: &str,
    seq: i64,
    at: TimestampWithTimeZone,
    time_zone: default!(&str, "'UTC'"),
    biz_tag: default!(&str, "''"),
) -> String {
    render_preview(template, seq, at, time_zone, (!biz_tag.is_empty()).then_some(biz_tag)).or_raise()
}

/// The period unit of a template: `none` (the counter never restarts), `year`, `month`,
/// `day`, `hour`, `minute` or `second`. Order-number counters are kept per tag and unit.
#[pg_extern(immutable, parallel_safe)]
fn seqgen_template_unit(template: &str) -> &'static str {
    template::unit_name(parse_template(template).or_raise().unit())
}

/// Is the last digit of `order_no` the Luhn check digit of the digits before it? For
/// templates that end in `{check}` (optionally followed by digit-free text); usable in a
/// CHECK constraint.
#[pg_extern(immutable, strict, parallel_safe)]
fn seqgen_check_digit_valid(order_no: &str) -> bool {
    luhn_valid(order_no)
}
