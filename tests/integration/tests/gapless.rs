//! Gapless tags (issue 19, part 2): the committed numbers of every key are exactly 1..N,
//! whatever rolls back, prepares, crashes; a waiter on a key gives up with 55P03 naming it,
//! other keys never wait.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use seqgen_integration::*;

/// Per key: how many rows, the smallest and largest number, how many distinct, how many
/// without a number.
fn per_key(c: &Cluster, table: &str, number: &str) -> BTreeMap<String, (i64, i64, i64, i64, i64)> {
    c.connect()
        .query(
            &format!(
                "SELECT k, count(*), coalesce(min({number}), 0), coalesce(max({number}), 0), count(DISTINCT {number}), \
                        count(*) FILTER (WHERE {number} IS NULL) FROM {table} GROUP BY k ORDER BY k"
            ),
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2), r.get(3), r.get(4), r.get(5))))
        .collect()
}

/// Every key of `table` numbered exactly 1..N.
fn assert_gapless(c: &Cluster, table: &str, number: &str) -> i64 {
    let keys = per_key(c, table, number);
    let mut rows = 0;
    for (k, (n, min, max, distinct, unnumbered)) in &keys {
        assert_eq!(*unnumbered, 0, "{table}: {unnumbered} committed rows of key {k} without a number");
        assert_eq!(
            (*min, *max, *distinct),
            (1, *n, *n),
            "{table}, key {k}: {n} rows numbered {min}..{max} with {distinct} distinct numbers (a gap or a repeat)"
        );
        rows += n;
    }
    println!("{table}: {rows} committed rows in {} keys, each numbered exactly 1..N", keys.len());
    rows
}

#[test]
fn gapless_numbers_survive_every_transaction_shape_and_a_crash() {
    let c = Cluster::init("gapless_shapes", 57401, &["max_prepared_transactions = 30"]);
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen;
         SELECT seqgen_create_gapless('inv');
         SELECT seqgen_create_gapless('inv_y', 'INV-{key}-{yyyy}-{seq:6}');
         SELECT seqgen_create_gapless('direct');
         CREATE TABLE inv (id bigserial PRIMARY KEY, k text NOT NULL, no bigint, note text);
         SELECT seqgen_gapless_attach('inv', 'no', 'inv', 'k');
         CREATE TABLE inv_y (id bigserial PRIMARY KEY, k text NOT NULL, no text);
         SELECT seqgen_gapless_attach('inv_y', 'no', 'inv_y', 'k');
         CREATE TABLE direct (k text NOT NULL, no bigint NOT NULL);",
    );
    let conninfo = c.conninfo("postgres");
    let stop = Arc::new(AtomicBool::new(false));
    let shapes = Arc::new((0..8).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
    let run = |phase: u64, secs: u64| {
        let (conninfo, stop, shapes) = (conninfo.clone(), stop.clone(), shapes.clone());
        std::thread::spawn(move || {
            on_threads(8, move |t| {
                let mut rng = StdRng::seed_from_u64(phase * 100 + t as u64);
                let connect = || {
                    let end = Instant::now() + Duration::from_secs(60);
                    loop {
                        match Client::connect(&conninfo, NoTls) {
                            Ok(mut cl) => {
                                cl.batch_execute("SET lock_timeout = '5s'").unwrap();
                                return cl;
                            }
                            Err(_) if Instant::now() < end => std::thread::sleep(Duration::from_millis(100)),
                            Err(e) => panic!("connect: {e}"),
                        }
                    }
                };
                let mut cl = connect();
                let end = Instant::now() + Duration::from_secs(secs);
                let mut n = 0;
                while Instant::now() < end && !stop.load(Ordering::Relaxed) {
                    // one key for half the transactions (they all take turns), 50 for the rest
                    let k =
                        if rng.random_bool(0.5) { "solo".to_string() } else { format!("k{}", rng.random_range(0..50)) };
                    let shape = rng.random_range(0..8);
                    let gid = format!("g{phase}_{t}_{n}");
                    n += 1;
                    let ins = format!(
                        "INSERT INTO inv (k) VALUES ('{k}'); INSERT INTO inv_y (k) VALUES ('{k}'); \
                         INSERT INTO direct VALUES ('{k}', seqgen_gapless_next('direct', '{k}'));"
                    );
                    let sql = match shape {
                        0 => format!("BEGIN; {ins} COMMIT;"),
                        1 => format!("BEGIN; {ins} ROLLBACK;"),
                        // rolled back to a savepoint after the draw, then something else committed
                        2 => format!("BEGIN; SAVEPOINT s; {ins} ROLLBACK TO SAVEPOINT s; INSERT INTO inv (k) VALUES ('{k}'); COMMIT;"),
                        3 | 4 => format!("BEGIN; {ins} PREPARE TRANSACTION '{gid}';"),
                        // the row changed again before the commit: its last version is numbered
                        5 => format!(
                            "BEGIN; {ins} UPDATE inv SET note = 'changed' WHERE id = currval('inv_id_seq'); \
                             UPDATE inv SET note = 'twice' WHERE id = currval('inv_id_seq'); COMMIT;"
                        ),
                        // inserted and deleted in one transaction: no number
                        6 => format!("BEGIN; {ins} DELETE FROM inv WHERE id = currval('inv_id_seq'); COMMIT;"),
                        // several rows of one key in one transaction
                        _ => format!("BEGIN; {ins} {ins} COMMIT;"),
                    };
                    // the second step of a two-phase commit (its own statement)
                    let finish = match shape {
                        3 => format!("COMMIT PREPARED '{gid}'"),
                        4 => format!("ROLLBACK PREPARED '{gid}'"),
                        _ => String::new(),
                    };
                    let r = cl.batch_execute(&sql).and_then(|()| {
                        if finish.is_empty() {
                            Ok(())
                        } else {
                            cl.batch_execute(&finish)
                        }
                    });
                    match r {
                        Ok(()) => {
                            shapes[shape].fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => {
                            let code = sqlstate(&e);
                            // the server going away, or a turn that did not come within the timeout
                            assert!(
                                code.is_none()
                                    || matches!(code.as_deref(), Some("57P01" | "55P03" | "57P03" | "08006")),
                                "{sql}: {e:?}"
                            );
                            if cl.is_closed() || code.is_none() || code.as_deref() == Some("57P01") {
                                std::thread::sleep(Duration::from_millis(200));
                                cl = connect();
                            } else {
                                let _ = cl.batch_execute("ROLLBACK");
                            }
                            // a transaction prepared before the connection went away
                            let _ = cl.batch_execute(&format!("ROLLBACK PREPARED '{gid}'"));
                        }
                    }
                }
            })
        })
    };
    let load = run(1, 5);
    std::thread::sleep(Duration::from_secs(2));
    // a transaction prepared and left across an immediate shutdown (its own key: it holds it)
    c.sql("BEGIN; INSERT INTO inv (k) VALUES ('held'), ('held'); PREPARE TRANSACTION 'held';");
    c.stop("immediate");
    std::thread::sleep(Duration::from_millis(500));
    c.start();
    load.join().unwrap();
    // the prepared transaction holds its key until it is resolved: a waiter is told which key
    let mut w = c.connect();
    w.batch_execute("SET lock_timeout = '300ms'").unwrap();
    let (t, e) = timed(|| w.batch_execute("INSERT INTO inv (k) VALUES ('held')"));
    let e = e.unwrap_err();
    let msg = e.as_db_error().map(|d| d.message().to_string()).unwrap_or_default();
    println!("a commit on the key held by the prepared transaction: {:?} after {t:?}: {msg}", sqlstate(&e));
    assert_eq!(sqlstate(&e).as_deref(), Some("55P03"));
    assert!(msg.contains("\"held\""), "the refusal names the key: {msg}");
    assert!(t < Duration::from_secs(3), "a waiter waited {t:?}");
    c.sql("COMMIT PREPARED 'held'");
    w.batch_execute("INSERT INTO inv (k) VALUES ('held')").unwrap();
    let after = run(2, 4);
    after.join().unwrap();
    let counts: Vec<usize> = shapes.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    println!("committed transactions by shape (commit, rollback, savepoint, 2PC commit, 2PC rollback, updated, deleted, two rows): {counts:?}");
    assert!(counts.iter().all(|&n| n > 0), "a transaction shape never succeeded: {counts:?}");
    let rows = assert_gapless(&c, "inv", "no") + assert_gapless(&c, "direct", "no");
    assert!(rows > 100, "too few rows to tell: {rows}");
    let held = c.one_i64("SELECT max(no) FROM inv WHERE k = 'held'");
    assert_eq!(held, 3, "the prepared transaction's numbers, committed after the restart, and the next");
    // the yearly template: numbers of each key and year are 1..N (INV-<key>-<year>-<6 digits>)
    let year = c.one_i64("SELECT extract(year FROM now() AT TIME ZONE 'UTC')::bigint");
    let bad = c.one_i64(&format!("SELECT count(*) FROM inv_y WHERE no !~ ('^INV-' || k || '-{year}-[0-9]{{6}}$')"));
    assert_eq!(bad, 0, "yearly numbers in another form");
    c.sql("CREATE VIEW inv_y_n AS SELECT k, right(no, 6)::bigint AS n FROM inv_y");
    assert_gapless(&c, "inv_y_n", "n");
}

#[test]
fn gapless_waits_are_per_key_bounded_and_named() {
    let c = Cluster::init("gapless_waits", 57402, &[]);
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen;
         SELECT seqgen_create_gapless('g');
         SELECT seqgen_create('plain');",
    );
    let mut a = c.connect();
    let mut b = c.connect();
    a.batch_execute("BEGIN; SELECT seqgen_gapless_next('g', 'x')").unwrap();
    // the same key waits for a's end, bounded by the session's lock_timeout, and says which key
    b.batch_execute("SET lock_timeout = '400ms'").unwrap();
    let (t, e) = timed(|| b.query_one("SELECT seqgen_gapless_next('g', 'x')", &[]));
    let e = e.unwrap_err();
    let msg = e.as_db_error().map(|d| d.message().to_string()).unwrap_or_default();
    println!("same key: {:?} after {t:?}: {msg}", sqlstate(&e));
    assert_eq!(sqlstate(&e).as_deref(), Some("55P03"));
    assert!(msg.contains("\"g\"") && msg.contains("\"x\""), "{msg}");
    assert!(t >= Duration::from_millis(350) && t < Duration::from_secs(3), "{t:?}");
    // another key does not wait
    let (t, n) = timed(|| b.query_one("SELECT seqgen_gapless_next('g', 'y')", &[]).unwrap().get::<_, i64>(0));
    println!("another key: {n} after {t:?}");
    assert_eq!(n, 1);
    // a rolls back: x's number 1 is given again, to b
    a.batch_execute("ROLLBACK").unwrap();
    assert_eq!(b.query_one("SELECT seqgen_gapless_next('g', 'x')", &[]).unwrap().get::<_, i64>(0), 1);
    assert_eq!(b.query_one("SELECT seqgen_gapless_next('g', 'x')", &[]).unwrap().get::<_, i64>(0), 2);
    // what is refused, and how
    let refused = |sql: &str, code: &str| {
        let e = c.connect().batch_execute(sql).unwrap_err();
        println!("{sql}: {:?} {}", sqlstate(&e), e.as_db_error().map(|d| d.message()).unwrap_or_default());
        assert_eq!(sqlstate(&e).as_deref(), Some(code), "{sql}: {e:?}");
    };
    refused("SELECT seqgen_next('g')", "55000");
    refused("SELECT seqgen_order_no('g')", "55000");
    refused("SELECT seqgen_gapless_next('plain')", "55000");
    refused("SELECT seqgen_gapless_next('nope')", "42704");
    refused("SELECT seqgen_gapless_next('g', NULL)", "22004");
    refused("SELECT seqgen_gapless_order_no('g')", "55000");
    refused("SELECT seqgen_set_template('g', 'G{seq:4}')", "0A000");
    refused("SELECT seqgen_make_opaque('g')", "0A000");
    refused("UPDATE seqgen.alloc SET gapless = false WHERE biz_tag = 'g'", "0A000");
    refused("UPDATE seqgen.gapless_counter SET last = 0", "23514");
    refused("DELETE FROM seqgen.gapless_counter", "0A000");
    refused("SELECT seqgen_create_gapless('o', 'O{yyyy}{seq:4:opaque}')", "22023");
    // a role without a grant on the tag
    c.sql(
        "CREATE ROLE clerk LOGIN; GRANT USAGE ON SCHEMA seqgen TO clerk;
         GRANT EXECUTE ON FUNCTION seqgen_gapless_next(text, text) TO clerk;",
    );
    let mut clerk = Client::connect(&format!("{} user=clerk", c.conninfo("postgres")), NoTls).unwrap();
    let e = clerk.query_one("SELECT seqgen_gapless_next('g', 'x')", &[]).unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("42501"), "{e:?}");
    c.sql("SELECT seqgen_grant('g', 'clerk')");
    assert_eq!(clerk.query_one("SELECT seqgen_gapless_next('g', 'x')", &[]).unwrap().get::<_, i64>(0), 3);
    // configuration as code: the document says gapless, and a copy applied elsewhere is gapless
    let doc: String = c.connect().query_one("SELECT seqgen_config()::text", &[]).unwrap().get(0);
    assert!(doc.contains("\"gapless\": true"), "{doc}");
    c.sql("CREATE DATABASE copy");
    let mut copy = c.connect_db("copy");
    copy.batch_execute("CREATE EXTENSION pg_seqgen").unwrap();
    copy.query(&format!("SELECT * FROM seqgen_apply('{}')", doc.replace('\'', "''")), &[]).unwrap();
    let n: i64 = copy.query_one("SELECT seqgen_gapless_next('g', 'z')", &[]).unwrap().get(0);
    assert_eq!(n, 1);
    let changes: i64 = copy
        .query_one(&format!("SELECT count(*) FROM seqgen_apply('{}')", doc.replace('\'', "''")), &[])
        .unwrap()
        .get(0);
    assert_eq!(changes, 0, "the document applied twice changed something");
}

/// Numbering at commit writes the row as the committing user, never as the table's owner: a
/// function planted ahead on the committer's `search_path` and called by the table's own
/// trigger runs with the committer's privileges (as the owner, it ran with the owner's). The
/// key's text does not depend on the committer's settings.
#[test]
fn gapless_numbering_at_commit_runs_as_the_committer() {
    let c = Cluster::init("gapless_roles", 57403, &[]);
    c.start();
    c.sql(
        "CREATE EXTENSION pg_seqgen;
         SELECT seqgen_create_gapless('inv');
         CREATE ROLE books LOGIN; CREATE ROLE clerk LOGIN;
         SELECT seqgen_grant('inv', 'clerk');
         CREATE SCHEMA app AUTHORIZATION books;
         CREATE SCHEMA clerk_own AUTHORIZATION clerk;
         CREATE TABLE seen (who text);
         GRANT INSERT, SELECT ON seen TO PUBLIC;
         SET ROLE books;
         CREATE FUNCTION app.stamp() RETURNS text LANGUAGE sql AS 'SELECT ''app''';
         CREATE TABLE app.invoice (k date NOT NULL, no bigint, note text);
         CREATE FUNCTION app.touch() RETURNS trigger LANGUAGE plpgsql AS
             'BEGIN NEW.note := stamp(); RETURN NEW; END';
         CREATE TRIGGER touch BEFORE UPDATE ON app.invoice FOR EACH ROW EXECUTE FUNCTION app.touch();
         RESET ROLE;
         SELECT seqgen_gapless_attach('app.invoice', 'no', 'inv', 'k');
         GRANT USAGE ON SCHEMA app TO clerk;
         GRANT INSERT, SELECT ON app.invoice TO clerk;",
    );
    let conninfo = format!("{} user=clerk", c.conninfo("postgres"));
    let mut clerk = Client::connect(&conninfo, NoTls).unwrap();
    // without UPDATE on the number column, the commit is refused (nothing numbered, nothing kept)
    let e = clerk.batch_execute("INSERT INTO app.invoice (k) VALUES ('2026-01-02')").unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("42501"), "{e:?}");
    c.sql("GRANT UPDATE (no, note) ON app.invoice TO clerk");
    // a stamp() of the clerk's own, ahead on its search_path, records who runs it
    clerk
        .batch_execute(
            "CREATE FUNCTION clerk_own.stamp() RETURNS text LANGUAGE sql
                 AS 'INSERT INTO public.seen VALUES (current_user) RETURNING who';
             SET search_path = clerk_own, app, public;
             SET DateStyle = 'German, DMY';
             INSERT INTO app.invoice (k) VALUES ('02.01.2026');",
        )
        .unwrap();
    let who: Vec<String> = c.connect().query("SELECT who FROM seen", &[]).unwrap().iter().map(|r| r.get(0)).collect();
    println!("the table's trigger called stamp() as {who:?}");
    assert_eq!(who, ["clerk"], "the number was written with the owner's privileges");
    // the same day from a session with ISO dates continues the same key
    c.sql("SET search_path = app, public; INSERT INTO app.invoice (k) VALUES ('2026-01-02')");
    let nos: Vec<i64> =
        c.connect().query("SELECT no FROM app.invoice ORDER BY no", &[]).unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(nos, [1, 2], "one key counted as two under two DateStyles");
    // a gapless tag cannot be restarted
    let e = c.connect().batch_execute("SELECT seqgen_restart('inv', 1000)").unwrap_err();
    assert_eq!(sqlstate(&e).as_deref(), Some("0A000"), "{e:?}");
}
