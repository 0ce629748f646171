//! `#[pg_test]`s of snowflakes and UUIDv7: layout, order, decoding, the reservation, time bounds,
//! advances, the 53-bit snowflake.

#[pgrx::pg_schema]
mod tests {
    use crate::tests::support::*;

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

    #[pg_test]
    fn snowflake_reservation_cannot_go_back() {
        one("SELECT seqgen_snowflake()");
        wait_for_value("SELECT count(*) FROM seqgen.snowflake", |n| n == 1);
        refused("UPDATE seqgen.snowflake SET reserved_id = 0", ERRCODE_CHECK_VIOLATION);
        refused("DELETE FROM seqgen.snowflake", ERRCODE_FEATURE_NOT_SUPPORTED);
        refused("TRUNCATE seqgen.snowflake", ERRCODE_FEATURE_NOT_SUPPORTED);
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
}
