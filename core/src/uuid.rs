//! RFC 9562 version 7 UUIDs with a server-wide counter.
//!
//! The 128 bits, most significant first (PostgreSQL orders `uuid` by its bytes):
//!
//! ```text
//!  48  unix_ts_ms        milliseconds since 1970-01-01 UTC
//!   4  ver = 0b0111
//!  12  counter, high 12 bits      (rand_a)
//!   2  var = 0b10
//!   9  counter, low 9 bits        (start of rand_b)
//!  53  random
//! ```
//!
//! The 21-bit counter is RFC 9562 §6.2 method 1 ("fixed bit-length dedicated counter"): it
//! restarts at 0 in every millisecond, and 2,097,152 values per millisecond (2 billion per
//! second) are more than one server can draw. `(unix_ts_ms, counter)` comes from the same
//! lock-free generator as snowflakes, with the layout [`layout`] (42 bits of milliseconds, no
//! node, 21 bits of counter: the generator's word is the pair, so the pair is strictly
//! increasing across the server), and the timestamp and counter are the leading bits of the
//! UUID, so byte order is generation order whatever the random bits are.

use crate::snowflake::Layout;

/// Bits of the per-millisecond counter.
pub const COUNTER_BITS: u32 = 21;
/// Largest timestamp the generator can issue: 42 bits of milliseconds (until the year 2109).
/// The UUID field itself holds 48 bits; [`floor`] and [`decode`] accept all of them.
pub const GENERATOR_TIME_BITS: u32 = 42;
/// Largest value of the 48-bit timestamp field.
pub const MAX_UNIX_MS: i64 = (1 << 48) - 1;

/// The generator layout for UUIDs: Unix epoch, no node bits, a 21-bit counter. Its "IDs"
/// (`ms << 21 | counter`) are what the persisted reservation stores.
pub fn layout() -> Layout {
    Layout::new(GENERATOR_TIME_BITS as i64, 0, COUNTER_BITS as i64, 0, 0).expect("the UUID layout is valid")
}

/// The UUID for `(unix_ms, counter)`, with `random` filling the low 53 bits.
pub fn compose(unix_ms: i64, counter: u64, random: u64) -> [u8; 16] {
    debug_assert!((0..=MAX_UNIX_MS).contains(&unix_ms));
    debug_assert!(counter < 1 << COUNTER_BITS);
    let ms = unix_ms as u64 & MAX_UNIX_MS as u64;
    let counter = counter & ((1 << COUNTER_BITS) - 1);
    // high 64: ts(48) | ver(4) | counter high 12
    let hi = ms << 16 | 0x7 << 12 | counter >> 9;
    // low 64: var(2) | counter low 9 | random 53
    let lo = 0b10 << 62 | (counter & 0x1ff) << 53 | (random & ((1 << 53) - 1));
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&hi.to_be_bytes());
    b[8..].copy_from_slice(&lo.to_be_bytes());
    b
}

/// The UUID of a generator position `ms << 21 | counter` (what the generator and its
/// reservation count in), with `random` filling the low 53 bits.
#[inline]
pub fn compose_position(position: i64, random: u64) -> [u8; 16] {
    compose(position >> COUNTER_BITS, position as u64 & ((1 << COUNTER_BITS) - 1), random)
}

/// The lowest version 7 UUID of millisecond `unix_ms` (counter and random bits zero): every
/// version 7 UUID of that millisecond or later is at or above it, every one of an earlier
/// millisecond below it. `None` outside the 48-bit field.
pub fn floor(unix_ms: i64) -> Option<[u8; 16]> {
    (0..=MAX_UNIX_MS).contains(&unix_ms).then(|| compose(unix_ms, 0, 0))
}

/// A decoded version 7 UUID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded {
    pub unix_ms: i64,
    /// The counter bits of this layout (for a version 7 UUID from another generator these
    /// bits are whatever it put there).
    pub counter: u64,
}

/// Why a UUID cannot be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("not a version 7 UUID (version {0})")]
    Version(u8),
    #[error("not an RFC 9562 UUID (variant bits {0:#04b})")]
    Variant(u8),
}

/// Timestamp and counter of a version 7 UUID.
pub fn decode(b: &[u8; 16]) -> Result<Decoded, DecodeError> {
    let hi = u64::from_be_bytes(b[..8].try_into().unwrap());
    let lo = u64::from_be_bytes(b[8..].try_into().unwrap());
    let version = (hi >> 12 & 0xf) as u8;
    if version != 7 {
        return Err(DecodeError::Version(version));
    }
    let variant = (lo >> 62) as u8;
    if variant != 0b10 {
        return Err(DecodeError::Variant(variant));
    }
    Ok(Decoded { unix_ms: (hi >> 16) as i64, counter: (hi & 0xfff) << 9 | (lo >> 53 & 0x1ff) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MAX_COUNTER: u64 = (1 << COUNTER_BITS) - 1;

    #[test]
    fn a_position_is_its_millisecond_and_counter() {
        let (ms, counter) = (1_735_689_600_000_i64, 0x1f_ffff_u64);
        let position = ms << COUNTER_BITS | counter as i64;
        assert_eq!(compose_position(position, 7), compose(ms, counter, 7));
        assert_eq!(decode(&compose_position(position, 0)), Ok(Decoded { unix_ms: ms, counter }));
    }

    #[test]
    fn known_value() {
        // 2025-01-01T00:00:00Z = 1735689600000 ms = 0x0194_1F29_7C00
        let u = compose(1_735_689_600_000, 0x1f_ffff, 0);
        assert_eq!(u[..6], [0x01, 0x94, 0x1f, 0x29, 0x7c, 0x00]);
        assert_eq!(u[6], 0x7f); // version 7, counter bits 20..17
        assert_eq!(u[7], 0xff);
        assert_eq!(u[8], 0xbf); // variant 10, counter bits 8..3
        assert_eq!(u[9], 0xe0); // counter bits 2..0, then random
        assert_eq!(&u[10..], &[0; 6]);
        assert_eq!(decode(&u), Ok(Decoded { unix_ms: 1_735_689_600_000, counter: MAX_COUNTER }));
    }

    #[test]
    fn rejects_other_versions_and_variants() {
        let mut u = compose(1, 1, 1);
        u[6] = 0x4f;
        assert_eq!(decode(&u), Err(DecodeError::Version(4)));
        let mut u = compose(1, 1, 1);
        u[8] &= 0x3f;
        assert_eq!(decode(&u), Err(DecodeError::Variant(0)));
    }

    #[test]
    fn floor_bounds() {
        assert_eq!(floor(-1), None);
        assert_eq!(floor(MAX_UNIX_MS + 1), None);
        assert!(floor(MAX_UNIX_MS).is_some());
        assert_eq!(decode(&floor(0).unwrap()), Ok(Decoded { unix_ms: 0, counter: 0 }));
    }

    #[test]
    fn layout_matches_the_uuid_fields() {
        let l = layout();
        assert_eq!(l.max_seq(), MAX_COUNTER);
        assert_eq!(l.epoch_ms, 0);
        // the generator's time range runs past 2100
        assert!(l.max_ts() > 4_102_444_800_000);
        assert!(l.max_ts() <= MAX_UNIX_MS);
    }

    proptest! {
        #[test]
        fn version_variant_and_fields_round_trip(ms in 0..=MAX_UNIX_MS, counter in 0..=MAX_COUNTER, random: u64) {
            let u = compose(ms, counter, random);
            prop_assert_eq!(u[6] >> 4, 7);
            prop_assert_eq!(u[8] >> 6, 0b10);
            prop_assert_eq!(decode(&u), Ok(Decoded { unix_ms: ms, counter }));
            // only the low 53 bits carry randomness
            prop_assert_eq!(u64::from_be_bytes(u[8..].try_into().unwrap()) & ((1 << 53) - 1), random & ((1 << 53) - 1));
        }

        #[test]
        fn byte_order_is_generation_order(
            a in (0..=MAX_UNIX_MS, 0..=MAX_COUNTER, any::<u64>()),
            b in (0..=MAX_UNIX_MS, 0..=MAX_COUNTER, any::<u64>()),
        ) {
            let (ua, ub) = (compose(a.0, a.1, a.2), compose(b.0, b.1, b.2));
            if (a.0, a.1) != (b.0, b.1) {
                prop_assert_eq!(ua.cmp(&ub), (a.0, a.1).cmp(&(b.0, b.1)));
            }
        }

        #[test]
        fn floor_is_the_lowest_of_its_millisecond(ms in 1..MAX_UNIX_MS, counter in 0..=MAX_COUNTER, random: u64) {
            let f = floor(ms).unwrap();
            prop_assert!(compose(ms, counter, random) >= f);
            prop_assert!(compose(ms - 1, counter, random) < f);
            prop_assert!(compose(ms + 1, 0, 0) > compose(ms, counter, random));
        }

        #[test]
        fn generator_ids_map_to_uuids_in_order(x in 0i64..i64::MAX, y in 0i64..i64::MAX) {
            // the generator's "ID" (ms << 21 | counter) orders UUIDs the same way
            let l = layout();
            let split = |id: i64| (id >> COUNTER_BITS, id as u64 & MAX_COUNTER);
            let (ux, uy) = (compose(split(x).0, split(x).1, 0), compose(split(y).0, split(y).1, u64::MAX));
            if x < y { prop_assert!(ux < uy); }
            prop_assert_eq!(l.compose(split(x).0, split(x).1), x);
        }
    }
}
