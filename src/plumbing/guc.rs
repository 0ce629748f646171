//! Settings, all under `seqgen.*`. Each has a row in docs/settings.md (docs.rs checks it).

use std::ffi::CString;
use std::time::Duration;

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use seqgen_core::adaptive::StepPolicy;

/// No longer used (0.3.0); registered so that 0.2.0 configuration files still load.
pub static DATABASE_NAME: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
pub static MAX_TAGS: GucSetting<i32> = GucSetting::<i32>::new(1024);
pub static MAX_DATABASES: GucSetting<i32> = GucSetting::<i32>::new(8);
pub static PREFETCH_THRESHOLD: GucSetting<i32> = GucSetting::<i32>::new(10);
pub static ADAPTIVE_STEP: GucSetting<bool> = GucSetting::<bool>::new(true);
pub static MAX_STEP: GucSetting<i32> = GucSetting::<i32>::new(1_000_000);
pub static BACKEND_BLOCK: GucSetting<i32> = GucSetting::<i32>::new(16);
pub static BACKEND_CACHE_SIZE: GucSetting<i32> = GucSetting::<i32>::new(131_072);
pub static STEP_GROW_BELOW: GucSetting<i32> = GucSetting::<i32>::new(15 * 60);
pub static STEP_SHRINK_ABOVE: GucSetting<i32> = GucSetting::<i32>::new(30 * 60);
pub static ALLOCATION_TIMEOUT: GucSetting<i32> = GucSetting::<i32>::new(5_000);
pub static WORKER_LOCK_TIMEOUT: GucSetting<i32> = GucSetting::<i32>::new(100);
pub static KEY_FLOOR_HOLD: GucSetting<i32> = GucSetting::<i32>::new(2_000);
pub static NODE_ID: GucSetting<i32> = GucSetting::<i32>::new(0);
pub static MAX_KEYS_PER_ROLE: GucSetting<i32> = GucSetting::<i32>::new(1_000_000);
/// Internal: set by `seqgen_restart_undo` and the rewind functions while they lower a value
/// the catalog's guards otherwise keep from going down. Superuser-only, not shown.
pub static REWINDING: GucSetting<bool> = GucSetting::<bool>::new(false);
pub static CHANGING_TEMPLATE: GucSetting<bool> = GucSetting::<bool>::new(false);
/// Random at every server start, read-only (`plumbing::node`: a Citus worker asks the host and
/// port Citus lists for its group for this value, to know that the group is its own).
pub static SERVER_TOKEN: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
pub static ORDER_NO_OVERFLOW: GucSetting<Overflow> = GucSetting::<Overflow>::new(Overflow::Error);

/// What `seqgen_order_no` does when a period's counter is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, pgrx::PostgresGucEnum)]
pub enum Overflow {
    /// Raise an error (SQLSTATE 2200H).
    #[name = c"error"]
    Error,
    /// For periods of a second: wait for the next period.
    #[name = c"wait"]
    Wait,
}
pub static SNOWFLAKE_EPOCH: GucSetting<Option<CString>> =
    GucSetting::<Option<CString>>::new(Some(c"2024-01-01 00:00:00+00"));
pub static SNOWFLAKE_TIME_BITS: GucSetting<i32> = GucSetting::<i32>::new(41);
pub static SNOWFLAKE_NODE_BITS: GucSetting<i32> = GucSetting::<i32>::new(10);
pub static SNOWFLAKE_SEQUENCE_BITS: GucSetting<i32> = GucSetting::<i32>::new(12);
pub static SNOWFLAKE_MAX_WAIT: GucSetting<i32> = GucSetting::<i32>::new(5);
pub static SNOWFLAKE_MAX_BORROW: GucSetting<i32> = GucSetting::<i32>::new(2_000);
pub static SNOWFLAKE_RESERVE: GucSetting<i32> = GucSetting::<i32>::new(1_000);

/// Largest `n` accepted by `seqgen_next_batch`.
pub const MAX_BATCH: i32 = 10_000_000;

/// Register every setting. `preloaded`: the library is being loaded by
/// `shared_preload_libraries`; otherwise (loaded by `CREATE EXTENSION` or a first call in a
/// backend) the postmaster-level settings are left out: PostgreSQL ends the session (FATAL)
/// if one is defined after start-up, and every call reports 55000 with a hint instead.
pub fn register(preloaded: bool) {
    if preloaded {
        GucRegistry::define_string_guc(
            c"seqgen.database_name",
            c"No longer used (0.3.0): every database with the extension has its own allocator.",
            c"Kept so that configuration files written for 0.2.0 still load; its value is ignored.",
            &DATABASE_NAME,
            GucContext::Postmaster,
            GucFlags::default(),
        );
    }
    if preloaded {
        register_server_token();
    }
    if preloaded {
        GucRegistry::define_int_guc(
            c"seqgen.max_tags",
            c"Maximum number of tags of one database held in shared memory at once.",
            c"Sizes pg_seqgen's shared memory: about 1.7 kB per tag, for each of seqgen.max_databases.",
            &MAX_TAGS,
            1,
            1_000_000,
            GucContext::Postmaster,
            GucFlags::default(),
        );
    }
    if preloaded {
        GucRegistry::define_int_guc(
            c"seqgen.max_databases",
            c"Maximum number of databases with pg_seqgen installed (one allocator each).",
            c"CREATE EXTENSION pg_seqgen beyond it fails with SQLSTATE 53400. Each allocator is a background worker: max_worker_processes must leave room for them and the launcher.",
            &MAX_DATABASES,
            1,
            1024,
            GucContext::Postmaster,
            GucFlags::default(),
        );
    }
    GucRegistry::define_int_guc(
        c"seqgen.max_keys_per_role",
        c"Most keys the tags of one role may have (seqgen_next and seqgen_order_no with a key), per database.",
        c"Keys count toward the role that owns their tag, whoever draws them; a new key beyond the bound is refused with SQLSTATE 53400, keys in use still draw. -1: no bound.",
        &MAX_KEYS_PER_ROLE,
        -1,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"seqgen.prefetch_threshold",
        c"Percentage of a segment used before the next segment is reserved in the background.",
        c"0 reserves the next segment as soon as a segment is in use; 100 only when it is used up.",
        &PREFETCH_THRESHOLD,
        0,
        100,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_bool_guc(
        c"seqgen.adaptive_step",
        c"Adapt each tag's segment size to its consumption rate (Leaf's dynamic step).",
        c"",
        &ADAPTIVE_STEP,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"seqgen.backend_block",
        c"Most values of one tag a session takes at once when it draws many tags in turn.",
        c"A session that draws a tag often, among others, takes up to this many of its values at once (doubling while it keeps drawing) and hands them out within a second; the rest become a gap. 1: every value from the shared segment.",
        &BACKEND_BLOCK,
        1,
        1024,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"seqgen.backend_cache_size",
        c"Most tags and keys a session remembers at once.",
        c"A session remembers each tag (and key) it drew from, with the answer to whether it may: about 260 bytes each. Past this many, it forgets one for each new one, and draws a forgotten one again from shared memory.",
        &BACKEND_CACHE_SIZE,
        1,
        i32::MAX / 64,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"seqgen.max_step",
        c"Upper bound of the adaptive step.",
        c"A tag's configured step is never reduced by this bound.",
        &MAX_STEP,
        1,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"seqgen.step_grow_below",
        c"A segment used up faster than this doubles the next step.",
        c"",
        &STEP_GROW_BELOW,
        0,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"seqgen.step_shrink_above",
        c"A segment that lasted longer than this halves the next step (not below the configured step).",
        c"",
        &STEP_SHRINK_ABOVE,
        0,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"seqgen.allocation_timeout",
        c"How long a call waits for the allocation worker before raising an error.",
        c"",
        &ALLOCATION_TIMEOUT,
        1,
        i32::MAX,
        GucContext::Userset,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"seqgen.worker_lock_timeout",
        c"How long the allocation worker waits for a lock on a catalog table before it gives up on that job.",
        c"The job fails alone and is tried again while a caller waits; rows are never waited for (SKIP LOCKED).",
        &WORKER_LOCK_TIMEOUT,
        1,
        60_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"seqgen.key_floor_hold",
        c"How long the floor under a tag's new keys stays raised after its last new key.",
        c"While it is raised, new keys' rows commit without waiting for the flush; it is lowered again in a flushed commit.",
        &KEY_FLOOR_HOLD,
        0,
        3_600_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_bool_guc(
        c"seqgen.rewinding",
        c"Internal: lets pg_seqgen's own undo and rewind functions lower a guarded value.",
        c"",
        &REWINDING,
        GucContext::Suset,
        GucFlags::NO_SHOW_ALL | GucFlags::NO_RESET_ALL | GucFlags::DISALLOW_IN_FILE,
    );
    GucRegistry::define_bool_guc(
        c"seqgen.changing_template",
        c"Internal: lets seqgen_set_template() write a template (the catalog refuses an UPDATE of one by hand).",
        c"",
        &CHANGING_TEMPLATE,
        GucContext::Suset,
        GucFlags::NO_SHOW_ALL | GucFlags::NO_RESET_ALL | GucFlags::DISALLOW_IN_FILE,
    );
    register_snowflake(preloaded);
    GucRegistry::define_enum_guc(
        c"seqgen.order_no_overflow",
        c"When a period's order-number counter is full: error, or (periods of a second) wait for the next period.",
        c"",
        &ORDER_NO_OVERFLOW,
        GucContext::Userset,
        GucFlags::default(),
    );
}

/// `seqgen.server_token`: 32 hexadecimal digits drawn when the postmaster loads the library
/// (every process of the server inherits them; no other server has them).
fn register_server_token() {
    GucRegistry::define_string_guc(
        c"seqgen.server_token",
        c"Random at every start of this server (read-only): tells this server apart from its copies.",
        c"A Citus worker reads it through the host and port Citus lists for its group, to confirm the group is its own.",
        &SERVER_TOKEN,
        GucContext::Internal,
        GucFlags::NO_RESET_ALL | GucFlags::DISALLOW_IN_FILE | GucFlags::DISALLOW_IN_AUTO_FILE,
    );
    let mut bytes = [0u8; 16];
    if !unsafe { pgrx::pg_sys::pg_strong_random(bytes.as_mut_ptr().cast(), bytes.len()) } {
        pgrx::error!("pg_seqgen: no random bytes for seqgen.server_token");
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let value = CString::new(hex).expect("hexadecimal digits");
    unsafe {
        pgrx::pg_sys::SetConfigOption(
            c"seqgen.server_token".as_ptr(),
            value.as_ptr(),
            pgrx::pg_sys::GucContext::PGC_INTERNAL,
            pgrx::pg_sys::GucSource::PGC_S_OVERRIDE,
        );
    }
}

/// This server's `seqgen.server_token` (empty when the library was not preloaded).
pub fn server_token() -> String {
    SERVER_TOKEN.get().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default()
}

fn register_snowflake(preloaded: bool) {
    if preloaded {
        GucRegistry::define_int_guc(
            c"seqgen.node_id",
            c"This server's node id, carried in snowflake IDs and order numbers.",
            c"Give every server that issues IDs for the same purpose its own node id.",
            &NODE_ID,
            0,
            1 << 22,
            GucContext::Postmaster,
            GucFlags::default(),
        );
    }
    if preloaded {
        GucRegistry::define_string_guc(
            c"seqgen.snowflake_epoch",
            c"Epoch of snowflake timestamps (YYYY-MM-DD, YYYY-MM-DD HH:MM:SS in UTC, or RFC 3339).",
            c"",
            &SNOWFLAKE_EPOCH,
            GucContext::Postmaster,
            GucFlags::default(),
        );
    }
    for (name, short, setting) in [
        (c"seqgen.snowflake_time_bits", c"Bits of milliseconds in a snowflake ID.", &SNOWFLAKE_TIME_BITS),
        (c"seqgen.snowflake_node_bits", c"Bits of node id in a snowflake ID.", &SNOWFLAKE_NODE_BITS),
        (
            c"seqgen.snowflake_sequence_bits",
            c"Bits of per-millisecond sequence in a snowflake ID.",
            &SNOWFLAKE_SEQUENCE_BITS,
        ),
    ] {
        if preloaded {
            GucRegistry::define_int_guc(
                name,
                short,
                c"Time, node and sequence bits must sum to 63.",
                setting,
                0,
                63,
                GucContext::Postmaster,
                GucFlags::default(),
            );
        }
    }
    GucRegistry::define_int_guc(
        c"seqgen.snowflake_max_wait",
        c"A clock step back up to this long is waited out.",
        c"",
        &SNOWFLAKE_MAX_WAIT,
        0,
        60_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"seqgen.snowflake_max_borrow",
        c"A clock step back up to this long is bridged by issuing from the last timestamp (borrowing time); beyond it, calls fail until the clock catches up.",
        c"",
        &SNOWFLAKE_MAX_BORROW,
        0,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"seqgen.snowflake_reserve",
        c"How far ahead of the last issued timestamp the snowflake reservation is persisted.",
        c"After a restart, snowflake IDs resume above the persisted reservation.",
        &SNOWFLAKE_RESERVE,
        10,
        3_600_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
}

pub fn snowflake_epoch() -> String {
    SNOWFLAKE_EPOCH.get().and_then(|c| c.into_string().ok()).unwrap_or_default()
}

pub fn step_policy() -> StepPolicy {
    StepPolicy {
        enabled: ADAPTIVE_STEP.get(),
        max_step: MAX_STEP.get() as i64,
        grow_below: Duration::from_secs(STEP_GROW_BELOW.get() as u64),
        shrink_above: Duration::from_secs(STEP_SHRINK_ABOVE.get() as u64),
    }
}
