//! Moving to another server or major, the two ways operators do it:
//! - a logical-replication switchover (blue/green) under load, with the catalog published by
//!   `seqgen_publish`: the new side refuses to draw while the catalog comes in, then draws at
//!   once above everything the old side issued, for every generator; and the mistake of
//!   publishing only the application's tables, which the new side names;
//! - `pg_upgrade` from one major to another with pg_seqgen preloaded on both (from the 16
//!   tree to the 18 tree: `tests/run.sh` passes the 16 installation's `pg_config` in
//!   `SEQGEN_UPGRADE_FROM` on its 18 run, where both majors are installed).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};
use seqgen_integration::*;

const SCHEMA: &str = "CREATE EXTENSION pg_seqgen;
    CREATE TABLE orders (id bigint PRIMARY KEY, order_no text UNIQUE NOT NULL, ticket bigint UNIQUE NOT NULL,
                         flake bigint UNIQUE NOT NULL, flake53 bigint UNIQUE NOT NULL, u uuid UNIQUE NOT NULL);";

/// One row of every generator (the table's UNIQUE constraints count duplicates across sides).
const INSERT: &str =
    "INSERT INTO orders SELECT seqgen_next('order'), seqgen_order_no('order_no'), seqgen_next('ticket'), \
     seqgen_snowflake(), seqgen_snowflake53(), seqgen_uuidv7() FROM generate_series(1, 20)";

fn wait_until(limit: Duration, what: &str, mut f: impl FnMut() -> bool) -> Duration {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    t.elapsed()
}

fn old_side(name: &str, port: u16) -> Cluster {
    let old = Cluster::init(name, port, &["wal_level = logical", "max_wal_senders = 10", "max_replication_slots = 10"]);
    old.start();
    old.sql(SCHEMA);
    old.sql(
        "SELECT seqgen_create('order', 50, 1000);
         SELECT seqgen_create('order_no', 10);
         SELECT seqgen_set_template('order_no', 'SO{yyyy}{MM}{dd}-{seq:6}', 'Asia/Shanghai');
         SELECT seqgen_create('ticket', 10);
         SELECT seqgen_make_opaque('ticket');
         SELECT seqgen_create('waybill', 10);
         SELECT seqgen_set_template('waybill', '{key}-{seq:6}');",
    );
    old
}

fn new_side(name: &str, port: u16) -> Cluster {
    let new = Cluster::init(name, port, &["max_logical_replication_workers = 8", "max_worker_processes = 24"])
        .with_clock_shift();
    new.start();
    new.sql(SCHEMA);
    new
}

#[test]
fn logical_replication_switchover_under_load() {
    let old = old_side("lr_old", 57301);
    let new = new_side("lr_new", 57302);
    let mut o = old.connect();
    let err = o.batch_execute("SELECT seqgen_publish('missing')").unwrap_err();
    assert_eq!(sqlstate(&err).as_deref(), Some("42704"));
    o.batch_execute("CREATE PUBLICATION p FOR TABLE orders").unwrap();
    let added: Vec<String> =
        o.query("SELECT t::text FROM seqgen_publish('p') t", &[]).unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(added.len(), 11, "{added:?}");
    // a key of a tag, drawn on the old side only: its counter row travels with the catalog
    let key_old: Vec<i64> = o
        .query("SELECT seqgen_next('order', 'k') FROM generate_series(1, 30)", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    // and a key's order numbers (seqgen.key_order_counter)
    let waybill_old: Vec<String> = o
        .query("SELECT seqgen_order_no('waybill', 'k') FROM generate_series(1, 30)", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let again = o.query("SELECT * FROM seqgen_publish('p')", &[]).unwrap();
    assert!(again.is_empty(), "seqgen_publish added tables twice");

    // load on the old side from before the subscription to the switchover
    let stop = Arc::new(AtomicBool::new(false));
    let load = {
        let (stop, info) = (stop.clone(), old.conninfo("postgres"));
        std::thread::spawn(move || {
            let mut c = Client::connect(&info, NoTls).unwrap();
            let mut rows = 0;
            while !stop.load(Ordering::Relaxed) {
                c.batch_execute(INSERT).unwrap();
                rows += 20;
            }
            rows
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    new.sql(&format!("CREATE SUBSCRIPTION s CONNECTION '{}' PUBLICATION p", old.conninfo("postgres")));
    let mut n = new.connect();
    let synced = wait_until(Duration::from_secs(120), "initial table sync", || {
        n.query_one("SELECT count(*) FROM pg_subscription_rel WHERE srsubstate <> 'r'", &[]).unwrap().get::<_, i64>(0)
            == 0
    });
    // while the catalog comes in, the new side refuses to draw (both sides would issue the same values)
    for sql in [
        "SELECT seqgen_next('order')",
        "SELECT seqgen_order_no('order_no')",
        "SELECT seqgen_next('ticket')",
        "SELECT seqgen_next('order', 'k')",
        "SELECT seqgen_order_no('waybill', 'k')",
    ] {
        let e = n.batch_execute(sql).unwrap_err();
        assert_eq!(sqlstate(&e).as_deref(), Some("55000"), "{sql}: {e:?}");
    }
    std::thread::sleep(Duration::from_secs(2));

    // the switchover: the application stops on the old side, the new side catches up
    stop.store(true, Ordering::Relaxed);
    let rows = load.join().unwrap();
    let lsn: String = o.query_one("SELECT pg_current_wal_lsn()::text", &[]).unwrap().get(0);
    let caught_up = wait_until(Duration::from_secs(60), "catch-up", || {
        n.query_one(
            "SELECT coalesce(bool_and(latest_end_lsn >= $1::text::pg_lsn), false) FROM pg_stat_subscription",
            &[&lsn],
        )
        .unwrap()
        .get::<_, bool>(0)
    });
    n.batch_execute("ALTER SUBSCRIPTION s DISABLE").unwrap();
    let copied = n.query_one("SELECT count(*) FROM orders", &[]).unwrap().get::<_, i64>(0);
    assert_eq!(copied, rows as i64, "the new side lacks rows of the old one");
    // the new side's clock is a little behind the old one's: only the replicated reservations
    // keep its snowflakes and UUIDv7s above the old side's
    new.set_clock_offset_ms(-800);
    let started = Instant::now();
    let first = Answer::of(&mut n, "SELECT seqgen_next('order')");
    let first_ok = first.result.clone().unwrap_or_else(|e| panic!("first draw on the new side: {e}"));
    let waited = first.waited;
    // the UNIQUE constraints hold every value of both sides: a repeat fails the insert
    for _ in 0..25 {
        n.batch_execute(INSERT).unwrap_or_else(|e| panic!("the new side repeated a value of the old side: {e:?}"));
    }
    let since = started.elapsed();
    let mut above = |col: &str| -> bool {
        let q = format!(
            "SELECT (SELECT min({col}) FROM orders WHERE id >= $1) > (SELECT max({col}) FROM orders WHERE id < $1)"
        );
        n.query_one(&q, &[&first_ok]).unwrap().get(0)
    };
    assert!(first_ok > o.query_one("SELECT max(id) FROM orders", &[]).unwrap().get::<_, i64>(0));
    for col in ["flake", "flake53", "u::text", "order_no"] {
        assert!(above(col), "{col} on the new side is not above the old side's");
    }
    let key_new: i64 = n.query_one("SELECT seqgen_next('order', 'k')", &[]).unwrap().get(0);
    assert!(key_new > *key_old.iter().max().unwrap(), "key k on the new side: {key_new} after {key_old:?}");
    let waybill_new: String = n.query_one("SELECT seqgen_order_no('waybill', 'k')", &[]).unwrap().get(0);
    assert!(
        &waybill_new > waybill_old.iter().max().unwrap(),
        "key k's order number on the new side: {waybill_new} after {waybill_old:?}"
    );
    let tickets: HashSet<i64> = n.query("SELECT ticket FROM orders", &[]).unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(tickets.len() as i64, copied + 500);
    println!(
        "switchover: {rows} rows drawn on the old side under load, initial sync {} ms, catch-up {} ms; \
         the new side's first draw waited {} ms, 500 rows of every generator in {} ms, 0 repeated",
        synced.as_millis(),
        caught_up.as_millis(),
        waited.as_millis(),
        since.as_millis()
    );
}

/// The mistake: only the application's tables published. The new side says what is missing.
#[test]
fn a_switchover_without_the_catalog_is_named() {
    let old = old_side("lr_old_bare", 57303);
    let new = new_side("lr_new_bare", 57304);
    old.sql(&format!("{INSERT}; CREATE PUBLICATION p FOR TABLE orders"));
    new.sql(&format!("CREATE SUBSCRIPTION s CONNECTION '{}' PUBLICATION p", old.conninfo("postgres")));
    let mut n = new.connect();
    wait_until(Duration::from_secs(60), "initial table sync", || {
        n.query_one("SELECT count(*) FROM pg_subscription_rel WHERE srsubstate <> 'r'", &[]).unwrap().get::<_, i64>(0)
            == 0
    });
    n.batch_execute("ALTER SUBSCRIPTION s DISABLE").unwrap();
    let e = n.batch_execute("SELECT seqgen_next('order')").unwrap_err();
    let db = e.as_db_error().expect("a server error");
    assert_eq!(db.code().code(), "42704");
    assert!(db.detail().unwrap_or_default().contains("subscribes to \"s\""), "{:?}", db.detail());
    assert!(db.hint().unwrap_or_default().contains("seqgen_publish"), "{:?}", db.hint());
    // creating the tag by hand warns that its numbering starts again
    let notices = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut cfg: postgres::Config = new.conninfo("postgres").parse().unwrap();
    let sink = notices.clone();
    cfg.notice_callback(move |n| sink.lock().unwrap().push(n.message().to_string()));
    let mut c = cfg.connect(NoTls).unwrap();
    c.batch_execute("SELECT seqgen_create('order', 50, 1000)").unwrap();
    let seen = notices.lock().unwrap().clone();
    assert!(seen.iter().any(|m| m.contains("without the pg_seqgen catalog")), "{seen:?}");
}

/// `pg_upgrade` between two majors with pg_seqgen preloaded on both: nothing repeats.
#[test]
fn pg_upgrade_between_majors_repeats_nothing() {
    let Ok(from_config) = std::env::var("SEQGEN_UPGRADE_FROM") else {
        println!("pg_upgrade: SEQGEN_UPGRADE_FROM is not set (tests/run.sh sets it on its 18 run); nothing to run");
        return;
    };
    let out = std::process::Command::new(&from_config).arg("--bindir").output().unwrap();
    let from_bin = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let old = Cluster::init_in(&from_bin, "pgu_old", 57305, &[], &[]);
    old.start();
    old.sql(
        "CREATE EXTENSION pg_seqgen;
         SELECT seqgen_create('order', 100);
         SELECT seqgen_create('order_no', 10);
         SELECT seqgen_set_template('order_no', 'PU{yyyy}{MM}{dd}-{seq:6}');
         CREATE TABLE issued (v text PRIMARY KEY);",
    );
    let draw = |c: &Cluster, n: i64| {
        c.sql(&format!(
            "INSERT INTO issued SELECT seqgen_next('order')::text FROM generate_series(1, {n});
             INSERT INTO issued SELECT seqgen_order_no('order_no') FROM generate_series(1, {n});
             INSERT INTO issued SELECT 's' || seqgen_snowflake() FROM generate_series(1, {n});
             INSERT INTO issued SELECT seqgen_uuidv7()::text FROM generate_series(1, {n});"
        ))
    };
    draw(&old, 10_000);
    old.stop("fast");
    // the new cluster: the current major, without data checksums like the old one
    let new = Cluster::init_in(pg_bin(), "pgu_new", 57306, &[], &["--no-data-checksums"]);
    let work = format!("{}/upgrade", new.dir.display());
    std::fs::create_dir_all(&work).unwrap();
    std::process::Command::new("chown").arg("postgres").arg(&work).output().unwrap();
    let out = std::process::Command::new("sudo")
        .current_dir(&work)
        .args(["-u", "postgres", &format!("{}/pg_upgrade", pg_bin())])
        .args(["-b", &from_bin, "-B", pg_bin(), "-d", &old.data(), "-D", &new.data()])
        .args(["-p", "57307", "-P", "57308", "-s", &work])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pg_upgrade failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    new.start();
    let t = Instant::now();
    draw(&new, 10_000); // a repeat fails the primary key
    let took = t.elapsed();
    let total = new.one_i64("SELECT count(*) FROM issued");
    assert_eq!(total, 80_000);
    println!(
        "pg_upgrade {} -> {}: 40,000 values before, 40,000 after ({} ms), 0 repeated",
        from_bin,
        pg_bin(),
        took.as_millis()
    );
}
