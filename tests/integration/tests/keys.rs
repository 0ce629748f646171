//! Keyed counters (issue 19, part 1): `seqgen_next(tag, key)` counts per key, from the tag's
//! `start_with`, with a step that adapts to the key's own rate. 8 sessions draw from 10,000
//! keys at random (committed and rolled back) with an immediate shutdown while they draw: no
//! value repeats within a key, and the crash loses at most two segments of a key.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use seqgen_integration::*;

const KEYS: usize = 10_000;
const TAG_STEP: i64 = 1000;
const START: i64 = 100;

/// `per_session` draws of each of 8 sessions on random keys, each in a transaction that
/// commits or rolls back: every value returned, as (key, value, whether it came after the
/// crash). The server is shut down immediately once the sessions have drawn `crash_after`
/// values in all, while they go on drawing, and started again; `restarted` runs before the
/// sessions, which wait for it, reconnect.
fn draw(c: &Cluster, per_session: usize, crash_after: usize, restarted: impl FnOnce()) -> Vec<(usize, i64, bool)> {
    draw_with(c, "SELECT seqgen_next('ticket', $1)", KEYS, per_session, crash_after, restarted)
}

/// [`draw`] with `sql` (one value of key `$1`) over `keys` keys.
fn draw_with<T: postgres::types::FromSqlOwned + Send + 'static>(
    c: &Cluster,
    sql: &'static str,
    keys: usize,
    per_session: usize,
    crash_after: usize,
    restarted: impl FnOnce(),
) -> Vec<(usize, T, bool)> {
    let conninfo = c.conninfo("postgres");
    let drawn = Arc::new(AtomicUsize::new(0));
    let open = Arc::new(AtomicBool::new(true));
    let (d, o) = (drawn.clone(), open.clone());
    let sessions = std::thread::spawn(move || {
        on_threads(8, move |t| {
            let mut rng = StdRng::seed_from_u64(t as u64);
            let connect = || {
                let end = Instant::now() + Duration::from_secs(60);
                loop {
                    if o.load(Ordering::Acquire) {
                        if let Ok(cl) = Client::connect(&conninfo, NoTls) {
                            return cl;
                        }
                    }
                    assert!(Instant::now() < end, "no connection for 60 s");
                    std::thread::sleep(Duration::from_millis(50));
                }
            };
            let (mut cl, mut after, mut got) = (connect(), false, vec![]);
            while got.len() < per_session {
                let k = rng.random_range(0..keys);
                let drew = (|| -> Result<T, postgres::Error> {
                    let mut tx = cl.transaction()?;
                    let v: T = tx.query_one(sql, &[&format!("p{k}")])?.get(0);
                    if rng.random_bool(0.3) {
                        tx.rollback()?;
                    } else {
                        tx.commit()?;
                    }
                    Ok(v)
                })();
                match drew {
                    Ok(v) => {
                        got.push((k, v, after));
                        d.fetch_add(1, Ordering::Relaxed);
                    }
                    // the crash: a value returned to a rolled-back or unanswered commit still
                    // counts (pushed above); a lost connection comes back after the restart
                    Err(e) if cl.is_closed() || e.code().is_none_or(|c| c.code().starts_with("57")) => {
                        (cl, after) = (connect(), true);
                    }
                    Err(e) => panic!("draw failed: {e}"),
                }
            }
            got
        })
    });
    while drawn.load(Ordering::Relaxed) < crash_after {
        std::thread::sleep(Duration::from_millis(10));
    }
    open.store(false, Ordering::Release);
    c.stop("immediate");
    c.start();
    restarted();
    open.store(true, Ordering::Release);
    sessions.join().unwrap().into_iter().flatten().collect()
}

/// Per key: (max_id, step) in the catalog.
fn catalog(c: &Cluster) -> HashMap<usize, (i64, i64)> {
    c.connect()
        .query("SELECT substr(key, 2)::int, max_id, step FROM seqgen.key_counter WHERE biz_tag = 'ticket'", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get::<_, i32>(0) as usize, (r.get(1), r.get::<_, i32>(2) as i64)))
        .collect()
}

#[test]
fn keyed_counters_repeat_nothing_and_lose_at_most_two_segments_in_a_crash() {
    // every key in use fits in shared memory here (the eviction of keys is the fuzzer's, with
    // three slots): what is measured is the crash
    let c = Cluster::init("keys_crash", 57501, &["seqgen.max_tags = 16384", "seqgen.max_databases = 2"]);
    c.start();
    c.sql(&format!("CREATE EXTENSION pg_seqgen; SELECT seqgen_create('ticket', {TAG_STEP}, {START});"));

    // the catalog as the crash left it (read before any session draws again)
    let (mut at_crash, mut floor) = (HashMap::new(), None);
    let all = draw(&c, 5000, 20_000, || (at_crash, floor) = (catalog(&c), key_floor(&c, "ticket")));
    let before: Vec<(usize, i64)> = all.iter().filter(|x| !x.2).map(|x| (x.0, x.1)).collect();
    let after: Vec<(usize, i64)> = all.iter().filter(|x| x.2).map(|x| (x.0, x.1)).collect();
    assert!(!after.is_empty() && before.len() >= 20_000, "{} before the crash, {} after", before.len(), after.len());

    let mut per_key: HashMap<usize, Vec<i64>> = HashMap::new();
    for &(k, v) in before.iter().chain(&after) {
        per_key.entry(k).or_default().push(v);
    }
    let mut repeats = 0;
    for vs in per_key.values_mut() {
        vs.sort_unstable();
        let n = vs.len();
        vs.dedup();
        repeats += n - vs.len();
    }
    println!(
        "{} draws ({} before the crash) on {} of {KEYS} keys: {repeats} values issued twice within a key",
        before.len() + after.len(),
        before.len(),
        per_key.len()
    );
    assert_eq!(repeats, 0);

    // every key starts at the tag's start_with; after the crash a key resumes above what it
    // had reserved, so what it loses is what it had reserved and not drawn
    let mut highest_before: HashMap<usize, i64> = HashMap::new();
    for &(k, v) in &before {
        let h = highest_before.entry(k).or_insert(v);
        *h = (*h).max(v);
    }
    let (mut lost_total, mut lost_max, mut step_total) = (0i64, 0i64, 0i64);
    // a new key starts at start_with, or above the floor that covered the new keys at the crash
    // (their rows' commits did not wait for the flush: see the test below)
    let new_after = floor.unwrap_or(0).max(START - 1) + 1;
    for (k, vs) in &per_key {
        // a key the crash met before its first value was returned lost its first values
        let Some(&(max_id, step)) = at_crash.get(k) else {
            // before the crash: at most its first segment (two values; a second segment would
            // have waited for a flushed commit of its row); after it: from just above the floor
            let of_k = |after: bool| all.iter().filter(move |x| x.0 == *k && x.2 == after).map(|x| x.1);
            assert!(of_k(false).all(|v| v == START || v == START + 1), "key p{k}: above its first segment, no row");
            assert!(
                of_k(true).min().is_none_or(|v| v == new_after),
                "key p{k}, without a row at the crash, went on at {:?} (start_with {START}, floor {floor:?})",
                of_k(true).min()
            );
            continue;
        };
        let high = highest_before.get(k).copied().unwrap_or(START - 1);
        assert!(vs[0] >= START && (vs[0] == START || high < START), "key p{k} starts at {}", vs[0]);
        let lost = max_id - high;
        assert!(lost <= 3 * step, "key p{k} lost {lost} values in the crash (last step {step})");
        // every value drawn after the crash is above the key's reservation at the crash
        assert!(vs.iter().filter(|&&v| v > high).all(|&v| v > max_id), "key p{k} reissued reserved values");
        lost_total += lost;
        lost_max = lost_max.max(lost);
        step_total += step;
    }
    let keys_before = at_crash.len() as i64;
    let mean_step = step_total as f64 / keys_before as f64;
    println!(
        "the crash: {keys_before} keys in use lost {lost_total} values in all, at most {lost_max} for one key \
         ({:.2} per key); their steps at the crash: mean {mean_step:.2} (the tag's step is {TAG_STEP})",
        lost_total as f64 / keys_before as f64
    );
    // keys drawn a few times each kept small steps: dense per key
    assert!(mean_step <= 8.0, "keys drawn a few times each reserved {mean_step:.1} values at a time");

    // per key, the committed and rolled-back values together leave only the crash's gap and
    // the unused rest of each key's segment: values are dense
    let gaps: i64 = per_key.values().map(|vs| vs[vs.len() - 1] - vs[0] + 1 - vs.len() as i64).sum();
    println!("values never returned below each key's highest: {gaps} in all (the crash's)");
    assert!(gaps <= lost_total);
}

#[test]
fn keyed_counters_refuse_bad_input_and_follow_the_tag() {
    let c = Cluster::init("keys_misc", 57502, &[]);
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen; SELECT seqgen_create('t', 10, 5); SELECT seqgen_create('o', 10);
         SELECT seqgen_make_opaque('o'); SELECT seqgen_create_gapless('g');
         CREATE ROLE keys_app LOGIN; GRANT EXECUTE ON FUNCTION seqgen_next(text, text) TO keys_app;",
    );
    let mut a = c.connect();
    let one = |a: &mut Client, sql: &str| -> Result<i64, String> {
        a.query_one(sql, &[]).map(|r| r.get::<_, i64>(0)).map_err(|e| {
            format!("{} {}", sqlstate(&e).unwrap_or_default(), e.as_db_error().map(|d| d.message()).unwrap_or_default())
        })
    };
    assert_eq!(one(&mut a, "SELECT seqgen_next('t', 'a')"), Ok(5));
    assert_eq!(one(&mut a, "SELECT seqgen_next('t', 'a')"), Ok(6));
    assert_eq!(one(&mut a, "SELECT seqgen_next('t', 'b')"), Ok(5));
    // the tag's own counter is another one
    assert_eq!(one(&mut a, "SELECT seqgen_next('t')"), Ok(5));
    // the keys on demand: a's next value is 7 (its first segment was 5 and 6; the draw of 6
    // asked for the next one, which comes in the background)
    let status = |a: &mut Client| {
        a.query("SELECT key, max_id, next_value, loaded FROM seqgen_key_status('t') ORDER BY key", &[])
            .unwrap()
            .iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1), r.get::<_, Option<i64>>(2), r.get::<_, bool>(3)))
            .collect::<Vec<_>>()
    };
    recovery_time(Duration::from_secs(10), || status(&mut a)[0].2.is_some());
    let rows = status(&mut a);
    println!("seqgen_key_status('t'): {rows:?}");
    assert_eq!(rows.iter().map(|r| (r.0.as_str(), r.3)).collect::<Vec<_>>(), [("a", true), ("b", true)]);
    assert_eq!(rows[0].2, Some(7));
    let one_key = a.query("SELECT key FROM seqgen_key_status('t', 'b')", &[]).unwrap();
    assert_eq!(one_key.len(), 1);
    let e = a.query("SELECT * FROM seqgen_key_status(NULL)", &[]).unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("22004"), "{e}");
    // a tag that does not exist is an error, not zero rows (issue 31, item 7)
    let e = a.query("SELECT * FROM seqgen_key_status('nope')", &[]).unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("42704"), "{e}");
    // keys name tenants: a role that may not draw from the tag sees none of them (42501), one
    // granted the tag sees them
    a.batch_execute(
        "CREATE ROLE keys_peer; GRANT EXECUTE ON FUNCTION seqgen_key_status(text, text) TO keys_peer;
         SET ROLE keys_peer",
    )
    .unwrap();
    let e = a.query("SELECT * FROM seqgen_key_status('t')", &[]).unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("42501"), "{e}");
    a.batch_execute("RESET ROLE; SELECT seqgen_grant('t', 'keys_peer'); SET ROLE keys_peer").unwrap();
    assert_eq!(a.query("SELECT * FROM seqgen_key_status('t')", &[]).unwrap().len(), 2);
    a.batch_execute("RESET ROLE").unwrap();
    let refused = [
        (&*format!("SELECT seqgen_next('t', '{}')", "x".repeat(129)), "22023"),
        ("SELECT seqgen_next('t', E'a\\nb')", "22023"),
        ("SELECT seqgen_next('nope', 'a')", "42704"),
        ("SELECT seqgen_next('o', 'a')", "0A000"),
        ("SELECT seqgen_next('g', 'a')", "55000"),
    ];
    for (sql, want) in refused {
        let got = one(&mut a, sql).unwrap_err();
        println!("{sql}: {got}");
        assert!(got.starts_with(want), "{sql}: {got}");
    }
    // the key '' (seqgen_next's DEFAULT since 1.0) is the tag's own counter, not a key's
    let own = one(&mut a, "SELECT seqgen_next('t')").unwrap();
    let empty = one(&mut a, "SELECT seqgen_next('t', '')").unwrap();
    assert_eq!(empty, own + 1, "seqgen_next('t', '') after seqgen_next('t') = {own}");
    assert_eq!(one(&mut a, "SELECT seqgen_currval('t')"), Ok(empty));
    let unknown = one(&mut a, "SELECT seqgen_next('nope', 'k1')").unwrap_err();
    assert!(unknown.contains("\"nope\"") && !unknown.contains('\u{1f}'), "{unknown}");

    // privileges are the tag's
    let mut app = Client::connect(&format!("{} user=keys_app", c.conninfo("postgres")), NoTls).unwrap();
    let denied = one(&mut app, "SELECT seqgen_next('t', 'a')").unwrap_err();
    assert!(denied.starts_with("42501") && denied.contains("\"t\""), "{denied}");
    // a new key's first segment comes with its load only for a role allowed the tag: a refused
    // role's new keys make no key (no row, nothing of the owner's seqgen.max_keys_per_role)
    for i in 0..20 {
        let got = one(&mut app, &format!("SELECT seqgen_next('t', 'new{i}')")).unwrap_err();
        assert!(got.starts_with("42501"), "new{i}: {got}");
    }
    assert_eq!(
        c.one_i64("SELECT count(*) FROM seqgen.key_counter WHERE key LIKE 'new%'"),
        0,
        "keys made by a refused role"
    );
    // allowed through a role it is a member of: the allocator, which checks it, sees the
    // membership too (a new key drawn at once from the tag's start)
    c.sql("CREATE ROLE keys_grp; GRANT keys_grp TO keys_app; SELECT seqgen_grant('t', 'keys_grp')");
    assert_eq!(one(&mut app, "SELECT seqgen_next('t', 'grp1')"), Ok(5));
    assert_eq!(one(&mut app, "SELECT seqgen_next('t', 'grp1')"), Ok(6));
    // one allocator round trip per new key: the load brings the first segment, so the first
    // draw does not wait for it (before 1.0, a load and a segment: two waits a key)
    let waits = |a: &mut Client| a.query_one("SELECT waits FROM seqgen_stats()", &[]).unwrap().get::<_, i64>(0);
    let before = waits(&mut a);
    for i in 0..20 {
        assert_eq!(one(&mut app, &format!("SELECT seqgen_next('t', 'w{i}')")), Ok(5), "w{i}");
    }
    let waited = waits(&mut a) - before;
    println!("20 new keys: {waited} waits for the allocator");
    assert!(waited <= 20, "20 new keys waited {waited} times for the allocator: more than one round trip a key");
    c.sql("SELECT seqgen_revoke('t', 'keys_grp')");
    let got = one(&mut app, "SELECT seqgen_next('t', 'grp2')").unwrap_err();
    assert!(got.starts_with("42501"), "grp2 after the revoke: {got}");
    assert_eq!(c.one_i64("SELECT count(*) FROM seqgen.key_counter WHERE key = 'grp2'"), 0);
    c.sql("SELECT seqgen_grant('t', 'keys_app')");
    assert_eq!(one(&mut app, "SELECT seqgen_next('t', 'a')"), Ok(7));

    // a dropped tag's keys go with it, and a new tag of the same name starts them again
    c.sql("SELECT seqgen_drop('t')");
    assert!(one(&mut a, "SELECT seqgen_next('t', 'a')").unwrap_err().starts_with("42704"));
    assert_eq!(c.one_i64("SELECT count(*) FROM seqgen.key_counter"), 0);
    c.sql("SELECT seqgen_create('t', 10, 50)");
    assert_eq!(one(&mut a, "SELECT seqgen_next('t', 'a')"), Ok(50));

    // the counter rows cannot go back or be deleted by hand
    let mut su = c.connect();
    let e = su.batch_execute("UPDATE seqgen.key_counter SET max_id = 0").unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("23514"), "{e}");
    let e = su.batch_execute("DELETE FROM seqgen.key_counter").unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("0A000"), "{e}");
}

/// Order numbers per key (`{key}` templates): 8 sessions draw `seqgen_order_no('wb', key)` over
/// 10,000 keys at random (30% rolled back) with an immediate shutdown while they draw; then the
/// clock moves to the next day and every key starts again at 1. No number is issued twice,
/// every number carries its key, and a key loses in the crash only what it had reserved.
#[test]
fn keyed_order_numbers_restart_per_key_and_survive_a_crash() {
    // more keys than slots: idle keys are evicted while the sessions draw
    const ORDER_KEYS: usize = KEYS;
    let c =
        Cluster::init("keys_order", 57503, &["seqgen.max_tags = 4096", "seqgen.max_databases = 2"]).with_clock_shift();
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen; SELECT seqgen_create('wb', 1000); \
           SELECT seqgen_set_template('wb', '{key}-{yyyy}{MM}{dd}-{seq:6}', 'UTC');",
    );
    let day = |c: &Cluster| {
        let mut cl = c.connect();
        cl.query_one("SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')", &[]).unwrap().get::<_, String>(0)
    };
    // keep clear of midnight: the test's day must not end while it draws
    let secs_to_midnight = 86_400 - c.one_i64("SELECT extract(epoch FROM now())::int8 % 86400");
    if secs_to_midnight < 120 {
        std::thread::sleep(Duration::from_secs(secs_to_midnight as u64 + 1));
    }
    let today = day(&c);
    let mut at_crash: HashMap<String, i64> = HashMap::new();
    let counters = |c: &Cluster| -> HashMap<String, i64> {
        c.connect()
            .query("SELECT key, period_max FROM seqgen.key_order_counter WHERE biz_tag = 'wb'", &[])
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    };
    let all: Vec<(usize, String, bool)> =
        draw_with(&c, "SELECT seqgen_order_no('wb', $1)", ORDER_KEYS, 2500, 10_000, || at_crash = counters(&c));
    let texts: Vec<&String> = all.iter().map(|x| &x.1).collect();
    assert_unique_numbers("order numbers per key across a crash", &texts);
    // every number is its key's, of today, and counts within its key
    let mut per_key: HashMap<usize, Vec<(i64, bool)>> = HashMap::new();
    for (k, text, after) in &all {
        let head = format!("p{k}-{today}-");
        assert!(text.starts_with(&head) && text.len() == head.len() + 6, "{text} is not a number of key p{k} today");
        per_key.entry(*k).or_default().push((text[head.len()..].parse().unwrap(), *after));
    }
    let (mut lost_total, mut lost_max) = (0i64, 0i64);
    for (k, vs) in &per_key {
        let before: Vec<i64> = vs.iter().filter(|v| !v.1).map(|v| v.0).collect();
        let high = before.iter().copied().max().unwrap_or(0);
        let Some(&reserved) = at_crash.get(&format!("p{k}")) else {
            // first drawn after the crash (or nothing committed before it): starts at 1
            assert!(before.is_empty() || high <= 0, "key p{k}");
            assert_eq!(vs.iter().map(|v| v.0).min(), Some(1), "key p{k} did not start at 1");
            continue;
        };
        // numbers drawn after the crash are above what the key had reserved at the crash
        assert!(vs.iter().filter(|v| v.1).all(|v| v.0 > reserved), "key p{k} reissued a reserved number");
        let lost = reserved - high;
        // a key's blocks grow from 1 by doubling: what it had reserved and not drawn is
        // at most a few times what it drew
        assert!(lost <= 4 * before.len() as i64 + 4, "key p{k} lost {lost} numbers, having drawn {}", before.len());
        lost_total += lost;
        lost_max = lost_max.max(lost);
    }
    println!(
        "{} order numbers ({} before the crash) on {} of {ORDER_KEYS} keys: 0 issued twice; the crash lost \
         {lost_total} numbers over {} keys in use, at most {lost_max} for one key",
        all.len(),
        all.iter().filter(|x| !x.2).count(),
        per_key.len(),
        at_crash.len()
    );

    // the next day: every key starts again at 1, above nothing of yesterday
    c.set_clock_offset_ms(86_400_000);
    let tomorrow = day(&c);
    assert_ne!(tomorrow, today);
    let mut cl = c.connect();
    for k in (0..ORDER_KEYS).step_by(100) {
        for i in 1..=3 {
            let text: String = cl.query_one("SELECT seqgen_order_no('wb', $1)", &[&format!("p{k}")]).unwrap().get(0);
            assert_eq!(text, format!("p{k}-{tomorrow}-{i:06}"), "key p{k} on the next day");
        }
    }
    let day_rows = c.one_i64("SELECT count(DISTINCT period_key) FROM seqgen.key_order_counter WHERE key = 'p0'");
    assert_eq!(day_rows, 1, "one row per key and unit, moved to the new day");
    println!("the next day: {} keys each started again at 1", ORDER_KEYS / 100);
}

/// `key_floor` of tag `tag`, if set.
fn key_floor(c: &Cluster, tag: &str) -> Option<i64> {
    c.connect().query_one("SELECT key_floor FROM seqgen.alloc WHERE biz_tag = $1", &[&tag]).unwrap().get(0)
}

/// The first value of each of `keys` drawn once, from one session.
fn first_values(c: &Cluster, tag: &str, keys: &[String]) -> Vec<i64> {
    let mut cl = c.connect();
    keys.iter().map(|k| cl.query_one("SELECT seqgen_next($1, $2)", &[&tag, k]).unwrap().get(0)).collect()
}

/// New keys under the tag's lease (issue 33): the allocator commits their rows without waiting
/// for the flush, covered by the tag's `key_floor`, flushed before. The WAL writer is held off
/// here (`wal_writer_delay = 10s`), so an immediate shutdown right after loses the rows of the
/// last keys made; each of those keys, drawn again, goes on above the floor, not from
/// `start_with` again. (With the floor ignored, a lost key starts at `start_with` and repeats
/// its first value: checked once by hand, see the closing note of issue 33.)
#[test]
fn new_keys_whose_rows_a_crash_lost_go_on_above_the_floor() {
    let c = Cluster::init("keys_floor", 57504, &["seqgen.max_databases = 2", "wal_writer_delay = '10s'"]);
    c.start();
    c.sql(&format!("CREATE EXTENSION pg_seqgen; SELECT seqgen_create('born', {TAG_STEP}, {START});"));
    // the first new key starts the lease: its own commit, and the floor's, are flushed
    let first: i64 = first_values(&c, "born", &["k0".to_string()])[0];
    assert_eq!(first, START);
    // (by the first key's first segment: two values)
    assert_eq!(key_floor(&c, "born"), Some(START + 1), "the lease raised the floor");
    let keys: Vec<String> = (1..=400).map(|i| format!("k{i}")).collect();
    let before = first_values(&c, "born", &keys);
    assert!(before.iter().all(|&v| v == START), "new keys under the lease start at start_with");
    c.stop("immediate");
    c.start();
    let kept = c.one_i64("SELECT count(*) FROM seqgen.key_counter WHERE biz_tag = 'born' AND key <> 'k0'");
    let lost = keys.len() as i64 - kept;
    println!("an immediate shutdown after {} new keys: the rows of {lost} of them were lost", keys.len());
    assert!(lost > 0, "the crash lost no row: the window under test was not met");
    let floor = key_floor(&c, "born").expect("the floor after the crash");
    assert_eq!(floor, START + 1, "the floor at the crash");
    let after = first_values(&c, "born", &keys);
    let repeats = before.iter().zip(&after).filter(|(b, a)| a <= b).count();
    println!("drawn again: {repeats} keys repeated a value; the lost ones went on at {}", floor + 1);
    assert_eq!(repeats, 0);
    // a key made after the crash starts above the floor too (its first lease starts there)
    assert_eq!(first_values(&c, "born", &["fresh".to_string()])[0], floor + 1);

    // only the commits of keys under a lease skip the flush: a reservation after them is
    // flushed, and survives an immediate shutdown (a fuzz seed found the allocator committing
    // without the flush for good once it had done so once)
    c.sql("SELECT seqgen_create('plain', 10)");
    let more: Vec<String> = (1..=50).map(|i| format!("m{i}")).collect();
    first_values(&c, "born", &more);
    let batch = c.one_i64("SELECT max(x) FROM seqgen_next_batch('plain', 2000) x");
    c.stop("immediate");
    c.start();
    let next = c.one_i64("SELECT seqgen_next('plain')");
    println!("a batch of 2,000 after new keys under a lease, then an immediate shutdown: next {next} after {batch}");
    assert!(next > batch, "the batch's reservation was lost in the crash: {next} after {batch}");

    // the failover runbook's advance raises the floor under new keys with the rest: a key the
    // old primary made under it, whose row the new one lacks, starts above the margin
    let floor = key_floor(&c, "born").expect("the floor");
    c.sql("SELECT seqgen_advance('born', 1000)");
    assert_eq!(key_floor(&c, "born"), Some(floor + 1000));
    assert_eq!(first_values(&c, "born", &["after_advance".to_string()])[0], floor + 1001);
}

/// A lease no new key was made under for two seconds is given back: the floor returns to
/// where it was, so keys made after a clean restart still start at `start_with`.
#[test]
fn an_idle_lease_is_given_back_and_new_keys_start_at_start_with_after_a_restart() {
    let c = Cluster::init("keys_lease", 57505, &["seqgen.max_databases = 2"]);
    c.start();
    c.sql(&format!("CREATE EXTENSION pg_seqgen; SELECT seqgen_create('lease', {TAG_STEP}, {START});"));
    let keys: Vec<String> = (0..50).map(|i| format!("a{i}")).collect();
    assert!(first_values(&c, "lease", &keys).iter().all(|&v| v == START));
    // (raised, or given back already on a slow machine: NULL only if never raised)
    assert!(key_floor(&c, "lease").is_some(), "no lease was taken");
    let back = recovery_time(Duration::from_secs(20), || key_floor(&c, "lease") == Some(START - 1));
    println!(
        "the lease was given back {:.1} s after the last new key (seqgen.key_floor_hold = 2s)",
        back.as_secs_f64()
    );
    // new keys for 3 s with seqgen.key_floor_hold = 0: every once-a-second round finds the
    // lease idle; one that meets a new key of the tag keeps it (given back then, the key would
    // start a lease above it, and the floor would stay up for good: every later new key would
    // start above start_with)
    c.sql("ALTER SYSTEM SET seqgen.key_floor_hold = 0");
    c.sql("SELECT pg_reload_conf()");
    std::thread::sleep(Duration::from_millis(200));
    let (t0, mut n) = (Instant::now(), 0);
    let mut cl = c.connect();
    while t0.elapsed() < Duration::from_secs(3) {
        let v: i64 = cl.query_one("SELECT seqgen_next('lease', $1)", &[&format!("c{n}")]).unwrap().get(0);
        assert_eq!(v, START, "new key c{n}");
        n += 1;
    }
    let back = recovery_time(Duration::from_secs(20), || key_floor(&c, "lease") == Some(START - 1));
    println!("{n} new keys in 3 s all started at start_with; the floor was back {:.1} s later", back.as_secs_f64());
    assert_eq!(key_floor(&c, "lease"), Some(START - 1));
    c.stop("fast");
    c.start();
    assert_eq!(first_values(&c, "lease", &["b0".to_string()])[0], START);
    // the keys made before go on above what they had reserved
    let reserved: Vec<i64> = keys
        .iter()
        .map(|k| c.one_i64(&format!("SELECT max_id FROM seqgen.key_counter WHERE biz_tag = 'lease' AND key = '{k}'")))
        .collect();
    let again = first_values(&c, "lease", &keys);
    assert!(again.iter().zip(&reserved).all(|(v, r)| v > r), "a key made before the restart repeated");
}

/// A clean stop gives the leases back: with `seqgen.key_floor_hold` at an hour no round of the
/// allocator lowers a floor, yet after a fast restart, a smart one, and the allocator stopped
/// alone (`pg_terminate_backend`), all within moments of new keys, the next new key starts at
/// `start_with` again, and the keys made before go on above what they had reserved. The first
/// fast stop comes while the allocator's commit of another tag's first new key waits for a
/// synchronous standby that does not exist: the stop cancels that wait, and the commit that
/// lowers both floors waits for the local flush only, or the stop would wait for good. An
/// immediate shutdown gives nothing back: the next new key starts above the floor.
#[test]
fn a_clean_stop_gives_the_leases_back() {
    let c = Cluster::init("keys_stop", 57507, &["seqgen.max_databases = 2", "seqgen.key_floor_hold = '1h'"]);
    c.start();
    c.sql(&format!(
        "CREATE EXTENSION pg_seqgen; SELECT seqgen_create('stop', {TAG_STEP}, {START}); \
         SELECT seqgen_create('other', {TAG_STEP}, {START});"
    ));
    let mut made: Vec<String> = vec![];
    let mut before: Vec<i64> = vec![];
    // (a fast or smart shutdown's SIGTERM may reach the allocator twice: to the process and to
    // its process group; the second must not cut the return short)
    for (round, how) in ["fast", "fast", "smart", "smart", "allocator"].iter().enumerate() {
        let keys: Vec<String> = (0..20).map(|i| format!("r{round}k{i}")).collect();
        let first = first_values(&c, "stop", &keys);
        assert!(first.iter().all(|&v| v == START), "{how}: new keys start at start_with: {first:?}");
        assert_eq!(key_floor(&c, "stop"), Some(START + 1), "{how}: the lease is held");
        let t = Instant::now();
        if *how == "allocator" {
            let pid = c.worker_pid();
            c.sql(&format!("SELECT pg_terminate_backend({pid})"));
            let back = recovery_time(Duration::from_secs(20), || key_floor(&c, "stop") == Some(START - 1));
            println!("the allocator terminated alone: the floor was back {:.2} s later", back.as_secs_f64());
        } else {
            let mut waiting = None;
            if round == 0 {
                // a standby that never answers, and the first new key of another tag: the
                // allocator's commit that raises that tag's floor waits for it (seen in
                // pg_stat_activity) when the stop comes
                c.sql("ALTER SYSTEM SET synchronous_standby_names = 'ghost'");
                c.sql("SELECT pg_reload_conf()");
                // (commits wait once the checkpointer has read the file again: the key's commit
                // must come after that, or it does not wait and the SyncRep poll below fails)
                std::thread::sleep(Duration::from_millis(500));
                let conninfo = c.conninfo("postgres");
                waiting = Some(std::thread::spawn(move || {
                    let mut cl = Client::connect(&conninfo, NoTls).unwrap();
                    cl.query_one("SELECT seqgen_next('other', 'o1')", &[]).map(|r| r.get::<_, i64>(0))
                }));
                recovery_time(Duration::from_secs(20), || {
                    c.connect()
                        .query_opt(
                            "SELECT 1 FROM pg_stat_activity WHERE backend_type = 'pg_seqgen allocator' \
                             AND wait_event = 'SyncRep'",
                            &[],
                        )
                        .unwrap()
                        .is_some()
                });
            }
            c.stop(how);
            let stopped = t.elapsed();
            assert!(stopped < Duration::from_secs(30), "{how}: the stop took {stopped:?}");
            if let Some(w) = waiting {
                let got = w.join().unwrap();
                assert!(got.is_err(), "the draw that waited for the standby got {got:?}");
            }
            c.start();
            if round == 0 {
                c.sql("ALTER SYSTEM RESET synchronous_standby_names");
                c.sql("SELECT pg_reload_conf()");
            }
            println!(
                "a {how} restart right after {} new keys: stopped in {:.2} s, back in {:.2} s",
                keys.len(),
                stopped.as_secs_f64(),
                t.elapsed().as_secs_f64()
            );
        }
        assert_eq!(key_floor(&c, "stop"), Some(START - 1), "{how}: the lease was given back");
        if round == 0 {
            // the lease the cut-short commit started was given back too
            assert_eq!(key_floor(&c, "other"), Some(START - 1), "the lease of the cycle the stop cut short");
        }
        made.extend(keys);
        before.extend(first);
    }
    // (the allocator started again after its termination)
    assert_eq!(first_values(&c, "stop", &["after".to_string()])[0], START);
    // the key whose making the stop cut short: its row stayed (never published) or not
    let o1 = first_values(&c, "other", &["o1".to_string()])[0];
    assert!(o1 >= START, "o1 drew {o1}");
    // every key made before goes on above what it had given out
    let again = first_values(&c, "stop", &made);
    assert!(again.iter().zip(&before).all(|(a, b)| a > b), "a key made before a stop repeated");
    // an immediate shutdown (a crash) gives nothing back: new keys start above the floor
    assert_eq!(key_floor(&c, "stop"), Some(START + 1));
    c.stop("immediate");
    c.start();
    assert_eq!(key_floor(&c, "stop"), Some(START + 1), "the floor after an immediate shutdown");
    assert_eq!(first_values(&c, "stop", &["crashed".to_string()])[0], START + 2);
}

/// New keys drawn at once from 8 sessions (the allocator makes those of one tag in one
/// statement), half of them by a role the tag was not granted to: every granted draw starts at
/// `start_with`, every refused one is 42501 and makes no key, and the owner's
/// `seqgen.max_keys_per_role` counts only the keys made.
#[test]
fn new_keys_made_at_once_for_allowed_and_refused_roles() {
    let c = Cluster::init("keys_mixed", 57506, &["seqgen.max_databases = 2", "seqgen.max_keys_per_role = 900"]);
    c.start();
    c.sql(&format!(
        "CREATE EXTENSION pg_seqgen; SELECT seqgen_create('mix', {TAG_STEP}, {START}); \
         CREATE ROLE in_app LOGIN; CREATE ROLE out_app LOGIN; \
         GRANT EXECUTE ON FUNCTION seqgen_next(text, text) TO in_app, out_app; \
         SELECT seqgen_grant('mix', 'in_app');"
    ));
    const PER: usize = 200;
    let conninfo = c.conninfo("postgres");
    let got = on_threads(8, move |t| {
        let role = if t % 2 == 0 { "in_app" } else { "out_app" };
        let mut cl = Client::connect(&format!("{conninfo} user={role}"), NoTls).unwrap();
        (0..PER)
            .map(|i| {
                let r = cl.query_one("SELECT seqgen_next('mix', $1)", &[&format!("s{t}-{i}")]);
                r.map(|r| r.get::<_, i64>(0)).map_err(|e| sqlstate(&e).unwrap_or_default())
            })
            .collect::<Vec<_>>()
    });
    for (t, results) in got.iter().enumerate() {
        if t % 2 == 0 {
            assert!(results.iter().all(|r| r == &Ok(START)), "session {t} (granted): {:?}", &results[..5]);
        } else {
            assert!(
                results.iter().all(|r| r == &Err("42501".to_string())),
                "session {t} (refused): {:?}",
                &results[..5]
            );
        }
    }
    let keys = c.one_i64("SELECT count(*) FROM seqgen.key_counter WHERE biz_tag = 'mix'");
    let refused_made = c.one_i64("SELECT count(*) FROM seqgen.key_counter WHERE biz_tag = 'mix' AND key ~ '^s[1357]-'");
    println!("8 sessions, 1,600 new keys at once, half refused: {keys} keys made, {refused_made} of refused draws");
    assert_eq!((keys, refused_made), (4 * PER as i64, 0));
    // the keys made count toward the bound (900), the refused ones did not: 100 more fit
    let mut cl = c.connect_as("in_app");
    for i in 0..100 {
        cl.query_one("SELECT seqgen_next('mix', $1)", &[&format!("more{i}")]).unwrap();
    }
    let e = cl.query_one("SELECT seqgen_next('mix', 'one_too_many')", &[]).unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("53400"), "{e}");
}
