//! The documentation is tested (issue 32). The book in `docs/` (mdBook) is the one source of
//! what each function is:
//! - every function pg_seqgen puts in the user's schema has a heading in `docs/reference/`
//!   (`` ## `name(arguments) → result` ``) whose first paragraph is its COMMENT: the
//!   `-- <comments>` blocks of `sql/functions.sql` and of the update script are generated from
//!   those pages, and a heading must match the installed function's signature, volatility,
//!   strictness and EXECUTE privilege; no heading may name a function that does not exist;
//! - every setting (`seqgen.*`) has a row in `docs/settings.md`, and no row names another;
//! - the SQLSTATE table of `docs/errors.md` is generated from `src/plumbing/error.rs`;
//! - every SQL block in `docs/` and the README runs (one database per page, in a fresh
//!   cluster), and where a page shows the output (a ```text block right after it) prints
//!   exactly that; a block that cannot run here (Citus, two servers) says why
//!   (`<!-- not run: ... -->`), and the test lists them. Hidden set-up blocks sit in HTML
//!   comments (`<!-- setup ... -->`): the book does not show them, the test runs them.
//!
//! `SEQGEN_BLESS=1` rewrites what is generated (the comment blocks, the SQLSTATE table and the
//! pages' output blocks) instead of failing; review the diff.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use seqgen_integration::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn bless() -> bool {
    std::env::var("SEQGEN_BLESS").is_ok_and(|v| v == "1")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every Markdown file of the book, sorted.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "md") {
                out.push(p);
            }
        }
    }
    let mut out = vec![];
    walk(&root().join("docs"), &mut out);
    out.sort();
    out
}

/// A fenced block of a page: its language, the line numbers of its fences, its text, the
/// reason given for not running it (`<!-- not run: ... -->` on the line before), and whether
/// the page means to show an error (`<!-- shows an error -->` on the line before).
#[derive(Debug, Clone)]
struct Block {
    lang: String,
    open: usize,
    close: usize,
    text: String,
    not_run: Option<String>,
    shows_error: bool,
}

/// The languages a fenced block of the book may have: `sql` runs, `text` is the output of the
/// `sql` block above it, `yaml` (a monitoring system's configuration) has the SQL of its
/// `query:` lines run, the others are shown only.
const LANGUAGES: [&str; 5] = ["sql", "text", "sh", "yaml", ""];

/// The SQL of a yaml block's `query: "..."` lines, as blocks of their own (run; their output
/// is not compared, but must hold no error).
fn yaml_queries(all: &[Block]) -> Vec<Block> {
    let mut out = vec![];
    for b in all.iter().filter(|b| b.lang == "yaml") {
        for (i, line) in b.text.lines().enumerate() {
            if let Some(q) = line.trim().strip_prefix("query: \"").and_then(|q| q.strip_suffix('"')) {
                let at = b.open + 1 + i;
                out.push(Block {
                    lang: "sql".into(),
                    open: at,
                    close: at,
                    text: format!("{q};"),
                    not_run: None,
                    shows_error: false,
                });
            }
        }
    }
    out
}

/// Whether psql's output holds an error or a warning (a block that shows no output must
/// print none).
fn complains(output: &str) -> bool {
    output
        .lines()
        .any(|l| ["ERROR:", "FATAL:", "WARNING:", "PANIC:"].iter().any(|p| l.starts_with(p)) || l.starts_with("error:"))
}

fn blocks(page: &str) -> Vec<Block> {
    let lines: Vec<&str> = page.lines().collect();
    let mut out = vec![];
    let mut i = 0;
    while i < lines.len() {
        if let Some(lang) = lines[i].trim_start().strip_prefix("```") {
            let open = i;
            let close = (open + 1..lines.len())
                .find(|&j| lines[j].trim_start().starts_with("```"))
                .unwrap_or_else(|| panic!("a block opened on line {} is not closed", open + 1));
            let before = lines[..open].iter().rev().find(|l| !l.trim().is_empty()).map(|l| l.trim());
            let not_run = before
                .and_then(|l| l.strip_prefix("<!-- not run:"))
                .map(|r| r.trim_end_matches("-->").trim().to_string());
            out.push(Block {
                lang: lang.trim().to_string(),
                open,
                close,
                text: lines[open + 1..close].join("\n"),
                not_run,
                shows_error: before == Some("<!-- shows an error -->"),
            });
            i = close + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// A function as a reference page describes it.
#[derive(Debug)]
struct Documented {
    page: String,
    name: String,
    arguments: String,
    result: String,
    comment: String,
    rows: BTreeMap<String, String>,
}

/// The function headings of the reference pages.
fn documented() -> Vec<Documented> {
    let mut out = vec![];
    for path in pages() {
        if !path.starts_with(root().join("docs/reference")) {
            continue;
        }
        let text = read(&path);
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(sig) = line.strip_prefix("## `").and_then(|l| l.strip_suffix('`')) else { continue };
            let page = path.file_name().unwrap().to_string_lossy().to_string();
            let (call, result) = sig.split_once(") → ").unwrap_or_else(|| panic!("{page}: heading {sig:?}"));
            let (name, arguments) = call.split_once('(').unwrap();
            // the first paragraph after the heading is the COMMENT
            let mut j = i + 1;
            while lines[j].trim().is_empty() {
                j += 1;
            }
            let mut comment = vec![];
            while j < lines.len() && !lines[j].trim().is_empty() {
                comment.push(lines[j].trim());
                j += 1;
            }
            // then the table of facts, | Volatility | STABLE |
            let mut rows = BTreeMap::new();
            while j < lines.len() && (lines[j].trim().is_empty() || lines[j].starts_with('|')) {
                let cells: Vec<&str> = lines[j].split('|').map(str::trim).collect();
                if cells.len() >= 4 && !cells[1].is_empty() && !cells[1].starts_with("---") {
                    rows.insert(cells[1].to_string(), cells[2].to_string());
                }
                j += 1;
            }
            out.push(Documented {
                page,
                name: name.into(),
                arguments: arguments.into(),
                result: result.into(),
                comment: comment.join(" "),
                rows,
            });
        }
    }
    out
}

/// `biz_tag text, step integer DEFAULT 1000` -> `["biz_tag text", "step integer"]`: the input
/// arguments of a signature, without their defaults.
fn split_arguments(arguments: &str) -> Vec<&str> {
    let mut parts = vec![];
    let (mut depth, mut quoted, mut start) = (0, false, 0);
    let bytes = arguments.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'\'' => quoted = !quoted,
            b'(' if !quoted => depth += 1,
            b')' if !quoted => depth -= 1,
            b',' if !quoted && depth == 0 => {
                parts.push(&arguments[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !arguments.trim().is_empty() {
        parts.push(&arguments[start..]);
    }
    parts.into_iter().map(|p| p.split(" DEFAULT ").next().unwrap().trim()).filter(|p| !p.starts_with("OUT ")).collect()
}

/// The names of a signature's input arguments.
fn argument_names(arguments: &str) -> Vec<String> {
    split_arguments(arguments).iter().map(|p| p.split(' ').next().unwrap().trim_matches('"').to_string()).collect()
}

/// `biz_tag text, step integer DEFAULT 1000` -> `pg_catalog.text, pg_catalog.int4`: the
/// argument types of a signature, schema-qualified, for COMMENT ON FUNCTION.
fn identity(arguments: &str) -> String {
    let mut types = vec![];
    for part in split_arguments(arguments) {
        let (_name, ty) = part.split_once(' ').unwrap_or_else(|| panic!("argument {part:?} has no name"));
        let qualified = match ty {
            "text" => "text",
            "bigint" => "int8",
            "integer" => "int4",
            "boolean" => "bool",
            "timestamp with time zone" => "timestamptz",
            "uuid" => "uuid",
            "jsonb" => "jsonb",
            "regclass" => "regclass",
            "name" => "name",
            other => panic!("argument type {other:?}: add it to identity()"),
        };
        types.push(format!("pg_catalog.{qualified}"));
    }
    types.join(", ")
}

/// The `-- <comments>` block generated from the reference pages.
fn comments_block(docs: &[Documented]) -> String {
    let mut out = String::from(
        "-- <comments>\n-- Generated from the headings of docs/reference/*.md by tests/integration/tests/docs.rs\n\
         -- (SEQGEN_BLESS=1 writes it): edit the pages, not these lines.\n",
    );
    for d in docs {
        out.push_str(&format!(
            "COMMENT ON FUNCTION @extschema@.{}({}) IS '{}';\n",
            d.name,
            identity(&d.arguments),
            d.comment.replace('\'', "''")
        ));
    }
    out
}

/// Replace the text between two markers of a file (the markers stay); with bless, write it.
fn generated(path: &Path, begin: &str, end: &str, new: &str, stale: &mut Vec<String>) {
    let text = read(path);
    let a = text.find(begin).unwrap_or_else(|| panic!("{}: no {begin}", path.display()));
    let b = text[a..].find(end).map(|b| a + b).unwrap_or_else(|| panic!("{}: no {end}", path.display()));
    if text[a..b] != *new {
        if bless() {
            std::fs::write(path, format!("{}{new}{}", &text[..a], &text[b..])).unwrap();
        } else {
            stale.push(path.display().to_string());
        }
    }
}

#[test]
fn reference_pages_describe_every_function_and_setting() {
    let docs = documented();
    let mut stale = vec![];
    let block = comments_block(&docs);
    for f in ["sql/functions.sql", "sql/pg_seqgen--0.6.0--1.0.0.sql"] {
        generated(&root().join(f), "-- <comments>", "-- </comments>", &block, &mut stale);
    }
    assert!(stale.is_empty(), "generated from docs/reference and out of date (SEQGEN_BLESS=1 rewrites): {stale:?}");

    let c = Cluster::init("docs_ref", 57930, &[]);
    c.start();
    let mut s = c.connect();
    s.batch_execute("CREATE EXTENSION pg_seqgen").unwrap();
    let rows = s
        .query(
            "SELECT p.proname::text, pg_get_function_arguments(p.oid), pg_get_function_result(p.oid),
                    p.provolatile::text, p.proisstrict,
                    p.proacl IS NULL OR EXISTS (SELECT FROM aclexplode(p.proacl) a
                                                 WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE'),
                    obj_description(p.oid, 'pg_proc'),
                    EXISTS (SELECT FROM aclexplode(p.proacl) a
                             WHERE a.grantee = 'pg_monitor'::regrole AND a.privilege_type = 'EXECUTE')
               FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
               JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_seqgen'
              WHERE d.deptype = 'e' AND p.pronamespace = 'public'::regnamespace",
            &[],
        )
        .unwrap();
    let key = |n: &str, a: &str, r: &str| format!("{n}({a}) → {r}");
    let by_sig: BTreeMap<String, &Documented> =
        docs.iter().map(|d| (key(&d.name, &d.arguments, &d.result), d)).collect();
    assert_eq!(by_sig.len(), docs.len(), "a signature has two headings");
    let mut problems = vec![];
    let sqlstates: BTreeSet<String> = errcodes().into_values().collect();
    let mut installed = BTreeSet::new();
    let (mut user_facing, mut internal) = (0, 0);
    for r in &rows {
        let (name, args, result, vol, strict, public, comment, monitor): (
            String,
            String,
            String,
            String,
            bool,
            bool,
            Option<String>,
            bool,
        ) = (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5), r.get(6), r.get(7));
        let sig = key(&name, &args, &result);
        installed.insert(sig.clone());
        let Some(d) = by_sig.get(&sig) else {
            problems.push(format!("{sig}: no heading in docs/reference"));
            continue;
        };
        if d.comment.starts_with("pg_seqgen (internal") {
            internal += 1;
            if d.page != "internal.md" {
                problems.push(format!("{sig}: internal, but on {}", d.page));
            }
            continue;
        }
        user_facing += 1;
        if d.page != format!("{name}.md") {
            problems.push(format!("{sig}: on {}, not {name}.md", d.page));
        }
        if comment.as_deref() != Some(d.comment.as_str()) {
            problems.push(format!("{sig}: the installed COMMENT is {comment:?}, the page says {:?}", d.comment));
        }
        let want = [
            (
                "Volatility",
                match vol.as_str() {
                    "i" => "IMMUTABLE",
                    "s" => "STABLE",
                    _ => "VOLATILE",
                }
                .to_string(),
            ),
            ("Strict", if strict { "yes: a NULL argument gives NULL" } else { "no" }.to_string()),
            (
                "Execute",
                if public {
                    "every role (PUBLIC)"
                } else if monitor {
                    "superusers, members of pg_monitor, and the roles granted EXECUTE on it (not PUBLIC)"
                } else {
                    "superusers, and the roles granted EXECUTE on it (not PUBLIC)"
                }
                .to_string(),
            ),
        ];
        for (row, value) in want {
            if d.rows.get(row) != Some(&value) {
                problems.push(format!("{sig}: | {row} | should be {value:?}, the page has {:?}", d.rows.get(row)));
            }
        }
        assert!(d.comment.len() <= 200 && !d.comment.ends_with('.'), "{sig}: a COMMENT is one short line");
        // | Returns | ... |, and a row of the Parameters table for each argument, and no other
        if d.rows.get("Returns").is_none_or(|r| r.is_empty()) {
            problems.push(format!("{sig}: no | Returns | row"));
        }
        let names = argument_names(&d.arguments);
        for n in &names {
            if d.rows.get(&format!("`{n}`")).is_none_or(|r| r.is_empty()) {
                problems.push(format!("{sig}: parameter {n} has no row in the Parameters table"));
            }
        }
        for row in d.rows.keys().filter(|k| k.starts_with('`')) {
            if !names.iter().any(|n| *row == format!("`{n}`")) {
                problems.push(format!("{sig}: the Parameters table names {row}, which is no argument"));
            }
        }
        // | Errors | `22004`, `42704` | (or "none of its own"): real SQLSTATEs
        match d.rows.get("Errors").map(String::as_str) {
            None => problems.push(format!("{sig}: no | Errors | row")),
            Some("none of its own") => {}
            Some(list) => {
                for code in list.split(", ") {
                    let code = code.trim_matches('`');
                    if !sqlstates.contains(code) {
                        problems.push(format!("{sig}: | Errors | names {code:?}, which is no SQLSTATE"));
                    }
                }
            }
        }
    }
    for sig in by_sig.keys() {
        if !installed.contains(sig) {
            problems.push(format!("docs/reference names {sig}, which pg_seqgen does not install"));
        }
    }

    // settings: a row of docs/settings.md each, `| `seqgen.name` | default | context | ... |`
    let settings_page = read(&root().join("docs/settings.md"));
    let mut rows_named = BTreeMap::new();
    for line in settings_page.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() > 4 && cells[1].starts_with("`seqgen.") {
            rows_named.insert(cells[1].trim_matches('`').to_string(), cells[3].to_string());
        }
    }
    let settings = s.query("SELECT name, context FROM pg_settings WHERE name LIKE 'seqgen.%'", &[]).unwrap();
    let mut setting_names = BTreeSet::new();
    for r in &settings {
        let (name, context): (String, String) = (r.get(0), r.get(1));
        let shown = match context.as_str() {
            "postmaster" => "restart",
            "sighup" => "reload",
            "user" => "session",
            "superuser" => "superuser",
            _ => "read-only",
        };
        match rows_named.get(&name) {
            None => problems.push(format!("setting {name}: no row in docs/settings.md")),
            Some(c) if c != shown => {
                problems.push(format!("setting {name}: context {c:?} on the page, {shown:?} here"))
            }
            _ => {}
        }
        setting_names.insert(name);
    }
    for name in rows_named.keys() {
        if !setting_names.contains(name) {
            problems.push(format!("docs/settings.md has a row for {name}, which is no setting"));
        }
    }

    // every page is in the book's table of contents
    let summary = read(&root().join("docs/SUMMARY.md"));
    for p in pages() {
        let rel = p.strip_prefix(root().join("docs")).unwrap().to_string_lossy().to_string();
        if rel != "SUMMARY.md" && !summary.contains(&format!("({rel})")) {
            problems.push(format!("docs/{rel} is not in docs/SUMMARY.md"));
        }
    }
    // the blocks that are not run name functions that exist
    let names: BTreeSet<String> = rows.iter().map(|r| r.get::<_, String>(0)).collect();
    for p in pages().into_iter().chain([root().join("README.md")]) {
        for b in blocks(&read(&p)).iter().filter(|b| b.not_run.is_some()) {
            for (i, _) in b.text.match_indices("seqgen_") {
                let name: String = b.text[i..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if b.text[i + name.len()..].starts_with('(') && !names.contains(&name) {
                    problems.push(format!(
                        "{}:{}: a block not run calls {name}, which does not exist",
                        p.display(),
                        b.open + 1
                    ));
                }
            }
        }
    }
    // links between pages lead somewhere
    for p in pages().into_iter().chain([root().join("README.md")]) {
        let text = read(&p);
        for (i, _) in text.match_indices("](") {
            let target: String = text[i + 2..].chars().take_while(|&c| c != ')' && c != '#').collect();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            if !p.parent().unwrap().join(&target).exists() {
                problems.push(format!("{}: a link to {target}, which does not exist", p.display()));
            }
        }
    }
    println!(
        "reference: {user_facing} user-facing signatures on {} pages, {internal} internal, {} settings; problems: {}",
        docs.iter().filter(|d| d.page != "internal.md").map(|d| &d.page).collect::<BTreeSet<_>>().len(),
        settings.len(),
        problems.len()
    );
    assert!(problems.is_empty(), "{problems:#?}");
}

/// Every SQLSTATE PostgreSQL defines, by its `ERRCODE_` name: five characters each, from the
/// server's `utils/errcodes.h`.
fn errcodes() -> BTreeMap<String, String> {
    let pg_config = std::env::var("SEQGEN_PG_CONFIG").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin/pg_config".into());
    let include =
        String::from_utf8(Command::new(&pg_config).arg("--includedir-server").output().unwrap().stdout).unwrap();
    let header = read(&Path::new(include.trim()).join("utils/errcodes.h"));
    let mut codes = BTreeMap::new();
    for line in header.lines() {
        let Some(rest) = line.strip_prefix("#define ") else { continue };
        let Some((name, value)) = rest.split_once(' ') else { continue };
        let Some(chars) = value.trim().strip_prefix("MAKE_SQLSTATE(").and_then(|v| v.strip_suffix(')')) else {
            continue;
        };
        let five: String = chars.split(',').map(|c| c.trim().trim_matches('\'')).collect();
        codes.insert(name.to_string(), five);
    }
    codes
}

/// The SQLSTATE table of docs/errors.md, generated from src/plumbing/error.rs: each
/// `ERRCODE_...` of `SeqgenError::sqlstate`, its five characters (from PostgreSQL's
/// `utils/errcodes.h`) and the messages of the variants mapped to it.
fn sqlstate_table() -> String {
    let source = read(&root().join("src/plumbing/error.rs"));
    // the messages: #[error("...")] before each variant
    let mut messages: BTreeMap<String, String> = BTreeMap::new();
    let mut pending: Option<String> = None;
    let enum_text = &source[source.find("pub enum SeqgenError").unwrap()..source.find("pub type Result").unwrap()];
    for line in enum_text.lines().map(str::trim) {
        if let Some(m) = line.strip_prefix("#[error(\"").and_then(|m| m.strip_suffix("\")]")) {
            pending = Some(m.to_string());
        } else if line.starts_with("#[error(") || line.starts_with("\"") {
            // a message on lines of its own, or computed: the line with the string
            if let Some(m) = line.trim_start_matches("#[error(").strip_prefix('"').and_then(|m| m.split("\"").next()) {
                pending = Some(m.to_string());
            } else {
                pending = Some(String::new());
            }
        } else if let Some(name) = line
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .next()
            .filter(|n| n.chars().next().is_some_and(char::is_uppercase))
        {
            if let Some(m) = pending.take() {
                messages.insert(name.to_string(), m);
            }
        }
    }
    // the mapping: the arms of `sqlstate`
    let body = &source[source.find("pub fn sqlstate").unwrap()..source.find("pub fn detail").unwrap()];
    let mut by_code: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut variants: Vec<String> = vec![];
    for line in body.lines().map(str::trim) {
        let (left, right) = match line.split_once("=>") {
            Some((l, r)) => (l, Some(r)),
            None => (line, None),
        };
        for v in left.split('|') {
            let v = v.trim().trim_start_matches('|').trim();
            let name: String = v.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if name.chars().next().is_some_and(char::is_uppercase) && name != "ERRCODE" {
                variants.push(name);
            }
        }
        if let Some(right) = right {
            let code = right.trim().trim_end_matches(',').trim_end_matches('{').trim();
            let code = if code.starts_with("ERRCODE_") {
                code.to_string()
            } else if code.is_empty() {
                continue; // `=> {` on its own: the code is on the next line
            } else {
                "passed on".to_string()
            };
            for v in variants.drain(..) {
                by_code.entry(code.clone()).or_default().push(v);
            }
        } else if line.starts_with("ERRCODE_") {
            let code = line.trim_end_matches(',').to_string();
            for v in variants.drain(..) {
                by_code.entry(code.clone()).or_default().push(v);
            }
        }
    }
    let codes = errcodes();
    let mut rows: Vec<(String, String, String)> = vec![];
    for (errcode, vs) in &by_code {
        let (five, condition) = if errcode == "passed on" {
            ("(kept)".to_string(), "the SQLSTATE of the error it carries".to_string())
        } else {
            let five = codes.get(errcode).unwrap_or_else(|| panic!("{errcode} is not in errcodes.h")).clone();
            (five, errcode.trim_start_matches("ERRCODE_").to_lowercase())
        };
        let mut msgs: Vec<String> = vs
            .iter()
            .map(|v| match messages.get(v).map(String::as_str) {
                Some("") | Some("{0}") | Some("{message}") | None => format!("`{v}`"),
                Some(m) => format!(
                    "`{v}`: {}",
                    m.replace("\\\"", "\"").replace('|', "\\|").replace("{{", "{").replace("}}", "}")
                ),
            })
            .collect();
        msgs.dedup();
        rows.push((five, condition, msgs.join("<br>")));
    }
    rows.sort();
    let mut out = String::from(
        "<!-- <sqlstates> generated from src/plumbing/error.rs by tests/integration/tests/docs.rs (SEQGEN_BLESS=1) -->\n\n\
         | SQLSTATE | condition | errors (variant of `SeqgenError`: message) |\n| --- | --- | --- |\n",
    );
    for (five, condition, msgs) in rows {
        out.push_str(&format!("| `{five}` | {condition} | {msgs} |\n"));
    }
    out.push('\n');
    out
}

#[test]
fn the_sqlstate_table_is_generated_from_the_code() {
    let mut stale = vec![];
    let table = sqlstate_table();
    generated(&root().join("docs/errors.md"), "<!-- <sqlstates>", "<!-- </sqlstates> -->", &table, &mut stale);
    assert!(stale.is_empty(), "docs/errors.md's SQLSTATE table is out of date (SEQGEN_BLESS=1 rewrites it)");
    println!("SQLSTATE table: {} rows", table.lines().filter(|l| l.starts_with("| `")).count());
}

/// psql's output of a page's blocks, one text per block.
fn run_page(c: &Cluster, db: &str, sql_blocks: &[&Block]) -> Vec<String> {
    let mut script = String::new();
    for (i, b) in sql_blocks.iter().enumerate() {
        script.push_str(&format!("\\echo '@@ block {i}'\n{}\n", b.text));
    }
    script.push_str("\\echo '@@ end'\n");
    let psql = format!("{}/psql", pg_bin());
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "exec {psql} -X -q -v VERBOSITY=default -h {} -p {} -U postgres -d {db} -f - 2>&1",
            c.dir.display(),
            c.port
        ))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut outputs: Vec<String> = vec![];
    let mut current: Option<Vec<String>> = None;
    for line in text.lines() {
        if line.starts_with("@@ ") {
            if let Some(lines) = current.take() {
                outputs.push(normalize(&lines.join("\n")));
            }
            if line != "@@ end" {
                current = Some(vec![]);
            }
            continue;
        }
        // psql:<stdin>:12: ERROR:  ... -> ERROR:  ...
        let line = match line.strip_prefix("psql:<stdin>:") {
            Some(rest) => rest.split_once(": ").map(|(_, m)| m).unwrap_or(rest),
            None => line,
        };
        if let Some(lines) = current.as_mut() {
            lines.push(line.to_string());
        }
    }
    assert_eq!(outputs.len(), sql_blocks.len(), "psql stopped early:\n{text}");
    outputs
}

fn normalize(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    lines.join("\n").trim_matches('\n').to_string()
}

#[test]
fn every_sql_example_runs_and_prints_what_the_page_shows() {
    let c = Cluster::init(
        "docs_sql",
        57931,
        &["seqgen.max_databases = 128", "seqgen.max_tags = 64", "max_worker_processes = 24", "wal_level = logical"],
    );
    c.start();
    let (mut ran, mut compared, mut not_run) = (0, 0, vec![]);
    let mut problems = vec![];
    let mut with_readme = pages();
    with_readme.push(root().join("README.md"));
    for (n, path) in with_readme.iter().enumerate() {
        let text = read(path);
        let rel = path.strip_prefix(root()).unwrap().display().to_string();
        let all = blocks(&text);
        for b in &all {
            if !LANGUAGES.contains(&b.lang.as_str()) {
                problems.push(format!("{rel}:{}: a block of language {:?} (one of {LANGUAGES:?})", b.open + 1, b.lang));
            }
        }
        let queries = yaml_queries(&all);
        let sql: Vec<&Block> =
            all.iter().filter(|b| b.lang == "sql" && b.not_run.is_none()).chain(queries.iter()).collect();
        for b in &sql {
            // a statement left open would run into the next block's marker
            let last = b
                .text
                .lines()
                .map(|l| l.split(" --").next().unwrap().trim())
                .rfind(|l| !l.is_empty() && !l.starts_with("--"));
            if !last.is_some_and(|l| l.ends_with(';') || l.starts_with('\\')) {
                problems.push(format!("{rel}:{}: the block's last statement does not end with ;", b.open + 1));
            }
        }
        for b in all.iter().filter(|b| b.lang == "sql") {
            if let Some(why) = &b.not_run {
                assert!(!why.is_empty(), "{rel}:{}: say why a block is not run", b.open + 1);
                not_run.push(format!("{rel}:{}: {why}", b.open + 1));
            }
        }
        if sql.is_empty() {
            continue;
        }
        let db = format!("doc_{n}");
        let mut admin = c.connect();
        admin.batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
        if !sql.iter().any(|b| b.text.contains("CREATE EXTENSION pg_seqgen")) {
            c.connect_db(&db).batch_execute("CREATE EXTENSION pg_seqgen").unwrap();
        }
        let outputs = run_page(&c, &db, &sql);
        ran += sql.len();
        // the expected output: a ```text block right after the SQL block
        let mut rewrites: Vec<(usize, usize, String)> = vec![];
        for (b, got) in sql.iter().zip(&outputs) {
            let next = all.iter().find(|x| x.open > b.close);
            let lines: Vec<&str> = text.lines().collect();
            let expected =
                next.filter(|x| x.lang == "text" && lines[b.close + 1..x.open].iter().all(|l| l.trim().is_empty()));
            match expected {
                Some(x) => {
                    compared += 1;
                    if complains(got) && !b.shows_error {
                        problems.push(format!(
                            "{rel}:{}: an error or warning, and no <!-- shows an error --> before the block:\n{got}",
                            b.open + 1
                        ));
                    }
                    if normalize(&x.text) != *got {
                        if bless() {
                            rewrites.push((x.open, x.close, got.clone()));
                        } else {
                            problems.push(format!(
                                "{rel}:{}: the page shows\n{}\nbut psql printed\n{got}",
                                b.open + 1,
                                normalize(&x.text)
                            ));
                        }
                    }
                }
                None => {
                    if complains(got) {
                        problems.push(format!("{rel}:{}: an error, and the page shows no output:\n{got}", b.open + 1));
                    }
                }
            }
        }
        if !rewrites.is_empty() {
            let mut lines: Vec<String> = text.lines().map(String::from).collect();
            for (open, close, got) in rewrites.into_iter().rev() {
                let new: Vec<String> = got.lines().map(String::from).collect();
                lines.splice(open + 1..close, new);
            }
            std::fs::write(path, lines.join("\n") + "\n").unwrap();
        }
        admin.batch_execute(&format!("DROP DATABASE {db} WITH (FORCE)")).unwrap();
        // a page that moves the clock-ordered generators' floors (an advance, a rewind, which
        // takes effect at a restart) leaves the next page a restarted server
        if sql.iter().any(|b| ["_rewind(", "_advance(", "UPDATE seqgen."].iter().any(|w| b.text.contains(w))) {
            drop(admin);
            c.stop("fast");
            c.start();
            admin = c.connect();
            // until the clock passes a floor a page left ahead of it (within seconds)
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            admin.batch_execute("CREATE DATABASE doc_clock").unwrap();
            c.connect_db("doc_clock").batch_execute("CREATE EXTENSION pg_seqgen").unwrap();
            let mut probe = c.connect_db("doc_clock");
            while probe.batch_execute("SELECT seqgen_snowflake(), seqgen_snowflake53(), seqgen_uuidv7()").is_err() {
                assert!(std::time::Instant::now() < deadline, "the generators did not come back after a restart");
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            drop(probe);
            admin.batch_execute("DROP DATABASE doc_clock WITH (FORCE)").unwrap();
        }
        // roles the page made
        let roles: Vec<String> = admin
            .query("SELECT quote_ident(rolname) FROM pg_roles WHERE oid >= 16384", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        for r in roles {
            admin.batch_execute(&format!("DROP ROLE {r}")).unwrap();
        }
    }
    println!("docs: {ran} SQL blocks run, {compared} compared with the output shown; not run ({}):", not_run.len());
    for n in &not_run {
        println!("  {n}");
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert!(compared >= 60, "only {compared} outputs compared");
}
