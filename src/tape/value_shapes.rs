//! Secrets known by their shape and a check, whatever they are called: payment card numbers (Luhn), IBANs
//! (mod 97) and cloud secret keys (their length, alphabet and randomness).
//!
//! Each rule is narrow on purpose: a tape must keep the ids, timestamps, UUIDs and content hashes a service
//! routes on, so a value is taken for a secret only when its check passes and its shape is one an issuer
//! gives out, never for being long or numeric alone.

/// Payment card numbers: the issuer prefixes of the card schemes, with the lengths each issues. A Luhn check
/// alone passes one random number in ten; tied to a prefix and its lengths it leaves ordinary ids alone:
/// millisecond to nanosecond timestamps and snowflake ids start with 1, which no scheme uses.
const CARD_RANGES: &[(u32, u32, &[usize])] = &[
    (4, 4, &[13, 16, 19]),                       // Visa
    (51, 55, &[16]),                             // Mastercard
    (2221, 2720, &[16]),                         // Mastercard's 2-series
    (34, 34, &[15]),                             // American Express
    (37, 37, &[15]),                             // American Express
    (6011, 6011, &[16, 17, 18, 19]),             // Discover
    (644, 649, &[16, 17, 18, 19]),               // Discover
    (65, 65, &[16, 17, 18, 19]),                 // Discover
    (3528, 3589, &[16, 17, 18, 19]),             // JCB
    (36, 36, &[14, 15, 16, 17, 18, 19]),         // Diners Club
    (300, 305, &[14, 16, 17, 18, 19]),           // Diners Club
    (38, 39, &[16, 17, 18, 19]),                 // Diners Club
    (62, 62, &[16, 17, 18, 19]),                 // UnionPay
    (2200, 2204, &[16, 17, 18, 19]),             // Mir
    (50, 50, &[13, 14, 15, 16, 17, 18, 19]),     // Maestro
    (56, 58, &[13, 14, 15, 16, 17, 18, 19]),     // Maestro
    (6304, 6304, &[13, 14, 15, 16, 17, 18, 19]), // Maestro
    (67, 67, &[13, 14, 15, 16, 17, 18, 19]),     // Maestro
];

/// Whether `c` splits a card number's groups as people write them: a space, a dash, a dot, or the no-break,
/// narrow no-break and thin spaces word processors and pay pages put there.
pub(super) const fn is_card_separator(c: char) -> bool {
    matches!(c, ' ' | '-' | '.' | '\u{a0}' | '\u{202f}' | '\u{2009}')
}

/// A card number written as one: 13 to 19 digits, alone or in groups split by single separators
/// (`4111 1111 1111 1111`, `4111-1111-1111-1111`, `4111.1111.1111.1111`; [`is_card_separator`]), with an
/// issuer's prefix and length and a valid Luhn digit.
pub(super) fn is_card(text: &str) -> bool {
    // Every path segment and query value is asked: the cheap refusals come first (six separators of up to
    // three bytes at most between the digits; counted below).
    if !(13..=19 + 6 * 3).contains(&text.len()) || !text.as_bytes()[0].is_ascii_digit() {
        return false;
    }
    let mut digits = [0_u8; 19];
    let (mut count, mut after_separator, mut dotted) = (0, false, false);
    let mut groups: Vec<usize> = vec![0];
    for c in text.chars() {
        if c.is_ascii_digit() {
            if count == digits.len() {
                return false;
            }
            digits[count] = c as u8 - b'0';
            count += 1;
            after_separator = false;
            *groups.last_mut().expect("one group at least") += 1;
        } else if is_card_separator(c) && !after_separator && groups.len() <= MAX_CARD_SEPARATORS {
            after_separator = true;
            dotted |= c == '.';
            groups.push(0);
        } else {
            return false;
        }
    }
    let grouped = !dotted || card_groups(&groups);
    !after_separator && grouped && issued(&digits[..count]) && luhn(&digits[..count])
}

/// The most separators a card number is written with (`4111 1111 1111 1111 111` has four).
const MAX_CARD_SEPARATORS: usize = 6;

/// Whether digit groups are a card's as printed: fours (the last of one to four digits: 16 as 4-4-4-4, 19 as
/// 4-4-4-4-3), or American Express's and Diners Club's 4-6-5 and 4-6-4. A dot also ends a decimal's integer
/// part, and `5.428571428571429` passes Luhn with a Mastercard prefix: dotted, only a card's grouping counts.
fn card_groups(groups: &[usize]) -> bool {
    let fours = groups.len() >= 4
        && groups[..groups.len() - 1].iter().all(|g| *g == 4)
        && (1..=4).contains(&groups[groups.len() - 1]);
    fours || groups == [4, 6, 5] || groups == [4, 6, 4]
}

/// Whether a scheme issues numbers of this prefix and length.
fn issued(digits: &[u8]) -> bool {
    CARD_RANGES.iter().any(|&(low, high, lengths)| {
        let width = low.checked_ilog10().map_or(1, |log| log as usize + 1);
        let prefix = digits.iter().take(width).fold(0_u32, |n, d| n * 10 + u32::from(*d));
        lengths.contains(&digits.len()) && (low..=high).contains(&prefix)
    })
}

/// The Luhn check: from the right, every second digit doubled (less 9 past 9); the sum ends in 0.
pub(super) fn luhn(digits: &[u8]) -> bool {
    luhn_sum(digits.iter().rev().copied(), false) % 10 == 0
}

/// The Luhn sum of `digits`, read from the right; `double_first` when the first of them is doubled.
fn luhn_sum(digits: impl Iterator<Item = u8>, double_first: bool) -> u32 {
    digits
        .enumerate()
        .map(|(i, d)| {
            let d = u32::from(d);
            if (i % 2 == 0) == double_first { if d * 2 > 9 { d * 2 - 9 } else { d * 2 } } else { d }
        })
        .sum()
}

/// The digit that makes `digits` followed by it pass the Luhn check.
pub(super) fn luhn_digit(digits: &[u8]) -> u8 {
    let sum = luhn_sum(digits.iter().rev().copied(), true);
    u8::try_from((10 - sum % 10) % 10).unwrap_or(0)
}

/// IBAN lengths by country (the SWIFT registry). A country's exact length, on top of the mod-97 check,
/// leaves about one in ten thousand upper-case ids of the right start and length taken for an IBAN.
const IBAN_LENGTHS: &str = "\
    AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BI27 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 DJ27 DK18 DO28 \
    EE20 EG29 ES24 FI18 FK18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HR21 HU28 IE22 IL23 IQ23 IS26 IT27 \
    JO30 KW30 KZ20 LB28 LC32 LI21 LT20 LU20 LV21 LY25 MC27 MD24 ME22 MK19 MN20 MR27 MT31 MU30 NI28 NL18 \
    NO15 OM23 PK24 PL28 PS29 PT25 QA29 RO24 RS22 RU33 SA24 SC31 SD18 SE24 SI19 SK24 SM27 SO23 ST25 SV28 \
    TL23 TN24 TR26 UA29 VA22 VG24 XK20 YE30";

/// An IBAN, compact or printed in groups of four (`DE89 3704 0044 0532 0130 00`): a country's code, two
/// check digits, then upper-case letters and digits to the country's length, and the whole valid mod 97.
pub(super) fn is_iban(text: &str) -> bool {
    let bytes = text.as_bytes();
    let plausible = (15..=34 + 8).contains(&bytes.len())
        && bytes[..2].iter().all(u8::is_ascii_uppercase)
        && bytes[2..4].iter().all(u8::is_ascii_digit);
    if !plausible || text.contains("  ") || text.ends_with(' ') {
        return false;
    }
    let compact: Vec<u8> = bytes.iter().copied().filter(|b| *b != b' ').collect();
    let shaped = compact[..2].iter().all(u8::is_ascii_uppercase)
        && compact[2..4].iter().all(u8::is_ascii_digit)
        && compact[4..].iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
    let country = std::str::from_utf8(&compact[..2]).unwrap_or_default();
    shaped
        && IBAN_LENGTHS.split(' ').any(|entry| entry[..2] == *country && entry[2..].parse() == Ok(compact.len()))
        && iban_remainder(&compact) == 1
}

/// The IBAN's number mod 97: its first four characters moved to the end, each letter read as 10 to 35.
pub(super) fn iban_remainder(compact: &[u8]) -> u32 {
    let rotated = compact[4..].iter().chain(&compact[..4]);
    rotated.fold(0_u32, |rest, &b| {
        let value = if b.is_ascii_digit() { u32::from(b - b'0') } else { u32::from(b - b'A') + 10 };
        if value >= 10 { (rest * 100 + value) % 97 } else { (rest * 10 + value) % 97 }
    })
}

/// Secret keys known by length and randomness: `(length, padding it ends with, least entropy in bits per
/// character)`. An AWS secret access key is 40 characters of base64; an Azure storage key 88 ending `==`.
/// The bounds sit below 99.9 % of random keys of that length (measured on 100,000 of each) and above
/// camel-case names and base64-encoded English of the same length, which score 4.1 to 4.3 at 40.
const RANDOM_KEYS: &[(usize, &str, f64)] = &[(40, "", 4.35), (88, "==", 5.0)];

/// A secret key of a known length: base64 characters with upper case, lower case and digits all present (a
/// hex SHA-1 has no upper case, so content hashes used as ids stay), and the randomness of a drawn key.
pub(super) fn is_random_key(text: &str) -> bool {
    RANDOM_KEYS.iter().any(|&(length, padding, least)| {
        let Some(body) = text.strip_suffix(padding).filter(|_| text.len() == length) else { return false };
        body.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'/' || b == b'+')
            && body.bytes().any(|b| b.is_ascii_uppercase())
            && body.bytes().any(|b| b.is_ascii_lowercase())
            && body.bytes().any(|b| b.is_ascii_digit())
            && entropy(body) >= least
    })
}

/// Shannon entropy of `text`'s bytes, in bits per byte.
fn entropy(text: &str) -> f64 {
    let mut counts = [0_u32; 256];
    for b in text.bytes() {
        counts[usize::from(b)] += 1;
    }
    let total = text.len() as f64;
    counts.iter().filter(|&&n| n > 0).map(|&n| f64::from(n) / total).map(|p| -p * p.log2()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_numbers_pass_luhn_with_an_issuers_prefix_and_ids_do_not() {
        for card in ["4111111111111111", "4111 1111 1111 1111", "4111-1111-1111-1111", "5500005555555559"] {
            assert!(is_card(card), "{card}");
        }
        // Dots, and the no-break and thin spaces a pay page or a word processor writes.
        for card in ["4111.1111.1111.1111", "4111\u{a0}1111\u{a0}1111\u{a0}1111", "4111\u{2009}1111\u{202f}1111 1111"] {
            assert!(is_card(card), "{card}");
        }
        for card in ["378282246310005", "6011111111111117", "3530111333300000", "4222222222222"] {
            assert!(is_card(card), "{card}");
        }
        // A wrong check digit, no issuer's prefix (timestamps, snowflake ids), a wrong length for the prefix.
        for id in ["4111111111111112", "1700000000000000", "1234567812345670", "411111111111111", "12345"] {
            assert!(!is_card(id), "{id}");
        }
        assert!(!is_card("4111  1111 1111 1111") && !is_card("-4111111111111111"));
        assert!(!is_card("4111..1111.1111.1111") && !is_card("4111.1111.1111.1111.") && !is_card("4111111111111111.0"));
        // Decimals that pass Luhn with an issuer's prefix are no cards: a dot counts only in a card's grouping.
        for decimal in ["5.428571428571429", "6.571428571428571", "45.12345678901234", "4.2.1.0.3.7.1.2.4.0.5.5.1"] {
            assert!(!is_card(decimal), "{decimal}");
        }
        assert!(is_card("3782.822463.10005"), "American Express, dotted 4-6-5");
        let digits = [4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1];
        assert_eq!(luhn_digit(&digits), 1);
    }

    #[test]
    fn ibans_pass_mod_97_at_their_countrys_length() {
        for iban in
            ["DE89370400440532013000", "GB29NWBK60161331926819", "DE89 3704 0044 0532 0130 00", "NO9386011117947"]
        {
            assert!(is_iban(iban), "{iban}");
        }
        for not in
            ["DE89370400440532013001", "DE8937040044053201300", "XX89370400440532013000", "de89370400440532013000"]
        {
            assert!(!is_iban(not), "{not}");
        }
    }

    #[test]
    fn random_keys_are_told_from_hashes_and_names() {
        assert!(is_random_key("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"));
        assert!(is_random_key("kQ3mZ8pX2vR7nT4wY9bC1dF6gH0jL5sA+eU/iO3x"));
        let azure =
            format!("{}==", "o48hY8HRMD7cb9BUyhE639E53qEdUiXqJfPC1ujAgzKliSzQo4Z30jp79elMvMv56c4tcZsWIZD7ZQ20VppG2A");
        assert!(is_random_key(&azure), "{azure}");
        for not in [
            "da39a3ee5e6b4b0d3255bfef95601890afd80709",
            "ThisIsAVeryLongCamelCaseIdentifierName42",
            "aGVsbG8gd29ybGQgdGhpcyBpcyBhIHRlc3Qgb2Yg",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKE",
        ] {
            assert!(!is_random_key(not), "{not}");
        }
    }
}
