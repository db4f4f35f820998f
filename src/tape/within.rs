//! Private values inside a longer text: a search query (`mail me at grace@example.test`), prose in a JSON
//! string, a plain-text body (`password=hunter2`), an XML field.
//!
//! Five searches, whose findings are merged (the longest first where two overlap):
//! - a value after a name that marks a secret: `name=value`, `name: value`, `"name": "value"`, `<name>value<`;
//! - each piece of a word between delimiters, checked whole: an email, a card number, an IBAN, a token;
//! - digits in groups split by single spaces, dashes or dots (`4111 1111 1111 1111`), checked as card numbers;
//! - an IBAN printed in groups of four;
//! - a phone number that starts with `+`. Phone numbers without it are found only under a name or as a whole
//!   value: inside text, digits with separators are far more often versions, dates and amounts.

use std::ops::Range;

use super::private_values::{Private, ScrubRules, classify, phones_within};
use super::value_shapes::{is_card, is_card_separator, is_iban};

/// One private value inside a text: where it is, and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Found {
    /// Its bytes in the text.
    pub range: Range<usize>,
    /// What it is.
    pub kind: Private,
}

/// Every private value inside `text`, in order, none overlapping.
pub(super) fn find(text: &str, rules: &ScrubRules) -> Vec<Found> {
    let mut found = Vec::new();
    named_values(text, rules, &mut found);
    pieces(text, &mut found);
    grouped_numbers(text, &mut found);
    grouped_ibans(text, &mut found);
    found.extend(phones_within(text).into_iter().map(|range| Found { range, kind: Private::Phone }));
    found.sort_by_key(|f| (f.range.start, std::cmp::Reverse(f.range.end)));
    let mut kept: Vec<Found> = Vec::with_capacity(found.len());
    for f in found {
        if kept.last().is_none_or(|last| f.range.start >= last.range.end) {
            kept.push(f);
        }
    }
    kept
}

/// Characters of a name before `=`, `:` or `>`.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// Values after a secret name: `password=…`, `token: …`, `"api_key": "…"`, `<password>…</password>`.
fn named_values(text: &str, rules: &ScrubRules, found: &mut Vec<Found>) {
    let bytes = text.as_bytes();
    for (at, &separator) in bytes.iter().enumerate() {
        if !matches!(separator, b'=' | b':' | b'>') || bytes[at + 1..].starts_with(b"//") {
            continue;
        }
        // `name = value` and `"name": value` too.
        let mut name_end = at - bytes[..at].iter().rev().take_while(|b| **b == b' ').count();
        if name_end > 0 && matches!(bytes[name_end - 1], b'"' | b'\'') {
            name_end -= 1;
        }
        let name_start = bytes[..name_end].iter().rposition(|b| !is_name_byte(*b)).map_or(0, |i| i + 1);
        let tag = separator != b'>' || (name_start > 0 && bytes[name_start - 1] == b'<');
        if name_start == name_end || !tag || !rules.is_secret(&text[name_start..name_end]) {
            continue;
        }
        let value = value_after(text, at + 1, separator);
        if value.is_empty() {
            continue;
        }
        let kind = classify(&text[value.clone()]).unwrap_or(Private::Secret);
        found.push(Found { range: value, kind });
    }
}

/// Where the value after a separator at `from - 1` lies: inside quotes if it is quoted, up to `<` in XML,
/// else up to the next space or delimiter; a `Bearer` or `Basic` scheme takes the word after it too.
fn value_after(text: &str, from: usize, separator: u8) -> Range<usize> {
    let bytes = text.as_bytes();
    let mut start = from;
    if separator != b'>' {
        start += bytes[start..].iter().take_while(|b| **b == b' ').count();
    }
    let end_of = |start: usize, stop: &dyn Fn(u8) -> bool| {
        start + bytes[start..].iter().position(|b| stop(*b)).unwrap_or(bytes.len() - start)
    };
    if separator == b'>' {
        return start..end_of(start, &|b| b == b'<' || b == b'\n');
    }
    if let Some(&quote) = bytes.get(start).filter(|b| matches!(b, b'"' | b'\'')) {
        return start + 1..end_of(start + 1, &|b| b == quote || b == b'\n');
    }
    let delimiter = |b: u8| b.is_ascii_whitespace() || b"&;,\"'<>)]}|".contains(&b);
    let end = end_of(start, &delimiter);
    let scheme = text[start..end].to_ascii_lowercase();
    if (scheme == "bearer" || scheme == "basic") && bytes.get(end) == Some(&b' ') {
        return start..end_of(end + 1, &delimiter);
    }
    start..end
}

/// Characters that split a word into pieces checked whole (`to=jane@example.com`, `(card 4111111111111111)`);
/// a backquote too, which quotes a value in messages and Markdown.
fn is_delimiter(c: char) -> bool {
    c.is_whitespace() || "=&;,\"'`<>()[]{}|".contains(c)
}

/// Each word, and each piece of it between delimiters, checked whole; and the word after `Bearer`.
fn pieces(text: &str, found: &mut Vec<Found>) {
    let mut after_bearer = false;
    for (start, word) in spans(text, char::is_whitespace) {
        let (offset, core) = trimmed(word);
        if after_bearer && !core.is_empty() {
            found.push(Found { range: start + offset..start + offset + core.len(), kind: Private::Secret });
        }
        after_bearer = core.eq_ignore_ascii_case("bearer");
        // A URL with a password in it is one word, whose `:` and `@` would split it.
        if let Some(kind) = classify(core).filter(|k| *k != Private::Phone) {
            found.push(Found { range: start + offset..start + offset + core.len(), kind });
            continue;
        }
        for (at, piece) in spans(word, |c| is_delimiter(c) || c == ':') {
            let (offset, core) = trimmed(piece);
            if let Some(kind) = classify(core).filter(|k| *k != Private::Phone) {
                let begin = start + at + offset;
                found.push(Found { range: begin..begin + core.len(), kind });
            }
        }
    }
}

/// The non-empty runs of `text` between characters for which `split` holds, with their byte offsets.
fn spans(text: &str, split: impl Fn(char) -> bool) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = 0;
    std::iter::from_fn(move || {
        let start = rest + text[rest..].find(|c: char| !split(c))?;
        let end = text[start..].find(&split).map_or(text.len(), |i| start + i);
        rest = end;
        Some((start, &text[start..end]))
    })
}

/// A word without the quotes and brackets around it or the punctuation after it, and where it starts.
fn trimmed(word: &str) -> (usize, &str) {
    let core = word.trim_start_matches(|c: char| "\"'([{<".contains(c));
    let offset = word.len() - core.len();
    (offset, core.trim_end_matches(|c: char| "\"')]}>.,;:!?".contains(c)))
}

/// Card numbers printed in groups: runs of digits joined by single separators ([`is_card_separator`]), where
/// some groups in a row hold 13 to 19 digits and pass [`is_card`] (the longest such groups first).
fn grouped_numbers(text: &str, found: &mut Vec<Found>) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() || (i > 0 && bytes[i - 1].is_ascii_alphanumeric()) {
            i += 1;
            continue;
        }
        let mut groups = Vec::new();
        let mut j = i;
        loop {
            let start = j;
            j += bytes[j..].iter().take_while(|b| b.is_ascii_digit()).count();
            groups.push(start..j);
            let separator = text[j..].chars().next().filter(|c| is_card_separator(*c)).map_or(0, char::len_utf8);
            if separator > 0 && bytes.get(j + separator).is_some_and(u8::is_ascii_digit) {
                j += separator;
            } else {
                break;
            }
        }
        let mut a = 0;
        while a < groups.len() {
            let mut ends = Vec::new();
            let mut digits = 0;
            for (b, group) in groups.iter().enumerate().skip(a) {
                digits += group.len();
                if digits > 19 {
                    break;
                }
                ends.push(b);
            }
            match ends.into_iter().rev().find(|&b| is_card(&text[groups[a].start..groups[b].end])) {
                Some(b) => {
                    found.push(Found { range: groups[a].start..groups[b].end, kind: Private::Card });
                    a = b + 1;
                }
                None => a += 1,
            }
        }
        i = j.max(i + 1);
    }
}

/// IBANs printed in groups (`DE89 3704 0044 0532 0130 00`): a country code and check digits, then groups of
/// up to four letters and digits, the longest run that passes [`is_iban`].
fn grouped_ibans(text: &str, found: &mut Vec<Found>) {
    let bytes = text.as_bytes();
    let upper_or_digit = |b: &u8| b.is_ascii_uppercase() || b.is_ascii_digit();
    for start in 0..bytes.len().saturating_sub(5) {
        let head = &bytes[start..start + 4];
        let starts = (start == 0 || !bytes[start - 1].is_ascii_alphanumeric())
            && head[..2].iter().all(u8::is_ascii_uppercase)
            && head[2..].iter().all(u8::is_ascii_digit)
            && bytes[start + 4] == b' ';
        if !starts {
            continue;
        }
        let (mut ends, mut end, mut length) = (Vec::new(), start + 4, 4);
        while bytes.get(end) == Some(&b' ') {
            let group = bytes[end + 1..].iter().take_while(|b| upper_or_digit(b)).count();
            if group == 0 || group > 4 || length + group > 34 {
                break;
            }
            length += group;
            end += 1 + group;
            ends.push(end);
        }
        if let Some(end) = ends.into_iter().rev().find(|&end| is_iban(&text[start..end])) {
            found.push(Found { range: start..end, kind: Private::Iban });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(&str, Private)> {
        find(text, &ScrubRules::default()).into_iter().map(|f| (&text[f.range], f.kind)).collect()
    }

    #[test]
    fn values_after_secret_names_are_found_in_any_notation() {
        assert_eq!(kinds("user=ada&password=hunter2Secret!"), [("hunter2Secret!", Private::Secret)]);
        assert_eq!(kinds("Password: hunter2 and more"), [("hunter2", Private::Secret)]);
        assert_eq!(kinds(r#"{"api_key": "k-123", "n": 1}"#), [("k-123", Private::Secret)]);
        assert_eq!(kinds("aws_secret_access_key = abc/def"), [("abc/def", Private::Secret)]);
        assert_eq!(kinds("<password>correct horse</password>"), [("correct horse", Private::Secret)]);
        assert_eq!(kinds("Authorization: Bearer abc.def"), [("Bearer abc.def", Private::Secret)]);
        assert_eq!(kinds("email=ada@example.org"), [("ada@example.org", Private::Email)]);
        assert_eq!(kinds("see https://example.org/a and note: fine"), []);
    }

    #[test]
    fn shapes_are_found_inside_words_and_across_groups() {
        assert_eq!(kinds("mail me at grace.hopper@example.test."), [("grace.hopper@example.test", Private::Email)]);
        assert_eq!(kinds("to=jane@example.com&x=1"), [("jane@example.com", Private::Email)]);
        assert_eq!(kinds("my card 4111 1111 1111 1111, exp 12/29"), [("4111 1111 1111 1111", Private::Card)]);
        assert_eq!(kinds("order 12 4111-1111-1111-1111"), [("4111-1111-1111-1111", Private::Card)]);
        assert_eq!(kinds("(pan:4111111111111111)"), [("4111111111111111", Private::Card)]);
        assert_eq!(kinds("pay 4111.1111.1111.1111 now."), [("4111.1111.1111.1111", Private::Card)]);
        let spaced = "pay 4111\u{a0}1111\u{a0}1111\u{a0}1111 now";
        assert_eq!(kinds(spaced), [("4111\u{a0}1111\u{a0}1111\u{a0}1111", Private::Card)]);
        assert_eq!(kinds("pay DE89 3704 0044 0532 0130 00 today"), [("DE89 3704 0044 0532 0130 00", Private::Iban)]);
        assert_eq!(kinds("iban DE89370400440532013000"), [("DE89370400440532013000", Private::Iban)]);
        assert_eq!(
            kinds("key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ok"),
            [("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", Private::Secret)]
        );
        assert_eq!(kinds("call +1 415 555 0199 now"), [("+1 415 555 0199", Private::Phone)]);
        assert_eq!(kinds("use Bearer eyJabc now"), [("eyJabc", Private::Secret)]);
    }

    #[test]
    fn ids_dates_hashes_and_versions_are_left_alone() {
        let text = "order 1234567890123 at 2026-11-30 10:00:03 sha da39a3ee5e6b4b0d3255bfef95601890afd80709 \
                    id 550e8400-e29b-41d4-a716-446655440000 v10.0.19041.1234 ts 1700000000000000 total 4 111.11";
        assert_eq!(kinds(text), []);
    }
}
