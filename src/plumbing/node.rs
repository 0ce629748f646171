//! This node's identity: `seqgen.node_id`, or on Citus a node id for the node's group.
//!
//! When Citus is preloaded, a database with the `citus` extension numbers with a node id per
//! Citus group: 0 on the coordinator, and for every worker the one the coordinator assigned
//! its group (`seqgen_cluster_node_id`, kept in `seqgen.citus_node_ids` there: one per group
//! that numbers, never reused, so the ids stay dense whatever Citus's own group sequence
//! skips). Citus gives every worker a new group (`pg_dist_local_group.groupid`, from
//! `pg_dist_groupid_seq`): a node removed and added again gets a new one; a promoted standby
//! keeps its primary's, and with it the primary's replicated reservations. The database's
//! allocator reads the group once a second, and at once when a caller asks, and publishes the
//! node id in the area ([`Header::citus_node`]); draws read one word.
//!
//! A worker numbers with its group only once it confirmed the group as its own ([`confirm`]):
//! until then it is [`UNCONFIRMED`] and IDs that carry a node id are refused (a clone split off
//! by Citus reads its primary's group until the split commits).
//!
//! A node that Citus does not list in `pg_dist_node` (a fresh server before `citus_add_node`
//! reaches it, a coordinator before `citus_set_coordinator_host`) has group 0 like the
//! coordinator; it is refused (55000) rather than served, so it never issues the
//! coordinator's values. Until the allocator has read the group once since the area was
//! claimed, callers wait for it (bounded by the call's deadline).

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use pgrx::pg_sys;

use crate::plumbing::error::{Result, SeqgenError};
use crate::plumbing::guc;
use crate::plumbing::shmem::Header;
use crate::plumbing::wait::wait_for;

pub use crate::plumbing::shmem::{
    CITUS_NONE as NOT_CITUS, CITUS_NOT_MEMBER as NOT_MEMBER, CITUS_UNCONFIRMED as UNCONFIRMED, CITUS_UNKNOWN as UNKNOWN,
};

/// Node bits a tag gets when it is created in a Citus database (256 groups: the coordinator
/// and 255 workers added over the cluster's life).
pub const CITUS_NODE_BITS: i32 = 8;

/// `Header::citus_node` of a published identity: the group and its node id in one word, so
/// that both change together (a group id and a node id each fit in 31 bits).
#[inline]
pub fn pack(group: i64, node: i64) -> i64 {
    (group << 32) | (node & 0xffff_ffff)
}

/// The node id of a published identity ([`pack`]).
#[inline]
pub fn node_of(word: i64) -> u32 {
    (word & 0xffff_ffff) as u32
}

/// The group of a published identity ([`pack`]).
#[inline]
pub fn group_of(word: i64) -> i64 {
    word >> 32
}

/// Citus is in `shared_preload_libraries` (set by the postmaster, inherited by every process).
static CITUS: AtomicBool = AtomicBool::new(false);

/// Called from `_PG_init` while the postmaster preloads libraries.
pub fn detect_citus() {
    let libs = unsafe { pg_sys_option(c"shared_preload_libraries") };
    let on = libs.split(',').any(|l| {
        let l = l.trim().trim_matches('"');
        l == "citus" || l.ends_with("/citus")
    });
    CITUS.store(on, Ordering::Relaxed);
}

unsafe fn pg_sys_option(name: &std::ffi::CStr) -> String {
    let v = unsafe { pgrx::pg_sys::GetConfigOption(name.as_ptr(), true, false) };
    if v.is_null() {
        return String::new();
    }
    unsafe { std::ffi::CStr::from_ptr(v) }.to_string_lossy().into_owned()
}

/// Set in the allocator while it applies the coordinator's tag definitions (the one writer
/// of tags on a Citus worker).
static APPLYING: AtomicBool = AtomicBool::new(false);

/// Run `f` as the application of the coordinator's definitions.
pub fn applying<R>(f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            APPLYING.store(false, Ordering::Relaxed);
        }
    }
    APPLYING.store(true, Ordering::Relaxed);
    let _reset = Reset;
    f()
}

/// Is the database of `h` a Citus worker (a member with a group other than the
/// coordinator's)?
pub fn is_citus_worker(h: &Header) -> bool {
    citus_preloaded() && {
        let g = h.citus_node.load(Ordering::Acquire);
        g > 0 || g == UNCONFIRMED
    }
}

/// Tags are defined on the coordinator: on a worker they are the coordinator's copy.
pub fn refuse_definitions_on_worker(h: &Header) -> Result<()> {
    if is_citus_worker(h) && !APPLYING.load(Ordering::Relaxed) {
        return Err(SeqgenError::Unsupported(
            "this is a Citus worker: tags are defined and changed on the coordinator, and every node draws from its copy"
                .into(),
        ));
    }
    Ok(())
}

/// On a Citus worker, a tag not found here may have been created on the coordinator since
/// the last read of its definitions: ask the allocator to read them now and wait for that
/// (bounded by the call's deadline). `true` when a read was made (look again); an error when
/// the node could not read them because its group is not confirmed as its own.
#[cold]
pub fn sync_now(h: &Header) -> Result<bool> {
    sync_now_until(h, crate::plumbing::wait::call_deadline())
}

/// [`sync_now`], waiting until `deadline` at most.
#[cold]
pub fn sync_now_until(h: &Header, deadline: std::time::Instant) -> Result<bool> {
    if !is_citus_worker(h) {
        return Ok(false);
    }
    // a read that began before this request may have missed what the caller looks for (a
    // tag committed on the coordinator a moment ago): wait for one that began after it
    let ticket = h.sync_asked.fetch_add(1, Ordering::AcqRel) + 1;
    h.sync_want.store(1, Ordering::Release);
    h.ring();
    // (not counted as a wait for the allocator: a read that does not come in time is no failure)
    let read = crate::plumbing::wait::wait_quietly_until(h, deadline, || {
        (h.sync_answered.load(Ordering::Acquire) >= ticket).then_some(())
    })
    .is_some();
    if read && h.citus_node.load(Ordering::Acquire) == UNCONFIRMED {
        return Err(SeqgenError::GroupNotConfirmed(h.citus_candidate.load(Ordering::Acquire)));
    }
    Ok(read)
}

/// Is Citus preloaded on this server?
#[inline]
pub fn citus_preloaded() -> bool {
    CITUS.load(Ordering::Relaxed)
}

/// This node's id in the database of `h`.
#[inline]
pub fn id(h: &Header) -> Result<u32> {
    let g = h.citus_node.load(Ordering::Acquire);
    if g >= 0 {
        return Ok(node_of(g));
    }
    if g == NOT_CITUS {
        return Ok(guc::NODE_ID.get().max(0) as u32);
    }
    slow_id(h)
}

/// Is the database of `h` a Citus database (the `citus` extension is installed and preloaded;
/// the node may not have joined yet)? Waits for the allocator's first read; if that does not
/// come, the answer is yes (the stricter rules).
pub fn is_citus(h: &Header) -> bool {
    if !citus_preloaded() {
        return false;
    }
    if h.citus_node.load(Ordering::Acquire) == UNKNOWN {
        let _ = slow_id(h);
    }
    if h.citus_node.load(Ordering::Acquire) != NOT_CITUS {
        return true;
    }
    // The allocator reads the state once a second: `CREATE EXTENSION citus` a moment ago (in
    // this transaction, even) is not in it yet, and a tag made now must still get node bits.
    // Asked of the catalog itself (a creation, not a draw, asks this).
    let here = unsafe { pg_sys::get_extension_oid(c"citus".as_ptr(), true) } != pg_sys::InvalidOid;
    if here {
        h.identity_want.store(1, Ordering::Release);
        h.ring();
    }
    here
}

/// For the allocator: is the database a Citus node, or not known yet to be none (then its
/// tags are treated as on Citus)?
pub fn is_citus_db(h: &Header) -> bool {
    citus_preloaded() && h.citus_node.load(Ordering::Acquire) != NOT_CITUS
}

/// Ask the allocator to read the group again and wait for its answer.
#[cold]
#[inline(never)]
fn slow_id(h: &Header) -> Result<u32> {
    if !citus_preloaded() {
        // before the allocator's first look (it then publishes NOT_CITUS)
        return Ok(guc::NODE_ID.get().max(0) as u32);
    }
    let seq = h.identity_seq.load(Ordering::Acquire);
    let tried = h.sync_seq.load(Ordering::Acquire);
    h.identity_want.store(1, Ordering::Release);
    h.ring();
    let answer = wait_for(h, || {
        let g = h.citus_node.load(Ordering::Acquire);
        if g >= 0 || g == NOT_CITUS {
            Some(g)
        } else if g == UNCONFIRMED {
            // a group being confirmed (a worker that just joined): wait for the sync
            // process's try (a few milliseconds) rather than the allocator's next read; once
            // a try failed, callers are told at once (the next try comes when the group or
            // its listing changes, or the sync period passes)
            (h.confirm_failing.load(Ordering::Acquire) != 0 || h.sync_seq.load(Ordering::Acquire) != tried).then_some(g)
        } else {
            (h.identity_seq.load(Ordering::Acquire) != seq).then_some(g)
        }
    });
    match answer {
        Some(g) if g >= 0 => Ok(node_of(g)),
        Some(NOT_CITUS) => Ok(guc::NODE_ID.get().max(0) as u32),
        Some(UNCONFIRMED) => Err(SeqgenError::GroupNotConfirmed(h.citus_candidate.load(Ordering::Acquire))),
        Some(_) => Err(SeqgenError::NotInCluster),
        None if h.citus_node.load(Ordering::Acquire) == UNCONFIRMED => {
            Err(SeqgenError::GroupNotConfirmed(h.citus_candidate.load(Ordering::Acquire)))
        }
        None => Err(SeqgenError::NotReady("this node's Citus group id (the allocator has not read it yet)".into())),
    }
}

/// The allocator's read of this node's Citus group.
pub struct GroupRead {
    /// The group, or a negative state of `Header::citus_node`.
    pub group: i64,
    /// The node id to number with: the group's own on the coordinator (0); for a worker, the
    /// one the coordinator assigned its group, once this server confirmed the group as its
    /// own here ([`confirm`]); None until then.
    pub node: Option<i64>,
    /// For an unconfirmed group: a hash of what `pg_dist_node` lists for it (a failover's
    /// `citus_update_node` changes it: the confirmation is tried again at once).
    pub listing: i64,
}

/// Read this node's Citus group (the allocator, once a second and when a caller asks).
pub fn read_group(c: &pgrx::spi::SpiClient<'_>) -> pgrx::spi::Result<GroupRead> {
    let group = read_group_only(c)?;
    if group <= 0 {
        return Ok(GroupRead { group, node: Some(group), listing: 0 });
    }
    if let Some(node) = confirmed_on(c, group)? {
        return Ok(GroupRead { group, node: Some(node), listing: 0 });
    }
    let listing = c
        .select(
            "SELECT pg_catalog.hashtext(COALESCE(pg_catalog.string_agg(pg_catalog.concat_ws(':', n.nodeid, n.nodename, \
                    n.nodeport, n.noderole, n.isactive), ' ' ORDER BY n.nodeid), ''))::pg_catalog.int8 \
             FROM pg_catalog.pg_dist_node n WHERE n.groupid OPERATOR(pg_catalog.=) $1::pg_catalog.int4",
            Some(1),
            &[group.into()],
        )?
        .first()
        .get::<i64>(1)?
        .unwrap_or(0);
    Ok(GroupRead { group, node: None, listing })
}

/// The WAL timeline this server writes on (a promoted standby writes on a new one), None
/// during recovery.
fn timeline() -> Option<i64> {
    if unsafe { pg_sys::RecoveryInProgress() } {
        return None;
    }
    Some(unsafe { pg_sys::GetWALInsertionTimeLine() } as i64)
}

/// Where this server runs: host name, port and data directory. A copy that stays on its
/// original's timeline (a disk snapshot, a base backup started without recovery) runs
/// elsewhere, so it confirms again.
fn this_server() -> String {
    let mut buf = [0u8; 256];
    let host = if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0 {
        let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        String::new()
    };
    let dir = unsafe { pg_sys::DataDir };
    let dir = if dir.is_null() {
        String::new()
    } else {
        unsafe { std::ffi::CStr::from_ptr(dir) }.to_string_lossy().into_owned()
    };
    format!("{host}:{}:{dir}", unsafe { pg_sys::PostPortNumber })
}

/// Does `seqgen.citus_group_confirmed` exist (an extension not updated yet lacks it)?
fn confirmations_kept(c: &pgrx::spi::SpiClient<'_>) -> pgrx::spi::Result<bool> {
    let row = c.select("SELECT pg_catalog.to_regclass('seqgen.citus_group_confirmed') IS NOT NULL", Some(1), &[])?;
    Ok(row.first().get::<bool>(1)? == Some(true))
}

/// The node id `g` was confirmed with, if `seqgen.citus_group_confirmed` records it with this
/// server's timeline and place (never when the table is missing: an extension not updated yet
/// confirms at every start).
fn confirmed_on(c: &pgrx::spi::SpiClient<'_>, g: i64) -> pgrx::spi::Result<Option<i64>> {
    let Some(tl) = timeline() else { return Ok(None) };
    if !confirmations_kept(c)? {
        return Ok(None);
    }
    let row = c.select(
        "SELECT pg_catalog.min(node_id), count(*) FROM seqgen.citus_group_confirmed \
         WHERE groupid OPERATOR(pg_catalog.=) $1 AND timeline OPERATOR(pg_catalog.=) $2 \
           AND server OPERATOR(pg_catalog.=) $3",
        Some(1),
        &[g.into(), tl.into(), this_server().into()],
    )?;
    let row = row.first();
    Ok(if row.get::<i64>(2)? == Some(1) { row.get::<i64>(1)? } else { None })
}

/// Where the coordinator keeps the internal functions its workers call: schema `seqgen` (1.0),
/// or the extension's schema (0.x, before its update). 0: not asked yet, 1: `seqgen`, 2: the
/// extension's schema. Asked again after a call that failed (the coordinator may have been
/// updated meanwhile), by looking, not by reading an error message (which is in the
/// coordinator's language).
static COORDINATOR_IN_SEQGEN: AtomicU8 = AtomicU8::new(0);

/// Run `SELECT <schema>.<call>` on the Citus coordinator (`call`: an internal function's call
/// with its arguments, each a `%L` of `args`; the schema where the coordinator keeps it),
/// through Citus's `run_command_on_coordinator`: its text answer, or why there is none.
pub fn on_coordinator(
    c: &pgrx::spi::SpiClient<'_>,
    call: &str,
    args: &[Option<&str>],
) -> std::result::Result<String, String> {
    let in_seqgen = match COORDINATOR_IN_SEQGEN.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let n = on_coordinator_run(
                c,
                "SELECT pg_catalog.count(*) FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n \
                   ON n.oid OPERATOR(pg_catalog.=) p.pronamespace \
                 WHERE n.nspname OPERATOR(pg_catalog.=) 'seqgen' \
                   AND p.proname OPERATOR(pg_catalog.=) 'seqgen_cluster_definitions'",
            )?;
            let yes = n.trim() != "0";
            COORDINATOR_IN_SEQGEN.store(if yes { 1 } else { 2 }, Ordering::Relaxed);
            yes
        }
    };
    let answer = on_coordinator_in(c, in_seqgen.then_some("seqgen"), call, args);
    if answer.is_err() {
        COORDINATOR_IN_SEQGEN.store(0, Ordering::Relaxed);
    }
    answer
}

/// Run `command` (an SQL text) on the Citus coordinator: its text answer, or why there is none.
fn on_coordinator_run(c: &pgrx::spi::SpiClient<'_>, command: &str) -> std::result::Result<String, String> {
    let t = c
        .select(
            "SELECT r.success, r.result FROM pg_catalog.run_command_on_coordinator($1) r",
            Some(1),
            &[command.into()],
        )
        .map_err(|e| e.to_string())?;
    answer_of(t)
}

/// The answer of a `run_command_on_coordinator` row.
fn answer_of(t: pgrx::spi::SpiTupleTable<'_>) -> std::result::Result<String, String> {
    if t.is_empty() {
        return Err("no coordinator in the Citus metadata".into());
    }
    let r = t.first();
    let ok = r.get::<bool>(1).map_err(|e| e.to_string())?.unwrap_or(false);
    let text = r.get::<String>(2).map_err(|e| e.to_string())?.unwrap_or_default();
    if ok {
        Ok(text)
    } else {
        Err(format!("the coordinator answered: {text}"))
    }
}

/// [`on_coordinator`] in `schema`, or (None) in the schema of this server's extension.
fn on_coordinator_in(
    c: &pgrx::spi::SpiClient<'_>,
    schema: Option<&str>,
    call: &str,
    args: &[Option<&str>],
) -> std::result::Result<String, String> {
    let mut format_args = String::new();
    let mut values: Vec<pgrx::datum::DatumWithOid> = vec![call.into(), schema.into()];
    for (i, a) in args.iter().enumerate() {
        format_args.push_str(&format!(", ${}::pg_catalog.text", i + 3));
        values.push((*a).into());
    }
    let sql = format!(
        "SELECT r.success, r.result FROM pg_catalog.run_command_on_coordinator(\
             (SELECT pg_catalog.format('SELECT %I.' OPERATOR(pg_catalog.||) $1, \
                     COALESCE($2::pg_catalog.text, n.nspname::pg_catalog.text){format_args}) \
              FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace \
              WHERE e.extname OPERATOR(pg_catalog.=) 'pg_seqgen')) r"
    );
    answer_of(c.select(&sql, Some(1), &values).map_err(|e| e.to_string())?)
}

/// Confirm that group `g` is this server's own: Citus lists an active primary (not a clone)
/// for it, and that host and port answer with this server's `seqgen.server_token`. Recorded
/// with the timeline and where this server runs, so that a restart needs no new confirmation
/// but a copy of this server (a promoted standby: another timeline; a snapshot started
/// elsewhere) does. `Err`: why not (it stays unconfirmed).
/// Runs in the sync process (it connects over the network), never in the allocator.
pub fn confirm(g: i64) -> std::result::Result<i64, String> {
    let Some(tl) = timeline() else { return Err("the server is in recovery".into()) };
    let mine = guc::server_token();
    if mine.is_empty() {
        return Err("seqgen.server_token is not set".into());
    }
    pgrx::Spi::connect_mut(|c| {
        let listed = c.select(
            "SELECT n.nodename::pg_catalog.text, n.nodeport FROM pg_catalog.pg_dist_node n \
             WHERE n.groupid OPERATOR(pg_catalog.=) $1::pg_catalog.int4 \
               AND n.noderole OPERATOR(pg_catalog.=) 'primary' AND n.isactive \
               AND NOT COALESCE((pg_catalog.to_jsonb(n) OPERATOR(pg_catalog.->>) 'nodeisclone')::pg_catalog.bool, false)",
            Some(2),
            &[g.into()],
        )?;
        let hosts: Vec<(String, i32)> = listed
            .map(|r| Ok((r.get::<String>(1)?.unwrap_or_default(), r.get::<i32>(2)?.unwrap_or(0))))
            .collect::<pgrx::spi::Result<_>>()?;
        let [(host, port)] = hosts.as_slice() else {
            return Ok(Err(format!("pg_dist_node lists {} active primaries for group {g}", hosts.len())));
        };
        let answer = c.select(
            "SELECT r.success, r.result FROM pg_catalog.master_run_on_worker(\
                 ARRAY[$1::pg_catalog.text], ARRAY[$2::pg_catalog.int4], \
                 ARRAY['SHOW seqgen.server_token'::pg_catalog.text], false) r",
            Some(1),
            &[host.as_str().into(), (*port).into()],
        )?;
        let (ok, theirs) = match answer.first() {
            r if !r.is_empty() => (r.get::<bool>(1)?.unwrap_or(false), r.get::<String>(2)?.unwrap_or_default()),
            _ => (false, String::new()),
        };
        if !ok {
            return Ok(Err(format!("{host}:{port}, which Citus lists for group {g}, did not answer: {theirs}")));
        }
        if theirs.trim() != mine {
            return Ok(Err(format!("{host}:{port}, which Citus lists for group {g}, is another server")));
        }
        // the node id: the coordinator's, assigned once per group and never changed; this
        // server's own record of it (a promoted standby has its primary's) serves when the
        // coordinator does not answer, and must agree with it when it does
        let table = confirmations_kept(c)?;
        let kept = if table {
            c.select(
                "SELECT pg_catalog.min(node_id) FROM seqgen.citus_group_confirmed WHERE groupid OPERATOR(pg_catalog.=) $1",
                Some(1),
                &[g.into()],
            )?
            .first()
            .get::<i64>(1)?
        } else {
            None
        };
        let node = match (on_coordinator(c, "seqgen_cluster_node_id(%L)", &[Some(&g.to_string())]), kept) {
            (Ok(text), kept) => match text.trim().parse::<i64>() {
                Ok(n) if n > 0 && kept.is_none_or(|k| k == n) => n,
                Ok(n) if n > 0 => {
                    return Ok(Err(format!(
                        "the coordinator gives group {g} node id {n}, but this server numbered with {} for it \
                         (its data may come from another cluster)",
                        kept.unwrap_or_default()
                    )));
                }
                _ => return Ok(Err(format!("the coordinator assigned group {g} the node id {text:?}"))),
            },
            (Err(_), Some(k)) => k,
            // a coordinator whose extension is not updated from 0.5.0 yet: number with the
            // group id, as 0.5.0 did (its update keeps every listed group's id equal to its group)
            (Err(why), None) if why.contains("seqgen_cluster_node_id") && why.contains("does not exist") => g,
            (Err(why), None) => return Ok(Err(format!("asking the coordinator for group {g}'s node id: {why}"))),
        };
        if !table {
            // this server's extension is not updated yet: nothing to record
            return Ok(Ok(node));
        }
        c.update("DELETE FROM seqgen.citus_group_confirmed", None, &[])?;
        c.update(
            "INSERT INTO seqgen.citus_group_confirmed (groupid, node_id, timeline, server, confirmed) \
             VALUES ($1, $2, $3, $4, pg_catalog.now())",
            None,
            &[g.into(), node.into(), tl.into(), this_server().into()],
        )?;
        Ok(Ok(node))
    })
    .unwrap_or_else(|e: pgrx::spi::Error| Err(e.to_string()))
}

/// The group Citus gives this server (`pg_dist_local_group`), or a negative state.
fn read_group_only(c: &pgrx::spi::SpiClient<'_>) -> pgrx::spi::Result<i64> {
    if !citus_preloaded() {
        return Ok(NOT_CITUS);
    }
    let installed =
        c.select("SELECT 1 FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'citus'", Some(1), &[])?;
    if installed.is_empty() {
        return Ok(NOT_CITUS);
    }
    // pg_dist_node lists the coordinator (group 0) and every worker; a node it does not list
    // has not joined (its group is still the coordinator's 0) or was removed
    let row = c.select(
        "SELECT l.groupid::pg_catalog.int8, EXISTS (SELECT 1 FROM pg_catalog.pg_dist_node n \
                                                   WHERE n.groupid OPERATOR(pg_catalog.=) l.groupid) \
         FROM pg_catalog.pg_dist_local_group l",
        Some(1),
        &[],
    )?;
    if row.is_empty() {
        return Ok(NOT_MEMBER);
    }
    let row = row.first();
    Ok(match (row.get::<i64>(1)?, row.get::<bool>(2)?) {
        (Some(g), Some(true)) if g >= 0 => g,
        _ => NOT_MEMBER,
    })
}

/// Publish a read of the group (the allocator), logging changes. A worker's group that this
/// server has not confirmed as its own is published as [`UNCONFIRMED`] (its IDs refused) and
/// the sync process asked to confirm it; one confirmed since the area was claimed stays.
pub fn publish_group(h: &Header, read: GroupRead) {
    let GroupRead { group: g, node, listing } = read;
    let now = h.citus_node.load(Ordering::Acquire);
    let Some(node) = node else {
        // a worker's group not confirmed here (as far as this read saw)
        if now >= 0 && group_of(now) == g {
            // confirmed by the sync process since this read began
            return;
        }
        let candidate = h.citus_candidate.swap(g, Ordering::AcqRel);
        let listed_before = h.citus_listing.swap(listing, Ordering::AcqRel);
        if now != UNCONFIRMED || candidate != g || listed_before != listing {
            // a new group to confirm, or a new listing of it: try at once (later tries every
            // sync period)
            h.sync_want.store(1, Ordering::Release);
        }
        // only over the state read above: the sync process may have confirmed it meanwhile
        if now != UNCONFIRMED
            && h.citus_node.compare_exchange(now, UNCONFIRMED, Ordering::AcqRel, Ordering::Acquire).is_ok()
        {
            announce(h, now, UNCONFIRMED);
        }
        return;
    };
    h.citus_candidate.store(g, Ordering::Release);
    let word = if g >= 0 { pack(g, node) } else { g };
    let before = h.citus_node.swap(word, Ordering::AcqRel);
    announce(h, before, word);
}

/// The extension was dropped (and maybe created again): forget this node's identity, so that
/// it is read, and on a worker confirmed with a node id from the new catalog, again.
pub fn forget(h: &Header) {
    let before = h.citus_node.swap(UNKNOWN, Ordering::AcqRel);
    h.citus_candidate.store(UNKNOWN, Ordering::Release);
    h.identity_want.store(1, Ordering::Release);
    announce(h, before, UNKNOWN);
}

/// The sync process confirmed group `g` with node id `node` ([`confirm`]): publish it unless
/// the group read since is another.
pub fn publish_confirmed(h: &Header, g: i64, node: i64) {
    // only over the state the confirmation began in: the allocator may have read another
    // group (or none) meanwhile
    let word = pack(g, node);
    if h.citus_candidate.load(Ordering::Acquire) == g
        && h.citus_node.compare_exchange(UNCONFIRMED, word, Ordering::AcqRel, Ordering::Acquire).is_ok()
    {
        if h.citus_candidate.load(Ordering::Acquire) != g {
            // the allocator read another group between the two loads: not confirmed after all
            // (and what a backend prepared with it meanwhile is not served); a read of the
            // other group that missed this publication demotes it too (`group_of` differs)
            if h.citus_node.compare_exchange(word, UNCONFIRMED, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                crate::plumbing::shmem::retire_all();
            }
        }
        announce(h, UNCONFIRMED, h.citus_node.load(Ordering::Acquire));
    }
}

/// After the identity went from `before` to `g` ([`pack`]ed, or a negative state): retire
/// what was prepared with the old one, wake the waiters, log.
fn announce(h: &Header, before: i64, g: i64) {
    if before >= 0 && before != g {
        // blocks and numbers this node's backends prepared with a group that is no longer
        // its (order numbers render it from their cache) are not served again
        crate::plumbing::shmem::retire_all();
    }
    if before != g && g > 0 {
        // joined (or moved) as a worker: read the coordinator's tags at once
        h.sync_want.store(1, Ordering::Release);
    }
    h.identity_seq.fetch_add(1, Ordering::AcqRel);
    if before != g && g != NOT_CITUS && g != UNKNOWN {
        if g >= 0 {
            let (group, node) = (group_of(g), node_of(g));
            pgrx::log!(
                "pg_seqgen: this node's Citus group id is {group}; the node id of this database's IDs is {node} \
                 (the coordinator's assignment for the group)"
            );
        } else if g == UNCONFIRMED {
            let c = h.citus_candidate.load(Ordering::Acquire);
            pgrx::log!(
                "pg_seqgen: this server reads Citus group id {c} but has not confirmed it as its own yet (a worker \
                 that joins confirms once, and so does a copy of one: a promoted standby or clone reads its \
                 primary's group); IDs that carry a node id wait for the confirmation"
            );
        } else {
            pgrx::warning!(
                "pg_seqgen: this node is not in its Citus cluster's metadata; IDs that carry a node id are refused until it is"
            );
        }
    }
    h.broadcast();
}
