//! What a scrubbed value becomes: a placeholder made from a keyed hash of the value, with a key drawn for
//! each import and never stored. The same value always gets the same placeholder within an import and two
//! different values practically never share one (64 bits of hash, at least 12 digits for a card number), so
//! a tape keeps production's spread over distinct users, cards and sessions, and replay correlation; nothing
//! in it can be turned back into the value.
//!
//! A placeholder keeps the shape a service validates (an address at `example.invalid`, a `+1555` number, a
//! card number that passes Luhn, an IBAN that passes mod 97) so the replayed request is still accepted, but
//! is plainly not real: the card number starts with `999`, which no card scheme issues, and so is never taken
//! for a card again.

use super::private_values::Private;
use super::value_shapes::{iban_remainder, luhn_digit};

/// Makes placeholders with one import's key.
#[derive(Debug, Clone, Copy)]
pub(super) struct Placeholders {
    key: u64,
}

impl Placeholders {
    /// Placeholders keyed with `key` (drawn at random for each import; never stored).
    pub(super) fn new(key: u64) -> Self {
        Self { key }
    }

    /// The placeholder of `value`, a private value of this `kind`, in that kind's shape.
    pub(super) fn of(self, kind: Private, value: &str) -> String {
        let value = value.trim();
        match kind {
            Private::Email => format!("redacted-{:016x}@example.invalid", self.hash(value)),
            Private::Phone => format!("+1555{:07}", self.hash(value) % 10_000_000),
            // The same card or account however it was written (`4111 1111…`, `4111-1111…`) is the same one.
            Private::Card => card(value, self.hash(&value.replace([' ', '-'], ""))),
            Private::Iban => iban(value, self.hash(&value.replace(' ', ""))),
            Private::Secret => self.generic(value),
        }
    }

    /// The placeholder of any value: `redacted-` and its keyed hash.
    pub(super) fn generic(self, value: &str) -> String {
        format!("redacted-{:016x}", self.hash(value))
    }

    /// FNV-1a over the key and the value, then mixed: the key makes it a one-way function of the value.
    fn hash(self, value: &str) -> u64 {
        let mut h = super::fnv::Fnv::keyed(self.key).add(value.as_bytes()).value();
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd) ^ self.key.rotate_left(17);
        h ^ (h >> 33)
    }
}

/// A card number's placeholder, laid out like it (same length, same separators): `999`, digits of the hash
/// and the Luhn digit.
fn card(value: &str, hash: u64) -> String {
    let count = value.bytes().filter(u8::is_ascii_digit).count();
    let mut digits = vec![9, 9, 9];
    digits.extend(decimal(hash, count.saturating_sub(4)));
    digits.push(luhn_digit(&digits));
    laid_out_like(value, digits.into_iter().map(|d| b'0' + d))
}

/// An IBAN's placeholder, laid out like it: the same country and length, digits of the hash for the account,
/// and the check digits that make it valid.
fn iban(value: &str, hash: u64) -> String {
    let compact: Vec<u8> = value.bytes().filter(|b| *b != b' ').collect();
    let mut out = compact[..2].to_vec();
    out.extend(b"00");
    out.extend(decimal(hash, compact.len().saturating_sub(4)).into_iter().map(|d| b'0' + d));
    // With `00` as check digits, 98 less the remainder makes the number valid mod 97 (ISO 13616).
    let check = 98 - iban_remainder(&out);
    out[2..4].copy_from_slice(format!("{check:02}").as_bytes());
    laid_out_like(value, out.into_iter())
}

/// `count` decimal digits drawn from `hash`.
fn decimal(hash: u64, count: usize) -> Vec<u8> {
    let mut digits = Vec::with_capacity(count + 19);
    let mut state = hash;
    while digits.len() < count {
        digits.extend(format!("{:019}", state % 10_000_000_000_000_000_000).bytes().map(|b| b - b'0'));
        state = state.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(31);
    }
    digits.truncate(count);
    digits
}

/// `value` with its letters and digits replaced, in order, by `characters`; spaces and dashes kept.
fn laid_out_like(value: &str, mut characters: impl Iterator<Item = u8>) -> String {
    value.chars().map(|c| if c.is_ascii_alphanumeric() { characters.next().map_or(c, char::from) } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tape::private_values::classify;

    #[test]
    fn placeholders_keep_the_shape_and_are_never_taken_for_the_real_thing() {
        let placeholders = Placeholders::new(5);
        let card = placeholders.of(Private::Card, "4111 1111 1111 1111");
        assert!(card.starts_with("999") && card.len() == 19 && card.matches(' ').count() == 3, "{card}");
        let digits: Vec<u8> = card.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect();
        assert!(super::super::value_shapes::luhn(&digits), "{card} passes Luhn");
        assert_eq!(classify(&card), None, "no issuer starts with 999: {card}");
        let iban = placeholders.of(Private::Iban, "DE89 3704 0044 0532 0130 00");
        assert!(iban.starts_with("DE") && iban.len() == 27 && iban != "DE89 3704 0044 0532 0130 00", "{iban}");
        assert_eq!(classify(&iban), Some(Private::Iban), "a valid IBAN: {iban}");
        assert!(placeholders.of(Private::Email, "a@b.co").ends_with("@example.invalid"));
        assert_eq!(placeholders.of(Private::Secret, "x"), placeholders.generic("x"));
    }

    #[test]
    fn distinct_values_get_distinct_placeholders_and_equal_ones_equal() {
        let placeholders = Placeholders::new(11);
        let mut seen = std::collections::HashSet::new();
        for i in 0..20_000_u64 {
            let mut digits: Vec<u8> = format!("4{i:014}").bytes().map(|b| b - b'0').collect();
            digits.push(luhn_digit(&digits));
            let card: String = digits.iter().map(|d| char::from(b'0' + d)).collect();
            assert!(seen.insert(placeholders.of(Private::Card, &card)), "{card} shares a placeholder");
            assert_eq!(placeholders.of(Private::Card, &card), placeholders.of(Private::Card, &card));
        }
        assert_ne!(Placeholders::new(1).generic("a"), Placeholders::new(2).generic("a"), "keyed");
        let compact = placeholders.of(Private::Card, "4111111111111111");
        assert_eq!(placeholders.of(Private::Card, "4111-1111-1111-1111").replace('-', ""), compact, "one card");
    }
}
