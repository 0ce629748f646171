//! Operating tags like sequences under load: seqgen_alter, seqgen_restart, seqgen_adopt.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use seqgen_integration::*;

/// Values drawn (with "the call began after the event") and errors seen by one session.
type Drawn = (Vec<(bool, i64)>, Vec<String>);

/// `sessions` clients run `sql` (one bigint per row) until stopped; each call records whether
/// it started after `after` was set, and its values. Errors are collected.
struct Load {
    stop: Arc<AtomicBool>,
    handles: Vec<std::thread::JoinHandle<Drawn>>,
}

impl Load {
    fn start(c: &Cluster, sessions: usize, sql: &'static str, after: Arc<AtomicBool>) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let handles = (0..sessions)
            .map(|_| {
                let (conninfo, stop, after) = (c.conninfo("postgres"), stop.clone(), after.clone());
                std::thread::spawn(move || {
                    let mut cl = Client::connect(&conninfo, NoTls).unwrap();
                    let (mut got, mut errors) = (vec![], vec![]);
                    while !stop.load(Ordering::Relaxed) {
                        let started_after = after.load(Ordering::SeqCst);
                        match cl.query(sql, &[]) {
                            Ok(rows) => got.extend(rows.iter().map(|r| (started_after, r.get::<_, i64>(0)))),
                            Err(e) => errors.push(format!("{:?} {e}", sqlstate(&e))),
                        }
                    }
                    (got, errors)
                })
            })
            .collect();
        Load { stop, handles }
    }

    fn finish(self) -> Drawn {
        self.stop.store(true, Ordering::Relaxed);
        let (mut all, mut errors) = (vec![], vec![]);
        for h in self.handles {
            let (g, e) = h.join().unwrap();
            all.extend(g);
            errors.extend(e);
        }
        (all, errors)
    }
}

fn assert_unique(what: &str, values: &[(bool, i64)]) {
    let set: HashSet<i64> = values.iter().map(|v| v.1).collect();
    println!("{what}: {} values checked, {} duplicates", values.len(), values.len() - set.len());
    assert_eq!(set.len(), values.len(), "{what}: a value was issued twice");
}

/// seqgen_alter under 4 sessions of load: the new step shows in the segments reserved after
/// it (max_id moves by the new step), nothing is repeated.
#[test]
fn alter_under_load_changes_the_step_and_repeats_nothing() {
    let c = Cluster::init("op_alter", 56901, &["seqgen.adaptive_step = off"]);
    c.start();
    c.sql("CREATE EXTENSION pg_seqgen; SELECT seqgen_create('a', 100);");
    let load =
        Load::start(&c, 4, "SELECT seqgen_next('a') FROM generate_series(1, 50)", Arc::new(AtomicBool::new(false)));
    std::thread::sleep(Duration::from_millis(1000));
    c.sql("SELECT seqgen_alter('a', step => 5000)");
    // two segment switches after the change: max_id then moves in steps of 5000
    let mut cl = c.connect();
    let t0 = Instant::now();
    let (mut last, mut moves) = (c.one_i64("SELECT max_id FROM seqgen.alloc WHERE biz_tag = 'a'"), vec![]);
    while moves.len() < 3 && t0.elapsed() < Duration::from_secs(30) {
        let m: i64 = cl.query_one("SELECT max_id FROM seqgen.alloc WHERE biz_tag = 'a'", &[]).unwrap().get(0);
        if m != last {
            moves.push(m - last);
            last = m;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let (all, errors) = load.finish();
    println!("max_id moves after seqgen_alter: {moves:?}");
    assert!(errors.is_empty(), "errors: {:?}", &errors[..errors.len().min(5)]);
    // the first move may be a reservation that was already under way; the later ones use 5000
    // (several segments may be reserved between two reads of a busy machine: a multiple of it;
    // with the old step of 100 most moves would not be)
    assert!(moves.len() == 3 && moves[1..].iter().all(|&m| m > 0 && m % 5000 == 0), "max_id moves {moves:?}");
    assert_unique("seqgen_alter under load", &all);
}

/// seqgen_restart under 8 sessions of load: no value below the new start is drawn by a call
/// that began after the restart committed, nothing is repeated, and a restart at or below the
/// floor is refused.
#[test]
fn restart_under_load_moves_every_session_up() {
    let c = Cluster::init("op_restart", 56902, &[]);
    c.start();
    c.sql("CREATE EXTENSION pg_seqgen; SELECT seqgen_create('r', 1000);");
    let after = Arc::new(AtomicBool::new(false));
    let load = Load::start(&c, 8, "SELECT seqgen_next('r') FROM generate_series(1, 100)", after.clone());
    std::thread::sleep(Duration::from_millis(1000));
    let mut admin = c.connect();
    let floor = c.one_i64("SELECT max_id FROM seqgen.alloc WHERE biz_tag = 'r'");
    let e = admin.batch_execute(&format!("SELECT seqgen_restart('r', {floor})")).unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("22023"), "{e}");
    assert!(e.to_string().contains(&floor.to_string()) || format!("{e:?}").contains(&floor.to_string()));
    let start = 10_000_000_000i64;
    admin.batch_execute(&format!("SELECT seqgen_restart('r', {start})")).unwrap();
    after.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(1500));
    let (all, errors) = load.finish();
    assert!(errors.is_empty(), "errors: {:?}", &errors[..errors.len().min(5)]);
    let after_calls: Vec<i64> = all.iter().filter(|v| v.0).map(|v| v.1).collect();
    let below = after_calls.iter().filter(|&&v| v < start).count();
    println!(
        "seqgen_restart under 8 sessions: {} values from calls after the commit, {below} below {start}; min {:?}",
        after_calls.len(),
        after_calls.iter().min()
    );
    assert!(!after_calls.is_empty());
    assert_eq!(below, 0, "a call that began after the restart committed drew below the new start");
    assert_unique("seqgen_restart under load", &all);
}

/// seqgen_adopt on a bigserial and on an identity column while 4 sessions insert with the
/// column's DEFAULT: every insert succeeds (the primary key would reject a repeated id), ids
/// drawn after the switch are above every id before it.
#[test]
fn adopt_a_live_column() {
    let c = Cluster::init("op_adopt", 56903, &[]);
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen;
         CREATE TABLE t_serial (id bigserial PRIMARY KEY, v int);
         CREATE TABLE t_ident (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, v int);",
    );
    for (table, tag) in [("t_serial", "serial_ids"), ("t_ident", "ident_ids")] {
        let sql: &'static str = Box::leak(format!("INSERT INTO {table} (v) VALUES (1) RETURNING id").into_boxed_str());
        let load = Load::start(&c, 4, sql, Arc::new(AtomicBool::new(false)));
        std::thread::sleep(Duration::from_millis(1000));
        let before_max = c.one_i64(&format!("SELECT max(id) FROM {table}"));
        let mut admin = c.connect();
        let t0 = Instant::now();
        let mut tx = admin.transaction().unwrap();
        let start: i64 =
            tx.query_one(&format!("SELECT seqgen_adopt('{tag}', '{table}', 'id', 100)"), &[]).unwrap().get(0);
        tx.commit().unwrap();
        println!(
            "{table}: adopted in {} ms, starting at {start} (max id before: {before_max})",
            t0.elapsed().as_millis()
        );
        std::thread::sleep(Duration::from_millis(1500));
        let (all, errors) = load.finish();
        assert!(errors.is_empty(), "{table}: errors: {:?}", &errors[..errors.len().min(5)]);
        assert_unique(&format!("inserts into {table} across seqgen_adopt"), &all);
        let rows = c.one_i64(&format!("SELECT count(*) FROM {table}"));
        let distinct = c.one_i64(&format!("SELECT count(DISTINCT id) FROM {table}"));
        assert_eq!(rows, distinct);
        assert!(start > before_max);
        let drawn_after = c.one_i64(&format!("SELECT count(*) FROM {table} WHERE id >= {start}"));
        println!("{table}: {rows} rows, {drawn_after} with ids from the tag");
        assert!(drawn_after > 0, "{table}: no insert used the tag");
        let default: String = c
            .connect()
            .query_one(
                "SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = $1::text::regclass",
                &[&table],
            )
            .unwrap()
            .get(0);
        assert!(default.contains(&format!("seqgen_next('{tag}'")), "{table}: default {default}");
    }
}
