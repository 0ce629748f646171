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
