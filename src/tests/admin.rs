//! `#[pg_test]`s of the operators' functions: alter, restart, adopt, advance, node bits,
//! configuration as code, `seqgen_currval` and `seqgen_lastval`, the allocator's health, every
//! generator drawn to the end of its range.

#[pgrx::pg_schema]
mod tests {
    use crate::tests::support::*;

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
    fn worker_health_is_visible() {
        let running = Spi::get_one::<bool>("SELECT running FROM seqgen_worker_status()").unwrap();
        assert_eq!(running, Some(true));
        let pid = Spi::get_one::<i32>("SELECT pid FROM seqgen_worker_status()").unwrap().unwrap_or(0);
        let backend =
            Spi::get_one::<String>(&format!("SELECT backend_type FROM pg_stat_activity WHERE pid = {pid}")).unwrap();
        assert_eq!(backend.as_deref(), Some("pg_seqgen allocator"));
        assert!(one("SELECT mailboxes_in_use FROM seqgen_worker_status()") >= 0);
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
}
