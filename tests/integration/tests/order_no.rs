//! Templated order numbers under concurrency, crashes and a clock stepped back across
//! midnight. Every test counts numbers issued twice.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use seqgen_integration::*;

fn texts(rows: Vec<postgres::Row>) -> Vec<String> {
    rows.iter().map(|r| r.get::<_, String>(0)).collect()
}

/// 8 sessions draw from a per-second template for several seconds: every number is unique,
/// the counter restarts at 1 in every second and never needs more than its 6 digits.
#[test]
fn per_second_counters_restart_and_stay_unique() {
    let c = Cluster::init("ord_seconds", 56301, &[]);
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen;
         SELECT seqgen_create('waybill', 200);
         SELECT seqgen_set_template('waybill', '{yy}{MM}{dd}{HH}{mm}{ss}{seq:6}', 'Asia/Shanghai');",
    );
    let conninfo = c.conninfo("postgres");
    let per_session = on_threads(8, move |_| {
        let mut cl = Client::connect(&conninfo, NoTls).unwrap();
        let mut got = vec![];
        let end = Instant::now() + Duration::from_millis(4500);
        while Instant::now() < end {
            got.extend(texts(cl.query("SELECT seqgen_order_no('waybill') FROM generate_series(1, 50)", &[]).unwrap()));
            std::thread::sleep(Duration::from_millis(2));
        }
        got
    });
    let all: Vec<String> = per_session.into_iter().flatten().collect();
    assert_unique_numbers("8 sessions, per-second template", &all);
    let mut periods: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for n in &all {
        assert_eq!(n.len(), 18, "{n}");
        periods.entry(&n[..12]).or_default().push(n[12..].parse().unwrap());
    }
    println!("{} periods (seconds), {} numbers", periods.len(), all.len());
    assert!(periods.len() >= 4, "expected to cross several second boundaries");
    for (p, counters) in &periods {
        let min = counters.iter().min().unwrap();
        let max = counters.iter().max().unwrap();
        assert_eq!(*min, 1, "period {p}: the counter did not restart at 1");
        assert!(*max <= 999_999, "period {p}: {max} needs more than 6 digits");
    }
}

/// A per-second template whose counter is full after 9 numbers: with
/// seqgen.order_no_overflow = wait, callers wait for the next second instead of failing.
#[test]
fn overflow_waits_for_the_next_second_when_asked() {
    let c = Cluster::init("ord_overflow", 56302, &[]);
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen;
         SELECT seqgen_create('tiny', 4);
         SELECT seqgen_set_template('tiny', '{HH}{mm}{ss}-{seq:1}', 'UTC', allow_repeats => true);",
    );
    let mut cl = c.connect();
    // by default a full counter is an error
    let mut err = None;
    for _ in 0..20 {
        if let Err(e) = cl.query_one("SELECT seqgen_order_no('tiny')", &[]) {
            err = Some(e);
            break;
        }
    }
    assert_eq!(sqlstate(&err.expect("never overflowed")).as_deref(), Some("2200H"));
    cl.batch_execute("SET seqgen.order_no_overflow = wait").unwrap();
    let started = Instant::now();
    let got = texts(cl.query("SELECT seqgen_order_no('tiny') FROM generate_series(1, 30)", &[]).unwrap());
    assert_unique_numbers("30 numbers at 9 per second", &got);
    let seconds: HashSet<&str> = got.iter().map(|n| &n[..6]).collect();
    assert!(seconds.len() >= 4, "30 numbers at 9 per second need at least 4 seconds: {seconds:?}");
    assert!(started.elapsed() >= Duration::from_secs(2));
}

/// Daily numbers under 8-session load, the server stopped with `-m immediate` and then killed
/// with SIGKILL, restarted each time within the same day: no daily number is issued twice.
#[test]
fn daily_numbers_survive_crashes() {
    let c = Cluster::init("ord_crash", 56303, &[]);
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen;
         SELECT seqgen_create('order', 50);
         SELECT seqgen_set_template('order', 'SN{yyyy}{MM}{dd}{seq:8}{check}');",
    );
    let mut all: Vec<String> = vec![];
    for how in ["immediate", "kill9"] {
        let stop = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (conninfo, stop) = (c.conninfo("postgres"), stop.clone());
                std::thread::spawn(move || {
                    let mut cl = Client::connect(&conninfo, NoTls).unwrap();
                    let mut got = vec![];
                    while !stop.load(Ordering::Relaxed) {
                        match cl.query("SELECT seqgen_order_no('order') FROM generate_series(1, 40)", &[]) {
                            Ok(rows) => got.extend(texts(rows)),
                            Err(_) => break,
                        }
                    }
                    got
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(1500));
        if how == "kill9" {
            c.kill9()
        } else {
            c.stop("immediate")
        }
        stop.store(true, Ordering::Relaxed);
        for h in handles {
            all.extend(h.join().unwrap());
        }
        println!("after the {how} stop: {} numbers", all.len());
        c.start();
    }
    all.extend(texts(c.connect().query("SELECT seqgen_order_no('order') FROM generate_series(1, 3000)", &[]).unwrap()));
    assert!(all.len() > 20_000, "too little load: {}", all.len());
    assert_unique_numbers("daily numbers across an immediate shutdown and a SIGKILL", &all);
}

/// Under the clock shift the server clock runs into a new day, then is stepped back 10 minutes
/// (to the day before): numbers stay in the new day (the period never moves backwards) and
/// none is issued twice; a restart with the clock still behind midnight continues in the new
/// day too.
#[test]
fn clock_stepped_back_across_midnight() {
    let c = Cluster::init("ord_midnight", 56304, &[]).with_clock_shift();
    // the server's clock starts a minute before the next UTC midnight; once the sessions run
    // it is moved to 10 s before, and once they have drawn in the old day, to 0.5 s before
    // (each move is forward, so the only backward step is the one under test)
    let real_ms = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let midnight = (real_ms() / 86_400_000 + 1) * 86_400_000;
    let before_midnight = |ms: i64| midnight - ms - real_ms();
    c.set_clock_offset_ms(before_midnight(60_000));
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen;
         SELECT seqgen_create('order', 20);
         SELECT seqgen_set_template('order', 'D{yyyy}{MM}{dd}-{seq:6}');",
    );
    // every server process sees the shifted clock: the allocation worker's last cycle is
    // stamped with the same clock as the backends' now() (0.1.0's libfaketime set-up left the
    // worker on the real clock, hours away)
    let worker_skew = |c: &Cluster| -> f64 {
        c.connect()
            .query_one(
                "SELECT abs(extract(epoch FROM (SELECT last_cycle FROM seqgen_worker_status()) - now()))::float8",
                &[],
            )
            .unwrap()
            .get(0)
    };
    std::thread::sleep(Duration::from_millis(1100));
    let skew = worker_skew(&c);
    println!("worker and backends {skew:.3} s apart under the clock shift");
    assert!(skew < 3.0, "the worker's clock is {skew} s away from the backends'");
    let day = |ms: i64| {
        let days = ms.div_euclid(86_400_000);
        // civil date from days since 1970-01-01 (Howard Hinnant's algorithm)
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
        format!("D{y:04}{m:02}{d:02}")
    };
    let (old_day, new_day) = (day(midnight - 1), day(midnight));

    let stop = Arc::new(AtomicBool::new(false));
    // sessions that have drawn a number of the old day, of the new day
    let (saw_old, saw_new) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    c.set_clock_offset_ms(before_midnight(10_000));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (conninfo, stop) = (c.conninfo("postgres"), stop.clone());
            let (saw_old, saw_new, old_day, new_day) =
                (saw_old.clone(), saw_new.clone(), old_day.clone(), new_day.clone());
            std::thread::spawn(move || {
                let mut cl = Client::connect(&conninfo, NoTls).unwrap();
                let mut got: Vec<String> = vec![];
                let (mut old_seen, mut new_seen) = (false, false);
                while !stop.load(Ordering::Relaxed) {
                    got.extend(texts(
                        cl.query("SELECT seqgen_order_no('order') FROM generate_series(1, 20)", &[]).unwrap(),
                    ));
                    if !old_seen && got.iter().any(|n| n.starts_with(&old_day)) {
                        old_seen = true;
                        saw_old.fetch_add(1, Ordering::SeqCst);
                    }
                    if !new_seen && got.iter().any(|n| n.starts_with(&new_day)) {
                        new_seen = true;
                        saw_new.fetch_add(1, Ordering::SeqCst);
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                got
            })
        })
        .collect();
    let wait_for = |what: &str, count: &AtomicUsize| {
        let t0 = Instant::now();
        while count.load(Ordering::SeqCst) < 4 {
            assert!(t0.elapsed() < Duration::from_secs(60), "sessions never drew {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    wait_for("in the old day", &saw_old);
    c.set_clock_offset_ms(before_midnight(500));
    wait_for("in the new day", &saw_new);
    // run a second into the new day, then step the clock back 10 minutes
    std::thread::sleep(Duration::from_millis(1000));
    let behind = before_midnight(600_000 - 1000);
    c.set_clock_offset_ms(behind);
    std::thread::sleep(Duration::from_millis(2000));
    stop.store(true, Ordering::Relaxed);
    let per_session: Vec<Vec<String>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for got in &per_session {
        // once a session has seen the new day it never sees the old one again
        let first_new = got.iter().position(|n| n.starts_with(&new_day)).expect("never reached the new day");
        assert!(
            got[first_new..].iter().all(|n| n.starts_with(&new_day)),
            "a number went back to {old_day} after {new_day} began"
        );
        assert!(got[..first_new].iter().all(|n| n.starts_with(&old_day)));
    }
    let mut all: Vec<String> = per_session.into_iter().flatten().collect();

    // restart with the clock still 10 minutes behind midnight: the new day continues
    c.stop("immediate");
    c.start();
    let after = texts(c.connect().query("SELECT seqgen_order_no('order') FROM generate_series(1, 500)", &[]).unwrap());
    assert!(after.iter().all(|n| n.starts_with(&new_day)), "after the restart: {}", after[0]);
    // the worker wrote the new day's period (computed with the shifted clock)
    let key = c.one_i64("SELECT period_key FROM seqgen.order_counter WHERE biz_tag = 'order' AND unit = 'day'");
    assert_eq!(key, midnight / 1000, "period key of the counter");
    all.extend(after);
    assert_unique_numbers("clock stepped back across midnight, then a restart behind it", &all);
}
