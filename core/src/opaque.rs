//! Opaque numbers: a keyed permutation of a range of integers.
//!
//! Counter values are unique; a bijection of them is unique too, but reveals neither their
//! order nor how many there are. The permutation is a Feistel network over the smallest bit
//! width that holds the range (halves of `bits / 2` and `bits - bits / 2` bits, the round
//! functions alternating between them), walked in cycles until the result falls back inside
//! the range (cycle-walking, as in NIST's FF1/FF3 format-preserving encryption). The round
//! function is SipHash-1-3 (a keyed PRF, from the `siphasher` crate) keyed with 256 bits of
//! key and a per-use tweak; 5 rounds for widths of 32 bits and more, 10 for smaller ones.
//!
//! What it is: a secret, keyed shuffle of a range, so neighbouring counter values give
//! unrelated outputs and nobody without the key can tell which output came first or how many
//! were issued. What it is not: encryption of content, or a standardized cipher with a
//! security proof for small domains.

use std::hash::Hasher;

use siphasher::sip::SipHasher13;

/// Length of a key in bytes.
pub const KEY_BYTES: usize = 32;

/// A 256-bit key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Key([u64; 4]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    pub fn from_bytes(bytes: &[u8]) -> Option<Key> {
        if bytes.len() != KEY_BYTES {
            return None;
        }
        let mut k = [0u64; 4];
        for (i, w) in k.iter_mut().enumerate() {
            *w = u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().ok()?);
        }
        Some(Key(k))
    }

    pub fn words(&self) -> [u64; 4] {
        self.0
    }

    pub fn from_words(w: [u64; 4]) -> Key {
        Key(w)
    }

    /// Round function: SipHash-1-3 of the half, keyed by the round's half of the key mixed
    /// with the tweak; the round number is part of the message.
    #[inline]
    fn f(&self, round: u32, tweak: u64, x: u64) -> u64 {
        let (k0, k1) = if round.is_multiple_of(2) { (self.0[0], self.0[1]) } else { (self.0[2], self.0[3]) };
        let mut h = SipHasher13::new_with_keys(k0, k1 ^ tweak);
        // halves have at most 32 bits: the round number sits above them
        h.write_u64(x | ((round as u64 + 1) << 56));
        h.finish()
    }
}

/// A range of integers `[lo, hi]` with its Feistel width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Domain {
    lo: u64,
    hi: u64,
    bits: u32,
}

impl Domain {
    /// `[lo, hi]`, with `hi < 2^64 - 1` and `lo <= hi`; the Feistel width is the bits of `hi`
    /// (at least 2).
    pub fn new(lo: u64, hi: u64) -> Option<Domain> {
        if lo > hi || hi == u64::MAX {
            return None;
        }
        let bits = (64 - hi.leading_zeros()).max(2);
        Some(Domain { lo, hi, bits })
    }

    /// Opaque IDs of a segment tag: above `from` (every value at or below it may have been
    /// issued in the clear before), up to the largest bigint. `None` when less than half of
    /// the 63-bit range is left (cycle-walking would get slow).
    pub fn ids_above(from: i64) -> Option<Domain> {
        Domain::counters_above(from, 0)
    }

    /// Opaque counter values of a node-interleaved tag with `node_bits` node bits (an ID is
    /// `permuted counter << node_bits | node`): above `from`, up to `i64::MAX >> node_bits`.
    /// `None` when less than half of that range is left, or for more than 16 node bits.
    pub fn counters_above(from: i64, node_bits: u32) -> Option<Domain> {
        if node_bits > 16 || !(0..=(1i64 << (62 - node_bits))).contains(&from) {
            return None;
        }
        Domain::new(from as u64 + 1, (i64::MAX >> node_bits) as u64)
    }

    /// Where the opaque counter values of a node-interleaved tag start on Citus: the upper
    /// half of its counter range, the same on every node, so that any node can take an ID of
    /// any other apart (each node's values at or below it may have been issued in the clear).
    pub fn citus_opaque_from(node_bits: u32) -> i64 {
        1i64 << (62 - node_bits.min(16))
    }

    /// The N-digit counter values of an order-number template: 1 to 10^N - 1.
    pub fn digits(n: u32) -> Option<Domain> {
        if !(1..=18).contains(&n) {
            return None;
        }
        Domain::new(1, 10u64.pow(n) - 1)
    }

    pub fn contains(&self, x: u64) -> bool {
        (self.lo..=self.hi).contains(&x)
    }

    /// 5 rounds for domains of 32 bits and more (a 5-round Feistel network with PRF round
    /// functions resists adaptive chosen-plaintext attacks well beyond the 4-round
    /// Luby-Rackoff bound; here an observer can neither choose nor see the inputs); 10, as
    /// NIST FF1, for smaller domains, where each round mixes fewer bits.
    fn rounds(&self) -> u32 {
        if self.bits >= 32 {
            5
        } else {
            10
        }
    }

    #[inline]
    fn feistel(&self, key: &Key, tweak: u64, x: u64) -> u64 {
        let lb = self.bits / 2;
        let rb = self.bits - lb;
        let (lm, rm) = ((1u64 << lb) - 1, (1u64 << rb) - 1);
        let (mut l, mut r) = (x >> rb, x & rm);
        for i in 0..self.rounds() {
            if i % 2 == 0 {
                l = (l ^ key.f(i, tweak, r)) & lm;
            } else {
                r = (r ^ key.f(i, tweak, l)) & rm;
            }
        }
        (l << rb) | r
    }

    #[inline]
    fn feistel_inverse(&self, key: &Key, tweak: u64, y: u64) -> u64 {
        let lb = self.bits / 2;
        let rb = self.bits - lb;
        let (lm, rm) = ((1u64 << lb) - 1, (1u64 << rb) - 1);
        let (mut l, mut r) = (y >> rb, y & rm);
        for i in (0..self.rounds()).rev() {
            if i % 2 == 0 {
                l = (l ^ key.f(i, tweak, r)) & lm;
            } else {
                r = (r ^ key.f(i, tweak, l)) & rm;
            }
        }
        (l << rb) | r
    }

    /// The image of `x` (which must lie in the domain) under the permutation.
    #[inline]
    pub fn permute(&self, key: &Key, tweak: u64, x: u64) -> u64 {
        debug_assert!(self.contains(x));
        let mut y = self.feistel(key, tweak, x);
        while !self.contains(y) {
            y = self.feistel(key, tweak, y);
        }
        y
    }

    /// The inverse: `unpermute(permute(x)) == x`.
    pub fn unpermute(&self, key: &Key, tweak: u64, y: u64) -> u64 {
        debug_assert!(self.contains(y));
        let mut x = self.feistel_inverse(key, tweak, y);
        while !self.contains(x) {
            x = self.feistel_inverse(key, tweak, x);
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(seed: u8) -> Key {
        let bytes: Vec<u8> = (0..32).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect();
        Key::from_bytes(&bytes).unwrap()
    }

    /// Every value of a 16-bit domain maps to a distinct value of the domain, and back.
    #[test]
    fn exhaustive_bijection_on_16_bits() {
        let d = Domain::new(0, 65_535).unwrap();
        let k = key(1);
        let mut seen = vec![false; 65_536];
        for x in 0..=65_535u64 {
            let y = d.permute(&k, 0, x);
            assert!(d.contains(y));
            assert!(!seen[y as usize], "{y} reached twice");
            seen[y as usize] = true;
            assert_eq!(d.unpermute(&k, 0, y), x);
        }
    }

    /// Every value of a 4-digit domain (cycle-walking inside 14 bits), for several tweaks.
    #[test]
    fn exhaustive_bijection_on_4_digits() {
        let d = Domain::digits(4).unwrap();
        let k = key(2);
        for tweak in [0, 1, 1_795_392_000] {
            let mut seen = vec![false; 10_000];
            for x in 1..=9_999u64 {
                let y = d.permute(&k, tweak, x);
                assert!((1..=9_999).contains(&y), "{y} outside the domain");
                assert!(!seen[y as usize], "{y} reached twice");
                seen[y as usize] = true;
                assert_eq!(d.unpermute(&k, tweak, y), x);
            }
        }
    }

    #[test]
    fn single_digit_and_odd_widths() {
        for n in 1..=18 {
            let d = Domain::digits(n).unwrap();
            let k = key(n as u8);
            for x in [1, 2, 3, 10u64.pow(n) - 1, (10u64.pow(n) - 1) / 2 + 1] {
                let y = d.permute(&k, 7, x);
                assert!(d.contains(y));
                assert_eq!(d.unpermute(&k, 7, y), x);
            }
        }
        let d = Domain::digits(1).unwrap();
        let mut img: Vec<u64> = (1..=9).map(|x| d.permute(&key(9), 0, x)).collect();
        img.sort_unstable();
        assert_eq!(img, (1..=9).collect::<Vec<_>>());
    }

    /// Among 100,000 consecutive counter values, about half of adjacent outputs decrease, and
    /// no output equals its input more often than chance.
    #[test]
    fn consecutive_values_look_shuffled() {
        let d = Domain::ids_above(0).unwrap();
        let k = key(3);
        let out: Vec<u64> = (1..=100_000u64).map(|x| d.permute(&k, 0, x)).collect();
        let decreasing = out.windows(2).filter(|w| w[1] < w[0]).count();
        let share = decreasing as f64 / (out.len() - 1) as f64;
        // binomial(99,999, 0.5): standard deviation 0.0016; 0.49..0.51 is over 6 of them
        assert!((0.49..=0.51).contains(&share), "{share} of adjacent pairs decrease");
        let fixed = (1..=100_000u64).zip(&out).filter(|(x, y)| x == *y).count();
        assert_eq!(fixed, 0, "fixed points in a 63-bit domain");
        // in a 4-digit domain the expected number of fixed points is about 1
        let d4 = Domain::digits(4).unwrap();
        let fixed4 = (1..=9_999u64).filter(|&x| d4.permute(&k, 0, x) == x).count();
        assert!(fixed4 <= 8, "{fixed4} fixed points among 9,999");
        // and the outputs spread over the whole range
        let top_half = out.iter().filter(|&&y| y > (1 << 62)).count();
        assert!((49_000..=51_000).contains(&top_half), "{top_half} outputs in the upper half");
    }

    #[test]
    fn keys_and_tweaks_change_the_permutation() {
        let d = Domain::digits(6).unwrap();
        let same = (1..=1000u64).filter(|&x| d.permute(&key(4), 0, x) == d.permute(&key(5), 0, x)).count();
        assert!(same < 10, "two keys agree on {same} of 1000 values");
        let same = (1..=1000u64).filter(|&x| d.permute(&key(4), 1, x) == d.permute(&key(4), 2, x)).count();
        assert!(same < 10, "two tweaks agree on {same} of 1000 values");
    }

    #[test]
    fn ids_domain_bounds() {
        assert!(Domain::ids_above(0).is_some());
        assert!(Domain::ids_above(1 << 62).is_some());
        assert!(Domain::ids_above((1 << 62) + 1).is_none());
        assert!(Domain::ids_above(-1).is_none());
        let d = Domain::ids_above(1000).unwrap();
        assert!(!d.contains(1000) && d.contains(1001) && d.contains(i64::MAX as u64));
        // interleaved counters: the permuted counter still fits its place below the node bits
        let from = Domain::citus_opaque_from(8);
        let d = Domain::counters_above(from, 8).unwrap();
        assert!(!d.contains(from as u64) && d.contains(from as u64 + 1));
        assert!(d.contains((i64::MAX >> 8) as u64) && !d.contains((i64::MAX >> 8) as u64 + 1));
        assert!(Domain::counters_above(from + 1, 8).is_none());
        assert!(Domain::counters_above(0, 17).is_none());
        assert!(Key::from_bytes(&[0u8; 31]).is_none());
    }

    proptest! {
        /// An opaque interleaved ID keeps its node in the low bits and stays a positive bigint,
        /// and the permuted counter comes back.
        #[test]
        fn interleaved_opaque_ids_round_trip(bits in 1u32..=16, node_frac in 0.0f64..1.0, c_frac in 0.0f64..1.0, seed in any::<u8>()) {
            let from = Domain::citus_opaque_from(bits);
            let d = Domain::counters_above(from, bits).unwrap();
            let top = i64::MAX >> bits;
            let c = from + 1 + ((top - from - 1) as f64 * c_frac) as i64;
            let node = (((1u64 << bits) - 1) as f64 * node_frac) as u32;
            let k = key(seed);
            let p = d.permute(&k, 0, c as u64) as i64;
            let id = crate::adaptive::interleave(p, bits, node);
            prop_assert!(id > 0);
            let (back, n) = crate::adaptive::split(id, bits);
            prop_assert_eq!(n, node);
            prop_assert!(back > from);
            prop_assert_eq!(d.unpermute(&k, 0, back as u64) as i64, c);
        }

        #[test]
        fn permute_then_unpermute(lo in 0u64..1_000_000, width in 1u64..(1u64 << 40), x_frac in 0.0f64..1.0, tweak in any::<u64>(), seed in any::<u8>()) {
            let d = Domain::new(lo, lo + width).unwrap();
            let x = lo + (x_frac * width as f64) as u64;
            let k = key(seed);
            let y = d.permute(&k, tweak, x);
            prop_assert!(d.contains(y));
            prop_assert_eq!(d.unpermute(&k, tweak, y), x);
        }
    }
}
