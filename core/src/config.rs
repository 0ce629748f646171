//! Configuration as code: the definition of every tag as a versioned JSON document, so a
//! setup lives in a migration file and moves from staging to production.
//!
//! ```json
//! {"version": 1,
//!  "tags": {"order": {"step": 1000, "start_with": 100000, "description": "shop orders",
//!                     "template": {"text": "SN{yyyy}{MM}{dd}{seq:8}{check}",
//!                                  "time_zone": "Asia/Shanghai"},
//!                     "opaque": false, "node_bits": 0, "grants": ["billing_app", "public"]}}}
//! ```
//!
//! What a document means when it is applied (the shell carries it out in one transaction):
//! missing tags are created; for existing ones, `step`, `description`, the template and the
//! grants are made to match; `start_with` raises the numbering when it is above what the tag
//! reserved (it never lowers it); `opaque` and `node_bits` can be set but not taken back; tags
//! the document does not name are kept unless dropping is asked for. The opaque key stays out
//! of documents (a Citus coordinator hands its keys to its workers beside the document).
//! Bad documents are refused with the JSON path of the problem.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::template;

/// The document version this library writes and reads.
pub const VERSION: u32 = 1;

/// The longest tag name in bytes.
const NAME_MAX: usize = 63;
/// The most node bits a tag may have.
const MAX_NODE_BITS: u32 = 16;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub version: u32,
    #[serde(default)]
    pub tags: BTreeMap<String, TagConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TagConfig {
    #[serde(default = "default_step")]
    pub step: i32,
    /// The first value a new tag issues; for an existing tag, a floor to raise it to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_with: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplateConfig>,
    #[serde(default)]
    pub opaque: bool,
    #[serde(default)]
    pub node_bits: u32,
    /// Roles that may draw besides the owner (`"public"`: every role).
    #[serde(default)]
    pub grants: Vec<String>,
    /// A gapless tag (`seqgen_create_gapless`): set at creation, for good.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gapless: bool,
}

fn default_step() -> i32 {
    1000
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateConfig {
    pub text: String,
    #[serde(default = "default_zone")]
    pub time_zone: String,
    /// Accept a template whose numbers repeat (see `seqgen_set_template`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_repeats: bool,
}

fn default_zone() -> String {
    "UTC".into()
}

/// A document that cannot be applied: where (a JSON path such as `$.tags.order.step`) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct ConfigError {
    pub path: String,
    pub problem: String,
}

fn bad(path: String, problem: impl Into<String>) -> ConfigError {
    ConfigError { path, problem: problem.into() }
}

/// `$.a.b` from serde_path_to_error's `a.b` (`.` for the root).
fn json_path(p: &serde_path_to_error::Path) -> String {
    let s = p.to_string();
    if s == "." {
        "$".into()
    } else {
        format!("$.{s}")
    }
}

/// Parse and check a document.
pub fn parse(value: &serde_json::Value) -> Result<Config, ConfigError> {
    objects_where_expected(value)?;
    let config: Config = serde_path_to_error::deserialize(value)
        .map_err(|e| bad(json_path(e.path()), in_json_terms(&e.inner().to_string())))?;
    config.check()?;
    Ok(config)
}

/// The document, each tag's definition and each template are JSON objects (serde would also
/// take an array of the fields in order, and answer "expected struct ...").
fn objects_where_expected(value: &serde_json::Value) -> Result<(), ConfigError> {
    if !value.is_object() {
        return Err(bad("$".into(), "the document must be a JSON object: {\"version\": 1, \"tags\": {...}}"));
    }
    let Some(tags) = value.get("tags").filter(|t| !t.is_null()) else { return Ok(()) };
    let Some(tags) = tags.as_object() else {
        return Err(bad("$.tags".into(), "must be a JSON object of tag definitions by tag name"));
    };
    for (name, tag) in tags {
        let at = format!("$.tags{}", quote_key(name));
        if !tag.is_object() {
            return Err(bad(at, "a tag's definition must be a JSON object"));
        }
        if tag.get("template").is_some_and(|t| !t.is_null() && !t.is_object()) {
            return Err(bad(format!("{at}.template"), "must be a JSON object: {\"text\": ..., \"time_zone\": ...}"));
        }
    }
    Ok(())
}

/// serde's words for types in JSON's: "expected i32" is "expected an integer from ... to ...".
fn in_json_terms(message: &str) -> String {
    [
        ("expected i32", "expected an integer from -2147483648 to 2147483647"),
        ("expected u32", "expected an integer from 0 to 4294967295"),
        ("expected i64", "expected an integer from -9223372036854775808 to 9223372036854775807"),
        ("expected a map", "expected a JSON object"),
        ("expected a sequence", "expected a JSON array"),
        ("expected a borrowed string", "expected a string"),
    ]
    .iter()
    .fold(message.to_string(), |m, (serde, json)| m.replace(serde, json))
}

impl Config {
    /// Every value within its range, every template and time zone valid.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.version != VERSION {
            return Err(bad(
                "$.version".into(),
                format!("version {} is not supported (this pg_seqgen reads version {VERSION})", self.version),
            ));
        }
        for (name, t) in &self.tags {
            let at = |field: &str| format!("$.tags{}{field}", quote_key(name));
            if name.is_empty() || name.len() > NAME_MAX || name.chars().any(char::is_control) {
                return Err(bad(at(""), format!("a tag name is 1 to {NAME_MAX} bytes without control characters")));
            }
            if t.step <= 0 {
                return Err(bad(at(".step"), format!("step must be positive, got {}", t.step)));
            }
            if let Some(s) = t.start_with {
                if s < 1 {
                    return Err(bad(at(".start_with"), format!("start_with must be at least 1, got {s}")));
                }
            }
            if t.node_bits > MAX_NODE_BITS {
                return Err(bad(at(".node_bits"), format!("node_bits is 0 to {MAX_NODE_BITS}, got {}", t.node_bits)));
            }
            if let Some(tpl) = &t.template {
                let parsed = template::parse(&tpl.text).map_err(|e| bad(at(".template.text"), e.to_string()))?;
                template::parse_time_zone(&tpl.time_zone).map_err(|e| bad(at(".template.time_zone"), e))?;
                if let (Some(unit), false) = (parsed.repeats_every(), tpl.allow_repeats) {
                    return Err(bad(
                        at(".template.text"),
                        format!("its numbers repeat every {} (set allow_repeats to accept that)", unit.name()),
                    ));
                }
            }
            for (i, g) in t.grants.iter().enumerate() {
                if g.is_empty() {
                    return Err(bad(at(&format!(".grants[{i}]")), "a role name must not be empty"));
                }
            }
        }
        Ok(())
    }
}

/// A key as a JSON path shows it: `.name` when it is an identifier, `["a b"]` otherwise.
/// The JSON path of a field of tag `name`: `$.tags.order.step`, `$.tags["a-b"].step`.
pub fn tag_path(name: &str, field: &str) -> String {
    format!("$.tags{}{field}", quote_key(name))
}

fn quote_key(name: &str) -> String {
    if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        format!(".{name}")
    } else {
        format!("[{}]", serde_json::Value::String(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn a_full_document_round_trips() {
        let doc = json!({"version": 1, "tags": {
            "order": {"step": 500, "start_with": 100, "description": "shop orders",
                      "template": {"text": "SN{yyyy}{MM}{dd}{seq:8}{check}", "time_zone": "Asia/Shanghai"},
                      "grants": ["app", "public"]},
            "ids": {"opaque": true},
            "nodes": {"node_bits": 2}
        }});
        let c = parse(&doc).unwrap();
        assert_eq!(c.tags["order"].step, 500);
        assert_eq!(c.tags["ids"].step, 1000, "the default step");
        assert_eq!(c.tags["nodes"].template, None);
        assert_eq!(parse(&serde_json::to_value(&c).unwrap()).unwrap(), c);
    }

    #[test]
    fn bad_documents_name_the_path() {
        let cases = [
            (json!({"tags": {}}), "$", "missing field `version`"),
            (json!({"version": 2}), "$.version", "not supported"),
            (json!({"version": 1, "tagz": {}}), "$.tagz", "unknown field `tagz`"),
            (json!({"version": 1, "tags": {"a": {"step": 0}}}), "$.tags.a.step", "positive"),
            (json!({"version": 1, "tags": {"a": {"step": "ten"}}}), "$.tags.a.step", "invalid type"),
            (json!({"version": 1, "tags": {"a": {"stepp": 1}}}), "$.tags.a.stepp", "unknown field `stepp`"),
            (json!({"version": 1, "tags": {"a": {"start_with": 0}}}), "$.tags.a.start_with", "at least 1"),
            (json!({"version": 1, "tags": {"a": {"node_bits": 17}}}), "$.tags.a.node_bits", "0 to 16"),
            (
                json!({"version": 1, "tags": {"a": {"template": {"text": "X{seq:0}"}}}}),
                "$.tags.a.template.text",
                "position 2",
            ),
            (
                json!({"version": 1, "tags": {"a": {"template": {"text": "{dd}{seq:2}"}}}}),
                "$.tags.a.template.text",
                "repeat every month",
            ),
            (
                json!({"version": 1, "tags": {"a": {"template": {"text": "{seq:2}", "time_zone": "Mars/Base"}}}}),
                "$.tags.a.template.time_zone",
                "unknown time zone",
            ),
            (json!({"version": 1, "tags": {"a b": {"grants": [""]}}}), "$.tags[\"a b\"].grants[0]", "empty"),
            (json!({"version": 1, "tags": {"": {}}}), "$.tags[\"\"]", "1 to 63 bytes"),
            // in JSON's words, not serde's (issue 31, item 6: "expected i32", "expected struct")
            (json!({"version": 1, "tags": {"a": {"step": "x"}}}), "$.tags.a.step", "expected an integer from"),
            (json!({"version": 1, "tags": {"a": {"step": 99999999999_i64}}}), "$.tags.a.step", "an integer from"),
            (json!({"version": 1, "tags": {"a": {"grants": "bob"}}}), "$.tags.a.grants", "expected a JSON array"),
            (json!({"version": 1, "tags": []}), "$.tags", "JSON object of tag definitions"),
            (json!([1, {}]), "$", "must be a JSON object"),
            (json!({"version": 1, "tags": {"a": [1000]}}), "$.tags.a", "must be a JSON object"),
            (json!({"version": 1, "tags": {"a": {"template": "X{seq:3}"}}}), "$.tags.a.template", "JSON object"),
            (json!({"version": "1"}), "$.version", "expected an integer from 0"),
        ];
        for (doc, path, problem) in cases {
            let e = parse(&doc).expect_err(&doc.to_string());
            assert_eq!(e.path, path, "{doc}: {e}");
            assert!(e.problem.contains(problem), "{doc}: {e}");
            for serde_word in ["i32", "u32", "i64", "struct", "a map", "a sequence"] {
                assert!(!e.problem.contains(serde_word), "{doc}: serde's words: {e}");
            }
        }
    }

    proptest! {
        /// Whatever JSON comes in, parsing answers (a config or an error with a path); a config
        /// written out reads back the same.
        #[test]
        fn parsing_never_panics_and_round_trips(
            step in -5i32..5000, start in proptest::option::of(-3i64..1000), bits in 0u32..20,
            opaque in any::<bool>(), name in "[a-z .]{0,8}", grants in proptest::collection::vec("[a-z]{0,4}", 0..3),
        ) {
            let doc = json!({"version": 1, "tags": {name: {"step": step, "start_with": start, "node_bits": bits,
                             "opaque": opaque, "grants": grants}}});
            if let Ok(c) = parse(&doc) {
                prop_assert_eq!(parse(&serde_json::to_value(&c).unwrap()).unwrap(), c);
            }
        }
    }
}
