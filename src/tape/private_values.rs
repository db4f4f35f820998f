//! What is private: the names that mark a secret or personal value (the built-in list, plus and minus the
//! user's), what such a value looks like wherever it appears (an email address, a phone number, a JWT), and
//! the percent-encoding of the query strings and form bodies they hide in.

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
    "csrf", "xsrf", "code",
];

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
            || SECRET_PARTS.iter().any(|part| name.contains(part))
            || self.extra.iter().any(|extra| name == *extra || (extra.len() >= 5 && name.contains(extra.as_str())))
    }
}

fn normalize(name: &str) -> String {
    name.chars().filter(|c| !matches!(c, '-' | '_' | '.')).flat_map(char::to_lowercase).collect()
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
    let digits = text.chars().filter(char::is_ascii_digit).count();
    let separators = text.chars().filter(|c| matches!(c, ' ' | '-' | '(' | ')' | '.')).count();
    (9..=15).contains(&digits)
        && text.chars().all(|c| c.is_ascii_digit() || matches!(c, '+' | ' ' | '-' | '(' | ')' | '.'))
        && (text.starts_with('+')
            || (separators >= 2 && text.chars().next().is_some_and(|c| c == '(' || c.is_ascii_digit())))
}

pub(super) fn is_jwt(text: &str) -> bool {
    text.starts_with("eyJ")
        && text.split('.').count() == 3
        && text.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '='))
}

pub(super) fn percent_decode(text: &str) -> String {
    form_urlencoded::parse(format!("x={text}").as_bytes()).next().map(|(_, v)| v.into_owned()).unwrap_or_default()
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
    }
}
