//! pg_seqgen: ID generators inside PostgreSQL.
//!
//! The thin PostgreSQL shell around `seqgen-core`, in three layers: [`plumbing`] (settings,
//! shared memory, errors, waiting, pending actions, catalog SQL, the tag directory),
//! [`generators`] (the SQL functions that hand out values) and [`background`] (the launcher
//! and allocators, the utility hook, the catalog's triggers, health). `docs/architecture.md`
//! describes how they fit together.

use pgrx::prelude::*;

// Layers, each importing only from those before it: `seqgen-core`, then the plumbing
// (settings, shared memory, errors, waiting, pending actions, catalog SQL, the tag
// directory), then the generators (the SQL functions that hand out values), then the
// background workers and the hooks and triggers that react to the server.
mod background;
mod generators;
mod plumbing;

#[cfg(any(test, feature = "pg_test"))]
mod tests;

::pgrx::pg_module_magic!(name, version);

extension_sql_file!("../sql/catalog.sql", name = "catalog", bootstrap);
extension_sql_file!(
    "../sql/triggers.sql",
    name = "triggers",
    requires = [
        background::triggers::seqgen_alloc_deleted,
        background::triggers::seqgen_template_changed,
        background::triggers::seqgen_reservation_written
    ]
);
extension_sql_file!(
    "../sql/adopt.sql",
    name = "adopt",
    requires =
        [generators::tags::seqgen_create, generators::segment::seqgen_next, generators::snowflake::seqgen_snowflake]
);
extension_sql_file!("../sql/replication.sql", name = "replication", requires = ["catalog"]);
extension_sql_file!(
    "../sql/gapless.sql",
    name = "gapless",
    requires =
        ["catalog", generators::gapless::seqgen_gapless_assign, generators::gapless::seqgen_gapless_create_trigger]
);
extension_sql_file!("../sql/keys.sql", name = "keys", requires = ["catalog"]);
extension_sql_file!("../sql/citus.sql", name = "citus", requires = ["catalog", background::health::seqgen_node]);
// last: who may call each function, and what each is (its COMMENT)
extension_sql_file!("../sql/functions.sql", name = "functions", finalize);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    let preloaded = unsafe { pg_sys::process_shared_preload_libraries_in_progress };
    plumbing::guc::register(preloaded);
    plumbing::pending::install_hook();
    if !preloaded {
        // Loaded on first use in a backend: the functions will report that pg_seqgen must be
        // preloaded. Shared memory and the worker can only be set up by the postmaster.
        return;
    }
    // Citus first: with it, node ids come from its metadata (plumbing::node)
    plumbing::node::detect_citus();
    // Impossible snowflake layouts stop the server at start-up, with the reason.
    if let Err(msg) = generators::snowflake::configured_layout() {
        error!("pg_seqgen: {msg}");
    }
    plumbing::shmem::install_hooks();
    background::utility::install_hook();
    background::launcher::register();
}

/// Required by `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![
            "shared_preload_libraries = 'pg_seqgen'",
            "seqgen.max_tags = 64",
            "max_worker_processes = 16",
            "max_prepared_transactions = 4",
        ]
    }
}
