//! The counters and the tags view (issue 31, item 8): `seqgen_stats()` accounts for every value
//! reserved (drawn, cached, or lost by cause) through evictions, restarts, drops, sessions' blocks
//! and batches; it counts the waits and gapless draws that timed out; `seqgen_stats_reset()`
//! starts it again; and `seqgen_tags` shows each role what it may see.

use std::time::Duration;

use seqgen_integration::*;

/// The counters, by column name.
struct Stats(postgres::Row);

impl Stats {
    fn read(c: &mut postgres::Client) -> Stats {
        Stats(c.query_one("SELECT * FROM seqgen_stats()", &[]).unwrap())
    }
    /// A reading that the allocator is not changing: two in a row, 200 ms apart, that agree (a
    /// segment it publishes while the counters are read may be in `cached` and not yet in
    /// `reserved`).
    fn settled(c: &mut postgres::Client) -> Stats {
        let cols = ["drawn", "reserved", "cached", "lost_eviction", "lost_change", "lost_session", "lost_period"];
        let mut last = Stats::read(c);
        for _ in 0..25 {
            std::thread::sleep(Duration::from_millis(200));
            let now = Stats::read(c);
            if cols.iter().all(|col| now.n(col) == last.n(col)) {
                return now;
            }
            last = now;
        }
        panic!("the counters kept changing for 5 s");
    }
    fn n(&self, col: &str) -> i64 {
        self.0.get(col)
    }
    fn ms(&self, col: &str) -> f64 {
        self.0.get(col)
    }
    /// reserved (+ what was cached at the last reset) = drawn + cached + lost by a slot
    fn balance(&self, cached_at_reset: i64) -> (i64, i64) {
        (
            self.n("reserved") + cached_at_reset,
            self.n("drawn")
                + self.n("cached")
                + self.n("lost_eviction")
                + self.n("lost_change")
                + self.n("lost_period"),
        )
    }
}

/// Wait until no other client backend is connected (a session's exit counts its blocks).
fn alone(c: &Cluster) {
    let mut s = c.connect();
    recovery_time(Duration::from_secs(10), || {
        s.query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get::<_, i64>(0)
            == 0
    });
}

#[test]
fn every_value_reserved_is_drawn_cached_or_lost_by_cause() {
    // 8 slots for 20 tags: evictions
    let c = Cluster::init("counters_balance", 57950, &["seqgen.max_tags = 8"]);
    c.start();
    c.sql("CREATE EXTENSION pg_seqgen");
    for t in 0..20 {
        c.sql(&format!("SELECT seqgen_create('t{t}', 50)"));
    }
    c.sql("SELECT seqgen_create('keyed', 10)");
    let mut ledger = Ledger::default();
    let mut received = 0i64;
    {
        // many tags in turn (blocks of values, evictions), a key, a batch
        let mut s = c.connect();
        for round in 0..6 {
            let ids: Vec<i64> = s
                .query(
                    // (each tag's values apart: tag i's value v as i * 10^9 + v)
                    &format!(
                        "SELECT (g % {0})::bigint * 1000000000 + seqgen_next('t' || (g % {0})) FROM generate_series(1, 400) g",
                        4 + round * 3
                    ),
                    &[],
                )
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            received += ids.len() as i64;
            ledger.add(ids);
            let ids: Vec<i64> = s
                .query("SELECT seqgen_next('keyed', 'k' || g) FROM generate_series(1, 5) g", &[])
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            received += ids.len() as i64;
            let batch: Vec<i64> = s
                .query("SELECT 1000000000 + seqgen_next_batch('t1', 120)", &[])
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            received += batch.len() as i64;
            ledger.add(batch);
        }
        // a restart and a drop throw away what shared memory cached for the tag (no less:
        // a prefetch may add a segment before they commit)
        let mut admin = c.connect();
        admin.batch_execute("SELECT seqgen_next('t2'), seqgen_next('t3')").unwrap();
        received += 2;
        let cached: i64 = admin
            .query_one("SELECT sum(cached)::bigint FROM seqgen_tags WHERE biz_tag IN ('t2', 't3')", &[])
            .unwrap()
            .get(0);
        let before = Stats::read(&mut admin).n("lost_change");
        admin.batch_execute("SELECT seqgen_restart('t2', 100000); SELECT seqgen_drop('t3')").unwrap();
        let lost = Stats::read(&mut admin).n("lost_change") - before;
        assert!(cached > 0 && lost >= cached, "a restart and a drop lost {lost} values, {cached} were cached");
    }
    ledger.assert_unique("values drawn around evictions, restarts and a drop");
    alone(&c);
    let mut s = c.connect();
    let st = Stats::settled(&mut s);
    let (reserved, accounted) = st.balance(0);
    println!(
        "received {received}; drawn {} reserved {} cached {} lost: eviction {} change {} session {}; evictions {} segments {} waits {}",
        st.n("drawn"),
        st.n("reserved"),
        st.n("cached"),
        st.n("lost_eviction"),
        st.n("lost_change"),
        st.n("lost_session"),
        st.n("evictions"),
        st.n("segments"),
        st.n("waits")
    );
    assert_eq!(reserved, accounted, "a value reserved is neither drawn, cached nor lost");
    // one session drew, no draw was repeated: what it received, and what its blocks left
    assert_eq!(
        st.n("drawn"),
        received + st.n("lost_session"),
        "drawn is what the session received and its blocks' rest"
    );
    for col in ["lost_eviction", "lost_change", "lost_session", "evictions", "segments", "waits"] {
        assert!(st.n(col) > 0, "{col} counted nothing");
    }
    assert!(st.ms("longest_wait") > 0.0 && st.ms("wait_time") >= st.ms("longest_wait"));
    assert_eq!(st.n("wait_timeouts"), 0);

    // a reset starts every counter at zero; the balance then counts what was cached
    let cached = st.n("cached");
    s.batch_execute("SELECT seqgen_stats_reset()").unwrap();
    let st = Stats::settled(&mut s);
    for col in ["drawn", "segments", "reserved", "lost_eviction", "lost_change", "lost_session", "evictions", "waits"] {
        assert_eq!(st.n(col), 0, "{col} after a reset");
    }
    assert_eq!(st.n("cached"), cached, "a reset changes what is cached");
    let n: i64 = s
        .query_one("SELECT count(seqgen_next('t' || (4 + g % 12))) FROM generate_series(1, 300) g", &[])
        .unwrap()
        .get(0);
    drop(s);
    alone(&c);
    let st = Stats::settled(&mut c.connect());
    let (reserved, accounted) = st.balance(cached);
    assert_eq!(reserved, accounted, "the balance after a reset");
    assert_eq!(st.n("drawn"), n + st.n("lost_session"));
    // the counters start again with the server (shared memory): one draw, one segment
    c.stop("fast");
    c.start();
    let mut s = c.connect();
    s.batch_execute("SELECT seqgen_next('t5')").unwrap();
    let st = Stats::settled(&mut s);
    assert_eq!(st.n("drawn"), 1, "after a restart");
    let (reserved, accounted) = st.balance(0);
    assert_eq!(reserved, accounted, "the balance after a restart");
    assert!(st.n("segments") >= 1 && st.n("lost_eviction") == 0, "after a restart");
}

#[test]
fn waits_and_gapless_draws_that_time_out_are_counted() {
    let c = Cluster::init("counters_waits", 57951, &["seqgen.allocation_timeout = 300"]);
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen;
         SELECT seqgen_create('w', 1);
         SELECT seqgen_create_gapless('inv');",
    );
    let mut s = c.connect();
    s.batch_execute("SELECT seqgen_next('w')").unwrap();
    // the tag's row locked: the allocator cannot reserve its next segment, a draw waits its
    // timeout and fails with 55P03
    let mut l = c.connect();
    l.batch_execute("BEGIN; SELECT * FROM seqgen.alloc WHERE biz_tag = 'w' FOR UPDATE").unwrap();
    let before = Stats::read(&mut s);
    let mut refused = 0;
    for _ in 0..20 {
        if let Err(e) = s.batch_execute("SELECT seqgen_next('w')") {
            assert_eq!(sqlstate(&e).as_deref(), Some("55P03"), "{e}");
            refused += 1;
            if refused == 2 {
                break;
            }
        }
    }
    l.batch_execute("ROLLBACK").unwrap();
    assert!(refused >= 1, "no draw waited for the locked row");
    let after = Stats::read(&mut s);
    assert_eq!(after.n("wait_timeouts") - before.n("wait_timeouts"), refused, "timeouts counted");
    assert!(after.ms("longest_wait") >= 250.0, "the longest wait: {} ms", after.ms("longest_wait"));

    // a gapless key held by an open transaction: another draw of it gives up (55P03)
    l.batch_execute("BEGIN; SELECT seqgen_gapless_next('inv')").unwrap();
    let e = s.batch_execute("SELECT seqgen_gapless_next('inv')").unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("55P03"), "{e}");
    l.batch_execute("COMMIT").unwrap();
    s.batch_execute("SELECT seqgen_gapless_next('inv')").unwrap();
    let st = Stats::read(&mut s);
    assert_eq!((st.n("gapless_draws"), st.n("gapless_timeouts")), (2, 1));
    assert!(st.ms("longest_gapless") >= 250.0, "the longest gapless write: {} ms", st.ms("longest_gapless"));
}

#[test]
fn the_tags_view_shows_each_role_what_it_may_see() {
    let c = Cluster::init("counters_view", 57952, &[]);
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen;
         CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN; CREATE ROLE carol LOGIN; CREATE ROLE watcher LOGIN;
         GRANT pg_monitor TO watcher;
         GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO alice, bob;",
    );
    let mut a = c.connect_as("alice");
    for sql in [
        "SELECT seqgen_create('a_open'), seqgen_create('a_secret'), seqgen_create('a_opaque')",
        "SELECT seqgen_make_opaque('a_opaque')",
        "SELECT seqgen_grant('a_open', 'bob'), seqgen_grant('a_opaque', 'bob')",
        "SELECT seqgen_next('a_open'), seqgen_next('a_opaque')",
    ] {
        a.batch_execute(sql).unwrap();
    }
    c.connect_as("bob").batch_execute("SELECT seqgen_create('b_own')").unwrap();
    let listed = |role: &str| -> Vec<(String, String, Option<i64>, Option<i64>)> {
        c.connect_as(role)
            .query("SELECT biz_tag, tag_owner, max_id, drawn FROM seqgen_tags ORDER BY biz_tag", &[])
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect()
    };
    let names =
        |rows: &[(String, String, Option<i64>, Option<i64>)]| rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>();
    let alice = listed("alice");
    assert_eq!(names(&alice), ["a_opaque", "a_open", "a_secret"]);
    assert!(alice.iter().all(|r| r.1 == "alice" && r.2.is_some()), "{alice:?}");
    let bob = listed("bob");
    assert_eq!(names(&bob), ["a_opaque", "a_open", "b_own"], "bob sees his own tag and those granted to him");
    // an opaque tag's counters to its owner only
    let opaque = bob.iter().find(|r| r.0 == "a_opaque").unwrap();
    assert_eq!((opaque.2, opaque.3), (None, None), "an opaque tag's counters shown to a drawer");
    assert_eq!(bob.iter().find(|r| r.0 == "a_open").unwrap().3, Some(1), "drawn");
    // carol has no grant and no EXECUTE: the view answers, with nothing
    assert!(listed("carol").is_empty(), "{:?}", listed("carol"));
    assert_eq!(names(&listed("watcher")), ["a_opaque", "a_open", "a_secret", "b_own"], "pg_monitor sees every tag");
    // a revoke takes the tag out of the view at once
    a.batch_execute("SELECT seqgen_revoke('a_open', 'bob')").unwrap();
    assert_eq!(names(&listed("bob")), ["a_opaque", "b_own"]);

    // seqgen_stats() for pg_monitor, not for everyone; its reset for superusers
    let denied = |role: &str, sql: &str| c.connect_as(role).batch_execute(sql).err().as_ref().and_then(sqlstate);
    assert_eq!(denied("watcher", "SELECT * FROM seqgen_stats()"), None);
    assert_eq!(denied("carol", "SELECT * FROM seqgen_stats()").as_deref(), Some("42501"));
    assert_eq!(denied("watcher", "SELECT seqgen_stats_reset()").as_deref(), Some("42501"));
    assert_eq!(
        denied("carol", "SELECT * FROM seqgen.seqgen_tag_rows()").as_deref(),
        Some("42501"),
        "schema seqgen stays private"
    );
}

#[test]
fn order_numbers_left_when_their_period_ends_are_counted() {
    let c = Cluster::init("counters_period", 57953, &[]).with_clock_shift();
    c.start();
    c.sql("CREATE EXTENSION pg_seqgen; SELECT seqgen_create('ord')");
    c.sql("SELECT seqgen_set_template('ord', 'D{yyyy}{MM}{dd}-{seq:6}')");
    let mut s = c.connect();
    // numbers drawn quickly: the blocks grow, and the last one is not used up
    s.batch_execute("SELECT seqgen_order_no('ord') FROM generate_series(1, 200)").unwrap();
    let before = Stats::read(&mut s);
    assert_eq!(before.n("lost_period"), 0);
    let cached: i64 = s
        .query_one("SELECT cached FROM seqgen_tags WHERE biz_tag = 'ord'", &[])
        .unwrap()
        .get::<_, Option<i64>>(0)
        .unwrap_or(0);
    // the next day: what is left of the day's blocks is never drawn
    c.set_clock_offset_ms(86_400_000);
    let first: String = s.query_one("SELECT seqgen_order_no('ord')", &[]).unwrap().get(0);
    assert!(first.ends_with("-000001"), "the new day's first number: {first}");
    drop(s);
    alone(&c);
    let st = Stats::settled(&mut c.connect());
    println!("lost_period {} (the day's cached numbers were {cached})", st.n("lost_period"));
    // (a draw that finds its block's period over has taken one of its numbers first, which
    // counts as drawn: one for the current block and one for a block prefetched for the day)
    assert!(cached > 0 && st.n("lost_period") >= cached - 2, "the numbers left of the day's blocks were not counted");
    let (reserved, accounted) = st.balance(0);
    assert_eq!(reserved, accounted, "the balance with a period ended");
}
