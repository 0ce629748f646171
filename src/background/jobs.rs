//! The allocator's jobs: what a request gathered from shared memory becomes (`Job`), the slot
//! a job is about as the job saw it (`SlotRef`), running one against the catalog (`run_job`,
//! with the sizes of the reservations) and what it gave (`Outcome`). The worker gathers them
//! and runs each in a subtransaction (`worker.rs`); what happens after the commit is
//! `publish.rs`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::time::Duration;

use pgrx::spi::SpiClient;

use crate::background::process::{in_subtransaction, JobError};
use crate::generators::snowflake::{Kind, SnowflakeJob};
use crate::plumbing::catalog::{self, Birth, Lease, OrderReserve, Reserve, TemplateRead};
use crate::plumbing::shmem::{self, Header, Ident, Mailbox, TagSlot};

/// One unit of work gathered from shared memory.
pub(super) enum Job {
    /// Load a tag into a slot (mailbox index and use, tag). `draw_as`: the role whose first
    /// draw of a keyed counter asked for the load (0: a load only); its first segment is
    /// reserved in the same transaction when that role may draw from the tag (one round trip
    /// for a new key instead of two).
    /// `acl_epoch`: the database's `acl_epoch` before the load's catalog read (`None`: a
    /// prepared transaction may change grants), under which the grants the load read are kept
    /// in the slot for the backends' first draws.
    /// `retired`: the tag's counter of retirement requests then (`shmem::retire_requests`;
    /// see `publish::finish`).
    Load { mb: usize, seq: u64, tag: String, draw_as: u32, acl_epoch: Option<u64>, retired: u64 },
    /// Reserve a dedicated range of `n` values for the tag of a slot.
    Range { mb: usize, seq: u64, slot: SlotRef, n: i64 },
    /// Read the template of a slot's tag into the slot.
    Template { mb: usize, seq: u64, slot: SlotRef },
    /// Reserve the next segment of an active slot. `asked`: a caller is waiting for it.
    Prefetch { slot: SlotRef, asked: bool },
    /// Reserve the next order-number counter block of a slot (whose template is `text` in time
    /// zone `zone`), for period `want` or later.
    Order { slot: SlotRef, text: String, zone: String, want: i64, asked: bool },
    /// Load or extend the reservation of a clock-ordered generator (snowflake or UUIDv7);
    /// `ts` is the reservation to persist.
    Snowflake { kind: Kind, job: SnowflakeJob, ts: i64 },
    /// Check that every loaded slot still serves its catalog row.
    Verify { slots: Vec<SlotRef> },
    /// Give back the lease of a tag no new key was made under for a while
    /// (`catalog::Plans::return_lease`).
    ReturnLease { tag: String, lease: Lease },
}

/// The leases in the transaction of a cycle (the allocator's are `leases.rs`): a lease a new
/// key started there serves the keys after it in the same transaction (they commit, and are
/// flushed, with the floor that covers them).
pub(super) struct InCycle<'a> {
    /// The leases held before the cycle, by tag (with when a key was last made under each).
    held: &'a HashMap<String, (Lease, i64)>,
    started: HashMap<String, Lease>,
}

impl<'a> InCycle<'a> {
    pub(super) fn new(held: &'a HashMap<String, (Lease, i64)>) -> InCycle<'a> {
        InCycle { held, started: HashMap::new() }
    }

    /// The lease of the tag of `name` (a tag and a key), if held or started here.
    pub(super) fn of(&self, name: &str) -> Option<Lease> {
        let tag = shmem::split_name(name).0;
        self.started.get(tag).copied().or_else(|| self.held.get(tag).map(|(l, _)| *l))
    }

    /// Note the lease the first segment `first` of `name` started, if it did.
    pub(super) fn started(&mut self, name: &str, first: Option<&(Reserve, Birth)>) {
        if let Some((_, Birth::Started(l))) = first {
            self.hold(shmem::split_name(name).0, *l);
        }
    }

    /// Note lease `l` of `tag`, started in this transaction.
    pub(super) fn hold(&mut self, tag: &str, l: Lease) {
        self.started.insert(tag.to_string(), l);
    }
}

/// A slot as the job saw it: a job's result is applied only if the slot still has this
/// generation, and a reservation only comes from the row with this identity.
#[derive(Clone)]
pub(super) struct SlotRef {
    pub(super) idx: usize,
    pub(super) gen: u64,
    pub(super) ident: Ident,
    pub(super) tag: String,
}

impl SlotRef {
    /// The slot's current tag, generation and identity, read consistently (the identity only
    /// changes together with the generation, under the directory lock).
    pub(super) fn of(idx: usize, s: &TagSlot) -> Option<SlotRef> {
        let gen = s.gen().load(Ordering::Acquire);
        let tag = String::from_utf8_lossy(s.name()).into_owned();
        let ident = s.ident();
        (s.state.load(Ordering::Acquire) == shmem::SLOT_ACTIVE && s.gen().load(Ordering::Acquire) == gen)
            .then_some(SlotRef { idx, gen, ident, tag })
    }

    /// For a mailbox request about a resolved slot: the slot if it still has the generation
    /// the caller resolved.
    pub(super) fn of_request(h: &'static Header, mb: &Mailbox) -> Option<SlotRef> {
        let idx = mb.slot.load(Ordering::Relaxed) as usize;
        let s = shmem::all_slots(h).get(idx)?;
        SlotRef::of(idx, s).filter(|r| r.gen == mb.gen.load(Ordering::Relaxed))
    }
}

pub(super) enum Outcome {
    Reserved(Reserve),
    /// Snowflake: the persisted high-water ID was read (Load) or written (Extend); `None`:
    /// the row was locked.
    Snowflake(Option<i64>),
    /// Loads: the tag exists, with this configured step, identity and owner; with the first
    /// segment of a keyed counter when one was reserved (`Reserve::Done`).
    Loaded(catalog::Loaded, Option<(Reserve, Birth)>),
    /// A tag's lease given back (`catalog::Plans::return_lease`).
    Returned,
    Template(TemplateRead),
    Order(OrderReserve),
    /// Verify: the slots that no longer serve their row.
    Stale(Vec<usize>),
    CatalogMissing,
    NeedsUpdate(String),
    Failed(JobError),
}

pub(super) fn run_job(
    client: &mut SpiClient<'_>,
    plans: &catalog::Plans,
    job: &Job,
    slots: &'static [TagSlot],
    policy: &seqgen_core::adaptive::StepPolicy,
) -> pgrx::spi::Result<Outcome> {
    let now = shmem::now_ms();
    Ok(match job {
        // Loading only reads the tag's step and identity: the first segment (or order-number
        // block) is reserved when it is first needed, so a call that fails later (e.g. a tag
        // without a template) has reserved nothing.
        Job::Load { tag, .. } => match plans.tag_load(client, tag)? {
            Some(l) if l.gapless => Outcome::Reserved(Reserve::Gapless),
            Some(l) => Outcome::Loaded(l, None),
            None => Outcome::Reserved(Reserve::Missing),
        },
        Job::Range { slot, n, .. } => Outcome::Reserved(plans.reserve_for(client, &slot.tag, slot.ident, |_| *n)?),
        Job::Template { slot, .. } => Outcome::Template(plans.template_read(client, &slot.tag, slot.ident)?),
        Job::Order { slot, text, zone, want, .. } => {
            let s = &slots[slot.idx];
            let (cur, last) = (s.ord_cur_step.load(Ordering::Relaxed), s.ord_last_ms.load(Ordering::Relaxed));
            // order blocks of tags and keys alike: from one number up (see `key_step`)
            let lasted = (last != 0).then(|| Duration::from_millis((now - last).max(0) as u64));
            let size = move |step| key_step(policy, cur, step, lasted);
            Outcome::Order(plans.order_block(client, &slot.tag, slot.ident, (text, zone), *want, size)?)
        }
        Job::Snowflake { kind, job: SnowflakeJob::Refresh, .. } => {
            Outcome::Snowflake(Some(plans.reservation_read(client, kind.table())?))
        }
        Job::Snowflake { kind, job: SnowflakeJob::Extend, ts } => {
            let id = kind.layout().id_floor(*ts);
            Outcome::Snowflake(plans.reservation_write(client, kind.table(), id)?)
        }
        Job::Prefetch { slot, .. } => {
            let s = &slots[slot.idx];
            let (cur, last) = (s.cur_step.load(Ordering::Relaxed), s.last_alloc_ms.load(Ordering::Relaxed));
            Outcome::Reserved(plans.reserve_for(
                client,
                &slot.tag,
                slot.ident,
                sizer(policy, &slot.tag, cur, last, now),
            )?)
        }
        Job::ReturnLease { tag, lease } => {
            plans.return_lease(client, tag, *lease)?;
            Outcome::Returned
        }
        Job::Verify { slots: refs } => {
            let names: Vec<String> = refs.iter().map(|r| r.tag.clone()).collect();
            let found: HashMap<String, Ident> = plans.verify(client, names)?.into_iter().collect();
            // a keyed counter serves its tag's row
            let serves = |r: &SlotRef| found.get(shmem::split_name(&r.tag).0) == Some(&r.ident);
            Outcome::Stale(refs.iter().filter(|r| !serves(r)).map(|r| r.idx).collect())
        }
    })
}

/// The first segment of a keyed counter just loaded (`loaded`, the row a load read) for the
/// first draw of `role`, if that role may draw from the tag as its row has it under the
/// reservation's lock; reserved from that row only (its identity is checked there too), sized
/// as the first prefetch after a load would be. `None`: not a keyed counter, or not allowed
/// (the caller's own check refuses it next), or nothing reserved (the draw asks for its segment
/// as usual, and meets any failure then). `lease`: the allocator's lease of the tag, if it
/// holds one (see `catalog::Lease`).
pub(super) fn first_segment(
    client: &mut SpiClient<'_>,
    plans: &catalog::Plans,
    name: &str,
    loaded: &catalog::Loaded,
    role: u32,
    policy: &seqgen_core::adaptive::StepPolicy,
    lease: Option<Lease>,
) -> pgrx::spi::Result<Option<(Reserve, Birth)>> {
    // (a name without a key is refused by `reserve_first_of_key` without a statement; a
    // gapless tag is never `Loaded`, and its locked row says so again)
    let cur = loaded.step;
    let size = move |step| key_step(policy, cur, step, None);
    let (r, birth) = plans.reserve_first_of_key(client, name, loaded.ident, size, role, lease)?;
    Ok(matches!(r, Reserve::Done { .. }).then_some((r, birth)))
}

/// The loads in `jobs` that draw a key first (`draw_as`), as new keys made at once tag by tag
/// (`catalog::Plans::make_keys`, each tag in a subtransaction of its own): the outcome of each
/// load of a key made there, by the job's index. A load not made there (a key with a row, a
/// role refused the tag, a failure) runs as one at a time does, and meets there what kept it.
pub(super) fn make_new_keys(
    plans: &catalog::Plans,
    jobs: &[Job],
    policy: &seqgen_core::adaptive::StepPolicy,
    leases: &mut InCycle<'_>,
) -> HashMap<usize, Outcome> {
    let mut by_tag: BTreeMap<&str, Vec<(usize, &str, u32)>> = BTreeMap::new();
    for (i, job) in jobs.iter().enumerate() {
        if let Job::Load { tag: name, draw_as, .. } = job {
            if let (tag, Some(key)) = shmem::split_name(name) {
                if *draw_as != 0 {
                    by_tag.entry(tag).or_default().push((i, key, *draw_as));
                }
            }
        }
    }
    let mut out = HashMap::new();
    for (tag, loads) in by_tag {
        let keys: Vec<(&str, u32)> = loads.iter().map(|&(_, k, r)| (k, r)).collect();
        let size = |step| key_step(policy, catalog::NEW_KEY_STEP, step, None);
        let lease = leases.of(tag);
        let Ok(Some(m)) = in_subtransaction(|c| plans.make_keys(c, tag, &keys, size, lease)) else { continue };
        if let Birth::Started(l) = m.birth {
            leases.hold(tag, l);
        }
        // the first key made starts the lease; the others are under it, in the same commit
        let mut birth = m.birth;
        for (&(i, _, _), made) in loads.iter().zip(m.made) {
            let Some(range) = made else { continue };
            let first = (Reserve::Done { range, step: m.step, opaque: None, node_bits: m.node_bits }, birth);
            out.insert(i, Outcome::Loaded(m.loaded.clone(), Some(first)));
            if matches!(birth, Birth::Started(_)) {
                birth = Birth::Leased;
            }
        }
    }
    out
}

/// How many values the next reservation of `name` (a tag, or a tag and a key) takes, given
/// the tag's configured step: the current size `cur` adapted to how long ago the last one was
/// made (`last_ms`; 0: never since the slot was loaded).
fn sizer<'a>(
    policy: &'a seqgen_core::adaptive::StepPolicy,
    name: &str,
    cur: i64,
    last_ms: i64,
    now: i64,
) -> impl FnOnce(i64) -> i64 + 'a {
    let lasted = Duration::from_millis((now - last_ms).max(0) as u64);
    let keyed = shmem::split_name(name).1.is_some();
    move |step| {
        if keyed {
            key_step(policy, cur, step, (last_ms != 0).then_some(lasted))
        } else {
            policy.next_step(cur, step, Some(lasted))
        }
    }
}

/// The step of a keyed counter's next segment: from 1 up to the adaptive ceiling of its tag
/// (`seqgen.max_step`, or the tag's step if that is larger), doubled while segments last less
/// than the policy's `grow_below` and halved when they last more than its `shrink_above`, so
/// a key that draws a few numbers a day keeps taking one or two at a time and a hot key is
/// served like a tag. Always adaptive (a fixed step would burn it per key). `lasted`: `None`
/// for the first segment after the key was loaded (its stored step is kept).
fn key_step(policy: &seqgen_core::adaptive::StepPolicy, cur: i64, tag_step: i64, lasted: Option<Duration>) -> i64 {
    let p = seqgen_core::adaptive::StepPolicy { enabled: true, max_step: policy.max_step.max(tag_step), ..*policy };
    p.next_step(cur, 1, lasted)
}
