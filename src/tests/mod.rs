//! `#[pg_test]`s: every SQL function and every bad input, run by `cargo pgrx test`.
//!
//! pgrx runs each test inside a transaction that it rolls back, while pg_seqgen's worker only
//! sees committed tags. Tests therefore set up committed state with
//! [`support::autonomous`] (a second connection to the same server over its Unix socket, with
//! the `postgres` client crate; not dblink, which the PostgreSQL 16 build used here does not
//! ship), exactly as an application would from another session, and check errors with
//! [`support::sqlstate`], which runs a statement in a subtransaction (like a PL/pgSQL
//! EXCEPTION block) and returns the SQLSTATE it raised.
//!
//! One file per concept; `support` holds what they share. Every test function is in the
//! schema `tests` (each file's `#[pg_schema] mod tests`), so their names are unique across
//! the files.

mod admin;
mod opaque;
mod order;
mod privileges;
mod support;
mod tags;
mod text;
mod time;
