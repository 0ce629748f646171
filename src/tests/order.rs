//! `#[pg_test]`s of order numbers: templates, check digits, bad input, overflow, the counter that
//! cannot go back, template changes that could repeat, numbers per key.

#[pgrx::pg_schema]
mod tests {
    use crate::tests::support::*;

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
}
