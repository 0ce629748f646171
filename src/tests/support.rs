//! What the `#[pg_test]`s share: running SQL in another session or a subtransaction,
//! reading the SQLSTATE a statement raised, the catalog as text, waiting for the allocator.

pub(crate) use pgrx::pg_sys;
pub(crate) use pgrx::pg_sys::errcodes::PgSqlErrorCode;
pub(crate) use pgrx::pg_sys::panic::CaughtError;
pub(crate) use pgrx::prelude::*;
pub(crate) use PgSqlErrorCode::*;

/// Run `sql` in its own committed transaction (another session).
pub(crate) fn autonomous(sql: &str) {
    other_session("pgrx_tests").batch_execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
}

/// A second session on this server, through its Unix socket (no name lookup, so the
/// client needs no thread of its own inside the backend).
pub(crate) fn other_session(db: &str) -> postgres::Client {
    let port = Spi::get_one::<String>("SELECT current_setting('port')").unwrap().unwrap();
    let dirs = Spi::get_one::<String>("SELECT current_setting('unix_socket_directories')").unwrap().unwrap();
    let dir = dirs.split(',').next().unwrap_or("/tmp").trim().to_string();
    let user = Spi::get_one::<String>("SELECT current_user::text").unwrap().unwrap();
    postgres::Client::connect(&format!("dbname={db} host={dir} port={port} user={user}"), postgres::NoTls)
        .unwrap_or_else(|e| panic!("connecting a second session: {e}"))
}

/// Run `sql` in a subtransaction; the SQLSTATE it raised, or `None` if it succeeded.
pub(crate) fn sqlstate(sql: &str) -> Option<PgSqlErrorCode> {
    in_subxact(|| Spi::run(sql).unwrap())
}

pub(crate) fn in_subxact(f: impl FnOnce() + std::panic::UnwindSafe) -> Option<PgSqlErrorCode> {
    failure(f).map(|(code, _)| code)
}

/// Run `sql` in a subtransaction; the SQLSTATE and message it raised.
pub(crate) fn error_of(sql: &str) -> Option<(PgSqlErrorCode, String)> {
    failure(|| Spi::run(sql).unwrap())
}

pub(crate) fn failure(f: impl FnOnce() + std::panic::UnwindSafe) -> Option<(PgSqlErrorCode, String)> {
    unsafe {
        let cx = pg_sys::CurrentMemoryContext;
        let owner = pg_sys::CurrentResourceOwner;
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(cx);
        PgTryBuilder::new(move || {
            f();
            pg_sys::ReleaseCurrentSubTransaction();
            pg_sys::MemoryContextSwitchTo(cx);
            pg_sys::CurrentResourceOwner = owner;
            None
        })
        .catch_others(move |e| {
            pg_sys::MemoryContextSwitchTo(cx);
            pg_sys::RollbackAndReleaseCurrentSubTransaction();
            pg_sys::MemoryContextSwitchTo(cx);
            pg_sys::CurrentResourceOwner = owner;
            Some(match e {
                CaughtError::PostgresError(r) | CaughtError::ErrorReport(r) => {
                    (r.sql_error_code(), r.message().to_string())
                }
                CaughtError::RustPanic { ereport, .. } => (ereport.sql_error_code(), ereport.message().to_string()),
            })
        })
        .execute()
    }
}

/// The whole catalog as text, to show that a failed call changed nothing. The allocator
/// reserves segments of any tag in the background (a prefetch), so `max_id` counts only
/// for the tags the statement names.
pub(crate) fn catalog(sql: &str) -> String {
    Spi::get_one_with_args::<String>(
        "SELECT coalesce(string_agg(format('%s:%s:%s:%s:%s', biz_tag, \
           CASE WHEN pg_catalog.strpos($1, quote_literal(biz_tag)) > 0 THEN max_id END, step, node_bits, \
           opaque_from IS NOT NULL), ',' ORDER BY biz_tag), '') FROM seqgen.alloc",
        &[sql.into()],
    )
    .unwrap()
    .unwrap_or_default()
}

pub(crate) fn one(sql: &str) -> i64 {
    Spi::get_one::<i64>(sql).unwrap().expect("NULL")
}

pub(crate) fn ids(sql: &str) -> Vec<i64> {
    Spi::connect(|c| c.select(sql, None, &[]).unwrap().map(|row| row.get::<i64>(1).unwrap().unwrap()).collect())
}

/// Wait (up to 10 s) until the worker has prefetched the next segment of `tag`.
pub(crate) fn wait_next_ready(tag: &str) {
    for _ in 0..500 {
        let ready = Spi::get_one_with_args::<bool>(
            "SELECT next_segment_ready FROM seqgen_status() WHERE biz_tag = $1",
            &[tag.into()],
        )
        .unwrap();
        if ready == Some(true) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("next segment of {tag} never became ready");
}

/// Expect `sql` to fail with `code` and leave the catalog as it was.
pub(crate) fn refused(sql: &str, code: PgSqlErrorCode) {
    let before = catalog(sql);
    assert_eq!(sqlstate(sql), Some(code), "{sql}");
    assert_eq!(catalog(sql), before, "{sql} changed the catalog");
}

/// Poll `sql` (up to 10 s) until `ok` holds for its bigint result.
pub(crate) fn wait_for_value(sql: &str, ok: impl Fn(i64) -> bool) -> i64 {
    for _ in 0..500 {
        if let Ok(Some(v)) = Spi::get_one::<i64>(sql) {
            if ok(v) {
                return v;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("{sql} never satisfied the condition");
}

pub(crate) fn text(sql: &str) -> String {
    Spi::get_one::<String>(sql).unwrap().expect("NULL")
}

/// The first column of every row of `sql`.
pub(crate) fn texts(sql: &str) -> Vec<String> {
    Spi::connect(|c| c.select(sql, None, &[]).unwrap().map(|r| r.get::<String>(1).unwrap().unwrap()).collect())
}

/// Opaque numbers: all different, all `len` long, and about half of the steps going down.
pub(crate) fn assert_unique_unordered(got: &[String], len: usize, down: std::ops::RangeInclusive<usize>) {
    let uniq: std::collections::HashSet<&String> = got.iter().collect();
    assert_eq!(uniq.len(), got.len());
    assert!(got.iter().all(|n| n.len() == len), "{:?}", &got[..3]);
    let decreasing = got.windows(2).filter(|w| w[1] < w[0]).count();
    assert!(down.contains(&decreasing), "{decreasing} of {} steps go down", got.len() - 1);
}
