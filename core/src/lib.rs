//! The functional core of pg_seqgen.
//!
//! Everything here is plain Rust with no PostgreSQL dependency, tested with `cargo test`:
//! the lock-free segment buffer that lives in shared memory ([`segment`]), reservation
//! arithmetic and Leaf's adaptive step ([`adaptive`]).

pub mod adaptive;
pub mod check;
pub mod code;
pub mod config;
pub mod opaque;
pub mod segment;
pub mod shape;
pub mod snowflake;
pub mod template;
pub mod text;
pub mod uuid;
