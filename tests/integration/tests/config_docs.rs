//! Configuration documents, property-tested (issue 29, "Configuration documents"): for random
//! documents over every field, applied one after another to the same database, each is either
//! applied, and then applying it again changes nothing (no row from `seqgen_apply`, the same
//! `seqgen_config()`), or refused the first time with the JSON path of the field, changing
//! nothing. The documents name a few tags, so they meet tags that earlier documents made
//! (gapless against not, opaque, templates with numbers drawn, grants to roles that do not
//! exist).

use std::cell::RefCell;

use postgres::Client;
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestRng, TestRunner};
use seqgen_integration::*;
use serde_json::{json, Map, Value};

const TEMPLATES: [&str; 9] = [
    "O{yyyy}{MM}{dd}{seq:6}",
    "O{yyyy}{MM}{dd}{seq:7}",
    "{key}-{seq:5}",
    "W{yyyy}{seq:3}{check}",
    "X{yyyy}{seq:6:opaque}",
    "{node:3}-{seq:6}",
    "H{HH}{seq:2}",
    "bad{seq:0}",
    "{yyyy}{MM}{seq:4}",
];

fn template() -> impl Strategy<Value = Value> {
    (0..TEMPLATES.len(), prop::sample::select(vec!["UTC", "Asia/Shanghai", "Mars/Base"]), any::<bool>()).prop_map(
        |(t, zone, allow)| {
            let mut m = Map::new();
            m.insert("text".into(), json!(TEMPLATES[t]));
            m.insert("time_zone".into(), json!(zone));
            if allow {
                m.insert("allow_repeats".into(), json!(true));
            }
            Value::Object(m)
        },
    )
}

/// One tag's definition: every field present or absent, valid or not.
fn tag() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop::sample::select(vec![1i64, 10, 1000, 0, -5])),
        prop::option::of(prop::sample::select(vec![1i64, 500, 1_000_000, 0])),
        prop::option::of(prop::sample::select(vec!["a", "b"])),
        prop::option::of(template()),
        prop::option::of(any::<bool>()),
        prop::option::of(prop::sample::select(vec![0i64, 3, 8, 17])),
        prop::option::of(prop::sample::subsequence(vec!["cfg_role", "public", "ghost"], 0..=3)),
        prop::option::of(prop::bool::weighted(0.3)),
    )
        .prop_map(|(step, start, desc, tpl, opaque, bits, grants, gapless)| {
            let mut m = Map::new();
            let mut put = |k: &str, v: Option<Value>| {
                if let Some(v) = v {
                    m.insert(k.into(), v);
                }
            };
            put("step", step.map(|v| json!(v)));
            put("start_with", start.map(|v| json!(v)));
            put("description", desc.map(|v| json!(v)));
            put("template", tpl);
            put("opaque", opaque.map(|v| json!(v)));
            put("node_bits", bits.map(|v| json!(v)));
            put("grants", grants.map(|v| json!(v)));
            put("gapless", gapless.map(|v| json!(v)));
            Value::Object(m)
        })
}

/// A document over tags t0..t3.
fn document() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(prop::sample::select(vec!["t0", "t1", "t2", "t3"]), tag(), 0..=3)
        .prop_map(|tags| json!({ "version": 1, "tags": tags }))
}

/// `seqgen_config()` without `start_with`: that is where each counter stands, and the allocator
/// moves it by itself (a prefetched segment) between two reads.
fn config(s: &mut Client) -> Value {
    let text: String = s.query_one("SELECT seqgen_config()::text", &[]).unwrap().get(0);
    let mut v: Value = serde_json::from_str(&text).unwrap();
    if let Some(tags) = v.get_mut("tags").and_then(Value::as_object_mut) {
        for t in tags.values_mut() {
            t.as_object_mut().map(|t| t.remove("start_with"));
        }
    }
    v
}

fn apply(s: &mut Client, doc: &str) -> Result<Vec<String>, postgres::Error> {
    s.query("SELECT biz_tag || ': ' || action FROM seqgen_apply($1::text::jsonb)", &[&doc])
        .map(|rows| rows.iter().map(|r| r.get::<_, String>(0)).collect())
}

/// Draw from every tag as its kind allows, so that later documents meet counters in use.
fn draw_some(s: &mut Client) {
    let _ = s.batch_execute(
        "DO $$ DECLARE r record; BEGIN
           FOR r IN SELECT a.biz_tag, a.gapless, t.template FROM seqgen.alloc a LEFT JOIN seqgen.template t USING (biz_tag) LOOP
             BEGIN
               IF r.gapless THEN PERFORM seqgen_gapless_next(r.biz_tag);
               ELSIF r.template LIKE '%{key}%' THEN PERFORM seqgen_order_no(r.biz_tag, 'k1');
               ELSIF r.template IS NOT NULL THEN PERFORM seqgen_order_no(r.biz_tag); PERFORM seqgen_next(r.biz_tag);
               ELSE PERFORM seqgen_next(r.biz_tag); END IF;
             EXCEPTION WHEN OTHERS THEN NULL;
             END;
           END LOOP;
         END $$",
    );
}

/// A field of an applied document that the configuration does not have (a field dropped
/// silently), if any. Absent fields mean their defaults, as `seqgen_apply` reads them.
fn differs(doc: &Value, config: &Value) -> Option<String> {
    for (name, want) in doc["tags"].as_object()? {
        let have = &config["tags"][name];
        let gapless = want.get("gapless").and_then(Value::as_bool).unwrap_or(false);
        let mut expect = vec![
            ("gapless", json!(gapless), have.get("gapless").cloned().unwrap_or(json!(false))),
            ("opaque", want.get("opaque").cloned().unwrap_or(json!(false)), have["opaque"].clone()),
            ("node_bits", want.get("node_bits").cloned().unwrap_or(json!(0)), have["node_bits"].clone()),
        ];
        if !gapless {
            expect.push(("step", want.get("step").cloned().unwrap_or(json!(1000)), have["step"].clone()));
        }
        if let Some(d) = want.get("description") {
            expect.push(("description", d.clone(), have["description"].clone()));
        }
        if let Some(t) = want.get("template") {
            expect.push(("template.text", t["text"].clone(), have["template"]["text"].clone()));
            let zone = t.get("time_zone").cloned().unwrap_or(json!("UTC"));
            expect.push(("template.time_zone", zone, have["template"]["time_zone"].clone()));
        }
        let set = |v: &Value| {
            let mut g: Vec<String> =
                v.as_array().into_iter().flatten().filter_map(|r| r.as_str().map(String::from)).collect();
            g.sort();
            json!(g)
        };
        expect.push(("grants", set(want.get("grants").unwrap_or(&json!([]))), set(&have["grants"])));
        for (field, w, h) in expect {
            if w != h {
                return Some(format!("tag {name}: {field} is {h}, the document says {w}"));
            }
        }
    }
    None
}

#[test]
fn applying_any_document_twice_changes_nothing() {
    let c = Cluster::init("cfg_docs", 57914, &[]);
    c.start();
    c.sql("CREATE EXTENSION pg_seqgen; CREATE ROLE cfg_role;");
    let s = RefCell::new(c.connect());
    let stats = RefCell::new((0usize, 0usize, 0usize));
    let cases: u32 = std::env::var("SEQGEN_CONFIG_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400);
    let mut runner = TestRunner::new_with_rng(
        RunnerConfig { cases, failure_persistence: None, ..RunnerConfig::default() },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let result = runner.run(&prop::collection::vec(document(), 1..=3), |docs| {
        let mut s = s.borrow_mut();
        // every case starts from no tags
        s.batch_execute(r#"SELECT count(*) FROM seqgen_apply('{"version": 1, "tags": {}}', true)"#)
            .map_err(|e| TestCaseError::fail(format!("dropping every tag: {e:?}")))?;
        for doc in &docs {
            let text = doc.to_string();
            let before = config(&mut s);
            match apply(&mut s, &text) {
                Ok(first) => {
                    let after = config(&mut s);
                    if let Some(wrong) = differs(doc, &after) {
                        return Err(TestCaseError::fail(format!("{text}: applied ({first:?}), but {wrong}")));
                    }
                    let again = apply(&mut s, &text).map_err(|e| {
                        TestCaseError::fail(format!("{text}: applied ({first:?}), then refused: {e:?}"))
                    })?;
                    prop_assert!(again.is_empty(), "{}: applied ({:?}), then again changed {:?}", text, first, again);
                    prop_assert_eq!(&after, &config(&mut s), "{}: the second apply changed the configuration", text);
                    stats.borrow_mut().0 += 1;
                }
                Err(e) => {
                    let message = e.as_db_error().map(|d| d.message().to_string()).unwrap_or_default();
                    prop_assert!(message.starts_with("$."), "{}: refused without a path: {:?}", text, e);
                    prop_assert_eq!(&before, &config(&mut s), "{}: a refused document changed something", text);
                    stats.borrow_mut().1 += 1;
                }
            }
            stats.borrow_mut().2 += 1;
            draw_some(&mut s);
        }
        Ok(())
    });
    let (applied, refused, total) = *stats.borrow();
    println!("{cases} cases, {total} documents: {applied} applied and idempotent, {refused} refused with a path");
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(applied > 20 && refused > 20, "the documents exercise both outcomes: {applied} applied, {refused} refused");
}
