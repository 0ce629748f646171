//! `#[pg_test]`s of IDs as text and short codes: round trips, sort order, checks, revealing, a code
//! space used up.

#[pgrx::pg_schema]
mod tests {
    use crate::tests::support::*;

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
