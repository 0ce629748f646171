//! pg_seqgen: ID generators inside PostgreSQL.
//!
//! The thin PostgreSQL shell around `seqgen-core`: settings ([`guc`]), the shared-memory
//! layout ([`shmem`]), the allocation worker ([`worker`]), the tag directory ([`directory`]),
//! catalog SQL ([`catalog`]) and the SQL functions ([`segment_api`]).
//! `docs/architecture.md` describes how they fit together.

use pgrx::prelude::*;

mod catalog;
mod directory;
mod error;
mod guc;
mod health;
mod launcher;
mod local;
mod opaque;
mod order;
mod pending;
mod segment_api;
mod shmem;
mod snowflake;
mod triggers;
mod utility;
mod uuid;
mod wait;
mod worker;

#[cfg(any(test, feature = "pg_test"))]
mod tests;

::pgrx::pg_module_magic!(name, version);

extension_sql_file!("../sql/catalog.sql", name = "catalog", bootstrap);
extension_sql_file!(
    "../sql/triggers.sql",
    name = "triggers",
    requires =
        [triggers::seqgen_alloc_deleted, triggers::seqgen_template_changed, triggers::seqgen_reservation_written]
);
extension_sql_file!(
    "../sql/adopt.sql",
    name = "adopt",
    requires = [segment_api::seqgen_create, segment_api::seqgen_next, snowflake::seqgen_snowflake]
);
extension_sql_file!("../sql/privileges.sql", name = "privileges", finalize);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    guc::register();
    pending::install_hook();
    if !unsafe { pg_sys::process_shared_preload_libraries_in_progress } {
        // Loaded on first use in a backend: the functions will report that pg_seqgen must be
        // preloaded. Shared memory and the worker can only be set up by the postmaster.
        return;
    }
    // Impossible snowflake layouts stop the server at start-up, with the reason.
    if let Err(msg) = snowflake::configured_layout() {
        error!("pg_seqgen: {msg}");
    }
    shmem::install_hooks();
    utility::install_hook();
    launcher::register();
}

/// Required by `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec!["shared_preload_libraries = 'pg_seqgen'", "seqgen.max_tags = 64", "max_worker_processes = 16"]
    }
}
