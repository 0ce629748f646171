//! `seqgen_currval` and `seqgen_lastval`: what `seqgen_next` returned to this session, as
//! PostgreSQL's `currval` and `lastval` give for sequences. The values are kept by the
//! directory, beside its cache entries (`plumbing::drawn`): a draw remembers its value with one
//! store. No catalog row, no shared memory, nothing a rollback undoes; `DISCARD SEQUENCES` and
//! `DISCARD ALL` forget them (`background::utility` sees those).

use pgrx::prelude::*;

use crate::plumbing::cache;
use crate::plumbing::error::{check_tag, OrRaise, Result, SeqgenError};

/// May the current user read a value of `tag`? The backend's cached privilege answer says so
/// (`known`), or else the catalog, as `currval` checks a privilege on the sequence: after
/// `SET ROLE`, in a `SECURITY DEFINER` function, or once a grant changed, the role must be
/// allowed to draw from the tag. An unknown tag is 42704.
fn check_may_read(tag: &str, known: bool) -> Result<()> {
    if known || crate::plumbing::acl::may_draw(tag)? {
        Ok(())
    } else {
        Err(SeqgenError::TagPermission(tag.to_string()))
    }
}

fn currval(tag: &str) -> Result<i64> {
    check_tag(tag)?;
    match cache::drawn_value(tag) {
        Some((value, known)) => check_may_read(tag, known).map(|()| value),
        None => {
            // an unknown tag, or one the role may not draw from, says so first
            check_may_read(tag, false)?;
            Err(SeqgenError::NotYetDrawn(Some(tag.to_string())))
        }
    }
}

fn lastval() -> Result<i64> {
    let (value, tag, known) = cache::latest_drawn().ok_or(SeqgenError::NotYetDrawn(None))?;
    match check_may_read(&tag, known) {
        Ok(()) => Ok(value),
        // the tag was dropped since: as lastval after its sequence was dropped
        Err(SeqgenError::UnknownTag(_) | SeqgenError::UnknownTagDrawn { .. }) => Err(SeqgenError::NotYetDrawn(None)),
        Err(e) => Err(e),
    }
}

/// The value `seqgen_next(biz_tag)` last returned to this session, like `currval`: 55000 when
/// it has not drawn from the tag yet. Reads no counter: other sessions' draws do not change it.
#[pg_extern(volatile, strict, parallel_restricted)]
fn seqgen_currval(biz_tag: &str) -> i64 {
    currval(biz_tag).or_raise()
}

/// The value `seqgen_next` (of any tag, or of a key) last returned to this session, like
/// `lastval`: 55000 before the session's first draw.
#[pg_extern(volatile, parallel_restricted)]
fn seqgen_lastval() -> i64 {
    lastval().or_raise()
}
