//! The generators and their SQL functions: tags and their privileges, segment IDs, snowflake IDs and UUIDv7s (one
//! clock-ordered generator each), order numbers, opaque numbers. They stand on the plumbing
//! only; the allocator (in `background`) serves their requests through shared memory.

pub mod code;
pub mod config;
pub mod gapless;
pub mod kind;
pub mod lastval;
pub mod listing;
pub mod opaque;
pub mod order;
pub mod segment;
pub mod snowflake;
pub mod snowflake53;
pub mod tags;
pub mod text;
pub mod uuid;
