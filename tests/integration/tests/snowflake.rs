//! Snowflake IDs under real concurrency and a real clock moving backwards (every server process shifted together), and
//! restarts with the clock behind. Every test counts duplicates.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use seqgen_integration::*;

/// Both snowflake generators have 41 bits of ms since the epoch (2024-01-01 by default).
const EPOCH_MS: i64 = 1_704_067_200_000;

/// A snowflake generator under test: `seqgen_snowflake()` (10 node bits, 12 sequence bits) or
/// `seqgen_snowflake53()` (4 and 8: every ID below 2^53).
#[derive(Clone, Copy)]
struct Gen {
    call: &'static str,
    status: &'static str,
    decode_fn: &'static str,
    node_bits: u32,
    seq_bits: u32,
    /// A node id this generator's layout holds.
    node: i64,
    max_id: i64,
}

const SNOWFLAKE: Gen = Gen {
    call: "seqgen_snowflake()",
    status: "seqgen_snowflake_status()",
    decode_fn: "seqgen_snowflake_decode",
    node_bits: 10,
    seq_bits: 12,
    node: 42,
    max_id: i64::MAX,
};

const SNOWFLAKE53: Gen = Gen {
    call: "seqgen_snowflake53()",
    status: "seqgen_snowflake53_status()",
    decode_fn: "seqgen_snowflake53_decode",
    node_bits: 4,
    seq_bits: 8,
    node: 11,
    max_id: (1 << 53) - 1,
};

impl Gen {
    fn decode(&self, id: i64) -> (i64, i64, i64) {
        let shift = self.node_bits + self.seq_bits;
        ((id >> shift) + EPOCH_MS, (id >> self.seq_bits) & ((1 << self.node_bits) - 1), id & ((1 << self.seq_bits) - 1))
    }

    fn rows(&self, n: usize) -> String {
        format!("SELECT {} FROM generate_series(1, {n})", self.call)
    }

    fn one(&self) -> String {
        format!("SELECT {}", self.call)
    }
}

fn server_ms(c: &mut Client) -> i64 {
    c.query_one("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8", &[]).unwrap().get(0)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Status {
    waits: i64,
    borrows: i64,
    refusals: i64,
    lag_ms: i64,
}

fn status(c: &mut Client, g: Gen) -> Status {
    let r = c.query_one(&format!("SELECT waits, borrows, refusals, lag_ms FROM {}", g.status), &[]).unwrap();
    Status { waits: r.get(0), borrows: r.get(1), refusals: r.get(2), lag_ms: r.get(3) }
}

/// 8 sessions, 500,000 IDs: all unique, strictly increasing within each session, carrying the
/// configured node id and a time within a second of the server's clock.
#[test]
fn concurrent_sessions_get_unique_increasing_ids() {
    concurrent_sessions(SNOWFLAKE, "sf_concurrency", 56201);
}

/// The same for the 53-bit generator: every ID also at most 2^53 - 1.
#[test]
fn concurrent_sessions_get_unique_increasing_53_bit_ids() {
    concurrent_sessions(SNOWFLAKE53, "sf53_concurrency", 56204);
}

fn concurrent_sessions(g: Gen, name: &str, port: u16) {
    let node = format!("seqgen.node_id = {}", g.node);
    let c = Cluster::init(name, port, &[&node]);
    c.start();
    c.sql("CREATE EXTENSION pg_seqgen;");
    let conninfo = c.conninfo("postgres");
    let results = on_threads(8, move |_| {
        let mut cl = Client::connect(&conninfo, NoTls).unwrap();
        let mut got = Vec::with_capacity(62_500);
        let mut worst_skew = 0i64;
        for _ in 0..25 {
            let before = server_ms(&mut cl);
            let rows = cl.query(&g.rows(2500), &[]).unwrap();
            let after = server_ms(&mut cl);
            for r in rows {
                let id: i64 = r.get(0);
                let (ms, node, _) = g.decode(id);
                assert_eq!(node, g.node, "node id of {id}");
                assert!(id <= g.max_id, "{id} above {}", g.max_id);
                worst_skew = worst_skew.max(before - ms).max(ms - after);
                got.push(id);
            }
        }
        (got, worst_skew)
    });
    let mut l = Ledger::default();
    let mut worst = 0;
    for (got, skew) in results {
        assert!(got.windows(2).all(|w| w[0] < w[1]), "a session's IDs are not strictly increasing");
        worst = worst.max(skew);
        l.add(got);
    }
    assert_eq!(l.total, 500_000);
    l.assert_unique(&format!("8 sessions, {}", g.call));
    println!("{}: largest distance between an ID's time and the server clock: {worst} ms", g.call);
    // a 53-bit generator issues 256 IDs per ms: 500,000 take 2 s of borrowed time at most
    assert!(worst < 3000, "an ID's time is {worst} ms away from the server clock");
    // the decode function agrees with the layout
    let mut cl = c.connect();
    let id: i64 = cl.query_one(&g.one(), &[]).unwrap().get(0);
    let r = cl
        .query_one(
            &format!("SELECT (extract(epoch FROM ts) * 1000)::int8, node_id, sequence FROM {}($1)", g.decode_fn),
            &[&id],
        )
        .unwrap();
    let (ms, node, seq) = g.decode(id);
    assert_eq!((r.get::<_, i64>(0), r.get::<_, i32>(1) as i64, r.get::<_, i32>(2) as i64), (ms, node, seq));
}

/// Background load that records every ID and every error.
struct Load {
    stop: Arc<AtomicBool>,
    handles: Vec<std::thread::JoinHandle<(Vec<i64>, Vec<String>)>>,
    served: Arc<Mutex<usize>>,
}

impl Load {
    fn start(c: &Cluster, sessions: usize, g: Gen) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(Mutex::new(0));
        let handles = (0..sessions)
            .map(|_| {
                let (conninfo, stop, served) = (c.conninfo("postgres"), stop.clone(), served.clone());
                std::thread::spawn(move || {
                    let mut cl = Client::connect(&conninfo, NoTls).unwrap();
                    let (mut got, mut errors) = (vec![], vec![]);
                    while !stop.load(Ordering::Relaxed) {
                        match cl.query(&g.rows(200), &[]) {
                            Ok(rows) => {
                                got.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
                                *served.lock().unwrap() += rows.len();
                            }
                            Err(e) => {
                                errors.push(sqlstate(&e).unwrap_or_else(|| e.to_string()));
                                std::thread::sleep(Duration::from_millis(5));
                            }
                        }
                    }
                    (got, errors)
                })
            })
            .collect();
        Load { stop, handles, served }
    }

    fn served(&self) -> usize {
        *self.served.lock().unwrap()
    }

    /// Wait until at least `n` more IDs have been served (the load is flowing again).
    fn wait_for_progress(&self, n: usize, within: Duration) -> bool {
        let start = self.served();
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self.served() >= start + n {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn finish(self) -> (Vec<Vec<i64>>, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        let mut ids = vec![];
        let mut errors = vec![];
        for h in self.handles {
            let (g, e) = h.join().unwrap();
            ids.push(g);
            errors.extend(e);
        }
        (ids, errors)
    }
}

/// Under load, the server clock steps back by 60 ms (waited out: this cluster waits up to
/// 100 ms, so that a step is never shorter than the scheduling gaps of a loaded 2-core
/// machine, which would absorb it), 400 ms more (borrowed), 3 s (refused until the clock is
/// within the 2 s borrow limit, then borrowed) and 10 minutes (refused until the clock is set
/// right). No ID is ever issued twice, every session's IDs keep increasing, and each clock
/// event is logged once, not per ID.
#[test]
fn clock_steps_back_under_load() {
    clock_steps_back(SNOWFLAKE, "sf_clock", 56202);
}

/// The same for the 53-bit generator.
#[test]
fn clock_steps_back_under_load_53_bit() {
    clock_steps_back(SNOWFLAKE53, "sf53_clock", 56205);
}

fn clock_steps_back(g: Gen, name: &str, port: u16) {
    let c = Cluster::init(name, port, &["seqgen.node_id = 5", "seqgen.snowflake_max_wait = 100ms"]).with_clock_shift();
    c.start();
    c.sql("CREATE EXTENSION pg_seqgen;");
    let mut admin = c.connect();
    let load = Load::start(&c, 4, g);
    assert!(load.wait_for_progress(20_000, Duration::from_secs(20)), "no load:\n{}", c.log_tail());
    let s0 = status(&mut admin, g);

    // 60 ms back: within seqgen.snowflake_max_wait (100 ms here): waited out, not borrowed
    c.set_clock_offset_ms(-60);
    assert!(load.wait_for_progress(5_000, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(100));
    let s1 = status(&mut admin, g);
    println!("after 60 ms back: {s1:?}");
    assert!(s1.waits > s0.waits, "a 60 ms step back was not waited out");
    assert_eq!((s1.borrows, s1.refusals), (s0.borrows, s0.refusals));

    // 400 ms more: beyond the wait, within the borrow limit: borrowed, nothing refused
    c.set_clock_offset_ms(-460);
    assert!(load.wait_for_progress(5_000, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(100));
    let s2 = status(&mut admin, g);
    println!("after 400 ms more back: {s2:?}");
    assert!(s2.borrows > s1.borrows, "a 400 ms step back was not borrowed");
    assert_eq!(s2.refusals, s1.refusals);

    // 3 s back: beyond the 2 s borrow limit: refused, then borrowed once within it, then normal
    c.set_clock_offset_ms(-3460);
    std::thread::sleep(Duration::from_millis(400));
    let s3 = status(&mut admin, g);
    println!("after 3 s back: {s3:?}");
    assert!(s3.refusals > s2.refusals, "a 3 s step back was not refused");
    assert!(load.wait_for_progress(20_000, Duration::from_secs(10)), "IDs did not resume after 3 s back");
    let s4 = status(&mut admin, g);
    assert!(s4.borrows > s3.borrows);

    // 10 minutes back: refused until the clock is set right
    let refused_before = status(&mut admin, g).refusals;
    c.set_clock_offset_ms(-603_460);
    std::thread::sleep(Duration::from_millis(1500));
    let s5 = status(&mut admin, g);
    println!("after 10 min back: {s5:?}");
    assert!(s5.refusals > refused_before + 10, "a 10 minute step back was not refused");
    assert!(s5.lag_ms > 590_000, "lag {} ms", s5.lag_ms);
    c.set_clock_offset_ms(0);
    assert!(load.wait_for_progress(20_000, Duration::from_secs(10)), "IDs did not resume once the clock was right");

    let (per_session, errors) = load.finish();
    let mut l = Ledger::default();
    for got in per_session {
        assert!(got.windows(2).all(|w| w[0] < w[1]), "a session's IDs went backwards");
        l.add(got);
    }
    l.assert_unique(&format!("{}: clock stepped back 60 ms, 400 ms, 3 s and 10 min under load", g.call));
    assert!(errors.iter().all(|e| e == "58000"), "unexpected errors: {:?}", &errors[..errors.len().min(5)]);
    println!("{} calls refused with 58000", errors.len());
    // logged once per episode, not once per ID
    let log = c.log();
    let borrow_lines = log.matches("borrowing time").count();
    let refuse_lines = log.matches("refusing until it catches up").count();
    println!("log lines: {borrow_lines} borrowing, {refuse_lines} refusing");
    assert!((1..=6).contains(&borrow_lines) && (1..=6).contains(&refuse_lines));
}

/// Restart (after an immediate shutdown) with the clock 5 s behind, then 10 minutes behind:
/// IDs resume above everything issued before, whatever the clock says. 5 s behind is refused
/// until the clock is within the 2 s borrow limit of the last ID, then bridged by borrowing;
/// 10 minutes behind is refused until the clock is right.
///
/// Once the server is up, the clock is set again, 4 s behind the last ID: the restart itself
/// takes time, on a loaded machine more than 2 s, after which a clock set 2 s behind before it
/// was no longer behind the last ID and nothing was borrowed (CI of stop 40).
#[test]
fn restart_with_the_clock_behind() {
    restart_behind(SNOWFLAKE, "sf_restart", 56203);
}

/// The same for the 53-bit generator.
#[test]
fn restart_with_the_clock_behind_53_bit() {
    restart_behind(SNOWFLAKE53, "sf53_restart", 56206);
}

fn restart_behind(g: Gen, name: &str, port: u16) {
    let c = Cluster::init(name, port, &["seqgen.node_id = 3"]).with_clock_shift();
    c.start();
    c.sql("CREATE EXTENSION pg_seqgen;");
    let mut l = Ledger::default();
    let draw = |c: &Cluster, l: &mut Ledger, rounds: usize| {
        let mut cl = c.connect();
        for _ in 0..rounds {
            let rows = cl.query(&g.rows(1000), &[]).unwrap();
            l.add(rows.iter().map(|r| r.get::<_, i64>(0)));
        }
    };
    draw(&c, &mut l, 50);
    let before = l.max().unwrap();
    let last_drawn = Instant::now();

    // 5 seconds behind
    c.stop("immediate");
    c.set_clock_offset_ms(-5000);
    c.start();
    let mut cl = c.connect();
    // 4 s behind the last ID at the first call, however long the restart took
    c.set_clock_offset_ms(-(last_drawn.elapsed().as_millis() as i64 + 4000));
    let (mut refused, mut first_ok) = (0, None);
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match cl.query_one(&g.one(), &[]) {
            Ok(r) => {
                first_ok = Some(r.get::<_, i64>(0));
                break;
            }
            Err(e) => {
                assert_eq!(sqlstate(&e).as_deref(), Some("58000"), "{e}");
                refused += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    let first_ok = first_ok.expect("IDs never resumed with the clock 5 s behind");
    let s = status(&mut cl, g);
    println!(
        "{}: restart behind (4 s behind the last ID at the first call): {refused} calls refused first, then {s:?}",
        g.call
    );
    assert!(first_ok > before);
    let since = last_drawn.elapsed();
    assert!(s.borrows > 0, "the first IDs after the restart should be borrowed ({since:?} after the last draw)");
    l.add([first_ok]);
    draw(&c, &mut l, 20);

    // 10 minutes behind: refused, whatever the retries, until the clock is right
    let before = l.max().unwrap();
    c.stop("immediate");
    c.set_clock_offset_ms(-600_000);
    c.start();
    let mut cl = c.connect();
    for _ in 0..20 {
        let e = cl.query_one(&g.one(), &[]).expect_err("issued with the clock 10 min behind");
        assert_eq!(sqlstate(&e).as_deref(), Some("58000"), "{e}");
        std::thread::sleep(Duration::from_millis(50));
    }
    c.set_clock_offset_ms(0);
    let after: i64 = cl.query_one(&g.one(), &[]).unwrap().get(0);
    assert!(after > before);
    l.add([after]);
    draw(&c, &mut l, 20);
    l.assert_unique(&format!("{}: restarts with the clock 5 s and 10 min behind", g.call));
}

/// Impossible layouts stop the server at start-up with the reason in the log.
#[test]
fn impossible_layouts_refuse_to_start() {
    for (i, (conf, expect)) in [
        ("seqgen.snowflake_sequence_bits = 13", "must sum to 63"),
        ("seqgen.node_id = 1024", "does not fit in 10 node bits"),
        ("seqgen.snowflake_epoch = 'next tuesday'", "invalid snowflake epoch"),
    ]
    .iter()
    .enumerate()
    {
        let c = Cluster::init(&format!("sf_layout_{i}"), 56210 + i as u16, &[conf]);
        let log = c.try_start().expect_err(conf);
        assert!(log.contains(expect), "{conf}: log does not say '{expect}':\n{log}");
    }
    // a consistent custom layout starts
    let c = Cluster::init(
        "sf_layout_ok",
        56219,
        &[
            "seqgen.snowflake_time_bits = 43",
            "seqgen.snowflake_node_bits = 8",
            "seqgen.snowflake_sequence_bits = 12",
            "seqgen.node_id = 255",
        ],
    );
    c.start();
    c.sql("CREATE EXTENSION pg_seqgen;");
    let node: i32 =
        c.connect().query_one("SELECT node_id FROM seqgen_snowflake_decode(seqgen_snowflake())", &[]).unwrap().get(0);
    assert_eq!(node, 255);
}

/// The last millisecond of the 53-bit range: the epoch at 1970-01-01, and every server
/// process's clock moved to 4 s before the range ends (2^41 ms later, 2039-09-07
/// 15:47:35.551 UTC). Every ID up to the end is at most 2^53 - 1, and after it calls fail
/// with 2200H.
#[test]
fn the_53_bit_range_ends_at_2_pow_53() {
    let c = Cluster::init("sf53_end", 56207, &["seqgen.snowflake_epoch = '1970-01-01'"]).with_clock_shift();
    let real_now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    c.set_clock_offset_ms((1i64 << 41) - 4000 - real_now);
    c.start();
    c.sql("CREATE EXTENSION pg_seqgen;");
    let mut cl = c.connect();
    let mut l = Ledger::default();
    let deadline = Instant::now() + Duration::from_secs(20);
    let exhausted = loop {
        assert!(Instant::now() < deadline, "the range never ended");
        // one per statement: a statement that crosses the end fails whole
        match cl.query_one(&SNOWFLAKE53.one(), &[]) {
            Ok(r) => l.add([r.get::<_, i64>(0)]),
            Err(e) => break sqlstate(&e),
        }
    };
    assert_eq!(exhausted.as_deref(), Some("2200H"));
    let max = l.max().unwrap();
    let max_ts = (1i64 << 41) - 1; // ms since the epoch, 1970-01-01
    println!("53-bit range end: {} IDs, the last {max} (2^53 - 1 = {}), then 2200H", l.total, (1i64 << 53) - 1);
    assert!(max < (1 << 53));
    // the end was reached by the clock, not earlier (the last millisecond itself, and its
    // 2^53 - 1, are checked exactly by the core's js_safe_ids_never_exceed_2_pow_53)
    assert!(max >> 12 > max_ts - 100, "the last ID is {} ms before the end", max_ts - (max >> 12));
    l.assert_unique("53-bit snowflakes to the end of their range");
    // and it stays refused
    assert_eq!(cl.query_one(&SNOWFLAKE53.one(), &[]).err().and_then(|e| sqlstate(&e)).as_deref(), Some("2200H"));
}
