//! pg_seqgen 1.0's surface (issue 31), the parts that have landed.

use seqgen_integration::*;

/// Item 1: without `shared_preload_libraries`, `CREATE EXTENSION pg_seqgen` (and any call)
/// ended the connection with `FATAL: cannot create PGC_POSTMASTER variables after startup`.
/// Now every call that needs the preload is an ERROR 55000 whose hint names the setting, and
/// the session goes on.
#[test]
fn without_the_preload_calls_are_refused_and_the_session_lives() {
    let c = Cluster::init("s_nopreload", 57920, &["shared_preload_libraries = ''"]);
    c.start();
    let mut s = c.connect();
    let created = s.batch_execute("CREATE EXTENSION pg_seqgen");
    println!("CREATE EXTENSION without the preload: {created:?}");
    assert!(!s.is_closed(), "the session ended: {created:?}");
    if let Err(e) = &created {
        assert_eq!(sqlstate(e).as_deref(), Some("55000"), "{e:?}");
    }
    let mut refused = 0;
    for sql in [
        "SELECT seqgen_next('x')",
        "SELECT seqgen_snowflake()",
        "SELECT seqgen_uuidv7()",
        "SELECT seqgen_order_no('x')",
    ] {
        let Err(e) = s.batch_execute(sql) else {
            panic!("{sql} answered without the preload");
        };
        // before the extension exists the function is unknown (42883); after, pg_seqgen's 55000
        let state = sqlstate(&e).unwrap_or_default();
        if created.is_ok() {
            assert_eq!(state, "55000", "{sql}: {e:?}");
            let hint = e.as_db_error().and_then(|d| d.hint()).unwrap_or_default().to_string();
            assert!(hint.contains("shared_preload_libraries"), "{sql}: hint {hint:?}");
            refused += 1;
        } else {
            assert_eq!(state, "42883", "{sql}: {e:?}");
        }
        assert!(!s.is_closed(), "{sql} ended the session");
    }
    s.batch_execute("SELECT 1").unwrap();
    println!("without the preload: {refused} calls refused with 55000, the session alive");
}

/// Item 2 (in part): every function pg_seqgen puts in the user's schema has a COMMENT, so `\df+`
/// describes it; internal ones say so. The descriptions are kept in one place, the end of
/// `sql/functions.sql` (generated from docs/reference, see docs.rs), and the update script to 1.0.0 carries the same block (the upgrade
/// tests compare every function's description after the update with a fresh install's).
#[test]
fn every_function_has_a_comment() {
    let sql = |f: &str| std::fs::read_to_string(format!("{}/../../sql/{f}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let block = |s: &str| {
        let (a, b) = (s.find("-- <comments>").expect("a <comments> block"), s.find("-- </comments>").unwrap());
        s[a..b].to_string()
    };
    assert_eq!(
        block(&sql("functions.sql")),
        block(&sql("pg_seqgen--0.6.0--1.0.0.sql")),
        "the update script's COMMENTs differ from sql/functions.sql"
    );

    let c = Cluster::init("s_comments", 57921, &[]);
    c.start();
    let mut s = c.connect();
    s.batch_execute("CREATE EXTENSION pg_seqgen").unwrap();
    let rows = s
        .query(
            "SELECT p.oid::regprocedure::text, p.pronamespace = 'seqgen'::regnamespace,
                    obj_description(p.oid, 'pg_proc')
               FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
               JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_seqgen'
              WHERE d.deptype = 'e' ORDER BY 1",
            &[],
        )
        .unwrap();
    let mut missing = vec![];
    let (mut user_facing, mut internal, mut in_seqgen) = (0, 0, 0);
    for r in &rows {
        let (f, private, comment): (String, bool, Option<String>) = (r.get(0), r.get(1), r.get(2));
        if private {
            in_seqgen += 1; // schema seqgen, not the user's: trigger functions of the catalog
            continue;
        }
        match comment {
            None => missing.push(f),
            Some(c) if c.starts_with("pg_seqgen (internal") => internal += 1,
            Some(c) => {
                assert!(c.len() <= 200 && !c.ends_with('.'), "{f}: a COMMENT is one short line: {c:?}");
                user_facing += 1
            }
        }
    }
    println!(
        "functions in the user's schema: {user_facing} user-facing and {internal} internal, all with a COMMENT; \
         {in_seqgen} more in schema seqgen"
    );
    assert!(missing.is_empty(), "functions without a COMMENT: {missing:#?}");
    assert!(user_facing >= 50, "only {user_facing} user-facing functions found");
    // item 3: one function per name, options as DEFAULTs, so a GRANT names each by its name
    // alone ("function name is not unique" for seqgen_next and seqgen_restart on 0.5.0)
    s.batch_execute("CREATE ROLE s_grantee").unwrap();
    let names: Vec<String> = s
        .query(
            "SELECT DISTINCT p.proname::text FROM pg_proc p
               JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
               JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_seqgen'
              WHERE p.pronamespace = 'public'::regnamespace ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let not_unique: Vec<String> = names
        .iter()
        .filter(|n| s.batch_execute(&format!("GRANT EXECUTE ON FUNCTION {n} TO s_grantee")).is_err())
        .cloned()
        .collect();
    println!("GRANT EXECUTE ON FUNCTION <name>: {} names, {} not unique", names.len(), not_unique.len());
    assert!(not_unique.is_empty(), "GRANT by name fails for {not_unique:?}");
}

/// Item 4: one NULL rule. Every administrative function given NULLs raises 22004 naming an
/// argument ("biz_tag must not be NULL"); draws and pure helpers are STRICT like `nextval` and
/// answer NULL. Every function in the user's schema that takes arguments is called with NULL
/// for each, so a new function cannot slip through. Gapless draws raise 22004 instead: a gapless
/// number is never NULL (it fills a column at commit).
#[test]
fn every_function_follows_one_null_rule() {
    let c = Cluster::init("s_nulls", 57922, &[]);
    c.start();
    let mut s = c.connect();
    s.batch_execute("CREATE EXTENSION pg_seqgen; SELECT seqgen_create('t')").unwrap();
    let strict = [
        "seqgen_next",
        "seqgen_next_batch",
        "seqgen_order_no",
        "seqgen_render",
        "seqgen_snowflake_at",
        "seqgen_snowflake_decode",
        "seqgen_snowflake53_at",
        "seqgen_snowflake53_decode",
        "seqgen_uuidv7_at",
        "seqgen_uuidv7_decode",
        "seqgen_check_digit_valid",
        "seqgen_template_unit",
        "seqgen_reveal",
        "seqgen_reveal_order_no",
        "seqgen_column_tag",
        "seqgen_encode",
        "seqgen_decode",
        "seqgen_encode_uuid",
        "seqgen_decode_uuid",
        "seqgen_encode_typed",
        "seqgen_decode_typed",
        "seqgen_encode_typeid",
        "seqgen_decode_typeid",
        "seqgen_next_code",
        "seqgen_reveal_code",
        "seqgen_code_is_valid",
        "seqgen_currval",
    ];
    let rows = s
        .query(
            "SELECT p.proname::text, p.proisstrict,
                    (SELECT string_agg('NULL::' || format_type(t, NULL), ', ' ORDER BY i)
                       FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a(t, i))
               FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
               JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_seqgen'
              WHERE d.deptype = 'e' AND p.pronamespace <> 'seqgen'::regnamespace AND p.pronargs > 0
                AND coalesce(obj_description(p.oid, 'pg_proc'), '') NOT LIKE 'pg_seqgen (internal%'
              ORDER BY 1, 3",
            &[],
        )
        .unwrap();
    let catalog = |s: &mut Client| -> String {
        s.query_one("SELECT (SELECT string_agg(a::text, ',' ORDER BY biz_tag) FROM seqgen.alloc a)", &[])
            .unwrap()
            .get::<_, Option<String>>(0)
            .unwrap_or_default()
    };
    let before = catalog(&mut s);
    let (mut nulls, mut errors) = (0, 0);
    for r in &rows {
        let (name, is_strict, args): (String, bool, String) = (r.get(0), r.get(1), r.get(2));
        // the rows that are not all NULL (none for a STRICT call: one NULL, or no rows)
        let sql = format!("SELECT count(*) FILTER (WHERE NOT (x IS NULL)) FROM {name}({args}) AS x");
        let got = s.query_one(&sql, &[]);
        if strict.contains(&name.as_str()) {
            assert!(is_strict, "{name} should be STRICT, like nextval");
            let answered: i64 = got.unwrap_or_else(|e| panic!("{sql}: {e:?}")).get(0);
            assert_eq!(answered, 0, "{sql} answered something");
            nulls += 1;
        } else {
            let e = got.expect_err(&format!("{sql} did nothing and said nothing"));
            assert_eq!(sqlstate(&e).as_deref(), Some("22004"), "{sql}: {e:?}");
            let msg = e.as_db_error().map(|d| d.message().to_string()).unwrap_or_default();
            assert!(msg.ends_with("must not be NULL"), "{sql}: the message names no argument: {msg}");
            errors += 1;
        }
        assert_eq!(catalog(&mut s), before, "{sql} changed the catalog");
    }
    println!("NULL arguments: {nulls} STRICT calls answered NULL, {errors} administrative calls raised 22004");
    assert!(errors >= 20 && nulls >= 10, "too few functions found: {errors} and {nulls}");
}

/// Item 6: error messages in PostgreSQL's style (its error message style guide): a primary
/// message that is short, starts in lower case and ends without a period, with the facts in a
/// DETAIL and the remedy in a HINT, each a sentence (a capital, and a period or, after an SQL
/// example, a semicolon). Read from the source, as docs.rs reads the SQLSTATE table: every
/// message, also those of conditions no test provokes.
#[test]
fn error_messages_follow_the_style_guide() {
    let source =
        std::fs::read_to_string(format!("{}/../../src/plumbing/error.rs", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let literal = |s: &str| -> Option<String> {
        let start = s.find('"')? + 1;
        let mut out = String::new();
        let mut chars = s[start..].chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.push(chars.next()?),
                '"' => return Some(out),
                c => out.push(c),
            }
        }
        None
    };
    let mut problems = vec![];
    let (mut primaries, mut sentences) = (0, 0);
    // #[error("...")], on one line or the next
    let lines: Vec<&str> = source.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let at = if line.trim_start().starts_with("#[error(\"") {
            line
        } else if line.trim() == "#[error(" {
            lines[i + 1]
        } else {
            continue;
        };
        let Some(m) = literal(at) else { continue };
        if m.starts_with('{') {
            continue; // a message made elsewhere (InvalidArgument, a wrapped error)
        }
        primaries += 1;
        // placeholders count as a short name
        let shown: String = m
            .split('{')
            .enumerate()
            .map(|(k, p)| if k == 0 { p } else { p.split_once('}').map_or(p, |x| x.1) })
            .collect();
        if shown.len() > 90 {
            problems.push(format!("primary message longer than 90 characters: {m:?}"));
        }
        if m.ends_with('.') || m.chars().next().is_some_and(char::is_uppercase) {
            problems.push(format!("primary message with a capital or a final period: {m:?}"));
        }
        if [": call ", "; use ", ": use "].iter().any(|r| m.contains(r)) {
            problems.push(format!("a remedy in the primary message (a HINT's job): {m:?}"));
        }
    }
    // the DETAIL and HINT texts: `=> "...".into()` and `format!("...")` in detail() and hint()
    let body = &source[source.find("pub fn detail").unwrap()..source.find("/// Raise this error").unwrap()];
    for line in body.lines().filter(|l| l.contains("=> ") && (l.contains(".into()") || l.contains("format!(\""))) {
        let Some(t) = literal(line.split_once("=> ").unwrap().1) else { continue };
        sentences += 1;
        if !t.chars().next().is_some_and(|c| c.is_uppercase() || c == '{' || c == '\'')
            || !(t.ends_with('.') || t.ends_with(';'))
        {
            problems.push(format!("a DETAIL or HINT that is not a sentence: {t:?}"));
        }
    }
    println!("error messages: {primaries} primary messages, {sentences} DETAIL and HINT texts checked");
    assert!(primaries >= 40 && sentences >= 40, "too few messages found: the parse is broken");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Items 2 and 7: a role granted a function as the docs say needs no grant on anything internal,
/// and no internal function is left in the user's schema. On 0.6.0 a table owner granted
/// `seqgen_gapless_attach` failed with "permission denied for function
/// public.seqgen_gapless_assign" (the trigger function its CREATE TRIGGER named with the
/// caller's rights), and one granted `seqgen_adopt` on `seqgen_adopt_floor`. Both are reached
/// by OID now, and check their caller themselves: the owner (or a role with TRIGGER) may, no
/// other role, and nobody can name them.
#[test]
fn granted_roles_need_nothing_internal() {
    let c = Cluster::init("s_internal", 57923, &[]);
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen;
         SELECT seqgen_create_gapless('inv');
         CREATE ROLE ops LOGIN; CREATE ROLE clerk LOGIN;
         GRANT USAGE, CREATE ON SCHEMA public TO ops, clerk;
         GRANT EXECUTE ON FUNCTION seqgen_gapless_attach, seqgen_adopt, seqgen_create TO ops, clerk;
         SELECT seqgen_grant('inv', 'ops'); SELECT seqgen_grant('inv', 'clerk');",
    );
    let mut ops = c.connect_as("ops");
    ops.batch_execute(
        "CREATE TABLE invoices (id bigint, no bigint);
         CREATE TABLE legacy (id bigserial PRIMARY KEY);
         INSERT INTO legacy DEFAULT VALUES;",
    )
    .unwrap();
    // another role, granted the function but not owning the table: refused, nothing made
    let mut clerk = c.connect_as("clerk");
    for (call, what) in [
        ("SELECT seqgen_gapless_attach('invoices', 'no', 'inv')", "attach"),
        ("SELECT seqgen_adopt('legacy_tag', 'legacy', 'id')", "adopt"),
    ] {
        let e = clerk.batch_execute(call).unwrap_err();
        assert_eq!(sqlstate(&e).as_deref(), Some("42501"), "{what} by a role that does not own the table: {e:?}");
    }
    assert_eq!(c.one_i64("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'invoices'::regclass"), 0);
    // the owner, granted only the user-facing functions: both work
    ops.batch_execute("SELECT seqgen_gapless_attach('invoices', 'no', 'inv')").unwrap();
    let start: i64 = ops.query_one("SELECT seqgen_adopt('legacy_tag', 'legacy', 'id')", &[]).unwrap().get(0);
    assert_eq!(start, 2, "the adopted column's tag starts above its value");
    ops.batch_execute("INSERT INTO invoices (id) VALUES (1), (2)").unwrap();
    let numbers: Vec<i64> =
        ops.query("SELECT no FROM invoices ORDER BY id", &[]).unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(numbers, [1, 2], "rows numbered at commit on a table its owner attached");
    // a role granted TRIGGER on the table may attach it, as it may create triggers on it
    ops.batch_execute("CREATE TABLE ledger (id bigint, no bigint); GRANT TRIGGER ON ledger TO clerk").unwrap();
    clerk.batch_execute("SELECT seqgen_gapless_attach('ledger', 'no', 'inv')").unwrap();
    // but not on a partitioned table with a partition it may not put triggers on (the trigger
    // is created as the superuser, and cloned to every partition: each is checked first)
    c.sql(
        "CREATE TABLE events (id bigint, no bigint) PARTITION BY RANGE (id);
         CREATE TABLE events_a PARTITION OF events FOR VALUES FROM (0) TO (100);
         ALTER TABLE events OWNER TO ops; GRANT TRIGGER ON events TO clerk",
    );
    let e = clerk.batch_execute("SELECT seqgen_gapless_attach('events', 'no', 'inv')").unwrap_err();
    let msg = e.as_db_error().map(|d| d.message().to_string()).unwrap_or_default();
    assert_eq!(sqlstate(&e).as_deref(), Some("42501"), "{e:?}");
    assert!(msg.contains("events_a"), "the refusal names the partition: {msg}");
    assert_eq!(
        c.one_i64("SELECT count(*) FROM pg_trigger WHERE tgrelid IN ('events'::regclass, 'events_a'::regclass)"),
        0
    );
    c.sql("GRANT TRIGGER ON events_a TO clerk");
    clerk.batch_execute("SELECT seqgen_gapless_attach('events', 'no', 'inv')").unwrap();
    // the internal functions: nobody but a superuser can name them (schema seqgen), and they
    // check their caller when reached (a role given the use of the schema for the test)
    let internal = [
        "SELECT seqgen.seqgen_gapless_create_trigger('invoices'::regclass, 'id', 'inv', NULL)",
        "SELECT seqgen.gapless_attach_targets('invoices', 'id', 'inv', NULL)",
        "SELECT seqgen.seqgen_adopt_column('segment', 'x', 'legacy', 'id', 10)",
    ];
    for call in internal {
        let e = clerk.batch_execute(call).unwrap_err();
        assert_eq!(sqlstate(&e).as_deref(), Some("42501"), "{call}: {e:?}");
        let msg = e.as_db_error().map(|d| d.message().to_string()).unwrap_or_default();
        assert!(msg.contains("schema seqgen"), "{call}: {msg}");
    }
    c.sql("CREATE ROLE nobody LOGIN; GRANT USAGE ON SCHEMA seqgen TO nobody");
    let mut nobody = c.connect_as("nobody");
    for call in internal {
        let e = nobody.batch_execute(call).unwrap_err();
        assert_eq!(sqlstate(&e).as_deref(), Some("42501"), "{call} by a role with no grant: {e:?}");
    }
    assert_eq!(
        c.one_i64(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'invoices'::regclass AND tgname <> 'seqgen_gapless_no'"
        ),
        0
    );
    // nothing internal in the user's schema
    let left_behind = c.one_i64(
        "SELECT count(*) FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
           JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_seqgen'
          WHERE d.deptype = 'e' AND p.pronamespace = 'public'::regnamespace
            AND (obj_description(p.oid, 'pg_proc') LIKE 'pg_seqgen (internal%' OR p.prorettype = 'trigger'::regtype)",
    );
    assert_eq!(left_behind, 0, "internal functions in the user's schema");
}
