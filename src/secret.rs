//! Secrets and redaction.
//!
//! Owns the ways degrade keeps secrets out of output: [`Secret`], a value that cannot be printed by
//! accident; [`redact_url`], which hides the password in a connection string before it reaches a log
//! line, a page or an error message; and [`Hidden`], the values a scenario read from the environment, hidden
//! where a target's answer quotes them. Secrets only ever come from the environment (see `config`).

use std::fmt;

/// A value that must never be printed: an API token, a webhook URL, a database URL with a password.
///
/// `Debug` and `Display` show `[redacted]`; the value is only reachable through [`Secret::expose`], so every
/// place that uses the real value is easy to find.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    #[must_use]
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The real value, for the one place that needs it (an HTTP header, a connection).
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Returns `url` with any password replaced by `***`: the `user:password@` part of the authority and a
/// `password=` query parameter (libpq accepts both). The user info ends at the *last* `@`, since a password
/// that is not percent-encoded may itself hold `@`, `/`, `?` or `#`; a libpq keyword string
/// (`host=db password=x`) has its `password=` value hidden too.
#[must_use]
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return redact_keywords(url);
    };
    // The scheme is the run of scheme characters before `://` (in command output a URL may follow `'` or `=`).
    let scheme = url[..scheme_end].rsplit(|c: char| !(c.is_ascii_alphanumeric() || "+.-".contains(c))).next();
    let is_http = scheme.is_some_and(|s| s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https"));
    let mut out = url.to_owned();
    let authority_start = scheme_end + 3;
    // In an HTTP URL the user info is looked for within the authority first (its path or query may hold an
    // `@`, as in `/users/a@b.c`); else, and in database URLs, up to the last `@`.
    let authority_end = out[authority_start..].find(['/', '?', '#']).map_or(out.len(), |end| authority_start + end);
    let within_authority = if is_http { out[authority_start..authority_end].rfind('@') } else { None };
    if let Some(at) = within_authority.or_else(|| out[authority_start..].rfind('@')) {
        let userinfo = &out[authority_start..authority_start + at];
        if let Some(colon) = userinfo.find(':') {
            out.replace_range(authority_start + colon + 1..authority_start + at, "***");
        } else if is_http && !userinfo.contains(['/', '?', '#']) {
            // An HTTP URL's user name is where tokens go (`https://ghp_…@host/…`): hide it whole. A database
            // URL's user name is only a name, and is kept.
            out.replace_range(authority_start..authority_start + at, "***");
        }
    }
    redact_query_password(&out)
}

/// Hides the values of `password=` in a libpq keyword string such as `host=db user=app password=x`.
fn redact_keywords(text: &str) -> String {
    text.split(' ')
        .map(|word| match word.split_once('=') {
            Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
            _ => word.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn redact_query_password(url: &str) -> String {
    let Some(query_start) = url.find('?') else {
        return url.to_owned();
    };
    let (head, query) = url.split_at(query_start + 1);
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{head}{}", pairs.join("&"))
}

/// `text` (a command's output, say) with the password of every URL in it hidden, and `password=` values of
/// keyword strings too: a deploy log quoting `https://user:token@registry/…` must not reach a page.
#[must_use]
pub fn redact_urls_in(text: &str) -> String {
    text.lines()
        .map(|line| {
            let words: Vec<String> = line
                .split(' ')
                .map(|word| if word.contains("://") { redact_url(word) } else { word.to_owned() })
                .collect();
            redact_keywords(&words.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Values to hide wherever a target's answer quotes them back: what templates read with `env("…")`, as read
/// and as degrade sends them in a query (form-encoded). A value shorter than [`Hidden::SHORTEST`]
/// is not hidden (a region or a port would blank every sample's host); `Debug` shows only how many there are.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Hidden(Vec<String>);

impl fmt::Debug for Hidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hidden({} values)", self.0.len())
    }
}

impl Hidden {
    /// The shortest value hidden, in bytes: longer than a port number.
    pub const SHORTEST: usize = 6;

    /// Hides `values` and their encoded forms, the longest first (so one that holds another is hidden whole).
    #[must_use]
    pub fn new(values: &[String]) -> Self {
        let encoded = values.iter().map(|v| form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>());
        let all: Vec<String> = encoded.chain(values.iter().cloned()).collect();
        let mut values: Vec<String> = all.into_iter().filter(|v| v.len() >= Self::SHORTEST).collect();
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        Self(values)
    }

    /// `text` with every value replaced by `***`, and the start of one where a quote of it was cut short (at
    /// the text's end, before an ellipsis, or before a character the cut broke).
    #[must_use]
    pub fn hide(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for value in &self.0 {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), "***");
            }
        }
        for value in &self.0 {
            for cut in (Self::SHORTEST..value.len()).rev().filter(|&cut| value.is_char_boundary(cut)) {
                let start = &value[..cut];
                for end in ["…", "\u{fffd}"] {
                    out = out.replace(&format!("{start}{end}"), &format!("***{end}"));
                }
                if out.ends_with(start) {
                    out.truncate(out.len() - cut);
                    out.push_str("***");
                }
            }
        }
        out
    }
}

/// Whether `url` carries a password, in its user info or its query.
#[must_use]
pub fn url_has_password(url: &str) -> bool {
    redact_url(url) != url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_every_form_of_password() {
        let cases = [
            ("postgres://app:s3cret@db:5432/degrade", "postgres://app:***@db:5432/degrade"),
            ("postgres://app:p@ss@db/degrade", "postgres://app:***@db/degrade"),
            ("postgres://app:p#ss@db/degrade", "postgres://app:***@db/degrade"),
            ("postgres://app:1234/abc@db/degrade", "postgres://app:***@db/degrade"),
            ("host=db user=app password=s3cret", "host=db user=app password=***"),
            ("postgres://db/degrade?user=app&password=s3cret", "postgres://db/degrade?user=app&password=***"),
            ("postgres://app@db/degrade", "postgres://app@db/degrade"),
            ("http://ghp_SECRET@host/v", "http://***@host/v"),
            ("https://x-token:tok@host/v", "https://x-token:***@host/v"),
            ("https://host/a@b", "https://host/a@b"),
            ("https://ghp_TOKEN@api.x/v1/users/a@b.c", "https://***@api.x/v1/users/a@b.c"),
            ("https://ghp_TOKEN@api.x/v1?email=a@b", "https://***@api.x/v1?email=a@b"),
            ("https://u:pa/ss@host/x", "https://u:***@host/x"),
            ("sqlite://degrade.db", "sqlite://degrade.db"),
            ("sqlite:degrade.db?mode=rwc", "sqlite:degrade.db?mode=rwc"),
        ];
        for (url, expected) in cases {
            assert_eq!(redact_url(url), expected, "{url}");
        }
    }

    #[test]
    fn redacts_urls_inside_command_output() {
        let log = "pulling https://ci:tok3n@registry.example.com/app:1.4\nconnect host=db password=hunter2 ok\ndone";
        assert_eq!(
            redact_urls_in(log),
            "pulling https://ci:***@registry.example.com/app:1.4\nconnect host=db password=*** ok\ndone"
        );
        let quoted = "fatal: repository 'https://ghp_TOKEN@host/r/' not found; url=https://ghp_TOKEN@h";
        assert_eq!(redact_urls_in(quoted), "fatal: repository 'https://***@host/r/' not found; url=https://***@h");
    }

    #[test]
    fn secrets_do_not_print() {
        let token = Secret::new("tok-123");
        assert_eq!(format!("{token} {token:?}"), "[redacted] [redacted]");
        assert_eq!(token.expose(), "tok-123");
    }

    #[test]
    fn values_read_from_the_environment_are_hidden_where_an_answer_quotes_them() {
        let hidden = Hidden::new(&["tok_SECRET_abc".into(), "8080".into(), "tok_SECRET".into()]);
        assert_eq!(format!("{hidden:?}"), "Hidden(2 values)", "a port is too short to hide");
        assert_eq!(hidden.hide("auth was: Bearer tok_SECRET_abc, :8080"), "auth was: Bearer ***, :8080");
        assert_eq!(hidden.hide("status 500: Bearer tok_SEC"), "status 500: Bearer ***", "a quote cut short");
        assert_eq!(hidden.hide("found {\"auth\":\"tok_SECR…"), "found {\"auth\":\"***…", "cut before an ellipsis");
        assert_eq!(hidden.hide("status 500: tok"), "status 500: tok", "too little of it to tell");
        // As degrade sends it in a query: percent-encoded.
        let key = Hidden::new(&["a/b+c=d==".into()]);
        assert_eq!(key.hide("GET /x?api_key=a%2Fb%2Bc%3Dd%3D%3D was refused"), "GET /x?api_key=*** was refused");
        assert_eq!(Hidden::default().hide("as it was"), "as it was");
    }

    #[test]
    fn detects_passwords() {
        assert!(url_has_password("postgres://a:b@h/d"));
        assert!(!url_has_password("postgres://a@h/d"));
    }
}
