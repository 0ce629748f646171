//! Can two templates render the same text? Templates are fixed-width fields and literals, so
//! for one tag and node id every text a template renders has the same length, and each
//! position holds either one fixed character or a digit from a known set: its *shape*.
//! Two templates whose shapes differ in length, or at some position have no character in
//! common, can never render the same text. Otherwise they may, and whether a change from one
//! to the other is safe depends on their date fields:
//!
//! * when the new template renders every date field of the old one at the same position, and
//!   the old one tells its periods apart, a text of the new template for a period (of the old
//!   template's unit) after the old template's last one differs from every text of the old
//!   template in the digits of that date: the change is safe from the next period on;
//! * otherwise they may meet in any period, and the change is refused.
//!
//! The shapes over-approximate the texts (a check digit or a day of 39 is in the shape but
//! never rendered), so "apart" is always true and "may meet" is sometimes cautious.
//!
//! The node id is any digits: a template may have rendered other node ids before (a server
//! whose `seqgen.node_id` changed, a dump restored on another node), and will render others
//! later. `{node}` without a width is as wide as the node id is (1 to 7 digits): the two
//! templates are compared at every width.
//!
//! A template with `{key}` renders a text of any length: a fixed head, the key (1 to 128
//! bytes of any characters), a fixed tail. Two templates may meet when the lengths allow it,
//! the heads agree as far as both reach and the tails agree as far back as both reach (a key
//! can be anything in between). With a key the date fields have no fixed place, so such a
//! change is either apart or refused.

use chrono::{Datelike, Timelike};

use crate::template::{local_of_key, Part, Template, Unit, BASE32};

/// One position of a shape: a fixed character, a set of digits (bit d set: digit d), or any
/// character of Crockford's base32 (a `{seq:N:b32}` counter: the ten digits and 22 capitals).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    Char(char),
    Digits(u16),
    Base32,
}

fn is_base32(c: char) -> bool {
    c.is_ascii() && BASE32.contains(&(c as u8))
}

const ANY: u16 = 0x3ff;

/// The digits `lo..=hi`.
const fn span(lo: u32, hi: u32) -> u16 {
    (((1u32 << (hi + 1)) - 1) & !((1u32 << lo) - 1)) as u16
}

impl Cell {
    fn meets(self, other: Cell) -> bool {
        match (self, other) {
            (Cell::Char(a), Cell::Char(b)) => a == b,
            (Cell::Char(c), Cell::Digits(d)) | (Cell::Digits(d), Cell::Char(c)) => {
                c.is_ascii_digit() && d & (1 << (c as u32 - '0' as u32)) != 0
            }
            (Cell::Digits(a), Cell::Digits(b)) => a & b != 0,
            (Cell::Char(c), Cell::Base32) | (Cell::Base32, Cell::Char(c)) => is_base32(c),
            (Cell::Digits(d), Cell::Base32) | (Cell::Base32, Cell::Digits(d)) => d != 0,
            (Cell::Base32, Cell::Base32) => true,
        }
    }

    /// A character both cells allow (for messages), if any.
    fn common(self, other: Cell) -> Option<char> {
        match (self, other) {
            (Cell::Char(a), Cell::Char(b)) => (a == b).then_some(a),
            (Cell::Char(c), d @ (Cell::Digits(_) | Cell::Base32))
            | (d @ (Cell::Digits(_) | Cell::Base32), Cell::Char(c)) => d.meets(Cell::Char(c)).then_some(c),
            (Cell::Digits(a), Cell::Digits(b)) => {
                let both = a & b;
                (both != 0).then(|| char::from(b'0' + both.trailing_zeros() as u8))
            }
            (Cell::Digits(d), Cell::Base32) | (Cell::Base32, Cell::Digits(d)) => {
                Cell::Digits(d).common(Cell::Digits(ANY))
            }
            (Cell::Base32, Cell::Base32) => Some('0'),
        }
    }
}

/// Which date a date field renders.
fn date_kind(p: &Part) -> Option<u8> {
    Some(match p {
        Part::Year4 => 0,
        Part::Year2 => 1,
        Part::Month => 2,
        Part::Day => 3,
        Part::Hour => 4,
        Part::Minute => 5,
        Part::Second => 6,
        _ => return None,
    })
}

/// The shape of every text `t` renders for tag `tag` on any node whose id has `node_digits`
/// digits (for `{node}` without a width), and where its date fields stand (character offset,
/// field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// Every position but the key's.
    pub cells: Vec<Cell>,
    dates: Vec<(usize, u8)>,
    /// Where the key stands (the cells before it are the head, the others the tail).
    key_at: Option<usize>,
}

/// The longest key, in characters (a key is at most 128 bytes).
const KEY_MAX_CHARS: usize = 128;

pub fn shape(t: &Template, tag: &str, node_digits: u8) -> Shape {
    let mut cells = vec![];
    let mut dates = vec![];
    let mut key_at = None;
    let chars = |cells: &mut Vec<Cell>, s: &str| cells.extend(s.chars().map(Cell::Char));
    for p in t.parts() {
        if let Some(kind) = date_kind(p) {
            dates.push((cells.len(), kind));
        }
        match p {
            Part::Literal(s) => chars(&mut cells, s),
            Part::Tag => chars(&mut cells, tag),
            Part::Key => key_at = Some(cells.len()),
            Part::Node { width: None } => cells.extend(std::iter::repeat_n(Cell::Digits(ANY), node_digits as usize)),
            Part::Node { width: Some(w) } => cells.extend(std::iter::repeat_n(Cell::Digits(ANY), *w as usize)),
            Part::Year4 => cells.extend([Cell::Digits(ANY); 4]),
            Part::Year2 => cells.extend([Cell::Digits(ANY); 2]),
            Part::Month => cells.extend([Cell::Digits(span(0, 1)), Cell::Digits(ANY)]),
            Part::Day => cells.extend([Cell::Digits(span(0, 3)), Cell::Digits(ANY)]),
            Part::Hour => cells.extend([Cell::Digits(span(0, 2)), Cell::Digits(ANY)]),
            Part::Minute | Part::Second => cells.extend([Cell::Digits(span(0, 5)), Cell::Digits(ANY)]),
            Part::Seq { width, base32: false, .. } => {
                cells.extend(std::iter::repeat_n(Cell::Digits(ANY), *width as usize))
            }
            Part::Seq { width, base32: true, .. } => cells.extend(std::iter::repeat_n(Cell::Base32, *width as usize)),
            Part::Check => cells.push(Cell::Digits(ANY)),
        }
    }
    Shape { cells, dates, key_at }
}

fn all_meet(a: &[Cell], b: &[Cell]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.meets(*y))
}

impl Shape {
    /// May a text of this shape equal a text of `other`?
    pub fn meets(&self, other: &Shape) -> bool {
        let (a, b) = (&self.cells, &other.cells);
        match (self.key_at, other.key_at) {
            (None, None) => a.len() == b.len() && all_meet(a, b),
            (Some(_), None) => other.meets(self),
            // `other` has a key: its text is head + key + tail; ours has exactly len(a) characters
            (None, Some(k)) => {
                let (head, tail) = b.split_at(k);
                let fixed = head.len() + tail.len();
                a.len() > fixed
                    && a.len() <= fixed + KEY_MAX_CHARS
                    && all_meet(&a[..head.len()], head)
                    && all_meet(&a[a.len() - tail.len()..], tail)
            }
            // both have keys: heads agree over the shorter, tails over the shorter (the
            // keys take up the rest), and the fixed lengths are not too far apart
            (Some(ka), Some(kb)) => {
                let (ha, ta) = a.split_at(ka);
                let (hb, tb) = b.split_at(kb);
                let tails = |x: &[Cell], y: &[Cell]| {
                    let n = x.len().min(y.len());
                    all_meet(&x[x.len() - n..], &y[y.len() - n..])
                };
                a.len().abs_diff(b.len()) < KEY_MAX_CHARS && all_meet(ha, hb) && tails(ta, tb)
            }
        }
    }

    /// A text both shapes allow, to show in messages (`None` when they never meet, or when
    /// one of them has a key).
    pub fn example(&self, other: &Shape) -> Option<String> {
        if self.cells.len() != other.cells.len() || self.key_at.is_some() || other.key_at.is_some() {
            return None;
        }
        self.cells.iter().zip(&other.cells).map(|(a, b)| a.common(*b)).collect()
    }
}

/// Can a change from template `old` to template `new` render a text `old` rendered before?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Never: the texts of the two differ in length or at a fixed position.
    Apart,
    /// Only in a period of `unit` (the old template's) that the old template issued numbers
    /// in: from the period after the old template's last one, never.
    ApartAfter(Unit),
    /// In any period.
    Meet,
}

/// The widths a template's `{node}` without a width can have (one, unused, when it has none).
fn node_digits(t: &Template) -> std::ops::RangeInclusive<u8> {
    if t.parts().contains(&Part::Node { width: None }) {
        1..=NODE_DIGITS_MAX
    } else {
        1..=1
    }
}

/// The most digits of a node id (`seqgen.node_id` is at most 4,194,304).
const NODE_DIGITS_MAX: u8 = 7;

/// May a change from template `old` to template `new` render a text `old` rendered, on any
/// nodes? The worst verdict over the widths of their node ids.
pub fn compare(old: &Template, new: &Template, tag: &str) -> Verdict {
    let mut worst = Verdict::Apart;
    for wa in node_digits(old) {
        for wb in node_digits(new) {
            match compare_at(old, new, tag, wa, wb) {
                Verdict::Meet => return Verdict::Meet,
                v @ Verdict::ApartAfter(_) => worst = v,
                Verdict::Apart => {}
            }
        }
    }
    worst
}

/// Two shapes that meet, at some widths of their node ids, for messages: a text both allow.
pub fn example(old: &Template, new: &Template, tag: &str) -> Option<String> {
    node_digits(old)
        .flat_map(|wa| node_digits(new).map(move |wb| (wa, wb)))
        .find_map(|(wa, wb)| shape(old, tag, wa).example(&shape(new, tag, wb)))
}

fn compare_at(old: &Template, new: &Template, tag: &str, wa: u8, wb: u8) -> Verdict {
    let (a, b) = (shape(old, tag, wa), shape(new, tag, wb));
    if !a.meets(&b) {
        return Verdict::Apart;
    }
    if a.key_at.is_some() || b.key_at.is_some() {
        // the date fields of a text with a key have no fixed place
        return Verdict::Meet;
    }
    match old.unit() {
        // the old template tells its periods apart, and the new one renders each of its
        // date fields at the same place: equal texts would show the same period
        Some(unit) if old.repeats_every().is_none() && a.dates.iter().all(|d| b.dates.contains(d)) => {
            Verdict::ApartAfter(unit)
        }
        _ => Verdict::Meet,
    }
}

/// The local date and time a period key stands for, as a template of `unit` shows it
/// (`2026-11-24`, `2026-11-24 13:00`), for messages.
pub fn period_text(key: i64, unit: Unit) -> String {
    let t = local_of_key(key);
    let date = format!("{:04}-{:02}-{:02}", t.year(), t.month(), t.day());
    match unit {
        Unit::Year => format!("{:04}", t.year()),
        Unit::Month => format!("{:04}-{:02}", t.year(), t.month()),
        Unit::Day => date,
        Unit::Hour | Unit::Minute => format!("{date} {:02}:{:02}", t.hour(), t.minute()),
        Unit::Second => format!("{date} {:02}:{:02}:{:02}", t.hour(), t.minute(), t.second()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opaque::Key;
    use crate::template::{parse, parse_time_zone, truncate_key, Tz};
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn verdict(old: &str, new: &str) -> Verdict {
        compare(&parse(old).unwrap(), &parse(new).unwrap(), "t")
    }

    #[test]
    fn the_reproduced_changes_are_caught() {
        // plain to opaque: the same digits in another order
        assert_eq!(
            verdict("SN{yyyy}{MM}{dd}{seq:4}", "SN{yyyy}{MM}{dd}{seq:4:opaque}"),
            Verdict::ApartAfter(Unit::Day)
        );
        // a counter one digit wider in place of counter + check digit
        assert_eq!(verdict("C{yyyy}{MM}{dd}{seq:4}{check}", "C{yyyy}{MM}{dd}{seq:5}"), Verdict::ApartAfter(Unit::Day));
        // an hour field where the counter's first digits were
        assert_eq!(verdict("SN{yyyy}{MM}{dd}{seq:6}", "SN{yyyy}{MM}{dd}{HH}{seq:4}"), Verdict::ApartAfter(Unit::Day));
    }

    #[test]
    fn apart_meet_and_alignment() {
        assert_eq!(verdict("SN{yyyy}{MM}{dd}{seq:4}", "SO{yyyy}{MM}{dd}{seq:4}"), Verdict::Apart);
        assert_eq!(verdict("SN{yyyy}{MM}{dd}{seq:4}", "SN{yyyy}{MM}{dd}{seq:5}"), Verdict::Apart);
        // the date moved: 2026-11-05 and 2026-05-11 read the same
        assert_eq!(verdict("{yyyy}{MM}{dd}-{seq:4}", "{yyyy}{dd}{MM}-{seq:4}"), Verdict::Meet);
        // no date to tell periods apart
        assert_eq!(verdict("QJ{seq:6}", "QJ{seq:6:opaque}"), Verdict::Meet);
        // the old template repeats its periods (allow_repeats)
        assert_eq!(verdict("{dd}-{seq:4}", "{dd}-{seq:4:opaque}"), Verdict::Meet);
        // a digit literal meets a digit field, a letter does not
        assert_eq!(verdict("A{seq:3}", "{seq:4}"), Verdict::Apart);
        assert_eq!(verdict("1{seq:3}", "{seq:4}"), Verdict::Meet);
        // {tag} is the tag's name, {node} any node id (it rendered others, or will)
        assert_eq!(verdict("{tag}{seq:3}", "t{seq:3}"), Verdict::Meet);
        assert_eq!(verdict("{node:2}{seq:3}", "08{seq:3}"), Verdict::Meet);
        assert_eq!(verdict("{node:2}{seq:3}", "0A{seq:3}"), Verdict::Apart);
        assert_eq!(verdict("{node}-{seq:3}", "17-{seq:3}"), Verdict::Meet);
        assert_eq!(verdict("{node}-{seq:3}", "A-{seq:3}"), Verdict::Apart);
        // a {node} as wide as the old counter's head: the date still tells periods apart
        assert_eq!(verdict("N{yyyy}{MM}{dd}{seq:4}", "N{yyyy}{MM}{dd}{node}{seq:2}"), Verdict::ApartAfter(Unit::Day));
        // months never start with 2
        assert_eq!(verdict("{MM}{seq:2}{yyyy}", "2{seq:3}{yyyy}"), Verdict::Apart);
        let (a, b) = (shape(&parse("A{seq:2}").unwrap(), "", 0), shape(&parse("A1{seq:1}").unwrap(), "", 0));
        assert_eq!(a.example(&b).as_deref(), Some("A10"));
    }

    #[test]
    fn base32_counters_meet_digits_and_their_letters() {
        // a base32 counter renders digits too (its first 9 values), and capitals but I L O U
        assert_eq!(verdict("A{seq:4}", "A{seq:4:b32}"), Verdict::Meet);
        assert_eq!(verdict("A{seq:3:b32}", "AB{seq:2:b32}"), Verdict::Meet);
        assert_eq!(verdict("A{seq:3:b32}", "AU{seq:2:b32}"), Verdict::Apart);
        assert_eq!(verdict("A{seq:3:b32}", "Ab{seq:2:b32}"), Verdict::Apart);
        assert_eq!(verdict("A{seq:3:b32}", "A-{seq:2:b32}"), Verdict::Apart);
        assert_eq!(verdict("A{seq:3:b32}", "A{seq:4:b32}"), Verdict::Apart);
        // the date still tells the periods apart
        assert_eq!(verdict("W{yyyy}{MM}{dd}{seq:3}", "W{yyyy}{MM}{dd}{seq:3:b32}"), Verdict::ApartAfter(Unit::Day));
        let (a, b) =
            (shape(&parse("A{seq:2:b32}").unwrap(), "", 0), shape(&parse("{seq:1:b32}Z{node:1}").unwrap(), "", 0));
        assert_eq!(a.example(&b).as_deref(), Some("AZ0"));
    }

    /// Templates built from a few parts, so that pairs of the same length are common: some of
    /// the date fields, in any order, a literal, the counter, maybe a check digit.
    fn template() -> impl Strategy<Value = String> {
        let dates = proptest::sample::subsequence(vec!["{yy}", "{MM}", "{dd}", "{HH}"], 0..=4).prop_shuffle();
        let lit = prop_oneof![Just(""), Just("A"), Just("U"), Just("1"), Just("-"), Just("{node:1}"), Just("{node}")];
        // a base32 counter of one character (31 values), which has no check digit
        (dates, lit.clone(), 1u8..=2, any::<bool>(), any::<bool>(), lit, any::<bool>()).prop_map(
            |(dates, a, w, opaque, check, b, b32)| {
                let (w, options) = if b32 { (1, ":b32") } else { (w, "") };
                let seq = if opaque { format!("{{seq:{w}{options}:opaque}}") } else { format!("{{seq:{w}{options}}}") };
                let tail = if check && !b32 { "{check}" } else { "" };
                format!("{a}{}{seq}{b}{tail}", dates.concat())
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// Every text two templates really render alike, over a few periods (hours 1 to 4 of
        /// days 1 to 4 of months 1 to 4 of 2026, so that swapped date fields meet, and `{yy}`
        /// does not wrap) and every counter value: apart templates never render one, and
        /// templates apart after a period render one only for the same period of the old
        /// template's unit (so from the next period on, never). Each template renders on
        /// nodes 1, 7 and 12 (where its `{node:1}` fits): the old one rendered other node ids
        /// than the new one will.
        #[test]
        fn verdicts_agree_with_rendering(
            old in template(),
            new in template(),
            moments in proptest::collection::vec((1u32..=4, 1u32..=4, 1u32..=4), 1..10),
        ) {
            verdict_agrees_with_rendering(&old, &new, &moments)?;
        }

        /// The same for short templates of base32 counters beside letters and digits.
        #[test]
        fn base32_verdicts_agree_with_rendering(old in base32_template(), new in base32_template()) {
            verdict_agrees_with_rendering(&old, &new, &[(1, 1, 1)])?;
        }
    }

    /// A literal, a counter (decimal, or base32 of one or two characters), a literal.
    fn base32_template() -> impl Strategy<Value = String> {
        let lit = prop_oneof![Just(""), Just("A"), Just("Z"), Just("U"), Just("1"), Just("-")];
        let seq = prop_oneof![
            Just("{seq:1}"),
            Just("{seq:2}"),
            Just("{seq:1:b32}"),
            Just("{seq:2:b32}"),
            Just("{seq:1:b32:opaque}")
        ];
        (lit.clone(), seq, lit).prop_map(|(a, seq, b)| format!("{a}{seq}{b}"))
    }

    fn verdict_agrees_with_rendering(old: &str, new: &str, moments: &[(u32, u32, u32)]) -> Result<(), TestCaseError> {
        {
            let (a, b) = (parse(old).unwrap(), parse(new).unwrap());
            let v = compare(&a, &b, "t");
            let key = Key::from_bytes(&[3u8; 32]).unwrap();
            let texts = |t: &crate::template::Template| -> HashMap<String, Vec<i64>> {
                let mut out: HashMap<String, Vec<i64>> = HashMap::new();
                for node in [1, 7, 12].into_iter().filter(|n| t.check_node(*n).is_ok()) {
                    for (month, day, hour) in moments {
                        let at = chrono::NaiveDate::from_ymd_opt(2026, *month, *day)
                            .unwrap()
                            .and_hms_opt(*hour, 30, 0)
                            .unwrap();
                        let period = t.locate(Tz::UTC, at.and_utc().timestamp_millis()).key;
                        for seq in 1..=t.capacity() as u64 {
                            out.entry(t.render_with_key(period, seq, node, "t", Some(key))).or_default().push(period);
                        }
                    }
                }
                out
            };
            let (ta, tb) = (texts(&a), texts(&b));
            let pairs = tb.iter().filter_map(|(text, kbs)| ta.get(text).map(|kas| (text, kbs, kas)));
            for (text, kbs, kas) in pairs {
                for (kb, ka) in kbs.iter().flat_map(|kb| kas.iter().map(move |ka| (kb, ka))) {
                    match v {
                        Verdict::Apart => prop_assert!(false, "{old} and {new} are apart but both render {text}"),
                        Verdict::ApartAfter(unit) => prop_assert_eq!(
                            truncate_key(*kb, unit),
                            truncate_key(*ka, unit),
                            "{} and {} render {} in different periods",
                            old,
                            new,
                            text
                        ),
                        Verdict::Meet => {}
                    }
                }
            }
        }
        Ok(())
    }

    #[test]
    fn keys_are_apart_by_head_tail_and_length() {
        // the key's numbers are longer than the plain ones
        assert_eq!(verdict("INV-{seq:6}", "INV-{key}-{seq:6}"), Verdict::Apart);
        // a key can stand for "INV" (the same tail): they meet
        assert_eq!(verdict("INV-{seq:6}", "{key}-{seq:6}"), Verdict::Meet);
        // different heads, different tails
        assert_eq!(verdict("A{key}-{seq:4}", "B{key}-{seq:4}"), Verdict::Apart);
        assert_eq!(verdict("{key}-{seq:4}", "{key}/{seq:4}"), Verdict::Apart);
        // a wider counter puts a digit where the separator was
        assert_eq!(verdict("{key}-{seq:4}", "{key}-{seq:5}"), Verdict::Apart);
        // a key may swallow a longer head
        assert_eq!(verdict("{key}-{seq:4}", "P{key}-{seq:4}"), Verdict::Meet);
        // a key may hold a '-' and digits: "A-1234-5678" is both
        assert_eq!(verdict("{key}-{seq:4}", "{key}-{yyyy}-{seq:4}"), Verdict::Meet);
        // a plain text as long as the fixed part alone leaves no room for a key
        assert_eq!(verdict("XX{seq:2}", "{key}{seq:2}"), Verdict::Meet);
        assert_eq!(verdict("{seq:2}", "{key}{seq:2}"), Verdict::Apart);
        let (a, b) = (shape(&parse("A{key}{seq:1}").unwrap(), "", 0), shape(&parse("A1{seq:1}").unwrap(), "", 0));
        assert_eq!(a.example(&b), None);
    }

    /// Templates with a key somewhere between their parts.
    fn keyed_template() -> impl Strategy<Value = String> {
        let lit = prop_oneof![Just(""), Just("A"), Just("1"), Just("-"), Just("1-")];
        let dates = proptest::sample::subsequence(vec!["{yy}", "{MM}"], 0..=2);
        (lit.clone(), dates, lit.clone(), 1u8..=2, lit, 0usize..6, any::<bool>()).prop_map(
            |(a, dates, c, w, b, at, check)| {
                let mut parts: Vec<String> = vec![a.to_string()];
                parts.extend(dates.iter().map(|d| d.to_string()));
                parts.push(c.to_string());
                parts.push(format!("{{seq:{w}}}"));
                parts.push(b.to_string());
                parts.insert(at.min(parts.len()), "{key}".to_string());
                if check {
                    parts.push("{check}".into());
                }
                parts.concat()
            },
        )
    }

    fn plain_or_keyed() -> impl Strategy<Value = String> {
        prop_oneof![template().prop_filter("no opaque counter with keys", |t| !t.contains("opaque")), keyed_template()]
    }

    const KEYS: [&str; 8] = ["A", "1", "-", "A1", "1-", "12", "A-1", "-A-1"];

    /// Every text of a template, with what rendered it: for each key (one, with no key
    /// field), period and counter.
    fn keyed_texts(t: &crate::template::Template, moments: &[(u32, u32)]) -> Vec<(String, (String, i64, u64))> {
        let mut out = vec![];
        let keys: &[&str] = if t.has_key() { &KEYS } else { &[""] };
        for (month, year) in moments {
            let at =
                chrono::NaiveDate::from_ymd_opt(2020 + *year as i32, *month, 1).unwrap().and_hms_opt(1, 0, 0).unwrap();
            let period = t.locate(Tz::UTC, at.and_utc().timestamp_millis()).key;
            for k in keys {
                for seq in 1..=t.capacity() as u64 {
                    out.push((t.render_keyed(period, seq, 7, "t", k), (k.to_string(), period, seq)));
                }
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// With keys too: templates found apart never render one text (for any of a few keys
        /// chosen to look like the other parts), and changes with a key are never "apart
        /// after a period".
        #[test]
        fn keyed_verdicts_agree_with_rendering(
            old in plain_or_keyed(),
            new in plain_or_keyed(),
            moments in proptest::collection::vec((1u32..=3, 1u32..=2), 1..4),
        ) {
            let (a, b) = (parse(&old).unwrap(), parse(&new).unwrap());
            let v = compare(&a, &b, "t");
            if a.has_key() || b.has_key() {
                prop_assert!(v != Verdict::ApartAfter(Unit::Year) && v != Verdict::ApartAfter(Unit::Month));
            }
            if v == Verdict::Apart {
                let ta: HashMap<String, _> = keyed_texts(&a, &moments).into_iter().collect();
                for (text, _) in keyed_texts(&b, &moments) {
                    prop_assert!(!ta.contains_key(&text), "{} and {} are apart but both render {}", old, new, text);
                }
            }
        }

        /// One template with a key renders each (key, period, counter) as its own text: the
        /// numbers of two keys never meet.
        #[test]
        fn keys_never_share_a_number(t in keyed_template(), moments in proptest::collection::vec((1u32..=3, 1u32..=2), 1..4)) {
            let t = parse(&t).unwrap();
            let mut seen: HashMap<String, (String, i64, u64)> = HashMap::new();
            for (text, who) in keyed_texts(&t, &moments) {
                if let Some(before) = seen.insert(text, who.clone()) {
                    prop_assert!(before == who || (t.repeats_every().is_some() && before.0 == who.0),
                        "{:?} and {:?} render one text", before, who);
                }
            }
        }
    }

    #[test]
    fn period_texts() {
        let t = parse("{yyyy}{MM}{dd}{HH}{seq:2}").unwrap();
        let k = t.locate(parse_time_zone("Asia/Shanghai").unwrap(), 1_793_577_600_000).key;
        assert_eq!(period_text(k, Unit::Hour), "2026-11-02 08:00");
        assert_eq!(period_text(k, Unit::Day), "2026-11-02");
        assert_eq!(period_text(k, Unit::Month), "2026-11");
    }
}
