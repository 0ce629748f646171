//! A Citus worker's copy of the coordinator's tags.
//!
//! Tags are defined on the coordinator. The allocator of a Citus worker reads their
//! definitions from there (`seqgen_cluster_definitions`, through Citus's
//! `run_command_on_coordinator`) every [`PERIOD_MS`], at once when a call finds no tag by
//! its name, and when the node joins; it applies them with the functions of
//! configuration as code, so every check of theirs holds here too. Only the version
//! travels when nothing changed. Counters never travel: each node reserves from its own copy
//! of the row, and its IDs carry its group id (`plumbing::node`). With the coordinator
//! unreachable the worker keeps drawing from what it has.

use std::sync::atomic::Ordering;

use pgrx::prelude::*;

use crate::generators::config;
use crate::plumbing::error::{Result, SeqgenError};
use crate::plumbing::node;
use crate::plumbing::shmem::{self, Header};

/// What one read brought: the version read, and the changes applied (tag, what).
pub type Applied = (Option<String>, Vec<(String, String)>);

/// How often a worker asks whether the definitions changed.
pub const PERIOD_MS: i64 = 2000;

/// The worker's side: the version it applied last, and when it last tried.
#[derive(Default)]
pub struct Sync {
    known: Option<String>,
    last_try_ms: i64,
    failing: bool,
}

impl Sync {
    /// Is a read due (and is this a Citus worker)? Takes a caller's request.
    pub fn due(&self, h: &Header, now: i64) -> bool {
        if !node::is_citus_worker(h) {
            return false;
        }
        h.sync_want.swap(0, Ordering::AcqRel) != 0 || now - self.last_try_ms >= PERIOD_MS
    }

    /// Read and apply the definitions, in the caller's transaction (an error rolls all of it
    /// back). Returns the version read and the changes made.
    pub fn run(&mut self, now: i64) -> Result<Applied> {
        self.last_try_ms = now;
        let v = fetch(self.known.as_deref())?;
        let done = apply(&v)?;
        Ok((v.get("version").and_then(|x| x.as_str()).map(str::to_string), done))
    }

    /// After a try: note the outcome, wake the callers waiting for it.
    pub fn finish(&mut self, h: &Header, outcome: std::result::Result<Applied, String>) {
        let now = shmem::now_ms();
        if let Ok((version, changes)) = &outcome {
            self.known = version.clone();
            h.sync_ok_ms.store(now, Ordering::Release);
            if !changes.is_empty() {
                h.sync_applied_ms.store(now, Ordering::Release);
                let list: Vec<String> = changes.iter().take(10).map(|(t, a)| format!("{t}: {a}")).collect();
                log!(
                    "pg_seqgen allocator: {} change(s) of the coordinator's tag definitions applied ({})",
                    changes.len(),
                    list.join("; ")
                );
            }
            if self.failing {
                log!("pg_seqgen allocator: the coordinator's tag definitions are read again");
            }
            self.failing = false;
        } else if !self.failing {
            self.failing = true;
            warning!(
                "pg_seqgen allocator: reading the tag definitions from the Citus coordinator failed ({}); \
                 this node draws on with the definitions it has, and tries again every {} ms",
                outcome.as_ref().err().map_or("unknown error", |e| e.as_str()),
                PERIOD_MS
            );
        }
        h.sync_seq.fetch_add(1, Ordering::AcqRel);
        h.broadcast();
    }
}

/// Ask the coordinator for the definitions newer than `known`.
fn fetch(known: Option<&str>) -> Result<serde_json::Value> {
    let row = Spi::connect(|c| {
        let t = c.select(
            "SELECT r.success, r.result FROM pg_catalog.run_command_on_coordinator(\
                 (SELECT pg_catalog.format('SELECT %I.seqgen_cluster_definitions(%L)', n.nspname, $1::pg_catalog.text) \
                  FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n \
                    ON n.oid OPERATOR(pg_catalog.=) e.extnamespace \
                  WHERE e.extname OPERATOR(pg_catalog.=) 'pg_seqgen')) r",
            Some(1),
            &[known.into()],
        )?;
        if t.is_empty() {
            return Ok(None);
        }
        let r = t.first();
        Ok::<_, pgrx::spi::Error>(Some((r.get::<bool>(1)?.unwrap_or(false), r.get::<String>(2)?.unwrap_or_default())))
    })
    .map_err(|e| SeqgenError::Internal(e.to_string()))?;
    match row {
        Some((true, text)) => serde_json::from_str(&text)
            .map_err(|e| SeqgenError::Internal(format!("the coordinator's definitions are not JSON: {e}"))),
        Some((false, text)) => Err(SeqgenError::Internal(format!("the coordinator answered: {text}"))),
        None => Err(SeqgenError::Internal("no coordinator in the Citus metadata".into())),
    }
}

/// Apply what [`fetch`] returned (nothing when only the version came back).
fn apply(v: &serde_json::Value) -> Result<Vec<(String, String)>> {
    if v.get("config").is_none() {
        return Ok(vec![]);
    }
    node::applying(|| config::apply_from_coordinator(v))
}
