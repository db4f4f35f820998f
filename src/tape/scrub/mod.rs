//! Privacy by default: what a tape must never carry out of production.
//!
//! Credentials are dropped (`Cookie`, `Authorization`, `Set-Cookie` and every header whose name looks like a
//! secret); only headers that shape the answer (`content-type`, `accept*`, `x-requested-with`) are kept.
//! Values are scrubbed two ways, in paths, queries, kept headers, form, JSON and text bodies alike, each
//! value percent-decoded first:
//! - by name: a query parameter or JSON field whose name marks a secret or personal data (tokens, passwords,
//!   emails, phone numbers, the session cookies of the common frameworks; the list in `private_values`,
//!   extended with `--scrub` and narrowed with `--keep`) is replaced whole;
//! - by shape, whatever the name, as a whole value or anywhere inside one (`within`): email addresses, phone
//!   numbers, JWTs and tokens with a known prefix, card numbers (Luhn), IBANs (mod 97), random secret keys
//!   (`value_shapes`), and whatever follows a secret name in text (`password=…` in a plain-text body).
//!
//! A scrubbed value becomes a placeholder (`placeholders`): a keyed hash, the same for the same value and
//! different for different ones, so a tape keeps production's spread over distinct users (and caches stay
//! as cold as there), but nothing in it can be turned back into the value.

mod bodies;
mod target;

use super::format::TapeRequest;
use super::placeholders::Placeholders;
pub use super::private_values::ScrubRules;
use super::private_values::classify;
use super::within;

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
    /// Other values replaced, or values with something replaced inside, for their look: an email, a phone
    /// or card number, an IBAN, a token.
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
    placeholders: Placeholders,
    /// What was scrubbed so far.
    pub counts: Scrubbed,
}

impl Scrubber {
    /// A scrubber whose placeholders are keyed with `key` (draw it at random; never store it).
    #[must_use]
    pub fn new(rules: ScrubRules, key: u64) -> Self {
        Self { rules, placeholders: Placeholders::new(key), counts: Scrubbed::default() }
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

    /// The names it scrubs.
    #[must_use]
    pub fn rules(&self) -> &ScrubRules {
        &self.rules
    }

    /// What one value called `name` (a field, a parameter), already decoded, becomes if it must be scrubbed:
    /// its name marks a secret, or it is private as a whole or holds something private.
    pub fn value(&mut self, name: Option<&str>, value: &str) -> Option<String> {
        if name.is_some_and(|n| self.rules.is_secret(n)) {
            self.counts.fields += 1;
            return Some(self.secret(value));
        }
        self.private(value).inspect(|_| self.counts.values += 1)
    }

    /// The recorded headers a replay keeps (credentials counted as scrubbed), what is private in their values
    /// replaced.
    pub fn headers(&mut self, headers: &[(String, String)]) -> Vec<(String, String)> {
        let mut kept = Vec::new();
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            if KEPT_HEADERS.contains(&name.as_str()) {
                // A value a request cannot carry (a control character) is not kept: the tape would refuse it.
                if value.bytes().all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f)) {
                    let value = self.value(None, value).unwrap_or_else(|| value.clone());
                    kept.push((name, value));
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

    /// `text` with what is private replaced, if anything is: the whole value in the shape of its kind, or each
    /// private thing inside it.
    fn private(&self, text: &str) -> Option<String> {
        match classify(text) {
            Some(kind) => Some(self.placeholders.of(kind, text)),
            // One word of letters and digits (an id, a slug) holds nothing its whole was not checked for.
            None if text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => None,
            None => self.within(text),
        }
    }

    /// What is private inside `text` replaced, if anything is.
    fn within(&self, text: &str) -> Option<String> {
        let found = within::find(text, &self.rules);
        if found.is_empty() {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        for item in found {
            out.push_str(&text[copied..item.range.start]);
            out.push_str(&self.placeholders.of(item.kind, &text[item.range.clone()]));
            copied = item.range.end;
        }
        out.push_str(&text[copied..]);
        Some(out)
    }

    /// The placeholder of a value whose name marks it secret: in its kind's shape if it has one.
    #[must_use]
    pub fn secret(&self, value: &str) -> String {
        classify(value).map_or_else(|| self.placeholder(value), |kind| self.placeholders.of(kind, value))
    }

    /// The placeholder of any value: `redacted-` and its keyed hash.
    #[must_use]
    pub fn placeholder(&self, value: &str) -> String {
        self.placeholders.generic(value)
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
    use serde_json::Value;

    use super::*;
    use crate::tape::private_values::percent_decode;

    fn scrub(target: &str, headers: &[(&str, &str)], body: Option<&str>) -> (TapeRequest, Scrubbed) {
        let mut scrubber = Scrubber::new(ScrubRules::new(&["customer_no".to_owned()], &["page_token".to_owned()]), 7);
        let mut request = TapeRequest::new(Method::POST, target.to_owned());
        request.body = body.map(str::to_owned);
        let headers: Vec<(String, String)> = headers.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect();
        scrubber.request(&mut request, &headers);
        (request, scrubber.counts)
    }

    #[test]
    fn a_message_cut_short_inside_a_private_value_leaves_none_of_it() {
        let mut scrubber = Scrubber::new(ScrubRules::default(), 7);
        let said = scrubber.message("path: `/users/alice.smith@corporat…` is not a request path");
        assert_eq!(said, "path: `/users/…` is not a request path");
        let card = scrubber.message("path: `/cards/4111111111111…` is not a request path");
        assert!(!card.contains("4111"), "{card}");
        assert_eq!(scrubber.message("path: `/boards/open…`"), "path: `/boards/open…`", "a word is no value");
        assert_eq!(scrubber.counts, Scrubbed::default(), "a message counts nothing");
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
        let zeros = format!("[{}0]", "0,".repeat(crate::tape::MAX_JSON_TREE_BYTES / 2));
        let (request, counts) = scrub("/a", &[], Some(&zeros));
        assert_eq!((request.body, counts.bodies), (None, 1), "JSON too long for a tree cannot be checked");
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

    /// A target with each pair percent-decoded, to look for what it holds in any encoding.
    fn decode_pairs(target: &str) -> String {
        target.split('&').map(percent_decode).collect::<Vec<_>>().join("&")
    }

    #[test]
    fn cards_ibans_keys_and_sessions_are_scrubbed_by_their_shape_wherever_they_are() {
        let target = "/pay?card=4111%201111%201111%201111&cc=5555555555554444&number=4111-1111-1111-1111\
                      &to=DE89370400440532013000&q=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY&PHPSESSID=9c1a7f3e2b&page=2";
        let (request, counts) = scrub(target, &[], None);
        let decoded = decode_pairs(&request.target);
        for secret in
            ["4111 1111", "5555555555554444", "4111-1111", "DE89370400440532013000", "wJalrXUtnFEMI", "9c1a7f"]
        {
            assert!(!decoded.contains(secret), "{secret} in {decoded}");
        }
        assert!(
            decoded.contains("card=999") && decoded.contains("&number=999") && decoded.contains("&to=DE"),
            "{decoded}"
        );
        assert!(decoded.contains("PHPSESSID=redacted-") && decoded.ends_with("&page=2"), "{decoded}");
        assert_eq!((counts.query, counts.values), (1, 5), "PHPSESSID by name, the rest by shape");
        let (request, _) = scrub("/api/cards/4111111111111111/charges;jsessionid=A1B2C3", &[], None);
        assert!(request.target.starts_with("/api/cards/999") && request.target.contains(";jsessionid=redacted-"));
        // Inside a value, decoded first: prose with an address, a `+`-encoded phone number.
        let (request, _) =
            scrub("/comments?q=mail%20me%20at%20grace.hopper@example.test&p=call+%2B1+415+555+0199", &[], None);
        let decoded = decode_pairs(&request.target);
        assert!(decoded.starts_with("/comments?q=mail me at redacted-") && !decoded.contains("grace"), "{decoded}");
        assert!(decoded.contains("p=call +1555") && !decoded.contains("415"), "{decoded}");
    }

    #[test]
    fn text_and_json_bodies_are_searched_inside_and_a_card_number_stays_a_number() {
        let text = [("Content-Type", "text/plain")];
        let (request, _) = scrub("/a", &text, Some("user=ada password=hunter2Secret! card 4111 1111 1111 1111"));
        let body = request.body.unwrap();
        assert!(body.starts_with("user=ada password=redacted-") && body.contains(" card 999"), "{body}");
        assert!(!body.contains("hunter2") && !body.contains("4111"), "{body}");
        let (request, _) =
            scrub("/a", &[], Some(r#"{"pan":"4012888888881881","n":4111111111111111,"iban":"x","id":12345}"#));
        let body: Value = serde_json::from_str(request.body.as_deref().unwrap()).unwrap();
        assert!(body["pan"].as_str().unwrap().starts_with("999"), "{body}");
        assert!(body["n"].as_u64().is_some_and(|n| n.to_string().starts_with("999")), "{body}");
        assert_eq!(body["id"], 12345);
        // Written as a float, or with dots: a card all the same.
        let json = r#"{"n":4111111111111111.0,"dotted":"4111.1111.1111.1111","ratio":0.5,"big":1.0e300}"#;
        let (request, _) = scrub("/a", &[], Some(json));
        let body: Value = serde_json::from_str(request.body.as_deref().unwrap()).unwrap();
        assert!(body["n"].as_u64().is_some_and(|n| n.to_string().starts_with("999")), "{body}");
        assert!(body["dotted"].as_str().unwrap().starts_with("999"), "{body}");
        assert_eq!((body["ratio"].as_f64(), body["big"].as_f64()), (Some(0.5), Some(1.0e300)));
    }

    #[test]
    fn the_same_value_gets_the_same_placeholder_and_different_values_different_ones() {
        let scrubber = Scrubber::new(ScrubRules::default(), 1);
        assert_eq!(scrubber.private("a@b.co"), scrubber.private("a@b.co"));
        assert_ne!(scrubber.private("a@b.co"), scrubber.private("c@b.co"));
        let other_key = Scrubber::new(ScrubRules::default(), 2);
        assert_ne!(scrubber.private("a@b.co"), other_key.private("a@b.co"));
    }
}
