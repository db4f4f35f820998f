//! What is private: the names that mark a secret or personal value (the built-in list with the session
//! cookies of the common frameworks, plus and minus the user's), what such a value looks like wherever it
//! appears (an email address, a phone number, a JWT, a known token; card numbers, IBANs and random keys are
//! in [`super::value_shapes`]), and the percent-encoding of the query strings and form bodies they hide in.

use base64::Engine as _;

use super::value_shapes::{is_card, is_iban, is_random_key};

/// Names (lowercase, `-`, `_` and `.` removed) that mark a secret or personal value wherever they appear in
/// a longer name (`csrf_token`, `user_email`).
const SECRET_PARTS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "privatekey",
    "session",
    "email",
    "phone",
    "mobile",
    "signature",
    "creditcard",
    "cardnumber",
    "authorization",
    "credential",
];

/// Short names that mark one only when they are the whole name (`key`, but not `monkey`).
const SECRET_NAMES: &[&str] = &[
    "pwd", "pass", "sid", "sig", "key", "auth", "ssn", "cvv", "cvc", "otp", "pin", "tel", "iban", "mail", "jwt",
    "csrf", "xsrf", "code", "pan",
];

/// Session ids of the common frameworks, by the name their cookie or parameter has (normalized like the
/// rest): PHP's `PHPSESSID`, ColdFusion's `CFID`/`CFTOKEN`, Express's `connect.sid`, Sails' `sails.sid`.
/// Java's `JSESSIONID`, ASP.NET's `ASP.NET_SessionId`, Rails' `_myapp_session` and Laravel's
/// `laravel_session` hold `session` and are found by [`SECRET_PARTS`].
const SESSION_NAMES: &[&str] = &["phpsessid", "sessid", "cfid", "cftoken", "connectsid", "sailssid", "koasess"];

/// Which names are scrubbed: the built-in list, plus and minus the user's.
#[derive(Debug, Clone, Default)]
pub struct ScrubRules {
    extra: Vec<String>,
    keep: Vec<String>,
}

impl ScrubRules {
    /// The built-in list with `extra` names added and `keep` names exempted.
    #[must_use]
    pub fn new(extra: &[String], keep: &[String]) -> Self {
        Self { extra: extra.iter().map(|n| normalize(n)).collect(), keep: keep.iter().map(|n| normalize(n)).collect() }
    }

    /// Whether a header, parameter or field called `name` holds something to scrub.
    #[must_use]
    pub fn is_secret(&self, name: &str) -> bool {
        let name = normalize(name);
        if self.keep.contains(&name) {
            return false;
        }
        SECRET_NAMES.contains(&name.as_str())
            || SESSION_NAMES.contains(&name.as_str())
            || SECRET_PARTS.iter().any(|part| name.contains(part))
            || self.extra.iter().any(|extra| name == *extra || (extra.len() >= 5 && name.contains(extra.as_str())))
    }
}

fn normalize(name: &str) -> String {
    name.chars().filter(|c| !matches!(c, '-' | '_' | '.' | ':')).flat_map(char::to_lowercase).collect()
}

/// What a private value is, by its look alone: each kind has a placeholder of its own shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Private {
    /// An email address.
    Email,
    /// A phone number.
    Phone,
    /// A payment card number.
    Card,
    /// An IBAN.
    Iban,
    /// A token, key or credential: a JWT, a known prefix, a random key, a bearer token, a URL's password.
    Secret,
}

/// What `text` (trimmed) is as a whole, if it is private.
pub(super) fn classify(text: &str) -> Option<Private> {
    let text = text.trim();
    if is_email(text) {
        Some(Private::Email)
    } else if is_card(text) {
        // Before phones: a card printed in groups would also pass for a phone number written with separators.
        Some(Private::Card)
    } else if is_phone(text) {
        Some(Private::Phone)
    } else if is_iban(text) {
        Some(Private::Iban)
    } else if is_jwt(text) || is_known_token(text) || is_random_key(text) || is_bearer(text) || has_userinfo(text) {
        Some(Private::Secret)
    } else {
        None
    }
}

/// An `Authorization` value quoted whole: `Bearer …`, or `Basic` and the base64 of `user:password` (a
/// `Basic plan` is no credential).
fn is_bearer(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(' ') else { return false };
    let rest = rest.trim();
    if scheme.eq_ignore_ascii_case("bearer") {
        !rest.is_empty()
    } else {
        scheme.eq_ignore_ascii_case("basic")
            && base64::engine::general_purpose::STANDARD.decode(rest).is_ok_and(|pair| pair.contains(&b':'))
    }
}

pub(super) fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else { return false };
    !local.is_empty()
        && local.chars().all(|c| c.is_alphanumeric() || "._%+-".contains(c))
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && domain.chars().all(|c| c.is_alphanumeric() || c == '.' || c == '-')
}

/// A phone number written as one: 9 to 15 digits, with a leading `+` or separators (a bare run of digits is
/// far more often an id, which must stay).
pub(super) fn is_phone(text: &str) -> bool {
    // An IPv4 address has dots and 4 to 12 digits too.
    if text.split('.').count() == 4 && text.split('.').all(|part| part.parse::<u8>().is_ok()) {
        return false;
    }
    let digits = text.chars().filter(char::is_ascii_digit).count();
    let separators = text.chars().filter(|c| matches!(c, ' ' | '-' | '(' | ')' | '.')).count();
    (9..=15).contains(&digits)
        && text.chars().all(|c| c.is_ascii_digit() || matches!(c, '+' | ' ' | '-' | '(' | ')' | '.'))
        && (text.starts_with('+')
            || (separators >= 2 && text.chars().next().is_some_and(|c| c == '(' || c.is_ascii_digit())))
}

/// A credential by its well-known prefix: cloud and payment keys, source-host and chat tokens (their
/// issuers give them prefixes precisely so that they can be found in logs).
pub(super) fn is_known_token(text: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "sk_live_",
        "sk_test_",
        "rk_live_",
        "pk_live_",
        "ghp_",
        "gho_",
        "ghs_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "xoxp-",
        "xoxa-",
        "AIza",
        "ya29.",
        "SG.",
        "AKIA",
        "ASIA",
    ];
    text.len() >= 16 && !text.contains(char::is_whitespace) && PREFIXES.iter().any(|prefix| text.starts_with(prefix))
}

/// A URL carrying a user name and password (`https://user:secret@host/`).
pub(super) fn has_userinfo(text: &str) -> bool {
    text.split_once("://").is_some_and(|(_, rest)| {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        authority.contains('@')
    })
}

/// Phone numbers written inside prose (`call me at +1 415 555 0199`): a `+` and then digits, spaces and
/// dashes holding 9 to 15 digits. Their byte ranges in `text`.
pub(super) fn phones_within(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    while let Some(at) = text[start..].find('+').map(|i| start + i) {
        let mut end = at + 1;
        while end < bytes.len() && (bytes[end].is_ascii_digit() || matches!(bytes[end], b' ' | b'-' | b'(' | b')')) {
            end += 1;
        }
        let candidate = text[at..end].trim_end_matches([' ', '-', '(']);
        let digits = candidate.bytes().filter(u8::is_ascii_digit).count();
        if (9..=15).contains(&digits) {
            found.push(at..at + candidate.len());
        }
        start = end.max(at + 1);
    }
    found
}

/// Recorded text quoted in a message: on one line, cut short, safe for a terminal, and without its query
/// string — a malformed line is quoted before it is scrubbed, and a query is where tokens travel.
pub(super) fn excerpt(text: &str) -> String {
    let text = text.find('?').map_or_else(|| text.to_owned(), |at| format!("{}?…", &text[..at]));
    crate::outside_text::clipped(&text.replace(['\n', '\r'], " "), 60)
}

pub(super) fn is_jwt(text: &str) -> bool {
    text.starts_with("eyJ")
        && text.split('.').count() == 3
        && text.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '='))
}

/// `text` with `+` read as a space and `%XX` decoded, whole (an `&` in a path segment is no pair's end).
pub(super) fn percent_decode(text: &str) -> String {
    if !text.contains(['%', '+']) {
        return text.to_owned();
    }
    let whole = format!("x={}", text.replace('&', "%26"));
    form_urlencoded::parse(whole.as_bytes()).next().map(|(_, v)| v.into_owned()).unwrap_or_default()
}

pub(super) fn percent_encode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_values_are_recognised_and_ids_are_not() {
        assert!(is_email("carol.w@example.org") && !is_email("@example.org") && !is_email("a@b"));
        assert!(is_phone("(415) 555-0123") && is_phone("+14155550123") && !is_phone("4155550123"));
        assert!(!is_phone("2026-11-30"));
        assert!(is_jwt("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc") && !is_jwt("eyJ.a"));
        assert_eq!(percent_decode("jane%40example.com+x"), "jane@example.com x");
        assert_eq!(percent_decode("a&b%20c"), "a&b c");
        assert!(!is_phone("192.168.1.20"));
        assert!(
            is_known_token("AKIAIOSFODNN7EXAMPLE")
                && is_known_token("sk_live_51H8abcdefghijkl")
                && !is_known_token("AKIA")
        );
        assert!(has_userinfo("https://u:p4ss@evil.com/") && !has_userinfo("https://evil.com/a@b"));
        let text = "call me at +1 415 555 0199 or +33 1, thanks";
        let found: Vec<&str> = phones_within(text).into_iter().map(|r| &text[r]).collect();
        assert_eq!(found, ["+1 415 555 0199"]);
        assert_eq!(excerpt("/reset?token=SECRET\u{1b}"), "/reset?…");
        assert_eq!(excerpt("a\nb"), "a b");
    }
}
