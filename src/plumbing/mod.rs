//! What every generator stands on: settings, the shared-memory layout, errors and their
//! SQLSTATEs, waiting with a deadline, actions that follow the transaction, the catalog's SQL,
//! and the tag directory (resolving a tag to its shared-memory slot through the allocator).
//! Nothing here imports a generator or a background worker.

pub mod acl;
pub mod args;
pub mod cache;
pub mod catalog;
pub mod defaults;
pub mod directory;
pub mod drawn;
pub mod error;
pub mod grants;
pub mod guc;
pub mod local;
pub mod memberships;
pub mod names;
pub mod node;
pub mod pending;
pub mod replication;
pub mod session;
pub mod shmem;
pub mod stats;
pub mod wait;
