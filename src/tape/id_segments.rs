//! Which parts of a path name one object rather than a kind of resource, so a route key holds a placeholder
//! there (`/boards/17/cards` is `/boards/{id}/cards`), and a query "name" that is really a value is left out
//! of the key (`?1700000000`).
//!
//! A segment becomes `{id}` when it is a number, a UUID, a hex hash (8+ hex digits with a digit, or 16+), a
//! long token of letters and digits (20+ characters, both present), a number written in groups (12+ digits
//! split by `-` or an encoded space: a card number, or its placeholder), holds an `@` or is a placeholder the
//! import left (`redacted-…`); `{date}` when it is a date (`2026-11-30`, `20261130`).

/// The placeholder a segment stands for, if it names one object rather than a kind of resource.
pub(super) fn placeholder(segment: &str) -> Option<&'static str> {
    let bytes = segment.as_bytes();
    if bytes.is_empty() {
        return None;
    }
    if is_date(segment) {
        return Some("{date}");
    }
    let digits = bytes.iter().filter(|b| b.is_ascii_digit()).count();
    let hex = bytes.iter().all(u8::is_ascii_hexdigit);
    let id = digits == bytes.len()
        || is_uuid(bytes)
        || (hex && (bytes.len() >= 16 || (bytes.len() >= 8 && digits > 0)))
        || (bytes.len() >= 20
            && digits > 0
            && bytes.iter().any(u8::is_ascii_alphabetic)
            && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_')))
        || is_grouped_number(segment)
        || segment.contains('@')
        || segment.contains("%40")
        // What the import's scrubbing left of a token or an address in the path.
        || segment.starts_with("redacted-");
    id.then_some("{id}")
}

/// Digits in groups split by `-` or `%20` (`4111-1111-1111-1111`), 12 of them at least: a date has fewer.
fn is_grouped_number(segment: &str) -> bool {
    let groups = segment.split('-').flat_map(|part| part.split("%20"));
    let mut digits = 0;
    for group in groups {
        if group.is_empty() || !group.bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
        digits += group.len();
    }
    digits >= 12
}

fn is_uuid(bytes: &[u8]) -> bool {
    bytes.len() == 36
        && bytes
            .iter()
            .enumerate()
            .all(|(i, b)| if matches!(i, 8 | 13 | 18 | 23) { *b == b'-' } else { b.is_ascii_hexdigit() })
}

/// `2026-11-30` or `20261130`, with a plausible month and day.
fn is_date(segment: &str) -> bool {
    let bytes = segment.as_bytes();
    let digits: [u8; 8] = match bytes.len() {
        10 if bytes[4] == b'-' && bytes[7] == b'-' => {
            [bytes[0], bytes[1], bytes[2], bytes[3], bytes[5], bytes[6], bytes[8], bytes[9]]
        }
        8 => [bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7]],
        _ => return false,
    };
    if !digits.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let number = |at: usize| (digits[at] - b'0') * 10 + (digits[at + 1] - b'0');
    matches!(number(0), 19 | 20) && (1..=12).contains(&number(4)) && (1..=31).contains(&number(6))
}
