//! Several databases on one server, each with its own allocator (issue 11): the same tag name
//! in three databases drawing at once through a crash loop, `CREATE EXTENSION` in a fourth
//! while the load runs, `DROP DATABASE` (without FORCE) of one while the others draw, a
//! database without the extension, the bound on databases, and a restart with the clock
//! behind (every database's snowflake reservation counts before any snowflake is issued).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use seqgen_integration::*;

/// What the sessions of one database were given.
#[derive(Default)]
struct Drawn {
    seg: Vec<i64>,
    sf: Vec<i64>,
    ord: Vec<String>,
    /// Calls that failed with something other than the server going away.
    errors: Vec<String>,
}

impl Drawn {
    fn extend(&mut self, o: Drawn) {
        self.seg.extend(o.seg);
        self.sf.extend(o.sf);
        self.ord.extend(o.ord);
        self.errors.extend(o.errors);
    }
}

const SETUP: &str = "CREATE EXTENSION pg_seqgen;
     SELECT seqgen_create('order', 50);
     SELECT seqgen_set_template('order', 'SO{yyyy}{MM}{dd}-{seq:8}');";

/// The server going away (shutdown, crash) is expected while a test crashes it.
fn gone(e: &postgres::Error) -> bool {
    match e.code().map(|c| c.code()) {
        None => true,
        Some(c) => ["57P01", "57P02", "57P03", "08006", "08003"].contains(&c),
    }
}

/// `sessions` threads per database drawing from all three generators until `stop`,
/// reconnecting after a crash.
fn load(
    c: &Cluster,
    dbs: &[&str],
    sessions: usize,
    stop: Arc<AtomicBool>,
) -> Vec<(String, std::thread::JoinHandle<Drawn>)> {
    let mut out = vec![];
    for db in dbs {
        for _ in 0..sessions {
            let (ci, stop) = (c.conninfo(db), stop.clone());
            out.push((
                db.to_string(),
                std::thread::spawn(move || {
                    let mut got = Drawn::default();
                    while !stop.load(Ordering::Relaxed) {
                        let Ok(mut cl) = Client::connect(&ci, NoTls) else {
                            std::thread::sleep(Duration::from_millis(50));
                            continue;
                        };
                        while !stop.load(Ordering::Relaxed) {
                            let r = (|| -> Result<Drawn, postgres::Error> {
                                let ints = |cl: &mut Client, q: &str| -> Result<Vec<i64>, postgres::Error> {
                                    Ok(cl.query(q, &[])?.iter().map(|r| r.get(0)).collect())
                                };
                                let seg = ints(&mut cl, "SELECT seqgen_next('order') FROM generate_series(1, 40)")?;
                                let sf = ints(&mut cl, "SELECT seqgen_snowflake() FROM generate_series(1, 40)")?;
                                let ord = cl
                                    .query("SELECT seqgen_order_no('order') FROM generate_series(1, 40)", &[])?
                                    .iter()
                                    .map(|r| r.get(0))
                                    .collect();
                                Ok(Drawn { seg, sf, ord, errors: vec![] })
                            })();
                            match r {
                                Ok(d) => got.extend(d),
                                Err(e) if gone(&e) => break,
                                Err(e) => {
                                    got.errors.push(format!("{e} ({:?})", sqlstate(&e)));
                                    break;
                                }
                            }
                        }
                    }
                    got
                }),
            ));
        }
    }
    out
}

fn collect(
    handles: Vec<(String, std::thread::JoinHandle<Drawn>)>,
    into: &mut std::collections::BTreeMap<String, Drawn>,
) {
    for (db, h) in handles {
        into.entry(db).or_default().extend(h.join().unwrap());
    }
}

/// Wait until `db` serves `seqgen_next('order')`; how long that took.
fn serving(c: &Cluster, db: &str, limit: Duration) -> Duration {
    recovery_time(limit, || {
        Client::connect(&c.conninfo(db), NoTls)
            .ok()
            .and_then(|mut cl| cl.query_one("SELECT seqgen_next('order')", &[]).ok())
            .is_some()
    })
}

/// Three databases draw from a tag of the same name, snowflakes and order numbers at once,
/// through five immediate shutdowns; a fourth database gets the extension while the load
/// runs and draws within a second. Nothing repeats within a database; no snowflake repeats
/// across the server; the same tag name is three independent generators.
#[test]
fn three_databases_through_a_crash_loop() {
    let c = Cluster::init("dbs_crash", 56801, &["seqgen.node_id = 4", "max_worker_processes = 16"]);
    c.start();
    let dbs = ["app_a", "app_b", "app_c"];
    for (i, db) in dbs.iter().enumerate() {
        c.sql(&format!("CREATE DATABASE {db}"));
        let mut cl = c.connect_db(db);
        cl.batch_execute(SETUP).unwrap();
        // every database's tag starts somewhere else, so a mix-up would show as a repeat
        cl.batch_execute(&format!("SELECT seqgen_restart('order', {})", 1 + i as i64 * 1_000_000_000)).unwrap();
    }
    let mut all = std::collections::BTreeMap::new();
    let mut back = vec![];
    for round in 0..5 {
        let stop = Arc::new(AtomicBool::new(false));
        let handles = load(&c, &dbs, 2, stop.clone());
        std::thread::sleep(Duration::from_millis(800));
        if round == 2 {
            // a fourth database gets the extension while the load runs
            c.sql("CREATE DATABASE app_d");
            let mut d = c.connect_db("app_d");
            let (took, first) = timed(|| {
                d.batch_execute(SETUP).unwrap();
                d.query_one("SELECT seqgen_next('order')", &[]).map(|r| r.get::<_, i64>(0))
            });
            println!(
                "CREATE EXTENSION in a fourth database under load: first ID {first:?} after {} ms",
                took.as_millis()
            );
            assert_eq!(first.unwrap(), 1, "the fourth database's tag is its own");
            // bounded by the wait for a segment (seqgen.allocation_timeout), not by the machine's speed
            assert!(took < Duration::from_secs(10), "the fourth database drew after {took:?}");
            let sf: i64 = d.query_one("SELECT seqgen_snowflake()", &[]).unwrap().get(0);
            assert!(sf > 0);
        }
        c.stop("immediate");
        stop.store(true, Ordering::Relaxed);
        collect(handles, &mut all);
        c.start();
        let took = dbs.iter().map(|db| serving(&c, db, Duration::from_secs(30))).max().unwrap();
        back.push(took.as_millis());
    }
    println!("service back in every database after each immediate shutdown (ms): {back:?}");
    let mut sf = Ledger::default();
    for (db, d) in &all {
        assert!(d.errors.is_empty(), "{db}: calls failed: {:?}", &d.errors[..d.errors.len().min(5)]);
        assert!(d.seg.len() > 1_000, "{db}: too little load to mean anything ({} IDs)", d.seg.len());
        let mut l = Ledger::default();
        l.add(d.seg.iter().copied());
        l.assert_unique(&format!("{db}: segment IDs of tag 'order' through 5 crashes"));
        assert_unique_numbers(&format!("{db}: order numbers through 5 crashes"), &d.ord);
        sf.add(d.sf.iter().copied());
    }
    sf.assert_unique("snowflakes of three databases through 5 crashes");
    // the same tag name is three generators: each database's IDs stay in its own range
    for (i, db) in dbs.iter().enumerate() {
        let base = 1 + i as i64 * 1_000_000_000;
        let d = &all[*db];
        assert!(
            d.seg.iter().all(|&v| v >= base && v < base + 1_000_000_000),
            "{db}: an ID from another database's range"
        );
    }
    let running: i64 =
        c.connect_db("app_a").query_one("SELECT count(*) FROM seqgen_allocators() WHERE running", &[]).unwrap().get(0);
    assert_eq!(running, 4, "one allocator per database with the extension");
}

/// `DROP DATABASE` without FORCE of a database with an allocator succeeds while two other
/// databases draw, and they never notice.
#[test]
fn drop_database_without_force_while_others_draw() {
    let c = Cluster::init("dbs_drop", 56802, &["max_worker_processes = 16"]);
    c.start();
    for db in ["keep_a", "keep_b", "gone_c"] {
        c.sql(&format!("CREATE DATABASE {db}"));
        c.connect_db(db).batch_execute(SETUP).unwrap();
        serving(&c, db, Duration::from_secs(10));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let handles = load(&c, &["keep_a", "keep_b"], 2, stop.clone());
    std::thread::sleep(Duration::from_millis(500));
    let (took, r) = timed(|| c.connect().batch_execute("DROP DATABASE gone_c"));
    println!("DROP DATABASE (no FORCE) of a database with an allocator: {r:?} in {} ms", took.as_millis());
    r.unwrap();
    let mut a = c.connect_db("keep_a");
    let freed = recovery_time(Duration::from_secs(10), || {
        let mut n = |q: &str| a.query_one(q, &[]).unwrap().get::<_, i64>(0);
        n("SELECT count(*) FROM seqgen_allocators()") == 2
            && n("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_seqgen allocator'") == 2
    });
    println!("the dropped database's allocator area free after {} ms", freed.as_millis());
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let mut all = std::collections::BTreeMap::new();
    collect(handles, &mut all);
    for (db, d) in &all {
        assert!(d.errors.is_empty(), "{db}: calls failed during the drop: {:?}", &d.errors[..d.errors.len().min(5)]);
        let mut l = Ledger::default();
        l.add(d.seg.iter().copied());
        l.assert_unique(&format!("{db}: segment IDs while another database was dropped"));
    }
    // a DROP DATABASE that fails (a session is connected): the allocator comes back
    let pid_before: i32 = a.query_one("SELECT pid FROM seqgen_worker_status()", &[]).unwrap().get(0);
    let err = c.connect().batch_execute("DROP DATABASE keep_a").unwrap_err();
    println!("DROP DATABASE of a database in use: {err} ({:?})", sqlstate(&err));
    assert_eq!(sqlstate(&err).as_deref(), Some("55006"));
    let back = recovery_time(Duration::from_secs(10), || {
        a.query_one("SELECT pid FROM seqgen_worker_status() WHERE running", &[])
            .ok()
            .is_some_and(|r| r.get::<_, i32>(0) != pid_before)
    });
    println!(
        "allocator of the database that was not dropped running again {} ms after the failed DROP",
        back.as_millis()
    );
    let v: Vec<i64> =
        a.query("SELECT seqgen_next_batch('order', 100000)", &[]).unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(v.len(), 100_000);
    // a database of the same name created again starts from scratch
    c.sql("CREATE DATABASE gone_c");
    let mut cl = c.connect_db("gone_c");
    cl.batch_execute(SETUP).unwrap();
    let v: i64 = cl.query_one("SELECT seqgen_next('order')", &[]).unwrap().get(0);
    assert_eq!(v, 1);
}

/// A database without the extension gets no allocator (the start-up readers leave it);
/// `CREATE DATABASE ... TEMPLATE` of a database with an allocator works; more databases with
/// the extension than `seqgen.max_databases` (a template copy) keep nothing closed at
/// start-up; `CREATE EXTENSION` beyond the bound fails with 53400 and leaves nothing behind;
/// `DROP EXTENSION` stops a database's allocator and frees its area.
#[test]
fn allocators_only_where_the_extension_is() {
    let c = Cluster::init("dbs_where", 56803, &["seqgen.max_databases = 2", "max_worker_processes = 16"]);
    c.start();
    for db in ["with_ext", "without_ext", "third"] {
        c.sql(&format!("CREATE DATABASE {db}"));
    }
    c.connect_db("with_ext").batch_execute(SETUP).unwrap();
    serving(&c, "with_ext", Duration::from_secs(10));
    // a copy of a database whose allocator is connected to it
    let (took, r) = timed(|| c.connect().batch_execute("CREATE DATABASE tcopy TEMPLATE with_ext"));
    println!("CREATE DATABASE ... TEMPLATE of a database with an allocator: {r:?} in {} ms", took.as_millis());
    r.unwrap();
    c.sql(SETUP); // postgres: three databases with the extension now, two areas
                  // restart: the readers check every database
    c.stop("fast");
    c.start();
    let allocators = |c: &Cluster| -> Vec<String> {
        c.connect()
            .query(
                "SELECT coalesce(datname, '-') FROM pg_stat_activity WHERE backend_type = 'pg_seqgen allocator' ORDER BY 1",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    recovery_time(Duration::from_secs(10), || allocators(&c).len() == 2);
    let served = allocators(&c);
    println!("allocators after start-up (two areas, three databases with pg_seqgen): {served:?}");
    assert!(served.iter().all(|d| ["with_ext", "tcopy", "postgres"].contains(&d.as_str())), "{served:?}");
    // the clocks are open although one database with the extension has no area
    let mut cl = c.connect_db(&served[0]);
    let sf: i64 = cl.query_one("SELECT seqgen_snowflake()", &[]).unwrap().get(0);
    assert!(sf > 0);
    let listed: Vec<String> =
        cl.query("SELECT database FROM seqgen_allocators()", &[]).unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(listed, served);
    let unserved = ["with_ext", "tcopy", "postgres"].into_iter().find(|d| !served.iter().any(|s| s == d)).unwrap();
    let err = c.connect_db(unserved).query_one("SELECT seqgen_next('order')", &[]).unwrap_err();
    println!("a first call in a third database with pg_seqgen, no area free: {err}");
    assert_eq!(sqlstate(&err).as_deref(), Some("53400"));
    assert_eq!(
        c.one_i64("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_seqgen launcher'"),
        1,
        "one launcher"
    );
    // the bound: CREATE EXTENSION fails and leaves nothing behind
    let err = c.connect_db("third").batch_execute(SETUP).unwrap_err();
    println!("CREATE EXTENSION beyond seqgen.max_databases: {err}");
    assert_eq!(sqlstate(&err).as_deref(), Some("53400"));
    let left = c.connect_db("third").query_one("SELECT count(*) FROM pg_extension WHERE extname = 'pg_seqgen'", &[]);
    assert_eq!(left.unwrap().get::<_, i64>(0), 0, "the failed CREATE EXTENSION left the extension behind");
    // DROP EXTENSION stops the allocator and frees its area for another database
    c.connect_db(&served[0]).batch_execute("DROP EXTENSION pg_seqgen").unwrap();
    let stopped = recovery_time(Duration::from_secs(10), || !allocators(&c).contains(&served[0]));
    println!("allocator gone {} ms after DROP EXTENSION", stopped.as_millis());
    let mut third = c.connect_db("third");
    third.batch_execute(SETUP).unwrap();
    let v: i64 = third.query_one("SELECT seqgen_next('order')", &[]).unwrap().get(0);
    assert_eq!(v, 1);
    assert!(!allocators(&c).contains(&"without_ext".to_string()));
}

/// Database `b` issues snowflakes after database `a` last did; the server restarts with its
/// clock 30 s behind. `a`'s first snowflakes after the restart are above every one `b` issued:
/// the shared generator rose above every database's reservation before any was issued.
#[test]
fn restart_with_the_clock_behind_resumes_above_every_database() {
    let c = Cluster::init(
        "dbs_clock",
        56804,
        &["max_worker_processes = 16", "seqgen.snowflake_max_borrow = 120000", "seqgen.snowflake_reserve = 1000"],
    )
    .with_clock_shift();
    c.start();
    for db in ["sf_a", "sf_b"] {
        c.sql(&format!("CREATE DATABASE {db}"));
        c.connect_db(db).batch_execute(SETUP).unwrap();
    }
    let ints = |cl: &mut Client, q: &str| -> Vec<i64> { cl.query(q, &[]).unwrap().iter().map(|r| r.get(0)).collect() };
    let a_before = ints(&mut c.connect_db("sf_a"), "SELECT seqgen_snowflake() FROM generate_series(1, 100)");
    // b draws for 3 s after a stopped: its reservation moves 3 s past a's
    let mut b = c.connect_db("sf_b");
    let t = Instant::now();
    let mut b_ids = vec![];
    while t.elapsed() < Duration::from_secs(3) {
        b_ids.extend(ints(&mut b, "SELECT seqgen_snowflake() FROM generate_series(1, 1000)"));
    }
    drop(b);
    let b_max = *b_ids.iter().max().unwrap();
    c.stop("immediate");
    c.set_clock_offset_ms(-30_000);
    c.start();
    // a first, right after the restart
    let a_after = ints(&mut c.connect_db("sf_a"), "SELECT seqgen_snowflake() FROM generate_series(1, 1000)");
    let a_min = *a_after.iter().min().unwrap();
    println!(
        "clock 30 s behind at restart: database a's first snowflake {a_min}, database b's last before {b_max} ({} ms apart)",
        (a_min >> 22) - (b_max >> 22)
    );
    assert!(a_min > b_max, "database a issued {a_min}, not above database b's {b_max}");
    let mut l = Ledger::default();
    l.add(a_before.iter().chain(&b_ids).chain(&a_after).copied());
    l.assert_unique("snowflakes of two databases across a restart with the clock 30 s behind");
    c.set_clock_offset_ms(0);
}

/// A `CREATE EXTENSION` prepared and committed later (two-phase, as Citus creates pg_seqgen on
/// its workers) gets its database an allocator at `COMMIT PREPARED`, with no call to claim one.
/// Its PREPARE let the launcher start an allocator, which found no extension yet and gave the
/// database up for good: a Citus worker then had no allocator (nor definitions sync) until
/// something drew there. Found by the Citus tests run beside the others (a worker's listing
/// never came).
#[test]
fn a_prepared_create_extension_gets_its_allocator() {
    let c = Cluster::init("dbs_prepared", 56809, &["max_prepared_transactions = 4"]);
    c.start();
    c.sql("CREATE DATABASE p");
    c.sql("CREATE DATABASE q");
    let serving = |db: &str| c.log().contains(&format!("pg_seqgen allocator started, serving database \"{db}\""));
    let mut s = c.connect_db("p");
    s.batch_execute("BEGIN; CREATE EXTENSION pg_seqgen; PREPARE TRANSACTION 'ext'").unwrap();
    // long enough for the allocator the PREPARE let start to look and find no extension
    std::thread::sleep(Duration::from_secs(2));
    assert!(!serving("p"), "an allocator served before the commit");
    s.batch_execute("COMMIT PREPARED 'ext'").unwrap();
    let t = recovery_time(Duration::from_secs(30), || serving("p"));
    println!("database p's allocator started {t:?} after COMMIT PREPARED, with no call");

    // rolled back: the database is given up once the prepared transaction is gone
    let mut q = c.connect_db("q");
    q.batch_execute("BEGIN; CREATE EXTENSION pg_seqgen; PREPARE TRANSACTION 'ext2'").unwrap();
    std::thread::sleep(Duration::from_secs(2));
    q.batch_execute("ROLLBACK PREPARED 'ext2'").unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert!(!serving("q"), "an allocator serves a database without the extension");
    // and its area is given up (seqgen_allocators lists every database that has one)
    let listed = |s: &mut Client| -> Vec<String> {
        s.query("SELECT database FROM seqgen_allocators() ORDER BY 1", &[]).unwrap().iter().map(|r| r.get(0)).collect()
    };
    let t = recovery_time(Duration::from_secs(30), || !listed(&mut s).contains(&"q".to_string()));
    println!("database q given up {t:?} after the sleep: {:?}", listed(&mut s));
    // and the extension created there later (one phase) is served
    q.batch_execute("CREATE EXTENSION pg_seqgen").unwrap();
    let t = recovery_time(Duration::from_secs(30), || serving("q"));
    println!("database q's allocator started {t:?} after CREATE EXTENSION");
}
