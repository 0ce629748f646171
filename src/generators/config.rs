//! Configuration as code: `seqgen_config()` writes the definition of every tag as a JSON
//! document (`seqgen_core::config`, versioned), `seqgen_apply(doc)` makes the database match
//! one, in the calling transaction: it creates what is missing and changes what differs
//! through the same functions an operator would call (so every check of theirs applies:
//! ownership, template changes that could repeat numbers, bounded lock waits), never lowers a
//! counter, and drops tags the document does not name only when asked to.

use std::collections::{BTreeMap, BTreeSet};

use pgrx::prelude::*;
use pgrx::JsonB;
use seqgen_core::config::{self, Config, TagConfig, TemplateConfig};

use crate::generators::{gapless, opaque, order, tags};
use crate::plumbing::error::{required, OrRaise, Result, SeqgenError};
use crate::plumbing::session::{as_superuser, bounded_lock_wait};

fn spi_err(e: pgrx::spi::Error) -> SeqgenError {
    SeqgenError::Internal(e.to_string())
}

/// A tag as the catalog has it, in the document's terms.
struct Current {
    max_id: i64,
    config: TagConfig,
}

/// The tags of this database that the caller owns (all of them for a superuser). The catalog
/// is read with the extension's privileges, like every tag change.
fn current() -> Result<BTreeMap<String, Current>> {
    let user = unsafe { pg_sys::GetUserId() };
    bounded_lock_wait(|| {
        as_superuser(|| {
            Spi::connect(|c| {
                let rows = c.select(
                    "SELECT a.biz_tag, a.step, a.max_id, a.description, a.opaque_from IS NOT NULL, a.node_bits, \
                     a.public_draw, ARRAY(SELECT r.rolname::pg_catalog.text FROM pg_catalog.pg_roles r \
                                          WHERE r.oid OPERATOR(pg_catalog.=) ANY (a.drawers)), \
                     t.template, t.time_zone, a.gapless \
                     FROM seqgen.alloc a LEFT JOIN seqgen.template t ON t.biz_tag OPERATOR(pg_catalog.=) a.biz_tag \
                     WHERE pg_catalog.pg_has_role($1, a.owner::pg_catalog.oid, 'MEMBER') \
                     ORDER BY a.biz_tag",
                    None,
                    &[user.into()],
                )?;
                let mut out = BTreeMap::new();
                for r in rows {
                    let name: String = r.get(1)?.unwrap_or_default();
                    let max_id: i64 = r.get(3)?.unwrap_or(0);
                    let mut grants: Vec<String> = r.get::<Vec<String>>(8)?.unwrap_or_default();
                    if r.get::<bool>(7)?.unwrap_or(false) {
                        grants.push("public".into());
                    }
                    grants.sort();
                    let template = match (r.get::<String>(9)?, r.get::<String>(10)?) {
                        (Some(text), Some(time_zone)) => {
                            let allow_repeats =
                                seqgen_core::template::parse(&text).is_ok_and(|t| t.repeats_every().is_some());
                            Some(TemplateConfig { text, time_zone, allow_repeats })
                        }
                        _ => None,
                    };
                    let config = TagConfig {
                        step: r.get(2)?.unwrap_or(1000),
                        start_with: Some(max_id.saturating_add(1)),
                        description: r.get(4)?,
                        template,
                        opaque: r.get(5)?.unwrap_or(false),
                        node_bits: r.get::<i32>(6)?.unwrap_or(0).max(0) as u32,
                        grants,
                        gapless: r.get::<bool>(11)?.unwrap_or(false),
                    };
                    out.insert(name, Current { max_id, config });
                }
                Ok(out)
            })
        })
    })
    .map_err(spi_err)
}

/// The definition of every tag of this database (`start_with`: the next value the tag would
/// reserve; applied elsewhere it is a floor, never a step back).
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_config() -> JsonB {
    crate::plumbing::catalog::require_current().or_raise();
    let tags = current().or_raise().into_iter().map(|(name, c)| (name, c.config)).collect();
    let doc = Config { version: config::VERSION, tags };
    JsonB(serde_json::to_value(doc).unwrap_or_else(|e| SeqgenError::Internal(e.to_string()).raise()))
}

/// Make this database's tags match `doc` (one transaction: all of it or nothing). Returns what
/// it changed, one row per change; applying the same document again returns no row.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_apply(
    doc: Option<JsonB>,
    drop_missing: default!(Option<bool>, false),
) -> TableIterator<'static, (name!(biz_tag, String), name!(action, String))> {
    let (doc, drop_missing) = (required(doc, "doc"), required(drop_missing, "drop_missing"));
    crate::plumbing::catalog::require_current().or_raise();
    TableIterator::new(apply(&doc.0, drop_missing).or_raise())
}

/// An error of one part of the document, with its JSON path.
fn at(path: String, e: SeqgenError) -> SeqgenError {
    SeqgenError::At { path, inner: Box::new(e) }
}

fn apply(value: &serde_json::Value, drop_missing: bool) -> Result<Vec<(String, String)>> {
    let doc = config::parse(value).map_err(|e| SeqgenError::InvalidArgument(e.to_string()))?;
    let have = current()?;
    apply_doc(&doc, &have, drop_missing, &mut Mode::AllOrNothing)
}

/// On a Citus worker (the allocator, `background::citus`): make this node's tags the
/// coordinator's. `value` is what `seqgen_cluster_definitions` returned there: the
/// document of every tag, their owners and their opaque keys. Every node keeps its own counters: `start_with`
/// only starts a tag new here, and never moves an existing one. Returns the changes.
pub(crate) fn apply_from_coordinator(value: &serde_json::Value) -> Result<Applied> {
    let bad = |what: &str| SeqgenError::InvalidArgument(format!("the coordinator's definitions: {what}"));
    let mut doc = config::parse(value.get("config").ok_or_else(|| bad("no \"config\""))?)
        .map_err(|e| SeqgenError::InvalidArgument(e.to_string()))?;
    let have = current()?;
    for (name, t) in doc.tags.iter_mut() {
        // every node counts on its own: the coordinator's counter starts nothing here (and an
        // opaque tag's, in the upper half of the range, would leave no room to become opaque)
        if have.contains_key(name) || t.opaque {
            t.start_with = None;
        }
    }
    // The coordinator's keys: a key made here while applying is the coordinator's (a key in
    // use here is never replaced: IDs and numbers permuted with two keys could meet).
    let keys: BTreeMap<String, String> = value
        .get("keys")
        .and_then(|k| k.as_object())
        .into_iter()
        .flatten()
        .map(|(tag, hex)| Ok((tag.clone(), hex.as_str().ok_or_else(|| bad("a key is not a string"))?.to_string())))
        .collect::<Result<_>>()?;
    let mut mode = Mode::EachOnItsOwn { refused: vec![], deadline: std::time::Instant::now() + APPLY_BUDGET };
    let mut done = opaque::with_keys(keys, || apply_doc(&doc, &have, true, &mut mode))?;
    let owners = value.get("owners").and_then(|o| o.as_object()).ok_or_else(|| bad("no \"owners\""))?;
    for (tag, owner) in owners {
        let Some(owner) = owner.as_str() else { continue };
        let mut moved = false;
        let made = mode.change(tag, config::tag_path(tag, ".owner"), || {
            let row = as_superuser(|| {
                Spi::connect_mut(|c| {
                    let t = c.update(
                        "SELECT pg_catalog.to_regrole($2) IS NOT NULL, \
                                (SELECT a.owner OPERATOR(pg_catalog.<>) pg_catalog.to_regrole($2) FROM seqgen.alloc a \
                                 WHERE a.biz_tag OPERATOR(pg_catalog.=) $1)",
                        Some(1),
                        &[tag.as_str().into(), owner.into()],
                    )?;
                    let r = t.first();
                    Ok::<_, pgrx::spi::Error>((r.get::<bool>(1)?.unwrap_or(false), r.get::<bool>(2)?))
                })
            })
            .map_err(spi_err)?;
            match row {
                // the tag is not here (refused above, or dropped): nothing to own
                (_, None) | (_, Some(false)) => Ok(()),
                (false, Some(true)) => Err(SeqgenError::InvalidArgument(format!(
                    "the owner of tag \"{tag}\", role \"{owner}\", does not exist on this node"
                ))),
                (true, Some(true)) => {
                    moved = true;
                    as_superuser(|| {
                        Spi::run_with_args(
                            "UPDATE seqgen.alloc SET owner = pg_catalog.to_regrole($2) \
                             WHERE biz_tag OPERATOR(pg_catalog.=) $1",
                            &[tag.as_str().into(), owner.into()],
                        )
                    })
                    .map_err(spi_err)
                }
            }
        })?;
        if made && moved {
            done.push((tag.clone(), format!("owner {owner}")));
        }
    }
    let Mode::EachOnItsOwn { refused, .. } = mode else { unreachable!("made above") };
    Ok(Applied { done, refused })
}

/// What a Citus worker made of the coordinator's definitions.
pub(crate) struct Applied {
    /// (tag, what changed).
    pub done: Vec<(String, String)>,
    /// (tag, JSON path, why): each change this node refused; every other change was made.
    pub refused: Vec<(String, String, String)>,
}

/// What `seqgen_cluster_definitions` hands a Citus worker: the version of the definitions,
/// and, when it differs from `known`, every tag's document, owner and opaque key.
pub(crate) fn cluster_definitions(known: Option<&str>) -> Result<serde_json::Value> {
    // it hands out the opaque keys, which seqgen.opaque_key shows only to its grantees
    if !unsafe { pg_sys::superuser() } {
        return Err(SeqgenError::SuperuserOnly("seqgen_cluster_definitions()"));
    }
    let version: String = as_superuser(|| {
        Spi::get_one::<String>(
            "SELECT pg_catalog.format('%s:%s', d.tableoid::pg_catalog.oid, d.version) FROM seqgen.definitions d",
        )
    })
    .map_err(spi_err)?
    .unwrap_or_default();
    if known == Some(version.as_str()) {
        return Ok(serde_json::json!({ "version": version }));
    }
    let tags: BTreeMap<String, TagConfig> = current()?.into_iter().map(|(name, c)| (name, c.config)).collect();
    let owners = tag_map("SELECT biz_tag, owner::pg_catalog.text FROM seqgen.alloc")?;
    // the opaque keys: every node permutes with the coordinator's, so that any node takes any
    // node's IDs and numbers apart (they travel over Citus's own connection, to a superuser)
    let keys = tag_map("SELECT biz_tag, pg_catalog.encode(key, 'hex') FROM seqgen.opaque_key")?;
    let doc = Config { version: config::VERSION, tags };
    Ok(serde_json::json!({ "version": version, "config": doc, "owners": owners, "keys": keys }))
}

/// A text per tag, read by `sql` (two text columns) with the extension's privileges.
fn tag_map(sql: &str) -> Result<BTreeMap<String, String>> {
    as_superuser(|| {
        Spi::connect(|c| {
            c.select(sql, None, &[])?
                .map(|r| Ok((r.get::<String>(1)?.unwrap_or_default(), r.get::<String>(2)?.unwrap_or_default())))
                .collect::<std::result::Result<BTreeMap<_, _>, pgrx::spi::Error>>()
        })
    })
    .map_err(spi_err)
}

/// The definitions of this database's tags for the Citus workers (see
/// `background::citus`): called by each worker's allocator through Citus, as a superuser.
/// `known`: the version the worker has; then only the version comes back.
#[pg_extern(volatile, parallel_unsafe)]
fn seqgen_cluster_definitions(known: Option<&str>) -> JsonB {
    JsonB(cluster_definitions(known).or_raise())
}

/// A tag the document names that exists but is not the caller's (`current` reads only the
/// caller's): 42501, as every change of another role's tag, not "already exists".
fn not_yours(e: SeqgenError) -> SeqgenError {
    match e {
        SeqgenError::DuplicateTag(t) => SeqgenError::NotTagOwner(t),
        e => e,
    }
}

/// How the changes a document asks for are made.
enum Mode {
    /// `seqgen_apply`: in the calling transaction, and the first refused change fails the call
    /// (all of the document or nothing).
    AllOrNothing,
    /// A Citus worker applying the coordinator's definitions: each change in a subtransaction
    /// of its own, so that one this node refuses (a role it lacks, a template its own counters
    /// rule out) holds back no other change, least of all a revoke or a drop. Each refusal is
    /// noted: (tag, JSON path, message).
    EachOnItsOwn { refused: Vec<(String, String, String)>, deadline: std::time::Instant },
}

/// How long a worker's application of the definitions may take before the changes left are
/// put off to the next read (each lock wait is bounded, but many could add up to the 30 s
/// after which the allocator ends the read, and everything applied with it).
pub(crate) const APPLY_BUDGET: std::time::Duration = std::time::Duration::from_secs(15);

impl Mode {
    /// Make one change of tag `tag` (`path`: the document's field). `Ok(false)`: refused,
    /// noted, and rolled back (on a worker only; `seqgen_apply` fails instead).
    fn change(&mut self, tag: &str, path: String, f: impl FnOnce() -> Result<()>) -> Result<bool> {
        match self {
            Mode::AllOrNothing => f().map(|()| true).map_err(|e| at(path, e)),
            Mode::EachOnItsOwn { refused, deadline } if std::time::Instant::now() > *deadline => {
                refused.push((
                    tag.to_string(),
                    path,
                    "not tried: this read ran out of time, the next one tries it".into(),
                ));
                Ok(false)
            }
            Mode::EachOnItsOwn { refused, .. } => match crate::plumbing::session::subtransaction(f) {
                Ok(()) => Ok(true),
                Err(e) => {
                    refused.push((tag.to_string(), path, e.to_string()));
                    Ok(false)
                }
            },
        }
    }

    fn on_worker(&self) -> bool {
        matches!(self, Mode::EachOnItsOwn { .. })
    }
}

fn apply_doc(
    doc: &Config,
    have: &BTreeMap<String, Current>,
    drop_missing: bool,
    mode: &mut Mode,
) -> Result<Vec<(String, String)>> {
    let mut done = vec![];
    // drops first, and each on its own on a worker: a tag dropped on the coordinator stops
    // being drawn here whatever else this node refuses
    if drop_missing {
        for name in have.keys().filter(|n| !doc.tags.contains_key(*n)) {
            if mode.change(name, config::tag_path(name, ""), || tags::drop_tag(name))? {
                done.push((name.clone(), "dropped".into()));
            }
        }
    }
    for (name, want) in &doc.tags {
        let path = |field: &str| config::tag_path(name, field);
        let mut changed = |action: String| done.push((name.clone(), action));
        let Some(cur) = have.get(name) else {
            if want.gapless {
                let t = want.template.as_ref();
                let made = mode.change(name, path(""), || {
                    gapless::create(
                        Some(name),
                        t.map(|t| t.text.as_str()),
                        t.map_or("UTC", |t| t.time_zone.as_str()),
                        Some(want.start_with.unwrap_or(1)),
                        want.description.as_deref(),
                    )
                    .map_err(not_yours)
                })?;
                if !made {
                    continue;
                }
                changed("created gapless".into());
                // what the creation made, read back (not assumed): a field it did not set
                // (opaque, node bits) goes through its own call and is applied or refused
                // with its path, never dropped silently, so applying the document again
                // changes nothing
                let made = current()?.remove(name).map(|c| c.config).ok_or_else(|| {
                    at(path(""), SeqgenError::Internal("the gapless tag just created is gone".into()))
                })?;
                apply_rest(name, want, Some(&made), &path, &mut changed, mode)?;
                continue;
            }
            let made = mode.change(name, path(""), || {
                tags::create(
                    Some(name),
                    Some(want.step),
                    Some(want.start_with.unwrap_or(1)),
                    want.description.as_deref(),
                )
                .map_err(not_yours)
            })?;
            if made {
                changed("created".into());
                apply_rest(name, want, None, &path, &mut changed, mode)?;
            }
            continue;
        };
        let c = &cur.config;
        if want.gapless != c.gapless {
            mode.change(name, path(".gapless"), || {
                Err(SeqgenError::Unsupported(format!("a tag is gapless or not from its creation (tag \"{name}\")")))
            })?;
            // on a worker the other fields still apply: its revokes above all
        }
        // a gapless tag has no segments: its step means nothing
        if ((want.step != c.step && !c.gapless) || (want.description.is_some() && want.description != c.description))
            && mode
                .change(name, path(".step"), || tags::alter(Some(name), Some(want.step), want.description.as_deref()))?
        {
            changed(format!("altered (step {})", want.step));
        }
        if let Some(s) = want.start_with.filter(|s| *s > cur.max_id.saturating_add(1)) {
            if mode.change(name, path(".start_with"), || tags::restart(name, s, false))? {
                changed(format!("restarted at {s}"));
            }
        }
        apply_rest(name, want, Some(c), &path, &mut changed, mode)?;
    }
    Ok(done)
}

/// Grants, template, opaque and node bits of tag `name` (`cur`: as it is now; None when it
/// could not be read back).
fn apply_rest(
    name: &str,
    want: &TagConfig,
    cur: Option<&TagConfig>,
    path: &dyn Fn(&str) -> String,
    changed: &mut dyn FnMut(String),
    mode: &mut Mode,
) -> Result<()> {
    let cur_template = cur.and_then(|c| c.template.as_ref());
    match (&want.template, cur_template) {
        (Some(w), Some(c)) if (&w.text, &w.time_zone) == (&c.text, &c.time_zone) => {}
        (Some(w), _) => {
            if mode
                .change(name, path(".template"), || order::set_template(name, &w.text, &w.time_zone, w.allow_repeats))?
            {
                changed(format!("template {} in {}", w.text, w.time_zone));
            }
        }
        (None, Some(_)) => {
            mode.change(name, path(".template"), || {
                Err(SeqgenError::Unsupported("a template cannot be removed while its tag exists".into()))
            })?;
        }
        (None, None) => {}
    }
    let (is_opaque, bits) = cur.map_or((false, 0), |c| (c.opaque, c.node_bits));
    if want.opaque && !is_opaque && mode.change(name, path(".opaque"), || opaque::make_opaque(name))? {
        changed("made opaque".into());
    }
    if !want.opaque && is_opaque {
        mode.change(name, path(".opaque"), || Err(SeqgenError::Unsupported("a tag is opaque for good".into())))?;
    }
    // A worker's copy of a tag the coordinator has without node bits (made there before
    // Citus) has bits of its own from its creation here: it keeps them (the coordinator
    // refuses to draw such a tag until it gets node bits, which are Citus's 8 there too).
    let keep_own = mode.on_worker() && want.node_bits == 0 && bits == crate::plumbing::node::CITUS_NODE_BITS as u32;
    if want.node_bits != bits
        && !keep_own
        && mode.change(name, path(".node_bits"), || tags::set_node_bits(name, want.node_bits as i32))?
    {
        changed(format!("node bits {}", want.node_bits));
    }
    // each on its own on a worker: a refused grant (a role this node lacks) holds back no revoke
    let mode_on_worker = mode.on_worker();
    let have: BTreeSet<&String> = cur.map(|c| c.grants.iter().collect()).unwrap_or_default();
    let wanted: BTreeSet<&String> = want.grants.iter().collect();
    // a worker keeps a refusal per role (its field names the role)
    let grants = |role: &str| if mode_on_worker { format!("{}[{role}]", path(".grants")) } else { path(".grants") };
    for role in wanted.difference(&have) {
        if mode.change(name, grants(role), || tags::set_grant(name, role, true))? {
            changed(format!("granted to {role}"));
        }
    }
    for role in have.difference(&wanted) {
        if mode.change(name, grants(role), || tags::set_grant(name, role, false))? {
            changed(format!("revoked from {role}"));
        }
    }
    Ok(())
}
