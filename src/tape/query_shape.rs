//! The query part of a route key: the names of a request's query parameters, their values left out
//! (`GET /posts?userId=`), so `/posts?userId=3` and `/posts?q=rust` are two endpoints while `/posts?userId=3`
//! and `/posts?userId=4` are one. Scenario steps ([`crate::scenario`]) and tapes ([`super::route`]) key the
//! same request alike through here.
//!
//! What an access log holds decides the rules:
//! - names are compared percent-decoded, and shown as written only where that is safe: visible ASCII as is, but
//!   what would end or split a query (`%&=#+?`) or a Markdown table, code span or HTML text (`` |`<>"\ ``); a
//!   space as `+`; every other byte (a control character, non-ASCII text) `%XX`, so a key, which is stored and
//!   shown in terminals, Slack, Markdown and HTML, never carries a control character;
//! - a name given twice (`?tag=a&tag=b`) counts once, an empty one (`?&&`, `?=x`) not at all, and an index in
//!   brackets is no name of its own (`ids[0]`, `ids[1]` are `ids[]`);
//! - cache-busters (`_=1700000000`, `_dc=`) and tracking parameters (`utm_*`, `fbclid`, `gclid`, …) are left
//!   out, and so is a "name" that is a value (`?1700000000`, a hash, an id, or over [`MAX_NAME_BYTES`]);
//! - names are sorted, so their order in the URL does not matter, and at most [`MAX_NAMES`] are shown, the rest
//!   as `&…`: a key stays short whatever a request carries.
//!
//! How many query shapes one path may have is bounded where they are counted ([`super::route_tally`]).

use std::fmt::Write as _;

/// The longest parameter name kept in a key, in bytes as shown; a longer "name" is a value sent without one.
pub const MAX_NAME_BYTES: usize = 40;

/// Names shown in a key at most; further ones are written `&…`.
pub const MAX_NAMES: usize = 8;

/// Parameters of one request read for its shape: a hand-written tape's line may hold millions, and a request
/// with more than this many is no kind of request a service has; its shape is that of its first ones.
pub const MAX_PARAMETERS_READ: usize = 1000;

/// Parameter names that never name a kind of request: cache-busters and tracking parameters.
const IGNORED_NAMES: &[&str] = &[
    "_",
    "_dc",
    "cachebuster",
    "cache_buster",
    "nocache",
    "fbclid",
    "gclid",
    "gbraid",
    "wbraid",
    "dclid",
    "msclkid",
    "yclid",
    "twclid",
    "ttclid",
    "igshid",
    "mc_cid",
    "mc_eid",
    "_ga",
    "_gl",
    "_hsenc",
    "_hsmi",
];

/// The names of a request's query parameters, as a route key shows them: sorted, each once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryShape {
    names: Vec<String>,
}

impl QueryShape {
    /// The shape of `query`, a query string as sent (percent-encoded, without the `?`).
    #[must_use]
    pub fn of_query(query: &str) -> Self {
        Self::of_names(parameters(query).map(|(name, _)| name))
    }

    /// The shape of parameters with these names, each percent-encoded as sent.
    pub fn of_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut names: Vec<String> = names.into_iter().take(MAX_PARAMETERS_READ).filter_map(key_name).collect();
        names.sort_unstable();
        names.dedup();
        Self { names }
    }

    /// Its names, sorted.
    #[must_use]
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Appends the shape to a key: `?a=&b=`, nothing for a request without names.
    pub fn push_to(&self, key: &mut String) {
        for (i, name) in self.names.iter().take(MAX_NAMES).enumerate() {
            key.push(if i == 0 { '?' } else { '&' });
            key.push_str(name);
            key.push('=');
        }
        if self.names.len() > MAX_NAMES {
            key.push_str("&…");
        }
    }
}

/// The parameters of `query` (as sent, without the `?`): each name and value as written, empty ones skipped.
pub fn parameters(query: &str) -> impl Iterator<Item = (&str, &str)> {
    query.split('&').filter(|p| !p.is_empty()).map(|p| p.split_once('=').unwrap_or((p, "")))
}

/// A name as a key shows it (see the module's rules), or `None` when it is left out of keys.
#[must_use]
pub fn key_name(encoded: &str) -> Option<String> {
    let shown = shown(&decoded(encoded));
    let shown = without_indexes(&shown);
    let lower = shown.to_ascii_lowercase();
    let ignored = shown.is_empty()
        || shown.len() > MAX_NAME_BYTES
        || IGNORED_NAMES.contains(&lower.as_str())
        || lower.starts_with("utm_")
        || super::id_segments::placeholder(&shown).is_some();
    (!ignored).then_some(shown)
}

/// `encoded` percent-decoded, `+` as a space (as a form encodes it); a `%` not followed by two hex digits stays.
#[must_use]
pub fn decoded(encoded: &str) -> Vec<u8> {
    let bytes = encoded.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |at: usize| bytes.get(at).and_then(|b| (*b as char).to_digit(16));
        if let (b'%', Some(high), Some(low)) = (bytes[i], hex(i + 1), hex(i + 2)) {
            out.push((high * 16 + low) as u8);
            i += 3;
            continue;
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    out
}

/// Decoded bytes written back so that nothing in them can be misread: visible ASCII but ``%&=#+?|`<>"\`` as
/// is, a space as `+`, anything else `%XX`.
#[must_use]
pub fn shown(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b' ' => out.push('+'),
            b'%' | b'&' | b'=' | b'#' | b'+' | b'?' | b'|' | b'`' | b'<' | b'>' | b'"' | b'\\' => {
                let _ = write!(out, "%{b:02X}");
            }
            b if b.is_ascii_graphic() => out.push(b as char),
            b => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

/// `ids[0][name]` as `ids[][name]`: an array's index says how many items a request sent, not what it is.
fn without_indexes(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..=open]);
        rest = &rest[open + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest.as_bytes().get(digits) == Some(&b']') {
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(query: &str) -> String {
        let mut key = String::new();
        QueryShape::of_query(query).push_to(&mut key);
        key
    }

    #[test]
    fn names_are_sorted_once_each_and_values_left_out() {
        assert_eq!(shape("userId=3"), "?userId=");
        assert_eq!(shape("_sort=title&_order=desc"), "?_order=&_sort=");
        assert_eq!(shape("_order=asc&_sort=id"), "?_order=&_sort=");
        assert_eq!(shape("tag=a&tag=b&tag="), "?tag=");
        assert_eq!(shape("q&&=x&"), "?q=");
        assert_eq!(shape(""), "");
        // Case is kept: frameworks tell `userId` from `userid`.
        assert_eq!(shape("userid=1&userId=2"), "?userId=&userid=");
    }

    #[test]
    fn cache_busters_tracking_and_values_posing_as_names_are_left_out() {
        assert_eq!(shape("q=x&_=1700000000123"), "?q=");
        assert_eq!(shape("utm_source=mail&UTM_Medium=x&fbclid=abc&gclid=1&page=2"), "?page=");
        assert_eq!(shape("1700000000"), "");
        assert_eq!(shape("3f2b8c1e-9a4d-4e2b-8f6a-0c1d2e3f4a5b=1"), "");
        assert_eq!(shape(&format!("{}=1", "n".repeat(41))), "");
        assert_eq!(shape(&format!("{}=1", "n".repeat(40))), format!("?{}=", "n".repeat(40)));
    }

    #[test]
    fn odd_and_encoded_names_are_compared_decoded_and_shown_safely() {
        assert_eq!(shape("tag%5B%5D=a&tag[]=b"), "?tag[]=");
        assert_eq!(shape("ids[0]=1&ids[1]=2&f[0][name]=x"), "?f[][name]=&ids[]=");
        assert_eq!(shape("page+size=1&page%20size=2"), "?page+size=");
        assert_eq!(shape("a%2Bb=1"), "?a%2Bb=");
        assert_eq!(shape("a%26b=1&c%3Dd=2"), "?a%26b=&c%3Dd=");
        // A control character or a byte that is not ASCII never reaches a key as itself.
        assert_eq!(shape("a%0Ab=1&%00=2&caf%C3%A9=3"), "?%00=&a%0Ab=&caf%C3%A9=");
        assert_eq!(shape("bad%zz=1&%=2"), "?%25=&bad%25zz=");
        // Nor what would split a Markdown table or a code span, or open an HTML tag.
        assert_eq!(shape("a|b=1&c%3Cd%3E=2&e`f=3"), "?a%7Cb=&c%3Cd%3E=&e%60f=");
    }

    #[test]
    fn many_names_are_cut_short() {
        let query: Vec<String> = (0..30).map(|i| format!("p{i:02}=1")).collect();
        let key = shape(&query.join("&"));
        assert_eq!(key, "?p00=&p01=&p02=&p03=&p04=&p05=&p06=&p07=&…");
        assert_eq!(QueryShape::of_query(&query.join("&")).names().len(), 30);
        let endless = "&x=1".repeat(100_000) + "&a=1";
        assert_eq!(QueryShape::of_query(&endless).names(), ["x"], "only the first parameters are read");
    }
}
