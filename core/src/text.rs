//! Sortable text for IDs: fixed-width Crockford base32, the alphabet of ULIDs (`0`-`9` and
//! `A`-`Z` without `I`, `L`, `O` and `U`), most significant character first.
//!
//! Of two IDs of the same width, the smaller number has the smaller text, byte by byte: the
//! alphabet is in ASCII order. It is also the order of every collation that sorts digits
//! before letters and letters alphabetically (libc's and ICU's do; text of digits and capitals
//! only has no punctuation or case for a collation to weigh).
//!
//! A `bigint` (0 to 2^63 - 1) takes at most 13 characters (65 bits); a `uuid` (128 bits) takes
//! 26, and its text is the ULID of the same 128 bits (the ULID specification's encoding), so a
//! UUIDv7's text is a ULID with the same millisecond. Input may be in either case. The digits
//! and the 26-character codec are the `ulid` crate's; this module fixes the widths and checks
//! what that codec does not: the length, the character (named, with its position) and a first
//! character that would carry bits beyond the type (`ulid` would drop them, so two texts would
//! decode to one value).

use thiserror::Error;

/// The characters of a `bigint`'s text (65 bits).
pub const BIGINT_WIDTH: usize = 13;
/// The characters of a `uuid`'s text (130 bits: a ULID).
pub const UUID_WIDTH: usize = ulid::ULID_LEN;

/// What the errors of typed IDs call them.
const TYPED: &str = "typed ID";

/// What the errors of short codes (`code.rs`) call them.
pub const CODE: &str = "short code";

/// `text` as an error message shows it: at most 60 characters.
pub(crate) fn shown(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}

fn type_of(found: &str) -> String {
    if found.is_empty() {
        "it has no type prefix".into()
    } else {
        format!("its type is \"{found}\"")
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum TextIdError {
    #[error("cannot encode a negative value as text: {0}")]
    Negative(i64),
    #[error("the width of a bigint's text must be between 1 and {BIGINT_WIDTH}, not {0}")]
    BadWidth(i64),
    #[error("{value} does not fit in {width} characters of base32")]
    TooWide { value: i64, width: usize },
    #[error("invalid {kind} text: \"{text}\" has {len} characters, not {expected}")]
    Length { kind: &'static str, text: String, len: usize, expected: String },
    #[error("invalid {kind} text: \"{text}\" has \"{found}\" at position {position}")]
    Character { kind: &'static str, text: String, found: char, position: usize },
    #[error("{kind} text out of range: \"{text}\" is above {max}")]
    OutOfRange { kind: &'static str, text: String, max: &'static str },
    #[error("invalid type prefix \"{0}\"")]
    BadPrefix(String),
    #[error("ID \"{id}\" is not of type \"{expected}\" ({})", type_of(found))]
    OtherType { id: String, found: String, expected: String },
    #[error("the length of a short code must be between 4 and 13, not {0}")]
    BadCodeLength(i64),
    #[error("all {capacity} short codes of {length} characters are used up")]
    NoCodesLeft { length: usize, capacity: u64 },
    #[error("invalid short code \"{text}\": its check character does not match")]
    Check { text: String },
}

impl TextIdError {
    /// The remedy, for the HINT line.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            TextIdError::Character { kind: TYPED, .. } => {
                Some("Typed IDs are written in lower case: a type prefix, \"_\", and 0-9 and a-z except i, l, o and u.")
            }
            TextIdError::Character { kind: CODE, .. } => Some(
                "Short codes are written with 0-9 and A-Z except U, in either case (I and L are read as 1, O as 0).",
            ),
            TextIdError::Character { .. } => {
                Some("IDs are written with 0-9 and A-Z except I, L, O and U, in either case.")
            }
            TextIdError::Check { .. } => Some("A character was mistyped, or two neighbours were swapped."),
            TextIdError::NoCodesLeft { .. } => Some("Draw longer codes: one more character holds 32 times as many."),
            TextIdError::BadPrefix(_) => Some(
                "A type prefix is empty or 1 to 63 lower-case letters a-z and underscores, starting and ending with a letter.",
            ),
            _ => None,
        }
    }

    /// Is this about text given to decode (invalid input) rather than a value to encode?
    pub fn is_input_syntax(&self) -> bool {
        matches!(self, TextIdError::Length { .. } | TextIdError::Character { .. } | TextIdError::Check { .. })
    }
}

/// The text of `value` in `width` characters (leading zeros; `width` 1 to 13).
pub fn encode_i64(value: i64, width: i64) -> Result<String, TextIdError> {
    if !(1..=BIGINT_WIDTH as i64).contains(&width) {
        return Err(TextIdError::BadWidth(width));
    }
    if value < 0 {
        return Err(TextIdError::Negative(value));
    }
    let width = width as usize;
    if width < BIGINT_WIDTH && (value as u64) >> (5 * width) != 0 {
        return Err(TextIdError::TooWide { value, width });
    }
    let mut buf = [0u8; UUID_WIDTH];
    Ok(ulid::Ulid(value as u128).array_to_str(&mut buf)[UUID_WIDTH - width..].to_string())
}

/// The value of a bigint's text (1 to 13 characters, either case).
pub fn decode_i64(text: &str) -> Result<i64, TextIdError> {
    const KIND: &str = "bigint ID";
    let len = text.chars().count();
    if !(1..=BIGINT_WIDTH).contains(&len) {
        return Err(TextIdError::Length {
            kind: KIND,
            text: shown(text),
            len,
            expected: format!("1 to {BIGINT_WIDTH}"),
        });
    }
    check_characters(KIND, text)?;
    let padded = format!("{}{text}", "0".repeat(UUID_WIDTH - len));
    let value = ulid::Ulid::from_string(&padded).map(|u| u.0).map_err(|_| TextIdError::Character {
        kind: KIND,
        text: shown(text),
        found: '?',
        position: 0,
    })?;
    i64::try_from(value).map_err(|_| TextIdError::OutOfRange {
        kind: KIND,
        text: shown(text),
        max: "7ZZZZZZZZZZZZ (9223372036854775807)",
    })
}

/// The 26 characters of a 128-bit value (a uuid's bytes, big-endian): its ULID text.
pub fn encode_u128(value: u128) -> String {
    let mut buf = [0u8; UUID_WIDTH];
    ulid::Ulid(value).array_to_str(&mut buf).to_string()
}

/// The 128-bit value of a ULID text (26 characters, either case, the first 0 to 7).
pub fn decode_u128(text: &str) -> Result<u128, TextIdError> {
    const KIND: &str = "ULID";
    let len = text.chars().count();
    if len != UUID_WIDTH {
        return Err(TextIdError::Length { kind: KIND, text: shown(text), len, expected: UUID_WIDTH.to_string() });
    }
    check_characters(KIND, text)?;
    if text.as_bytes()[0] > b'7' {
        // 130 bits: the first character holds the two bits above a uuid's 128
        return Err(TextIdError::OutOfRange { kind: KIND, text: shown(text), max: "7ZZZZZZZZZZZZZZZZZZZZZZZZZ" });
    }
    ulid::Ulid::from_string(text).map(|u| u.0).map_err(|_| TextIdError::Character {
        kind: KIND,
        text: shown(text),
        found: '?',
        position: 0,
    })
}

/// The first character outside the alphabet, named with its position (from 1).
fn check_characters(kind: &'static str, text: &str) -> Result<(), TextIdError> {
    const ALPHABET: &str = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    match text.chars().enumerate().find(|(_, c)| !ALPHABET.contains(c.to_ascii_uppercase())) {
        Some((i, found)) => Err(TextIdError::Character { kind, text: shown(text), found, position: i + 1 }),
        None => Ok(()),
    }
}

/// Is `prefix` a type prefix: empty, or 1 to 63 of `a`-`z` and `_`, starting and ending with a
/// letter (the TypeID specification's rule, so that the prefix and the separator are found
/// again: the base32 text has no `_`)?
pub fn check_prefix(prefix: &str) -> Result<(), TextIdError> {
    let b = prefix.as_bytes();
    let ok = b.is_empty()
        || (b.len() <= 63
            && b.iter().all(|c| c.is_ascii_lowercase() || *c == b'_')
            && b[0] != b'_'
            && b[b.len() - 1] != b'_');
    if ok {
        Ok(())
    } else {
        Err(TextIdError::BadPrefix(prefix.to_string()))
    }
}

/// `prefix`, the separator `_` (none after an empty prefix) and the lower-case text of the value.
fn typed(prefix: &str, text: &str) -> Result<String, TextIdError> {
    check_prefix(prefix)?;
    // one allocation: a row's DEFAULT calls this
    let mut out = String::with_capacity(prefix.len() + 1 + text.len());
    if !prefix.is_empty() {
        out.push_str(prefix);
        out.push('_');
    }
    out.extend(text.chars().map(|c| c.to_ascii_lowercase()));
    Ok(out)
}

/// The text after `prefix` and its separator, if `id` is of that type.
fn untyped<'a>(prefix: &str, id: &'a str) -> Result<&'a str, TextIdError> {
    check_prefix(prefix)?;
    let (found, rest) = match id.rfind('_') {
        // a separator with no prefix before it (the TypeID specification refuses it too):
        // "_x" would be a second text of the value of "x"
        Some(0) => return Err(TextIdError::Character { kind: TYPED, text: shown(id), found: '_', position: 1 }),
        Some(i) => (&id[..i], &id[i + 1..]),
        None => ("", id),
    };
    if found != prefix {
        return Err(TextIdError::OtherType { id: shown(id), found: shown(found), expected: prefix.to_string() });
    }
    // lower case only, as written (and as TypeID requires): one text per ID of a type
    if let Some((i, c)) = rest.chars().enumerate().find(|(_, c)| c.is_ascii_uppercase()) {
        let position = id.chars().count() - rest.chars().count() + i + 1;
        return Err(TextIdError::Character { kind: TYPED, text: shown(id), found: c, position });
    }
    Ok(rest)
}

/// A bigint as a typed ID: `inv_000000000000z` (the prefix, `_`, 13 lower-case characters).
pub fn encode_typed_i64(prefix: &str, value: i64) -> Result<String, TextIdError> {
    if value < 0 {
        return Err(TextIdError::Negative(value));
    }
    let mut buf = [0u8; UUID_WIDTH];
    typed(prefix, &ulid::Ulid(value as u128).array_to_str(&mut buf)[UUID_WIDTH - BIGINT_WIDTH..])
}

/// The bigint of a typed ID of type `prefix` (its 13 characters in either case).
pub fn decode_typed_i64(prefix: &str, id: &str) -> Result<i64, TextIdError> {
    let rest = untyped(prefix, id)?;
    if rest.chars().count() != BIGINT_WIDTH {
        return Err(TextIdError::Length {
            kind: "typed ID",
            text: id.to_string(),
            len: rest.chars().count(),
            expected: format!("{BIGINT_WIDTH} after the prefix"),
        });
    }
    decode_i64(rest)
}

/// A uuid as a TypeID: the prefix, `_` and the 26 lower-case characters of its ULID.
pub fn encode_typeid(prefix: &str, value: u128) -> Result<String, TextIdError> {
    let mut buf = [0u8; UUID_WIDTH];
    typed(prefix, ulid::Ulid(value).array_to_str(&mut buf))
}

/// The uuid of a TypeID of type `prefix` (its 26 characters in either case).
pub fn decode_typeid(prefix: &str, id: &str) -> Result<u128, TextIdError> {
    decode_u128(untyped(prefix, id)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn edges_of_a_bigint() {
        assert_eq!(encode_i64(0, 13).unwrap(), "0000000000000");
        assert_eq!(encode_i64(31, 13).unwrap(), "000000000000Z");
        assert_eq!(encode_i64(32, 13).unwrap(), "0000000000010");
        assert_eq!(encode_i64(i64::MAX, 13).unwrap(), "7ZZZZZZZZZZZZ");
        assert_eq!(decode_i64("7ZZZZZZZZZZZZ").unwrap(), i64::MAX);
        assert_eq!(decode_i64("7zzzzzzzzzzzz").unwrap(), i64::MAX);
        assert_eq!(decode_i64("0").unwrap(), 0);
        assert_eq!(decode_i64("z").unwrap(), 31);
        // a 53-bit snowflake in 11 characters (55 bits)
        assert_eq!(encode_i64((1 << 53) - 1, 11).unwrap(), "7ZZZZZZZZZZ");
        assert_eq!(encode_i64(1 << 55, 11), Err(TextIdError::TooWide { value: 1 << 55, width: 11 }));
        assert_eq!(encode_i64((1 << 55) - 1, 11).unwrap(), "ZZZZZZZZZZZ");
    }

    #[test]
    fn bad_input_is_named() {
        assert_eq!(encode_i64(-1, 13), Err(TextIdError::Negative(-1)));
        assert_eq!(encode_i64(1, 0), Err(TextIdError::BadWidth(0)));
        assert_eq!(encode_i64(1, 14), Err(TextIdError::BadWidth(14)));
        assert!(matches!(decode_i64("8000000000000"), Err(TextIdError::OutOfRange { .. })));
        assert!(matches!(decode_i64("ZZZZZZZZZZZZZ"), Err(TextIdError::OutOfRange { .. })));
        assert!(matches!(decode_i64(""), Err(TextIdError::Length { len: 0, .. })));
        assert!(matches!(decode_i64("00000000000000"), Err(TextIdError::Length { len: 14, .. })));
        for (text, found, position) in [("0I", 'I', 2), ("l", 'l', 1), ("0o0", 'o', 2), ("U", 'U', 1), ("1-2", '-', 2)]
        {
            assert_eq!(
                decode_i64(text),
                Err(TextIdError::Character { kind: "bigint ID", text: text.into(), found, position })
            );
        }
        // a character of more than one byte is named, not cut
        assert!(matches!(decode_i64("0é"), Err(TextIdError::Character { found: 'é', position: 2, .. })));
        assert!(matches!(decode_u128("8ZZZZZZZZZZZZZZZZZZZZZZZZZ"), Err(TextIdError::OutOfRange { .. })));
        assert!(matches!(decode_u128("7ZZZZZZZZZZZZZZZZZZZZZZZZ"), Err(TextIdError::Length { len: 25, .. })));
    }

    #[test]
    fn a_ulid_from_the_specification() {
        // the ULID specification's example text, and the 128 bits it stands for
        let text = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
        let value = decode_u128(text).unwrap();
        assert_eq!(value >> 80, 1_469_922_850_259); // its millisecond, 2016-07-30
        assert_eq!(encode_u128(value), text);
        assert_eq!(decode_u128(&text.to_lowercase()).unwrap(), value);
        assert_eq!(encode_u128(u128::MAX), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
        assert_eq!(encode_u128(0), "00000000000000000000000000");
    }

    #[test]
    fn typed_ids() {
        assert_eq!(encode_typed_i64("inv", 31).unwrap(), "inv_000000000000z");
        assert_eq!(decode_typed_i64("inv", "inv_000000000000z").unwrap(), 31);
        assert_eq!(encode_typed_i64("", 31).unwrap(), "000000000000z");
        assert_eq!(decode_typed_i64("", "000000000000z").unwrap(), 31);
        // the TypeID specification's example: prefix "prefix", uuid 0110c853-1d09-52d8-d73e-1194e95b5f19
        let u = 0x0110c853_1d09_52d8_d73e_1194e95b5f19u128;
        assert_eq!(encode_typeid("prefix", u).unwrap(), "prefix_0123456789abcdefghjkmnpqrs");
        assert_eq!(decode_typeid("prefix", "prefix_0123456789abcdefghjkmnpqrs").unwrap(), u);
        assert_eq!(encode_typeid("pre_fix", 0).unwrap(), "pre_fix_00000000000000000000000000");
        assert_eq!(decode_typeid("pre_fix", "pre_fix_00000000000000000000000000").unwrap(), 0);
        for bad in ["Inv", "_inv", "inv_", "in-v", "i9", "é", &"a".repeat(64)] {
            assert_eq!(encode_typeid(bad, 1), Err(TextIdError::BadPrefix(bad.to_string())), "{bad}");
            assert_eq!(decode_typed_i64(bad, "x_0"), Err(TextIdError::BadPrefix(bad.to_string())), "{bad}");
        }
        assert!(matches!(decode_typeid("user", "post_00000000000000000000000000"), Err(TextIdError::OtherType { .. })));
        assert!(matches!(decode_typeid("user", "00000000000000000000000000"), Err(TextIdError::OtherType { .. })));
        assert!(matches!(decode_typeid("", "user_00000000000000000000000000"), Err(TextIdError::OtherType { .. })));
        assert!(matches!(decode_typeid("user", "user_0000000000000000000000000"), Err(TextIdError::Length { .. })));
        assert!(matches!(
            decode_typeid("user", "user_80000000000000000000000000"),
            Err(TextIdError::OutOfRange { .. })
        ));
        assert!(matches!(decode_typed_i64("inv", "inv_00000000000000"), Err(TextIdError::Length { .. })));
        assert!(matches!(decode_typed_i64("inv", "inv__000000000000z"), Err(TextIdError::OtherType { .. })));
        // one text per ID of a type: no separator without a prefix, no upper case
        assert_eq!(
            decode_typed_i64("", "_000000000000z"),
            Err(TextIdError::Character { kind: TYPED, text: "_000000000000z".into(), found: '_', position: 1 })
        );
        assert!(matches!(decode_typeid("", "_00000000000000000000000000"), Err(TextIdError::Character { .. })));
        assert_eq!(
            decode_typed_i64("inv", "inv_000000000000Z"),
            Err(TextIdError::Character { kind: TYPED, text: "inv_000000000000Z".into(), found: 'Z', position: 17 })
        );
        assert!(matches!(
            decode_typeid("prefix", "prefix_0123456789ABCDEFGHJKMNPQRS"),
            Err(TextIdError::Character { found: 'A', position: 18, .. })
        ));
        assert_eq!(
            TextIdError::OtherType { id: "000".into(), found: "".into(), expected: "inv".into() }.to_string(),
            "ID \"000\" is not of type \"inv\" (it has no type prefix)"
        );
        let long = "x".repeat(100);
        assert!(decode_i64(&long).unwrap_err().to_string().contains(&format!("\"{}...\"", "x".repeat(60))));
    }

    proptest! {
        #[test]
        fn typed_ids_round_trip_and_never_pass_for_another_type(
            p in "([a-z]([a-z_]{0,8}[a-z])?)?", q in "([a-z]([a-z_]{0,8}[a-z])?)?", v in 0..=i64::MAX, u in any::<u128>()
        ) {
            let t = encode_typed_i64(&p, v).unwrap();
            prop_assert_eq!(decode_typed_i64(&p, &t).unwrap(), v);
            let id = encode_typeid(&p, u).unwrap();
            prop_assert_eq!(decode_typeid(&p, &id).unwrap(), u);
            prop_assert_eq!(id.len(), p.len() + usize::from(!p.is_empty()) + UUID_WIDTH);
            if p != q {
                prop_assert!(decode_typed_i64(&q, &t).is_err(), "{} decoded as type {:?}", t, q);
                prop_assert!(decode_typeid(&q, &id).is_err(), "{} decoded as type {:?}", id, q);
            }
        }

        #[test]
        fn bigint_round_trip(v in 0..=i64::MAX, lower in any::<bool>()) {
            let t = encode_i64(v, 13).unwrap();
            prop_assert_eq!(t.len(), 13);
            let t = if lower { t.to_lowercase() } else { t };
            prop_assert_eq!(decode_i64(&t).unwrap(), v);
        }

        #[test]
        fn narrow_widths_round_trip_or_refuse(v in 0..=i64::MAX, width in 1i64..=13) {
            match encode_i64(v, width) {
                Ok(t) => {
                    prop_assert_eq!(t.len() as i64, width);
                    prop_assert_eq!(decode_i64(&t).unwrap(), v);
                }
                Err(e) => {
                    prop_assert_eq!(e, TextIdError::TooWide { value: v, width: width as usize });
                    prop_assert!(width < 13 && (v as u64) >= 1u64 << (5 * width));
                }
            }
        }

        #[test]
        fn bigint_text_order_is_numeric_order(a in 0..=i64::MAX, b in 0..=i64::MAX) {
            let (ta, tb) = (encode_i64(a, 13).unwrap(), encode_i64(b, 13).unwrap());
            prop_assert_eq!(a.cmp(&b), ta.cmp(&tb));
        }

        #[test]
        fn near_the_edges(d in 0i64..100_000) {
            for v in [d, i64::MAX - d, (1 << 53) - 1 - d, (1 << 32) + d - 50_000] {
                if v >= 0 {
                    let t = encode_i64(v, 13).unwrap();
                    prop_assert_eq!(decode_i64(&t).unwrap(), v);
                    prop_assert!(encode_i64(v.saturating_add(1), 13).unwrap() > t || v == i64::MAX);
                }
            }
        }

        #[test]
        fn ulid_round_trip_and_order(a in any::<u128>(), b in any::<u128>()) {
            let (ta, tb) = (encode_u128(a), encode_u128(b));
            prop_assert_eq!(decode_u128(&ta).unwrap(), a);
            prop_assert_eq!(decode_u128(&ta.to_lowercase()).unwrap(), a);
            prop_assert_eq!(a.cmp(&b), ta.cmp(&tb));
        }

        #[test]
        fn every_text_decodes_to_one_value_or_is_refused(s in "[0-9A-Za-z]{1,14}") {
            // canonical (upper case, fixed width) text of what it decodes to is itself
            if let Ok(v) = decode_i64(&s) {
                let t = encode_i64(v, s.len() as i64).unwrap();
                prop_assert_eq!(t, s.to_uppercase());
            }
        }
    }
}
