//! A template prepared for one period: its text pieces around the counter, rendered per value
//! without formatting the rest again, and the Luhn digit's plan.

use super::*;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Seq,
    Check,
}

/// A template rendered for one period, up to the counter and the check digit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pieces: Vec<Piece>,
    seq_width: usize,
    /// `{seq:N:b32}`: the counter in base32 (a template with it has no check digit).
    seq_base32: bool,
    pub key: i64,
    /// Luhn: every digit position is fixed within a period, so the static digits' share of
    /// the sum is computed once; per number only the counter's digits are added. `seq_odd`:
    /// the counter's last digit is an odd position from the check digit (doubled).
    check: Option<LuhnPlan>,
    /// `{seq:N:opaque}`: the N-digit domain and the key; the period key is the tweak.
    permute: Option<(Domain, Key)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LuhnPlan {
    static_sum: u32,
    /// Does the counter stand before the check digit (is it part of the sum)?
    seq_in_sum: bool,
    seq_odd: bool,
}

#[inline]
fn luhn_term(d: u32, doubled: bool) -> u32 {
    if doubled {
        let x = d * 2;
        if x > 9 {
            x - 9
        } else {
            x
        }
    } else {
        d
    }
}

impl Prepared {
    pub(super) fn new(
        pieces: Vec<Piece>,
        seq_width: usize,
        seq_base32: bool,
        key: i64,
        permute: Option<(Domain, Key)>,
    ) -> Prepared {
        let check_at = pieces.iter().position(|p| *p == Piece::Check);
        let check = check_at.map(|c| {
            // digits before the check digit, with their distance from it (1 = next to it)
            let mut static_sum = 0;
            let mut distance = 0usize;
            let mut seq_in_sum = false;
            let mut seq_odd = false;
            for p in pieces[..c].iter().rev() {
                match p {
                    Piece::Text(t) => {
                        for d in t.bytes().rev().filter(u8::is_ascii_digit) {
                            distance += 1;
                            static_sum += luhn_term((d - b'0') as u32, distance % 2 == 1);
                        }
                    }
                    Piece::Seq => {
                        seq_in_sum = true;
                        seq_odd = (distance + 1) % 2 == 1;
                        distance += seq_width;
                    }
                    Piece::Check => {}
                }
            }
            LuhnPlan { static_sum, seq_in_sum, seq_odd }
        });
        Prepared { pieces, seq_width, seq_base32, key, check, permute }
    }

    /// Append the number with counter `seq` to `out`.
    #[inline]
    pub fn render_into(&self, seq: u64, out: &mut Vec<u8>) {
        let mut digits = [b'0'; 20];
        let mut v = match &self.permute {
            Some((d, k)) if d.contains(seq) => d.permute(k, self.key as u64, seq),
            _ => seq,
        };
        let mut seq_sum = 0;
        if self.seq_base32 {
            for d in digits[..self.seq_width].iter_mut().rev() {
                *d = BASE32[(v & 31) as usize];
                v >>= 5;
            }
        } else if let Some(plan) = self.check {
            let mut doubled = plan.seq_odd;
            for d in digits[..self.seq_width].iter_mut().rev() {
                let x = (v % 10) as u32;
                *d = b'0' + x as u8;
                seq_sum += luhn_term(x, doubled);
                doubled = !doubled;
                v /= 10;
            }
        } else {
            for d in digits[..self.seq_width].iter_mut().rev() {
                *d = b'0' + (v % 10) as u8;
                v /= 10;
            }
        }
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.extend_from_slice(t.as_bytes()),
                Piece::Seq => out.extend_from_slice(&digits[..self.seq_width]),
                Piece::Check => {
                    let plan = self.check.expect("a check piece has a plan");
                    let sum = plan.static_sum + if plan.seq_in_sum { seq_sum } else { 0 };
                    out.push(b'0' + ((10 - sum % 10) % 10) as u8);
                }
            }
        }
    }

    pub fn max_len(&self) -> usize {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.len(),
                Piece::Seq => self.seq_width,
                Piece::Check => 1,
            })
            .sum()
    }
}
