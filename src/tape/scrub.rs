//! Privacy by default: what a tape must never carry out of production.
//!
//! Credentials are dropped (`Cookie`, `Authorization`, `Set-Cookie` and every header whose name looks like a
//! secret); only headers that shape the answer (`content-type`, `accept*`, `x-requested-with`) are kept.
//! Query parameters and JSON fields whose names look like secrets or personal data (tokens, passwords,
//! emails, phone numbers; the list below, extended with `--scrub` and narrowed with `--keep`), and any value
//! that looks like an email address, a phone number or a JWT wherever it is, are replaced by placeholders.
//! A placeholder is a keyed hash of the value with a key drawn for each import and never stored: two
//! different emails stay two different placeholders, so a tape keeps production's spread over distinct users
//! (and caches stay as cold as there), but nothing in it can be turned back into the value.

use serde_json::Value;

use super::format::TapeRequest;
pub use super::private_values::ScrubRules;
use super::private_values::{
    has_userinfo, is_email, is_jwt, is_known_token, is_phone, percent_decode, percent_encode, phones_within,
};

/// Headers a replay needs to get the same kind of answer; every other recorded header is left out.
const KEPT_HEADERS: &[&str] = &["content-type", "accept", "accept-language", "accept-encoding", "x-requested-with"];

/// How much an import scrubbed, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scrubbed {
    /// Credential headers dropped (cookies, authorization, tokens).
    pub headers: u64,
    /// Query parameters replaced.
    pub query: u64,
    /// JSON (or form) body fields replaced.
    pub fields: u64,
    /// Other values replaced because they looked like an email, a phone number or a token.
    pub values: u64,
    /// Bodies dropped whole because they could not be checked (multipart, binary, broken JSON).
    pub bodies: u64,
}

impl Scrubbed {
    /// All of them.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.headers + self.query + self.fields + self.values + self.bodies
    }
}

/// Scrubs requests as they are imported.
#[derive(Debug, Clone)]
pub struct Scrubber {
    rules: ScrubRules,
    key: u64,
    /// What was scrubbed so far.
    pub counts: Scrubbed,
}

impl Scrubber {
    /// A scrubber whose placeholders are keyed with `key` (draw it at random; never store it).
    #[must_use]
    pub fn new(rules: ScrubRules, key: u64) -> Self {
        Self { rules, key, counts: Scrubbed::default() }
    }

    /// Scrubs `request`'s target, session and body, and keeps from `headers` (as recorded) those a replay
    /// needs. A recorded session id may be a credential itself: it becomes a placeholder, which groups the
    /// same requests together.
    pub fn request(&mut self, request: &mut TapeRequest, headers: &[(String, String)]) {
        request.target = self.target(&request.target);
        request.headers = self.headers(headers);
        request.session = request.session.take().map(|session| self.placeholder(&session));
        let content_type =
            request.headers.iter().find(|(n, _)| n == "content-type").map(|(_, v)| v.to_ascii_lowercase());
        if let Some(body) = request.body.take() {
            request.body = self.any_body(body, content_type.as_deref().unwrap_or_default());
        }
        // A log records a body without its type more often than not; the service needs it to read the body.
        if let (Some(body), None) = (&request.body, &content_type) {
            let json = matches!(body.trim_start().chars().next(), Some('{' | '['));
            let kind = if json { "application/json" } else { "application/x-www-form-urlencoded" };
            if json || body.contains('=') {
                request.headers.push(("content-type".to_owned(), kind.to_owned()));
            }
        }
    }

    /// A body scrubbed by its kind: JSON field by field, a form pair by pair; a body that cannot be read
    /// field by field (multipart, binary, JSON that does not parse) is dropped and counted, since what it
    /// holds cannot be checked. Plain text keeps its words, with email addresses in it replaced.
    fn any_body(&mut self, body: String, content_type: &str) -> Option<String> {
        let looks_json = matches!(body.trim_start().chars().next(), Some('{' | '['));
        let looks_form = !body.contains(char::is_whitespace) && body.contains('=');
        if content_type.contains("json") || looks_json {
            match self.json_body(&body) {
                Ok(scrubbed) => Some(scrubbed.unwrap_or(body)),
                Err(()) => self.drop_body(),
            }
        } else if content_type.contains("x-www-form-urlencoded") || (content_type.is_empty() && looks_form) {
            Some(self.pairs(&body, Counter::Field))
        } else if content_type.starts_with("text/") || content_type.is_empty() {
            Some(self.private_within(&body).inspect(|_| self.counts.values += 1).unwrap_or(body))
        } else {
            self.drop_body()
        }
    }

    fn drop_body(&mut self) -> Option<String> {
        self.counts.bodies += 1;
        None
    }

    /// The names it scrubs.
    #[must_use]
    pub fn rules(&self) -> &ScrubRules {
        &self.rules
    }

    /// The placeholder for one value called `name` (a field, a parameter), if it must be scrubbed: its name
    /// looks secret or it looks like an email, a phone number or a token.
    pub fn value(&mut self, name: Option<&str>, value: &str) -> Option<String> {
        if name.is_some_and(|n| self.rules.is_secret(n)) {
            self.counts.fields += 1;
            return Some(self.looks_private(value).unwrap_or_else(|| self.placeholder(value)));
        }
        self.looks_private(value).inspect(|_| self.counts.values += 1)
    }

    /// The recorded headers a replay keeps (credentials counted as scrubbed).
    pub fn headers(&mut self, headers: &[(String, String)]) -> Vec<(String, String)> {
        let mut kept = Vec::new();
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            if KEPT_HEADERS.contains(&name.as_str()) {
                // A value a request cannot carry (a control character) is not kept: the tape would refuse it.
                if value.bytes().all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f)) {
                    kept.push((name, value.clone()));
                }
            } else if super::format::CREDENTIAL_HEADERS.contains(&name.as_str())
                || name == "set-cookie"
                || self.rules.is_secret(&name)
            {
                self.counts.headers += 1;
            }
        }
        kept
    }

    /// The target with secret-looking path segments and query values replaced.
    fn target(&mut self, target: &str) -> String {
        let (path, query) = target.split_once('?').map_or((target, None), |(p, q)| (p, Some(q)));
        let mut out = String::with_capacity(target.len());
        for (i, segment) in path.split('/').enumerate() {
            if i > 0 {
                out.push('/');
            }
            // Path parameters (`/boards/1;jsessionid=…`) are pairs like a query's.
            if let Some((head, params)) = segment.split_once(';') {
                out.push_str(head);
                out.push(';');
                out.push_str(&self.pairs(&params.replace(';', "&"), Counter::Query).replace('&', ";"));
                continue;
            }
            let decoded = percent_decode(segment);
            match self.looks_private(&decoded) {
                Some(placeholder) => {
                    self.counts.values += 1;
                    out.push_str(&placeholder);
                }
                None => out.push_str(segment),
            }
        }
        if let Some(query) = query {
            out.push('?');
            out.push_str(&self.pairs(query, Counter::Query));
        }
        out
    }

    /// `a=1&b=2` (a query or a form body) with secret values replaced; untouched pairs stay byte for byte.
    pub fn pairs(&mut self, text: &str, counter: Counter) -> String {
        let mut out = String::with_capacity(text.len());
        for (i, pair) in text.split('&').enumerate() {
            if i > 0 {
                out.push('&');
            }
            let Some((name, value)) = pair.split_once('=') else {
                // A bare value (`?jane%40example.com`) is checked by its look alone.
                match self.looks_private(&percent_decode(pair)) {
                    Some(placeholder) => {
                        self.counts.values += 1;
                        out.push_str(&percent_encode(&placeholder));
                    }
                    None => out.push_str(pair),
                }
                continue;
            };
            let decoded = percent_decode(value);
            let replacement = if self.rules.is_secret(&percent_decode(name)) && !value.is_empty() {
                self.count(counter);
                Some(self.looks_private(&decoded).unwrap_or_else(|| self.placeholder(&decoded)))
            } else {
                self.looks_private(&decoded).inspect(|_| self.counts.values += 1)
            };
            out.push_str(name);
            out.push('=');
            out.push_str(&replacement.map_or_else(|| value.to_owned(), |r| percent_encode(&r)));
        }
        out
    }

    fn count(&mut self, counter: Counter) {
        match counter {
            Counter::Query => self.counts.query += 1,
            Counter::Field => self.counts.fields += 1,
        }
    }

    /// A JSON body with secret fields and private-looking strings replaced, if anything was; `Ok(None)` when
    /// it is unchanged (so it stays as recorded, key order and spacing included); `Err` when it is not JSON.
    fn json_body(&mut self, body: &str) -> Result<Option<String>, ()> {
        let mut json: Value = serde_json::from_str(body).map_err(|_| ())?;
        let before = self.counts;
        self.json(&mut json);
        Ok((self.counts != before).then(|| json.to_string()))
    }

    fn json(&mut self, value: &mut Value) {
        match value {
            Value::Object(object) => {
                for (name, field) in object.iter_mut() {
                    if self.rules.is_secret(name) && !field.is_null() {
                        self.counts.fields += 1;
                        self.replace_all(field);
                    } else {
                        self.json(field);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.json(item)),
            Value::String(text) => {
                if let Some(placeholder) = self.looks_private(text).or_else(|| self.private_within(text)) {
                    self.counts.values += 1;
                    *text = placeholder;
                }
            }
            _ => {}
        }
    }

    /// Prose with email addresses or phone numbers in it ("reach me at carol@example.org"), those replaced.
    fn private_within(&self, text: &str) -> Option<String> {
        let mut out = String::with_capacity(text.len());
        let mut changed = false;
        for (i, word) in text.split(' ').enumerate() {
            if i > 0 {
                out.push(' ');
            }
            let core = word.trim_matches(|c: char| !(c.is_alphanumeric() || "@._-".contains(c))).trim_end_matches('.');
            if core.contains('@') && is_email(core) {
                changed = true;
                out.push_str(&word.replace(core, &format!("redacted-{:08x}@example.invalid", self.hash(core) as u32)));
            } else {
                out.push_str(word);
            }
        }
        for range in phones_within(&out.clone()).into_iter().rev() {
            let phone = format!("+1555{:07}", self.hash(&out[range.clone()]) % 10_000_000);
            out.replace_range(range, &phone);
            changed = true;
        }
        changed.then_some(out)
    }

    /// Every scalar inside `value` replaced (a secret field may hold an object).
    pub fn replace_all(&self, value: &mut Value) {
        match value {
            Value::Object(object) => object.values_mut().for_each(|v| self.replace_all(v)),
            Value::Array(items) => items.iter_mut().for_each(|v| self.replace_all(v)),
            Value::String(text) => *text = self.looks_private(text).unwrap_or_else(|| self.placeholder(text)),
            Value::Number(_) | Value::Bool(_) => *value = Value::String(self.placeholder(&value.to_string())),
            Value::Null => {}
        }
    }

    /// The placeholder for a value that looks like an email, a phone number or a JWT, shaped like it so the
    /// service's validation still accepts it; `None` for anything else.
    fn looks_private(&self, text: &str) -> Option<String> {
        let text = text.trim();
        let hash = self.hash(text);
        if is_email(text) {
            Some(format!("redacted-{:08x}@example.invalid", hash as u32))
        } else if is_phone(text) {
            Some(format!("+1555{:07}", hash % 10_000_000))
        } else if is_jwt(text) || is_known_token(text) || text.starts_with("Bearer ") || has_userinfo(text) {
            Some(self.placeholder(text))
        } else {
            None
        }
    }

    /// The placeholder of any value: `redacted-` and its keyed hash.
    #[must_use]
    pub fn placeholder(&self, value: &str) -> String {
        format!("redacted-{:08x}", self.hash(value) as u32)
    }

    /// FNV-1a over the key and the value, then mixed: the key makes it a one-way function of the value.
    fn hash(&self, value: &str) -> u64 {
        let mut h = super::fnv::Fnv::keyed(self.key).add(value.as_bytes()).value();
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd) ^ self.key.rotate_left(17);
        h ^ (h >> 33)
    }
}

/// Which count a replaced pair adds to.
#[derive(Debug, Clone, Copy)]
pub enum Counter {
    /// A query parameter.
    Query,
    /// A form field of a body.
    Field,
}

#[cfg(test)]
mod tests {
    use http::Method;

    use super::*;

    fn scrub(target: &str, headers: &[(&str, &str)], body: Option<&str>) -> (TapeRequest, Scrubbed) {
        let mut scrubber = Scrubber::new(ScrubRules::new(&["customer_no".to_owned()], &["page_token".to_owned()]), 7);
        let mut request = TapeRequest::new(Method::POST, target.to_owned());
        request.body = body.map(str::to_owned);
        let headers: Vec<(String, String)> = headers.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect();
        scrubber.request(&mut request, &headers);
        (request, scrubber.counts)
    }

    #[test]
    fn credentials_and_private_values_never_reach_the_tape() {
        let (request, counts) = scrub(
            "/search?q=boots&token=SECRET123&email=jane%40example.com&phone=%2B14155550123&page_token=abc&customer_no=77",
            &[
                ("Cookie", "sid=1"),
                ("Authorization", "Bearer x"),
                ("X-CSRF-Token", "t"),
                ("Content-Type", "application/json"),
                ("User-Agent", "ua"),
            ],
            Some(
                r#"{"title":"Q4","password":"hunter2","owner":{"email":"bob@example.com"},"note":"call +1 415 555 0123","n":5}"#,
            ),
        );
        assert!(request.target.starts_with("/search?q=boots&token=redacted-"), "{}", request.target);
        assert!(
            request.target.contains("&email=redacted-") && request.target.contains("%40example.invalid&phone=%2B1555")
        );
        assert!(
            request.target.contains("&page_token=abc&customer_no=redacted-"),
            "--keep and --scrub: {}",
            request.target
        );
        assert_eq!(request.headers, [("content-type".to_owned(), "application/json".to_owned())]);
        let body: Value = serde_json::from_str(request.body.as_deref().unwrap()).unwrap();
        assert_eq!(body["title"], "Q4");
        assert_eq!(body["n"], 5);
        assert!(body["password"].as_str().unwrap().starts_with("redacted-"));
        assert!(body["owner"]["email"].as_str().unwrap().ends_with("@example.invalid"));
        let note = body["note"].as_str().unwrap();
        assert!(note.starts_with("call +1555") && note.len() == "call +15550000000".len(), "a phone in prose: {note}");
        let (request, _) = scrub("/a", &[], Some(r#"{"bio":"reach me at carol.w@example.org."}"#));
        let body: Value = serde_json::from_str(request.body.as_deref().unwrap()).unwrap();
        let bio = body["bio"].as_str().unwrap();
        assert!(bio.starts_with("reach me at redacted-") && bio.ends_with("@example.invalid."), "{bio}");
        assert_eq!(counts, Scrubbed { headers: 3, query: 4, fields: 2, values: 1, bodies: 0 });
    }

    #[test]
    fn bodies_that_cannot_be_checked_are_dropped_and_forms_are_scrubbed_by_their_shape() {
        let multipart = [("Content-Type", "multipart/form-data; boundary=x")];
        let (request, counts) = scrub("/upload", &multipart, Some("--x\r\npassword=hunter2\r\n--x--"));
        assert_eq!((request.body, counts.bodies), (None, 1));
        let (request, counts) = scrub("/login?jane%40example.com", &[], Some("user=jane&password=hunter2"));
        let body = request.body.unwrap();
        assert!(body.starts_with("user=jane&password=redacted-") && !body.contains("hunter2"), "{body}");
        assert!(request.target.starts_with("/login?redacted-") && request.target.contains("%40example.invalid"));
        assert_eq!((counts.fields, counts.values), (1, 1));
        let (request, _) = scrub("/a", &[("Content-Type", "application/json")], Some("{not json password=x"));
        assert_eq!(request.body, None, "JSON that does not parse cannot be checked");
    }

    #[test]
    fn ids_stay_and_unchanged_bodies_keep_their_bytes() {
        let (request, counts) = scrub("/boards/1234567890?page=2&sort=-created", &[], Some("{ \"b\": 1,  \"a\": 2 }"));
        assert_eq!(request.target, "/boards/1234567890?page=2&sort=-created");
        assert_eq!(request.body.as_deref(), Some("{ \"b\": 1,  \"a\": 2 }"));
        assert_eq!(counts.total(), 0);
        let (request, counts) = scrub("/users/jane@example.com/cards", &[], None);
        assert!(request.target.starts_with("/users/redacted-") && request.target.ends_with("@example.invalid/cards"));
        assert_eq!(counts.values, 1);
    }

    #[test]
    fn the_same_value_gets_the_same_placeholder_and_different_values_different_ones() {
        let scrubber = Scrubber::new(ScrubRules::default(), 1);
        assert_eq!(scrubber.looks_private("a@b.co"), scrubber.looks_private("a@b.co"));
        assert_ne!(scrubber.looks_private("a@b.co"), scrubber.looks_private("c@b.co"));
        let other_key = Scrubber::new(ScrubRules::default(), 2);
        assert_ne!(scrubber.looks_private("a@b.co"), other_key.looks_private("a@b.co"));
    }
}
