//! What runs beside the SQL functions: the launcher and the allocators (background workers),
//! the utility hook (commands that need a database to themselves), the catalog's triggers, and
//! the health functions that report on them.

pub mod citus;
mod gather;
pub mod health;
mod jobs;
pub mod launcher;
mod leases;
pub mod process;
mod publish;
mod signals;
pub mod slots;
pub mod triggers;
pub mod utility;
pub mod worker;
