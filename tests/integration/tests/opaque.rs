//! Opaque tags under the same faults as plain ones: concurrent sessions and crashes. Every
//! test counts duplicates, and checks the values really are shuffled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use seqgen_integration::*;

fn ids(rows: Vec<postgres::Row>) -> Vec<i64> {
    rows.iter().map(|r| r.get::<_, i64>(0)).collect()
}

/// 8 sessions draw plain IDs, the tag becomes opaque mid-run, they keep drawing (singles and
/// batches, step 10 so segments switch constantly), then the server is stopped immediately
/// and killed with SIGKILL under load and restarted: no ID is ever issued twice.
#[test]
fn opaque_ids_survive_concurrency_and_crashes() {
    let c = Cluster::init("opaque_faults", 56401, &["seqgen.adaptive_step = off"]);
    c.start();
    c.sql("CREATE EXTENSION pg_seqgen; SELECT seqgen_create('o', 10);");
    let mut l = Ledger::default();
    for (round, how) in ["make_opaque", "immediate", "kill9"].iter().enumerate() {
        let stop = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (conninfo, stop) = (c.conninfo("postgres"), stop.clone());
                std::thread::spawn(move || {
                    let mut cl = Client::connect(&conninfo, NoTls).unwrap();
                    let mut got = vec![];
                    while !stop.load(Ordering::Relaxed) {
                        let sql = if i % 2 == 0 {
                            "SELECT seqgen_next('o') FROM generate_series(1, 50)"
                        } else {
                            "SELECT seqgen_next_batch('o', 37)"
                        };
                        match cl.query(sql, &[]) {
                            Ok(rows) => got.extend(ids(rows)),
                            Err(_) => break,
                        }
                    }
                    got
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(1200));
        match *how {
            "make_opaque" => {
                c.sql("SELECT seqgen_make_opaque('o')");
                std::thread::sleep(Duration::from_millis(1200));
            }
            "immediate" => c.stop("immediate"),
            _ => c.kill9(),
        }
        stop.store(true, Ordering::Relaxed);
        for h in handles {
            l.add(h.join().unwrap());
        }
        println!("round {round} ({how}): {} IDs so far", l.total);
        if *how != "make_opaque" {
            c.start();
        }
    }
    let after = ids(c.connect().query("SELECT seqgen_next('o') FROM generate_series(1, 20000)", &[]).unwrap());
    let from: i64 =
        c.connect().query_one("SELECT opaque_from FROM seqgen.alloc WHERE biz_tag = 'o'", &[]).unwrap().get(0);
    assert!(after.iter().all(|&v| v > from));
    let decreasing = after.windows(2).filter(|w| w[1] < w[0]).count();
    println!("{decreasing} of {} consecutive opaque IDs go down", after.len() - 1);
    assert!((9_000..=11_000).contains(&decreasing), "opaque IDs look ordered");
    l.add(after);
    l.assert_unique("plain, then opaque, under 8 sessions, an immediate shutdown and a SIGKILL");
}

/// Short codes (issue 34) under the same faults: 8 sessions draw codes of 5 and 8 characters
/// and opaque IDs of one tag (step 10: segments switch constantly); the server is stopped
/// immediately, then killed with SIGKILL, under load; then the database is dumped and restored
/// into a new cluster, which draws on. No code is issued twice, and no counter value is behind
/// two of them (codes of both lengths and IDs, taken back with the key).
#[test]
fn short_codes_survive_concurrency_crashes_and_restore() {
    let c = Cluster::init("codes_faults", 56402, &["seqgen.adaptive_step = off"]);
    c.start();
    c.sql("CREATE EXTENSION pg_seqgen; SELECT seqgen_create('c', 10); SELECT seqgen_make_opaque('c');");
    // (kind, text): kind 5 and 8 are codes of that length, 0 an ID
    let mut drawn: Vec<(u8, String)> = vec![];
    for how in ["immediate", "kill9"] {
        let stop = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (conninfo, stop) = (c.conninfo("postgres"), stop.clone());
                std::thread::spawn(move || {
                    let mut cl = Client::connect(&conninfo, NoTls).unwrap();
                    let (kind, sql) = match i % 4 {
                        0 | 1 => (8u8, "SELECT seqgen_next_code('c') FROM generate_series(1, 50)"),
                        2 => (5, "SELECT seqgen_next_code('c', 5) FROM generate_series(1, 50)"),
                        _ => (0, "SELECT seqgen_next('c')::text FROM generate_series(1, 50)"),
                    };
                    let mut got = vec![];
                    while !stop.load(Ordering::Relaxed) {
                        match cl.query(sql, &[]) {
                            Ok(rows) => got.extend(rows.iter().map(|r| (kind, r.get::<_, String>(0)))),
                            Err(_) => break,
                        }
                    }
                    got
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(1500));
        if how == "immediate" {
            c.stop("immediate");
        } else {
            c.kill9();
        }
        stop.store(true, Ordering::Relaxed);
        let before = drawn.len();
        for h in handles {
            drawn.extend(h.join().unwrap());
        }
        // every kind was drawn in the round before the crash
        for kind in [0u8, 5, 8] {
            let n = drawn[before..].iter().filter(|(k, _)| *k == kind).count();
            assert!(n >= 100, "round {how}: only {n} of kind {kind} before the crash");
        }
        c.start();
    }
    let draw_some = |c: &Cluster, drawn: &mut Vec<(u8, String)>| {
        let mut cl = c.connect();
        for (kind, sql) in [
            (8u8, "SELECT seqgen_next_code('c') FROM generate_series(1, 2000)"),
            (5, "SELECT seqgen_next_code('c', 5) FROM generate_series(1, 2000)"),
            (0, "SELECT seqgen_next('c')::text FROM generate_series(1, 2000)"),
        ] {
            drawn.extend(cl.query(sql, &[]).unwrap().iter().map(|r| (kind, r.get::<_, String>(0))));
        }
    };
    draw_some(&c, &mut drawn);
    let dump = format!("{}/dump.pgc", c.dir.display());
    let out = as_postgres(
        &format!("{}/pg_dump", pg_bin()),
        &[
            "-h",
            &c.dir.display().to_string(),
            "-p",
            &c.port.to_string(),
            "-U",
            "postgres",
            "-Fc",
            "-f",
            &dump,
            "postgres",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    c.stop("fast");
    let b = Cluster::init("codes_restored", 56403, &["seqgen.adaptive_step = off"]);
    b.start();
    let out = as_postgres(
        &format!("{}/pg_restore", pg_bin()),
        &["-h", &b.dir.display().to_string(), "-p", &b.port.to_string(), "-U", "postgres", "-d", "postgres", &dump],
    );
    assert!(out.status.success(), "pg_restore: {}", String::from_utf8_lossy(&out.stderr));
    draw_some(&b, &mut drawn);

    // every text once, and every counter value behind at most one of them
    let mut texts = std::collections::HashSet::new();
    for (kind, t) in &drawn {
        assert!(texts.insert((*kind, t.clone())), "{t} (kind {kind}) was issued twice");
        if *kind != 0 {
            assert_eq!(t.len(), *kind as usize, "{t}");
            assert!(seqgen_core::code::is_valid(t), "{t} is not a well-formed code");
        }
    }
    let (kinds, texts): (Vec<i32>, Vec<String>) = drawn.iter().map(|(k, t)| (*k as i32, t.clone())).unzip();
    let counters = b
        .connect()
        .query(
            "SELECT CASE WHEN k = 0 THEN seqgen_reveal('c', t::int8) ELSE seqgen_reveal_code('c', t) END
               FROM unnest($1::int4[], $2::text[]) AS x(k, t)",
            &[&kinds, &texts],
        )
        .unwrap();
    let mut seen = std::collections::HashSet::new();
    for r in &counters {
        let v: i64 = r.get(0);
        assert!(seen.insert(v), "counter value {v} is behind two of the tag's IDs and codes");
    }
    let codes = kinds.iter().filter(|&&k| k != 0).count();
    println!(
        "{} IDs and {codes} short codes of 5 and 8 characters, across an immediate shutdown, a SIGKILL and a \
         dump and restore: no text twice, {} distinct counter values",
        kinds.len() - codes,
        seen.len()
    );
}
