//! What the allocator finds to do in shared memory each cycle: the requests posted in the
//! mailboxes, the slots that want their next segment, the clock-ordered generators'
//! reservations (`gather`); mailboxes given up (`reclaim_mailboxes`); and the jobs of an
//! interrupted cycle asked for again (`requeue`).

use std::sync::atomic::Ordering;

use pgrx::pg_sys;

use crate::background::jobs::{Job, SlotRef};
use crate::background::publish::answer;
use crate::generators::snowflake::{self, Kind};
use crate::plumbing::directory::code;
use crate::plumbing::shmem::{self, Header};

/// Free abandoned mailboxes, and (once a second) mailboxes whose owner process is gone.
pub(super) fn reclaim_mailboxes(h: &'static Header, check_owners: bool) {
    for mb in &h.mailboxes {
        let (seq, state) = mb.load();
        let reclaim = match state {
            shmem::MB_FREE => false,
            shmem::MB_ABANDONED => mb.free(seq, state),
            _ if check_owners => {
                let owner = mb.owner.load(Ordering::Acquire);
                owner != 0 && unsafe { pg_sys::BackendPidGetProc(owner) }.is_null() && mb.free(seq, state)
            }
            _ => false,
        };
        if reclaim {
            h.health.reclaimed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The jobs of a cycle: the clock-ordered generators' reservations due, the mailboxes posted
/// (requests of backends), and the prefetches the `candidates` slots ask for.
pub(super) fn gather(h: &'static Header, now: i64, periodic: bool, candidates: &[usize]) -> Vec<Job> {
    let mut jobs = vec![];
    for kind in Kind::ALL {
        if let Some(job) = snowflake::worker_wants(h, kind, now, periodic) {
            jobs.push(Job::Snowflake { kind, job, ts: snowflake::next_reservation(h, kind, now) });
        }
    }
    for (i, mb) in h.mailboxes.iter().enumerate() {
        let (seq, state) = mb.load();
        if state != shmem::MB_POSTED {
            continue;
        }
        if mb.epoch.load(Ordering::Relaxed) != h.epoch.load(Ordering::Acquire) {
            answer(mb, seq, code::STALE, 0, 0, "");
            continue;
        }
        let tag = String::from_utf8_lossy(&mb.name()).into_owned();
        match mb.kind.load(Ordering::Relaxed) {
            shmem::REQ_LOAD => {
                // loaded before any snapshot of the cycle's transaction (as a backend loads it
                // before its catalog read; see `grants::SharedGrants`)
                let retired = shmem::retire_requests(h, tag.as_bytes()).load(Ordering::Acquire);
                let epoch = h.acl_epoch.load(Ordering::Acquire);
                let settled = h.acl_prepared.load(Ordering::Acquire) == 0;
                // a first segment for the first load of a key in the cycle only (several
                // sessions' first draws of one new key would each reserve one, and only a load
                // that makes the key's slot publishes it: the others' would be gaps)
                let first = settled && !jobs.iter().any(|j| matches!(j, Job::Load { tag: t, .. } if *t == tag));
                let draw_as = if first { mb.n.load(Ordering::Relaxed) as u32 } else { 0 };
                jobs.push(Job::Load { mb: i, seq, tag, draw_as, acl_epoch: settled.then_some(epoch), retired })
            }
            kind @ (shmem::REQ_TEMPLATE | shmem::REQ_RANGE) => match SlotRef::of_request(h, mb) {
                Some(slot) if kind == shmem::REQ_TEMPLATE => jobs.push(Job::Template { mb: i, seq, slot }),
                Some(slot) => jobs.push(Job::Range { mb: i, seq, slot, n: mb.n.load(Ordering::Relaxed) }),
                None => answer(mb, seq, code::STALE, 0, 0, ""),
            },
            _ => answer(mb, seq, code::INTERNAL, 0, 0, "unknown request kind"),
        }
    }
    let slots = shmem::slots(h);
    for &i in candidates {
        let Some(s) = slots.get(i) else { continue };
        if s.state.load(Ordering::Acquire) != shmem::SLOT_ACTIVE {
            continue;
        }
        let asked = s.want.swap(0, Ordering::AcqRel) != 0;
        // One segment ahead at most: a request that arrives when the next segment is already
        // waiting (e.g. both the trigger and a caller at the end of the segment asked) is moot.
        if s.seg.has_next() {
            continue;
        }
        // A tag that failed for good (bigint exhausted) is retried only when a caller asks.
        let failed =
            matches!(s.err_code.load(Ordering::Relaxed), code::EXHAUSTED | code::KEYED_OPAQUE | code::KEY_LIMIT);
        if asked || (!failed && s.seg.wants_next()) {
            if let Some(slot) = SlotRef::of(i, s) {
                jobs.push(Job::Prefetch { slot, asked });
            }
        }
    }
    jobs
}

/// The jobs of an interrupted cycle are asked for again.
pub(super) fn requeue(h: &'static Header, jobs: &[Job]) {
    let slots = shmem::all_slots(h);
    for job in jobs {
        match job {
            Job::Prefetch { slot, .. } => {
                slots[slot.idx].want.store(shmem::WANT_SEGMENT, Ordering::Release);
                shmem::ask(h, &slots[slot.idx]);
            }
            Job::Order { slot, .. } => {
                slots[slot.idx].ord_want.store(1, Ordering::Release);
                shmem::ask(h, &slots[slot.idx]);
            }
            Job::Snowflake { kind, .. } => kind.area(h).want.store(1, Ordering::Release),
            // mailboxes stay POSTED and are gathered again
            _ => {}
        }
    }
}
