//! Logical replication of the catalog, for a blue/green switchover to a new server (another
//! major, say): the old side publishes `seqgen_replication_tables()` with the application's
//! tables, the new side subscribes, and at the switchover the subscription is disabled and the
//! new side draws on above everything the old side reserved.
//!
//! Two mistakes are caught on the new side, on cold paths only (a backend's first use of a
//! tag, `seqgen_create`):
//! - drawing while the catalog still comes in from the old side (both sides would issue the
//!   same values): refused with 55000 until the subscription is disabled or dropped;
//! - a subscription without the catalog (only the application's tables published): an unknown
//!   tag says so in its hint, and `seqgen_create` warns that a tag made here by hand starts its
//!   numbering again.

use std::cell::Cell;

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::plumbing::local::BackendLocal;

use crate::plumbing::defaults;
use crate::plumbing::error::{Result, SeqgenError};
use crate::plumbing::session::as_superuser;

/// A subscription of this database: its name, whether it is enabled, whether it brings
/// `seqgen.alloc`.
struct Subscription {
    name: String,
    enabled: bool,
    receives_catalog: bool,
}

fn subscriptions() -> Result<Vec<Subscription>> {
    // with the latest snapshot, whatever the isolation level (and not the calling statement's,
    // which SPI reuses in a transaction that has written nothing): a change committed before the
    // read is seen, and one committed after it invalidates the answer kept
    const SQL: &str =
        "SELECT s.subname::pg_catalog.text, s.subenabled, EXISTS (SELECT FROM pg_catalog.pg_subscription_rel r \
           WHERE r.srsubid OPERATOR(pg_catalog.=) s.oid \
             AND r.srrelid OPERATOR(pg_catalog.=) 'seqgen.alloc'::pg_catalog.regclass) \
         FROM pg_catalog.pg_subscription s \
         WHERE s.subdbid OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database d \
           WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) \
         ORDER BY 1";
    as_superuser(|| crate::plumbing::session::latest(SQL, &[]))
        .map(|rows| {
            rows.into_iter()
                .map(|r| Subscription {
                    name: r[0].text().unwrap_or_default(),
                    enabled: r[1].bool().unwrap_or(false),
                    receives_catalog: r[2].bool().unwrap_or(false),
                })
                .collect()
        })
        .map_err(|e| SeqgenError::Internal(e.to_string()))
}

/// Bumped whenever `pg_subscription` or `pg_subscription_rel` change (a syscache callback):
/// the answer [`refuse_while_receiving`] keeps is read again.
struct Changes(Cell<u64>);
// SAFETY: a backend is single-threaded; pg_seqgen never touches this from other threads.
unsafe impl Sync for Changes {}
static CHANGES: Changes = Changes(Cell::new(0));

/// This backend's last answer: the subscription that brings the catalog in (if any), and the
/// value of `CHANGES` it was read at.
#[derive(Default)]
struct Receiving {
    hooked: bool,
    known: Option<(u64, Option<String>)>,
}
static RECEIVING: BackendLocal<Receiving> = BackendLocal::new();

#[pg_guard]
unsafe extern "C-unwind" fn subscriptions_changed(_arg: pg_sys::Datum, _cache: std::ffi::c_int, _hash: u32) {
    CHANGES.0.set(CHANGES.0.get().wrapping_add(1));
}

/// Refuse to serve `tag` while an enabled subscription brings the catalog into this database.
/// Asked on a backend's first use of each tag: the answer is read from the catalogs once and
/// kept until a subscription changes (so a new session's first draws of many tags read them
/// once).
pub fn refuse_while_receiving(tag: &str) -> Result<()> {
    let known = {
        let mut r = RECEIVING.get();
        if !r.hooked {
            r.hooked = true;
            for cache in [pg_sys::SysCacheIdentifier::SUBSCRIPTIONOID, pg_sys::SysCacheIdentifier::SUBSCRIPTIONRELMAP] {
                unsafe {
                    pg_sys::CacheRegisterSyscacheCallback(
                        cache as i32,
                        Some(subscriptions_changed),
                        pg_sys::Datum::from(0),
                    )
                };
            }
        }
        r.known.clone().filter(|(at, _)| *at == CHANGES.0.get()).map(|(_, s)| s)
    };
    let receiving = match known {
        Some(s) => s,
        None => {
            let at = CHANGES.0.get();
            let s = subscriptions()?.into_iter().find(|s| s.enabled && s.receives_catalog).map(|s| s.name);
            RECEIVING.get().known = Some((at, s.clone()));
            s
        }
    };
    match receiving {
        Some(subscription) => Err(SeqgenError::CatalogReplicatedIn { tag: tag.to_string(), subscription }),
        None => Ok(()),
    }
}

/// The subscription of a database that subscribes to something but not to the catalog.
pub fn catalog_not_received() -> Option<String> {
    let subs = subscriptions().ok()?;
    if subs.iter().any(|s| s.receives_catalog) {
        return None;
    }
    subs.into_iter().next().map(|s| s.name)
}

/// An unknown tag, with a hint when the likely reason is a subscription without the catalog,
/// or when column DEFAULTs draw from it: the tag was here, the columns may hold its values, and
/// `seqgen_create` alone would start it below them (read from the catalogs, opening no table).
pub fn unknown_tag(tag: &str) -> SeqgenError {
    if let Some(subscription) = catalog_not_received() {
        return SeqgenError::TagNotReplicated { tag: tag.to_string(), subscription };
    }
    let found = defaults::columns_drawing_from(tag);
    if found.is_empty() {
        return SeqgenError::UnknownTag(tag.to_string());
    }
    SeqgenError::UnknownTagDrawn {
        tag: tag.to_string(),
        adoptable: found.len() == 1 && found[0].whole && found[0].is_table && found[0].function == "seqgen_next",
        columns: found.into_iter().map(|d| (d.table, d.column)).collect(),
    }
}
