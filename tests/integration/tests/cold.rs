//! Cold paths (issue 33): a new session's first draw of a tag that shared memory holds is
//! answered from the grants kept in the tag's slot, without reading the catalog. Each test
//! here is a guarantee of the privileges that must hold all the same: a revoke, an owner change,
//! a drop and re-creation, a role membership taken back, a grant not committed yet.

use std::time::Duration;

use seqgen_integration::*;

/// A new session of `role` draws from `tag` (and from its key `k` when `key`): the SQLSTATE of
/// the failure, `None` when it drew.
fn fresh_draw(c: &Cluster, role: &str, tag: &str, key: bool) -> Option<String> {
    let mut s = c.connect_as(role);
    let sql = if key { format!("SELECT seqgen_next('{tag}', 'k')") } else { format!("SELECT seqgen_next('{tag}')") };
    s.query_one(&sql, &[]).err().as_ref().and_then(sqlstate)
}

/// While another session holds `seqgen.alloc` locked, can a new session of `role` draw from
/// `tag`? (A draw that reads the catalog waits for the lock, and gives up after 300 ms.)
fn served_with_catalog_locked(c: &Cluster, role: &str, tag: &str) -> Result<(), String> {
    let mut l = c.connect();
    l.batch_execute("BEGIN; LOCK TABLE seqgen.alloc IN ACCESS EXCLUSIVE MODE").unwrap();
    let mut s = c.connect_as(role);
    let r = s.batch_execute(&format!("SET lock_timeout = '300ms'; SELECT seqgen_next('{tag}')"));
    l.batch_execute("ROLLBACK").unwrap();
    r.map_err(|e| sqlstate(&e).unwrap_or_else(|| e.to_string()))
}

#[test]
fn first_draws_from_shared_grants_keep_every_privilege_guarantee() {
    let c = Cluster::init("cold_grants", 57940, &[]);
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen;
         CREATE ROLE owner1 LOGIN; CREATE ROLE owner2 LOGIN; CREATE ROLE drawer LOGIN;
         CREATE ROLE other LOGIN; CREATE ROLE member LOGIN;
         GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO owner1, owner2, drawer, other, member;",
    );
    c.connect_as("owner1").batch_execute("SELECT seqgen_create('g'); SELECT seqgen_grant('g', 'drawer')").unwrap();

    // the tag and its key in shared memory, their grants kept by the first session's draw
    assert_eq!(fresh_draw(&c, "drawer", "g", false), None);
    assert_eq!(fresh_draw(&c, "drawer", "g", true), None);
    // a new session's first draw reads no catalog now: it is served with the catalog locked
    assert_eq!(served_with_catalog_locked(&c, "drawer", "g"), Ok(()), "a first draw read the catalog");
    // and what the slot keeps answers for every role by its own memberships
    assert_eq!(fresh_draw(&c, "other", "g", false).as_deref(), Some("42501"), "drawn without a grant");
    assert_eq!(fresh_draw(&c, "other", "g", true).as_deref(), Some("42501"), "a key drawn without a grant");
    assert_eq!(
        served_with_catalog_locked(&c, "other", "g"),
        Err("42501".to_string()),
        "refused without the catalog too"
    );

    // a membership given, and taken back: new sessions, and a session that drew meanwhile
    c.sql("GRANT drawer TO member");
    assert_eq!(fresh_draw(&c, "member", "g", false), None, "a member of the grantee refused");
    let mut m = c.connect_as("member");
    m.batch_execute("SELECT seqgen_next('g')").unwrap();
    c.sql("REVOKE drawer FROM member");
    let r = m.query_one("SELECT seqgen_next('g')", &[]).err().as_ref().and_then(sqlstate);
    assert_eq!(r.as_deref(), Some("42501"), "drawn after the membership was taken back");
    assert_eq!(fresh_draw(&c, "member", "g", false).as_deref(), Some("42501"));

    // a revoke: every new session, for the tag and its key
    c.connect_as("owner1").batch_execute("SELECT seqgen_revoke('g', 'drawer')").unwrap();
    assert_eq!(fresh_draw(&c, "drawer", "g", false).as_deref(), Some("42501"), "drawn after its revoke");
    assert_eq!(fresh_draw(&c, "drawer", "g", true).as_deref(), Some("42501"), "a key drawn after its revoke");
    // and a grant again
    c.connect_as("owner1").batch_execute("SELECT seqgen_grant('g', 'drawer')").unwrap();
    assert_eq!(fresh_draw(&c, "drawer", "g", false), None, "refused after a grant");

    // a grant not committed yet, with the granting session drawing meanwhile (it reads the
    // catalog with its own change): no one else may draw until it commits, nor after it rolls back
    let mut o = c.connect_as("owner1");
    o.batch_execute("BEGIN; SELECT seqgen_grant('g', 'other'); SELECT seqgen_next('g'); SELECT seqgen_next('g', 'k')")
        .unwrap();
    assert_eq!(fresh_draw(&c, "other", "g", false).as_deref(), Some("42501"), "drawn on a grant not committed");
    assert_eq!(fresh_draw(&c, "other", "g", true).as_deref(), Some("42501"), "a key drawn on a grant not committed");
    o.batch_execute("ROLLBACK").unwrap();
    assert_eq!(fresh_draw(&c, "other", "g", false).as_deref(), Some("42501"), "drawn on a grant rolled back");
    // nor a revoke not committed keep the grantee out of the others' view of the slot
    o.batch_execute("BEGIN; SELECT seqgen_revoke('g', 'drawer'); SELECT seqgen_next('g')").unwrap();
    assert_eq!(fresh_draw(&c, "drawer", "g", false), None, "refused on a revoke not committed");
    o.batch_execute("ROLLBACK").unwrap();
    assert_eq!(fresh_draw(&c, "drawer", "g", false), None, "refused after a revoke rolled back");

    // an owner changed by hand (the catalog's trigger), and the old owner's new session
    assert_eq!(fresh_draw(&c, "owner1", "g", false), None);
    c.sql("UPDATE seqgen.alloc SET owner = 'owner2' WHERE biz_tag = 'g'");
    assert_eq!(fresh_draw(&c, "owner1", "g", false).as_deref(), Some("42501"), "the old owner drew");
    assert_eq!(fresh_draw(&c, "owner2", "g", false), None, "the new owner refused");

    // a tag dropped and created again by another role: the old owner's new session is refused
    c.connect_as("owner1").batch_execute("SELECT seqgen_create('d')").unwrap();
    assert_eq!(fresh_draw(&c, "owner1", "d", false), None);
    assert_eq!(fresh_draw(&c, "owner1", "d", true), None);
    c.sql("SELECT seqgen_drop('d')");
    c.connect_as("owner2").batch_execute("SELECT seqgen_create('d')").unwrap();
    assert_eq!(fresh_draw(&c, "owner2", "d", false), None);
    assert_eq!(fresh_draw(&c, "owner1", "d", false).as_deref(), Some("42501"), "the old owner drew the new tag");
    assert_eq!(fresh_draw(&c, "owner1", "d", true).as_deref(), Some("42501"), "the old owner drew the new tag's key");

    // a tag dropped and created again by another role in a transaction that draws from it and
    // rolls back: what it read of its own new row is not kept for anyone (the slot's grants
    // were stale, so the draw read the catalog)
    c.sql(
        "CREATE ROLE grp; CREATE ROLE gm LOGIN IN ROLE grp; GRANT grp TO owner1;
         GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO grp, gm;",
    );
    c.connect_as("owner1").batch_execute("SELECT seqgen_create('rb')").unwrap();
    assert_eq!(fresh_draw(&c, "owner1", "rb", false), None);
    assert_eq!(fresh_draw(&c, "gm", "rb", false).as_deref(), Some("42501"));
    c.sql("SELECT seqgen_grant('g', 'other')");
    let mut o = c.connect_as("owner1");
    o.batch_execute(
        "BEGIN; SELECT seqgen_drop('rb'); SET LOCAL ROLE grp; SELECT seqgen_create('rb'); SELECT seqgen_next('rb')",
    )
    .unwrap();
    assert_eq!(fresh_draw(&c, "gm", "rb", false).as_deref(), Some("42501"), "drawn on a re-creation not committed");
    o.batch_execute("ROLLBACK").unwrap();
    assert_eq!(fresh_draw(&c, "gm", "rb", false).as_deref(), Some("42501"), "drawn on a re-creation rolled back");
    assert_eq!(fresh_draw(&c, "owner1", "rb", false), None, "the owner refused after a re-creation rolled back");

    // the same rolled back to a savepoint: the answer the session cached from its own new row
    // (owned by grp) does not outlive the rollback
    let mut o = c.connect_as("owner1");
    o.batch_execute(
        "BEGIN; SAVEPOINT a; SELECT seqgen_drop('rb'); SET LOCAL ROLE grp; SELECT seqgen_create('rb'); \
         SELECT seqgen_next('rb'); ROLLBACK TO SAVEPOINT a; SET LOCAL ROLE grp",
    )
    .unwrap();
    let r = o.query_one("SELECT seqgen_next('rb')", &[]).err().as_ref().and_then(sqlstate);
    assert_eq!(r.as_deref(), Some("42501"), "drawn as grp after the re-creation was rolled back to its savepoint");
    o.batch_execute("ROLLBACK").unwrap();

    // granted to more roles than a slot keeps: read from the catalog each first time, and right
    c.sql("SELECT seqgen_create('many')");
    for i in 1..=10 {
        c.sql(&format!("CREATE ROLE m{i} LOGIN; GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO m{i}"));
        c.sql(&format!("SELECT seqgen_grant('many', 'm{i}')"));
    }
    for i in [1, 10] {
        assert_eq!(fresh_draw(&c, &format!("m{i}"), "many", false), None, "m{i} refused");
    }
    c.sql("SELECT seqgen_revoke('many', 'm10')");
    assert_eq!(fresh_draw(&c, "m10", "many", false).as_deref(), Some("42501"), "drawn after its revoke (10 grants)");
    println!("first draws answered from the slot's grants: every revoke, owner change and re-creation held");
}

/// A revoke through two-phase commit, and a grant prepared: while a transaction that changed
/// who may draw is prepared, the slot's grants are not used, and its COMMIT PREPARED (which runs
/// no code of pg_seqgen's) holds for new sessions.
#[test]
fn prepared_grants_and_revokes_hold_for_new_sessions() {
    let c = Cluster::init("cold_2pc", 57941, &["max_prepared_transactions = 4"]);
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen;
         CREATE ROLE r LOGIN; GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO r;
         SELECT seqgen_create('tp'); SELECT seqgen_grant('tp', 'r');",
    );
    assert_eq!(fresh_draw(&c, "r", "tp", false), None);
    c.connect().batch_execute("BEGIN; SELECT seqgen_revoke('tp', 'r'); PREPARE TRANSACTION 'rv'").unwrap();
    // prepared: the grant holds (the allocator cannot reserve while the prepared transaction
    // holds the row, 55P03, but the session may draw)
    let before = fresh_draw(&c, "r", "tp", false);
    assert!(matches!(before.as_deref(), None | Some("55P03")), "before the revoke committed: {before:?}");
    c.connect().batch_execute("COMMIT PREPARED 'rv'").unwrap();
    assert_eq!(fresh_draw(&c, "r", "tp", false).as_deref(), Some("42501"), "drawn after COMMIT PREPARED of a revoke");
    // and back to no catalog read once nothing is prepared (the allocator sees it within seconds)
    c.sql("SELECT seqgen_grant('tp', 'r')");
    assert_eq!(fresh_draw(&c, "r", "tp", false), None);
    // (a session that reads the grants from the catalog keeps them in the slot for the next)
    let t = recovery_time(Duration::from_secs(15), || {
        fresh_draw(&c, "r", "tp", false).is_none() && served_with_catalog_locked(&c, "r", "tp").is_ok()
    });
    println!("first draws served from the slot again {t:?} after the prepared revoke committed");
}

/// `seqgen.backend_cache_size`: a session that draws from more tags and keys than it may
/// remember forgets one for each new one, and draws on: every value once, each tag's values
/// rising, `seqgen_currval` and `seqgen_lastval` right, and a revoke holding for a tag it forgot
/// and drew again.
#[test]
fn a_session_past_its_cache_size_forgets_and_draws_on() {
    let c = Cluster::init("cold_evict", 57942, &[]);
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen;
         CREATE ROLE r LOGIN; GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO r;
         SELECT count(seqgen_create('e' || g, 10)) FROM generate_series(0, 99) g;
         SELECT count(seqgen_grant('e' || g, 'r')) FROM generate_series(0, 99) g;",
    );
    let mut s = c.connect_as("r");
    s.batch_execute("SET seqgen.backend_cache_size = 16").unwrap();
    let mut ledger = Ledger::default();
    let mut last = std::collections::HashMap::new();
    let mut last_key = 0;
    for round in 0..5 {
        // 100 tags and 100 keys of one of them in turn, three times a round: 6 times the cache
        for _ in 0..3 {
            let rows = s
                .query(
                    "SELECT g, seqgen_next('e' || g), seqgen_currval('e' || g), seqgen_next('e0', 'k' || g) \
                     FROM generate_series(0, 99) g",
                    &[],
                )
                .unwrap();
            for row in rows {
                let (g, v, cur, k): (i32, i64, i64, i64) = (row.get(0), row.get(1), row.get(2), row.get(3));
                assert_eq!(v, cur, "round {round}: seqgen_currval of e{g} is not the value just drawn");
                if let Some(before) = last.insert(g, v) {
                    assert!(v > before, "round {round}: e{g} drew {v} after {before}");
                }
                ledger.add([v * 1000 + i64::from(g), -(k * 1000 + i64::from(g)) - 1]);
                last_key = k;
            }
        }
        let lastval: i64 = s.query_one("SELECT seqgen_lastval()", &[]).unwrap().get(0);
        assert_eq!(lastval, last_key, "round {round}: seqgen_lastval is not the last key drawn");
    }
    ledger.assert_unique("values of 100 tags and 100 keys drawn through a cache of 16");
    // the value of a tag the session forgot is still its currval
    let v: i64 = s.query_one("SELECT seqgen_next('e1')", &[]).unwrap().get(0);
    s.batch_execute("SELECT count(seqgen_next('e' || g)) FROM generate_series(2, 99) g").unwrap();
    let cur: i64 = s.query_one("SELECT seqgen_currval('e1')", &[]).unwrap().get(0);
    assert_eq!(cur, v, "seqgen_currval of a tag the session forgot");
    // a tag the session forgot and resolved again, revoked meanwhile
    c.sql("SELECT seqgen_revoke('e5', 'r')");
    let r = s.query_one("SELECT seqgen_next('e5')", &[]).err().as_ref().and_then(sqlstate);
    assert_eq!(r.as_deref(), Some("42501"), "drawn after its revoke");
    println!("5 rounds of 100 tags and 100 keys through a session cache of 16: every value once, each tag rising");
}

/// Tags drawn in turn are answered from the session's map, whose entries keep 16-bit stand-ins
/// for the privilege stamp, the area's retirements and the statement time (32 bytes an entry).
/// Each must hold as the 64-bit stamps did: a role switched to (and back), a revoke, a drop
/// and re-creation under the session's blocks, and a block past its second.
#[test]
fn tags_drawn_in_turn_keep_every_guarantee_of_the_map() {
    let c = Cluster::init("cold_map", 57943, &[]);
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen;
         CREATE ROLE r1; CREATE ROLE r2;
         GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO r1, r2;
         SELECT seqgen_create(t) FROM unnest(ARRAY['a', 'b', 'c', 'd']) t;
         SELECT seqgen_grant(t, 'r1') FROM unnest(ARRAY['a', 'b', 'c']) t;
         SELECT seqgen_grant('a', 'r2');",
    );
    // `rows` draws of `tags` in turn, each value with its tag's index: (value, index)
    fn in_turn(s: &mut postgres::Client, tags: &[&str], rows: i32) -> Result<Vec<(i64, i64)>, String> {
        let tags: Vec<String> = tags.iter().map(|t| t.to_string()).collect();
        let n = tags.len() as i32;
        s.query(
            "SELECT g % $2, seqgen_next(($1::text[])[1 + g % $2]) FROM generate_series(0, $3 - 1) g",
            &[&tags, &n, &rows],
        )
        .map(|r| r.iter().map(|r| (r.get::<_, i64>(1), i64::from(r.get::<_, i32>(0)))).collect())
        .map_err(|e| sqlstate(&e).unwrap_or_else(|| e.to_string()))
    }
    let tag_index = |tags: &[&str], got: Vec<(i64, i64)>| -> Vec<i64> {
        got.into_iter()
            .map(|(v, i)| v * 4 + ["a", "b", "c", "d"].iter().position(|t| *t == tags[i as usize]).unwrap() as i64)
            .collect()
    };
    // a superuser session that switches roles, drawing three tags in turn (the last tag it
    // resolved is drawn apart: the other two come from the map)
    let mut s = c.connect();
    let mut ledger = Ledger::default();
    let abc = ["a", "b", "c"];
    s.batch_execute("SET ROLE r1").unwrap();
    for _ in 0..3 {
        ledger.add(tag_index(&abc, in_turn(&mut s, &abc, 120).unwrap()));
    }
    s.batch_execute("SET ROLE r2").unwrap();
    for (tags, what) in [(["a", "b"], "b"), (["c", "a"], "c")] {
        let r = in_turn(&mut s, &tags, 40).err();
        assert_eq!(r.as_deref(), Some("42501"), "r2 drew {what} from r1's map entry");
    }
    ledger.add(tag_index(&["a"], in_turn(&mut s, &["a"], 40).unwrap()));
    // back to r1: its entries are its own again
    s.batch_execute("SET ROLE r1").unwrap();
    ledger.add(tag_index(&abc, in_turn(&mut s, &abc, 120).unwrap()));
    // a revoke committed by another session
    c.sql("SELECT seqgen_revoke('b', 'r1')");
    assert_eq!(in_turn(&mut s, &abc, 120).err().as_deref(), Some("42501"), "b drawn after its revoke");
    ledger.add(tag_index(&["a", "c"], in_turn(&mut s, &["a", "c"], 120).unwrap()));
    ledger.assert_unique("three tags in turn across role switches and a revoke");

    // a tag dropped and created again under the session's blocks: what its block of the old
    // incarnation still holds is not handed out (it would repeat values of the new one, drawn
    // after it by another session). Only a block still fresh tests it (a block lives a
    // second), so the drop and the re-creation run on an open connection at once, and a try
    // that took too long is made again with another tag.
    let mut d = c.connect();
    d.batch_execute("SET seqgen.backend_block = 1024").unwrap();
    let mut admin = c.connect();
    let (mut after, mut names) = (vec![], (String::new(), String::new()));
    let mut fresh_tries = 0;
    for attempt in 0..3 {
        // two new tags each try: `tag` resolved first, so its companion is the last tag the
        // session resolves and `tag` is drawn from the map
        names = (format!("d{attempt}"), format!("e{attempt}"));
        let (tag, companion) = (&names.0, &names.1);
        admin.batch_execute(&format!("SELECT seqgen_create('{tag}'); SELECT seqgen_create('{companion}')")).unwrap();
        let tags = [tag.as_str(), companion.as_str()];
        let started = std::time::Instant::now();
        in_turn(&mut d, &tags, 400).unwrap();
        admin.batch_execute(&format!("SELECT seqgen_drop('{tag}'); SELECT seqgen_create('{tag}')")).unwrap();
        // (the gap from before the first statement to before the second is at least the gap
        // between their statement start times)
        let within = started.elapsed() < Duration::from_millis(900);
        after = in_turn(&mut d, &tags, 400).unwrap();
        let mut incarnation = Ledger::default();
        incarnation.add(after.iter().filter(|(_, i)| *i == 0).map(|(v, _)| *v));
        let q = format!("SELECT seqgen_next('{tag}') FROM generate_series(1, 2000)");
        incarnation.add(c.connect().query(&q, &[]).unwrap().iter().map(|r| r.get::<_, i64>(0)));
        incarnation.assert_unique("a tag after its re-creation, drawn in turn by a session with blocks of the old one");
        if within {
            fresh_tries += 1;
            break;
        }
    }
    assert_eq!(fresh_tries, 1, "no try re-created the tag within a second of the session's claims");

    // a block past its second: the next statement claims anew, above what others drew since
    // (the companion's block: its tag re-created, the first tag is the last one the session
    // resolved, so the companion comes from the map)
    let (tag, companion) = names;
    let last_c = after.iter().filter(|(_, i)| *i == 1).map(|(v, _)| *v).max().unwrap();
    let other: i64 = c.connect().query_one(&format!("SELECT seqgen_next('{companion}')"), &[]).unwrap().get(0);
    assert!(other > last_c);
    std::thread::sleep(Duration::from_millis(1100));
    let q = format!("SELECT seqgen_next('{tag}'), seqgen_next('{companion}')");
    let next_c: i64 = d.query_one(&q, &[]).unwrap().get(1);
    assert!(next_c > other, "a block claimed over a second before was handed out: {next_c} after {other}");
    println!("the map's 16-bit stamps: role switches, a revoke, a re-creation and a block's second held");
}
