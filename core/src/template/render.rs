//! What a template does with a period and a counter: render, read back, reveal, match.

use chrono::{DateTime, Datelike, LocalResult, NaiveDate, TimeZone, Timelike};

use super::period::{next_start, truncate};
use super::*;

impl Template {
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    pub fn seq_width(&self) -> u8 {
        self.seq_width
    }

    /// Is the counter written in base32 (`{seq:N:b32}`)?
    pub fn seq_base32(&self) -> bool {
        self.seq_base32
    }

    /// The counter's field as written (`{seq:6}`, `{seq:4:b32}`), for messages.
    pub fn seq_field(&self) -> String {
        let b32 = if self.seq_base32 { ":b32" } else { "" };
        let opaque = if self.is_opaque() { ":opaque" } else { "" };
        format!("{{seq:{}{b32}{opaque}}}", self.seq_width)
    }

    /// The largest counter value a period can hold (10^N - 1, or 32^N - 1 in base32).
    pub fn capacity(&self) -> i64 {
        self.radix().pow(self.seq_width as u32) as i64 - 1
    }

    fn radix(&self) -> u64 {
        if self.seq_base32 {
            32
        } else {
            10
        }
    }

    /// The counter values of a period, for `{seq:N:opaque}`: 1 to the capacity.
    fn seq_domain(&self) -> Option<Domain> {
        Domain::new(1, self.capacity() as u64)
    }

    /// The period unit: the finest date field; `None` for a template without date fields.
    pub fn unit(&self) -> Option<Unit> {
        self.unit
    }

    /// Does the rendered text tell every period apart? `None` when it does; otherwise the
    /// unit after which numbers repeat: the finest unit coarser than the period that has no
    /// field. `{dd}-{seq:4}` repeats every month, `{HH}{seq:4}` every day, `{MM}{dd}{seq:4}`
    /// every year. `{yy}` counts as the year (numbers repeat after a century).
    pub fn repeats_every(&self) -> Option<Unit> {
        let finest = self.unit?;
        let present: Vec<Unit> = self.parts.iter().filter_map(Part::unit).collect();
        Unit::ALL.iter().copied().filter(|u| *u <= finest && !present.contains(u)).max()
    }

    /// Is the counter rendered through the tag's keyed permutation (`{seq:N:opaque}`)?
    pub fn is_opaque(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Seq { opaque: true, .. }))
    }

    pub fn uses_tag(&self) -> bool {
        self.parts.contains(&Part::Tag)
    }

    /// Does the template render a key (`{key}`): is it a template of counters per key?
    pub fn has_key(&self) -> bool {
        self.parts.contains(&Part::Key)
    }

    /// Does the template render the node id (`{node}`, `{node:N}`)?
    pub fn has_node(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Node { .. }))
    }

    /// Can this server's node id be rendered by the template?
    pub fn check_node(&self, node: u32) -> Result<(), String> {
        for p in &self.parts {
            if let Part::Node { width: Some(w) } = p {
                if (node as u64) >= 10u64.pow(*w as u32) {
                    return Err(format!("node id {node} does not fit in {{node:{w}}}"));
                }
            }
        }
        Ok(())
    }

    /// The period containing the instant `utc_ms` (ms since the Unix epoch) in `tz`.
    pub fn locate(&self, tz: Tz, utc_ms: i64) -> Span {
        let Some(unit) = self.unit else {
            return Span { key: 0, start_ms: i64::MIN, end_ms: i64::MAX };
        };
        let Some(utc) = DateTime::from_timestamp_millis(utc_ms) else {
            return Span { key: 0, start_ms: utc_ms, end_ms: utc_ms + 1 };
        };
        let local = utc.with_timezone(&tz).naive_local();
        let start = truncate(local, unit);
        let key = start.and_utc().timestamp();
        // Conservative validity: from `start` mapped back to UTC (never after now) until the
        // next period's start mapped to UTC (or a second from now when it cannot be mapped,
        // e.g. inside a daylight-saving gap: the key is simply computed again).
        let start_ms = match tz.from_local_datetime(&start) {
            LocalResult::Single(t) | LocalResult::Ambiguous(_, t) => t.timestamp_millis().min(utc_ms),
            LocalResult::None => utc_ms,
        };
        let end_ms = next_start(start, unit)
            .and_then(|n| match tz.from_local_datetime(&n) {
                LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => Some(t.timestamp_millis()),
                LocalResult::None => None,
            })
            .filter(|&e| e > utc_ms)
            .unwrap_or(utc_ms + 1000);
        Span { key, start_ms, end_ms }
    }

    /// Can period `key` be rendered? `{yyyy}` has four digits: a period whose local year is
    /// outside 0..=9999 would render another year's text (12026 as 2026), so it is refused.
    pub fn renders_year(&self, key: i64) -> Result<(), String> {
        if !self.parts.contains(&Part::Year4) {
            return Ok(());
        }
        let year = local_of_key(key).year();
        if (0..=9999).contains(&year) {
            Ok(())
        } else {
            Err(format!("year {year} does not fit the four digits of {{yyyy}}"))
        }
    }

    /// Render everything but the counter and the check digit for period `key`, so that each
    /// number is a copy plus a few digits. `opaque_key` is needed for `{seq:N:opaque}`
    /// (without it the counter is rendered as is).
    pub fn prepare(&self, key: i64, node: u32, tag: &str, opaque_key: Option<Key>) -> Prepared {
        self.prepare_keyed(key, node, tag, "", opaque_key)
    }

    /// [`prepare`](Self::prepare) for the counter of key `key_text` (what `{key}` renders).
    pub fn prepare_keyed(&self, key: i64, node: u32, tag: &str, key_text: &str, opaque_key: Option<Key>) -> Prepared {
        let t = local_of_key(key);
        let mut pieces: Vec<Piece> = vec![];
        let mut text = String::new();
        for p in &self.parts {
            match p {
                Part::Literal(s) => text.push_str(s),
                Part::Year4 => write!(text, "{:04}", t.year().rem_euclid(10000)).unwrap(),
                Part::Year2 => write!(text, "{:02}", t.year().rem_euclid(100)).unwrap(),
                Part::Month => write!(text, "{:02}", t.month()).unwrap(),
                Part::Day => write!(text, "{:02}", t.day()).unwrap(),
                Part::Hour => write!(text, "{:02}", t.hour()).unwrap(),
                Part::Minute => write!(text, "{:02}", t.minute()).unwrap(),
                Part::Second => write!(text, "{:02}", t.second()).unwrap(),
                Part::Node { width: None } => write!(text, "{node}").unwrap(),
                Part::Node { width: Some(w) } => write!(text, "{:0w$}", node, w = *w as usize).unwrap(),
                Part::Tag => text.push_str(tag),
                Part::Key => text.push_str(key_text),
                Part::Seq { .. } | Part::Check => {
                    if !text.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut text)));
                    }
                    pieces.push(if *p == Part::Check { Piece::Check } else { Piece::Seq });
                }
            }
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        let permute = match (self.is_opaque(), opaque_key) {
            (true, Some(k)) => self.seq_domain().map(|d| (d, k)),
            _ => None,
        };
        Prepared::new(pieces, self.seq_width as usize, self.seq_base32, key, permute)
    }

    /// Render one number (the slow, self-contained way; [`Prepared`] is the fast one).
    pub fn render(&self, key: i64, seq: u64, node: u32, tag: &str) -> String {
        self.render_with_key(key, seq, node, tag, None)
    }

    /// [`render`](Self::render) with the key for `{seq:N:opaque}`.
    pub fn render_with_key(&self, key: i64, seq: u64, node: u32, tag: &str, opaque_key: Option<Key>) -> String {
        let mut out = Vec::new();
        self.prepare(key, node, tag, opaque_key).render_into(seq, &mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// [`render`](Self::render) for the counter of key `key_text`.
    pub fn render_keyed(&self, key: i64, seq: u64, node: u32, tag: &str, key_text: &str) -> String {
        let mut out = Vec::new();
        self.prepare_keyed(key, node, tag, key_text, None).render_into(seq, &mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// Take a rendered number apart: its period key and the counter as shown (the permuted
    /// value for `{seq:N:opaque}`). Needs every date field down to the period's unit, so the
    /// period can be rebuilt (`{yy}` is read as 20yy). `None` when `number` does not fit the
    /// template.
    pub fn parse_number(&self, number: &str, node: u32, tag: &str) -> Option<(i64, u64)> {
        let mut rest = number;
        let (mut y, mut mo, mut d, mut h, mut mi, mut s) = (None, None, None, None, None, None);
        let mut seq = None;
        let take = |rest: &mut &str, n: usize| -> Option<u32> {
            let head = rest.get(..n)?;
            if !head.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            *rest = &rest[n..];
            head.parse().ok()
        };
        for p in &self.parts {
            match p {
                Part::Literal(l) => rest = rest.strip_prefix(l.as_str())?,
                Part::Year4 => y = Some(take(&mut rest, 4)? as i32),
                Part::Year2 => y = Some(2000 + take(&mut rest, 2)? as i32),
                Part::Month => mo = Some(take(&mut rest, 2)?),
                Part::Day => d = Some(take(&mut rest, 2)?),
                Part::Hour => h = Some(take(&mut rest, 2)?),
                Part::Minute => mi = Some(take(&mut rest, 2)?),
                Part::Second => s = Some(take(&mut rest, 2)?),
                Part::Seq { width, base32, .. } => {
                    let head = rest.get(..*width as usize)?;
                    seq = Some(if *base32 { base32_value(head)? } else { decimal_value(head)? });
                    rest = &rest[*width as usize..];
                }
                Part::Node { width } => {
                    let shown = match width {
                        Some(w) => format!("{:0w$}", node, w = *w as usize),
                        None => node.to_string(),
                    };
                    rest = rest.strip_prefix(shown.as_str())?;
                }
                Part::Tag => rest = rest.strip_prefix(tag)?,
                // a key's numbers are not taken apart (its length is not known here)
                Part::Key => return None,
                Part::Check => {
                    take(&mut rest, 1)?;
                }
            }
        }
        if !rest.is_empty() {
            return None;
        }
        let key = match self.unit {
            None => 0,
            Some(unit) => {
                let need = |u: Unit, v: Option<u32>| if unit >= u { v } else { Some(0) };
                let date = NaiveDate::from_ymd_opt(
                    y?,
                    if unit >= Unit::Month { mo? } else { 1 },
                    if unit >= Unit::Day { d? } else { 1 },
                )?;
                let t = date.and_hms_opt(need(Unit::Hour, h)?, need(Unit::Minute, mi)?, need(Unit::Second, s)?)?;
                t.and_utc().timestamp()
            }
        };
        Some((key, seq?))
    }

    /// The counter value behind a rendered number (undoing `{seq:N:opaque}` with `key`).
    pub fn reveal(&self, number: &str, node: u32, tag: &str, opaque_key: Option<Key>) -> Option<(i64, u64)> {
        let (period, shown) = self.parse_number(number, node, tag)?;
        if !self.is_opaque() {
            return Some((period, shown));
        }
        let d = self.seq_domain()?;
        if !d.contains(shown) {
            return None;
        }
        Some((period, d.unpermute(&opaque_key?, period as u64, shown)))
    }

    /// A POSIX/Rust regular expression every number of this template matches.
    pub fn pattern(&self, tag: Option<&str>) -> String {
        let mut re = String::from("^");
        for p in &self.parts {
            match p {
                Part::Literal(s) => re.push_str(&escape(s)),
                Part::Year4 => re.push_str("[0-9]{4}"),
                Part::Year2 => re.push_str("[0-9]{2}"),
                Part::Month => re.push_str("(0[1-9]|1[0-2])"),
                Part::Day => re.push_str("(0[1-9]|[12][0-9]|3[01])"),
                Part::Hour => re.push_str("([01][0-9]|2[0-3])"),
                Part::Minute | Part::Second => re.push_str("[0-5][0-9]"),
                Part::Seq { width, base32: false, .. } => write!(re, "[0-9]{{{width}}}").unwrap(),
                Part::Seq { width, base32: true, .. } => write!(re, "[0-9A-HJKMNP-TV-Z]{{{width}}}").unwrap(),
                Part::Node { width: None } => re.push_str("[0-9]+"),
                Part::Node { width: Some(w) } => write!(re, "[0-9]{{{w}}}").unwrap(),
                Part::Tag => re.push_str(&tag.map(escape).unwrap_or_else(|| ".+".into())),
                Part::Key => re.push_str(".+"),
                Part::Check => re.push_str("[0-9]"),
            }
        }
        re.push('$');
        re
    }
}

/// The value of a counter's decimal digits (all digits, or `None`).
fn decimal_value(head: &str) -> Option<u64> {
    if !head.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    head.parse::<u64>().ok()
}

/// The value of a counter's base32 characters, as rendered (upper case, or `None`).
fn base32_value(head: &str) -> Option<u64> {
    head.bytes().try_fold(0u64, |v, b| {
        let d = BASE32.iter().position(|&c| c == b)?;
        Some(v.checked_mul(32)? + d as u64)
    })
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.^$|?*+()[]{}-/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
