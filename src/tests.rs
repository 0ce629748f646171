//! `#[pg_test]`s: every SQL function and every bad input, run by `cargo pgrx test`.
//!
//! pgrx runs each test inside a transaction that it rolls back, while pg_seqgen's worker only
//! sees committed tags. Tests therefore set up committed state with [`autonomous`] (a second
//! connection to the same server over its Unix socket, with the `postgres` client crate; not
//! dblink, which the PostgreSQL 16 build used here does not ship), exactly as an application
//! would from another session,
//! and check errors with [`sqlstate`], which runs a statement in a subtransaction (like a
//! PL/pgSQL EXCEPTION block) and returns the SQLSTATE it raised.

#[pgrx::pg_schema]
mod tests {
    use pgrx::pg_sys;
    use pgrx::pg_sys::errcodes::PgSqlErrorCode;
    use pgrx::pg_sys::panic::CaughtError;
    use pgrx::prelude::*;
    use PgSqlErrorCode::*;

    /// Run `sql` in its own committed transaction (another session).
    fn autonomous(sql: &str) {
        other_session("pgrx_tests").batch_execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }

    /// A second session on this server, through its Unix socket (no name lookup, so the
    /// client needs no thread of its own inside the backend).
    fn other_session(db: &str) -> postgres::Client {
        let port = Spi::get_one::<String>("SELECT current_setting('port')").unwrap().unwrap();
        let dirs = Spi::get_one::<String>("SELECT current_setting('unix_socket_directories')").unwrap().unwrap();
        let dir = dirs.split(',').next().unwrap_or("/tmp").trim().to_string();
        let user = Spi::get_one::<String>("SELECT current_user::text").unwrap().unwrap();
        postgres::Client::connect(&format!("dbname={db} host={dir} port={port} user={user}"), postgres::NoTls)
            .unwrap_or_else(|e| panic!("connecting a second session: {e}"))
    }

    /// Run `sql` in a subtransaction; the SQLSTATE it raised, or `None` if it succeeded.
    fn sqlstate(sql: &str) -> Option<PgSqlErrorCode> {
        in_subxact(|| Spi::run(sql).unwrap())
    }

    fn in_subxact(f: impl FnOnce() + std::panic::UnwindSafe) -> Option<PgSqlErrorCode> {
        failure(f).map(|(code, _)| code)
    }

    /// Run `sql` in a subtransaction; the SQLSTATE and message it raised.
    fn error_of(sql: &str) -> Option<(PgSqlErrorCode, String)> {
        failure(|| Spi::run(sql).unwrap())
    }

    fn failure(f: impl FnOnce() + std::panic::UnwindSafe) -> Option<(PgSqlErrorCode, String)> {
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
    fn catalog(sql: &str) -> String {
        Spi::get_one_with_args::<String>(
            "SELECT coalesce(string_agg(format('%s:%s:%s:%s:%s', biz_tag, \
               CASE WHEN pg_catalog.strpos($1, quote_literal(biz_tag)) > 0 THEN max_id END, step, node_bits, \
               opaque_from IS NOT NULL), ',' ORDER BY biz_tag), '') FROM seqgen.alloc",
            &[sql.into()],
        )
        .unwrap()
        .unwrap_or_default()
    }

    fn one(sql: &str) -> i64 {
        Spi::get_one::<i64>(sql).unwrap().expect("NULL")
    }

    fn ids(sql: &str) -> Vec<i64> {
        Spi::connect(|c| c.select(sql, None, &[]).unwrap().map(|row| row.get::<i64>(1).unwrap().unwrap()).collect())
    }

    /// Wait (up to 10 s) until the worker has prefetched the next segment of `tag`.
    fn wait_next_ready(tag: &str) {
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
    fn refused(sql: &str, code: PgSqlErrorCode) {
        let before = catalog(sql);
        assert_eq!(sqlstate(sql), Some(code), "{sql}");
        assert_eq!(catalog(sql), before, "{sql} changed the catalog");
    }

    #[pg_test]
    fn create_then_next_counts_from_start_with() {
        autonomous("SELECT seqgen_create('t_basic', 1000, 5)");
        let got: Vec<i64> = (0..5).map(|_| one("SELECT seqgen_next('t_basic')")).collect();
        assert_eq!(got, vec![5, 6, 7, 8, 9]);
        // the first segment [5, 1004] is reserved in the catalog
        assert_eq!(one("SELECT max_id FROM seqgen.alloc WHERE biz_tag = 't_basic'"), 1004);
    }

    #[pg_test]
    fn next_crosses_segments_without_gaps_in_one_session() {
        autonomous("SELECT seqgen_create('t_small', 10)");
        let got = ids("SELECT seqgen_next('t_small') FROM generate_series(1, 95)");
        assert_eq!(got, (1..=95).collect::<Vec<_>>());
        // Adaptive step: each segment lasted far less than 15 minutes, so each next one is
        // twice as long: [1,10] [11,30] [31,70] [71,150], and [151,310] prefetched at 10% of
        // [71,150]. Prefetching keeps exactly one segment ahead.
        wait_next_ready("t_small");
        assert_eq!(one("SELECT max_id FROM seqgen.alloc WHERE biz_tag = 't_small'"), 310);
        assert_eq!(one("SELECT current_step FROM seqgen_status() WHERE biz_tag = 't_small'"), 160);
    }

    #[pg_test]
    fn next_in_column_default() {
        autonomous("SELECT seqgen_create('t_default')");
        Spi::run("CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT seqgen_next('t_default'), item text)").unwrap();
        Spi::run("INSERT INTO orders (item) SELECT 'x' || g FROM generate_series(1, 50) g").unwrap();
        assert_eq!(one("SELECT count(DISTINCT id) FROM orders"), 50);
        assert_eq!(one("SELECT max(id) - min(id) FROM orders"), 49);
    }

    #[pg_test]
    fn batch_returns_distinct_ascending_ids() {
        autonomous("SELECT seqgen_create('t_batch', 100)");
        let first = one("SELECT seqgen_next('t_batch')");
        let batch = ids("SELECT seqgen_next_batch('t_batch', 250)");
        assert_eq!(batch.len(), 250);
        assert!(batch.windows(2).all(|w| w[0] < w[1]), "batch not ascending");
        assert!(batch[0] > first);
        let after = one("SELECT seqgen_next('t_batch')");
        assert!(!batch.contains(&after) && after != first);
        // large batches come from one dedicated reservation
        let big = ids("SELECT seqgen_next_batch('t_batch', 100000)");
        assert_eq!(big.len(), 100000);
        let mut all: Vec<i64> = big.iter().chain(batch.iter()).copied().chain([first, after]).collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 100000 + 250 + 2);
    }

    #[pg_test]
    fn status_reports_every_tag() {
        autonomous("SELECT seqgen_create('t_status', 100, 1, 'status test')");
        Spi::run("SELECT seqgen_next('t_status') FROM generate_series(1, 30)").unwrap();
        let (step, max_id) =
            Spi::get_two::<i32, i64>("SELECT step, max_id FROM seqgen_status() WHERE biz_tag = 't_status'").unwrap();
        assert_eq!(step, Some(100));
        assert!(max_id.unwrap() >= 100);
        assert_eq!(one("SELECT next_value FROM seqgen_status() WHERE biz_tag = 't_status'"), 31);
        assert_eq!(one("SELECT segment_end FROM seqgen_status() WHERE biz_tag = 't_status'"), 100);
        // 30% used > 10% threshold: the next segment gets prefetched
        wait_next_ready("t_status");
        assert_eq!(
            Spi::get_one::<String>("SELECT description FROM seqgen_status() WHERE biz_tag = 't_status'").unwrap(),
            Some("status test".into())
        );
    }

    #[pg_test]
    fn drop_then_next_is_unknown() {
        autonomous("SELECT seqgen_create('t_drop')");
        one("SELECT seqgen_next('t_drop')");
        autonomous("SELECT seqgen_drop('t_drop')");
        refused("SELECT seqgen_next('t_drop')", ERRCODE_UNDEFINED_OBJECT);
        refused("SELECT seqgen_drop('t_drop')", ERRCODE_UNDEFINED_OBJECT);
        // created again, it is a new tag
        autonomous("SELECT seqgen_create('t_drop', 10, 500)");
        assert_eq!(one("SELECT seqgen_next('t_drop')"), 500);
    }

    #[pg_test]
    fn rolled_back_segment_is_never_handed_out_again() {
        autonomous("SELECT seqgen_create('t_rollback', 10)");
        let mut seen = ids("SELECT seqgen_next('t_rollback') FROM generate_series(1, 5)");
        let mut in_rolled_back = vec![];
        // draw across several segment switches inside a subtransaction, then roll it back
        assert_eq!(
            in_subxact(std::panic::AssertUnwindSafe(|| {
                let v = ids("SELECT seqgen_next('t_rollback') FROM generate_series(1, 37)");
                in_rolled_back.extend(v);
                Spi::run("SELECT 1/0").unwrap();
            })),
            Some(ERRCODE_DIVISION_BY_ZERO)
        );
        assert_eq!(in_rolled_back.len(), 37);
        seen.extend(in_rolled_back);
        seen.extend(ids("SELECT seqgen_next('t_rollback') FROM generate_series(1, 100)"));
        let n = seen.len();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), n, "an ID was handed out twice after a rollback");
    }

    #[pg_test]
    fn tag_created_in_open_transaction_gives_a_clear_error() {
        Spi::run("SELECT seqgen_create('t_uncommitted')").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_next('t_uncommitted')"), Some(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE));
    }

    #[pg_test]
    fn null_arguments() {
        // STRICT: NULL in, NULL out, nothing changed
        let before = catalog("");
        assert_eq!(Spi::get_one::<i64>("SELECT seqgen_next(NULL)").unwrap(), None);
        assert_eq!(one("SELECT count(*) FROM seqgen_next_batch(NULL, 5)"), 0);
        assert_eq!(one("SELECT count(*) FROM seqgen_next_batch('x', NULL)"), 0);
        assert_eq!(catalog(""), before);
        // administrative calls raise 22004 and change nothing (the integration test
        // every_function_follows_one_null_rule calls every function with NULLs)
        refused("SELECT seqgen_drop(NULL)", ERRCODE_NULL_VALUE_NOT_ALLOWED);
        refused("SELECT seqgen_restart('x', NULL)", ERRCODE_NULL_VALUE_NOT_ALLOWED);
        refused("SELECT seqgen_set_template('x', 'A{seq:3}', NULL)", ERRCODE_NULL_VALUE_NOT_ALLOWED);
        refused("SELECT seqgen_create(NULL)", ERRCODE_NULL_VALUE_NOT_ALLOWED);
        refused("SELECT seqgen_create('t_null', NULL)", ERRCODE_NULL_VALUE_NOT_ALLOWED);
        refused("SELECT seqgen_create('t_null', 10, NULL)", ERRCODE_NULL_VALUE_NOT_ALLOWED);
    }

    #[pg_test]
    fn bad_tag_names() {
        let long = "x".repeat(64);
        for sql in [
            "SELECT seqgen_create('')".to_string(),
            format!("SELECT seqgen_create('{long}')"),
            "SELECT seqgen_create(E'a\\nb')".to_string(),
            "SELECT seqgen_next('')".to_string(),
            format!("SELECT seqgen_next('{long}')"),
            "SELECT seqgen_drop('')".to_string(),
        ] {
            refused(&sql, ERRCODE_INVALID_PARAMETER_VALUE);
        }
        // 63 bytes is fine
        let ok = "y".repeat(63);
        assert_eq!(sqlstate(&format!("SELECT seqgen_create('{ok}')")), None);
    }

    #[pg_test]
    fn unknown_tag() {
        refused("SELECT seqgen_next('t_never_created')", ERRCODE_UNDEFINED_OBJECT);
        refused("SELECT seqgen_next_batch('t_never_created', 3)", ERRCODE_UNDEFINED_OBJECT);
    }

    /// An unknown tag that a column's DEFAULT draws from (the tag was here: a switchover whose
    /// publication left out the catalog) must not be hinted to seqgen_create(), which starts it
    /// at 1 below the table's values (issue 31, item 9). The hint's call starts it above them.
    /// The column is found from the catalogs alone: a lock held on the table does not delay
    /// the error (an earlier try read pg_get_expr, which locks each table: the fuzzer caught
    /// it waiting 20 s behind a prepared transaction's lock).
    #[pg_test]
    fn unknown_tag_named_by_a_default_points_above_its_values() {
        autonomous(
            "CREATE TABLE t_moved (id bigint DEFAULT seqgen_next('t_moved_tag'), v int); \
             INSERT INTO t_moved (id, v) SELECT g, g FROM generate_series(1, 41) g",
        );
        // the table locked by another session: the error still comes at once (no lock wait)
        let mut holder = other_session("pgrx_tests");
        holder.batch_execute("BEGIN; LOCK TABLE t_moved IN ACCESS EXCLUSIVE MODE").unwrap();
        let mut c = other_session("pgrx_tests");
        c.batch_execute("SET lock_timeout = '3s'").unwrap();
        let e = c.query_one("SELECT seqgen_next('t_moved_tag')", &[]).unwrap_err();
        let e = e.as_db_error().expect("an error from the server");
        assert_eq!(e.code().code(), "42704", "{e:?}");
        assert_eq!(e.message(), "tag \"t_moved_tag\" does not exist");
        assert!(
            e.detail().is_some_and(|d| d.contains("column \"id\" of table public.t_moved draws from it")),
            "{:?}",
            e.detail()
        );
        let hint = e.hint().unwrap_or_default().to_string();
        let call = "SELECT seqgen_adopt('t_moved_tag', 'public.t_moved', 'id')";
        assert!(hint.contains(call), "{hint}");
        assert!(!hint.contains("seqgen_create()"), "{hint}");
        holder.batch_execute("ROLLBACK").unwrap();
        // a tag no DEFAULT names keeps the plain hint
        let e = c.query_one("SELECT seqgen_next('t_never_named')", &[]).unwrap_err();
        assert_eq!(e.as_db_error().and_then(|d| d.hint()), Some("Create it with seqgen_create()."));
        // the column's tag, like pg_get_serial_sequence
        let tag: Option<String> = c.query_one("SELECT seqgen_column_tag('t_moved', 'id')", &[]).unwrap().get(0);
        assert_eq!(tag.as_deref(), Some("t_moved_tag"));
        // and the call the hint gives starts above the table's values
        c.batch_execute(call).unwrap();
        c.batch_execute("INSERT INTO t_moved (v) VALUES (42)").unwrap();
        let id: i64 = c.query_one("SELECT id FROM t_moved WHERE v = 42", &[]).unwrap().get(0);
        assert_eq!(id, 42);
        // seqgen_adopt still refuses a DEFAULT that draws from another tag, or from one that exists
        autonomous(
            "CREATE TABLE t_other (id bigint DEFAULT seqgen_next('t_moved_tag')); \
             CREATE TABLE t_elsewhere (id bigint DEFAULT seqgen_next('t_gone_tag'))",
        );
        let e = c.batch_execute("SELECT seqgen_adopt('t_moved_tag', 't_other', 'id')").unwrap_err();
        assert_eq!(e.code().map(|c| c.code()), Some("42710"), "{e:?}");
        let e = c.batch_execute("SELECT seqgen_adopt('t_new_tag', 't_elsewhere', 'id')").unwrap_err();
        assert_eq!(e.code().map(|c| c.code()), Some("0A000"), "{e:?}");
        // a DEFAULT that is more than seqgen_next(tag) (a key, an expression), or two columns:
        // seqgen_adopt would change or miss them; the hint says what to do without it
        autonomous(
            "CREATE TABLE t_keyed (id bigint DEFAULT seqgen_next('t_keyed_gone', 'k')); \
             CREATE TABLE t_two (a bigint DEFAULT seqgen_next('t_two_gone'), b bigint DEFAULT seqgen_next('t_two_gone'))",
        );
        for (tag, columns) in [
            ("t_keyed_gone", "column \"id\" of table public.t_keyed"),
            ("t_two_gone", "column \"a\" of table public.t_two, column \"b\" of table public.t_two"),
        ] {
            let e = c.query_one(&format!("SELECT seqgen_next('{tag}')"), &[]).unwrap_err();
            let e = e.as_db_error().expect("an error from the server");
            assert_eq!(e.code().code(), "42704");
            assert!(e.detail().is_some_and(|d| d.contains(columns)), "{:?}", e.detail());
            let hint = e.hint().unwrap_or_default();
            assert!(hint.contains("above the values those columns hold") && !hint.contains("seqgen_adopt"), "{hint}");
        }
        // adopting the keyed one would replace its DEFAULT: refused as before
        let e = c.batch_execute("SELECT seqgen_adopt('t_keyed_gone', 't_keyed', 'id')").unwrap_err();
        assert_eq!(e.code().map(|c| c.code()), Some("0A000"), "{e:?}");
        // a partitioned table: its partitions' DEFAULTs are copies of its own, and adopting it
        // covers them; a view's DEFAULT is not a table to adopt
        autonomous(
            "CREATE TABLE t_parted (id bigint DEFAULT seqgen_next('t_parted_gone'), k int) PARTITION BY RANGE (k); \
             CREATE TABLE t_parted_1 PARTITION OF t_parted FOR VALUES FROM (0) TO (10); \
             CREATE TABLE t_parted_2 PARTITION OF t_parted FOR VALUES FROM (10) TO (20); \
             INSERT INTO t_parted (id, k) VALUES (7, 1), (9, 15); \
             CREATE TABLE t_under (id bigint); CREATE VIEW t_view AS SELECT id FROM t_under; \
             ALTER VIEW t_view ALTER COLUMN id SET DEFAULT seqgen_next('t_view_gone')",
        );
        let e = c.query_one("SELECT seqgen_next('t_parted_gone')", &[]).unwrap_err();
        let e = e.as_db_error().expect("an error from the server");
        assert_eq!(
            e.detail().map(|d| d.starts_with("The DEFAULT of column \"id\" of table public.t_parted draws")),
            Some(true),
            "{:?}",
            e.detail()
        );
        let call = "SELECT seqgen_adopt('t_parted_gone', 'public.t_parted', 'id')";
        assert!(e.hint().unwrap_or_default().contains(call), "{:?}", e.hint());
        assert_eq!(c.query_one(call, &[]).unwrap().get::<_, i64>(0), 10);
        let e = c.query_one("SELECT seqgen_next('t_view_gone')", &[]).unwrap_err();
        let hint = e.as_db_error().and_then(|d| d.hint()).unwrap_or_default().to_string();
        assert!(hint.contains("above the values those columns hold") && !hint.contains("seqgen_adopt"), "{hint}");
        autonomous(
            "DROP VIEW t_view; DROP TABLE t_moved, t_other, t_elsewhere, t_keyed, t_two, t_parted, t_under; \
             SELECT seqgen_drop('t_moved_tag'); SELECT seqgen_drop('t_parted_gone')",
        );
    }

    /// seqgen_column_tag: the first tag a DEFAULT names, through casts and expressions; NULL
    /// for no DEFAULT or one that names no tag; 42703 for a column that does not exist.
    #[pg_test]
    fn column_tag_reads_the_default() {
        Spi::run(
            "CREATE TABLE t_ct (a bigint DEFAULT seqgen_next('ct_a'), \
                                b text DEFAULT 'INV-' || seqgen_order_no('ct_b'::varchar), \
                                c bigint DEFAULT seqgen_next('ct_c', 'k1') + 0, \
                                d bigint DEFAULT 7, \
                                e bigint, \
                                f bigint DEFAULT seqgen_snowflake(), \
                                \"G h\" bigint DEFAULT seqgen_next('ct_g'), \
                                i text DEFAULT seqgen_render('INV-{seq:6}', seqgen_next('ct_i'), now(), 'UTC'), \
                                j bigint DEFAULT seqgen_next(biz_tag => 'ct_j'))",
        )
        .unwrap();
        let tag = |col: &str| {
            Spi::get_one_with_args::<String>("SELECT seqgen_column_tag('t_ct', $1)", &[col.into()]).unwrap()
        };
        assert_eq!(tag("a").as_deref(), Some("ct_a"));
        assert_eq!(tag("b").as_deref(), Some("ct_b"));
        assert_eq!(tag("c").as_deref(), Some("ct_c"));
        assert_eq!(tag("d"), None);
        assert_eq!(tag("e"), None);
        assert_eq!(tag("f"), None);
        assert_eq!(tag("G h").as_deref(), Some("ct_g"));
        // a template is not a tag: only a function's biz_tag argument is
        assert_eq!(tag("i").as_deref(), Some("ct_i"));
        assert_eq!(tag("j").as_deref(), Some("ct_j"));
        assert_eq!(sqlstate("SELECT seqgen_column_tag('t_ct', 'nope')"), Some(ERRCODE_UNDEFINED_COLUMN));
        assert_eq!(sqlstate("SELECT seqgen_column_tag('t_ct', 'ctid')"), Some(ERRCODE_UNDEFINED_COLUMN));
        assert_eq!(sqlstate("SELECT seqgen_column_tag('no_such_table', 'a')"), Some(ERRCODE_UNDEFINED_TABLE));
        let null = Spi::get_one::<String>("SELECT seqgen_column_tag(NULL, 'a')").unwrap();
        assert_eq!(null, None);
    }

    #[pg_test]
    fn options_are_defaults_so_a_grant_names_the_function() {
        // one signature per function, but the draws whose key or tag is a function of its own
        let overloaded = Spi::get_one::<String>(
            "SELECT string_agg(proname, ',' ORDER BY proname) FROM (SELECT p.proname FROM pg_proc p \
               JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e' \
               JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_seqgen' \
              GROUP BY p.proname HAVING count(*) > 1) o",
        );
        assert_eq!(overloaded.unwrap().as_deref(), Some("seqgen_next,seqgen_order_no,seqgen_render"));
        autonomous(
            "DO $$ BEGIN CREATE ROLE seqgen_ops_role NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
             GRANT EXECUTE ON FUNCTION seqgen_create, seqgen_drop, seqgen_restart, seqgen_set_template, \
               seqgen_snowflake_advance TO seqgen_ops_role",
        );
        autonomous("SELECT seqgen_create('t_opts', 10)");
        // the options by name or position, and left out
        Spi::run("SELECT seqgen_restart('t_opts', 100)").unwrap();
        Spi::run("SELECT seqgen_restart('t_opts', 200, false)").unwrap();
        Spi::run("SELECT seqgen_restart('t_opts', 300, force => false)").unwrap();
        Spi::run("SELECT seqgen_set_template('t_opts', 'O{seq:4}')").unwrap();
        Spi::run("SELECT seqgen_set_template('t_opts', 'P{dd}{seq:4}', 'UTC', allow_repeats => true)").unwrap();
        refused("SELECT seqgen_restart('t_opts', 400, NULL)", ERRCODE_NULL_VALUE_NOT_ALLOWED);
        refused("SELECT seqgen_set_template('t_opts', 'Q{seq:4}', 'UTC', NULL)", ERRCODE_NULL_VALUE_NOT_ALLOWED);
        assert_eq!(sqlstate("SELECT seqgen_snowflake_advance(1, NULL)"), Some(ERRCODE_NULL_VALUE_NOT_ALLOWED));
    }

    #[pg_test]
    fn duplicate_create_and_missing_drop() {
        autonomous("SELECT seqgen_create('t_dup', 7)");
        refused("SELECT seqgen_create('t_dup', 100)", ERRCODE_DUPLICATE_OBJECT);
        assert_eq!(one("SELECT step FROM seqgen.alloc WHERE biz_tag = 't_dup'"), 7);
        // if_not_exists leaves the tag as it is; missing_ok drops nothing, without an error
        let before = catalog("");
        Spi::run("SELECT seqgen_create('t_dup', 100, 5, 'other', if_not_exists => true)").unwrap();
        Spi::run("SELECT seqgen_drop('t_dup_nope', missing_ok => true)").unwrap();
        assert_eq!(catalog(""), before);
        refused("SELECT seqgen_drop('t_dup_nope')", ERRCODE_UNDEFINED_OBJECT);
        // the docs' example: created, skipped, dropped, skipped
        Spi::run("SELECT seqgen_create('t_ine', step => 1000, if_not_exists => true)").unwrap();
        assert_eq!(one("SELECT step FROM seqgen.alloc WHERE biz_tag = 't_ine'"), 1000);
        Spi::run("SELECT seqgen_create('t_ine', step => 10, if_not_exists => true)").unwrap();
        assert_eq!(one("SELECT step FROM seqgen.alloc WHERE biz_tag = 't_ine'"), 1000);
        Spi::run("SELECT seqgen_drop('t_ine', missing_ok => true)").unwrap();
        assert_eq!(one("SELECT count(*) FROM seqgen.alloc WHERE biz_tag = 't_ine'"), 0);
        Spi::run("SELECT seqgen_drop('t_ine', missing_ok => true)").unwrap();
        // NULL is refused, and only a duplicate or an unknown tag is skipped
        refused("SELECT seqgen_create('t_dup', 7, 1, NULL, NULL)", ERRCODE_NULL_VALUE_NOT_ALLOWED);
        refused("SELECT seqgen_drop('t_dup', NULL)", ERRCODE_NULL_VALUE_NOT_ALLOWED);
        refused("SELECT seqgen_create('', if_not_exists => true)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_create('t_dup_bad', 0, if_not_exists => true)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_drop('', missing_ok => true)", ERRCODE_INVALID_PARAMETER_VALUE);
        // a tag of another owner is not dropped, missing_ok or not
        autonomous(
            "DO $$ BEGIN CREATE ROLE seqgen_ine_role NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
             GRANT EXECUTE ON FUNCTION seqgen_drop(text, boolean) TO seqgen_ine_role",
        );
        Spi::run("SET LOCAL ROLE seqgen_ine_role").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_drop('t_dup', missing_ok => true)"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(one("SELECT step FROM seqgen.alloc WHERE biz_tag = 't_dup'"), 7);
    }

    #[pg_test]
    fn bad_step_start_and_n() {
        autonomous("SELECT seqgen_create('t_args')");
        refused("SELECT seqgen_create('t_bad', 0)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_create('t_bad', -5)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_create('t_bad', 10, 0)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_next_batch('t_args', 0)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_next_batch('t_args', -1)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_next_batch('t_args', 10000001)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_next_batch('t_args', 2147483647)", ERRCODE_INVALID_PARAMETER_VALUE);
    }

    #[pg_test]
    fn bigint_exhaustion() {
        autonomous("SELECT seqgen_create('t_max', 10, 9223372036854775805)");
        let got = ids("SELECT seqgen_next('t_max') FROM generate_series(1, 3)");
        assert_eq!(got, vec![i64::MAX - 2, i64::MAX - 1, i64::MAX]);
        refused("SELECT seqgen_next('t_max')", ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED);
        refused("SELECT seqgen_next_batch('t_max', 2)", ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED);
        assert_eq!(one("SELECT max_id FROM seqgen.alloc WHERE biz_tag = 't_max'"), i64::MAX);
    }

    #[pg_test]
    fn catalog_guards() {
        autonomous("SELECT seqgen_create('t_guard', 10, 100)");
        one("SELECT seqgen_next('t_guard')");
        refused("UPDATE seqgen.alloc SET max_id = 0 WHERE biz_tag = 't_guard'", ERRCODE_CHECK_VIOLATION);
        refused(
            "UPDATE seqgen.alloc SET biz_tag = 't_renamed' WHERE biz_tag = 't_guard'",
            ERRCODE_FEATURE_NOT_SUPPORTED,
        );
        refused("TRUNCATE seqgen.alloc", ERRCODE_FEATURE_NOT_SUPPORTED);
        refused("UPDATE seqgen.alloc SET step = 0 WHERE biz_tag = 't_guard'", ERRCODE_CHECK_VIOLATION);
        // raising max_id (skipping numbers) is allowed
        assert_eq!(sqlstate("UPDATE seqgen.alloc SET max_id = max_id + 1000 WHERE biz_tag = 't_guard'"), None);
    }

    #[pg_test]
    fn more_tags_than_slots_are_served() {
        // the test cluster runs with seqgen.max_tags = 64: shared memory is a cache of the
        // catalog, and 150 tags in turn evict each other without an error or a repeat
        autonomous("SELECT seqgen_create('t_many_' || g, 5) FROM generate_series(1, 150) g");
        let mut seen = std::collections::HashMap::<i64, Vec<i64>>::new();
        for round in 0..3 {
            for g in 1..=150 {
                let v = one(&format!("SELECT seqgen_next('t_many_{g}')"));
                seen.entry(g).or_default().push(v);
                if round == 0 {
                    assert_eq!(v, 1, "t_many_{g}");
                }
            }
        }
        for (g, vs) in &seen {
            assert!(vs.windows(2).all(|w| w[0] < w[1]), "t_many_{g}: {vs:?}");
        }
        autonomous("DELETE FROM seqgen.alloc WHERE biz_tag LIKE 't\\_many\\_%'");
    }

    /// Another database with the extension has an allocator of its own: the same tag name
    /// there is another generator, and snowflakes stay unique across both databases.
    #[pg_test]
    fn other_database_has_its_own_allocator() {
        if Spi::get_one::<bool>("SELECT EXISTS (SELECT FROM pg_database WHERE datname = 'seqgen_other_db')").unwrap()
            != Some(true)
        {
            autonomous("CREATE DATABASE seqgen_other_db");
        }
        let mut other = other_session("seqgen_other_db");
        other.batch_execute("CREATE EXTENSION IF NOT EXISTS pg_seqgen").unwrap();
        autonomous("SELECT seqgen_create('t_two_dbs', 10, 1000)");
        other.batch_execute("SELECT seqgen_create('t_two_dbs', 10, 1)").unwrap();
        let there: Vec<i64> = other
            .query("SELECT seqgen_next('t_two_dbs') FROM generate_series(1, 25)", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(there, (1..=25).collect::<Vec<i64>>(), "the other database's tag starts at its own start");
        let here = one("SELECT seqgen_next('t_two_dbs')");
        assert_eq!(here, 1000, "this database's tag of the same name is independent");
        let sf_there: i64 = other.query_one("SELECT seqgen_snowflake()", &[]).unwrap().get(0);
        let sf_here = one("SELECT seqgen_snowflake()");
        let sf_there2: i64 = other.query_one("SELECT seqgen_snowflake()", &[]).unwrap().get(0);
        assert!(sf_there < sf_here && sf_here < sf_there2, "one snowflake sequence across databases");
        let dbs = one(
            "SELECT count(*) FROM seqgen_allocators() WHERE running AND database IN ('pgrx_tests', 'seqgen_other_db')",
        );
        assert_eq!(dbs, 2);
        other.batch_execute("SELECT seqgen_drop('t_two_dbs')").unwrap();
        autonomous("SELECT seqgen_drop('t_two_dbs')");
    }

    #[pg_test]
    fn row_locked_by_open_transaction_times_out_cleanly() {
        autonomous("SELECT seqgen_create('t_locked')");
        // this transaction holds the catalog row; the worker never blocks on it
        Spi::run("SELECT 1 FROM seqgen.alloc WHERE biz_tag = 't_locked' FOR UPDATE").unwrap();
        Spi::run("SET LOCAL seqgen.allocation_timeout = 300").unwrap();
        refused("SELECT seqgen_next('t_locked')", ERRCODE_LOCK_NOT_AVAILABLE);
        // other tags are still served meanwhile
        autonomous("SELECT seqgen_create('t_not_locked')");
        assert_eq!(one("SELECT seqgen_next('t_not_locked')"), 1);
    }

    #[pg_test]
    fn stopped_worker_and_timeout() {
        autonomous("SELECT seqgen_create('t_stopped')");
        // this database's allocator (waiting for it, should an earlier test have stopped it)
        let allocator = || {
            for _ in 0..500 {
                // shared memory, not pg_stat_activity (a snapshot per transaction)
                let q = "SELECT pid FROM seqgen_worker_status() WHERE running";
                if let Ok(Some(pid)) = Spi::get_one::<i32>(q) {
                    return pid;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            panic!("no allocator for this database");
        };
        let pid = allocator();
        Spi::run("SET LOCAL seqgen.allocation_timeout = 300").unwrap();
        // a hung worker (SIGSTOP): the call times out instead of hanging
        let signal = |sig: &str| {
            // the program reads its input so COPY never sees a broken pipe
            Spi::run(&format!("COPY (SELECT 1) TO PROGRAM 'cat >/dev/null; kill -{sig} {pid}'")).unwrap()
        };
        signal("STOP");
        let code = sqlstate("SELECT seqgen_next('t_stopped')");
        signal("CONT");
        assert_eq!(code, Some(ERRCODE_LOCK_NOT_AVAILABLE));
        // a terminated worker: the launcher starts it again (at once, or a second after its
        // last start); a call meanwhile waits for it, or says it is not running
        Spi::run(&format!("SELECT pg_terminate_backend({pid})")).unwrap();
        let code = sqlstate("SELECT seqgen_next('t_stopped_too')");
        assert!(
            code == Some(ERRCODE_UNDEFINED_OBJECT) || code == Some(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
            "{code:?}"
        );
        // and it comes back by itself
        Spi::run("SET LOCAL seqgen.allocation_timeout = 10000").unwrap();
        assert_eq!(one("SELECT seqgen_next('t_stopped')"), 1);
        assert_ne!(allocator(), pid, "a new allocator");
    }

    #[pg_test]
    fn execute_only_role_cannot_touch_the_catalog() {
        autonomous("SELECT seqgen_create('t_priv', 10)");
        autonomous(
            "DO $$ BEGIN CREATE ROLE seqgen_app_test NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
             GRANT EXECUTE ON FUNCTION seqgen_next, seqgen_next_batch(text, integer) TO seqgen_app_test",
        );
        Spi::run("SET LOCAL ROLE seqgen_app_test").unwrap();
        // EXECUTE alone does not open the tag; an unknown tag is unknown whoever asks
        assert_eq!(sqlstate("SELECT seqgen_next('t_priv')"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        assert_eq!(sqlstate("SELECT seqgen_next('t_priv_mistyped')"), Some(ERRCODE_UNDEFINED_OBJECT));
        Spi::run("RESET ROLE").unwrap();
        // the grant commits in another session; this backend sees it at the commit
        autonomous("SELECT seqgen_grant('t_priv', 'seqgen_app_test')");
        Spi::run("SET LOCAL ROLE seqgen_app_test").unwrap();
        assert!(one("SELECT seqgen_next('t_priv')") >= 1);
        assert_eq!(one("SELECT count(*) FROM seqgen_next_batch('t_priv', 3)"), 3);
        for sql in [
            "SELECT seqgen_create('t_priv2')",
            "SELECT seqgen_drop('t_priv')",
            "SELECT * FROM seqgen_status()",
            "SELECT * FROM seqgen.alloc",
            "UPDATE seqgen.alloc SET max_id = max_id + 1",
            "DELETE FROM seqgen.alloc",
            "INSERT INTO seqgen.alloc VALUES ('t_evil', 0, 1)",
            "TRUNCATE seqgen.alloc",
        ] {
            assert_eq!(sqlstate(sql), Some(ERRCODE_INSUFFICIENT_PRIVILEGE), "{sql}");
        }
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(one("SELECT count(*) FROM seqgen.alloc WHERE biz_tag IN ('t_priv2', 't_evil')"), 0);
        assert_eq!(one("SELECT count(*) FROM seqgen.alloc WHERE biz_tag = 't_priv'"), 1);
    }

    #[pg_test]
    fn snowflake_increases_and_decodes() {
        let got = ids("SELECT seqgen_snowflake() FROM generate_series(1, 5000)");
        assert!(got.windows(2).all(|w| w[0] < w[1]), "snowflakes not strictly increasing");
        let last = *got.last().unwrap();
        let (node, seq, age_ms) = Spi::get_three_with_args::<i32, i32, f64>(
            "SELECT node_id, sequence, (extract(epoch FROM clock_timestamp() - ts) * 1000)::float8 \
             FROM seqgen_snowflake_decode($1)",
            &[last.into()],
        )
        .unwrap();
        assert_eq!(node, Some(0));
        assert_eq!(seq.unwrap() as i64, last & 4095);
        let age = age_ms.unwrap();
        assert!((-5.0..1000.0).contains(&age), "decoded time is {age} ms from now");
    }

    #[pg_test]
    fn snowflake_decode_rejects_negative() {
        refused("SELECT * FROM seqgen_snowflake_decode(-1)", ERRCODE_INVALID_PARAMETER_VALUE);
    }

    #[pg_test]
    fn snowflake_status_and_reservation() {
        let id = one("SELECT seqgen_snowflake()");
        let row = Spi::get_three::<i32, i64, bool>(
            "SELECT node_id, refusals, reserved_until > last_ts FROM seqgen_snowflake_status()",
        )
        .unwrap();
        assert_eq!(row, (Some(0), Some(0), Some(true)));
        // the persisted reservation is above every issued ID
        let reserved = wait_for_value("SELECT reserved_id FROM seqgen.snowflake", |r| r > id);
        assert!(reserved > id);
    }

    /// Poll `sql` (up to 10 s) until `ok` holds for its bigint result.
    fn wait_for_value(sql: &str, ok: impl Fn(i64) -> bool) -> i64 {
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

    #[pg_test]
    fn snowflake_reservation_cannot_go_back() {
        one("SELECT seqgen_snowflake()");
        wait_for_value("SELECT count(*) FROM seqgen.snowflake", |n| n == 1);
        refused("UPDATE seqgen.snowflake SET reserved_id = 0", ERRCODE_CHECK_VIOLATION);
        refused("DELETE FROM seqgen.snowflake", ERRCODE_FEATURE_NOT_SUPPORTED);
        refused("TRUNCATE seqgen.snowflake", ERRCODE_FEATURE_NOT_SUPPORTED);
    }

    #[pg_test]
    fn alter_changes_step_and_description() {
        autonomous("SELECT seqgen_create('t_alt', 10)");
        one("SELECT seqgen_next('t_alt')");
        Spi::run("SELECT seqgen_alter('t_alt', step => 50, description => 'orders')").unwrap();
        let row =
            Spi::get_two::<i32, String>("SELECT step, description FROM seqgen.alloc WHERE biz_tag = 't_alt'").unwrap();
        assert_eq!(row, (Some(50), Some("orders".into())));
        // NULL leaves a field as it is
        Spi::run("SELECT seqgen_alter('t_alt', step => 70)").unwrap();
        let row =
            Spi::get_two::<i32, String>("SELECT step, description FROM seqgen.alloc WHERE biz_tag = 't_alt'").unwrap();
        assert_eq!(row, (Some(70), Some("orders".into())));
        refused("SELECT seqgen_alter('t_alt', step => 0)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_alter('no_such_tag', step => 5)", ERRCODE_UNDEFINED_OBJECT);
        refused("SELECT seqgen_alter(NULL, step => 5)", ERRCODE_NULL_VALUE_NOT_ALLOWED);
    }

    #[pg_test]
    fn restart_moves_up_only() {
        autonomous("SELECT seqgen_create('t_rs', 10)");
        let first = one("SELECT seqgen_next('t_rs')");
        let max = one("SELECT max_id FROM seqgen.alloc WHERE biz_tag = 't_rs'");
        assert!(max >= first);
        // at or below the highest reserved value: refused, with the floor in the message
        refused(&format!("SELECT seqgen_restart('t_rs', {max})"), ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_restart('t_rs', 1)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_restart('no_such_tag', 100)", ERRCODE_UNDEFINED_OBJECT);
        autonomous("SELECT seqgen_create('t_rs_opaque', 10); SELECT seqgen_make_opaque('t_rs_opaque')");
        refused("SELECT seqgen_restart('t_rs_opaque', 1000000)", ERRCODE_FEATURE_NOT_SUPPORTED);
        // once the restart commits, this session's cached segment is discarded
        autonomous("SELECT seqgen_restart('t_rs', 1000000)");
        assert_eq!(one("SELECT seqgen_next('t_rs')"), 1_000_000);
    }

    #[pg_test]
    fn adopt_a_bigserial_column_and_bad_targets() {
        autonomous(
            "CREATE TABLE ad_serial (id bigserial PRIMARY KEY, v int);
             INSERT INTO ad_serial (v) SELECT g FROM generate_series(1, 10) g;
             SELECT setval('ad_serial_id_seq', 25);  -- handed out, never stored
             SELECT seqgen_adopt('ad_serial_ids', 'ad_serial', 'id', 100);",
        );
        // above the table's maximum and the sequence's last value
        assert_eq!(one("INSERT INTO ad_serial (v) VALUES (0) RETURNING id"), 26);
        let default = Spi::get_one::<String>(
            "SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'ad_serial'::regclass",
        )
        .unwrap()
        .unwrap();
        assert!(default.contains("seqgen_next('ad_serial_ids'"), "{default}");
        // the old sequence stays, unused
        assert_eq!(one("SELECT last_value FROM ad_serial_id_seq"), 25);

        Spi::run(
            "CREATE TABLE ad_int (id int PRIMARY KEY);
             CREATE TABLE ad_parent (id bigint PRIMARY KEY);
             CREATE TABLE ad_child (id bigint PRIMARY KEY, parent bigint REFERENCES ad_parent);
             CREATE VIEW ad_view AS SELECT 1::bigint AS id",
        )
        .unwrap();
        for (sql, code) in [
            ("SELECT seqgen_adopt('x1', 'ad_no_such_table', 'id')", ERRCODE_UNDEFINED_TABLE),
            ("SELECT seqgen_adopt('x1', 'ad_serial', 'no_such_column')", ERRCODE_UNDEFINED_COLUMN),
            ("SELECT seqgen_adopt('x1', 'ad_int', 'id')", ERRCODE_DATATYPE_MISMATCH),
            ("SELECT seqgen_adopt('x1', 'ad_child', 'parent')", ERRCODE_FEATURE_NOT_SUPPORTED),
            ("SELECT seqgen_adopt('x1', 'ad_view', 'id')", ERRCODE_WRONG_OBJECT_TYPE),
            ("SELECT seqgen_adopt('x1', NULL, 'id')", ERRCODE_NULL_VALUE_NOT_ALLOWED),
            ("SELECT seqgen_adopt('ad_serial_ids', 'ad_parent', 'id')", ERRCODE_DUPLICATE_OBJECT),
            ("SELECT seqgen_adopt_snowflake('ad_int', 'id')", ERRCODE_DATATYPE_MISMATCH),
        ] {
            refused(sql, code);
        }
        // a column already holding values at or above the current snowflake is refused
        Spi::run("INSERT INTO ad_parent VALUES (9223372036854775806)").unwrap();
        refused("SELECT seqgen_adopt_snowflake('ad_parent', 'id')", ERRCODE_INVALID_PARAMETER_VALUE);
        // a plain bigint column: the tag starts above its maximum
        autonomous(
            "CREATE TABLE ad_plain (id bigint PRIMARY KEY, v int);
             INSERT INTO ad_plain VALUES (5, 0), (7, 0);
             SELECT seqgen_adopt('ad_plain_ids', 'ad_plain', 'id');",
        );
        assert_eq!(one("INSERT INTO ad_plain (v) VALUES (1) RETURNING id"), 8);
        // snowflakes for an identity column (GENERATED ALWAYS: the identity is dropped)
        autonomous(
            "CREATE TABLE ad_sf (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v int);
             INSERT INTO ad_sf (v) VALUES (1);
             SELECT seqgen_adopt_snowflake('ad_sf', 'id');",
        );
        let sf = one("INSERT INTO ad_sf (v) VALUES (2) RETURNING id");
        assert!(sf > one("SELECT min(id) FROM ad_sf WHERE v = 1"));
        // a snowflake of now (an identity value would decode to the epoch)
        let recent = Spi::get_one::<bool>(&format!(
            "SELECT abs(extract(epoch FROM clock_timestamp() - ts)) < 60 FROM seqgen_snowflake_decode({sf})"
        ))
        .unwrap();
        assert_eq!(recent, Some(true), "not a snowflake of now: {sf}");
        let identity = Spi::get_one::<String>(
            "SELECT attidentity::text FROM pg_attribute WHERE attrelid = 'ad_sf'::regclass AND attname = 'id'",
        )
        .unwrap();
        assert_eq!(identity.as_deref(), Some(""));
        // what adoption cannot account for is refused
        Spi::run(
            "CREATE TABLE ad_def (id bigint DEFAULT 42);
             CREATE TABLE ad_parted (id bigint) PARTITION BY RANGE (id);
             CREATE TABLE ad_part1 PARTITION OF ad_parted FOR VALUES FROM (0) TO (100)",
        )
        .unwrap();
        refused("SELECT seqgen_adopt('x4', 'ad_def', 'id')", ERRCODE_FEATURE_NOT_SUPPORTED);
        refused("SELECT seqgen_adopt('x5', 'ad_part1', 'id')", ERRCODE_FEATURE_NOT_SUPPORTED);
        // a snapshot older than the table lock would miss rows: READ COMMITTED only
        let e = other_session("pgrx_tests")
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT seqgen_adopt('x6', 'ad_plain', 'id')")
            .unwrap_err();
        assert_eq!(e.code().map(|c| c.code()), Some("25001"), "{e:?}");
        // not the owner: refused even with EXECUTE granted
        Spi::run("CREATE ROLE seqgen_adopt_test NOLOGIN; GRANT EXECUTE ON FUNCTION seqgen_adopt, seqgen_create TO seqgen_adopt_test").unwrap();
        Spi::run("SET LOCAL ROLE seqgen_adopt_test").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_adopt('x2', 'ad_child', 'id')"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        Spi::run("RESET ROLE").unwrap();
        // the owner, granted seqgen_adopt (and seqgen_create: adopting creates a tag) and
        // nothing internal, adopts (issue 31, item 7: 0.x also needed seqgen_adopt_floor)
        Spi::run(
            "CREATE TABLE ad_owned (id bigserial PRIMARY KEY); INSERT INTO ad_owned DEFAULT VALUES;
             ALTER TABLE ad_owned OWNER TO seqgen_adopt_test; SET LOCAL ROLE seqgen_adopt_test",
        )
        .unwrap();
        assert_eq!(Spi::get_one::<i64>("SELECT seqgen_adopt('x7', 'ad_owned', 'id')"), Ok(Some(2)));
        // and nobody reaches the internal function by name
        assert_eq!(
            sqlstate("SELECT seqgen.seqgen_adopt_column('segment', 'x8', 'ad_owned', 'id', 10)"),
            Some(ERRCODE_INSUFFICIENT_PRIVILEGE)
        );
        Spi::run("RESET ROLE").unwrap();
        // a role without seqgen_adopt: refused by the internal function too, were it reached
        Spi::run("CREATE ROLE seqgen_adopt_none NOLOGIN; GRANT USAGE ON SCHEMA seqgen TO seqgen_adopt_none; SET LOCAL ROLE seqgen_adopt_none").unwrap();
        assert_eq!(
            sqlstate("SELECT seqgen.seqgen_adopt_column('segment', 'x9', 'ad_owned', 'id', 10)"),
            Some(ERRCODE_INSUFFICIENT_PRIVILEGE)
        );
        Spi::run("RESET ROLE").unwrap();
    }

    #[pg_test]
    fn uuidv7_layout_order_and_decode() {
        // version 7, variant 10, increasing in uuid order, decodes to now
        let ok = Spi::get_one::<bool>(
            "WITH u AS (SELECT n, seqgen_uuidv7() AS id FROM generate_series(1, 5000) n)
             SELECT bool_and(substr(id::text, 15, 1) = '7' AND substr(id::text, 20, 1) IN ('8', '9', 'a', 'b'))
                AND bool_and(id > prev) IS NOT FALSE
               FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM u) x",
        )
        .unwrap();
        assert_eq!(ok, Some(true), "not version 7 / variant 10 / increasing");
        let age = Spi::get_one::<f64>(
            "SELECT (extract(epoch FROM clock_timestamp() - ts) * 1000)::float8 FROM seqgen_uuidv7_decode(seqgen_uuidv7())",
        )
        .unwrap()
        .unwrap();
        assert!((-5.0..1000.0).contains(&age), "decoded time is {age} ms from now");
        // the reservation is persisted above the issued values
        let id = Spi::get_one::<i64>(
            "SELECT ((extract(epoch FROM ts) * 1000)::int8 << 21) | counter FROM seqgen_uuidv7_decode(seqgen_uuidv7())",
        )
        .unwrap()
        .unwrap();
        wait_for_value("SELECT reserved_id FROM seqgen.uuidv7", |r| r > id);
        let stored = Spi::get_one::<i64>("SELECT reserved_id FROM seqgen.uuidv7").unwrap();
        refused("UPDATE seqgen.uuidv7 SET reserved_id = 0", ERRCODE_CHECK_VIOLATION);
        refused("DELETE FROM seqgen.uuidv7", ERRCODE_FEATURE_NOT_SUPPORTED);
        refused("TRUNCATE seqgen.uuidv7", ERRCODE_FEATURE_NOT_SUPPORTED);
        let after = Spi::get_one::<i64>("SELECT reserved_id FROM seqgen.uuidv7").unwrap();
        assert!(after >= stored, "the reservation went back: {stored:?} -> {after:?}");
        let row =
            Spi::get_two::<i64, bool>("SELECT refusals, reserved_until > last_ts FROM seqgen_uuidv7_status()").unwrap();
        assert_eq!(row, (Some(0), Some(true)));
    }

    #[pg_test]
    fn time_bounds() {
        // the lowest UUID of a millisecond: bounds values of that millisecond from below
        let s = Spi::get_one::<String>("SELECT seqgen_uuidv7_at('2025-01-01 00:00:00+00')::text").unwrap().unwrap();
        assert_eq!(s, "01941f29-7c00-7000-8000-000000000000");
        let ok = Spi::get_one::<bool>(
            "SELECT seqgen_uuidv7_at(t0) <= u AND u < seqgen_uuidv7_at(clock_timestamp() + interval '1 ms')
               FROM (SELECT clock_timestamp() AS t0) a, LATERAL (SELECT seqgen_uuidv7() AS u) b",
        )
        .unwrap();
        assert_eq!(ok, Some(true));
        // the lowest snowflake of a millisecond, under this server's layout
        let ok = Spi::get_one::<bool>(
            "SELECT seqgen_snowflake_at(ts) <= id AND id < seqgen_snowflake_at(ts + interval '1 ms')
               FROM (SELECT id, (SELECT d.ts FROM seqgen_snowflake_decode(id) d) AS ts
                       FROM (SELECT seqgen_snowflake() AS id) a) b",
        )
        .unwrap();
        assert_eq!(ok, Some(true));
        // volatility labels: IMMUTABLE where the answer never changes, STABLE where a setting decides
        let labels = Spi::get_one::<String>(
            "SELECT string_agg(proname || '=' || provolatile::text, ',' ORDER BY proname) FROM pg_proc
              WHERE proname IN ('seqgen_uuidv7_at', 'seqgen_snowflake_at', 'seqgen_uuidv7_decode', 'seqgen_uuidv7')",
        )
        .unwrap()
        .unwrap();
        assert_eq!(labels, "seqgen_snowflake_at=s,seqgen_uuidv7=v,seqgen_uuidv7_at=i,seqgen_uuidv7_decode=i");
        // bad input: a clear error, nothing drawn
        for (sql, code) in [
            ("SELECT seqgen_uuidv7_at('infinity')", ERRCODE_DATETIME_FIELD_OVERFLOW),
            ("SELECT seqgen_uuidv7_at('1969-12-31 23:59:59+00')", ERRCODE_DATETIME_FIELD_OVERFLOW),
            ("SELECT seqgen_uuidv7_at('11000-01-01 00:00:00+00')", ERRCODE_DATETIME_FIELD_OVERFLOW),
            ("SELECT seqgen_snowflake_at('-infinity')", ERRCODE_DATETIME_FIELD_OVERFLOW),
            ("SELECT seqgen_snowflake_at('2000-01-01 00:00:00+00')", ERRCODE_DATETIME_FIELD_OVERFLOW),
            ("SELECT * FROM seqgen_uuidv7_decode(gen_random_uuid())", ERRCODE_INVALID_PARAMETER_VALUE),
            (
                "SELECT * FROM seqgen_uuidv7_decode('01941f29-7c00-7000-0000-000000000000')",
                ERRCODE_INVALID_PARAMETER_VALUE,
            ),
        ] {
            refused(sql, code);
        }
        assert_eq!(Spi::get_one::<bool>("SELECT seqgen_uuidv7_at(NULL) IS NULL").unwrap(), Some(true));
    }

    #[pg_test]
    fn uuidv7_needs_a_grant() {
        Spi::run("CREATE ROLE seqgen_uuid_test NOLOGIN").unwrap();
        Spi::run("SET LOCAL ROLE seqgen_uuid_test").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_uuidv7()"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        assert_eq!(sqlstate("SELECT * FROM seqgen.uuidv7"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        // the pure helpers stay open
        assert_eq!(sqlstate("SELECT seqgen_uuidv7_at(now()), seqgen_snowflake_at(now())"), None);
        // not only the schema: the table itself is closed
        Spi::run("RESET ROLE").unwrap();
        let closed = Spi::get_one::<bool>(
            "SELECT NOT has_table_privilege('seqgen_uuid_test', 'seqgen.uuidv7', 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE')",
        )
        .unwrap();
        assert_eq!(closed, Some(true));
    }

    #[pg_test]
    fn snowflake_needs_a_grant() {
        Spi::run("CREATE ROLE seqgen_sf_test NOLOGIN").unwrap();
        Spi::run("SET LOCAL ROLE seqgen_sf_test").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_snowflake()"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        assert_eq!(sqlstate("SELECT * FROM seqgen.snowflake"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        Spi::run("RESET ROLE").unwrap();
        Spi::run("GRANT EXECUTE ON FUNCTION seqgen_snowflake() TO seqgen_sf_test").unwrap();
        Spi::run("SET LOCAL ROLE seqgen_sf_test").unwrap();
        assert!(one("SELECT seqgen_snowflake()") > 0);
    }

    fn text(sql: &str) -> String {
        Spi::get_one::<String>(sql).unwrap().expect("NULL")
    }

    #[pg_test]
    fn order_numbers_count_up_with_a_valid_check_digit() {
        autonomous("SELECT seqgen_create('t_order', 100)");
        autonomous("SELECT seqgen_set_template('t_order', 'SN{yyyy}{MM}{dd}{seq:8}{check}', 'Asia/Shanghai')");
        let today = text("SELECT to_char(now() AT TIME ZONE 'Asia/Shanghai', 'YYYYMMDD')");
        let got: Vec<String> = Spi::connect(|c| {
            c.select("SELECT seqgen_order_no('t_order') FROM generate_series(1, 250)", None, &[])
                .unwrap()
                .map(|r| r.get::<String>(1).unwrap().unwrap())
                .collect()
        });
        for (i, n) in got.iter().enumerate() {
            assert_eq!(n.len(), 19, "{n}");
            assert!(n.starts_with(&format!("SN{today}")) || i > 0, "{n} is not dated {today}");
            assert_eq!(&n[10..18], format!("{:08}", i + 1), "counter of {n}");
            assert_eq!(
                Spi::get_one_with_args::<bool>("SELECT seqgen_check_digit_valid($1)", &[n.as_str().into()]).unwrap(),
                Some(true)
            );
        }
        // the counter block is committed in the catalog
        assert!(one("SELECT period_max FROM seqgen.order_counter WHERE biz_tag = 't_order' AND unit = 'day'") >= 250);
    }

    #[pg_test]
    fn template_without_date_fields_never_restarts_and_renders_node_and_tag() {
        autonomous("SELECT seqgen_create('t_plain')");
        autonomous("SELECT seqgen_set_template('t_plain', '{tag}-{node:3}-{seq:6}')");
        assert_eq!(text("SELECT seqgen_order_no('t_plain')"), "t_plain-000-000001");
        assert_eq!(text("SELECT seqgen_order_no('t_plain')"), "t_plain-000-000002");
        // a new template takes effect once committed; the counter of its unit continues above
        // everything reserved (the rest of the old template's cached block is skipped)
        autonomous("SELECT seqgen_set_template('t_plain', 'QJ{seq:6}')");
        let next = text("SELECT seqgen_order_no('t_plain')");
        assert!(next.starts_with("QJ") && next[2..].parse::<i64>().unwrap() > 2, "{next}");
        let reserved = one("SELECT period_max FROM seqgen.order_counter WHERE biz_tag = 't_plain' AND unit = 'none'");
        assert!(next[2..].parse::<i64>().unwrap() <= reserved);
    }

    #[pg_test]
    fn templates_that_repeat_are_refused_unless_allowed() {
        autonomous("SELECT seqgen_create('t_rep')");
        for tpl in ["{dd}-{seq:4}", "{HH}{seq:4}", "{MM}{dd}{seq:4}"] {
            assert_eq!(
                sqlstate(&format!("SELECT seqgen_set_template('t_rep', '{tpl}')")),
                Some(ERRCODE_INVALID_PARAMETER_VALUE),
                "{tpl}"
            );
        }
        assert_eq!(one("SELECT count(*) FROM seqgen.template WHERE biz_tag = 't_rep'"), 0, "a refusal changed nothing");
        assert_eq!(sqlstate("SELECT seqgen_set_template('t_rep', '{dd}-{seq:4}', 'UTC', true)"), None);
        assert_eq!(text("SELECT seqgen_template_unit('{dd}-{seq:4}')"), "day");
        assert_eq!(text("SELECT seqgen_template_unit('QJ{seq:4}')"), "none");
        assert_eq!(text("SELECT seqgen_template_unit('{yyyy}{MM}{seq:4}')"), "month");
    }

    #[pg_test]
    fn render_previews_every_field() {
        let cases = [
            ("SN{yyyy}{MM}{dd}{seq:8}{check}", 427, "2026-11-22 17:30:00+00", "Asia/Shanghai", "SN20261123000004277"),
            ("{yyyy}{MM}{dd}{seq:5}", 1, "2017-03-04 08:00:00+00", "UTC", "2017030400001"),
            ("010-6541-{seq:5}", 1, "2026-01-01 00:00:00+00", "UTC", "010-6541-00001"),
            ("{yy}{MM}{dd}{HH}{mm}{ss}{seq:4}", 1, "2025-04-13 12:00:00+00", "UTC", "2504131200000001"),
            ("{{{seq:3}}}", 42, "2026-01-01 00:00:00+00", "UTC", "{042}"),
            ("N{node}-{seq:2}", 7, "2026-01-01 00:00:00+00", "UTC", "N0-07"),
        ];
        for (tpl, seq, at, tz, want) in cases {
            let got = Spi::get_one_with_args::<String>(
                "SELECT seqgen_render($1, $2, $3::timestamptz, $4)",
                &[tpl.into(), (seq as i64).into(), at.into(), tz.into()],
            )
            .unwrap()
            .unwrap();
            assert_eq!(got, want, "{tpl}");
        }
        assert_eq!(text("SELECT seqgen_render('{tag}:{seq:3}', 5, now(), 'UTC', 'waybill')"), "waybill:005");
        for sql in [
            "SELECT seqgen_render('{tag}:{seq:3}', 5, now())",
            "SELECT seqgen_render('{seq:3}', 0, now())",
            "SELECT seqgen_render('{seq:3}', 1000, now())",
            "SELECT seqgen_render('{seq:3}', 1, 'infinity')",
        ] {
            assert_eq!(sqlstate(sql), Some(ERRCODE_INVALID_PARAMETER_VALUE), "{sql}");
        }
    }

    #[pg_test]
    fn check_digit_function() {
        assert_eq!(Spi::get_one::<bool>("SELECT seqgen_check_digit_valid('79927398713')").unwrap(), Some(true));
        assert_eq!(Spi::get_one::<bool>("SELECT seqgen_check_digit_valid('79927398710')").unwrap(), Some(false));
        assert_eq!(Spi::get_one::<bool>("SELECT seqgen_check_digit_valid('SN-7992-739871-3')").unwrap(), Some(true));
        assert_eq!(Spi::get_one::<bool>("SELECT seqgen_check_digit_valid('x')").unwrap(), Some(false));
        // usable in a CHECK constraint
        Spi::run("CREATE TABLE shipments (no text CHECK (seqgen_check_digit_valid(no)))").unwrap();
        Spi::run("INSERT INTO shipments VALUES ('79927398713')").unwrap();
        assert_eq!(sqlstate("INSERT INTO shipments VALUES ('79927398714')"), Some(ERRCODE_CHECK_VIOLATION));
    }

    #[pg_test]
    fn order_number_bad_input() {
        autonomous("SELECT seqgen_create('t_tpl_bad')");
        let templates =
            Spi::get_one::<String>("SELECT coalesce(string_agg(biz_tag || template, ','), '') FROM seqgen.template")
                .unwrap();
        for (sql, code) in [
            ("SELECT seqgen_order_no('t_never_made')", ERRCODE_UNDEFINED_OBJECT),
            ("SELECT seqgen_set_template('t_never_made', '{seq:3}')", ERRCODE_UNDEFINED_OBJECT),
            ("SELECT seqgen_order_no('t_tpl_bad')", ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
            ("SELECT seqgen_set_template('t_tpl_bad', 'ABC')", ERRCODE_INVALID_PARAMETER_VALUE),
            ("SELECT seqgen_set_template('t_tpl_bad', '{seq:3}{seq:4}')", ERRCODE_INVALID_PARAMETER_VALUE),
            ("SELECT seqgen_set_template('t_tpl_bad', '{foo}{seq:3}')", ERRCODE_INVALID_PARAMETER_VALUE),
            ("SELECT seqgen_set_template('t_tpl_bad', 'A{seq:3')", ERRCODE_INVALID_PARAMETER_VALUE),
            ("SELECT seqgen_set_template('t_tpl_bad', '{seq:0}')", ERRCODE_INVALID_PARAMETER_VALUE),
            ("SELECT seqgen_set_template('t_tpl_bad', '{seq:19}')", ERRCODE_INVALID_PARAMETER_VALUE),
            ("SELECT seqgen_set_template('t_tpl_bad', '{seq:3}', 'Mars/Olympus')", ERRCODE_INVALID_PARAMETER_VALUE),
            ("SELECT seqgen_set_template('t_tpl_bad', '{node:1}{seq:3}')", ERRCODE_INVALID_PARAMETER_VALUE),
            ("SELECT seqgen_set_template('t_tpl_bad', '{seq:3}{check}9')", ERRCODE_INVALID_PARAMETER_VALUE),
        ] {
            // node id 0 fits {node:1}: that one is valid
            if sql.contains("{node:1}") {
                assert_eq!(sqlstate(sql), None);
                continue;
            }
            let before = catalog(sql);
            assert_eq!(sqlstate(sql), Some(code), "{sql}");
            assert_eq!(catalog(sql), before);
        }
        let after = Spi::get_one::<String>(
            "SELECT coalesce(string_agg(biz_tag || template, ','), '') FROM seqgen.template WHERE biz_tag <> 't_tpl_bad'",
        )
        .unwrap();
        assert_eq!(templates, after);
    }

    #[pg_test]
    fn order_number_overflow_is_its_own_error() {
        autonomous("SELECT seqgen_create('t_overflow', 4)");
        autonomous("SELECT seqgen_set_template('t_overflow', 'X{seq:1}')");
        let got: Vec<String> = (0..9).map(|_| text("SELECT seqgen_order_no('t_overflow')")).collect();
        assert_eq!(got, (1..=9).map(|i| format!("X{i}")).collect::<Vec<_>>());
        assert_eq!(sqlstate("SELECT seqgen_order_no('t_overflow')"), Some(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED));
        assert_eq!(
            one("SELECT period_max FROM seqgen.order_counter WHERE biz_tag = 't_overflow' AND unit = 'none'"),
            9
        );
    }

    #[pg_test]
    fn order_counter_cannot_go_back() {
        autonomous("SELECT seqgen_create('t_tpl_guard')");
        autonomous("SELECT seqgen_set_template('t_tpl_guard', '{yyyy}{seq:4}')");
        text("SELECT seqgen_order_no('t_tpl_guard')");
        refused(
            "UPDATE seqgen.order_counter SET period_max = 0 WHERE biz_tag = 't_tpl_guard'",
            ERRCODE_CHECK_VIOLATION,
        );
        refused(
            "UPDATE seqgen.order_counter SET period_key = period_key - 1 WHERE biz_tag = 't_tpl_guard'",
            ERRCODE_CHECK_VIOLATION,
        );
        refused(
            "UPDATE seqgen.order_counter SET unit = 'day' WHERE biz_tag = 't_tpl_guard'",
            ERRCODE_FEATURE_NOT_SUPPORTED,
        );
        refused("DELETE FROM seqgen.order_counter WHERE biz_tag = 't_tpl_guard'", ERRCODE_FEATURE_NOT_SUPPORTED);
        refused("DELETE FROM seqgen.template WHERE biz_tag = 't_tpl_guard'", ERRCODE_FEATURE_NOT_SUPPORTED);
        refused("TRUNCATE seqgen.template", ERRCODE_FEATURE_NOT_SUPPORTED);
        refused("TRUNCATE seqgen.order_counter", ERRCODE_FEATURE_NOT_SUPPORTED);
        // under the replica role too (the guards are ENABLE ALWAYS)
        Spi::run("SET LOCAL session_replication_role = replica").unwrap();
        refused("DELETE FROM seqgen.template WHERE biz_tag = 't_tpl_guard'", ERRCODE_FEATURE_NOT_SUPPORTED);
        refused("UPDATE seqgen.alloc SET max_id = -1 WHERE biz_tag = 't_tpl_guard'", ERRCODE_CHECK_VIOLATION);
        Spi::run("SET LOCAL session_replication_role = origin").unwrap();
        // dropping the tag takes its template and counters with it
        autonomous("SELECT seqgen_drop('t_tpl_guard')");
        assert_eq!(one("SELECT count(*) FROM seqgen.order_counter WHERE biz_tag = 't_tpl_guard'"), 0);
    }

    #[pg_test]
    fn worker_health_is_visible() {
        let running = Spi::get_one::<bool>("SELECT running FROM seqgen_worker_status()").unwrap();
        assert_eq!(running, Some(true));
        let pid = Spi::get_one::<i32>("SELECT pid FROM seqgen_worker_status()").unwrap().unwrap_or(0);
        let backend =
            Spi::get_one::<String>(&format!("SELECT backend_type FROM pg_stat_activity WHERE pid = {pid}")).unwrap();
        assert_eq!(backend.as_deref(), Some("pg_seqgen allocator"));
        assert!(one("SELECT mailboxes_in_use FROM seqgen_worker_status()") >= 0);
    }

    #[pg_test]
    fn snowflake_advance_raises_at_once_and_never_lowers() {
        let before = one("SELECT seqgen_snowflake()");
        // a few milliseconds ahead (borrowed time, within seqgen.snowflake_max_borrow; small,
        // as the other tests share the generator)
        let target = one("SELECT seqgen_snowflake() + (2::int8 << 22)");
        let floor = one(&format!("SELECT seqgen_snowflake_advance({target})"));
        assert!(floor >= target, "{floor} < {target}");
        let next = one("SELECT seqgen_snowflake()");
        assert!(next > target, "{next} <= {target} after the advance");
        // lower values change nothing
        let again = one(&format!("SELECT seqgen_snowflake_advance({before})"));
        assert!(again >= next);
        assert_eq!(sqlstate("SELECT seqgen_snowflake_advance(-1)"), Some(ERRCODE_INVALID_PARAMETER_VALUE));
    }

    /// The failover runbook's call for tags (issue 31, item 5): a tag's counter and its keys'
    /// rise by the margin when the call commits, also in a session that had them cached; its
    /// order-number counters do not (the runbook gives such a tag a new template instead).
    #[pg_test]
    fn advance_raises_a_tag_its_keys_and_its_order_counters() {
        let mut s = other_session("pgrx_tests");
        let mut int = |sql: &str| -> i64 { s.query_one(sql, &[]).unwrap().get(0) };
        int("SELECT 0::int8 FROM seqgen_create('t_adv', 10)");
        int("SELECT 0::int8 FROM seqgen_set_template('t_adv', 'A{seq:12}')");
        int("SELECT 0::int8 FROM seqgen_create('t_adv_k', 10)");
        int("SELECT 0::int8 FROM seqgen_set_template('t_adv_k', '{key}-{seq:12}')");
        let draws = |int: &mut dyn FnMut(&str) -> i64| -> [i64; 4] {
            [
                int("SELECT seqgen_next('t_adv')"),
                int("SELECT seqgen_next('t_adv', 'k')"),
                int("SELECT substr(seqgen_order_no('t_adv'), 2)::int8"),
                int("SELECT split_part(seqgen_order_no('t_adv_k', 'k'), '-', 2)::int8"),
            ]
        };
        let before = draws(&mut int);
        let margin = 1_000_000;
        // the tag and its one key; the other tag has no segment key (its key numbers orders)
        assert_eq!(int(&format!("SELECT seqgen_advance('t_adv', {margin})")), 2);
        assert_eq!(int(&format!("SELECT seqgen_advance('t_adv_k', {margin})")), 1);
        let after = draws(&mut int);
        for (i, what) in ["the tag", "a key"].iter().enumerate() {
            assert!(after[i] > before[i] + margin, "{what}: {} after the advance, {} before", after[i], before[i]);
        }
        // order numbers go on from their counters (a new template is the runbook's way)
        assert!(after[2] > before[2] && after[2] < before[2] + margin, "order numbers: {:?} -> {:?}", before, after);
        assert!(
            after[3] > before[3] && after[3] < before[3] + margin,
            "a key's order numbers: {:?} -> {:?}",
            before,
            after
        );
        // a counter at the end of bigint stops there: refused next, never wrapped
        int("SELECT 0::int8 FROM seqgen_create('t_adv_end', 10, 9223372036854775000)");
        int("SELECT seqgen_next('t_adv_end')");
        int("SELECT seqgen_advance('t_adv_end', 9223372036854775807)");
        let end = s.query_one("SELECT seqgen_next('t_adv_end')", &[]).unwrap_err();
        assert_eq!(end.code().map(|c| c.code()), Some("2200H"), "{end:?}");
        refused("SELECT seqgen_advance('t_adv', 0)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_advance('t_adv', NULL)", ERRCODE_NULL_VALUE_NOT_ALLOWED);
        refused("SELECT seqgen_advance('t_adv_none', 10)", ERRCODE_UNDEFINED_OBJECT);
        // a gapless tag has no floor to raise: left as it is
        autonomous("SELECT seqgen_create_gapless('t_adv_gl')");
        assert_eq!(one("SELECT seqgen_advance('t_adv_gl', 10)"), 0);
        assert_eq!(one("SELECT seqgen_gapless_next('t_adv_gl')"), 1);
    }

    /// The failover runbook's calls for the other two clock-ordered generators (issue 31,
    /// item 5): each takes an ID of its own type, raises at once, never lowers.
    #[pg_test]
    fn uuidv7_and_snowflake53_advance_raise_at_once_and_never_lower() {
        let before = text("SELECT seqgen_uuidv7()::text");
        // a few milliseconds ahead (within seqgen.snowflake_max_borrow; the other tests share
        // the generators)
        let target = text("SELECT seqgen_uuidv7_at(clock_timestamp() + interval '3 ms')::text");
        let floor = text(&format!("SELECT seqgen_uuidv7_advance('{target}')::text"));
        assert!(floor >= target, "{floor} < {target}");
        let next = text("SELECT seqgen_uuidv7()::text");
        assert!(next > target, "{next} <= {target} after the advance");
        let again = text(&format!("SELECT seqgen_uuidv7_advance('{before}')::text"));
        // (the position has random bits zero: compare time and counter)
        let not_lower = one(&format!(
            "SELECT ((SELECT (ts, counter) FROM seqgen_uuidv7_decode('{again}')) \
                   >= (SELECT (ts, counter) FROM seqgen_uuidv7_decode('{next}')))::int"
        ));
        assert_eq!(not_lower, 1, "{again} went below {next}");
        // a version 4 UUID is no floor; NULLs are 22004
        assert_eq!(
            sqlstate("SELECT seqgen_uuidv7_advance('00000000-0000-4000-8000-000000000000')"),
            Some(ERRCODE_INVALID_PARAMETER_VALUE)
        );
        assert_eq!(sqlstate("SELECT seqgen_uuidv7_advance(NULL)"), Some(ERRCODE_NULL_VALUE_NOT_ALLOWED));
        // an hour ahead is a likely mistake without force
        assert_eq!(
            sqlstate("SELECT seqgen_uuidv7_advance(seqgen_uuidv7_at(now() + interval '1 hour'))"),
            Some(ERRCODE_INVALID_PARAMETER_VALUE)
        );
        // the rewind takes a uuid now, and refuses while the generator is near the clock
        assert_eq!(
            sqlstate("SELECT seqgen_uuidv7_rewind(seqgen_uuidv7_at(now()))"),
            Some(ERRCODE_INVALID_PARAMETER_VALUE)
        );

        let before = one("SELECT seqgen_snowflake53()");
        let target = one("SELECT seqgen_snowflake53_at(clock_timestamp() + interval '3 ms')");
        let floor = one(&format!("SELECT seqgen_snowflake53_advance({target})"));
        assert!(floor >= target, "{floor} < {target}");
        let next = one("SELECT seqgen_snowflake53()");
        assert!(next > target, "{next} <= {target} after the advance");
        let again = one(&format!("SELECT seqgen_snowflake53_advance({before})"));
        assert!(again >= next, "{again} < {next}");
        assert_eq!(sqlstate("SELECT seqgen_snowflake53_advance(-1)"), Some(ERRCODE_INVALID_PARAMETER_VALUE));
    }

    #[pg_test]
    fn order_numbers_need_grants() {
        autonomous("SELECT seqgen_create('t_tpl_priv')");
        autonomous("SELECT seqgen_set_template('t_tpl_priv', 'P{seq:4}')");
        autonomous(
            "DO $$ BEGIN CREATE ROLE seqgen_ord_test NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
             GRANT EXECUTE ON FUNCTION seqgen_order_no TO seqgen_ord_test; \
             SELECT seqgen_grant('t_tpl_priv', 'seqgen_ord_test')",
        );
        Spi::run("SET LOCAL ROLE seqgen_ord_test").unwrap();
        assert!(text("SELECT seqgen_order_no('t_tpl_priv')").starts_with('P'));
        // the pure helpers are open to everyone
        assert_eq!(Spi::get_one::<bool>("SELECT seqgen_check_digit_valid('79927398713')").unwrap(), Some(true));
        for sql in [
            "SELECT seqgen_set_template('t_tpl_priv', 'Q{seq:4}')",
            "UPDATE seqgen.template SET template = 'Q{seq:4}'",
            "SELECT * FROM seqgen.template",
        ] {
            assert_eq!(sqlstate(sql), Some(ERRCODE_INSUFFICIENT_PRIVILEGE), "{sql}");
        }
    }

    #[pg_test]
    fn opaque_ids_are_unique_unordered_and_revealable() {
        autonomous("SELECT seqgen_create('t_opaque', 100)");
        let plain = ids("SELECT seqgen_next('t_opaque') FROM generate_series(1, 5)");
        assert_eq!(plain, vec![1, 2, 3, 4, 5]);
        autonomous("SELECT seqgen_make_opaque('t_opaque')");
        autonomous("SELECT seqgen_make_opaque('t_opaque')"); // idempotent
        let from = one("SELECT opaque_from FROM seqgen.alloc WHERE biz_tag = 't_opaque'");
        assert_eq!(from, 100, "opaque above everything reserved in the clear");
        let mut got = ids("SELECT seqgen_next('t_opaque') FROM generate_series(1, 2000)");
        got.extend(ids("SELECT seqgen_next_batch('t_opaque', 500)"));
        got.extend(ids("SELECT seqgen_next_batch('t_opaque', 5000)"));
        assert!(got.iter().all(|&id| id > from), "an opaque ID at or below opaque_from");
        let decreasing = got.windows(2).filter(|w| w[1] < w[0]).count();
        assert!((3_000..=4_500).contains(&decreasing), "{decreasing} of {} steps go down", got.len() - 1);
        let mut sorted = got.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), got.len(), "an opaque ID was issued twice");
        // support staff map them back to the counter values, which are increasing
        let counters: Vec<i64> = got
            .iter()
            .map(|&id| {
                Spi::get_one_with_args::<i64>("SELECT seqgen_reveal('t_opaque', $1)", &[id.into()]).unwrap().unwrap()
            })
            .collect();
        assert!(counters.windows(2).all(|w| w[0] < w[1]), "revealed counters are not increasing");
        assert!(counters[0] > from);
        // an ID issued before the tag became opaque is its own counter value
        assert_eq!(one("SELECT seqgen_reveal('t_opaque', 3)"), 3);
        // no ID is negative
        assert_eq!(sqlstate("SELECT seqgen_reveal('t_opaque', -3)"), Some(ERRCODE_INVALID_PARAMETER_VALUE));
        assert_eq!(
            Spi::get_one::<bool>("SELECT opaque FROM seqgen_status() WHERE biz_tag = 't_opaque'").unwrap(),
            Some(true)
        );
    }

    /// The first column of every row of `sql`.
    fn texts(sql: &str) -> Vec<String> {
        Spi::connect(|c| c.select(sql, None, &[]).unwrap().map(|r| r.get::<String>(1).unwrap().unwrap()).collect())
    }

    /// Opaque numbers: all different, all `len` long, and about half of the steps going down.
    fn assert_unique_unordered(got: &[String], len: usize, down: std::ops::RangeInclusive<usize>) {
        let uniq: std::collections::HashSet<&String> = got.iter().collect();
        assert_eq!(uniq.len(), got.len());
        assert!(got.iter().all(|n| n.len() == len), "{:?}", &got[..3]);
        let decreasing = got.windows(2).filter(|w| w[1] < w[0]).count();
        assert!(down.contains(&decreasing), "{decreasing} of {} steps go down", got.len() - 1);
    }

    #[pg_test]
    fn currval_and_lastval_are_this_sessions_latest_draws() {
        autonomous(
            "SELECT seqgen_create('t_cv', 10); SELECT seqgen_create('t_cv2', 10); SELECT seqgen_create('t_cv_k', 10); \
             DO $$ BEGIN CREATE ROLE seqgen_cv_role NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
             GRANT EXECUTE ON FUNCTION seqgen_currval(text), seqgen_lastval(), seqgen_next TO seqgen_cv_role",
        );
        let mut s = other_session("pgrx_tests");
        let mut other = other_session("pgrx_tests");
        // a value, or the SQLSTATE of the error
        let one = |c: &mut postgres::Client, sql: &str| -> std::result::Result<i64, String> {
            c.query_one(sql, &[])
                .map(|r| r.get::<_, i64>(0))
                .map_err(|e| e.code().map_or("?".into(), |c| c.code().into()))
        };
        let no = || Err::<i64, String>("55000".into());
        let (cur, cur2, last) =
            ("SELECT seqgen_currval('t_cv')", "SELECT seqgen_currval('t_cv2')", "SELECT seqgen_lastval()");
        // a new session has drawn nothing; an unknown tag is 42704, a NULL is NULL (STRICT)
        assert_eq!((one(&mut s, last), one(&mut s, cur)), (no(), no()));
        assert_eq!(one(&mut s, "SELECT seqgen_currval('t_cv_nope')"), Err("42704".into()));
        assert!(s.query_one("SELECT seqgen_currval(NULL)", &[]).unwrap().get::<_, Option<i64>>(0).is_none());
        let a = one(&mut s, "SELECT seqgen_next('t_cv')").unwrap();
        assert_eq!((one(&mut s, cur), one(&mut s, last)), (Ok(a), Ok(a)));
        let b = one(&mut s, "SELECT seqgen_next('t_cv2')").unwrap();
        assert_eq!((one(&mut s, cur), one(&mut s, cur2), one(&mut s, last)), (Ok(a), Ok(b), Ok(b)));
        // many draws, and two tags in turn (blocks of values per session)
        let c = one(&mut s, "SELECT max(seqgen_next('t_cv')) FROM generate_series(1, 25)").unwrap();
        assert_eq!((one(&mut s, cur), one(&mut s, cur2), one(&mut s, last)), (Ok(c), Ok(b), Ok(c)));
        let turns =
            "SELECT seqgen_next(CASE WHEN g % 2 = 0 THEN 't_cv' ELSE 't_cv2' END) FROM generate_series(1, 40) g";
        let drawn: Vec<i64> = s.query(turns, &[]).unwrap().iter().map(|r| r.get(0)).collect();
        // (g = 40, the last row, draws from t_cv; g = 39 from t_cv2)
        assert_eq!(
            (one(&mut s, cur), one(&mut s, cur2), one(&mut s, last)),
            (Ok(drawn[39]), Ok(drawn[38]), Ok(drawn[39]))
        );
        let c = drawn[39];
        // another session's draws change nothing here; a rollback does not either
        assert!(one(&mut other, "SELECT seqgen_next('t_cv')").unwrap() > c);
        assert_eq!(one(&mut s, cur), Ok(c));
        s.batch_execute("BEGIN").unwrap();
        let d = one(&mut s, "SELECT seqgen_next('t_cv')").unwrap();
        s.batch_execute("ROLLBACK").unwrap();
        assert_eq!((one(&mut s, cur), one(&mut s, last)), (Ok(d), Ok(d)));
        // a batch is not a draw of seqgen_next
        s.query("SELECT seqgen_next_batch('t_cv', 30)", &[]).unwrap();
        assert_eq!(one(&mut s, cur), Ok(d));
        // a key's draw is the last value, and not its tag's current one (nor another tag's: the
        // batch drew from t_cv's entry before this first draw of the key, which is not cached)
        let k = one(&mut s, "SELECT seqgen_next('t_cv_k', 'x')").unwrap();
        assert_eq!((one(&mut s, last), one(&mut s, "SELECT seqgen_currval('t_cv_k')")), (Ok(k), no()));
        assert_eq!(one(&mut s, cur), Ok(d));
        // only while the role may draw from the tag
        s.batch_execute("SET ROLE seqgen_cv_role").unwrap();
        assert_eq!((one(&mut s, cur), one(&mut s, last)), (Err("42501".into()), Err("42501".into())));
        s.batch_execute("RESET ROLE").unwrap();
        // a tag dropped and created again without the role's grant: its values are not the
        // role's to read any more (the drop retired the slot the cached answer was for)
        autonomous("SELECT seqgen_create('t_cv3', 10); SELECT seqgen_grant('t_cv3', 'seqgen_cv_role')");
        s.batch_execute("SET ROLE seqgen_cv_role").unwrap();
        let g = one(&mut s, "SELECT seqgen_next('t_cv3')").unwrap();
        assert_eq!(one(&mut s, "SELECT seqgen_currval('t_cv3')"), Ok(g));
        autonomous("SELECT seqgen_drop('t_cv3'); SELECT seqgen_create('t_cv3', 10)");
        let refused = Err::<i64, String>("42501".into());
        assert_eq!((one(&mut s, "SELECT seqgen_currval('t_cv3')"), one(&mut s, last)), (refused.clone(), refused));
        s.batch_execute("RESET ROLE").unwrap();
        // the slot moved on (a restart retires it), and a draw refused to another role let go
        // of the session's entry: the value is kept by name
        autonomous("SELECT seqgen_restart('t_cv', 1000000)");
        s.batch_execute("SET ROLE seqgen_cv_role").unwrap();
        assert_eq!(one(&mut s, "SELECT seqgen_next('t_cv')"), Err("42501".into()));
        s.batch_execute("RESET ROLE").unwrap();
        assert_eq!(one(&mut s, cur), Ok(d));
        let e = one(&mut s, "SELECT seqgen_next('t_cv')").unwrap();
        assert_eq!((e, one(&mut s, cur)), (1000000, Ok(1000000)));
        // DISCARD ALL and DISCARD SEQUENCES forget them, as they forget currval
        s.batch_execute("DISCARD ALL").unwrap();
        assert_eq!((one(&mut s, cur), one(&mut s, cur2), one(&mut s, last)), (no(), no(), no()));
        let f = one(&mut s, "SELECT seqgen_next('t_cv')").unwrap();
        s.batch_execute("DISCARD PLANS").unwrap();
        assert_eq!(one(&mut s, cur), Ok(f));
        s.batch_execute("DISCARD SEQUENCES").unwrap();
        assert_eq!((one(&mut s, cur), one(&mut s, last)), (no(), no()));
        // the docs' example: the INSERT's DEFAULTs draw, currval gives the last of them
        s.batch_execute(
            "CREATE TEMP TABLE cv_orders (id bigint PRIMARY KEY DEFAULT seqgen_next('t_cv'), customer text)",
        )
        .unwrap();
        let ids: Vec<i64> = s
            .query("INSERT INTO cv_orders (customer) VALUES ('alice'), ('bob') RETURNING id", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(one(&mut s, cur), Ok(ids[1]));
    }

    #[pg_test]
    fn opaque_order_numbers_stay_n_digits_and_unordered() {
        autonomous("SELECT seqgen_create('t_opaque_no', 50)");
        autonomous("SELECT seqgen_set_template('t_opaque_no', 'OP{yyyy}{MM}{dd}{seq:4:opaque}{check}')");
        let got = texts("SELECT seqgen_order_no('t_opaque_no') FROM generate_series(1, 300)");
        assert_unique_unordered(&got, 15, 100..=200);
        for (i, n) in got.iter().enumerate() {
            assert_eq!(
                Spi::get_one_with_args::<bool>("SELECT seqgen_check_digit_valid($1)", &[n.as_str().into()]).unwrap(),
                Some(true)
            );
            let c =
                Spi::get_one_with_args::<i64>("SELECT seqgen_reveal_order_no('t_opaque_no', $1)", &[n.as_str().into()])
                    .unwrap()
                    .unwrap();
            assert_eq!(c, i as i64 + 1, "{n}");
        }
        assert_eq!(
            sqlstate("SELECT seqgen_reveal_order_no('t_opaque_no', 'OP2026')"),
            Some(ERRCODE_INVALID_PARAMETER_VALUE)
        );
    }

    #[pg_test]
    fn base32_order_numbers_sort_read_back_and_refuse_a_check_digit() {
        // the docs' example
        autonomous("SELECT seqgen_create('ticket_no', 50)");
        autonomous("SELECT seqgen_set_template('ticket_no', 'T{yyyy}{MM}{dd}-{seq:4:b32}', 'Asia/Shanghai')");
        assert_eq!(
            text("SELECT seqgen_render('T{yyyy}{MM}{dd}-{seq:4:b32}', 10, '2026-11-22 17:30:00+00', 'Asia/Shanghai')"),
            "T20261123-000A"
        );
        let got = texts("SELECT seqgen_order_no('ticket_no') FROM generate_series(1, 300)");
        // one session draws in order: each text after the one before, byte by byte
        assert!(got.windows(2).all(|w| w[0] < w[1]), "{:?}", &got[..3]);
        let today = text("SELECT to_char(now() AT TIME ZONE 'Asia/Shanghai', 'YYYYMMDD')");
        if got[0].starts_with(&format!("T{today}-")) && got[299].starts_with(&format!("T{today}-")) {
            assert_eq!(got[0], format!("T{today}-0001"));
            assert_eq!(got[9], format!("T{today}-000A"));
            assert_eq!(got[31], format!("T{today}-0010"));
        }
        for n in &got {
            let matches = Spi::get_one_with_args::<bool>(
                "SELECT $1 ~ '^T[0-9]{8}-[0-9A-HJKMNP-TV-Z]{4}$' COLLATE \"C\"",
                &[n.as_str().into()],
            );
            assert_eq!(matches.unwrap(), Some(true), "{n}");
        }
        // the seq of a preview is checked against the base32 capacity
        assert_eq!(text("SELECT seqgen_render('{seq:4:b32}', 1048575, now())"), "ZZZZ");
        for bad in
            ["SELECT seqgen_render('{seq:4:b32}', 1048576, now())", "SELECT seqgen_render('{seq:4:b32}', 0, now())"]
        {
            assert_eq!(sqlstate(bad), Some(ERRCODE_INVALID_PARAMETER_VALUE), "{bad}");
        }
        // a Luhn digit cannot guard base32; too wide a counter; an unknown option
        for bad in ["T{seq:4:b32}{check}", "T{seq:13:b32}", "T{seq:4:hex}"] {
            let sql = format!("SELECT seqgen_set_template('ticket_no', '{bad}')");
            assert_eq!(sqlstate(&sql), Some(ERRCODE_INVALID_PARAMETER_VALUE), "{bad}");
        }
        // the opaque kind: a permutation of the period's 32,767 values, revealed with the key
        autonomous("SELECT seqgen_create('t_b32_opaque', 50)");
        autonomous("SELECT seqgen_set_template('t_b32_opaque', 'Q{yyyy}{MM}{dd}{seq:3:b32:opaque}')");
        let got = texts("SELECT seqgen_order_no('t_b32_opaque') FROM generate_series(1, 200)");
        assert_unique_unordered(&got, 12, 60..=140);
        for (i, n) in got.iter().enumerate() {
            let c = Spi::get_one_with_args::<i64>(
                "SELECT seqgen_reveal_order_no('t_b32_opaque', $1)",
                &[n.as_str().into()],
            )
            .unwrap()
            .unwrap();
            assert_eq!(c, i as i64 + 1, "{n}");
        }
    }

    #[pg_test]
    fn execute_only_role_cannot_read_the_key_or_reveal() {
        autonomous("SELECT seqgen_create('t_opaque_priv')");
        autonomous("SELECT seqgen_make_opaque('t_opaque_priv')");
        autonomous(
            "DO $$ BEGIN CREATE ROLE seqgen_opaque_app NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
             GRANT EXECUTE ON FUNCTION seqgen_next, seqgen_next_batch(text, integer) TO seqgen_opaque_app; \
             SELECT seqgen_grant('t_opaque_priv', 'seqgen_opaque_app')",
        );
        Spi::run("SET LOCAL ROLE seqgen_opaque_app").unwrap();
        assert!(one("SELECT seqgen_next('t_opaque_priv')") > 0);
        for sql in [
            "SELECT key FROM seqgen.opaque_key",
            "SELECT seqgen_reveal('t_opaque_priv', 1)",
            "SELECT seqgen_reveal_order_no('t_opaque_priv', 'x')",
            "SELECT seqgen_make_opaque('t_opaque_priv')",
        ] {
            assert_eq!(sqlstate(sql), Some(ERRCODE_INSUFFICIENT_PRIVILEGE), "{sql}");
        }
        // even with EXECUTE on the reveal function, the key stays out of reach
        Spi::run("RESET ROLE").unwrap();
        Spi::run("GRANT EXECUTE ON FUNCTION seqgen_reveal(text, bigint) TO seqgen_opaque_app").unwrap();
        Spi::run("SET LOCAL ROLE seqgen_opaque_app").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_reveal('t_opaque_priv', 5)"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
    }

    #[pg_test]
    fn opaque_is_for_good_and_the_key_is_fixed() {
        autonomous("SELECT seqgen_create('t_opaque_guard')");
        autonomous("SELECT seqgen_make_opaque('t_opaque_guard')");
        refused("UPDATE seqgen.alloc SET opaque_from = NULL WHERE biz_tag = 't_opaque_guard'", ERRCODE_CHECK_VIOLATION);
        refused(
            "UPDATE seqgen.opaque_key SET key = key WHERE biz_tag = 't_opaque_guard'",
            ERRCODE_FEATURE_NOT_SUPPORTED,
        );
        refused("DELETE FROM seqgen.opaque_key WHERE biz_tag = 't_opaque_guard'", ERRCODE_FEATURE_NOT_SUPPORTED);
        refused("SELECT seqgen_make_opaque('t_opaque_missing')", ERRCODE_UNDEFINED_OBJECT);
        autonomous("SELECT seqgen_create('t_not_opaque')");
        refused("SELECT seqgen_reveal('t_not_opaque', 1)", ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE);
        // a plain tag cannot be given an opaque_from below its max_id by hand
        autonomous("UPDATE seqgen.alloc SET max_id = 500 WHERE biz_tag = 't_not_opaque'");
        refused("UPDATE seqgen.alloc SET opaque_from = 10 WHERE biz_tag = 't_not_opaque'", ERRCODE_CHECK_VIOLATION);
        // a restart before the tag became opaque cannot be undone after it (max_id would go
        // below opaque_from)
        autonomous("SELECT seqgen_create('t_opaque_undo'); SELECT seqgen_restart('t_opaque_undo', 1000)");
        autonomous("SELECT seqgen_make_opaque('t_opaque_undo')");
        refused("SELECT seqgen_restart_undo('t_opaque_undo')", ERRCODE_INVALID_PARAMETER_VALUE);
        // dropping the tag takes its key with it
        autonomous("SELECT seqgen_drop('t_opaque_guard')");
        assert_eq!(one("SELECT count(*) FROM seqgen.opaque_key WHERE biz_tag = 't_opaque_guard'"), 0);
    }

    #[pg_test]
    fn node_bits_interleave_above_earlier_ids() {
        autonomous("SELECT seqgen_create('t_nodes', 100)");
        assert_eq!(ids("SELECT seqgen_next('t_nodes') FROM generate_series(1, 3)"), vec![1, 2, 3]);
        autonomous("SELECT seqgen_set_node_bits('t_nodes', 2)");
        let got = ids("SELECT seqgen_next('t_nodes') FROM generate_series(1, 300)");
        let batch = ids("SELECT seqgen_next_batch('t_nodes', 1000)");
        // this server is node 0: counter << 2 | 0, above everything reserved before
        for v in got.iter().chain(&batch) {
            assert_eq!(v & 3, 0, "{v}");
            assert!(*v > 100, "{v}");
        }
        assert!(got.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(got[0], 101 << 2, "the rest of the plain segment is skipped at the commit");
        assert_eq!(
            Spi::get_one::<i32>("SELECT node_bits FROM seqgen_status() WHERE biz_tag = 't_nodes'").unwrap(),
            Some(2)
        );
        refused("SELECT seqgen_set_node_bits('t_nodes', 1)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_set_node_bits('t_nodes', 17)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_set_node_bits('t_nodes', 0)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_set_node_bits('t_never_there', 2)", ERRCODE_UNDEFINED_OBJECT);
        refused("UPDATE seqgen.alloc SET node_bits = 0 WHERE biz_tag = 't_nodes'", ERRCODE_CHECK_VIOLATION);
        refused("SELECT seqgen_make_opaque('t_nodes')", ERRCODE_FEATURE_NOT_SUPPORTED);
        autonomous("SELECT seqgen_create('t_nodes_opaque')");
        autonomous("SELECT seqgen_make_opaque('t_nodes_opaque')");
        refused("SELECT seqgen_set_node_bits('t_nodes_opaque', 2)", ERRCODE_FEATURE_NOT_SUPPORTED);
    }

    /// Item 3 of the hardening round, and every generator drawn to the end of its range:
    /// the values at the top of bigint come out (one by one and in batches), then 2200H.
    #[pg_test]
    fn every_generator_to_the_end_of_its_range() {
        // plain: the recipe of the report (a batch of 7 returned 0 rows, the values were lost)
        autonomous("SELECT seqgen_create('t_edge', 10, 9223372036854775800)");
        assert_eq!(one("SELECT seqgen_next('t_edge')"), i64::MAX - 7);
        assert_eq!(ids("SELECT seqgen_next_batch('t_edge', 7)"), ((i64::MAX - 6)..=i64::MAX).collect::<Vec<_>>());
        refused("SELECT seqgen_next('t_edge')", ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED);
        refused("SELECT seqgen_next_batch('t_edge', 1)", ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED);
        // a batch that starts in the segment and ends at the top
        autonomous("SELECT seqgen_create('t_edge_batch', 3, 9223372036854775790)");
        let got = ids("SELECT seqgen_next_batch('t_edge_batch', 18)");
        assert_eq!(got, ((i64::MAX - 17)..=i64::MAX).collect::<Vec<_>>());
        refused("SELECT seqgen_next_batch('t_edge_batch', 1)", ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED);
        // node-interleaved: the counter ends at i64::MAX >> bits, the value at i64::MAX
        autonomous("SELECT seqgen_create('t_edge_nodes', 4)");
        autonomous("SELECT seqgen_set_node_bits('t_edge_nodes', 4)");
        autonomous("UPDATE seqgen.alloc SET max_id = (9223372036854775807 >> 4) - 5 WHERE biz_tag = 't_edge_nodes'");
        let got = ids("SELECT seqgen_next_batch('t_edge_nodes', 5)");
        assert_eq!(got.last(), Some(&((i64::MAX >> 4) << 4)), "{got:?}");
        refused("SELECT seqgen_next('t_edge_nodes')", ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED);
        // opaque: the counter runs to i64::MAX, each value permuted inside its domain
        autonomous("SELECT seqgen_create('t_edge_opaque', 4)");
        autonomous("SELECT seqgen_make_opaque('t_edge_opaque')");
        autonomous("UPDATE seqgen.alloc SET max_id = 9223372036854775807 - 6 WHERE biz_tag = 't_edge_opaque'");
        let mut got = ids("SELECT seqgen_next('t_edge_opaque') FROM generate_series(1, 2)");
        got.extend(ids("SELECT seqgen_next_batch('t_edge_opaque', 4)"));
        assert_eq!(got.len(), 6);
        assert_eq!(got.iter().collect::<std::collections::HashSet<_>>().len(), 6, "{got:?}");
        assert!(got.iter().all(|v| *v > 0), "{got:?}");
        refused("SELECT seqgen_next('t_edge_opaque')", ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED);
        // order numbers: the period's counter to its last number
        autonomous("SELECT seqgen_create('t_edge_ord', 10)");
        autonomous("SELECT seqgen_set_template('t_edge_ord', 'E{seq:2}')");
        let all: Vec<String> = Spi::connect(|c| {
            c.select("SELECT seqgen_order_no('t_edge_ord') FROM generate_series(1, 99)", None, &[])
                .unwrap()
                .map(|r| r.get::<String>(1).unwrap().unwrap())
                .collect()
        });
        assert_eq!(all.first().map(String::as_str), Some("E01"));
        assert_eq!(all.last().map(String::as_str), Some("E99"));
        refused("SELECT seqgen_order_no('t_edge_ord')", ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED);
    }

    /// Item 5: a restart or a snowflake floor too far ahead to be a real one is refused
    /// (22023) and changes nothing; `force` takes it, `seqgen_restart_undo` takes a restart
    /// back while nothing was drawn after it.
    #[pg_test]
    fn operator_inputs_are_bounded_and_undone() {
        autonomous("SELECT seqgen_create('t_bound', 10)");
        assert_eq!(one("SELECT seqgen_next('t_bound')"), 1);
        refused("SELECT seqgen_restart('t_bound', 9223372036854775807)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_restart('t_bound', 5000000000000000000)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_snowflake_advance(9223372036854775807)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused(
            "SELECT seqgen_snowflake_advance(seqgen_snowflake_at(now() + interval '1 hour'))",
            ERRCODE_INVALID_PARAMETER_VALUE,
        );
        refused("SELECT seqgen_restart_undo('t_bound')", ERRCODE_INVALID_PARAMETER_VALUE);
        // a jump within half of what is left is a floor
        autonomous("SELECT seqgen_restart('t_bound', 1000000)");
        assert_eq!(one("SELECT seqgen_next('t_bound')"), 1_000_000);
        // nothing drawn after a restart: it can be taken back
        autonomous("SELECT seqgen_restart('t_bound', 9223372036854775000, true)");
        assert_eq!(one("SELECT max_id FROM seqgen.alloc WHERE biz_tag = 't_bound'"), 9223372036854774999);
        autonomous("SELECT seqgen_restart_undo('t_bound')");
        let next = one("SELECT seqgen_next('t_bound')");
        assert!(next > 1_000_000 && next < 2_000_000, "{next}");
        // a value drawn after the restart keeps it
        autonomous("SELECT seqgen_restart('t_bound', 3000000)");
        assert_eq!(one("SELECT seqgen_next('t_bound')"), 3_000_000);
        refused("SELECT seqgen_restart_undo('t_bound')", ERRCODE_INVALID_PARAMETER_VALUE);
        // only the undo may lower max_id; the internal setting is not for ordinary roles
        refused("UPDATE seqgen.alloc SET max_id = 5 WHERE biz_tag = 't_bound'", ERRCODE_CHECK_VIOLATION);
        Spi::run("CREATE ROLE seqgen_rewind_test NOLOGIN").unwrap();
        Spi::run("SET LOCAL ROLE seqgen_rewind_test").unwrap();
        assert_eq!(sqlstate("SET seqgen.rewinding = on"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        Spi::run("RESET ROLE").unwrap();
    }

    /// Item 9: node bits are set once.
    #[pg_test]
    fn node_bits_are_set_once() {
        autonomous("SELECT seqgen_create('t_nodes_once', 10)");
        autonomous("SELECT seqgen_set_node_bits('t_nodes_once', 2)");
        // the same value again changes nothing; another is refused, growing included
        assert_eq!(sqlstate("SELECT seqgen_set_node_bits('t_nodes_once', 2)"), None);
        refused("SELECT seqgen_set_node_bits('t_nodes_once', 3)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("UPDATE seqgen.alloc SET node_bits = 3 WHERE biz_tag = 't_nodes_once'", ERRCODE_CHECK_VIOLATION);
    }

    /// Item 1: the two template changes of the report that issued numbers twice are refused
    /// for the rest of the period; a change that cannot meet the old numbers is taken at once.
    #[pg_test]
    fn template_changes_that_could_repeat_are_refused() {
        autonomous("SELECT seqgen_create('t_tpl_change', 10)");
        autonomous("SELECT seqgen_set_template('t_tpl_change', 'SN{yyyy}{MM}{dd}{seq:4}')");
        text("SELECT seqgen_order_no('t_tpl_change')");
        refused(
            "SELECT seqgen_set_template('t_tpl_change', 'SN{yyyy}{MM}{dd}{seq:4:opaque}')",
            ERRCODE_INVALID_PARAMETER_VALUE,
        );
        autonomous("SELECT seqgen_create('t_tpl_check', 10)");
        autonomous("SELECT seqgen_set_template('t_tpl_check', 'C{yyyy}{MM}{dd}{seq:4}{check}')");
        text("SELECT seqgen_order_no('t_tpl_check')");
        refused("SELECT seqgen_set_template('t_tpl_check', 'C{yyyy}{MM}{dd}{seq:5}')", ERRCODE_INVALID_PARAMETER_VALUE);
        // the date moved: never
        refused(
            "SELECT seqgen_set_template('t_tpl_check', 'C{yyyy}{dd}{MM}{seq:4}{check}')",
            ERRCODE_INVALID_PARAMETER_VALUE,
        );
        // another prefix cannot meet them; going back to a template used before continues it
        autonomous("SELECT seqgen_set_template('t_tpl_check', 'D{yyyy}{MM}{dd}{seq:5}')");
        assert!(text("SELECT seqgen_order_no('t_tpl_check')").starts_with('D'));
        autonomous("SELECT seqgen_set_template('t_tpl_check', 'C{yyyy}{MM}{dd}{seq:4}{check}')");
        assert!(text("SELECT seqgen_order_no('t_tpl_check')").starts_with('C'));
        // the history keeps every template, and cannot be edited away
        assert_eq!(one("SELECT count(*) FROM seqgen.template_history WHERE biz_tag = 't_tpl_check'"), 2);
        refused("DELETE FROM seqgen.template_history WHERE biz_tag = 't_tpl_check'", ERRCODE_FEATURE_NOT_SUPPORTED);
        refused("TRUNCATE seqgen.template_history", ERRCODE_FEATURE_NOT_SUPPORTED);
        // {node} is any node id: its digits written as a literal, for the node of today or of
        // another day (a changed seqgen.node_id, a dump restored elsewhere), are refused
        autonomous("SELECT seqgen_create('t_tpl_node', 10)");
        autonomous("SELECT seqgen_set_template('t_tpl_node', 'N{node:2}-{seq:3}')");
        text("SELECT seqgen_order_no('t_tpl_node')");
        refused("SELECT seqgen_set_template('t_tpl_node', 'N07-{seq:3}')", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_set_template('t_tpl_node', 'N00-{seq:3}')", ERRCODE_INVALID_PARAMETER_VALUE);
        autonomous("SELECT seqgen_set_template('t_tpl_node', 'N0A-{seq:3}')");
        // {node} makes seqgen_render depend on a setting: STABLE
        assert_eq!(one("SELECT count(*) FROM pg_proc WHERE proname = 'seqgen_render' AND provolatile = 's'"), 2);
    }

    /// Issue 19: order numbers per key. `{key}` renders the key, each key's counter restarts on
    /// its own, the template and the call must agree, and a change that could meet the numbers
    /// of another template is refused.
    #[pg_test]
    fn order_numbers_per_key() {
        autonomous("SELECT seqgen_create('t_waybill', 1000, 1)");
        autonomous("SELECT seqgen_set_template('t_waybill', '{key}-{seq:5}')");
        assert_eq!(text("SELECT seqgen_order_no('t_waybill', '010-6541')"), "010-6541-00001");
        assert_eq!(text("SELECT seqgen_order_no('t_waybill', '010-6541')"), "010-6541-00002");
        assert_eq!(text("SELECT seqgen_order_no('t_waybill', '021-0001')"), "021-0001-00001");
        assert_eq!(text("SELECT seqgen_order_no('t_waybill', '010-6541')"), "010-6541-00003");
        // a key's first blocks are small (its step starts at 1): no block of 1,000 per key
        assert!(one("SELECT max(period_max) FROM seqgen.key_order_counter WHERE biz_tag = 't_waybill'") < 100);
        assert_eq!(one("SELECT count(*) FROM seqgen.key_order_counter WHERE biz_tag = 't_waybill'"), 2);
        // in a column DEFAULT
        autonomous("CREATE TABLE t_waybills (area text, no text DEFAULT seqgen_order_no('t_waybill', 'd'))");
        autonomous("INSERT INTO t_waybills (area) SELECT 'x' FROM generate_series(1, 3)");
        assert_eq!(text("SELECT string_agg(no, ',' ORDER BY no) FROM t_waybills"), "d-00001,d-00002,d-00003");
        // the template and the call must agree
        refused("SELECT seqgen_order_no('t_waybill')", ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE);
        autonomous("SELECT seqgen_create('t_plain_tpl')");
        autonomous("SELECT seqgen_set_template('t_plain_tpl', 'P{seq:5}')");
        let (code, msg) = error_of("SELECT seqgen_order_no('t_plain_tpl', 'a')").unwrap();
        assert_eq!(code, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE);
        assert!(msg.contains("has no {key}"), "{msg}");
        // bad keys and unknown tags
        // the key '' (the DEFAULT) is the tag's own counter: the template needs a key
        refused("SELECT seqgen_order_no('t_waybill', '')", ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE);
        refused("SELECT seqgen_order_no('t_waybill', E'a\\tb')", ERRCODE_INVALID_PARAMETER_VALUE);
        refused(
            &format!("SELECT seqgen_order_no('t_waybill', '{}')", "k".repeat(129)),
            ERRCODE_INVALID_PARAMETER_VALUE,
        );
        refused("SELECT seqgen_order_no('t_nope', 'a')", ERRCODE_UNDEFINED_OBJECT);
        // bad templates: a second key, a node id without a width, opaque with a key
        for bad in ["{key}{key}{seq:2}", "{key}{node}{seq:2}", "{key}{seq:4:opaque}"] {
            refused(&format!("SELECT seqgen_set_template('t_waybill', '{bad}')"), ERRCODE_INVALID_PARAMETER_VALUE);
        }
        // a template a key could make equal to the old one is refused (a key "A" renders
        // "A-00001" with either); a new prefix is not
        refused("SELECT seqgen_set_template('t_waybill', '{key}-{yyyy}-{seq:5}')", ERRCODE_INVALID_PARAMETER_VALUE);
        autonomous("SELECT seqgen_set_template('t_waybill', 'WB/{key}/{yyyy}{MM}{dd}/{seq:4}')");
        let today = text("SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')");
        assert_eq!(text("SELECT seqgen_order_no('t_waybill', '010-6541')"), format!("WB/010-6541/{today}/0001"));
        // back to the first template: each key continues above what it reserved
        autonomous("SELECT seqgen_set_template('t_waybill', '{key}-{seq:5}')");
        let back = text("SELECT seqgen_order_no('t_waybill', '010-6541')");
        assert!(back.starts_with("010-6541-") && back[9..].parse::<i64>().unwrap() > 3, "{back}");
        // the counters are guarded, and dropped with the tag
        refused("UPDATE seqgen.key_order_counter SET period_max = 0", ERRCODE_CHECK_VIOLATION);
        refused("DELETE FROM seqgen.key_order_counter", ERRCODE_FEATURE_NOT_SUPPORTED);
        refused("TRUNCATE seqgen.key_order_counter", ERRCODE_FEATURE_NOT_SUPPORTED);
        autonomous("SELECT seqgen_drop('t_waybill')");
        assert_eq!(one("SELECT count(*) FROM seqgen.key_order_counter WHERE biz_tag = 't_waybill'"), 0);
        // the preview shows where the key goes
        assert_eq!(text("SELECT seqgen_render('{key}-{seq:3}', 7, '2026-11-25 00:00+00')"), "{key}-007");
    }

    /// Item 4: a reservation raised and rolled back to a savepoint raises nothing; one in a
    /// transaction being prepared is refused (0A000) and raises nothing either.
    #[pg_test]
    fn rolled_back_and_prepared_reservation_writes_raise_nothing() {
        let mut c = other_session("pgrx_tests");
        c.batch_execute(
            "BEGIN; SAVEPOINT s; \
             UPDATE seqgen.snowflake SET reserved_id = seqgen_snowflake_at(now() + interval '1 hour'); \
             ROLLBACK TO SAVEPOINT s; COMMIT",
        )
        .unwrap();
        assert!(one("SELECT seqgen_snowflake()") > 0);
        c.batch_execute(
            "BEGIN; DO $$ BEGIN \
                UPDATE seqgen.uuidv7 SET reserved_id = (extract(epoch FROM now() + interval '1 hour') * 1000)::int8 << 21; \
                RAISE EXCEPTION 'undone'; \
             EXCEPTION WHEN raise_exception THEN NULL; END $$; COMMIT",
        )
        .unwrap();
        assert_eq!(sqlstate("SELECT seqgen_uuidv7()"), None);
        let e = c
            .batch_execute(
                "BEGIN; UPDATE seqgen.snowflake SET reserved_id = seqgen_snowflake_at(now() + interval '1 hour'); \
                 PREPARE TRANSACTION 'seqgen_raise'",
            )
            .unwrap_err();
        assert_eq!(e.code().map(|s| s.code()), Some("0A000"), "{e:?}");
        let _ = c.batch_execute("ROLLBACK");
        assert!(one("SELECT seqgen_snowflake()") > 0);
        assert_eq!(one("SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'seqgen_raise'"), 0);
    }

    /// seqgen_status() shows a role granted EXECUTE on it the tags it owns or may draw from
    /// (it failed with "permission denied for schema seqgen"), a member of pg_monitor every
    /// tag, and a role with neither none (issue 31, item 7).
    #[pg_test]
    fn status_shows_each_role_its_tags() {
        autonomous(
            "DO $$ BEGIN CREATE ROLE st_owner NOLOGIN; CREATE ROLE st_drawer NOLOGIN; \
             CREATE ROLE st_watch NOLOGIN IN ROLE pg_monitor; CREATE ROLE st_none NOLOGIN; \
             EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
             GRANT EXECUTE ON FUNCTION seqgen_status(), seqgen_create(text, integer, bigint, text, boolean) \
             TO st_owner, st_drawer, st_watch, st_none; \
             SET ROLE st_owner; SELECT seqgen_create('st_mine'); RESET ROLE; \
             SELECT seqgen_create('st_granted'); SELECT seqgen_grant('st_granted', 'st_drawer'); \
             SELECT seqgen_create('st_hidden')",
        );
        let seen = |role: &str| -> String {
            Spi::run(&format!("SET LOCAL ROLE {role}")).unwrap();
            let tags = Spi::get_one::<String>(
                "SELECT coalesce(string_agg(biz_tag, ',' ORDER BY biz_tag), '') FROM seqgen_status() WHERE biz_tag LIKE 'st\\_%'",
            )
            .unwrap()
            .unwrap_or_default();
            Spi::run("RESET ROLE").unwrap();
            tags
        };
        assert_eq!(seen("st_owner"), "st_mine");
        assert_eq!(seen("st_drawer"), "st_granted");
        assert_eq!(seen("st_watch"), "st_granted,st_hidden,st_mine");
        assert_eq!(seen("st_none"), "");
        // an opaque tag's counters are its owner's only (seqgen_reveal's rule): a role that may
        // draw from it, or pg_monitor, sees NULLs
        autonomous("SELECT seqgen_make_opaque('st_granted')");
        let counters = |role: &str| -> bool {
            Spi::run(&format!("SET LOCAL ROLE {role}")).unwrap();
            let shown =
                Spi::get_one::<bool>("SELECT max_id IS NOT NULL FROM seqgen_status() WHERE biz_tag = 'st_granted'")
                    .unwrap()
                    .unwrap();
            Spi::run("RESET ROLE").unwrap();
            shown
        };
        assert!(!counters("st_drawer"));
        assert!(!counters("st_watch"));
        assert!(Spi::get_one::<bool>("SELECT max_id IS NOT NULL FROM seqgen_status() WHERE biz_tag = 'st_granted'")
            .unwrap()
            .unwrap());
        assert!(Spi::get_one::<bool>("SELECT max_id IS NOT NULL FROM seqgen_status() WHERE biz_tag = 'st_mine'")
            .unwrap()
            .unwrap());
        autonomous("SELECT seqgen_drop('st_mine'); SELECT seqgen_drop('st_granted'); SELECT seqgen_drop('st_hidden')");
    }

    /// Item 8: a tag has an owner, who grants and revokes drawing from it; others get 42501
    /// naming the tag, and may not change it.
    #[pg_test]
    fn tags_have_owners_and_grants() {
        // committed roles and tag: the allocator loads only committed tags
        autonomous(
            "DO $$ BEGIN CREATE ROLE seqgen_team_a NOLOGIN; CREATE ROLE seqgen_team_b NOLOGIN; \
             EXCEPTION WHEN duplicate_object THEN NULL; END $$; \
             GRANT EXECUTE ON FUNCTION seqgen_create(text, integer, bigint, text, boolean), seqgen_next, \
             seqgen_alter(text, integer, text), seqgen_drop(text, boolean), seqgen_grant(text, text), seqgen_revoke(text, text) \
             TO seqgen_team_a, seqgen_team_b; \
             SET ROLE seqgen_team_a; SELECT seqgen_create('t_team_a', 10); RESET ROLE",
        );
        assert_eq!(
            Spi::get_one::<String>("SELECT owner::text FROM seqgen.alloc WHERE biz_tag = 't_team_a'")
                .unwrap()
                .as_deref(),
            Some("seqgen_team_a")
        );
        Spi::run("SET LOCAL ROLE seqgen_team_a").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_next('t_team_a')"), None);
        Spi::run("SET LOCAL ROLE seqgen_team_b").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_next('t_team_a')"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        assert_eq!(sqlstate("SELECT seqgen_alter('t_team_a', 20)"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        assert_eq!(sqlstate("SELECT seqgen_drop('t_team_a')"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        assert_eq!(sqlstate("SELECT seqgen_grant('t_team_a', 'seqgen_team_b')"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        assert_eq!(sqlstate("SELECT seqgen_next('t_team_mistyped')"), Some(ERRCODE_UNDEFINED_OBJECT));
        Spi::run("SET LOCAL ROLE seqgen_team_a").unwrap();
        Spi::run("SELECT seqgen_grant('t_team_a', 'seqgen_team_b')").unwrap();
        assert_eq!(
            sqlstate("SELECT seqgen_grant('t_team_a', 'seqgen_no_such_role')"),
            Some(ERRCODE_INVALID_PARAMETER_VALUE)
        );
        Spi::run("SET LOCAL ROLE seqgen_team_b").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_next('t_team_a')"), None);
        // a revoke counts at once in its own transaction (the others at its commit)
        Spi::run("SET LOCAL ROLE seqgen_team_a").unwrap();
        Spi::run("SELECT seqgen_revoke('t_team_a', 'seqgen_team_b')").unwrap();
        Spi::run("SET LOCAL ROLE seqgen_team_b").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_next('t_team_a')"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        Spi::run("RESET ROLE").unwrap();
    }

    /// JavaScript-safe snowflakes: below 2^53, increasing, decodable, above everything before.
    #[pg_test]
    fn snowflake53_fits_a_javascript_number() {
        let got = ids("SELECT seqgen_snowflake53() FROM generate_series(1, 5000)");
        assert!(got.windows(2).all(|w| w[0] < w[1]));
        assert!(got.iter().all(|v| *v > 0 && *v < (1 << 53)), "{:?}", got.iter().max());
        let at = one("SELECT seqgen_snowflake53_at(now() - interval '1 minute')");
        assert!(got[0] > at);
        assert_eq!(one(&format!("SELECT node_id::int8 FROM seqgen_snowflake53_decode({})", got[0])), 0);
        refused("SELECT * FROM seqgen_snowflake53_decode(9007199254740992)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT * FROM seqgen_snowflake53_decode(-1)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_snowflake53_at('1969-01-01')", ERRCODE_DATETIME_FIELD_OVERFLOW);
        assert!(one("SELECT count(*) FROM seqgen_snowflake53_status() WHERE last_ts IS NOT NULL") == 1);
        // its reservation is guarded like the others, and the function needs a grant
        refused("UPDATE seqgen.snowflake53 SET reserved_id = 0", ERRCODE_CHECK_VIOLATION);
        Spi::run("CREATE ROLE seqgen_sf53_test NOLOGIN").unwrap();
        Spi::run("SET LOCAL ROLE seqgen_sf53_test").unwrap();
        assert_eq!(sqlstate("SELECT seqgen_snowflake53()"), Some(ERRCODE_INSUFFICIENT_PRIVILEGE));
        assert_eq!(sqlstate("SELECT seqgen_snowflake53_at(now())"), None);
        Spi::run("RESET ROLE").unwrap();
    }

    /// Configuration as code: a document applied creates what it names, applied again changes
    /// nothing; seqgen_config() round-trips; start_with only raises; a bad document is refused
    /// with its JSON path and changes nothing; dropping takes only the caller's own tags.
    #[pg_test]
    fn configuration_applies_once_and_round_trips() {
        Spi::run(
            "CREATE ROLE seqgen_cfg_team NOLOGIN; GRANT EXECUTE ON FUNCTION seqgen_apply(jsonb, boolean), \
             seqgen_config() TO seqgen_cfg_team; GRANT USAGE ON SCHEMA seqgen TO seqgen_cfg_team; \
             GRANT SELECT ON seqgen.alloc TO seqgen_cfg_team; SET LOCAL ROLE seqgen_cfg_team",
        )
        .unwrap();
        let apply = |doc: &str, drop: bool| -> Vec<String> {
            Spi::connect(|c| {
                c.select(
                    "SELECT biz_tag || ': ' || action FROM seqgen_apply($1::jsonb, $2)",
                    None,
                    &[doc.into(), drop.into()],
                )
                .unwrap()
                .map(|r| r.get::<String>(1).unwrap().unwrap())
                .collect()
            })
        };
        let doc = r#"{"version": 1, "tags": {
            "cfg_a": {"step": 50, "start_with": 1000, "description": "a"},
            "cfg_b": {"template": {"text": "CB{yyyy}{seq:6}", "time_zone": "Asia/Shanghai"}, "grants": ["public"]},
            "cfg-c": {"opaque": true}}}"#;
        let done = apply(doc, false);
        assert_eq!(
            done,
            [
                "cfg-c: created",
                "cfg-c: made opaque",
                "cfg_a: created",
                "cfg_b: created",
                "cfg_b: template CB{yyyy}{seq:6} in Asia/Shanghai",
                "cfg_b: granted to public"
            ]
        );
        assert_eq!(apply(doc, false), Vec::<String>::new());
        assert_eq!(one("SELECT max_id FROM seqgen.alloc WHERE biz_tag = 'cfg_a'"), 999);
        assert_eq!(one("SELECT step::int8 FROM seqgen.alloc WHERE biz_tag = 'cfg_a'"), 50);
        // what seqgen_config() writes applies to the same database as no change
        let exported = Spi::get_one::<pgrx::JsonB>("SELECT seqgen_config()").unwrap().unwrap().0;
        assert_eq!(exported["tags"]["cfg_a"]["step"], 50);
        assert_eq!(exported["tags"]["cfg_b"]["grants"][0], "public");
        assert_eq!(exported["tags"]["cfg-c"]["opaque"], true);
        assert_eq!(apply(&exported.to_string(), false), Vec::<String>::new());
        // raising: a changed step and a higher start; a lower start is no change
        let done = apply(r#"{"version": 1, "tags": {"cfg_a": {"step": 60, "start_with": 900000}}}"#, false);
        assert_eq!(done, ["cfg_a: altered (step 60)", "cfg_a: restarted at 900000"]);
        assert_eq!(one("SELECT max_id FROM seqgen.alloc WHERE biz_tag = 'cfg_a'"), 899999);
        assert_eq!(
            apply(r#"{"version": 1, "tags": {"cfg_a": {"step": 60, "start_with": 10}}}"#, false),
            Vec::<String>::new()
        );
        // bad documents: refused with the path, nothing changed (not even the tags before the bad one)
        let before = catalog("");
        for (doc, code, path) in [
            (r#"{"version": 2}"#, ERRCODE_INVALID_PARAMETER_VALUE, "$.version"),
            (
                r#"{"version": 1, "tags": {"cfg_a": {"step": -5}}}"#,
                ERRCODE_INVALID_PARAMETER_VALUE,
                "$.tags.cfg_a.step",
            ),
            (r#"{"version": 1, "tags": {"cfg_a": {"stp": 5}}}"#, ERRCODE_INVALID_PARAMETER_VALUE, "$.tags.cfg_a.stp"),
            (
                r#"{"version": 1, "tags": {"cfg_a": {"step": "5"}}}"#,
                ERRCODE_INVALID_PARAMETER_VALUE,
                "$.tags.cfg_a.step",
            ),
            (
                r#"{"version": 1, "tags": {"cfg_d": {}, "cfg_e": {"template": {"text": "X{seq:3", "time_zone": "UTC"}}}}"#,
                ERRCODE_INVALID_PARAMETER_VALUE,
                "$.tags.cfg_e.template.text",
            ),
            (
                r#"{"version": 1, "tags": {"cfg_d": {}, "cfg_e": {"template": {"text": "X{seq:3}", "time_zone": "Mars/Base"}}}}"#,
                ERRCODE_INVALID_PARAMETER_VALUE,
                "$.tags.cfg_e.template.time_zone",
            ),
            (
                r#"{"version": 1, "tags": {"cfg_d": {}, "cfg_b": {}}}"#,
                ERRCODE_FEATURE_NOT_SUPPORTED,
                "$.tags.cfg_b.template",
            ),
            (
                r#"{"version": 1, "tags": {"cfg_d": {}, "cfg-c": {}}}"#,
                ERRCODE_FEATURE_NOT_SUPPORTED,
                r#"$.tags["cfg-c"].opaque"#,
            ),
            (
                r#"{"version": 1, "tags": {"cfg_d": {}, "cfg_a": {"step": 60, "grants": ["seqgen_cfg_nobody"]}}}"#,
                ERRCODE_INVALID_PARAMETER_VALUE,
                "$.tags.cfg_a.grants",
            ),
            (
                r#"{"version": 1, "tags": {"cfg_b": {"template": {"text": "CB{yy}{seq:8}", "time_zone": "Asia/Shanghai"}}}}"#,
                ERRCODE_INVALID_PARAMETER_VALUE,
                "$.tags.cfg_b.template",
            ),
        ] {
            let (got, message) =
                error_of(&format!("SELECT * FROM seqgen_apply('{doc}')")).unwrap_or_else(|| panic!("{doc} applied"));
            assert_eq!((got, message.starts_with(&format!("{path}:"))), (code, true), "{doc}: {message}");
            assert_eq!(catalog(""), before, "{doc}");
        }
        // another role's tags are not part of this role's configuration, nor dropped by it
        Spi::run("RESET ROLE; SELECT seqgen_create('cfg_other')").unwrap();
        Spi::run("SET LOCAL ROLE seqgen_cfg_team").unwrap();
        let exported = Spi::get_one::<pgrx::JsonB>("SELECT seqgen_config()").unwrap().unwrap().0;
        assert!(exported["tags"].get("cfg_other").is_none());
        let done = apply(r#"{"version": 1, "tags": {"cfg_a": {"step": 60}}}"#, true);
        assert_eq!(done, ["cfg-c: dropped", "cfg_b: dropped"]);
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(one("SELECT count(*) FROM seqgen.alloc WHERE biz_tag IN ('cfg_a', 'cfg_other')"), 2);
    }

    /// Sortable text (issue 34): every generator's IDs round-trip through their text, and the
    /// text sorts as the numbers do under C, the database's default collation, the libc
    /// C.utf8 and ICU's root and English collations (ICU required where the server has it:
    /// Debian's 15 and 17). Bad input gets its SQLSTATE.
    #[pg_test]
    fn text_ids_round_trip_and_sort_as_their_numbers() {
        // a step that serves the 300 draws from the first segment (no waits for the worker)
        autonomous("SELECT seqgen_create('t_text', 1000)");
        Spi::run(
            "CREATE TEMP TABLE ids AS \
               SELECT 'tag' AS kind, seqgen_next('t_text') AS v, NULL::uuid AS u FROM generate_series(1, 300) \
               UNION ALL SELECT 'snowflake', seqgen_snowflake(), NULL FROM generate_series(1, 300) \
               UNION ALL SELECT 'snowflake53', seqgen_snowflake53(), NULL FROM generate_series(1, 300) \
               UNION ALL SELECT 'edge', v, NULL FROM unnest(ARRAY[0, 1, 31, 32, 1023, 1024, \
                   9007199254740991, 9223372036854775806, 9223372036854775807]::int8[]) v \
               UNION ALL SELECT 'random', (random() * 9.2e18)::int8, NULL FROM generate_series(1, 500) \
               UNION ALL SELECT 'uuid', NULL, seqgen_uuidv7() FROM generate_series(1, 300) \
               UNION ALL SELECT 'uuid', NULL, gen_random_uuid() FROM generate_series(1, 300); \
             ALTER TABLE ids ADD t text; \
             UPDATE ids SET t = CASE WHEN u IS NULL THEN seqgen_encode(v) ELSE seqgen_encode_uuid(u) END;",
        )
        .unwrap();
        // the round trip, fixed widths, and either case on input
        assert_eq!(
            one("SELECT count(*) FROM ids WHERE u IS NULL AND (length(t) <> 13 OR seqgen_decode(t) <> v \
                   OR seqgen_decode(lower(t)) <> v OR CASE WHEN v > 0 THEN seqgen_decode(ltrim(t, '0')) ELSE 0 END <> v)"),
            0
        );
        assert_eq!(
            one("SELECT count(*) FROM ids WHERE u IS NOT NULL AND (length(t) <> 26 OR seqgen_decode_uuid(t) <> u \
                   OR seqgen_decode_uuid(lower(t)) <> u)"),
            0
        );
        // a 53-bit snowflake fits in 11 characters, with the same order
        assert_eq!(
            one("SELECT count(*) FROM ids WHERE kind = 'snowflake53' \
                   AND (length(seqgen_encode(v, 11)) <> 11 OR seqgen_decode(seqgen_encode(v, 11)) <> v)"),
            0
        );
        // a UUIDv7's ULID carries its millisecond in the first 10 characters
        assert_eq!(
            one("SELECT count(*) FROM ids WHERE kind = 'uuid' AND u::text ~ '^.{14}7' \
                   AND seqgen_decode(left(t, 10)) <> (SELECT (extract(epoch FROM ts) * 1000)::int8 FROM seqgen_uuidv7_decode(u))"),
            0
        );
        assert!(one("SELECT count(*) FROM ids WHERE kind = 'uuid' AND u::text ~ '^.{14}7'") >= 300);
        // the ULID specification's example
        assert_eq!(
            Spi::get_one::<String>("SELECT seqgen_decode_uuid('01ARZ3NDEKTSV4RRFFQ69G5FAV')::text").unwrap().unwrap(),
            "01563e3a-b5d3-d676-4c61-efb99302bd5b"
        );
        // the order of the texts is the order of the numbers
        let mut collations = vec!["\"C\"".to_string(), "\"POSIX\"".to_string(), "\"default\"".to_string()];
        for name in ["C.utf8", "C.UTF-8", "und-x-icu", "en-x-icu", "en-US-x-icu"] {
            if one(&format!(
                "SELECT count(*) FROM pg_collation WHERE collname = '{name}' \
                               AND collencoding IN (-1, pg_char_to_encoding(getdatabaseencoding()))"
            )) > 0
            {
                collations.push(format!("\"{name}\""));
            }
        }
        let major = one("SELECT current_setting('server_version_num')::int8 / 10000");
        let icu = one("SELECT count(*) FROM pg_collation WHERE collprovider = 'i'") > 0;
        if major == 15 || major == 17 {
            // Debian's servers are built with ICU: its collations must have been tested
            assert!(icu && collations.iter().any(|c| c.contains("und-x-icu")), "{collations:?}");
        }
        for coll in &collations {
            // the text, and the typed ID (lower case)
            let texts = [
                ("kind <> 'uuid'", "v", "t"),
                ("kind = 'uuid'", "u", "t"),
                ("kind <> 'uuid'", "v", "seqgen_encode_typed('inv', v)"),
                ("kind = 'uuid'", "u", "seqgen_encode_typeid('user', u)"),
            ];
            for (kinds, num, text) in texts {
                let sql = format!(
                    "SELECT count(*) FROM (SELECT {num} AS n, lag({num}) OVER (ORDER BY {text} COLLATE {coll}) AS before \
                       FROM ids WHERE {kinds}) x WHERE before > n"
                );
                assert_eq!(one(&sql), 0, "text out of numeric order under {coll}");
            }
        }
        // bad input: its SQLSTATE, and a hint for a character outside the alphabet
        refused("SELECT seqgen_encode(-1)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_encode(1, 0)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_encode(1, 14)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_encode(32, 1)", ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE);
        refused("SELECT seqgen_decode('8000000000000')", ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE);
        refused("SELECT seqgen_decode('')", ERRCODE_INVALID_TEXT_REPRESENTATION);
        refused("SELECT seqgen_decode('00000000000000')", ERRCODE_INVALID_TEXT_REPRESENTATION);
        refused("SELECT seqgen_decode_uuid('8ZZZZZZZZZZZZZZZZZZZZZZZZZ')", ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE);
        refused("SELECT seqgen_decode_uuid('01ARZ3NDEKTSV4RRFFQ69G5FA')", ERRCODE_INVALID_TEXT_REPRESENTATION);
        let (code, msg) = error_of("SELECT seqgen_decode('0I5')").unwrap();
        assert_eq!(code, ERRCODE_INVALID_TEXT_REPRESENTATION);
        assert_eq!(msg, "invalid bigint ID text: \"0I5\" has \"I\" at position 2");
        // the docs' examples
        autonomous("SELECT seqgen_create('ticket')");
        Spi::run(
            "CREATE TABLE tickets ( \
                 code text COLLATE \"C\" PRIMARY KEY DEFAULT seqgen_encode(seqgen_next('ticket')), \
                 title text); \
             INSERT INTO tickets (title) SELECT 'x' FROM generate_series(1, 40)",
        )
        .unwrap();
        assert_eq!(one("SELECT count(DISTINCT seqgen_decode(code)) FROM tickets WHERE length(code) = 13"), 40);
        assert_eq!(one("SELECT seqgen_decode('0000000000abz')"), 10623);
        assert_eq!(one("SELECT length(seqgen_encode(seqgen_snowflake53(), 11))"), 11);
        assert_eq!(one("SELECT length(seqgen_encode_uuid(seqgen_uuidv7()))"), 26);
        // typed IDs: round trip, the type checked, the TypeID specification's example
        assert_eq!(
            one("SELECT count(*) FROM ids WHERE u IS NULL AND (seqgen_encode_typed('inv', v) <> 'inv_' || lower(t) \
                   OR seqgen_decode_typed('inv', seqgen_encode_typed('inv', v)) <> v)"),
            0
        );
        assert_eq!(
            one("SELECT count(*) FROM ids WHERE u IS NOT NULL AND (seqgen_encode_typeid('user', u) <> 'user_' || lower(t) \
                   OR seqgen_decode_typeid('user', seqgen_encode_typeid('user', u)) <> u)"),
            0
        );
        assert_eq!(
            Spi::get_one::<String>("SELECT seqgen_encode_typeid('prefix', '0110c853-1d09-52d8-d73e-1194e95b5f19')")
                .unwrap()
                .unwrap(),
            "prefix_0123456789abcdefghjkmnpqrs"
        );
        assert_eq!(
            Spi::get_one::<String>("SELECT seqgen_encode_typed('inv', 31)").unwrap().unwrap(),
            "inv_000000000000z"
        );
        refused(
            "SELECT seqgen_decode_typeid('post', seqgen_encode_typeid('user', seqgen_uuidv7()))",
            ERRCODE_INVALID_PARAMETER_VALUE,
        );
        refused("SELECT seqgen_decode_typed('inv', '000000000000z')", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_encode_typed('Inv', 1)", ERRCODE_INVALID_PARAMETER_VALUE);
        let (_, msg) = error_of("SELECT seqgen_decode_typed('inv', 'user_000000000000z')").unwrap();
        assert_eq!(msg, "ID \"user_000000000000z\" is not of type \"inv\" (its type is \"user\")");
        // one text per typed ID: lower case only, no separator without a prefix
        refused("SELECT seqgen_decode_typed('inv', 'inv_000000000000Z')", ERRCODE_INVALID_TEXT_REPRESENTATION);
        refused("SELECT seqgen_decode_typed('', '_000000000000z')", ERRCODE_INVALID_TEXT_REPRESENTATION);
        Spi::run(
            "CREATE TABLE users (id text COLLATE \"C\" PRIMARY KEY DEFAULT seqgen_encode_typeid('user', seqgen_uuidv7()), name text); \
             INSERT INTO users (name) SELECT 'x' FROM generate_series(1, 20)",
        )
        .unwrap();
        assert_eq!(
            one("SELECT count(DISTINCT seqgen_decode_typeid('user', id)) FROM users WHERE id LIKE 'user\\_%'"),
            20
        );
        // NULL in, NULL out
        assert_eq!(Spi::get_one::<String>("SELECT seqgen_encode(NULL)").unwrap(), None);
        assert_eq!(Spi::get_one::<i64>("SELECT seqgen_decode(NULL)").unwrap(), None);
    }

    /// Short codes (issue 34): an opaque tag's codes are distinct, of their length, valid, and
    /// revealed to distinct counter values; the codes of one length run out exactly at
    /// 32^(length - 1) and the next draw is refused, while a longer length goes on. A mistyped
    /// or swapped code, a bad length, a plain tag and an unknown tag get their SQLSTATEs.
    #[pg_test]
    fn short_codes_are_unique_checked_revealed_and_refused_when_used_up() {
        autonomous(
            "SELECT seqgen_create('t_codes', 40000); SELECT seqgen_make_opaque('t_codes'); \
             SELECT seqgen_create('t_codes_plain')",
        );
        Spi::run(
            "CREATE TEMP TABLE codes AS SELECT g, seqgen_next_code('t_codes', 4) AS c FROM generate_series(1, 32768) g; \
             ALTER TABLE codes ADD r int8; \
             UPDATE codes SET r = seqgen_reveal_code('t_codes', c) WHERE g <= 1000 OR g = 32768",
        )
        .unwrap();
        // every code of 4 characters, each once (the core's tests take every code back)
        assert_eq!(one("SELECT count(DISTINCT c) FROM codes"), 32768);
        assert_eq!(
            one("SELECT count(*) FROM codes WHERE c !~ '^[0-9A-HJKMNP-TV-Z]{4}$' OR NOT seqgen_code_is_valid(c)"),
            0
        );
        // revealed (in either case): the counter values as drawn, one after another
        assert_eq!(one("SELECT count(DISTINCT r) FROM codes"), 1001);
        assert_eq!(one("SELECT max(r) - min(r) FROM codes"), 32767);
        assert_eq!(
            one("SELECT count(*) FROM codes WHERE g <= 1000 AND (seqgen_reveal_code('t_codes', lower(c)) <> r \
                   OR r - g <> (SELECT min(r) - 1 FROM codes))"),
            0
        );
        // neither order nor volume: the codes of consecutive draws are not in code order
        let ascending =
            one("SELECT count(*) FILTER (WHERE c < n) FROM (SELECT c, lead(c) OVER (ORDER BY g) n FROM codes) x");
        assert!((12_000..20_000).contains(&ascending), "{ascending} of 32767 neighbours ascending");
        // used up: refused before a repeat, while longer codes go on above every counter value
        // (a refused draw still takes a counter value, which may reserve a segment: not `refused`)
        let (code, msg) = error_of("SELECT seqgen_next_code('t_codes', 4)").unwrap();
        assert_eq!(code, ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED);
        assert_eq!(msg, "tag \"t_codes\" has used up its 32768 short codes of 4 characters");
        assert!(
            one("SELECT seqgen_reveal_code('t_codes', seqgen_next_code('t_codes', 5))")
                > one("SELECT max(r) FROM codes")
        );
        let code: String = Spi::get_one("SELECT seqgen_next_code('t_codes')").unwrap().unwrap();
        assert_eq!(code.len(), 8);
        // a changed character and a swap of two neighbours are caught
        let b = code.as_bytes();
        let changed = format!("{}{}", if b[0] == b'7' { '8' } else { '7' }, &code[1..]);
        let i = (0..7).find(|&i| b[i] != b[i + 1]).unwrap();
        let mut swapped = b.to_vec();
        swapped.swap(i, i + 1);
        let swapped = String::from_utf8(swapped).unwrap();
        for bad in [&changed, &swapped] {
            assert_eq!(
                Spi::get_one_with_args::<bool>("SELECT seqgen_code_is_valid($1)", &[bad.as_str().into()]).unwrap(),
                Some(false)
            );
            refused(&format!("SELECT seqgen_reveal_code('t_codes', '{bad}')"), ERRCODE_INVALID_TEXT_REPRESENTATION);
        }
        refused("SELECT seqgen_next_code('t_codes', 3)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_next_code('t_codes', 14)", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_reveal_code('t_codes', 'AB')", ERRCODE_INVALID_TEXT_REPRESENTATION);
        // well-formed, but above every counter value reserved: never issued
        assert_eq!(Spi::get_one::<bool>("SELECT seqgen_code_is_valid('000000000000D')").unwrap(), Some(true));
        refused("SELECT seqgen_reveal_code('t_codes', '000000000000D')", ERRCODE_INVALID_PARAMETER_VALUE);
        refused("SELECT seqgen_reveal_code('t_codes', 'ABCU')", ERRCODE_INVALID_TEXT_REPRESENTATION);
        refused("SELECT seqgen_next_code('t_codes_nope')", ERRCODE_UNDEFINED_OBJECT);
        refused(
            &format!("SELECT seqgen_reveal_code('t_codes_plain', '{code}')"),
            ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        );
        // a plain tag's draw is refused (its first load reserves a segment: not `refused`)
        assert_eq!(
            sqlstate("SELECT seqgen_next_code('t_codes_plain')"),
            Some(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE)
        );
        // revealed by the statement that drew them, in a REPEATABLE READ transaction whose
        // snapshot is older than every segment they came from
        autonomous("SELECT seqgen_create('t_codes_now', 10); SELECT seqgen_make_opaque('t_codes_now')");
        let mut rr = other_session("pgrx_tests");
        rr.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1").unwrap();
        let revealed: i64 = rr
            .query_one(
                "SELECT count(DISTINCT seqgen_reveal_code('t_codes_now', seqgen_next_code('t_codes_now', 6))) \
                   FROM generate_series(1, 50)",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(revealed, 50);
        rr.batch_execute("COMMIT").unwrap();
        // the docs' example, a column DEFAULT; NULL in and NULL out
        autonomous("SELECT seqgen_create('coupon'); SELECT seqgen_make_opaque('coupon')");
        Spi::run(
            "SELECT seqgen_next_code('coupon'); SELECT seqgen_next_code('coupon', 6); \
             CREATE TABLE coupons (code text COLLATE \"C\" PRIMARY KEY DEFAULT seqgen_next_code('coupon'), amount numeric); \
             INSERT INTO coupons (amount) SELECT g FROM generate_series(1, 100) g",
        )
        .unwrap();
        assert_eq!(
            one("SELECT count(*) FROM coupons WHERE seqgen_code_is_valid(code) AND length(code) = 8 \
                   AND seqgen_reveal_code('coupon', lower(code)) > 0"),
            100
        );
        assert_eq!(Spi::get_one::<bool>("SELECT seqgen_code_is_valid('7MQ3D0KH')").unwrap(), Some(true));
        assert_eq!(Spi::get_one::<bool>("SELECT seqgen_code_is_valid('7MQ3D0KX')").unwrap(), Some(false));
        // typed input looked up as the README says
        assert_eq!(
            one("SELECT count(*) FROM coupons c \
                   WHERE upper(translate(replace(replace(lower(c.code), '1', 'l'), '0', 'o'), 'ILOilo', '110110')) = c.code"),
            100
        );
        assert_eq!(Spi::get_one::<String>("SELECT seqgen_next_code(NULL)").unwrap(), None);
        assert_eq!(Spi::get_one::<bool>("SELECT seqgen_code_is_valid(NULL)").unwrap(), None);
    }
}
