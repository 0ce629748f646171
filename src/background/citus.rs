//! A Citus worker's copy of the coordinator's tags.
//!
//! Tags are defined on the coordinator. On a Citus worker, the allocator starts a short-lived
//! background worker, "pg_seqgen sync", every [`PERIOD_MS`], at once when a call finds no tag
//! by its name, and when the node joins. It asks the coordinator for the definitions
//! (`seqgen_cluster_definitions`, through Citus's `run_command_on_coordinator`), with the
//! version this node applied last: only the version comes back when nothing changed. A new
//! version is applied with the functions of configuration as code, so every check of theirs
//! holds here too, in one transaction. Counters never travel: each node reserves from its own
//! copy of the row, and its IDs carry its node id (`plumbing::node`).
//!
//! The read runs in a process of its own so that a coordinator that does not answer (a
//! network partition, a stopped process) never holds up the allocator: the worker draws on
//! with the definitions it has. The read gives up after [`CONNECT_TIMEOUT_MS`] to connect; one
//! that still runs after [`HANG_MS`] is ended by the allocator.

use std::sync::atomic::Ordering;

use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder};
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::background::process::set_option;
use crate::generators::config;
use crate::plumbing::error::{OrRaise, Result, SeqgenError};
use crate::plumbing::node;
use crate::plumbing::shmem::{self, Header};

/// How often a worker asks whether the definitions changed.
pub const PERIOD_MS: i64 = 2000;
/// `citus.node_connection_timeout` of the read.
const CONNECT_TIMEOUT_MS: i32 = 2000;
/// `lock_timeout` of applying what the read brought.
const LOCK_TIMEOUT_MS: i32 = 10000;
/// A read still running after this long is ended (SIGTERM) by the allocator.
const HANG_MS: i64 = 30000;

/// The allocator's side: when it last started a read.
#[derive(Default)]
pub struct Sync {
    last_start_ms: i64,
}

impl Sync {
    /// Start a read if one is due (on a Citus worker) and none is running. A caller's
    /// request that finds one running stays pending for the next.
    pub fn maybe_start(&mut self, h: &Header, db: u32, now: i64) {
        if !node::is_citus_worker(h) {
            return;
        }
        let wanted = h.sync_want.load(Ordering::Acquire) != 0;
        if !wanted && now - self.last_start_ms < PERIOD_MS {
            return;
        }
        let pid = h.sync_pid.load(Ordering::Acquire);
        if crate::background::process::alive(pid) {
            // a read that hangs (a coordinator that accepts connections but never answers)
            // is ended, so that the next one can start
            if now - h.sync_started_ms.load(Ordering::Acquire) > HANG_MS {
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
            return;
        }
        h.sync_want.store(0, Ordering::Release);
        h.sync_started_ms.store(now, Ordering::Release);
        self.last_start_ms = now;
        let started = BackgroundWorkerBuilder::new(&format!("pg_seqgen sync for database {db}"))
            .set_type("pg_seqgen sync")
            .set_function("pg_seqgen_sync_main")
            .set_library("pg_seqgen")
            .enable_spi_access()
            .set_start_time(pgrx::bgworkers::BgWorkerStartTime::RecoveryFinished)
            .set_restart_time(None)
            .set_argument(Some(pg_sys::Datum::from(db as u64)))
            .load_dynamic();
        if started.is_err() {
            note_failure(h, "no background worker slot is free (raise max_worker_processes)");
            h.sync_answered.store(h.sync_asked.load(Ordering::Acquire), Ordering::Release);
            h.sync_seq.fetch_add(1, Ordering::AcqRel);
            h.broadcast();
        }
    }
}

/// The "pg_seqgen sync" background worker: one read of the coordinator's definitions for
/// database `arg`, applied, then exit.
#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn pg_seqgen_sync_main(arg: pg_sys::Datum) {
    unsafe { pg_sys::BackgroundWorkerUnblockSignals() };
    let db = (arg.value() & 0xffff_ffff) as u32;
    let Some(h) = shmem::server().and_then(|s| shmem::find_area(s, db)) else { return };
    let me = unsafe { pg_sys::MyProcPid };
    if h.sync_pid.compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire).is_err() && !claim_from_dead(h, me) {
        return; // another read runs
    }
    BackgroundWorker::connect_worker_to_spi_by_oid(Some(pg_sys::Oid::from(db)), None);
    unsafe {
        set_option(c"search_path", c"pg_catalog, pg_temp");
        set_option(c"lock_timeout", &std::ffi::CString::new(LOCK_TIMEOUT_MS.to_string()).unwrap());
        set_option(c"citus.node_connection_timeout", &std::ffi::CString::new(CONNECT_TIMEOUT_MS.to_string()).unwrap());
    }
    // every change committed on the coordinator before this instant is in what the read
    // brings: a successful read records it (`seqgen_node().definitions_read`), and a caller
    // that asked for a read before it waits for this one (`node::sync_now`)
    let began = shmem::now_ms();
    let asked = h.sync_asked.load(Ordering::Acquire);
    if h.citus_node.load(Ordering::Acquire) == node::UNCONFIRMED && !confirm_group(h) {
        h.sync_answered.fetch_max(asked, Ordering::AcqRel);
        h.sync_seq.fetch_add(1, Ordering::AcqRel);
        h.sync_pid.store(0, Ordering::Release);
        h.broadcast();
        return;
    }
    let known = match (h.sync_known_oid.load(Ordering::Acquire), h.sync_known_version.load(Ordering::Acquire)) {
        (0, _) => None,
        (oid, v) => Some(format!("{oid}:{v}")),
    };
    let outcome = crate::background::process::in_transaction_logged(
        None,
        std::panic::AssertUnwindSafe(|| {
            let v = fetch(known.as_deref()).or_raise();
            let applied = apply(&v).or_raise();
            let refused = applied.as_ref().map(|a| note_refused(&a.refused).or_raise());
            (v.get("version").and_then(|x| x.as_str()).map(str::to_string), applied, refused)
        }),
    );
    let now = shmem::now_ms();
    match outcome {
        Ok((version, applied, refused)) => {
            let changes = applied.map(|a| a.done).unwrap_or_default();
            let all_applied = refused.is_none_or(|n| n == 0);
            // A version with refused changes is not taken as known: the next read brings the
            // whole document again and retries them (a role created here since, a period
            // ended), while the changes made stay made.
            if let (Some((oid, v)), true) = (version.as_deref().and_then(|s| s.split_once(':')), all_applied) {
                h.sync_known_oid.store(oid.parse().unwrap_or(0), Ordering::Release);
                h.sync_known_version.store(v.parse().unwrap_or(0), Ordering::Release);
            }
            h.sync_ok_ms.store(began, Ordering::Release);
            if !changes.is_empty() {
                h.sync_applied_ms.store(now, Ordering::Release);
                let list: Vec<String> = changes.iter().take(10).map(|(t, a)| format!("{t}: {a}")).collect();
                log!(
                    "pg_seqgen sync: {} change(s) of the coordinator's tag definitions applied ({})",
                    changes.len(),
                    list.join("; ")
                );
            }
            if h.sync_failing.swap(0, Ordering::AcqRel) != 0 {
                log!("pg_seqgen sync: the coordinator's tag definitions are read again");
            }
        }
        Err(e) => note_failure(h, &e.msg),
    }
    h.sync_answered.fetch_max(asked, Ordering::AcqRel);
    h.sync_seq.fetch_add(1, Ordering::AcqRel);
    h.sync_pid.store(0, Ordering::Release);
    h.broadcast();
    if h.sync_asked.load(Ordering::Acquire) > asked {
        // callers asked while this read ran: the allocator starts the next at once
        h.ring();
    }
}

/// This server reads a group it has not confirmed as its own (`plumbing::node::confirm`): try
/// to, and publish it when it is (then the definitions are read in the same run: a caller
/// waits for both). A failure is logged once until a confirmation succeeds.
fn confirm_group(h: &Header) -> bool {
    let g = h.citus_candidate.load(Ordering::Acquire);
    let outcome =
        crate::background::process::in_transaction_logged(None, std::panic::AssertUnwindSafe(|| node::confirm(g)));
    match outcome {
        Ok(Ok(id)) => {
            h.confirm_failing.store(0, Ordering::Release);
            log!("pg_seqgen sync: Citus group {g} is confirmed as this server's own; the coordinator's node id for it is {id}");
            node::publish_confirmed(h, g, id);
            h.citus_node.load(Ordering::Acquire) == node::pack(g, id)
        }
        Ok(Err(why)) | Err(crate::background::process::JobError { msg: why, .. }) => {
            if h.confirm_failing.swap(1, Ordering::AcqRel) == 0 {
                warning!(
                    "pg_seqgen sync: this server reads Citus group {g} but cannot confirm it as its own ({why}); \
                     IDs that carry a node id are refused until it can (tried again every {PERIOD_MS} ms)"
                );
            }
            false
        }
    }
}

/// The previous read's process died without clearing its pid: take over.
fn claim_from_dead(h: &Header, me: i32) -> bool {
    let other = h.sync_pid.load(Ordering::Acquire);
    !crate::background::process::alive(other)
        && h.sync_pid.compare_exchange(other, me, Ordering::AcqRel, Ordering::Acquire).is_ok()
}

/// Warn once per episode of failed reads.
fn note_failure(h: &Header, msg: &str) {
    if h.sync_failing.swap(1, Ordering::AcqRel) == 0 {
        warning!(
            "pg_seqgen sync: reading the tag definitions from the Citus coordinator failed ({msg}); \
             this node draws on with the definitions it has, and tries again every {PERIOD_MS} ms"
        );
    }
}

/// Ask the coordinator for the definitions newer than `known`.
fn fetch(known: Option<&str>) -> Result<serde_json::Value> {
    let text = Spi::connect(|c| node::on_coordinator(c, "seqgen_cluster_definitions(%L)", &[known]))
        .map_err(SeqgenError::Internal)?;
    serde_json::from_str(&text)
        .map_err(|e| SeqgenError::Internal(format!("the coordinator's definitions are not JSON: {e}")))
}

/// Apply what [`fetch`] returned (None when only the version came back: nothing changed).
fn apply(v: &serde_json::Value) -> Result<Option<config::Applied>> {
    if v.get("config").is_none() {
        return Ok(None);
    }
    node::applying(|| config::apply_from_coordinator(v)).map(Some)
}

/// Keep this node's refused changes in `seqgen.definitions_refused` (the coordinator shows
/// every node's with `seqgen_cluster_refused()`), one row per tag and field: a refusal still
/// made keeps the time it was first made (its message updated), one no longer made goes, and
/// each new one is logged. Returns how many there are.
fn note_refused(refused: &[(String, String, String)]) -> Result<usize> {
    let rows: Vec<serde_json::Value> = refused
        .iter()
        .map(|(tag, field, problem)| serde_json::json!({ "biz_tag": tag, "field": field, "problem": problem }))
        .collect();
    let new = Spi::connect_mut(|c| {
        c.update(
            "WITH n AS (SELECT DISTINCT ON (x.biz_tag, x.field) x.biz_tag, x.field, x.problem \
                        FROM pg_catalog.jsonb_to_recordset($1) AS x(biz_tag pg_catalog.text, field pg_catalog.text, \
                                                                    problem pg_catalog.text)), \
                  gone AS (DELETE FROM seqgen.definitions_refused r WHERE NOT EXISTS \
                           (SELECT 1 FROM n WHERE n.biz_tag OPERATOR(pg_catalog.=) r.biz_tag \
                              AND n.field OPERATOR(pg_catalog.=) r.field)) \
             INSERT INTO seqgen.definitions_refused AS r (biz_tag, field, problem, since) \
             SELECT n.biz_tag, n.field, n.problem, pg_catalog.now() FROM n \
             ON CONFLICT (biz_tag, field) DO UPDATE SET problem = excluded.problem \
                WHERE r.problem OPERATOR(pg_catalog.<>) excluded.problem \
             RETURNING r.biz_tag, r.field, r.problem, r.xmax::pg_catalog.text OPERATOR(pg_catalog.=) '0'",
            None,
            &[pgrx::JsonB(serde_json::Value::Array(rows)).into()],
        )?
        .filter_map(|r| match r.get::<bool>(4) {
            // only a refusal new here is logged (a known one whose wording moved, e.g. the
            // period it names, is updated in place)
            Ok(Some(true)) => Some(Ok((
                r.get::<String>(1).ok().flatten().unwrap_or_default(),
                r.get::<String>(2).ok().flatten().unwrap_or_default(),
                r.get::<String>(3).ok().flatten().unwrap_or_default(),
            ))),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        })
        .collect::<std::result::Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(|e| SeqgenError::Internal(e.to_string()))?;
    for (tag, field, problem) in new {
        warning!(
            "pg_seqgen sync: this node refused a change of tag \"{tag}\" made on the Citus coordinator ({field}: {problem}); \
             every other change is applied, and this one is tried again every {PERIOD_MS} ms \
             (the coordinator lists it in seqgen_cluster_refused())"
        );
    }
    Ok(refused.len())
}
