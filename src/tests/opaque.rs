//! `#[pg_test]`s of opaque IDs: unique, unordered, revealed with the key; opaque and base-32 order
//! numbers; opaque is for good.

#[pgrx::pg_schema]
mod tests {
    use crate::tests::support::*;

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
}
