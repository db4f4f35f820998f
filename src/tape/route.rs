//! Routes, not URLs: the metric key of a recorded request is its method and its path with the parts that
//! vary per object replaced by placeholders (`GET /boards/{id}/cards`), so a night's figures are kept per
//! endpoint of the service, not per URL.
//!
//! A path segment becomes `{id}` when it is a number, a UUID, a hex hash (8+ hex digits with a digit, or 16+),
//! a long token of letters and digits (20+ characters, both present), a number written in groups (12+ digits
//! split by `-` or an encoded space: a card number, or its placeholder), holds an `@` or is a placeholder the
//! import left (`redacted-…`); `{date}` when it is a
//! date (`2026-11-30`, `20261130`). User patterns (`/users/{name}`) are tried first, in order: a pattern
//! matches a path with as many segments whose literal segments are equal.

/// A path pattern given by the user: literal segments and placeholders.
#[derive(Debug, Clone)]
struct Pattern {
    text: String,
    /// `None` for a placeholder.
    segments: Vec<Option<String>>,
}

/// Turns request targets into route keys.
#[derive(Debug, Clone, Default)]
pub struct Router {
    patterns: Vec<Pattern>,
}

/// What a route key was made from: the key and the segments that were replaced by placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed<'a> {
    /// `METHOD /path/{id}`.
    pub key: String,
    /// The values of its placeholders, in order (the object a request touched).
    pub ids: Vec<&'a str>,
}

impl Router {
    /// A router trying `patterns` (e.g. `/users/{name}`) before the built-in rules.
    pub fn new(patterns: &[String]) -> Result<Self, String> {
        let patterns = patterns.iter().map(|p| parse_pattern(p)).collect::<Result<_, _>>()?;
        Ok(Self { patterns })
    }

    /// The route of a request: `method` and the path of `target` (its query left out).
    #[must_use]
    pub fn route<'a>(&self, method: &str, target: &'a str) -> Routed<'a> {
        // Read once per request of a tape when its scenario loads, and by the replay: no allocation but the key.
        let end = target.bytes().position(|b| b == b'?' || b == b'#').unwrap_or(target.len());
        let path = &target[..end];
        // Path parameters (`;jsessionid=…`) are not part of the route.
        let segments = path.split('/').skip(1).map(|s| s.find(';').map_or(s, |at| &s[..at]));
        let mut ids = Vec::new();
        if !self.patterns.is_empty() {
            let list: Vec<&str> = segments.clone().collect();
            for pattern in &self.patterns {
                if pattern.segments.len() == list.len()
                    && pattern.segments.iter().zip(&list).all(|(p, s)| p.as_deref().is_none_or(|p| p == *s))
                {
                    ids.extend(pattern.segments.iter().zip(&list).filter(|(p, _)| p.is_none()).map(|(_, s)| *s));
                    return Routed { key: format!("{method} {}", pattern.text), ids };
                }
            }
        }
        let mut key = String::with_capacity(method.len() + path.len() + 8);
        key.push_str(method);
        key.push(' ');
        for segment in segments {
            key.push('/');
            match placeholder(segment) {
                Some(name) => {
                    key.push_str(name);
                    ids.push(segment);
                }
                None => key.push_str(segment),
            }
        }
        if key.len() == method.len() + 1 {
            key.push('/');
        }
        Routed { key, ids }
    }
}

fn parse_pattern(text: &str) -> Result<Pattern, String> {
    let path = text.trim();
    // A pattern names an endpoint, which is shown and stored: no control character either.
    if !path.starts_with('/') || path.contains(['?', '#', ' ']) || path.contains(char::is_control) {
        return Err(format!("`{path}` is not a path pattern; write e.g. `/users/{{name}}`"));
    }
    let segments = path
        .split('/')
        .skip(1)
        .map(|s| {
            if s.starts_with('{') && s.ends_with('}') && s.len() > 2 {
                Ok(None)
            } else if s.contains(['{', '}']) {
                Err(format!("in `{path}`, `{s}`: a placeholder is a whole segment, `{{name}}`"))
            } else {
                Ok(Some(s.to_owned()))
            }
        })
        .collect::<Result<_, _>>()?;
    Ok(Pattern { text: path.to_owned(), segments })
}

/// The placeholder a segment stands for, if it names one object rather than a kind of resource.
fn placeholder(segment: &str) -> Option<&'static str> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key(target: &str) -> String {
        Router::default().route("GET", target).key
    }

    #[test]
    fn ids_hashes_and_dates_become_placeholders() {
        assert_eq!(key("/boards/17/cards?page=2"), "GET /boards/{id}/cards");
        assert_eq!(key("/users/3f2b8c1e-9a4d-4e2b-8f6a-0c1d2e3f4a5b"), "GET /users/{id}");
        assert_eq!(key("/blobs/9f86d081884c7d65"), "GET /blobs/{id}");
        assert_eq!(key("/reports/2026-11-30/daily"), "GET /reports/{date}/daily");
        assert_eq!(key("/reports/20261130"), "GET /reports/{date}");
        assert_eq!(key("/files/Ab3dE6gH9jK2mN5pQ8sT1v"), "GET /files/{id}");
        assert_eq!(key("/"), "GET /");
        assert_eq!(key("/reset/redacted-abe1765f"), "GET /reset/{id}");
        assert_eq!(key("/boards/1;jsessionid=ABC"), "GET /boards/{id}");
        assert_eq!(key("/cards/9994-1600-4712-2636/limits"), "GET /cards/{id}/limits");
        assert_eq!(key("/cards/9994%201600%204712%202636"), "GET /cards/{id}");
        // Words stay: a kind of resource, a version, a short slug.
        assert_eq!(key("/api/v2/boards/"), "GET /api/v2/boards/");
        assert_eq!(key("/posts/how-to-cook"), "GET /posts/how-to-cook");
        assert_eq!(key("/cafe/deadbeef"), "GET /cafe/deadbeef");
    }

    #[test]
    fn user_patterns_win_and_name_their_values() {
        let router = Router::new(&["/users/{name}".to_owned()]).unwrap();
        let routed = router.route("GET", "/users/jane?x=1");
        assert_eq!(routed, Routed { key: "GET /users/{name}".to_owned(), ids: vec!["jane"] });
        assert_eq!(router.route("GET", "/users/jane/cards").key, "GET /users/jane/cards");
        assert_eq!(router.route("DELETE", "/boards/9").ids, ["9"]);
        assert!(Router::new(&["users/{x}".to_owned()]).is_err());
        assert!(Router::new(&["/users/a{x}".to_owned()]).is_err());
    }
}
