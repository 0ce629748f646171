//! Short codes: coupon, invitation and referral codes that people read, type and share.
//!
//! A code of `length` characters is `length - 1` characters of Crockford base32 (the alphabet of
//! [`crate::text`]) and a check character. The data characters are a keyed permutation
//! ([`crate::opaque`]) of the code's index over all `32^(length - 1)` values of that width: a
//! tag's n-th code is the permutation of n, so codes are unique as long as indexes are, and
//! reveal neither their order nor how many were issued (every value of the width is a possible
//! code). The permutation's tweak depends on the length, so the codes of two lengths are
//! unrelated.
//!
//! The check character is a Damm check over GF(32): the interim check `s` takes each symbol
//! `d` to `α·s + d` (α the root of the primitive polynomial x⁵ + x² + 1), and the check
//! character makes the final interim 0. Every map `s ↦ α·s + d` and `d ↦ α·s + d` is one to one,
//! so every single changed character is caught; swapping adjacent `x ≠ y` changes
//! `α²s + αx + y` into `α²s + αy + x`, which differ by `(α + 1)(x - y) ≠ 0`, so every adjacent
//! swap is caught too (both proved exhaustively below). The code stays in the alphabet, with no
//! 37th symbol as Crockford's mod-37 check needs. The interim starts at a value that depends on
//! the code's length, not at 0 (where a leading `0` would change nothing): a code with leading
//! `0`s dropped or added is caught, whatever follows them (proved below too).
//!
//! Input may be in either case; `I` and `L` are read as `1` and `O` as `0`, as Crockford's
//! specification says, so those misreadings are no errors at all.

use crate::opaque::{Domain, Key};
use crate::text::TextIdError;
use crate::text::CODE as KIND; // what errors call a code

/// The characters of codes, in the order of their values.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// The shortest code (3 data characters: 32,768 codes).
pub const MIN_LENGTH: i64 = 4;
/// The longest code (12 data characters: 2^60 codes).
pub const MAX_LENGTH: i64 = 13;

/// Tweak of the permutation of codes of `length` characters: above every tweak the other
/// opaque numbers use (node ids and periods), though unrelated tweaks only need to differ.
fn tweak(length: usize) -> u64 {
    0x636f_6465_0000_0000 | length as u64
}

/// `α·x` in GF(32) = GF(2)[x] / (x⁵ + x² + 1).
#[inline]
fn times_alpha(x: u8) -> u8 {
    let y = x << 1;
    if y & 0x20 != 0 {
        y ^ 0x25
    } else {
        y
    }
}

/// The interim check after symbol `d`.
#[inline]
fn damm_step(s: u8, d: u8) -> u8 {
    times_alpha(s) ^ d
}

/// The interim check before the first symbol of a code of `length` characters: α^(2·length).
/// With `k` leading `0`s added, a code of `length` characters would need
/// `start(length) = α^k · start(length + k)`, that is `2·length ≡ k + 2·(length + k)` or
/// `3k ≡ 0` (mod 31): never for 1 ≤ k ≤ 9.
fn start(length: usize) -> u8 {
    (0..2 * length).fold(1, |s, _| times_alpha(s))
}

/// The check symbol that follows the `length - 1` data `symbols`.
fn check_symbol(symbols: &[u8]) -> u8 {
    // α·s + c = 0 in a field of characteristic 2: c = α·s
    times_alpha(symbols.iter().fold(start(symbols.len() + 1), |s, &d| damm_step(s, d)))
}

/// Is `length` a code length (4 to 13)?
pub fn check_length(length: i64) -> Result<usize, TextIdError> {
    if (MIN_LENGTH..=MAX_LENGTH).contains(&length) {
        Ok(length as usize)
    } else {
        Err(TextIdError::BadCodeLength(length))
    }
}

/// How many codes of `length` characters there are (`32^(length - 1)`), for a length
/// [`check_length`] accepts.
pub fn capacity(length: usize) -> u64 {
    1u64 << (5 * (length - 1))
}

/// The code of index `n` (from 0) among the codes of `length` characters under `key`;
/// [`TextIdError::NoCodesLeft`] once `n` reaches [`capacity`]: the codes are never repeated.
pub fn encode(key: &Key, length: i64, n: u64) -> Result<String, TextIdError> {
    let length = check_length(length)?;
    let capacity = capacity(length);
    if n >= capacity {
        return Err(TextIdError::NoCodesLeft { length, capacity });
    }
    let domain = Domain::new(0, capacity - 1).expect("a code's domain");
    let value = domain.permute(key, tweak(length), n);
    let mut symbols = [0u8; MAX_LENGTH as usize];
    for (i, s) in symbols[..length - 1].iter_mut().enumerate() {
        *s = ((value >> (5 * (length - 2 - i))) & 31) as u8;
    }
    symbols[length - 1] = check_symbol(&symbols[..length - 1]);
    Ok(symbols[..length].iter().map(|&s| ALPHABET[s as usize] as char).collect())
}

/// The symbols of `code` (either case; I and L are 1, O is 0), checked for length and
/// alphabet, not for the check character.
fn symbols(code: &str) -> Result<Vec<u8>, TextIdError> {
    let len = code.chars().count();
    if !(MIN_LENGTH as usize..=MAX_LENGTH as usize).contains(&len) {
        return Err(TextIdError::Length {
            kind: KIND,
            text: crate::text::shown(code),
            len,
            expected: format!("{MIN_LENGTH} to {MAX_LENGTH}"),
        });
    }
    code.chars()
        .enumerate()
        .map(|(i, c)| {
            let v = match c.to_ascii_uppercase() {
                'I' | 'L' => Some(1),
                'O' => Some(0),
                u => ALPHABET.iter().position(|&a| a as char == u).map(|p| p as u8),
            };
            v.ok_or(TextIdError::Character { kind: KIND, text: crate::text::shown(code), found: c, position: i + 1 })
        })
        .collect()
}

/// The symbols of a well-formed code whose check character matches.
fn checked(code: &str) -> Result<Vec<u8>, TextIdError> {
    let s = symbols(code)?;
    if s.iter().fold(start(s.len()), |acc, &d| damm_step(acc, d)) != 0 {
        return Err(TextIdError::Check { text: crate::text::shown(code) });
    }
    Ok(s)
}

/// Is `code` a code (length, alphabet, check character)? Says nothing of whether it was issued:
/// only the tag's key tells that.
pub fn is_valid(code: &str) -> bool {
    checked(code).is_ok()
}

/// [`is_valid`], saying what is wrong.
pub fn check(code: &str) -> Result<(), TextIdError> {
    checked(code).map(|_| ())
}

/// The index (from 0) of `code` among the codes of its length under `key`.
pub fn decode(key: &Key, code: &str) -> Result<u64, TextIdError> {
    let s = checked(code)?;
    let length = s.len();
    let value = s[..length - 1].iter().fold(0u64, |v, &d| (v << 5) | d as u64);
    let domain = Domain::new(0, capacity(length) - 1).expect("a code's domain");
    Ok(domain.unpermute(key, tweak(length), value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(seed: u8) -> Key {
        let bytes: Vec<u8> = (0..32).map(|i| (i as u8).wrapping_mul(37).wrapping_add(seed)).collect();
        Key::from_bytes(&bytes).unwrap()
    }

    /// α generates GF(32)'s multiplicative group (x⁵ + x² + 1 is primitive): its powers reach
    /// all 31 non-zero elements, and `α·x` is one to one.
    #[test]
    fn alpha_is_a_generator() {
        let mut seen = [false; 32];
        let mut p = 1u8;
        for _ in 0..31 {
            assert!(!seen[p as usize]);
            seen[p as usize] = true;
            p = times_alpha(p);
        }
        assert_eq!(p, 1);
        assert!(!seen[0]);
    }

    /// From every interim check, every changed symbol and every swap of two different adjacent
    /// symbols leaves another interim: so no single error and no adjacent swap goes unnoticed,
    /// wherever it is in the code (what follows maps interims one to one).
    #[test]
    fn every_single_error_and_adjacent_swap_is_caught_exhaustively() {
        for s in 0..32u8 {
            for x in 0..32u8 {
                for y in 0..32u8 {
                    if x != y {
                        assert_ne!(damm_step(s, x), damm_step(s, y), "single error at interim {s}");
                        for z in 0..32u8 {
                            // x then y against y then x, followed by the same symbol or nothing
                            let xy = damm_step(damm_step(s, x), y);
                            let yx = damm_step(damm_step(s, y), x);
                            assert_ne!(xy, yx, "swap of {x} and {y} at interim {s}");
                            assert_ne!(damm_step(xy, z), damm_step(yx, z));
                        }
                    }
                }
            }
        }
    }

    /// A code with `k` leading symbols added is a code only if the interims at its start
    /// agree: `start(L) = α^k · start(L + k)` for the added `0`s (each step is one to one, so
    /// what follows cannot make up for a different start). They never agree: dropping or adding
    /// leading `0`s is always caught.
    #[test]
    fn leading_zeros_dropped_or_added_are_caught_exhaustively() {
        for l in MIN_LENGTH as usize..MAX_LENGTH as usize {
            for k in 1..=MAX_LENGTH as usize - l {
                let mut s = start(l + k);
                for _ in 0..k {
                    s = damm_step(s, 0);
                }
                assert_ne!(s, start(l), "{k} leading zeros before a code of {l} characters");
            }
        }
        let k = key(8);
        for n in 0..2000 {
            let code = encode(&k, 6, n).unwrap();
            for padded in [format!("0{code}"), format!("00{code}")] {
                assert!(!is_valid(&padded), "{padded} accepted for {code}");
            }
            if let Some(rest) = code.strip_prefix('0') {
                assert!(!is_valid(rest), "{rest} accepted for {code}");
            }
        }
    }

    #[test]
    fn lengths_and_capacities() {
        assert_eq!(capacity(4), 32_768);
        assert_eq!(capacity(8), 34_359_738_368);
        assert_eq!(capacity(13), 1 << 60);
        for bad in [i64::MIN, -1, 0, 3, 14, i64::MAX] {
            assert_eq!(check_length(bad), Err(TextIdError::BadCodeLength(bad)));
            assert_eq!(encode(&key(1), bad, 0), Err(TextIdError::BadCodeLength(bad)));
        }
    }

    /// Every code of 4 characters: all distinct, each decoding to its index, each valid; the
    /// one after the last is refused.
    #[test]
    fn exhaustive_on_the_shortest_length() {
        let k = key(3);
        let mut seen = std::collections::HashSet::new();
        for n in 0..capacity(4) {
            let code = encode(&k, 4, n).unwrap();
            assert_eq!(code.len(), 4);
            assert!(is_valid(&code), "{code}");
            assert_eq!(decode(&k, &code).unwrap(), n);
            assert!(seen.insert(code));
        }
        assert_eq!(encode(&k, 4, capacity(4)), Err(TextIdError::NoCodesLeft { length: 4, capacity: 32_768 }));
        assert_eq!(encode(&k, 4, u64::MAX), Err(TextIdError::NoCodesLeft { length: 4, capacity: 32_768 }));
    }

    #[test]
    fn edges_of_every_length() {
        let k = key(4);
        for length in MIN_LENGTH..=MAX_LENGTH {
            let cap = capacity(length as usize);
            for n in [0, 1, cap / 2, cap - 2, cap - 1] {
                let code = encode(&k, length, n).unwrap();
                assert_eq!(code.len() as i64, length);
                assert_eq!(decode(&k, &code).unwrap(), n, "{code}");
                assert_eq!(decode(&k, &code.to_lowercase()).unwrap(), n, "{code}");
            }
            assert!(matches!(encode(&k, length, cap), Err(TextIdError::NoCodesLeft { .. })));
        }
    }

    #[test]
    fn bad_codes_are_named() {
        let code = encode(&key(5), 8, 12_345).unwrap();
        assert!(matches!(decode(&key(5), "ABC"), Err(TextIdError::Length { len: 3, .. })));
        assert!(matches!(decode(&key(5), "ABCDEFGHJKMNPQ"), Err(TextIdError::Length { len: 14, .. })));
        assert!(matches!(decode(&key(5), ""), Err(TextIdError::Length { len: 0, .. })));
        let with_u = format!("{}U", &code[..7]);
        assert!(matches!(decode(&key(5), &with_u), Err(TextIdError::Character { found: 'U', position: 8, .. })));
        let with_dash = format!("{}-{}", &code[..3], &code[3..7]);
        assert!(matches!(decode(&key(5), &with_dash), Err(TextIdError::Character { found: '-', position: 4, .. })));
        assert!(matches!(decode(&key(5), "0000é000"), Err(TextIdError::Character { found: 'é', position: 5, .. })));
        // the same codes as an independent model of the check (a Python one) computed
        assert!(is_valid("000E") && is_valid("abc5") && is_valid("000000000000D"));
        assert!(!is_valid("000F") && !is_valid("0000") && !is_valid("00E"));
        // Crockford's readings: I and L are 1, O is 0
        let read = code.replace('1', "l").replace('0', "O");
        assert_eq!(decode(&key(5), &read).unwrap(), 12_345);
    }

    /// No two tags' codes decode as each other's: under another key a code decodes to another
    /// index (or, rarely, the same one, but not systematically).
    #[test]
    fn keys_give_unrelated_codes() {
        let (a, b) = (key(6), key(7));
        let same = (0..1000u64).filter(|&n| encode(&a, 8, n).unwrap() == encode(&b, 8, n).unwrap()).count();
        assert_eq!(same, 0);
        let n_b: Vec<u64> = (0..1000u64).map(|n| decode(&b, &encode(&a, 8, n).unwrap()).unwrap()).collect();
        assert!(n_b.iter().zip(0..).filter(|(x, n)| **x == *n).count() < 3);
        // nor do a tag's codes of two lengths share their characters
        assert_ne!(&encode(&a, 9, 0).unwrap()[..7], &encode(&a, 8, 0).unwrap()[..7]);
    }

    proptest! {
        #[test]
        fn round_trip_and_every_typo_is_caught(length in MIN_LENGTH..=MAX_LENGTH, n in any::<u64>(), seed in any::<u8>()) {
            let k = key(seed);
            let n = n % capacity(length as usize);
            let code = encode(&k, length, n).unwrap();
            prop_assert_eq!(decode(&k, &code).unwrap(), n);
            let b = code.as_bytes();
            for pos in 0..b.len() {
                for &other in ALPHABET.iter() {
                    if other == b[pos] { continue; }
                    let mut typo = b.to_vec();
                    typo[pos] = other;
                    let typo = String::from_utf8(typo).unwrap();
                    prop_assert!(!is_valid(&typo), "{} accepted for {}", typo, code);
                    prop_assert_eq!(decode(&k, &typo), Err(TextIdError::Check { text: typo.clone() }));
                }
                if pos + 1 < b.len() && b[pos] != b[pos + 1] {
                    let mut swapped = b.to_vec();
                    swapped.swap(pos, pos + 1);
                    let swapped = String::from_utf8(swapped).unwrap();
                    prop_assert!(!is_valid(&swapped), "{} accepted for {}", swapped, code);
                }
            }
        }

        /// Codes of one key and length are distinct for distinct indexes.
        #[test]
        fn distinct_indexes_give_distinct_codes(length in MIN_LENGTH..=MAX_LENGTH, a in any::<u64>(), b in any::<u64>()) {
            let cap = capacity(length as usize);
            let (a, b) = (a % cap, b % cap);
            prop_assume!(a != b);
            prop_assert_ne!(encode(&key(9), length, a).unwrap(), encode(&key(9), length, b).unwrap());
        }
    }
}
