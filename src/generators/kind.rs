//! What kind of tag a change is made to, read from the catalog's latest committed row: the
//! changes that differ for a gapless tag (a template, opaque numbers) ask it here, below the
//! generators they belong to (`order.rs`, `opaque.rs`), which `gapless.rs` builds on.

use crate::plumbing::error::{Result, SeqgenError};
use crate::plumbing::session::{as_superuser, bounded_lock_wait};

/// Is `tag` gapless? `Err(UnknownTag)` when it does not exist. Read from the latest committed
/// row, whatever the isolation level (the check guards a change made to the latest row).
pub(crate) fn is_gapless(tag: &str) -> Result<bool> {
    let rows = bounded_lock_wait(|| {
        as_superuser(|| {
            crate::plumbing::session::latest(
                "SELECT gapless FROM seqgen.alloc WHERE biz_tag OPERATOR(pg_catalog.=) $1",
                &[tag.into()],
            )
        })
    })
    .map_err(|e| SeqgenError::Internal(e.to_string()))?;
    match rows.first() {
        Some(r) => Ok(r[0].bool().unwrap_or(false)),
        None => Err(crate::plumbing::replication::unknown_tag(tag)),
    }
}
