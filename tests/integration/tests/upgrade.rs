//! Upgrading from the released 0.1.0, 0.3.0, 0.4.0, 0.5.0 and 0.6.0 (the first release and the
//! last four; 0.2.0's scripts run in the chain from 0.1.0): install it, use every generator, install this
//! version's files, restart, `ALTER EXTENSION pg_seqgen UPDATE`, and draw on with nothing
//! repeated. The upgraded catalog must be the one a fresh install creates.
//!
//! The old versions are built from this repository's history by `scripts/old_version.sh`
//! for the major under test (`tests/run.sh` runs it and passes their paths in
//! `SEQGEN_OLD_PACKAGE`, `SEQGEN_OLD_PACKAGE_0_3_0`, `SEQGEN_OLD_PACKAGE_0_4_0`,
//! `SEQGEN_OLD_PACKAGE_0_5_0` and `SEQGEN_OLD_PACKAGE_0_6_0`). The upgrade scripts are SQL, the
//! same on every major, so `tests/run.sh` runs the whole chain on Debian's major and only the
//! upgrade from the previous release on the others (it `--skip`s the rest there, by name).
//! Both versions run from a private PostgreSQL tree (real copies of
//! `postgres` and `pg_ctl`, links to the rest of the installation), so the installation under
//! test keeps this version.

use std::path::Path;
use std::process::Command;

use seqgen_integration::*;

const TREE: &str = "/tmp/pg_seqgen_it/upgrade_tree";

/// The extension's directories in the installation under test (absolute paths; the tree
/// and a `cargo pgrx package` output hold them below their own root).
fn lib() -> String {
    pg().pkglibdir.clone()
}
fn ext() -> String {
    format!("{}/extension", pg().sharedir)
}

fn run(cmd: &str) {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(out.status.success(), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A PostgreSQL tree under TREE that finds its share and lib directories relative to itself:
/// the installation's bin, lib and share directories at the same paths below TREE (real
/// copies of `postgres` and `pg_ctl`, which locate themselves; links to everything else).
fn make_tree() {
    let (bin, lib, share) = (pg_bin(), lib(), &pg().sharedir);
    run(&format!(
        "rm -rf {TREE} && mkdir -p {TREE}{bin} {TREE}{lib} {TREE}{share} \
         && rmdir {TREE}{lib} {TREE}{share} \
         && cp -as {lib} {TREE}{lib} && cp -as {share} {TREE}{share} \
         && cp {bin}/postgres {bin}/pg_ctl {TREE}{bin}/ \
         && chmod -R a+rX {TREE}"
    ));
}

/// Put version `from`'s pg_seqgen files into the tree (`from` is a package root: a directory
/// holding the installation's paths, or "" for the installation itself).
fn install_version(from: &str, version_files: &[&str]) {
    let (lib, ext) = (lib(), ext());
    run(&format!("rm -f {TREE}{lib}/pg_seqgen.so {TREE}{ext}/pg_seqgen*"));
    run(&format!("cp {from}{lib}/pg_seqgen.so {TREE}{lib}/"));
    for f in version_files {
        run(&format!("cp {from}{ext}/{f} {TREE}{ext}/"));
    }
    run(&format!("chmod -R a+rX {TREE}"));
}

fn catalog_shape(c: &mut Client) -> Vec<String> {
    let q = "
        SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable
               || ' ' || coalesce(column_default, '')
          FROM information_schema.columns WHERE table_schema = 'seqgen'
        UNION ALL
        SELECT 'trigger ' || tgrelid::regclass || ' ' || tgname || ' ' || tgenabled::text || ' ' || tgtype
          FROM pg_trigger WHERE tgrelid::regclass::text LIKE 'seqgen.%' AND NOT tgisinternal
        UNION ALL
        SELECT 'function ' || p.oid::regprocedure || ' ' || p.provolatile::text || p.proisstrict || p.proparallel::text
               || ' (' || pg_get_function_arguments(p.oid) || ') ' || pg_get_function_result(p.oid)
               || ' ' || coalesce(p.proacl::text, 'default')
               || ' ' || coalesce(obj_description(p.oid, 'pg_proc'), 'no comment')
               -- and its body: an update script's copy of a function must be the fresh one
               || ' body ' || md5(pg_get_functiondef(p.oid))
          FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
          JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_seqgen'
        UNION ALL
        SELECT 'table ' || c.oid::regclass || ' ' || coalesce(c.relacl::text, 'default')
          FROM pg_class c WHERE c.relnamespace = 'seqgen'::regnamespace
        UNION ALL
        SELECT 'constraint ' || conrelid::regclass || ' ' || pg_get_constraintdef(oid)
          FROM pg_constraint WHERE connamespace = 'seqgen'::regnamespace
        UNION ALL
        SELECT 'dumped ' || unnest(extconfig)::regclass FROM pg_extension WHERE extname = 'pg_seqgen'
        UNION ALL
        -- the initial privileges pg_dump compares with: a grant recorded there is not dumped
        SELECT 'initial privileges ' || i.objoid::regprocedure || ' ' || i.initprivs::text
          FROM pg_init_privs i JOIN pg_depend d ON d.objid = i.objoid AND d.classid = 'pg_proc'::regclass
          JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_seqgen'
         WHERE i.classoid = 'pg_proc'::regclass AND d.deptype = 'e'
        UNION ALL
        SELECT 'view ' || c.oid::regclass || ' ' || coalesce(c.relacl::text, 'default')
               || ' ' || coalesce(obj_description(c.oid, 'pg_class'), 'no comment') || ' ' || pg_get_viewdef(c.oid)
          FROM pg_class c JOIN pg_depend d ON d.objid = c.oid AND d.classid = 'pg_class'::regclass
          JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_seqgen'
         WHERE d.deptype = 'e' AND c.relkind = 'v'
        ORDER BY 1";
    c.query(q, &[]).unwrap().iter().map(|r| r.get(0)).collect()
}

/// This version.
const NEW: &str = "1.0.0";

#[test]
fn upgrade_from_0_1_0_repeats_nothing() {
    let old = std::env::var("SEQGEN_OLD_PACKAGE")
        .expect("SEQGEN_OLD_PACKAGE: the 0.1.0 package tree (run scripts/old_version.sh; tests/run.sh does)");
    upgrade(&old, "0.1.0", 56701);
}

#[test]
fn upgrade_from_0_3_0_repeats_nothing() {
    let old = std::env::var("SEQGEN_OLD_PACKAGE_0_3_0").expect(
        "SEQGEN_OLD_PACKAGE_0_3_0: the 0.3.0 package tree (run scripts/old_version.sh <major> 0.3.0; tests/run.sh does)",
    );
    upgrade(&old, "0.3.0", 56703);
}

#[test]
fn upgrade_from_0_4_0_repeats_nothing() {
    let old = std::env::var("SEQGEN_OLD_PACKAGE_0_4_0").expect(
        "SEQGEN_OLD_PACKAGE_0_4_0: the 0.4.0 package tree (run scripts/old_version.sh <major> 0.4.0; tests/run.sh does)",
    );
    upgrade(&old, "0.4.0", 56704);
}

#[test]
fn upgrade_from_0_5_0_repeats_nothing() {
    let old = std::env::var("SEQGEN_OLD_PACKAGE_0_5_0").expect(
        "SEQGEN_OLD_PACKAGE_0_5_0: the 0.5.0 package tree (run scripts/old_version.sh <major> 0.5.0; tests/run.sh does)",
    );
    upgrade(&old, "0.5.0", 56705);
}

#[test]
fn upgrade_from_0_6_0_repeats_nothing() {
    let old = std::env::var("SEQGEN_OLD_PACKAGE_0_6_0").expect(
        "SEQGEN_OLD_PACKAGE_0_6_0: the 0.6.0 package tree (run scripts/old_version.sh <major> 0.6.0; tests/run.sh does)",
    );
    upgrade(&old, "0.6.0", 56702);
}

fn upgrade(old: &str, from: &str, port: u16) {
    assert!(Path::new(&format!("{old}{}/pg_seqgen.so", lib())).exists(), "no {from} build for {} in {old}", pg().major);
    let tree_lock = TREE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    make_tree();
    install_version(old, &["pg_seqgen.control", &format!("pg_seqgen--{from}.sql")]);
    let mut c = Cluster::init(&format!("upgrade_{from}"), port, &["seqgen.node_id = 2"]);
    c.bin = format!("{TREE}{}", pg_bin());
    c.start();
    // a template whose numbers repeat every month: 0.1.0 accepted it as is, 0.2.0 on request
    let allow = if from == "0.1.0" { "" } else { ", 'UTC', true" };
    c.sql(&format!(
        "CREATE EXTENSION pg_seqgen;
         SELECT seqgen_create('seg', 100);
         SELECT seqgen_create('ord', 50);
         SELECT seqgen_set_template('ord', 'U{{yyyy}}{{MM}}{{dd}}-{{seq:6}}');
         SELECT seqgen_create('plain', 50);
         SELECT seqgen_set_template('plain', 'P{{seq:8}}');
         SELECT seqgen_create('rep', 50);
         SELECT seqgen_set_template('rep', '{{dd}}-{{seq:5}}'{allow});
         SELECT seqgen_create('opq', 100);
         SELECT seqgen_make_opaque('opq');
         CREATE ROLE up_team; CREATE ROLE up_app; CREATE ROLE up_sub;
         GRANT EXECUTE ON FUNCTION seqgen_create TO up_team WITH GRANT OPTION;
         SET ROLE up_team;
         GRANT EXECUTE ON FUNCTION seqgen_create TO up_sub;
         RESET ROLE;
         GRANT EXECUTE ON FUNCTION seqgen_drop TO up_app;
         DO $$ BEGIN
           -- 0.6.0 made the overloads with an option one function with a DEFAULT
           IF to_regprocedure('seqgen_uuidv7_rewind(uuid)') IS NOT NULL THEN
             GRANT EXECUTE ON FUNCTION seqgen_set_template(text, text, text, boolean) TO up_app;
             GRANT EXECUTE ON FUNCTION seqgen_restart TO up_team;
             GRANT EXECUTE ON FUNCTION seqgen_snowflake_advance TO up_app;
             GRANT EXECUTE ON FUNCTION seqgen_uuidv7_rewind TO up_team;
             RETURN;
           END IF;
           GRANT EXECUTE ON FUNCTION seqgen_set_template(text, text, text) TO up_app;
           IF to_regprocedure('seqgen_restart(text, bigint)') IS NOT NULL THEN
             GRANT EXECUTE ON FUNCTION seqgen_restart(text, bigint) TO up_team;
             GRANT EXECUTE ON FUNCTION seqgen_snowflake_advance(bigint) TO up_app;
           END IF;
           IF to_regprocedure('seqgen_uuidv7_rewind(bigint)') IS NOT NULL THEN
             GRANT EXECUTE ON FUNCTION seqgen_uuidv7_rewind(bigint) TO up_team;
           END IF;
         END $$;"
    ));
    let version: String =
        c.connect().query_one("SELECT extversion FROM pg_extension WHERE extname = 'pg_seqgen'", &[]).unwrap().get(0);
    assert_eq!(version, from);
    let uuids = |c: &Cluster| -> Vec<String> {
        c.connect()
            .query("SELECT seqgen_uuidv7()::text FROM generate_series(1, 1000)", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    let uuids_before = if from == "0.1.0" { vec![] } else { uuids(&c) };
    let draw = |c: &Cluster| -> (Vec<i64>, Vec<i64>, Vec<i64>, Vec<String>) {
        let mut cl = c.connect();
        let ints =
            |cl: &mut Client, sql: &str| -> Vec<i64> { cl.query(sql, &[]).unwrap().iter().map(|r| r.get(0)).collect() };
        let seg = ints(&mut cl, "SELECT seqgen_next('seg') FROM generate_series(1, 1500)");
        let mut opq = ints(&mut cl, "SELECT seqgen_next('opq') FROM generate_series(1, 700)");
        opq.extend(ints(&mut cl, "SELECT seqgen_next_batch('opq', 600)"));
        let sf = ints(&mut cl, "SELECT seqgen_snowflake() FROM generate_series(1, 3000)");
        let mut ord: Vec<String> = vec![];
        for tag in ["ord", "plain", "rep"] {
            ord.extend(
                cl.query(&format!("SELECT seqgen_order_no('{tag}') FROM generate_series(1, 300)"), &[])
                    .unwrap()
                    .iter()
                    .map(|r| r.get::<_, String>(0)),
            );
        }
        (seg, opq, sf, ord)
    };
    let before = draw(&c);
    // Objects that call pg_seqgen's functions, made on the old version (issue 31: the upgrade
    // keeps every column DEFAULT, view, trigger and function body that uses the 0.x
    // signatures working). DEFAULTs, views and triggers store the draws by OID; a PL/pgSQL or
    // SQL body names them and is resolved at every call, also seqgen_set_template's 0.x form
    // with three arguments, which 0.6.0 replaced by one with DEFAULTs.
    let stored = |c: &Cluster| -> Vec<i64> {
        let mut cl = c.connect();
        cl.batch_execute("INSERT INTO up_rows (note) SELECT 'x' FROM generate_series(1, 50); SELECT up_settpl()")
            .unwrap();
        let mut seg: Vec<i64> = cl.query("SELECT id FROM up_view", &[]).unwrap().iter().map(|r| r.get(0)).collect();
        seg.push(cl.query_one("SELECT up_draw('seg')", &[]).unwrap().get(0));
        seg
    };
    c.sql(
        "CREATE TABLE up_rows (id bigint PRIMARY KEY DEFAULT seqgen_next('seg'),                                no text UNIQUE DEFAULT seqgen_order_no('plain'),                                sf bigint UNIQUE DEFAULT seqgen_snowflake(), note text, by_trigger text UNIQUE);
         CREATE VIEW up_view AS SELECT seqgen_next('seg') AS id;
         CREATE FUNCTION up_draw(t text) RETURNS bigint LANGUAGE plpgsql AS $$ BEGIN RETURN seqgen_next(t); END $$;
         CREATE FUNCTION up_settpl() RETURNS void LANGUAGE sql AS $$ SELECT seqgen_set_template('plain', 'P{seq:8}', 'UTC') $$;
         CREATE FUNCTION up_trg() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN NEW.by_trigger := seqgen_order_no('rep'); RETURN NEW; END $$;
         CREATE TRIGGER up_trg BEFORE INSERT ON up_rows FOR EACH ROW EXECUTE FUNCTION up_trg();
         CREATE ROLE up_drawer;
         GRANT EXECUTE ON FUNCTION seqgen_next(text) TO up_drawer;
         CREATE TABLE up_drawn (id bigint PRIMARY KEY DEFAULT seqgen_next('seg'), note text);
         GRANT SELECT, INSERT ON up_drawn TO up_drawer;
         DO $$ BEGIN
           IF EXISTS (SELECT FROM pg_proc WHERE proname = 'seqgen_render') THEN
             CREATE VIEW up_render AS SELECT seqgen_render('R{yyyy}-{seq:4}', 7, '2026-01-01 12:00+00', 'UTC') AS r;
           END IF;
         END $$;",
    );
    // 0.6.0's keyed forms, stored by OID in a view (1.0 gave the key a DEFAULT instead)
    if from == "0.6.0" {
        c.sql(
            "CREATE VIEW up_keyed AS SELECT seqgen_next('seg', 'kv') AS id;
             CREATE VIEW up_render_tag AS SELECT seqgen_render('{tag}-{seq:3}', 5, '2026-01-01 12:00+00', 'UTC', 'ord') AS r",
        );
        let v: i64 = c.one_i64("SELECT id FROM up_keyed");
        assert_eq!(v, 1, "the first value of key kv");
    }
    let rendered_before: Option<String> =
        c.connect().query("SELECT r FROM up_render", &[]).ok().map(|rows| rows[0].get(0));
    c.sql("CREATE TABLE up_legacy (id bigserial PRIMARY KEY); INSERT INTO up_legacy SELECT FROM generate_series(1, 3)");
    let stored_before = stored(&c);
    // 0.1.0 kept one counter per tag for every template: a daily template, then a monthly one
    // on the same day (its numbers continue the day's counter)
    let mut cl = c.connect();
    let mut switched: Vec<String> = vec![];
    let texts =
        |cl: &mut Client, sql: &str| -> Vec<String> { cl.query(sql, &[]).unwrap().iter().map(|r| r.get(0)).collect() };
    cl.batch_execute("SELECT seqgen_create('sw', 20); SELECT seqgen_set_template('sw', 'W{yyyy}{MM}{dd}-{seq:6}')")
        .unwrap();
    switched.extend(texts(&mut cl, "SELECT seqgen_order_no('sw') FROM generate_series(1, 100)"));
    cl.batch_execute("SELECT seqgen_set_template('sw', 'W{yyyy}{MM}-{seq:6}')").unwrap();
    switched.extend(texts(&mut cl, "SELECT seqgen_order_no('sw') FROM generate_series(1, 100)"));
    drop(cl);
    // the new files, a restart (crash-like: immediate), and the update
    c.stop("immediate");
    install_version(
        "",
        &[
            "pg_seqgen.control",
            &format!("pg_seqgen--{NEW}.sql"),
            "pg_seqgen--0.1.0--0.2.0.sql",
            "pg_seqgen--0.2.0--0.3.0.sql",
            "pg_seqgen--0.3.0--0.4.0.sql",
            "pg_seqgen--0.4.0--0.5.0.sql",
            "pg_seqgen--0.5.0--0.6.0.sql",
            "pg_seqgen--0.6.0--1.0.0.sql",
        ],
    );
    run(&format!("cp {old}{ext}/pg_seqgen--{from}.sql {TREE}{ext}/", ext = ext()));
    c.start();
    // until the update, calls are refused with a clear error
    let err = c.connect().query_one("SELECT seqgen_next('seg')", &[]).unwrap_err();
    println!("before ALTER EXTENSION UPDATE: {} ({:?})", err, sqlstate(&err));
    assert_eq!(sqlstate(&err).as_deref(), Some("55000"));
    // the calls that read the catalog themselves too (seqgen_status failed with 42703 on a
    // 0.1.0 to 0.3.0 catalog, which has no owners, and answered from a 0.4.0 or 0.5.0 one)
    for (call, f) in [
        ("SELECT * FROM seqgen_status()", "seqgen_status"),
        ("SELECT seqgen_config()", "seqgen_config"),
        ("SELECT * FROM seqgen_apply('{}')", "seqgen_apply"),
        // through their old signatures, without the options 0.6.0 added (which arrive as NULL):
        // refused for the version, not for a NULL option
        ("SELECT seqgen_create('pre_update')", "seqgen_create"),
        ("SELECT seqgen_restart('seg', 5000000)", "seqgen_restart"),
        ("SELECT seqgen_set_template('plain', 'Q{seq:8}')", "seqgen_set_template"),
    ] {
        // (configuration documents came in 0.4.0)
        if c.one_i64(&format!("SELECT count(*) FROM pg_proc WHERE proname = '{f}'")) == 0 {
            continue;
        }
        let err = c.connect().query(call, &[]).unwrap_err();
        assert_eq!(sqlstate(&err).as_deref(), Some("55000"), "{call} before the update: {err:?}");
    }
    c.sql("ALTER EXTENSION pg_seqgen UPDATE");
    let version: String =
        c.connect().query_one("SELECT extversion FROM pg_extension WHERE extname = 'pg_seqgen'", &[]).unwrap().get(0);
    assert_eq!(version, NEW);
    let after = draw(&c);
    // 1.0: one seqgen_next (the key a parameter with a DEFAULT: '' is the tag's own counter),
    // so GRANT names it; 0.x's one-argument form, now in schema seqgen, still serves the
    // DEFAULTs made before the update, with its grants, and those grants were copied to the
    // new form, which calls by name reach
    let no_key = c.one_i64("SELECT seqgen_next('seg', '')");
    c.sql("GRANT EXECUTE ON FUNCTION seqgen_next TO up_team; REVOKE EXECUTE ON FUNCTION seqgen_next FROM up_team");
    let default_text: String = c
        .connect()
        .query_one("SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'up_drawn'::regclass", &[])
        .unwrap()
        .get(0);
    assert_eq!(default_text, "seqgen.seqgen_next('seg'::text)", "a DEFAULT made on {from}, after the update");
    c.sql("SELECT seqgen_grant('seg', 'up_drawer')");
    let mut d = c.connect();
    d.batch_execute("SET ROLE up_drawer").unwrap();
    let drawer_by_name: i64 = d.query_one("SELECT seqgen_next('seg')", &[]).unwrap().get(0);
    let drawer_by_default: i64 = d.query_one("INSERT INTO up_drawn DEFAULT VALUES RETURNING id", &[]).unwrap().get(0);
    drop(d);
    // seqgen_adopt, whose body 1.0 replaced, on a table made before the update
    // (above the rows, and above what the sequence may have handed out: after the immediate
    // stop it stands up to 32 values ahead, as PostgreSQL logs it)
    let adopted = c.one_i64("SELECT seqgen_adopt('up_adopted', 'up_legacy', 'id')");
    assert!(adopted >= 4, "adopting after the update from {from} started at {adopted}");
    c.sql("INSERT INTO up_legacy DEFAULT VALUES");
    // and a dump keeps the grants the update copied (it writes what differs from the
    // extension's initial privileges, where an update script's GRANT would record them)
    let dump = as_postgres(
        &format!("{}/pg_dump", pg_bin()),
        &["-h", &c.dir.display().to_string(), "-p", &port.to_string(), "-U", "postgres", "-s", "postgres"],
    );
    assert!(dump.status.success(), "{}", String::from_utf8_lossy(&dump.stderr));
    let dump = String::from_utf8_lossy(&dump.stdout);
    for grant in [
        "ON FUNCTION public.seqgen_next(biz_tag text, key text) TO up_drawer",
        "ON FUNCTION seqgen.seqgen_next(biz_tag text) TO up_drawer",
    ] {
        assert!(dump.contains(grant), "the dump after the update from {from} lacks GRANT ... {grant}");
    }
    // a DEFAULT made after the update calls the new form
    c.sql("ALTER TABLE up_drawn ADD COLUMN id2 bigint DEFAULT seqgen_next('seg')");
    let new_default: String = c
        .connect()
        .query_one(
            "SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'up_drawn'::regclass AND adnum = 3",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(new_default, "seqgen_next('seg'::text)", "a DEFAULT made after the update from {from}");
    if let Some(r) = &rendered_before {
        let again: String = c.connect().query_one("SELECT r FROM up_render", &[]).unwrap().get(0);
        assert_eq!(&again, r, "a view of seqgen_render made on {from}");
    }
    if from == "0.6.0" {
        let kv = c.one_i64("SELECT id FROM up_keyed");
        assert!(kv > 1, "the keyed view made on 0.6.0 gave key kv's 1 again after the update: {kv}");
        let r: String = c.connect().query_one("SELECT r FROM up_render_tag", &[]).unwrap().get(0);
        assert_eq!(r, "ord-005");
    }
    // the objects made on the old version: inserts through the DEFAULTs and the trigger (the
    // table's keys refuse a repeat), the view, both function bodies
    let stored_after = stored(&c);
    assert_eq!(c.one_i64("SELECT count(*) FROM up_rows"), 100, "rows through DEFAULTs made on {from}");
    println!(
        "upgrade from {from}: a table's DEFAULTs and trigger, a view and two function bodies made on {from} \
         drew {} values of tag seg before the update and {} after",
        stored_before.len() + 50,
        stored_after.len() + 50
    );
    let mut l = Ledger::default();
    for v in [&before.0, &after.0, &stored_before, &stored_after] {
        l.add(v.iter().copied());
    }
    l.add([no_key, drawer_by_name, drawer_by_default]);
    l.add(c.connect().query("SELECT id FROM up_rows", &[]).unwrap().iter().map(|r| r.get::<_, i64>(0)));
    l.assert_unique(&format!("upgrade {from} -> {NEW}, tag seg through DEFAULTs, a view and a function"));
    // UUIDv7s (new in 0.2.0) after the upgrade: distinct, and above those drawn before it
    let uuids_after = uuids(&c);
    let mut all_uuids: Vec<&String> = uuids_before.iter().chain(&uuids_after).collect();
    let n = all_uuids.len();
    all_uuids.sort();
    all_uuids.dedup();
    assert_eq!(all_uuids.len(), n, "seqgen_uuidv7() repeated a value across the upgrade from {from}");
    assert!(uuids_after.iter().min() > uuids_before.iter().max(), "UUIDv7s after the upgrade sort below earlier ones");
    // what 0.3.0 added works on the upgraded catalog
    let dbs = c.one_i64("SELECT count(*) FROM seqgen_allocators() WHERE database = 'postgres' AND running");
    assert_eq!(dbs, 1, "seqgen_allocators() after the upgrade");
    // what 0.4.0 added: tags of older versions stay open to every role with EXECUTE (as they
    // were) and are owned by the extension's owner; the current template is in the history,
    // so a change that could repeat today's numbers is refused
    let mut cl = c.connect();
    let open: bool = cl
        .query_one("SELECT bool_and(public_draw) FROM seqgen.alloc WHERE biz_tag <> 'up_adopted'", &[])
        .unwrap()
        .get(0);
    if ["0.4.0", "0.5.0", "0.6.0"].contains(&from) {
        // 0.4.0 made its tags with privileges of their own: they stay as they were
        assert!(!open, "tags of 0.4.0 became open to every role after the upgrade");
    } else {
        assert!(open, "tags of {from} are no longer open after the upgrade");
    }
    let refused = cl.batch_execute("SELECT seqgen_set_template('ord', 'U{yyyy}{MM}{dd}-{seq:6:opaque}')").unwrap_err();
    assert_eq!(sqlstate(&refused).as_deref(), Some("22023"), "{refused:?}");
    cl.batch_execute("SELECT seqgen_revoke('seg', 'public'); SELECT seqgen_grant('seg', 'public')").unwrap();
    // what 0.6.0 added: gapless tags on the upgraded catalog
    c.sql("SELECT seqgen_create_gapless('gl_up')");
    let n = c.one_i64("SELECT seqgen_gapless_next('gl_up', 'k')");
    assert_eq!(n, 1, "the first gapless number after the upgrade from {from}");
    // and counters per key: of a tag made before the upgrade (start 1), and of a new one
    let k1 = c.one_i64("SELECT seqgen_next('seg', 'k')");
    let k2 = c.one_i64("SELECT seqgen_next('seg', 'k')");
    assert_eq!((k1, k2), (1, 2), "a key of a tag made before the upgrade from {from}");
    c.sql("SELECT seqgen_create('keyed_up', 10, 40)");
    assert_eq!(c.one_i64("SELECT seqgen_next('keyed_up', 'k')"), 40);
    // and order numbers per key, of a tag made before the upgrade
    c.sql("SELECT seqgen_set_template('seg', 'K{key}-{seq:4}')");
    let mut kc = c.connect();
    let per_key = texts(&mut kc, "SELECT seqgen_order_no('seg', 'a') FROM generate_series(1, 2)");
    assert_eq!(per_key, ["Ka-0001", "Ka-0002"], "order numbers per key after the upgrade from {from}");
    // the configuration of the upgraded catalog applies to it as no change
    let changes = c.one_i64("SELECT count(*) FROM seqgen_apply(seqgen_config())");
    assert_eq!(changes, 0, "applying the configuration of the catalog upgraded from {from} changed it");
    drop(cl);
    // back to the daily template after the upgrade: the day continues above 0.1.0's numbers
    let mut cl = c.connect();
    cl.batch_execute("SELECT seqgen_set_template('sw', 'W{yyyy}{MM}{dd}-{seq:6}')").unwrap();
    switched.extend(texts(&mut cl, "SELECT seqgen_order_no('sw') FROM generate_series(1, 100)"));
    cl.batch_execute("SELECT seqgen_set_template('sw', 'W{yyyy}{MM}-{seq:6}')").unwrap();
    switched.extend(texts(&mut cl, "SELECT seqgen_order_no('sw') FROM generate_series(1, 100)"));
    assert_unique_numbers(
        &format!("upgrade {from} -> {NEW}, a template switched day/month across the upgrade"),
        &switched,
    );

    for (what, a, b) in
        [("segment", &before.0, &after.0), ("opaque", &before.1, &after.1), ("snowflake", &before.2, &after.2)]
    {
        let mut l = Ledger::default();
        l.add(a.iter().copied());
        l.add(b.iter().copied());
        l.assert_unique(&format!("upgrade {from} -> {NEW}, {what} IDs"));
        assert!(b.iter().min() > a.iter().max() || what == "opaque", "{what}: new IDs below old ones");
    }
    let table_numbers: Vec<String> = c
        .connect()
        .query("SELECT no FROM up_rows UNION ALL SELECT by_trigger FROM up_rows", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let all: Vec<&String> = before.3.iter().chain(&after.3).chain(&table_numbers).collect();
    assert_unique_numbers(&format!("upgrade {from} -> {NEW}, order numbers"), &all);

    // seqgen_create and seqgen_drop took new signatures (if_not_exists, missing_ok) in 0.6.0, and
    // the overloads with an option became one function with a DEFAULT: the grants on the old
    // ones are on the new ones, and no other (seqgen_restart and seqgen_snowflake_advance came
    // in 0.2.0)
    let since_0_2 = from != "0.1.0";
    // seqgen_uuidv7_rewind came in 0.4.0 with a bigint, and takes a uuid since 0.6.0
    let since_0_4 = !["0.1.0", "0.2.0", "0.3.0"].contains(&from);
    for (role, function, privilege, expected) in [
        ("up_team", "seqgen_create(text, integer, bigint, text, boolean)", "EXECUTE WITH GRANT OPTION", true),
        ("up_app", "seqgen_drop(text, boolean)", "EXECUTE", true),
        ("up_app", "seqgen_drop(text, boolean)", "EXECUTE WITH GRANT OPTION", false),
        ("up_app", "seqgen_create(text, integer, bigint, text, boolean)", "EXECUTE", false),
        ("up_team", "seqgen_drop(text, boolean)", "EXECUTE", false),
        ("up_app", "seqgen_set_template", "EXECUTE", true),
        ("up_team", "seqgen_set_template", "EXECUTE", false),
        ("up_team", "seqgen_restart", "EXECUTE", since_0_2),
        ("up_app", "seqgen_restart", "EXECUTE", false),
        ("up_app", "seqgen_snowflake_advance", "EXECUTE", since_0_2),
        ("up_sub", "seqgen_create", "EXECUTE", true),
        ("up_team", "seqgen_uuidv7_rewind(uuid)", "EXECUTE", since_0_4),
        ("up_app", "seqgen_uuidv7_rewind(uuid)", "EXECUTE", false),
    ] {
        let has: bool = c
            .connect()
            .query_one(
                &format!(
                    "SELECT has_function_privilege('{role}', '{function}'::{}::oid, '{privilege}')",
                    if function.contains('(') { "regprocedure" } else { "regproc" }
                ),
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(has, expected, "{role}: {privilege} on {function} after the upgrade from {from}");
    }
    // a grant made by a role with the grant option is copied as the owner's (PostgreSQL lets
    // no one else be named as the grantor of a function's privilege); on 0.6.0 the function
    // already had its 1.0 signature, and the grant stays up_team's
    let grantor: String = c
        .connect()
        .query_one(
            "SELECT a.grantor::regrole::text FROM pg_proc p, aclexplode(p.proacl) a
              WHERE p.oid = 'seqgen_create'::regproc AND a.grantee = 'up_sub'::regrole",
            &[],
        )
        .unwrap()
        .get(0);
    let owner: String = c
        .connect()
        .query_one("SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'seqgen_create'::regproc", &[])
        .unwrap()
        .get(0);
    let want = if from == "0.6.0" { "up_team".to_string() } else { owner };
    assert_eq!(grantor, want, "the grantor of up_sub's grant after the upgrade from {from}");
    // (the fresh install below has no such grants)
    c.sql(
        "REVOKE ALL ON FUNCTION seqgen_create, seqgen_drop, seqgen_set_template, seqgen_restart,
           seqgen_snowflake_advance, seqgen_uuidv7_rewind FROM up_team, up_app, up_sub CASCADE;
         REVOKE ALL ON FUNCTION seqgen_next, seqgen.seqgen_next(text) FROM up_drawer;",
    );
    // the upgraded catalog is the one a fresh install creates
    let upgraded = catalog_shape(&mut c.connect());
    c.sql("CREATE DATABASE fresh");
    let mut f = c.connect_db("fresh");
    f.batch_execute("CREATE EXTENSION pg_seqgen").unwrap();
    let fresh = catalog_shape(&mut f);
    let only_upgraded: Vec<&String> = upgraded.iter().filter(|l| !fresh.contains(l)).collect();
    let only_fresh: Vec<&String> = fresh.iter().filter(|l| !upgraded.contains(l)).collect();
    println!("catalog: {} objects compared", fresh.len());
    assert!(
        only_upgraded.is_empty() && only_fresh.is_empty(),
        "the upgraded catalog differs from a fresh one:\nonly upgraded: {only_upgraded:#?}\nonly fresh: {only_fresh:#?}"
    );
    drop(c);
    drop(tree_lock);
}

/// The upgrade tests share the private tree: one at a time.
static TREE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
