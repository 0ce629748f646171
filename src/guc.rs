//! Settings, all under `seqgen.*`. Each is documented in the README with its default.

use std::ffi::CString;
use std::time::Duration;

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use seqgen_core::adaptive::StepPolicy;

pub static DATABASE_NAME: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"postgres"));
pub static MAX_TAGS: GucSetting<i32> = GucSetting::<i32>::new(1024);
pub static PREFETCH_THRESHOLD: GucSetting<i32> = GucSetting::<i32>::new(10);
pub static ADAPTIVE_STEP: GucSetting<bool> = GucSetting::<bool>::new(true);
pub static MAX_STEP: GucSetting<i32> = GucSetting::<i32>::new(1_000_000);
pub static STEP_GROW_BELOW: GucSetting<i32> = GucSetting::<i32>::new(15 * 60);
pub static STEP_SHRINK_ABOVE: GucSetting<i32> = GucSetting::<i32>::new(30 * 60);
pub static ALLOCATION_TIMEOUT: GucSetting<i32> = GucSetting::<i32>::new(5_000);

/// Largest `n` accepted by `seqgen_next_batch`.
pub const MAX_BATCH: i32 = 10_000_000;

pub fn register() {
    GucRegistry::define_string_guc(
        c"seqgen.database_name",
        c"Database whose pg_seqgen catalog the allocation worker serves.",
        c"pg_seqgen's functions work only in this database; calls from other databases are refused.",
        &DATABASE_NAME,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"seqgen.max_tags",
        c"Maximum number of tags held in shared memory at once.",
        c"Sizes pg_seqgen's shared memory (about 1 kB per tag).",
        &MAX_TAGS,
        1,
        1_000_000,
        GucContext::Postmaster,
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
}

pub fn step_policy() -> StepPolicy {
    StepPolicy {
        enabled: ADAPTIVE_STEP.get(),
        max_step: MAX_STEP.get() as i64,
        grow_below: Duration::from_secs(STEP_GROW_BELOW.get() as u64),
        shrink_above: Duration::from_secs(STEP_SHRINK_ABOVE.get() as u64),
    }
}

pub fn database_name() -> String {
    DATABASE_NAME
        .get()
        .and_then(|c| c.into_string().ok())
        .unwrap_or_else(|| "postgres".to_string())
}
