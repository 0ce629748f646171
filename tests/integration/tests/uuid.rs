//! seqgen_uuidv7(): unique and increasing across every session of the server, through clock
//! steps back and restarts with the clock behind. UUIDs are compared as their 16 bytes, which
//! is PostgreSQL's `uuid` order.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use seqgen_integration::*;

type U = [u8; 16];

fn uuids(rows: Vec<postgres::Row>) -> Vec<U> {
    rows.iter().map(|r| r.get::<_, Vec<u8>>(0).try_into().expect("16 bytes")).collect()
}

fn draw(cl: &mut Client, n: i32) -> Vec<U> {
    uuids(cl.query("SELECT uuid_send(seqgen_uuidv7()) FROM generate_series(1, $1)", &[&n]).unwrap())
}

fn assert_unique(what: &str, all: &[&U]) {
    let set: HashSet<&U> = all.iter().copied().collect();
    println!("{what}: {} UUIDs checked, {} duplicates", all.len(), all.len() - set.len());
    assert_eq!(set.len(), all.len(), "{what}: a UUID was issued twice");
}

fn assert_increasing(what: &str, got: &[U]) {
    if let Some(i) = got.windows(2).position(|w| w[0] >= w[1]) {
        panic!("{what}: UUID {i} is not below the next one: {:02x?} then {:02x?}", got[i], got[i + 1]);
    }
}

/// 8 sessions draw 500,000 UUIDs each at the same time: all 4,000,000 are unique and each
/// session's are increasing; every one is version 7, variant 10, decodes to a timestamp of
/// this run, and is at or above `seqgen_uuidv7_at()` of its millisecond.
#[test]
fn eight_sessions_unique_and_increasing() {
    let c = Cluster::init("uuid_sessions", 56801, &[]);
    c.start();
    c.sql("CREATE EXTENSION pg_seqgen;");
    let started = c.one_i64("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8");
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let conninfo = c.conninfo("postgres");
            std::thread::spawn(move || draw(&mut Client::connect(&conninfo, NoTls).unwrap(), 500_000))
        })
        .collect();
    let per_session: Vec<Vec<U>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let ended = c.one_i64("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8");
    for (i, got) in per_session.iter().enumerate() {
        assert_eq!(got.len(), 500_000);
        assert_increasing(&format!("session {i}"), got);
    }
    let all: Vec<&U> = per_session.iter().flatten().collect();
    assert_unique("8 sessions x 500,000", &all);
    for u in &all {
        assert_eq!(u[6] >> 4, 7, "version");
        assert_eq!(u[8] >> 6, 0b10, "variant");
        let ms = u[..6].iter().fold(0i64, |a, b| a << 8 | *b as i64);
        assert!((started - 1000..=ended + 1000).contains(&ms), "timestamp {ms} outside the run");
    }
    // the server's own decoding and time bound agree with the bytes
    let mut cl = c.connect();
    let sample = *per_session[3][123_456..].first().unwrap();
    let r = cl
        .query_one(
            "SELECT (extract(epoch FROM d.ts) * 1000)::int8, d.counter,
                    seqgen_uuidv7_at(d.ts) <= u, seqgen_uuidv7_at(d.ts + interval '1 ms') > u
               FROM (SELECT encode($1, 'hex')::uuid AS u) x, seqgen_uuidv7_decode(x.u) d",
            &[&sample.to_vec()],
        )
        .unwrap();
    let ms = sample[..6].iter().fold(0i64, |a, b| a << 8 | *b as i64);
    assert_eq!(r.get::<_, i64>(0), ms);
    assert!(r.get::<_, bool>(2) && r.get::<_, bool>(3), "seqgen_uuidv7_at does not bound its millisecond");
    let s = cl.query_one("SELECT counter_waits, refusals FROM seqgen_uuidv7_status()", &[]).unwrap();
    println!(
        "counter of a sample: {}; counter waits {}, refusals {}",
        r.get::<_, i32>(1),
        s.get::<_, i64>(0),
        s.get::<_, i64>(1)
    );
}

/// Three sessions take turns, each turn starting after the previous one returned: the values
/// increase across the turns (what PostgreSQL 18's per-backend uuidv7() does not promise).
#[test]
fn turns_across_sessions_increase() {
    let c = Cluster::init("uuid_turns", 56802, &[]);
    c.start();
    c.sql("CREATE EXTENSION pg_seqgen;");
    let mut sessions: Vec<Client> = (0..3).map(|_| c.connect()).collect();
    let mut turns = vec![];
    for i in 0..3000 {
        // every tenth turn draws a batch, the others one value
        let n = if i % 10 == 0 { 50 } else { 1 };
        turns.extend(draw(&mut sessions[i % 3], n));
    }
    assert_increasing("3 sessions taking 3,000 turns", &turns);
    assert_unique("3 sessions taking turns", &turns.iter().collect::<Vec<_>>());
}

/// Under load, the server clock (of every server process) steps back 400 ms (borrowed), then
/// 10 s (refused until it is set right): no UUID is issued twice, every session's keep
/// increasing, and the UUIDs drawn after the steps are above all those drawn before.
#[test]
fn clock_steps_back_under_load() {
    let c = Cluster::init("uuid_clock", 56803, &["seqgen.snowflake_max_wait = 100ms"]).with_clock_shift();
    c.start();
    c.sql("CREATE EXTENSION pg_seqgen;");
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (conninfo, stop) = (c.conninfo("postgres"), stop.clone());
            std::thread::spawn(move || {
                let mut cl = Client::connect(&conninfo, NoTls).unwrap();
                let (mut got, mut errors) = (vec![], vec![]);
                while !stop.load(Ordering::Relaxed) {
                    match cl.query("SELECT uuid_send(seqgen_uuidv7()) FROM generate_series(1, 200)", &[]) {
                        Ok(rows) => got.extend(uuids(rows)),
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
    let mut admin = c.connect();
    let counters = |cl: &mut Client| -> (i64, i64) {
        let r = cl.query_one("SELECT borrows, refusals FROM seqgen_uuidv7_status()", &[]).unwrap();
        (r.get(0), r.get(1))
    };
    std::thread::sleep(Duration::from_millis(1000));
    let before_steps = draw(&mut admin, 1)[0];
    c.set_clock_offset_ms(-400);
    std::thread::sleep(Duration::from_millis(1000));
    let (borrows, _) = counters(&mut admin);
    assert!(borrows > 0, "a 400 ms step back was not borrowed");
    c.set_clock_offset_ms(-10_400);
    std::thread::sleep(Duration::from_millis(1500));
    let (_, refusals) = counters(&mut admin);
    assert!(refusals > 0, "a 10 s step back was not refused");
    c.set_clock_offset_ms(0);
    let resumed = Instant::now();
    let after_steps = loop {
        match admin.query("SELECT uuid_send(seqgen_uuidv7())", &[]) {
            Ok(rows) => break uuids(rows)[0],
            Err(e) => {
                assert_eq!(sqlstate(&e).as_deref(), Some("58000"), "{e}");
                assert!(resumed.elapsed() < Duration::from_secs(10), "UUIDs did not resume");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    };
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let mut all = vec![before_steps, after_steps];
    let mut errors = vec![];
    for h in handles {
        let (got, e) = h.join().unwrap();
        assert_increasing("a session through the clock steps", &got);
        all.extend(got);
        errors.extend(e);
    }
    assert!(after_steps > before_steps, "a UUID after the steps is below one before them");
    assert!(errors.iter().all(|e| e == "58000"), "unexpected errors: {:?}", &errors[..errors.len().min(5)]);
    println!("{borrows} borrows, {refusals} refusals, {} calls refused with 58000", errors.len());
    assert_unique("clock stepped back 400 ms and 10 s under load", &all.iter().collect::<Vec<_>>());
}

/// An immediate shutdown, then a restart with the clock 2 s behind: UUIDs resume above every
/// one issued before (the persisted reservation), whatever the clock says.
#[test]
fn restart_with_the_clock_behind() {
    let c = Cluster::init("uuid_restart", 56804, &[]).with_clock_shift();
    c.start();
    c.sql("CREATE EXTENSION pg_seqgen;");
    let mut before = vec![];
    {
        let mut cl = c.connect();
        for _ in 0..20 {
            before.extend(draw(&mut cl, 5000));
        }
    }
    let max_before = *before.iter().max().unwrap();
    c.stop("immediate");
    c.set_clock_offset_ms(-2000);
    c.start();
    let mut cl = c.connect();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut refused = 0;
    let first = loop {
        match cl.query("SELECT uuid_send(seqgen_uuidv7())", &[]) {
            Ok(rows) => break uuids(rows)[0],
            Err(e) => {
                assert_eq!(sqlstate(&e).as_deref(), Some("58000"), "{e}");
                assert!(Instant::now() < deadline, "UUIDs never resumed with the clock 2 s behind");
                refused += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    let after = draw(&mut cl, 20_000);
    println!("restart 2 s behind: first UUID after {refused} refusals");
    assert!(first > max_before, "the first UUID after the restart is not above the last before it");
    assert_increasing("after the restart", &after);
    assert!(after[0] > first);
    let all: Vec<&U> = before.iter().chain([&first]).chain(&after).collect();
    assert_unique("a restart with the clock 2 s behind", &all);
}

/// pg_restore into a server whose worker has already loaded the (still empty) reservation
/// tables, and whose clock is 8 s behind the source's: snowflakes and UUIDs continue above
/// every value issued before the dump. (0.2.0's first cut loaded the reservation only once,
/// so the restored row went unread until a restart, and this test drew values below the
/// dump's; 0.2.0 read it within a second, so a call right after the restore could still be
/// below.) Calls are refused with 58000 until the clock is within the borrow limit.
#[test]
fn restore_after_the_worker_loaded_continues_above_the_dump() {
    let a = Cluster::init("uuid_dump_src", 56805, &["seqgen.node_id = 1"]);
    a.start();
    a.sql("CREATE EXTENSION pg_seqgen;");
    let (mut before_u, mut before_s) = (vec![], vec![]);
    {
        let mut cl = a.connect();
        for _ in 0..10 {
            before_u.extend(draw(&mut cl, 5000));
            let rows = cl.query("SELECT seqgen_snowflake() FROM generate_series(1, 4000)", &[]).unwrap();
            before_s.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
        }
    }
    let dump = format!("{}/dump.pgc", a.dir.display());
    let out = as_postgres(
        &format!("{}/pg_dump", pg_bin()),
        &["-h", &a.dir.display().to_string(), "-p", "56805", "-U", "postgres", "-Fc", "-f", &dump, "postgres"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dumped_at = Instant::now();
    a.stop("fast");

    let b = Cluster::init("uuid_dump_dst", 56806, &["seqgen.node_id = 1"]).with_clock_shift();
    // 8 s behind the source's clock at the dump, whatever initdb took (still 3 s or more
    // behind it when the first value is drawn)
    b.set_clock_offset_ms(-(8000 + dumped_at.elapsed().as_millis() as i64));
    b.start();
    let restore = |section: &str| {
        let out = as_postgres(
            &format!("{}/pg_restore", pg_bin()),
            &["-h", &b.dir.display().to_string(), "-p", "56806", "-U", "postgres", "-d", "postgres", section, &dump],
        );
        assert!(out.status.success(), "pg_restore {section}: {}", String::from_utf8_lossy(&out.stderr));
    };
    restore("--section=pre-data");
    // the worker finds the catalog and loads the empty reservation tables
    std::thread::sleep(Duration::from_millis(2500));
    restore("--section=data");
    restore("--section=post-data");
    // the restored reservations count from the next call (no pause for the worker's re-read)
    let mut cl = b.connect();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut refused = 0;
    let first = loop {
        match cl.query("SELECT uuid_send(seqgen_uuidv7()), seqgen_snowflake()", &[]) {
            Ok(rows) => break (uuids(rows.clone())[0], rows[0].get::<_, i64>(1)),
            Err(e) => {
                assert_eq!(sqlstate(&e).as_deref(), Some("58000"), "{e}");
                assert!(Instant::now() < deadline, "never resumed after the restore");
                refused += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    println!("after the restore: {refused} calls refused (58000) until the clock was within the borrow limit");
    assert!(first.0 > *before_u.iter().max().unwrap(), "a UUID after the restore is below one before the dump");
    assert!(first.1 > *before_s.iter().max().unwrap(), "a snowflake after the restore is below one before the dump");
    let after_u = draw(&mut cl, 20_000);
    assert!(after_u[0] > first.0);
    let all: Vec<&U> = before_u.iter().chain([&first.0]).chain(&after_u).collect();
    assert_unique("UUIDs before the dump and after the restore", &all);
}
