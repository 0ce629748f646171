//! Order-number templates: parser, periods, renderer, pattern, counter blocks.
//!
//! ```text
//! SN{yyyy}{MM}{dd}{seq:8}{check}  ->  SN20261122000000427
//! ```
//!
//! | field | renders |
//! | --- | --- |
//! | literal text | itself; `{{` and `}}` are literal braces |
//! | `{yyyy}` `{yy}` `{MM}` `{dd}` `{HH}` `{mm}` `{ss}` | the period's date and time in the template's time zone |
//! | `{seq:N}` | the counter, zero-padded to N digits (1..18); exactly one per template |
//! | `{seq:N:b32}` | the counter in N characters of Crockford base32 (1..12), upper case, zero-padded |
//! | `{seq:N:opaque}`, `{seq:N:b32:opaque}` | the counter through the tag's keyed permutation of the period's values |
//! | `{node}`, `{node:N}` | the server's node id (`{node:N}` zero-padded to N digits) |
//! | `{tag}` | the tag's name |
//! | `{key}` | the key of `seqgen_order_no(biz_tag, key)` (at most once; its counter is the key's own) |
//! | `{check}` | a Luhn check digit over every digit before it; only digit-free text may follow |
//!
//! The counter restarts at 1 in every period; the period is the finest date field in the
//! template (daily for `{yyyy}{MM}{dd}`, every second with `{ss}`), and never restarts for a
//! template without date fields. Periods are identified by a key: the period's start as local
//! date-time (in the template's time zone) counted in seconds since 1970-01-01, so keys of
//! later periods are larger, whatever the unit.

use std::fmt::Write as _;

pub use chrono_tz::Tz;

use crate::opaque::{Domain, Key};

pub const MAX_TEMPLATE_CHARS: usize = 200;
pub const MAX_SEQ_WIDTH: u8 = 18;
/// `{seq:N:b32}`: 32^12 - 1 is the largest such capacity that fits a bigint.
pub const MAX_B32_WIDTH: u8 = 12;
/// Crockford's base32 alphabet in ASCII order (no I, L, O, U), as `{seq:N:b32}` renders it.
pub const BASE32: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
pub const MAX_NODE_WIDTH: u8 = 10;

/// The unit of a period, coarsest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Unit {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
}

impl Unit {
    pub const ALL: [Unit; 6] = [Unit::Year, Unit::Month, Unit::Day, Unit::Hour, Unit::Minute, Unit::Second];

    /// The name used in the catalog and in messages.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Year => "year",
            Unit::Month => "month",
            Unit::Day => "day",
            Unit::Hour => "hour",
            Unit::Minute => "minute",
            Unit::Second => "second",
        }
    }
}

/// The catalog name of a template's period unit (`none` for a counter that never restarts):
/// order-number counters are kept per tag and unit.
pub fn unit_name(unit: Option<Unit>) -> &'static str {
    unit.map_or("none", Unit::name)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Literal(String),
    Year4,
    Year2,
    Month,
    Day,
    Hour,
    Minute,
    Second,
    /// The counter; `opaque`: a keyed permutation of the period's N-character values;
    /// `base32`: in Crockford base32 (`{seq:N:b32}`) instead of decimal digits.
    Seq {
        width: u8,
        opaque: bool,
        base32: bool,
    },
    Node {
        width: Option<u8>,
    },
    Tag,
    /// The key of a counter per key (`seqgen_order_no(biz_tag, key)`).
    Key,
    Check,
}

impl Part {
    fn unit(&self) -> Option<Unit> {
        Some(match self {
            Part::Year4 | Part::Year2 => Unit::Year,
            Part::Month => Unit::Month,
            Part::Day => Unit::Day,
            Part::Hour => Unit::Hour,
            Part::Minute => Unit::Minute,
            Part::Second => Unit::Second,
            _ => return None,
        })
    }
}

/// A parsed, valid template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
    seq_width: u8,
    seq_base32: bool,
    unit: Option<Unit>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid template at position {pos}: {problem}")]
pub struct TemplateError {
    /// 1-based character position.
    pub pos: usize,
    pub problem: String,
}

fn err<T>(pos: usize, problem: impl Into<String>) -> Result<T, TemplateError> {
    Err(TemplateError { pos, problem: problem.into() })
}

const KNOWN: &str = "yyyy yy MM dd HH mm ss seq:N seq:N:opaque seq:N:b32 seq:N:b32:opaque node node:N tag key check";

/// Parse a template. Never panics, whatever the input.
pub fn parse(text: &str) -> Result<Template, TemplateError> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() > MAX_TEMPLATE_CHARS {
        return err(MAX_TEMPLATE_CHARS + 1, format!("a template is at most {MAX_TEMPLATE_CHARS} characters"));
    }
    let mut parts: Vec<Part> = vec![];
    let mut literal = String::new();
    let mut seq: Option<(usize, u8, bool)> = None;
    let mut check_at: Option<usize> = None;
    let mut key_at: Option<usize> = None;
    let mut i = 0;
    while i < chars.len() {
        let pos = i + 1;
        match chars[i] {
            '{' if chars.get(i + 1) == Some(&'{') => {
                literal.push('{');
                i += 2;
            }
            '}' if chars.get(i + 1) == Some(&'}') => {
                literal.push('}');
                i += 2;
            }
            '}' => return err(pos, "unmatched '}' (write '}}' for a literal brace)"),
            '{' => {
                let Some(len) = chars[i + 1..].iter().position(|&c| c == '}') else {
                    return err(pos, "unclosed '{' (write '{{' for a literal brace)");
                };
                let inner: String = chars[i + 1..i + 1 + len].iter().collect();
                if inner.contains('{') {
                    return err(pos, "unclosed '{' (write '{{' for a literal brace)");
                }
                let part = field(&inner, pos)?;
                if let Part::Seq { width, base32, .. } = part {
                    if seq.is_some() {
                        return err(pos, "a second {seq}: a template has exactly one counter");
                    }
                    seq = Some((pos, width, base32));
                }
                if part == Part::Key {
                    if key_at.is_some() {
                        return err(pos, "a second {key}");
                    }
                    key_at = Some(pos);
                }
                if part == Part::Check {
                    if check_at.is_some() {
                        return err(pos, "a second {check}");
                    }
                    check_at = Some(pos);
                } else if let Some(c) = check_at {
                    if !matches!(part, Part::Literal(_)) {
                        return err(pos, format!("{{{inner}}} after the {{check}} at position {c}: the check digit must follow every digit"));
                    }
                }
                if !literal.is_empty() {
                    parts.push(Part::Literal(std::mem::take(&mut literal)));
                }
                parts.push(part);
                i += len + 2;
            }
            c => {
                if let (Some(cpos), true) = (check_at, c.is_ascii_digit()) {
                    return err(pos, format!("digit '{c}' after the {{check}} at position {cpos}: the check digit must follow every digit"));
                }
                literal.push(c);
                i += 1;
            }
        }
    }
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    let Some((seq_at, seq_width, seq_base32)) = seq else {
        return err(chars.len() + 1, "no {seq:N}: a template needs exactly one counter, e.g. {seq:6}");
    };
    if let (Some(cpos), true) = (check_at, seq_base32) {
        // Luhn sums decimal digits: the letters of a base32 counter would go unguarded
        return err(cpos, format!("{{check}} is a Luhn digit over decimal digits and cannot guard the base32 counter at position {seq_at}"));
    }
    if let Some(kpos) = key_at {
        // a key has any length: every other field must have a fixed one, so that the length
        // of a number tells where its key ends (numbers of two keys never meet)
        if parts.contains(&Part::Node { width: None }) {
            return err(kpos, "with {key}, the node id needs a fixed width: write {node:N}");
        }
        if parts.iter().any(|p| matches!(p, Part::Seq { opaque: true, .. })) {
            return err(kpos, "{key} and {seq:N:opaque} together are not supported yet");
        }
    }
    let unit = parts.iter().filter_map(Part::unit).max();
    Ok(Template { parts, seq_width, seq_base32, unit })
}

/// The width N of `field` (`{seq:N}`, as messages show it).
fn width(arg: &str, pos: usize, field: &str, max: u8) -> Result<u8, TemplateError> {
    match arg.parse::<u8>() {
        Ok(w) if (1..=max).contains(&w) => Ok(w),
        _ => err(pos, format!("the width of {field} must be a number from 1 to {max}, got '{arg}'")),
    }
}

fn field(inner: &str, pos: usize) -> Result<Part, TemplateError> {
    let (name, arg) = match inner.split_once(':') {
        Some((n, a)) => (n, Some(a)),
        None => (inner, None),
    };
    let part = match (name, arg) {
        ("seq", Some(a)) => {
            let (w, options) = match a.split_once(':') {
                Some((w, options)) => (w, Some(options)),
                None => (a, None),
            };
            let (mut opaque, mut base32) = (false, false);
            // every piece after a colon is an option (an empty one too: `{seq:4:}` is refused)
            for option in options.into_iter().flat_map(|o| o.split(':')) {
                let seen = match option {
                    "opaque" => std::mem::replace(&mut opaque, true),
                    "b32" => std::mem::replace(&mut base32, true),
                    other => {
                        return err(pos, format!("unknown {{seq}} option '{other}' (the options are opaque and b32)"))
                    }
                };
                if seen {
                    return err(pos, format!("{{seq}} option '{option}' given twice"));
                }
            }
            let (field, max) = if base32 { ("{seq:N:b32}", MAX_B32_WIDTH) } else { ("{seq:N}", MAX_SEQ_WIDTH) };
            Part::Seq { width: width(w, pos, field, max)?, opaque, base32 }
        }
        ("seq", None) => return err(pos, "{seq} needs a width, e.g. {seq:6}"),
        ("node", None) => Part::Node { width: None },
        ("node", Some(a)) => Part::Node { width: Some(width(a, pos, "{node:N}", MAX_NODE_WIDTH)?) },
        ("yyyy", None) => Part::Year4,
        ("yy", None) => Part::Year2,
        ("MM", None) => Part::Month,
        ("dd", None) => Part::Day,
        ("HH", None) => Part::Hour,
        ("mm", None) => Part::Minute,
        ("ss", None) => Part::Second,
        ("tag", None) => Part::Tag,
        ("key", None) => Part::Key,
        ("check", None) => Part::Check,
        (n @ ("yyyy" | "yy" | "MM" | "dd" | "HH" | "mm" | "ss" | "tag" | "key" | "check"), Some(_)) => {
            return err(pos, format!("{{{n}}} takes no argument"))
        }
        _ => return err(pos, format!("unknown field {{{inner}}}; known fields: {KNOWN}")),
    };
    Ok(part)
}

/// Parse an IANA time-zone name (`UTC`, `Asia/Shanghai`, ...).
pub fn parse_time_zone(name: &str) -> Result<Tz, String> {
    name.parse::<Tz>()
        .map_err(|_| format!("unknown time zone \"{name}\" (use an IANA name such as UTC or Asia/Shanghai)"))
}

mod block;
mod period;
mod prepared;
mod render;
#[cfg(test)]
mod tests;

pub use block::{counter_block, CounterBlock, Overflow};
pub use period::{local_of_key, next_key, truncate_key, Span};
pub use prepared::{Piece, Prepared};
