//! Check digits: the Luhn algorithm (ISO/IEC 7812-1), which detects every single-digit error
//! and most transpositions of adjacent digits.

/// The Luhn check digit for `digits` (most significant first), which the check digit follows.
pub fn luhn_digit(digits: impl DoubleEndedIterator<Item = u8>) -> u8 {
    let mut sum = 0u32;
    // from the right, the digit next to the check digit is doubled, then every other one
    for (i, d) in digits.rev().enumerate() {
        let d = d as u32;
        sum += if i % 2 == 0 {
            let x = d * 2;
            if x > 9 {
                x - 9
            } else {
                x
            }
        } else {
            d
        };
    }
    ((10 - sum % 10) % 10) as u8
}

/// The decimal digits of `text`, in order.
pub fn digits_of(text: &str) -> impl DoubleEndedIterator<Item = u8> + '_ {
    text.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0')
}

/// Is the last digit of `text` the Luhn check digit of the digits before it? Characters other
/// than digits are ignored, so `SN-2024-0001-7` is checked as `2024000 1 7`. Fewer than two
/// digits: `false`.
pub fn luhn_valid(text: &str) -> bool {
    let digits: Vec<u8> = digits_of(text).collect();
    match digits.split_last() {
        Some((&check, rest)) if !rest.is_empty() => luhn_digit(rest.iter().copied()) == check,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_values() {
        // the classic example: 7992739871 -> check digit 3
        assert_eq!(luhn_digit(digits_of("7992739871")), 3);
        assert!(luhn_valid("79927398713"));
        assert!(!luhn_valid("79927398710"));
        assert!(luhn_valid("SN-7992-739871-3"));
        assert!(!luhn_valid("7"));
        assert!(!luhn_valid("no digits"));
    }

    proptest! {
        #[test]
        fn accepts_its_own_digit_and_rejects_every_single_digit_change(digits in proptest::collection::vec(0u8..10, 1..30)) {
            let check = luhn_digit(digits.iter().copied());
            let mut number: Vec<u8> = digits.clone();
            number.push(check);
            let text: String = number.iter().map(|d| (b'0' + d) as char).collect();
            prop_assert!(luhn_valid(&text));
            for pos in 0..number.len() {
                for other in 0..10u8 {
                    if other == number[pos] { continue; }
                    let mut changed = number.clone();
                    changed[pos] = other;
                    let t: String = changed.iter().map(|d| (b'0' + d) as char).collect();
                    prop_assert!(!luhn_valid(&t), "{} accepted", t);
                }
            }
        }
    }
}
