//! pg_seqgen on a real Citus cluster (issue 18): a coordinator and two workers on this
//! machine, each its own cluster on its own port over loopback, Citus 13.2 on PostgreSQL 15
//! (built once and cached by scripts/citus.sh, which sets SEQGEN_CITUS=1).
//!
//! Tables are distributed by another column than the ID, so a primary key would check the ID
//! only within a shard: repeats are counted through the coordinator with
//! `GROUP BY id HAVING count(*) > 1` over the whole table.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};
use seqgen_integration::*;

/// Citus runs only where scripts/citus.sh installed it (PostgreSQL 15); elsewhere these tests
/// say so and pass.
fn citus_here() -> bool {
    if std::env::var("SEQGEN_CITUS").is_err() {
        eprintln!("SEQGEN_CITUS is not set: the Citus tests run on PostgreSQL 15 after scripts/citus.sh");
        return false;
    }
    let lib = format!("{}/citus.so", pg().pkglibdir);
    assert!(std::path::Path::new(&lib).exists(), "SEQGEN_CITUS is set but {lib} is missing");
    true
}

fn node(name: &str, port: u16) -> Cluster {
    let c = Cluster::init(
        name,
        port,
        &[
            "shared_preload_libraries = 'citus,pg_seqgen'",
            "listen_addresses = '127.0.0.1'",
            "max_connections = 100",
            "max_prepared_transactions = 100",
            "max_worker_processes = 24",
            "citus.max_cached_conns_per_worker = 4",
            "fsync = off",
        ],
    );
    c.start();
    c.sql("CREATE EXTENSION citus");
    c
}

/// TCP client of a node (what Citus's own connections look like).
fn tcp(port: u16) -> Client {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match Client::connect(&format!("host=127.0.0.1 port={port} user=postgres dbname=postgres"), NoTls) {
            Ok(c) => return c,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("connect to port {port}: {e}"),
        }
    }
}

/// `GRANT EXECUTE ON FUNCTION seqgen_next` to `role` on every node (Citus does not
/// propagate a GRANT on an extension's function), checked on all three.
fn grant_next_everywhere(c: &mut Client, role: &str) {
    let granted: i64 = c
        .query_one(
            &format!(
                "SELECT count(*) FROM run_command_on_all_nodes('GRANT EXECUTE ON FUNCTION seqgen_next TO {role}') \
                 WHERE success"
            ),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(granted, 3, "GRANT EXECUTE to {role} on every node");
}

struct Citus {
    coord: Cluster,
    workers: Vec<Cluster>,
}

impl Citus {
    /// A coordinator and two workers; pg_seqgen created on the coordinator; tags defined on
    /// every node; tables keyed by each generator, distributed by `k`.
    fn start(base: u16) -> Citus {
        // names by port: the tests of this file run in parallel
        let coord = node(&format!("citus{base}_coord"), base);
        let workers = vec![node(&format!("citus{base}_w1"), base + 1), node(&format!("citus{base}_w2"), base + 2)];
        coord.sql(&format!("SELECT citus_set_coordinator_host('127.0.0.1', {base})"));
        for w in &workers {
            coord.sql(&format!("SELECT citus_add_node('127.0.0.1', {})", w.port));
        }
        coord.sql("CREATE EXTENSION pg_seqgen");
        for w in &workers {
            // Citus propagates CREATE EXTENSION to every worker
            assert_eq!(
                w.one_i64("SELECT count(*) FROM pg_extension WHERE extname = 'pg_seqgen'"),
                1,
                "pg_seqgen did not reach worker {}",
                w.name
            );
        }
        // tags are defined once, on the coordinator
        coord.sql(
            "SELECT seqgen_create('order', 100); \
             SELECT seqgen_create('inv', 100); \
             SELECT seqgen_set_template('inv', 'INV{yyyy}{MM}{dd}-{node:3}-{seq:7}'); \
             CREATE TABLE t_next (id bigint DEFAULT seqgen_next('order'), k int NOT NULL); \
             CREATE TABLE t_sf (id bigint DEFAULT seqgen_snowflake(), k int NOT NULL); \
             CREATE TABLE t_uuid (id uuid DEFAULT seqgen_uuidv7(), k int NOT NULL); \
             CREATE TABLE t_ord (id text DEFAULT seqgen_order_no('inv'), k int NOT NULL); \
             SELECT create_distributed_table('t_next', 'k'); \
             SELECT create_distributed_table('t_sf', 'k'); \
             SELECT create_distributed_table('t_uuid', 'k'); \
             SELECT create_distributed_table('t_ord', 'k'); \
             CREATE TABLE r_next (id bigint DEFAULT seqgen_next('order'), k int NOT NULL); \
             SELECT create_reference_table('r_next'); \
             SELECT seqgen_set_template('order', 'W{key}-{node:3}-{seq:7}'); \
             CREATE TABLE t_key (id bigint DEFAULT seqgen_next('order', 'acme'), k int NOT NULL); \
             CREATE TABLE t_kord (id text DEFAULT seqgen_order_no('order', 'acme'), k int NOT NULL); \
             SELECT create_distributed_table('t_key', 'k'); \
             SELECT create_distributed_table('t_kord', 'k');",
        );
        Citus { coord, workers }
    }

    fn ports(&self) -> Vec<u16> {
        std::iter::once(self.coord.port).chain(self.workers.iter().map(|w| w.port)).collect()
    }

    /// Values that occur more than once in `table`, counted through the coordinator.
    fn repeats(&self, table: &str) -> i64 {
        self.coord.one_i64(&format!("SELECT count(*) FROM (SELECT id FROM {table} GROUP BY id HAVING count(*) > 1) d"))
    }

    fn assert_no_repeats(&self) -> i64 {
        let mut rows = 0;
        for t in ["t_next", "t_sf", "t_uuid", "t_ord", "r_next", "t_key", "t_kord"] {
            let n = self.coord.one_i64(&format!("SELECT count(*) FROM {t}"));
            let r = self.repeats(t);
            println!("{t}: {n} rows, {r} values issued twice");
            assert_eq!(r, 0, "{t}: values issued twice across the Citus cluster");
            rows += n;
        }
        rows
    }
}

/// The INSERTs one session runs in turn: every generator as a DEFAULT, `INSERT ... SELECT`
/// (from a series, and from a distributed table colocated with the target), a batch.
const STATEMENTS: [&str; 10] = [
    "INSERT INTO t_next (k) VALUES ((random() * 1000)::int)",
    "INSERT INTO t_sf (k) VALUES ((random() * 1000)::int)",
    "INSERT INTO t_uuid (k) VALUES ((random() * 1000)::int)",
    "INSERT INTO t_ord (k) VALUES ((random() * 1000)::int)",
    "INSERT INTO t_next (k) SELECT g FROM generate_series(1, 20) g",
    "INSERT INTO r_next (k) VALUES (1)",
    "INSERT INTO t_next (id, k) SELECT b, 5 FROM seqgen_next_batch('order', 25) b",
    "INSERT INTO t_sf (k) SELECT k FROM t_uuid WHERE k < 5",
    // one key drawn on every node: its values and its order numbers
    "INSERT INTO t_key (k) SELECT g FROM generate_series(1, 10) g",
    "INSERT INTO t_kord (k) SELECT g FROM generate_series(1, 10) g",
];

/// What the load's sessions saw.
#[derive(Default)]
struct Seen {
    /// Failed statements: "port: message".
    errors: Vec<String>,
    /// Failures raised by pg_seqgen itself (not by a node going away).
    ours: Vec<String>,
    /// The longest a statement took, successful or not.
    slowest: Duration,
}

/// Two sessions per port insert until `stop`, counting the statements that succeed in `ok`.
fn load(ports: Vec<u16>, stop: Arc<AtomicBool>, ok: Arc<AtomicUsize>) -> std::thread::JoinHandle<Seen> {
    std::thread::spawn(move || {
        let sessions: Vec<(u16, usize)> = ports.iter().flat_map(|p| [(*p, 0), (*p, 1)]).collect();
        let n = sessions.len();
        let per = on_threads(n, move |i| {
            let (port, s) = sessions[i];
            let mut seen = Seen::default();
            let mut c = tcp(port);
            let mut j = s;
            while !stop.load(Ordering::Relaxed) {
                let (t, r) = timed(|| c.batch_execute(STATEMENTS[j % STATEMENTS.len()]));
                seen.slowest = seen.slowest.max(t);
                match r {
                    Ok(()) => {
                        ok.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        let db = e.as_db_error();
                        let text = format!("port {port}: {}", db.map_or(e.to_string(), |d| d.message().to_string()));
                        if db.and_then(|d| d.routine()) == Some("pg_seqgen") {
                            seen.ours.push(text.clone());
                        }
                        seen.errors.push(text);
                        std::thread::sleep(Duration::from_millis(50));
                        if c.is_closed() || sqlstate(&e).is_none() {
                            c = tcp(port);
                        }
                    }
                }
                j += 1;
            }
            seen
        });
        per.into_iter().fold(Seen::default(), |mut a, s| {
            a.errors.extend(s.errors);
            a.ours.extend(s.ours);
            a.slowest = a.slowest.max(s.slowest);
            a
        })
    })
}

#[test]
fn citus_every_node_draws_and_nothing_repeats() {
    if !citus_here() {
        return;
    }
    let cl = Citus::start(56300);
    let ports = cl.ports();

    // node identities: the coordinator is group 0, the workers their groups
    for p in &ports {
        let g: i32 = tcp(*p).query_one("SELECT groupid FROM pg_dist_local_group", &[]).unwrap().get(0);
        let node: i32 =
            tcp(*p).query_one("SELECT node_id FROM seqgen_snowflake_decode(seqgen_snowflake())", &[]).unwrap().get(0);
        assert_eq!(node, g, "port {p}: the snowflake node id is not the Citus group id");
        let seg: i64 = tcp(*p).query_one("SELECT seqgen_next('order') & 255", &[]).unwrap().get(0);
        assert_eq!(seg, g as i64, "port {p}: segment IDs are not interleaved by the group id");
    }

    // 2 sessions through each node for 20 s; worker 1 is stopped immediately at 8 s and
    // started again at 12 s
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    let h = load(ports.clone(), stop.clone(), ok.clone());
    std::thread::sleep(Duration::from_secs(8));
    let before_stop = ok.load(Ordering::Relaxed);
    cl.workers[0].stop("immediate");
    std::thread::sleep(Duration::from_secs(4));
    let during = ok.load(Ordering::Relaxed) - before_stop;
    cl.workers[0].start();
    let restarted = Instant::now();
    std::thread::sleep(Duration::from_secs(8));
    stop.store(true, Ordering::Relaxed);
    let seen = h.join().unwrap();
    println!(
        "{} statements ok, {} failed ({} ok while worker 1 was down); the slowest took {:?}",
        ok.load(Ordering::Relaxed),
        seen.errors.len(),
        during,
        seen.slowest
    );
    let mut kinds: Vec<&String> = seen.errors.iter().collect();
    kinds.sort();
    kinds.dedup();
    for e in kinds.iter().take(8) {
        println!("  {e}");
    }
    assert!(
        seen.ours.is_empty(),
        "pg_seqgen refused while a worker was down: {:?}",
        &seen.ours[..seen.ours.len().min(5)]
    );
    assert!(during > 0, "no statement succeeded while one worker was down");
    // after the restart worker 1 draws again
    let back = recovery_time(Duration::from_secs(30), || {
        tcp(cl.workers[0].port)
            .batch_execute("INSERT INTO t_sf (k) VALUES (7); INSERT INTO t_next (k) VALUES (7)")
            .is_ok()
    });
    println!("worker 1 inserting again {:?} after its start ({:?} after the restart began)", back, restarted.elapsed());

    // COPY through every node
    for p in &ports {
        let mut c = tcp(*p);
        let mut w = c.copy_in("COPY t_next (k) FROM STDIN").unwrap();
        use std::io::Write;
        for i in 0..500 {
            writeln!(w, "{i}").unwrap();
        }
        w.finish().unwrap();
        let mut w = c.copy_in("COPY t_ord (k) FROM STDIN").unwrap();
        for i in 0..500 {
            writeln!(w, "{i}").unwrap();
        }
        w.finish().unwrap();
    }
    // every node's values are in the tables: segment IDs carry the group in their low bits
    let groups = cl.coord.one_i64("SELECT count(DISTINCT id & 255) FROM t_next");
    assert_eq!(groups, 3, "segment IDs of all three nodes");
    let rows = cl.assert_no_repeats();
    assert!(rows > 1000, "too few rows to tell: {rows}");
}

#[test]
fn citus_added_removed_and_resynced_nodes_never_repeat() {
    if !citus_here() {
        return;
    }
    let cl = Citus::start(56310);
    let ports = cl.ports();
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    let h = load(ports.clone(), stop.clone(), ok.clone());
    std::thread::sleep(Duration::from_secs(3));

    // a third worker joins under load and inserts within a second
    let w3 = node("citus56310_w3", 56313);
    cl.coord.sql("SELECT citus_add_node('127.0.0.1', 56313)");
    let joined = Instant::now();
    let mut c3 = tcp(56313);
    // the tags reach it from the coordinator, with nothing run on it
    let first = recovery_time(Duration::from_secs(60), || {
        c3.batch_execute(
            "INSERT INTO t_sf (k) VALUES (3); INSERT INTO t_next (k) VALUES (3); INSERT INTO t_ord (k) VALUES (3)",
        )
        .is_ok()
    });
    println!(
        "the added worker inserted {:?} after citus_add_node returned",
        joined.elapsed().min(first + Duration::from_secs(1))
    );
    let g3: i32 = c3.query_one("SELECT groupid FROM pg_dist_local_group", &[]).unwrap().get(0);
    let n3: i32 = c3.query_one("SELECT node_id FROM seqgen_snowflake_decode(seqgen_snowflake())", &[]).unwrap().get(0);
    // the coordinator assigned it the next node id (Citus's group id, in a cluster that has
    // skipped none)
    assert_eq!(n3 as i64, cl.coord.one_i64(&format!("SELECT node_id FROM seqgen.citus_node_ids WHERE groupid = {g3}")));
    assert_eq!(n3, g3);
    for _ in 0..200 {
        c3.batch_execute("INSERT INTO t_sf (k) VALUES (3); INSERT INTO t_next (k) VALUES (3)").unwrap();
    }

    // a metadata resync of worker 2
    cl.coord.sql(&format!("SELECT start_metadata_sync_to_node('127.0.0.1', {})", cl.workers[1].port));
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    let seen = h.join().unwrap();
    println!(
        "{} statements ok, {} failed; the slowest took {:?}",
        ok.load(Ordering::Relaxed),
        seen.errors.len(),
        seen.slowest
    );
    assert!(
        seen.errors.is_empty(),
        "statements failed while a node joined: {:?}",
        &seen.errors[..seen.errors.len().min(5)]
    );

    // Citus's group ids run ahead of the groups: a coordinator crash skips up to 32 (the
    // sequence's WAL log-ahead), a failed citus_add_node takes one; here one real crash, and
    // the sequence moved past 255 as after many of them (issue 30: every tag, with 8 node
    // bits, was refused for good on a worker added then)
    cl.coord.stop("immediate");
    cl.coord.start();
    let after_crash = cl.coord.one_i64("SELECT last_value FROM pg_dist_groupid_seq");
    cl.coord.sql("SELECT setval('pg_dist_groupid_seq', 300)");

    // worker 3 removed (its shards moved away first) and added back: a new group id, and the
    // next node id
    cl.coord.sql("SELECT citus_drain_node('127.0.0.1', 56313, shard_transfer_mode => 'block_writes')");
    cl.coord.sql("SELECT citus_remove_node('127.0.0.1', 56313)");
    cl.coord.sql("SELECT citus_add_node('127.0.0.1', 56313)");
    let g3b: i32 = tcp(56313).query_one("SELECT groupid FROM pg_dist_local_group", &[]).unwrap().get(0);
    assert_ne!(g3b, g3, "a node added again has a new group id");
    assert!(g3b > 255, "the group sequence was moved past 255: {g3b}");
    let n3b = n3 + 1;
    let back = recovery_time(Duration::from_secs(60), || {
        let mut c = tcp(56313);
        c.batch_execute("INSERT INTO t_sf (k) VALUES (4); INSERT INTO t_next (k) VALUES (4)").is_ok()
            && c.query_one("SELECT node_id FROM seqgen_snowflake_decode(seqgen_snowflake())", &[])
                .map(|r| r.get::<_, i32>(0) == n3b)
                .unwrap_or(false)
    });
    println!(
        "after a coordinator crash the group sequence stood at {after_crash} (worker 3 was group {g3}); worker 3 added \
         again as group {g3b} numbers with node id {n3b} {back:?} later"
    );
    assert!(back < Duration::from_secs(10), "worker 3, group {g3b}, does not number with node id {n3b}");
    let ids: String = cl
        .coord
        .connect()
        .query_one(
            "SELECT string_agg(node_id || ':' || coalesce(groupid::text, '-'), ' ' ORDER BY node_id) FROM seqgen.citus_node_ids",
            &[],
        )
        .unwrap()
        .get(0);
    println!("the coordinator's node ids (id:group): {ids}");
    let mut c3 = tcp(56313);
    for _ in 0..200 {
        c3.batch_execute(
            "INSERT INTO t_sf (k) VALUES (4); INSERT INTO t_next (k) VALUES (-4); INSERT INTO t_ord (k) VALUES (4)",
        )
        .unwrap();
    }
    assert_eq!(
        cl.coord.one_i64(&format!("SELECT count(*) FILTER (WHERE id & 255 <> {n3b}) FROM t_next WHERE k = -4")),
        0,
        "segment IDs of worker 3, added again, not interleaved by its node id {n3b}"
    );
    cl.assert_no_repeats();
    drop(w3);
}

#[test]
fn citus_node_outside_the_metadata_is_refused() {
    if !citus_here() {
        return;
    }
    // Citus installed, but the node never joined (no citus_set_coordinator_host): its group
    // is the coordinator's 0, so it must not number with it
    let c = node("citus_alone", 56320);
    c.sql("CREATE EXTENSION pg_seqgen; SELECT seqgen_create('t')");
    let mut s = c.connect();
    for sql in ["SELECT seqgen_snowflake()", "SELECT seqgen_next('t')"] {
        let e = s.query_one(sql, &[]).expect_err(sql);
        assert_eq!(sqlstate(&e).as_deref(), Some("55000"), "{sql}: {e:?}");
        println!("{sql}: {}", e.as_db_error().map(|d| d.message().to_string()).unwrap_or_default());
    }
    // UUIDv7s carry no node id
    s.query_one("SELECT seqgen_uuidv7()", &[]).unwrap();
    // joining (as its own coordinator) gives it group 0 within a second
    c.sql("SELECT citus_set_coordinator_host('127.0.0.1', 56320)");
    let t = recovery_time(Duration::from_secs(5), || s.query_one("SELECT seqgen_snowflake()", &[]).is_ok());
    println!("numbering {t:?} after joining");
    let plain = s.query_one("SELECT node_bits FROM seqgen.alloc WHERE biz_tag = 't'", &[]).unwrap().get::<_, i32>(0);
    assert_eq!(plain, 8, "a tag created in a Citus database gets node bits");

    // node ids (issue 30, item 3), as the coordinator assigns them to the groups its workers
    // confirm (inactive nodes here: listed, never reached): dense whatever Citus's group
    // sequence skipped, and a fresh install's first assignment numbers the groups listed
    // then in group order
    c.sql(
        "SELECT setval('pg_dist_groupid_seq', 40); \
         SELECT citus_add_inactive_node('127.0.0.1', 56901); SELECT citus_add_inactive_node('127.0.0.1', 56902)",
    );
    let mut id = |g: i64| s.query_one("SELECT seqgen.seqgen_cluster_node_id($1)", &[&g]).map(|r| r.get::<_, i64>(0));
    assert_eq!(id(42).unwrap(), 2, "group 42, listed at the first assignment");
    assert_eq!(id(41).unwrap(), 1, "group 41, listed at the first assignment");
    c.sql("SELECT setval('pg_dist_groupid_seq', 300); SELECT citus_add_inactive_node('127.0.0.1', 56903)");
    assert_eq!(id(301).unwrap(), 3, "group 301, after the sequence skipped");
    assert_eq!(id(301).unwrap(), 3, "asked again");
    for g in [999, 0, -1] {
        let e = id(g).unwrap_err();
        assert_eq!(sqlstate(&e).as_deref(), Some("55000"), "group {g}: {e:?}");
    }
    let ids = |s: &mut Client| -> String {
        s.query_one(
            "SELECT string_agg(node_id || ':' || coalesce(groupid::text, '-'), ' ' ORDER BY node_id) FROM seqgen.citus_node_ids",
            &[],
        )
        .unwrap()
        .get(0)
    };
    assert_eq!(ids(&mut s), "0:0 1:41 2:42 3:301");
    // the update from 0.5.0, which numbered with group ids, instead keeps every listed group
    // at its group id and reserves every id up to the group sequence's value then: its block
    // of the update script, run as the update runs it (on an empty table)
    let script =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../sql/pg_seqgen--0.5.0--0.6.0.sql")).unwrap();
    let from = script.find("-- 0.5.0 numbered with Citus group ids").expect("the update's seeding block");
    let to = from + script[from..].find("\n$$;\n").unwrap() + 4;
    c.sql("TRUNCATE seqgen.citus_node_ids; SELECT setval('pg_dist_groupid_seq', 320)");
    c.sql(&script[from..to]);
    assert_eq!(ids(&mut s), "0:0 41:41 42:42 301:301 320:-");
    c.sql("SELECT citus_add_inactive_node('127.0.0.1', 56904)");
    let mut id = |g: i64| s.query_one("SELECT seqgen.seqgen_cluster_node_id($1)", &[&g]).map(|r| r.get::<_, i64>(0));
    assert_eq!(id(321).unwrap(), 321, "a group added after the update: above every reserved id");
}

#[test]
fn citus_definitions_follow_the_coordinator() {
    if !citus_here() {
        return;
    }
    let cl = Citus::start(56330);
    let (w1, w2) = (cl.workers[0].port, cl.workers[1].port);
    let mut c = cl.coord.connect();
    let mut a = tcp(w1);
    // a tag made on the coordinator is drawn on a worker at once (the worker reads the
    // definitions when it does not find the tag)
    c.batch_execute("SELECT seqgen_create('late', 10)").unwrap();
    let (t, v) = timed(|| a.query_one("SELECT seqgen_next('late')", &[]).map(|r| r.get::<_, i64>(0)));
    let v = v.expect("a tag made on the coordinator is not drawn on a worker");
    println!("a new tag drawn on a worker {t:?} after its creation committed on the coordinator: {v}");
    assert_eq!(v & 255, 1, "worker 1's group in the low bits");
    // tags are changed on the coordinator only
    let e = a.batch_execute("SELECT seqgen_alter('late', 20)").unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("0A000"), "{e:?}");
    let e = a.batch_execute("SELECT seqgen_create('mine')").unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("0A000"), "{e:?}");
    // per-tag grants follow (roles are propagated by Citus; a GRANT on an extension's
    // function is not, so it is run on every node)
    c.batch_execute("CREATE ROLE app LOGIN").unwrap();
    grant_next_everywhere(&mut c, "app");
    let app =
        |port: u16| Client::connect(&format!("host=127.0.0.1 port={port} user=app dbname=postgres"), NoTls).unwrap();
    let e = app(w2).query_one("SELECT seqgen_next('late')", &[]).unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("42501"), "{e:?}");
    let msg = e.as_db_error().map(|d| d.message().to_string()).unwrap_or_default();
    assert!(msg.contains("tag \"late\""), "the refusal names the tag: {msg}");
    c.batch_execute("SELECT seqgen_grant('late', 'app')").unwrap();
    let t = recovery_time(Duration::from_secs(60), || app(w2).query_one("SELECT seqgen_next('late')", &[]).is_ok());
    println!("a grant on the coordinator reached worker 2 in {t:?}");
    // a template, then a drop
    c.batch_execute("SELECT seqgen_create('t2'); SELECT seqgen_set_template('t2', 'T{node:3}-{seq:5}')").unwrap();
    let no: String = a.query_one("SELECT seqgen_order_no('t2')", &[]).unwrap().get(0);
    assert_eq!(no, "T001-00001");
    let e = c.batch_execute("SELECT seqgen_set_template('t2', 'T{seq:9}')").unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("55000"), "a template without {{node}} on Citus: {e:?}");
    c.batch_execute("SELECT seqgen_drop('late')").unwrap();
    let t = recovery_time(Duration::from_secs(60), || {
        a.query_one("SELECT seqgen_next('late')", &[]).err().and_then(|e| sqlstate(&e)).as_deref() == Some("42704")
    });
    println!("a drop on the coordinator reached worker 1 in {t:?}");
    let node: Vec<(i32, bool, Option<i32>, Option<String>)> = c
        .query("SELECT citus_nodeid, reachable, node_id, source FROM seqgen_cluster_nodes() ORDER BY citus_nodeid", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    println!("seqgen_cluster_nodes(): {node:?}");
    assert_eq!(node.len(), 3);
    assert!(node.iter().all(|n| n.1 && n.3.as_deref() == Some("citus")), "{node:?}");

    // the coordinator stopped: the workers draw on, with what they have
    cl.coord.stop("immediate");
    let started = Instant::now();
    let mut b = tcp(w2);
    let (mut seg, mut sf) = (Ledger::default(), Ledger::default());
    for _ in 0..3 {
        for p in [&mut a, &mut b] {
            for (sql, l) in [
                ("SELECT seqgen_next('order') FROM generate_series(1, 300)", &mut seg),
                ("SELECT seqgen_snowflake() FROM generate_series(1, 300)", &mut sf),
            ] {
                let (t, r) = timed(|| p.query(sql, &[]));
                let rows = r.expect("a worker stopped drawing with the coordinator down");
                assert!(t < Duration::from_secs(5), "a draw waited {t:?} with the coordinator down");
                l.add(rows.iter().map(|r| r.get::<_, i64>(0)));
            }
        }
        std::thread::sleep(Duration::from_millis(1500));
    }
    println!(
        "with the coordinator down for {:?}, the workers drew {} segment IDs and {} snowflakes, {} twice",
        started.elapsed(),
        seg.total,
        sf.total,
        seg.duplicates() + sf.duplicates()
    );
    seg.assert_unique("segment IDs drawn on the workers with the coordinator down");
    sf.assert_unique("snowflakes drawn on the workers with the coordinator down");
    assert!(cl.workers[0].log().contains("reading the tag definitions from the Citus coordinator failed"));
}

/// Opaque tags on Citus: made opaque once on the coordinator, every node permutes with the
/// coordinator's key (carried with the definitions) in its own lane (the group in the low 8
/// bits), and any node takes any node's IDs and order numbers apart.
#[test]
fn citus_opaque_tags_are_unique_and_revealed_on_every_node() {
    if !citus_here() {
        return;
    }
    let cl = Citus::start(56360);
    let ports = cl.ports();
    let mut c = cl.coord.connect();
    let draw =
        |port: u16, sql: &str| -> Vec<i64> { tcp(port).query(sql, &[]).unwrap().iter().map(|r| r.get(0)).collect() };
    // IDs in the clear first, on every node
    let mut all = Ledger::default();
    for &p in &ports {
        all.add(draw(p, "SELECT seqgen_next('order') FROM generate_series(1, 300)"));
    }
    c.batch_execute(
        "SELECT seqgen_make_opaque('order'); \
         SELECT seqgen_create('opq_ord', 20); \
         SELECT seqgen_set_template('opq_ord', 'O{node:3}-{yyyy}{MM}{dd}-{seq:6:opaque}')",
    )
    .unwrap();
    // the workers follow within their sync period
    let from: i64 = 1 << 54; // the upper half of a counter below 8 node bits
    for &p in &ports[1..] {
        let t = recovery_time(Duration::from_secs(15), || {
            tcp(p)
                .query_one("SELECT opaque_from IS NOT NULL FROM seqgen.alloc WHERE biz_tag = 'order'", &[])
                .is_ok_and(|r| r.get::<_, bool>(0))
        });
        println!("port {p} had the tag opaque {t:?} after the coordinator made it so");
    }
    // one key on every node: the coordinator's
    let keys: Vec<String> = c
        .query(
            "SELECT result FROM run_command_on_all_nodes($$SELECT encode(key, 'hex') FROM seqgen.opaque_key WHERE biz_tag = 'order'$$)",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    println!(
        "the key of 'order' on the 3 nodes: {} distinct",
        keys.iter().collect::<std::collections::HashSet<_>>().len()
    );
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|k| k.len() == 64 && *k == keys[0]), "the nodes permute with different keys: {keys:?}");
    // opaque IDs through every node (single draws and batches), one worker crashing between
    let mut drawn: Vec<(usize, Vec<i64>)> = vec![];
    for round in 0..2 {
        for (i, &p) in ports.iter().enumerate() {
            let mut ids = draw(p, "SELECT seqgen_next('order') FROM generate_series(1, 1000)");
            ids.extend(draw(p, "SELECT seqgen_next_batch('order', 700)"));
            all.add(ids.iter().copied());
            drawn.push((i, ids));
        }
        if round == 0 {
            cl.workers[0].stop("immediate");
            cl.workers[0].start();
        }
    }
    let outside: usize =
        drawn.iter().map(|(i, ids)| ids.iter().filter(|&&v| v & 255 != *i as i64 || v >> 8 <= from).count()).sum();
    println!(
        "'order' (opaque on Citus): {} IDs through 3 nodes, {} twice, {outside} outside their node's lane or in the clear",
        all.total,
        all.duplicates()
    );
    all.assert_unique("opaque IDs across the Citus cluster");
    assert_eq!(outside, 0, "opaque IDs outside their node's lane, or in the clear");
    // taken apart on another node: the node's counter, increasing in drawing order
    for (i, ids) in &drawn {
        let other = ports[(i + 1) % ports.len()];
        let counters: Vec<i64> = tcp(other)
            .query(
                "SELECT seqgen_reveal('order', id) FROM unnest($1::bigint[]) WITH ORDINALITY u(id, o) ORDER BY o",
                &[ids],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert!(counters.windows(2).all(|w| w[0] < w[1]), "node {i}: revealed counters out of drawing order");
        assert!(counters[0] > from, "node {i}: revealed counter {} not above {from}", counters[0]);
    }
    // opaque order numbers: the same key everywhere, the node in the number
    let mut numbers: Vec<String> = vec![];
    for &p in &ports {
        let got: Vec<String> = tcp(p)
            .query("SELECT seqgen_order_no('opq_ord') FROM generate_series(1, 300)", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let counters: Vec<i64> = c
            .query("SELECT seqgen_reveal_order_no('opq_ord', n) FROM unnest($1::text[]) WITH ORDINALITY u(n, o) ORDER BY o", &[&got])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(
            counters,
            (1..=300).collect::<Vec<i64>>(),
            "port {p}: the coordinator took the numbers apart wrongly"
        );
        numbers.extend(got);
    }
    println!(
        "'opq_ord': {} numbers through 3 nodes, e.g. {} / {}",
        numbers.len(),
        numbers[0],
        numbers[numbers.len() - 1]
    );
    assert_unique_numbers("opaque order numbers across the Citus cluster", &numbers);
    // a tag made opaque before the workers ever saw it (and already drawn from on the
    // coordinator): each worker creates it with its node bits and its counter at the start,
    // and makes it opaque with the coordinator's key
    c.batch_execute("SELECT seqgen_create('fresh', 10); SELECT seqgen_make_opaque('fresh')").unwrap();
    let mut fresh = Ledger::default();
    for (i, &p) in ports.iter().enumerate() {
        let ids = draw(p, "SELECT seqgen_next('fresh') FROM generate_series(1, 200)");
        assert!(ids.iter().all(|&v| v & 255 == i as i64 && v >> 8 > from), "port {p}: 'fresh' outside its lane");
        fresh.add(ids);
    }
    fresh.assert_unique("a tag made opaque before the workers saw it");
    for w in &cl.workers {
        let failed = "reading the tag definitions from the Citus coordinator failed";
        assert!(
            !w.log().contains(failed),
            "worker {}: {}",
            w.name,
            w.log().lines().filter(|l| l.contains(failed)).collect::<Vec<_>>().join("\n")
        );
    }
    // outside Citus an interleaved tag still cannot be opaque (tests.rs); here a tag of the
    // coordinator's that is opaque for good stays so
    let e = c.batch_execute("UPDATE seqgen.alloc SET opaque_from = NULL WHERE biz_tag = 'order'").unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("23514"), "{e:?}");
}

#[test]
fn citus_promoted_clone_continues_above_its_primary() {
    if !citus_here() {
        return;
    }
    let cl = Citus::start(56340);
    let w1 = cl.workers[0].port;
    // a synchronous streaming standby of worker 1: what a Citus clone is
    let standby = cl.workers[0].standby("citus56340_w1_standby", 56344);
    cl.workers[0].make_standbys_synchronous();
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    let h = load(cl.ports(), stop.clone(), ok.clone());
    std::thread::sleep(Duration::from_secs(5));
    stop.store(true, Ordering::Relaxed);
    let before = h.join().unwrap();
    // worker 1 fails; its standby is promoted and takes its place in the metadata
    cl.workers[0].stop("immediate");
    check_promote(&standby);
    cl.coord.sql(&format!(
        "SELECT citus_update_node(nodeid, '127.0.0.1', {}) FROM pg_dist_node WHERE nodeport = {w1}",
        standby.port
    ));
    let mut s = tcp(standby.port);
    let (g, node): (i32, i32) = {
        let t = recovery_time(Duration::from_secs(30), || s.query_one("SELECT seqgen_snowflake()", &[]).is_ok());
        println!("the promoted standby draws {t:?} after citus_update_node");
        let r = s
            .query_one(
                "SELECT (SELECT groupid FROM pg_dist_local_group), \
                        (SELECT node_id FROM seqgen_snowflake_decode(seqgen_snowflake()))",
                &[],
            )
            .unwrap();
        (r.get(0), r.get(1))
    };
    assert_eq!(g, node, "the promoted standby numbers with its group");
    assert_eq!(g, 1, "a promoted clone keeps its primary's group");
    let stop = Arc::new(AtomicBool::new(false));
    let ok2 = Arc::new(AtomicUsize::new(0));
    let h = load(vec![cl.coord.port, cl.workers[1].port, standby.port], stop.clone(), ok2.clone());
    std::thread::sleep(Duration::from_secs(5));
    stop.store(true, Ordering::Relaxed);
    let after = h.join().unwrap();
    println!(
        "{} statements before the failover, {} after ({} and {} failed; pg_seqgen's own: {:?})",
        ok.load(Ordering::Relaxed),
        ok2.load(Ordering::Relaxed),
        before.errors.len(),
        after.errors.len(),
        after.ours.iter().take(3).collect::<Vec<_>>()
    );
    assert!(after.ours.is_empty(), "pg_seqgen refused after the failover");
    assert!(ok2.load(Ordering::Relaxed) > 0);
    cl.assert_no_repeats();
}

fn check_promote(c: &Cluster) {
    let out = as_postgres(&format!("{}/pg_ctl", pg_bin()), &["-D", &c.data(), "-w", "promote"]);
    assert!(out.status.success(), "pg_ctl promote: {}", String::from_utf8_lossy(&out.stderr));
}

/// The operation fuzzer on Citus: a seeded random sequence of draws through random nodes
/// (every generator, batches), definition changes on the coordinator (create, alter, template,
/// grant, drop; a dropped name is never used again, since a tag made again under a dropped
/// name restarts its numbering by design), node events (a worker stopped immediately and
/// started, the coordinator restarted or crashed, the coordinator frozen with SIGSTOP for 3 s,
/// worker 2 split by Citus, worker 1 removed and added back) and pauses; the node ids given to
/// a split-off clone and a node added again must be the next ones. After every step: nothing issued twice per tag (and snowflakes and order numbers
/// over everything), every call answered within its bound, every error one a caller may
/// get in that state. Who may draw (issue 30): role fz draws through every node, and the
/// model of its grants, revokes and drops judges each of its draws once the node has read the
/// definitions since the change, and requires that read within 10 s of a change while every
/// node is up; grants to a role the workers lack (ghost) are refused there, and must hold
/// nothing else back. At the end every definition converges on every node but those refusals.
/// `SEQGEN_CITUS_FUZZ_SEED` (a seed or a comma-separated list, each on a cluster of its own)
/// and `SEQGEN_CITUS_FUZZ_STEPS` (default 1,3 and 100).
#[test]
fn citus_operation_fuzzer() {
    if !citus_here() {
        return;
    }
    let seeds = std::env::var("SEQGEN_CITUS_FUZZ_SEED").unwrap_or_else(|_| "1,3".into());
    let steps: usize = std::env::var("SEQGEN_CITUS_FUZZ_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(100);
    for seed in seeds.split(',').map(|s| s.trim().parse::<u64>().expect("SEQGEN_CITUS_FUZZ_SEED: seeds")) {
        citus_fuzz(seed, steps);
    }
}

fn citus_fuzz(seed: u64, steps: usize) {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::{BTreeSet, HashMap, HashSet};
    let mut rng = StdRng::seed_from_u64(seed);
    let cl = Citus::start(56350);
    // a clone of worker 2, once it has been split off (issue 30, item 2): a fourth node
    let split: std::cell::OnceCell<Cluster> = std::cell::OnceCell::new();
    let mut ports = cl.ports();
    let mut nodes: Vec<&Cluster> = std::iter::once(&cl.coord).chain(cl.workers.iter()).collect();
    // every node's node id (the coordinator's assignment for its Citus group)
    let mut ids: Vec<usize> = vec![0, 1, 2];
    let mut readded = false;
    // the two events that change a group, once per run each, at the first step from these on
    // that is no draw or change and finds every node up
    let (split_at, readd_at) =
        (rng.random_range(10..steps.max(11) * 3 / 4), rng.random_range(10..steps.max(11) * 3 / 4));
    let mut down: HashSet<usize> = HashSet::new();
    let mut tags: BTreeSet<String> = ["order".to_string(), "inv".to_string()].into();
    let mut templated: HashSet<String> = ["inv".to_string()].into();
    let mut next_name = 0;
    let mut seg: HashMap<String, Ledger> = HashMap::new();
    let mut sf = Ledger::default();
    let mut ord: HashMap<String, HashSet<String>> = HashMap::new();
    let mut counts: HashMap<&'static str, (usize, usize)> = HashMap::new();
    // tags made opaque on the coordinator, and the IDs of each tag's last single draw
    let mut opaque: HashSet<String> = HashSet::new();
    let mut last_next: HashMap<String, Vec<i64>> = HashMap::new();
    let mut events: HashMap<&'static str, usize> = HashMap::new();
    let bound = Duration::from_secs(20);
    // who may draw (issue 30): role fz, propagated by Citus, drawn as through every node; role
    // ghost only on the coordinator, so that a worker refuses every grant to it. The model:
    // each tag's grant to fz (and to public) and when it last changed, the tags dropped and
    // when (Unix ms, taken once the change committed). A worker's `seqgen_node().
    // definitions_read` is when its last successful read of the definitions began: once that
    // is later than a change, the change must hold there (a revoke or a drop never waits for
    // anything else, whatever the worker refuses meanwhile).
    let unix_ms = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64() * 1000.0;
    cl.coord.sql("CREATE ROLE fz LOGIN");
    cl.coord.sql("SET citus.enable_create_role_propagation = off; CREATE ROLE ghost");
    grant_next_everywhere(&mut cl.coord.connect(), "fz");
    let mut fz_grant: HashMap<(String, &'static str), (bool, f64)> = HashMap::new();
    // granted before any fault: a revoke the workers miss later shows as a draw
    cl.coord.sql("SELECT seqgen_grant('order', 'fz'); SELECT seqgen_grant('inv', 'fz')");
    for t in ["order", "inv"] {
        fz_grant.insert((t.to_string(), "fz"), (true, unix_ms()));
    }
    let mut dropped: HashMap<String, f64> = HashMap::new();
    // and the bound: a worker that has been up, with the coordinator up and answering, for
    // `bound_read` since a change has read the definitions since (every 2 s, each read well
    // under a second here)
    let bound_read = Duration::from_secs(10);
    let mut disturbed = vec![Instant::now(); 3];
    let mut model_checks = (0usize, 0usize);
    // what a caller may be told: the tag is not (yet, or no longer) there, it has no template,
    // its node is stopping or starting, a bounded wait ran out; and the connection going away
    let allowed = ["42704", "55000", "57P01", "57P03", "55P03", "08006", "08001", "XX000"];
    for step in 0..steps {
        let live: Vec<usize> = (0..nodes.len()).filter(|i| !down.contains(i)).collect();
        let roll = rng.random_range(0..100);
        let what: &'static str;
        if roll < 55 && !live.is_empty() {
            // a draw through a random live node
            let n = live[rng.random_range(0..live.len())];
            let tag = tags.iter().nth(rng.random_range(0..tags.len())).cloned().unwrap_or_default();
            let k = rng.random_range(1..40);
            if rng.random_range(0..3) == 0 {
                // a draw as fz, of a tag in use or of one dropped: does the model allow it?
                let dropped_tag = dropped.keys().nth(rng.random_range(0..dropped.len().max(1))).cloned();
                // half the time a tag whose grant was revoked: the model's sharpest question
                let revoked: Vec<&String> =
                    fz_grant.iter().filter(|(k, v)| !v.0 && tags.contains(&k.0)).map(|(k, _)| &k.0).collect();
                let (tag, gone) = match dropped_tag {
                    Some(d) if rng.random_range(0..3) == 0 => (d, true),
                    _ if !revoked.is_empty() && rng.random_range(0..2) == 0 => {
                        (revoked[rng.random_range(0..revoked.len())].clone(), false)
                    }
                    _ => (tags.iter().nth(rng.random_range(0..tags.len())).cloned().unwrap_or_default(), false),
                };
                // when node n's last successful read began, asked before the draw (it is recorded
                // after the read's commit, so the draw sees what that read applied; the
                // coordinator has no read: its changes hold there at once)
                let read = if n == 0 {
                    Some(f64::MAX)
                } else {
                    tcp(ports[n])
                        .query_one(
                            "SELECT (extract(epoch FROM definitions_read) * 1000)::float8 FROM seqgen_node()",
                            &[],
                        )
                        .ok()
                        .and_then(|r| r.get::<_, Option<f64>>(0))
                };
                let sql = format!("SELECT seqgen_next('{tag}')::text");
                let r = Client::connect(&format!("host=127.0.0.1 port={} user=fz dbname=postgres", ports[n]), NoTls)
                    .and_then(|mut c| c.query(&sql, &[]));
                // fz may draw through its own grant or through public's
                let never = (false, 0.0);
                let (own, pub_) = (
                    fz_grant.get(&(tag.clone(), "fz")).copied().unwrap_or(never),
                    fz_grant.get(&(tag.clone(), "public")).copied().unwrap_or(never),
                );
                let (granted, at) = (own.0 || pub_.0, own.1.max(pub_.1));
                let settled_at = if gone { dropped[&tag] } else { at };
                let calm = |t: f64| read.is_some_and(|r| r > t);
                let quiet = disturbed[0].max(disturbed[n]).elapsed() > bound_read;
                assert!(
                    calm(settled_at) || !quiet || unix_ms() - settled_at < bound_read.as_millis() as f64,
                    "step {step} (seed {seed}): port {} has not read the definitions in the {:.0} ms since {tag} was {}, \
                     with every node up and answering for {bound_read:?} (its last read began at {read:?})",
                    ports[n],
                    unix_ms() - settled_at,
                    if gone { "dropped" } else if granted { "granted" } else { "revoked" }
                );
                let e = counts.entry("fz").or_default();
                match &r {
                    Ok(rows) => {
                        e.0 += 1;
                        if !gone {
                            let ids: Vec<i64> = rows.iter().map(|r| r.get::<_, String>(0).parse().unwrap()).collect();
                            seg.entry(tag.clone()).or_default().add(ids);
                        }
                    }
                    Err(_) => e.1 += 1,
                }
                if (gone || !granted) && calm(settled_at) {
                    // revoked (or never granted), or dropped, before node n's last read
                    model_checks.0 += 1;
                    let code = r.as_ref().err().and_then(sqlstate);
                    assert!(
                        r.is_err(),
                        "step {step} (seed {seed}): fz drew {tag} on port {} {:.0} ms after its {} on the coordinator, though the node read the definitions since",
                        ports[n],
                        unix_ms() - settled_at,
                        if gone { "drop" } else { "revoke" }
                    );
                    let want: &[&str] = if gone { &["42704"] } else { &["42501", "42704"] };
                    assert!(
                        code.as_deref().is_some_and(|c| want.contains(&c) || allowed.contains(&c)),
                        "step {step} (seed {seed}): fz on {tag}, port {}: {r:?}",
                        ports[n]
                    );
                } else if granted && !gone && calm(at) {
                    model_checks.1 += 1;
                    if let Err(err) = &r {
                        // granted long enough ago: only a node going away or a bounded wait,
                        // not "no such tag" or "permission denied"
                        let code = sqlstate(err).unwrap_or_else(|| "08006".into());
                        assert!(
                            code != "42501" && code != "42704",
                            "step {step} (seed {seed}): fz refused {tag} on port {} {:.0} ms after its grant: {err:?}",
                            ports[n],
                            unix_ms() - at
                        );
                    }
                }
                what = "fz draw";
                for (tag, l) in &seg {
                    assert_eq!(
                        l.duplicates(),
                        0,
                        "step {step} ({what}, seed {seed}): tag {tag} issued {:?} twice",
                        l.examples()
                    );
                }
                continue;
            }
            let (kind, sql) = match rng.random_range(0..7) {
                0 => ("next", format!("SELECT seqgen_next('{tag}')::text FROM generate_series(1, {k})")),
                1 => ("batch", format!("SELECT b::text FROM seqgen_next_batch('{tag}', {k}) b")),
                2 => ("snowflake", format!("SELECT seqgen_snowflake()::text FROM generate_series(1, {k})")),
                3 => ("order_no", format!("SELECT seqgen_order_no('{tag}') FROM generate_series(1, {k})")),
                // this node's identity: its group
                4 => ("node", "SELECT node_id::text FROM seqgen_node()".to_string()),
                // every node's, as this node sees it through Citus
                5 => (
                    "cluster_nodes",
                    "SELECT CASE WHEN reachable THEN node_id::text ELSE 'down' END FROM seqgen_cluster_nodes()".to_string(),
                ),
                // an ID of an opaque tag, taken apart on this node (whichever node drew it)
                _ => match last_next.get(&tag).filter(|_| opaque.contains(&tag)) {
                    Some(ids) => ("reveal", format!("SELECT seqgen_reveal('{tag}', id)::text FROM unnest('{{{}}}'::bigint[]) WITH ORDINALITY u(id, o) ORDER BY o", ids.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(","))),
                    None => ("next", format!("SELECT seqgen_next('{tag}')::text FROM generate_series(1, {k})")),
                },
            };
            what = kind;
            let mut c = tcp(ports[n]);
            let (t, r) = timed(|| c.query(&sql, &[]));
            assert!(t < bound, "step {step} (seed {seed}): {sql} on port {} took {t:?}", ports[n]);
            let e = counts.entry(kind).or_default();
            match r {
                Ok(rows) => {
                    e.0 += 1;
                    let vals: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
                    match kind {
                        "snowflake" => sf.add(vals.iter().map(|v| v.parse::<i64>().unwrap())),
                        "order_no" => {
                            let set = ord.entry(tag.clone()).or_default();
                            for v in vals {
                                assert!(
                                    set.insert(v.clone()),
                                    "step {step} (seed {seed}): order number {v} issued twice"
                                );
                            }
                        }
                        "node" => assert_eq!(
                            vals,
                            vec![ids[n].to_string()],
                            "step {step} (seed {seed}): seqgen_node() on port {} is not its node id",
                            ports[n]
                        ),
                        "cluster_nodes" => {
                            // one row per node; the nodes that answer, each with its own group
                            assert_eq!(
                                vals.len(),
                                nodes.len(),
                                "step {step} (seed {seed}): seqgen_cluster_nodes(): {vals:?}"
                            );
                            let up: Vec<&String> = vals.iter().filter(|v| *v != "down").collect();
                            let distinct: HashSet<&&String> = up.iter().collect();
                            assert_eq!(
                                distinct.len(),
                                up.len(),
                                "step {step} (seed {seed}): two nodes with one id: {vals:?}"
                            );
                            for v in &up {
                                let g: usize = v.parse().unwrap();
                                assert!(
                                    ids.iter().position(|x| *x == g).is_some_and(|i| !down.contains(&i)),
                                    "step {step} (seed {seed}): seqgen_cluster_nodes(): {vals:?}"
                                );
                            }
                        }
                        "reveal" => {
                            // one session's draw in one statement: its counters increase
                            let counters: Vec<i64> = vals.iter().map(|v| v.parse().unwrap()).collect();
                            assert!(
                                counters.windows(2).all(|w| w[0] < w[1]),
                                "step {step} (seed {seed}): IDs of {tag} taken apart on port {} out of order: {counters:?}",
                                ports[n]
                            );
                        }
                        _ => {
                            let drawn: Vec<i64> = vals.iter().map(|v| v.parse().unwrap()).collect();
                            // every segment ID carries the node id of the node that drew it
                            assert!(
                                drawn.iter().all(|v| v & 255 == ids[n] as i64),
                                "step {step} (seed {seed}): {tag} on port {} issued an ID outside its lane ({}): {drawn:?}",
                                ports[n],
                                ids[n]
                            );
                            if kind == "next" {
                                last_next.insert(tag.clone(), drawn.clone());
                            }
                            seg.entry(tag.clone()).or_default().add(drawn);
                        }
                    }
                }
                Err(err) => {
                    e.1 += 1;
                    let code = sqlstate(&err).unwrap_or_else(|| "08006".into());
                    let msg = err.as_db_error().map_or(err.to_string(), |d| d.message().to_string());
                    // XX000 only from Citus losing a node mid-statement, never from pg_seqgen
                    let ours = err.as_db_error().and_then(|d| d.routine()) == Some("pg_seqgen");
                    assert!(
                        allowed.contains(&code.as_str()) && !(ours && code == "XX000"),
                        "step {step} (seed {seed}): {sql} on port {}: {code} {msg}",
                        ports[n]
                    );
                }
            }
        } else if roll < 72 && !down.contains(&0) {
            // a definition change on the coordinator
            let tag = tags.iter().nth(rng.random_range(0..tags.len())).cloned().unwrap_or_default();
            let sql = match rng.random_range(0..18) {
                12 | 16 => format!("SELECT seqgen_grant('{tag}', 'fz')"),
                // a revoke of what fz holds (the model's sharpest case)
                13 | 14 | 17 => {
                    let held: Vec<&String> = fz_grant
                        .iter()
                        .filter(|(k, v)| v.0 && k.1 == "fz" && tags.contains(&k.0))
                        .map(|(k, _)| &k.0)
                        .collect();
                    let t = if held.is_empty() { &tag } else { held[rng.random_range(0..held.len())] };
                    format!("SELECT seqgen_revoke('{t}', 'fz')")
                }
                // refused by every worker (the role is not there), and by nothing else
                15 => format!("SELECT seqgen_grant('{tag}', 'ghost')"),
                0 => {
                    next_name += 1;
                    format!("SELECT seqgen_create('f{next_name}', {})", rng.random_range(1..300))
                }
                1 => format!("SELECT seqgen_alter('{tag}', {})", rng.random_range(1..500)),
                2 => format!(
                    "SELECT seqgen_set_template('{tag}', '{}')",
                    ["F{yyyy}{MM}{dd}-{node:3}-{seq:6}", "F{yyyy}{MM}{dd}{HH}-{node:3}-{seq:5}", "G{node:3}{seq:8}"]
                        [rng.random_range(0..3)]
                ),
                3 | 4 => format!("SELECT seqgen_grant('{tag}', 'public')"),
                5 => format!("SELECT seqgen_revoke('{tag}', 'public')"),
                6 if tags.len() > 2 => format!("SELECT seqgen_drop('{tag}')"),
                7 => format!("SELECT seqgen_make_opaque('{tag}')"),
                8 => format!("SELECT seqgen_set_template('{tag}', 'H{{node:3}}{{yyyy}}{{MM}}{{dd}}-{{seq:6:opaque}}')"),
                _ => {
                    next_name += 1;
                    format!("SELECT seqgen_create('f{next_name}', {})", rng.random_range(1..300))
                }
            };
            what = "change";
            let mut c = cl.coord.connect();
            let r = c.batch_execute(&sql);
            println!("step {step}: {sql}: {}", r.as_ref().map_or_else(|e| format!("{e}"), |_| "ok".into()));
            match r {
                Ok(()) => {
                    if let Some(name) = sql.strip_prefix("SELECT seqgen_create('").and_then(|s| s.split('\'').next()) {
                        tags.insert(name.to_string());
                    }
                    if sql.contains("seqgen_set_template") {
                        templated.insert(tag.clone());
                    }
                    for who in ["fz", "public"] {
                        if sql.contains(&format!("'{who}')")) {
                            // the tag the statement names (a revoke may name another than `tag`)
                            let named = sql.split('\'').nth(1).unwrap_or_default().to_string();
                            fz_grant.insert((named, who), (sql.contains("seqgen_grant"), unix_ms()));
                        }
                    }
                    if sql.contains("seqgen_drop") {
                        dropped.insert(tag.clone(), unix_ms());
                        fz_grant.retain(|k, _| k.0 != tag);
                        tags.remove(&tag);
                        opaque.remove(&tag);
                        last_next.remove(&tag);
                    }
                    if sql.contains("seqgen_make_opaque") {
                        opaque.insert(tag.clone());
                    }
                }
                Err(err) => {
                    // a template that could repeat numbers of the tag's history is refused
                    let code = sqlstate(&err).unwrap_or_default();
                    assert!(
                        ["22023", "57P01", "55P03"].contains(&code.as_str()),
                        "step {step} (seed {seed}): {sql}: {err:?}"
                    );
                }
            }
        } else if step >= split_at && split.get().is_none() && down.is_empty() {
            // worker 2 split: a clone added and promoted with its own group, while a session on
            // it draws every 10 ms (before its new group commits it reads worker 2's)
            let (clone, id) = clone_of(&cl.coord, &cl.workers[1], "citus56350_w2_clone", 56354);
            let tag = tags.iter().next().cloned().unwrap_or_default();
            let stop = Arc::new(AtomicBool::new(false));
            let sql = format!("SELECT seqgen_snowflake()::text, seqgen_next('{tag}')::text");
            let drawer = draw_on(clone.port, sql.clone(), stop.clone(), Duration::from_millis(10));
            // and worker 2 draws on meanwhile
            let primary = draw_on(cl.workers[1].port, sql, stop.clone(), Duration::from_millis(2));
            let (took, back, group, node) = split_off(&cl.coord, id, clone.port);
            stop.store(true, Ordering::Relaxed);
            let d = drawer.join().unwrap();
            let p = primary.join().unwrap();
            println!(
                "step {step} (seed {seed}): worker 2 split in {took:?}; its clone drew as group {group} with node id {node} {back:?} after, {} draws during the split ({:?} failed), worker 2 {} ({:?} failed)",
                d.rows.len(),
                d.errors,
                p.rows.len(),
                p.errors
            );
            assert!(p.errors.is_empty(), "step {step} (seed {seed}): worker 2 failed during the split: {:?}", p.errors);
            for r in d.rows.iter().chain(&p.rows) {
                sf.add([r[0].parse::<i64>().unwrap()]);
                seg.entry(tag.clone()).or_default().add([r[1].parse::<i64>().unwrap()]);
            }
            assert!(
                d.errors.iter().all(|e| e == "25006" || allowed.contains(&e.as_str())),
                "step {step} (seed {seed}): the clone failed otherwise: {:?}",
                d.errors
            );
            let _ = split.set(clone);
            nodes.push(split.get().unwrap());
            ports.push(56354);
            // dense whatever the coordinator's restarts made Citus skip
            assert_eq!(
                node as usize,
                ids.iter().max().unwrap() + 1,
                "step {step} (seed {seed}): the clone split off as group {group} has node id {node}, not the next one"
            );
            ids.push(node as usize);
            disturbed.push(Instant::now());
            what = "split worker 2";
            *events.entry(what).or_default() += 1;
        } else if step >= readd_at && !readded && down.is_empty() {
            // worker 1 removed from the cluster (its shards drained away first) and added back:
            // a new Citus group, and from the coordinator the next node id, whatever group ids
            // the coordinator's crashes skipped
            let p = ports[1];
            let skipped_to = cl.coord.one_i64("SELECT last_value FROM pg_dist_groupid_seq");
            cl.coord.sql(&format!("SELECT citus_drain_node('127.0.0.1', {p}, shard_transfer_mode => 'block_writes')"));
            cl.coord.sql(&format!("SELECT citus_remove_node('127.0.0.1', {p})"));
            cl.coord.sql(&format!("SELECT citus_add_node('127.0.0.1', {p})"));
            let group: i32 = tcp(p).query_one("SELECT groupid FROM pg_dist_local_group", &[]).unwrap().get(0);
            let next = ids.iter().max().unwrap() + 1;
            let back = recovery_time(Duration::from_secs(30), || {
                tcp(p)
                    .query_one("SELECT node_id FROM seqgen_snowflake_decode(seqgen_snowflake())", &[])
                    .is_ok_and(|r| r.get::<_, i32>(0) as usize == next)
            });
            println!(
                "step {step} (seed {seed}): worker 1 removed and added again as group {group} (the group sequence stood at \
                 {skipped_to}), numbering with node id {next} {back:?} later"
            );
            ids[1] = next;
            disturbed[1] = Instant::now();
            readded = true;
            what = "remove and add worker 1";
            *events.entry(what).or_default() += 1;
        } else if roll < 84 {
            // a server event
            let i = rng.random_range(0..nodes.len());
            match (rng.random_range(0..3), down.contains(&i)) {
                (_, true) => {
                    nodes[i].start();
                    disturbed[i] = Instant::now();
                    down.remove(&i);
                    what = "start";
                    *events.entry(what).or_default() += 1;
                }
                (0, false) if i > 0 => {
                    nodes[i].stop("immediate");
                    down.insert(i);
                    what = "stop worker";
                    *events.entry(what).or_default() += 1;
                }
                (1, false) => {
                    signal(nodes[0].postmaster_pid(), "STOP");
                    let t0 = Instant::now();
                    // the workers draw on while the coordinator does not answer
                    for w in cl.workers.iter().filter(|w| !down.contains(&(if w.port == ports[1] { 1 } else { 2 }))) {
                        let mut c = tcp(w.port);
                        let (t, r) =
                            timed(|| c.query("SELECT seqgen_snowflake()::text FROM generate_series(1, 20)", &[]));
                        let rows = r.unwrap_or_else(|e| panic!("step {step} (seed {seed}): a worker stopped drawing while the coordinator was frozen: {e:?}"));
                        assert!(t < bound);
                        sf.add(rows.iter().map(|r| r.get::<_, String>(0).parse::<i64>().unwrap()));
                    }
                    std::thread::sleep(Duration::from_secs(3).saturating_sub(t0.elapsed()));
                    signal(nodes[0].postmaster_pid(), "CONT");
                    disturbed[0] = Instant::now();
                    what = "freeze coordinator";
                    *events.entry(what).or_default() += 1;
                }
                _ => {
                    // a restart, or a crash (Citus's group sequence then skips ahead: the node
                    // ids a worker added later gets must not)
                    let crash = rng.random_range(0..2) == 0;
                    nodes[0].stop(if crash { "immediate" } else { "fast" });
                    nodes[0].start();
                    disturbed[0] = Instant::now();
                    what = if crash { "crash coordinator" } else { "restart coordinator" };
                    *events.entry(what).or_default() += 1;
                }
            }
        } else {
            std::thread::sleep(Duration::from_millis(rng.random_range(0..2500)));
            what = "pause";
        }
        // invariants after every step
        for (tag, l) in &seg {
            assert_eq!(
                l.duplicates(),
                0,
                "step {step} ({what}, seed {seed}): tag {tag} issued {:?} twice",
                l.examples()
            );
        }
        assert_eq!(
            sf.duplicates(),
            0,
            "step {step} ({what}, seed {seed}): snowflakes {:?} issued twice",
            sf.examples()
        );
    }
    // faults over: every node up, and every definition converges but the refusals the model
    // expects (a grant to ghost, which no worker has; a template a worker's own numbers of
    // this period rule out)
    for (i, node) in nodes.iter().enumerate() {
        if down.remove(&i) {
            node.start();
        }
    }
    let mut c = cl.coord.connect();
    let mut last = String::new();
    let converged = |c: &mut Client, last: &mut String| {
        let r: Vec<(i32, String, String, String)> = c
            .query(
                "SELECT citus_nodeid, coalesce(biz_tag, '(unread)'), coalesce(field, ''), problem FROM seqgen_cluster_refused()",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect();
        let unexpected: Vec<_> = r
            .iter()
            .filter(|x| {
                let ghost = x.2.ends_with(".grants[ghost]") && x.3.contains("ghost");
                !ghost && !x.2.ends_with(".template")
            })
            .collect();
        // every node's tags and their grants (ghost's left out) are the coordinator's
        let grants: Vec<(i32, String)> = c
            .query(
                "SELECT nodeid, result FROM run_command_on_all_nodes($$SELECT string_agg(biz_tag || ':' || \
                 array_to_string(ARRAY(SELECT r.rolname FROM pg_roles r WHERE r.oid = ANY (drawers) \
                                       AND r.rolname <> 'ghost' ORDER BY 1), ','), ' ' ORDER BY biz_tag) \
                 FROM seqgen.alloc$$) ORDER BY nodeid",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let same = grants.windows(2).all(|w| w[0].1 == w[1].1);
        // what a worker still has that the coordinator took away: revokes and drops not applied
        let pairs = |text: &str| -> BTreeSet<(String, String)> {
            text.split(' ')
                .filter(|t| !t.is_empty())
                .flat_map(|t| {
                    let (tag, roles) = t.split_once(':').unwrap_or((t, ""));
                    std::iter::once((tag.to_string(), String::new()))
                        .chain(roles.split(',').filter(|r| !r.is_empty()).map(|r| (tag.to_string(), r.to_string())))
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        let coord = grants.iter().find(|g| g.0 == 1).map(|g| pairs(&g.1)).unwrap_or_default();
        let missed: Vec<String> = grants
            .iter()
            .filter(|g| g.0 != 1)
            .flat_map(|g| {
                pairs(&g.1)
                    .difference(&coord)
                    .map(|(t, r)| match r.as_str() {
                        "" => format!("node {}: drop of {t} not applied", g.0),
                        r => format!("node {}: revoke of {t} from {r} not applied", g.0),
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        *last = format!("{missed:?}; refused: {r:?}; grants per node: {grants:?}");
        unexpected.is_empty() && same && grants.len() == nodes.len()
    };
    let t = Instant::now();
    while !converged(&mut c, &mut last) {
        assert!(t.elapsed() < Duration::from_secs(30), "seed {seed}: the definitions did not converge: {last}");
        std::thread::sleep(Duration::from_millis(200));
    }
    println!("seed {seed}: converged {:?} after the last fault; {last}", t.elapsed());
    println!(
        "seed {seed}: fz draws judged by the model: {} that had to be refused, {} that had to be allowed",
        model_checks.0, model_checks.1
    );
    let segs: usize = seg.values().map(|l| l.total).sum();
    let ords: usize = ord.values().map(|s| s.len()).sum();
    println!(
        "seed {seed}, {steps} steps: {segs} segment IDs, {} snowflakes, {ords} order numbers, 0 twice; draws ok/failed: {counts:?}; events: {events:?}; tags at the end: {tags:?}",
        sf.total
    );
    let ok: usize = counts.values().map(|c| c.0).sum();
    assert!(ok > steps / 4, "too few draws succeeded to tell: {counts:?}");
}

/// Issue 30, item 1: a worker applies every change of the coordinator's definitions it can,
/// each on its own. With changes active that a worker refuses (a grant to a role it lacks, a
/// template its own counters rule out), a tag created later is drawn there, and a revoke and a
/// drop take effect there within the read period; the refusals are listed on the coordinator
/// and go once their cause does. Item 4: a tag created right after `CREATE EXTENSION citus`
/// has node bits.
#[test]
fn citus_definitions_converge_tag_by_tag() {
    if !citus_here() {
        return;
    }
    let cl = Citus::start(56370);
    let (w1, w2) = (cl.workers[0].port, cl.workers[1].port);
    let mut c = cl.coord.connect();
    c.batch_execute("CREATE ROLE app LOGIN").unwrap();
    grant_next_everywhere(&mut c, "app");
    let app =
        |port: u16| Client::connect(&format!("host=127.0.0.1 port={port} user=app dbname=postgres"), NoTls).unwrap();
    let refused = |c: &mut Client| -> Vec<(i32, String, String, String)> {
        c.query(
            "SELECT citus_nodeid, coalesce(biz_tag, '(unread)'), coalesce(field, ''), problem \
             FROM seqgen_cluster_refused() ORDER BY 1, 2, 3",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect()
    };

    // what the coordinator itself refuses now: a {node} too narrow for a later worker's
    // group, node bits of another width than every worker's copy
    c.batch_execute("SELECT seqgen_create('narrow', 10)").unwrap();
    let e = c.batch_execute("SELECT seqgen_set_template('narrow', 'N{node:1}-{seq:5}')").unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("22023"), "{e:?}");
    let e = c.batch_execute("SELECT seqgen_set_node_bits('narrow', 4)").unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("22023"), "{e:?}");

    // trigger 1: a grant to a role only the coordinator has
    c.batch_execute(
        "SET citus.enable_create_role_propagation = off; CREATE ROLE ghost; \
         RESET citus.enable_create_role_propagation; \
         SELECT seqgen_create('g', 10); SELECT seqgen_grant('g', 'ghost')",
    )
    .unwrap();
    // trigger 2: worker 1 numbers this period, the coordinator does not, so the coordinator
    // accepts a template that worker 1 must refuse until the period ends
    c.batch_execute(
        "SELECT seqgen_create('inv2', 10); SELECT seqgen_set_template('inv2', 'J{yyyy}{MM}{dd}-{node:3}-{seq:6}')",
    )
    .unwrap();
    let mut a = tcp(w1);
    let mut b = tcp(w2);
    for _ in 0..3 {
        a.query_one("SELECT seqgen_order_no('inv2')", &[]).unwrap();
    }
    c.batch_execute("SELECT seqgen_set_template('inv2', 'J{yyyy}{MM}{dd}-{node:3}-{seq:6:opaque}')").unwrap();
    // (2 s here alone; the bound is wide because this file starts nine Citus clusters at once
    // on two cores, where a worker's connection to the coordinator can time out for a while:
    // one run of the whole file took over 20 s)
    let t = recovery_time(Duration::from_secs(60), || {
        let r = refused(&mut c);
        r.iter().filter(|x| x.1 == "g").count() == 2 && r.iter().any(|x| x.1 == "inv2")
    });
    let r = refused(&mut c);
    println!("refusals listed on the coordinator {t:?} after the changes: {r:#?}");
    assert!(r.iter().any(|x| x.1 == "g" && x.2.ends_with(".grants[ghost]") && x.3.contains("ghost")), "{r:?}");
    let inv2: Vec<_> = r.iter().filter(|x| x.1 == "inv2").collect();
    assert_eq!(inv2.len(), 1, "only worker 1 numbered inv2 this period: {r:?}");
    assert!(inv2[0].2.ends_with(".template"), "{r:?}");
    assert!(cl.workers[0].log().contains("this node refused a change of tag"));
    // worker 2 took the new template
    let no: String = b.query_one("SELECT seqgen_order_no('inv2')", &[]).unwrap().get(0);
    println!("worker 2's number under the new template: {no}");

    // with both refusals active: a new tag, a grant, a revoke and a drop reach every worker
    c.batch_execute("SELECT seqgen_create('late', 10); SELECT seqgen_grant('late', 'app')").unwrap();
    for (name, port) in [("worker 1", w1), ("worker 2", w2)] {
        let t =
            recovery_time(Duration::from_secs(60), || app(port).query_one("SELECT seqgen_next('late')", &[]).is_ok());
        println!("a new tag and its grant reached {name} in {t:?}");
    }
    c.batch_execute("SELECT seqgen_revoke('late', 'app')").unwrap();
    for (name, port) in [("worker 1", w1), ("worker 2", w2)] {
        let t = recovery_time(Duration::from_secs(60), || {
            app(port).query_one("SELECT seqgen_next('late')", &[]).err().and_then(|e| sqlstate(&e)).as_deref()
                == Some("42501")
        });
        println!("a revoke reached {name} in {t:?}");
    }
    c.batch_execute("SELECT seqgen_drop('late')").unwrap();
    for (name, p) in [("worker 1", &mut a), ("worker 2", &mut b)] {
        let t = recovery_time(Duration::from_secs(60), || {
            p.query_one("SELECT seqgen_next('late')", &[]).err().and_then(|e| sqlstate(&e)).as_deref() == Some("42704")
        });
        println!("a drop reached {name} in {t:?}");
    }
    // the refusals are still there (they were not in the way)
    let r = refused(&mut c);
    assert!(r.iter().any(|x| x.1 == "g") && r.iter().any(|x| x.1 == "inv2"), "{r:?}");

    // the role made on the workers: the grant applies and its refusal goes
    for p in [&mut a, &mut b] {
        p.batch_execute(
            "SET citus.enable_ddl_propagation = off; CREATE ROLE ghost LOGIN; \
             GRANT EXECUTE ON FUNCTION seqgen_next TO ghost",
        )
        .unwrap();
    }
    let t = recovery_time(Duration::from_secs(60), || !refused(&mut c).iter().any(|x| x.1 == "g"));
    println!("the grant's refusal went {t:?} after the role was created on the workers");
    let ghost = Client::connect(&format!("host=127.0.0.1 port={w2} user=ghost dbname=postgres"), NoTls)
        .unwrap()
        .query_one("SELECT seqgen_next('g')", &[]);
    assert!(ghost.is_ok(), "{ghost:?}");

    // item 5: a worker back from downtime reads the definitions before it serves a tag: a
    // drop and a revoke made while it was down hold from its first call
    c.batch_execute(
        "SELECT seqgen_create('gone', 10); SELECT seqgen_create('kept', 10); \
         SELECT seqgen_grant('gone', 'app'); SELECT seqgen_grant('kept', 'app')",
    )
    .unwrap();
    let t = recovery_time(Duration::from_secs(60), || {
        app(w1).query_one("SELECT seqgen_next('gone') + seqgen_next('kept')", &[]).is_ok()
    });
    println!("worker 1 drew two new tags {t:?} after their grants");
    cl.workers[0].stop("fast");
    c.batch_execute("SELECT seqgen_drop('gone'); SELECT seqgen_revoke('kept', 'app')").unwrap();
    cl.workers[0].start();
    let mut a1 = app(w1);
    let (t, e) = timed(|| a1.query_one("SELECT seqgen_next('gone')", &[]));
    let e = e.expect_err("worker 1 drew from a tag dropped while it was down");
    assert_eq!(sqlstate(&e).as_deref(), Some("42704"), "{e:?}");
    let e = a1.query_one("SELECT seqgen_next('kept')", &[]).expect_err("a revoke made while worker 1 was down");
    assert_eq!(sqlstate(&e).as_deref(), Some("42501"), "{e:?}");
    println!("worker 1, just started, refused a tag dropped while it was down in {t:?}, and a revoked one");

    // item 4: a tag made in the transaction after CREATE EXTENSION citus gets node bits
    c.batch_execute("CREATE DATABASE fresh").unwrap();
    let mut f = cl.coord.connect_db("fresh");
    f.batch_execute("CREATE EXTENSION pg_seqgen").unwrap();
    // the allocator has read "no Citus here"
    std::thread::sleep(Duration::from_millis(1500));
    f.batch_execute("SELECT seqgen_create('before')").unwrap();
    f.batch_execute("CREATE EXTENSION citus; SELECT seqgen_create('early')").unwrap();
    let bits: Vec<(String, i32)> = f
        .query("SELECT biz_tag, node_bits FROM seqgen.alloc ORDER BY biz_tag", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    println!("node bits in a database that just got Citus: {bits:?}");
    assert_eq!(bits, vec![("before".to_string(), 0), ("early".to_string(), 8)]);
    drop(f);
    cl.assert_no_repeats();
}

/// One session on `port` runs `sql` (columns of text) every `every` until `stop`,
/// reconnecting as needed: the rows it got, and the SQLSTATEs of its failures.
fn draw_on(port: u16, sql: String, stop: Arc<AtomicBool>, every: Duration) -> std::thread::JoinHandle<Drawn> {
    std::thread::spawn(move || {
        let mut d = Drawn::default();
        let mut c: Option<Client> = None;
        while !stop.load(Ordering::Relaxed) {
            if c.as_ref().is_none_or(|c| c.is_closed()) {
                c = Client::connect(&format!("host=127.0.0.1 port={port} user=postgres dbname=postgres"), NoTls).ok();
            }
            if let Some(s) = c.as_mut() {
                match s.query_one(&sql, &[]) {
                    Ok(r) => d.rows.push((0..r.len()).map(|i| r.get::<_, String>(i)).collect()),
                    Err(e) => d.errors.push(sqlstate(&e).unwrap_or_else(|| e.to_string())),
                }
            }
            std::thread::sleep(every);
        }
        d
    })
}

#[derive(Default)]
struct Drawn {
    rows: Vec<Vec<String>>,
    errors: Vec<String>,
}

/// A streaming clone of `worker` on `port`, registered with `citus_add_clone_node`: its
/// cluster and its Citus node id.
fn clone_of(coord: &Cluster, worker: &Cluster, name: &str, port: u16) -> (Cluster, i32) {
    let clone = worker.standby(name, port);
    // Citus finds its clone in pg_stat_replication by address: stream over TCP
    let auto = format!("{}/postgresql.auto.conf", clone.data());
    let conf = std::fs::read_to_string(&auto).unwrap();
    let conf: String = conf.lines().filter(|l| !l.starts_with("primary_conninfo")).map(|l| format!("{l}\n")).collect();
    std::fs::write(
        &auto,
        format!(
            "{conf}primary_conninfo = 'host=127.0.0.1 port={} user=postgres application_name=127.0.0.1'\n",
            worker.port
        ),
    )
    .unwrap();
    clone.stop("fast");
    clone.start();
    recovery_time(Duration::from_secs(30), || {
        worker
            .one_i64("SELECT count(*) FROM pg_stat_replication WHERE client_addr = '127.0.0.1' AND state = 'streaming'")
            > 0
    });
    let id: i32 = coord
        .connect()
        .query_one(&format!("SELECT citus_add_clone_node('127.0.0.1', {port}, '127.0.0.1', {})", worker.port), &[])
        .unwrap()
        .get(0);
    (clone, id)
}

/// `citus_promote_clone_and_rebalance` of clone `id` on `port`: how long it took, and how
/// long after it the clone drew a snowflake with its new group's node id (which it returns
/// with the group: the node id is the coordinator's assignment, one above every id before).
fn split_off(coord: &Cluster, id: i32, port: u16) -> (Duration, Duration, i32, i32) {
    let (took, r) = timed(|| coord.connect().batch_execute(&format!("SELECT citus_promote_clone_and_rebalance({id})")));
    r.unwrap();
    let group: i32 = tcp(port).query_one("SELECT groupid FROM pg_dist_local_group", &[]).unwrap().get(0);
    let mut node = -1;
    let back = recovery_time(Duration::from_secs(30), || {
        let Ok(r) = tcp(port).query_one(
            "SELECT citus_group, (SELECT node_id FROM seqgen_snowflake_decode(seqgen_snowflake())) FROM seqgen_node()",
            &[],
        ) else {
            return false;
        };
        node = r.get(1);
        r.get::<_, i32>(0) == group
    });
    let assigned = coord.one_i64(&format!("SELECT node_id FROM seqgen.citus_node_ids WHERE groupid = {group}"));
    assert_eq!(node as i64, assigned, "the clone split off as group {group} numbers with another node id");
    let below = coord.one_i64(&format!(
        "SELECT max(node_id) FROM seqgen.citus_node_ids WHERE groupid <> {group} OR groupid IS NULL"
    ));
    assert_eq!(assigned, below + 1, "group {group}'s node id is not the next one");
    (took, back, group, node)
}

/// How many values of `column` occur more than once in `rows`.
fn issued_twice<'a>(rows: impl Iterator<Item = &'a Vec<String>>, column: usize) -> usize {
    let mut v: Vec<&String> = rows.map(|r| &r[column]).collect();
    let n = v.len();
    v.sort();
    v.dedup();
    n - v.len()
}

/// Issue 30, item 2: Citus 13.2 splits a worker with `citus_add_clone_node` and
/// `citus_promote_clone_and_rebalance`: the clone is promoted (`pg_promote`) before the
/// coordinator gives it a group of its own, and until that commits it reads its primary's
/// replicated group. A session on the clone draws every 10 ms through the split while worker
/// 2 draws on: no value of any generator may be issued by both, and the clone must draw with
/// its new group once the split is done.
#[test]
fn citus_split_clone_never_repeats() {
    if !citus_here() {
        return;
    }
    let cl = Citus::start(56380);
    let w2 = cl.workers[1].port;
    const DRAW: &str = "SELECT seqgen_next('order')::text, seqgen_snowflake()::text, seqgen_order_no('inv')";
    // worker 2 has drawn before it is cloned
    let mut c2 = tcp(w2);
    let mut rows: Vec<Vec<String>> = (0..5)
        .map(|_| {
            let r = c2.query_one(DRAW, &[]).unwrap();
            (0..3).map(|i| r.get::<_, String>(i)).collect()
        })
        .collect();
    let (clone, clone_id) = clone_of(&cl.coord, &cl.workers[1], "citus56380_w2_clone", 56384);
    let stop = Arc::new(AtomicBool::new(false));
    let on_clone = draw_on(clone.port, DRAW.into(), stop.clone(), Duration::from_millis(10));
    let on_w2 = draw_on(w2, DRAW.into(), stop.clone(), Duration::from_millis(1));
    std::thread::sleep(Duration::from_millis(500));
    let (took, back, group, node) = split_off(&cl.coord, clone_id, clone.port);
    println!(
        "citus_promote_clone_and_rebalance took {took:?}; the clone (now group {group}) draws with its node id {node} {back:?} after"
    );
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    let from_clone = on_clone.join().unwrap();
    let from_w2 = on_w2.join().unwrap();
    let mut kinds = from_clone.errors.clone();
    kinds.sort();
    kinds.dedup();
    println!(
        "worker 2 drew {} times ({} errors), the clone {} times ({} errors: {:?})",
        from_w2.rows.len() + rows.len(),
        from_w2.errors.len(),
        from_clone.rows.len(),
        from_clone.errors.len(),
        kinds
    );
    assert!(
        from_w2.errors.is_empty(),
        "worker 2 failed to draw during the split: {:?}",
        &from_w2.errors[..from_w2.errors.len().min(5)]
    );
    // a standby refuses writes (25006); promoted, the clone refuses until its group is its own
    assert!(kinds.iter().all(|k| k == "25006" || k == "55000"), "the clone failed otherwise: {kinds:?}");
    assert!(!from_clone.rows.is_empty(), "the clone never drew");
    println!("the clone's first and last: {:?} {:?}", from_clone.rows.first(), from_clone.rows.last());
    rows.extend(from_w2.rows);
    rows.extend(from_clone.rows);
    let twice: Vec<usize> = (0..3).map(|c| issued_twice(rows.iter(), c)).collect();
    println!("issued twice: {} segment IDs, {} snowflakes, {} order numbers", twice[0], twice[1], twice[2]);
    assert_eq!(twice, [0, 0, 0], "values issued by both worker 2 and its clone");
}
