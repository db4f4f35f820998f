//! Access logs in an nginx `log_format` (Apache's combined format writes the same line).
//!
//! The format string is compiled once into literals and `$variables`; a line is read by matching the
//! literals in order, each variable taking the text up to the next literal (a quote preceded by a backslash
//! does not end a quoted field). Text after the last literal is ignored, so the many "combined plus extras"
//! formats read as combined. nginx writes `"`, `\` and control bytes as `\xHH`; those are decoded.

use chrono::{DateTime, Utc};

use super::{Recorded, excerpt, method, status, target};
use crate::tape::format::TapeRequest;

/// nginx's (and Apache's) combined format.
const COMBINED: &str = r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent""#;
/// The common log format: combined without referer and user agent.
const COMMON: &str = r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent"#;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(String),
    Variable(String),
}

/// A compiled `log_format`.
#[derive(Debug, Clone)]
pub struct LogFormat {
    name: String,
    tokens: Vec<Token>,
}

impl LogFormat {
    /// `combined`, `common`, or a `log_format` string such as `'$remote_addr [$time_iso8601] "$request" $status'`.
    pub fn named_or_parsed(text: &str) -> Result<Self, String> {
        let (name, format) = match text {
            "combined" => ("combined", COMBINED),
            "common" => ("common", COMMON),
            custom if custom.contains('$') => ("custom", custom),
            other => {
                return Err(format!(
                    "`{}` is not a format: use combined, common, json, har, or an nginx log_format string with $variables",
                    excerpt(other)
                ));
            }
        };
        let tokens = compile(format);
        let has = |v: &str| tokens.contains(&Token::Variable(v.to_owned()));
        if !(has("request") || (has("request_method") && (has("request_uri") || has("uri")))) {
            return Err("the log format needs $request, or $request_method with $request_uri (or $uri)".to_owned());
        }
        Ok(Self { name: name.to_owned(), tokens })
    }

    /// `combined`, `common` or `custom`.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one log line.
    pub fn parse(&self, line: &str) -> Result<Recorded, String> {
        let fields = self.fields(line)?;
        let get = |name: &str| {
            fields.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str()).filter(|v| !v.is_empty() && *v != "-")
        };
        let (method_text, target_text) = if let Some(request) = get("request") {
            let mut parts = request.split(' ');
            match (parts.next(), parts.next(), parts.next(), parts.next()) {
                (Some(m), Some(t), _, None) => (m.to_owned(), t.to_owned()),
                _ => return Err(format!("request: `{}` is not an HTTP request line", excerpt(request))),
            }
        } else {
            let uri = get("request_uri").map(str::to_owned).or_else(|| {
                get("uri").map(|u| get("args").or(get("query_string")).map_or(u.to_owned(), |a| format!("{u}?{a}")))
            });
            (get("request_method").unwrap_or_default().to_owned(), uri.unwrap_or_default())
        };
        let method = method(&method_text).map_err(|e| format!("request: {e}"))?;
        let (target, absolute_host) = target(&target_text).map_err(|e| format!("request: {e}"))?;
        let mut request = TapeRequest::new(method, target);
        request.status = status(get("status").unwrap_or_default()).map_err(|e| format!("status: {e}"))?;
        request.time = recorded_time(&get)?;
        request.body = get("request_body").map(str::to_owned);
        let headers = fields
            .iter()
            .filter(|(_, v)| !v.is_empty() && v != "-")
            .filter_map(|(name, value)| {
                let header = match *name {
                    "content_type" => "content-type".to_owned(),
                    n => n.strip_prefix("http_")?.replace('_', "-"),
                };
                Some((header, value.clone()))
            })
            .collect();
        let host =
            absolute_host.or_else(|| get("host").or(get("http_host")).or(get("server_name")).map(str::to_lowercase));
        Ok(Recorded { request, headers, host, unreadable_body: false })
    }

    /// Each variable's text in `line`, decoded.
    fn fields<'f>(&'f self, line: &str) -> Result<Vec<(&'f str, String)>, String> {
        let mut fields = Vec::new();
        let mut at = 0;
        for (index, token) in self.tokens.iter().enumerate() {
            match token {
                Token::Literal(literal) => {
                    if !line[at..].starts_with(literal.as_str()) {
                        let found = excerpt(&line[at..]);
                        return Err(format!("expected `{literal}` at column {}, found `{found}`", at + 1));
                    }
                    at += literal.len();
                }
                Token::Variable(name) => {
                    let end = match self.tokens.get(index + 1) {
                        Some(Token::Literal(next)) => find_unescaped(line, at, next).ok_or_else(|| {
                            format!("{name}: no `{next}` after it: not a line of this log format, or cut short")
                        })?,
                        Some(Token::Variable(_)) => at,
                        None => line.len(),
                    };
                    fields.push((name.as_str(), decode(&line[at..end])));
                    at = end;
                }
            }
        }
        Ok(fields)
    }
}

fn compile(format: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut literal = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        let braced = c == '$' && chars.peek() == Some(&'{');
        let named = c == '$' && chars.peek().is_some_and(|n| n.is_ascii_alphanumeric() || *n == '_');
        if !(braced || named) {
            literal.push(c);
            continue;
        }
        if braced {
            chars.next();
        }
        let mut name = String::new();
        while let Some(&n) = chars.peek().filter(|n| n.is_ascii_alphanumeric() || **n == '_') {
            name.push(n);
            chars.next();
        }
        if braced && chars.peek() == Some(&'}') {
            chars.next();
        }
        if !literal.is_empty() {
            tokens.push(Token::Literal(std::mem::take(&mut literal)));
        }
        tokens.push(Token::Variable(name));
    }
    if !literal.is_empty() {
        tokens.push(Token::Literal(literal));
    }
    tokens
}

/// Where `literal` next occurs from `from`, skipping occurrences right after a backslash.
fn find_unescaped(line: &str, from: usize, literal: &str) -> Option<usize> {
    let mut start = from;
    loop {
        let found = start + line[start..].find(literal)?;
        if found == 0 || line.as_bytes()[found - 1] != b'\\' {
            return Some(found);
        }
        // Past the whole first character: a literal may start with a multibyte one (`«`).
        start = found + literal.chars().next().map_or(1, char::len_utf8);
    }
}

/// nginx's `\xHH` escapes and Apache's `\"` and `\\`, decoded; invalid UTF-8 made visible.
fn decode(text: &str) -> String {
    if !text.contains('\\') {
        return text.to_owned();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = || std::str::from_utf8(bytes.get(i + 2..i + 4)?).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], bytes.get(i + 1)) {
            (b'\\', Some(b'x')) if hex().is_some() => {
                out.push(hex().unwrap_or_default());
                i += 4;
            }
            (b'\\', Some(&next @ (b'"' | b'\\'))) => {
                out.push(next);
                i += 2;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// When a line says it was sent: `$time_local`, else `$time_iso8601` or `$msec`; `None` when the format
/// records none (or the line has `-`). A time that is there but cannot be read makes the line malformed,
/// reported with its number, rather than a request kept without its time, which `--since`/`--until` and the
/// recorded rate would silently miss.
fn recorded_time<'a>(get: &dyn Fn(&str) -> Option<&'a str>) -> Result<Option<DateTime<Utc>>, String> {
    let local = get("time_local");
    if let Some(time) = local.and_then(|t| DateTime::parse_from_str(t, "%d/%b/%Y:%H:%M:%S %z").ok()) {
        return Ok(Some(time.to_utc()));
    }
    let others = [("time_iso8601", get("time_iso8601")), ("msec", get("msec"))];
    if let Some(time) = others.iter().find_map(|(_, t)| t.and_then(super::time)) {
        return Ok(Some(time));
    }
    let unread = local.map(|t| ("time_local", t)).or_else(|| others.iter().find_map(|(n, t)| t.map(|t| (*n, t))));
    match unread {
        Some((field, text)) => Err(format!("{field}: `{}` is not a time this log format writes", excerpt(text))),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_combined_line_is_a_request() {
        let format = LogFormat::named_or_parsed("combined").unwrap();
        let line = r#"10.0.0.1 - - [30/Nov/2026:10:00:01 +0000] "GET /api/boards/17?x=\x22y\x22 HTTP/1.1" 200 512 "-" "Mozilla/5.0 (X11) \"quoted\"" "extra""#;
        let recorded = format.parse(line).unwrap();
        assert_eq!(recorded.request.method, http::Method::GET);
        assert_eq!(recorded.request.target, "/api/boards/17?x=\"y\"");
        assert_eq!(recorded.request.status, Some(200));
        assert_eq!(recorded.request.time.unwrap().to_rfc3339(), "2026-11-30T10:00:01+00:00");
        assert_eq!(recorded.headers, [("user-agent".to_owned(), "Mozilla/5.0 (X11) \"quoted\"".to_owned())]);
    }

    #[test]
    fn text_past_ascii_that_nginx_escaped_is_sent_percent_encoded() {
        let format = LogFormat::named_or_parsed("combined").unwrap();
        let line = r#"10.0.0.1 - - [30/Nov/2026:10:00:01 +0000] "GET /search?q=caf\xC3\xA9 HTTP/1.1" 200 5 "-" "-""#;
        assert_eq!(format.parse(line).unwrap().request.target, "/search?q=caf%C3%A9");
    }

    #[test]
    fn junk_lines_say_what_is_wrong() {
        let format = LogFormat::named_or_parsed("combined").unwrap();
        let tls = r#"1.2.3.4 - - [30/Nov/2026:10:00:01 +0000] "\x16\x03\x01\x02\x00" 400 157 "-" "-""#;
        assert!(format.parse(tls).unwrap_err().starts_with("request: "), "{:?}", format.parse(tls));
        assert!(format.parse("hello world").unwrap_err().contains("not a line of this log format"));
        let cut = r#"1.2.3.4 - - [30/Nov/2026:10:00:01 +0000] "GET /a HTT"#;
        assert!(format.parse(cut).unwrap_err().starts_with("request: no `\" ` after it"), "{:?}", format.parse(cut));
        let status = r#"1.2.3.4 - - [30/Nov/2026:10:00:01 +0000] "GET /a HTTP/1.1" abc 1 "-" "-""#;
        assert!(format.parse(status).unwrap_err().starts_with("status: "));
        let time = r#"1.2.3.4 - - [30/Nov/2026 10h00] "GET /a HTTP/1.1" 200 1 "-" "-""#;
        assert_eq!(
            format.parse(time).unwrap_err(),
            "time_local: `30/Nov/2026 10h00` is not a time this log format writes"
        );
        let unknown = r#"1.2.3.4 - - [-] "GET /a HTTP/1.1" 200 1 "-" "-""#;
        assert_eq!(format.parse(unknown).unwrap().request.time, None, "`-`: no time recorded, kept");
    }

    #[test]
    fn a_literal_of_multibyte_characters_never_splits_one() {
        let format = LogFormat::named_or_parsed("$remote_addr «$request» $status").unwrap();
        // The request ends at the first `» ` whole: `GET /\»`, its target sent percent-encoded.
        assert_eq!(format.parse(r"1.1.1.1 «GET /\» » 200").unwrap().request.target, "/\\%C2%BB");
        assert_eq!(format.parse("1.1.1.1 «GET /a» 200").unwrap().request.target, "/a");
    }

    #[test]
    fn a_custom_format_reads_its_own_fields() {
        let format = LogFormat::named_or_parsed(
            r#"$time_iso8601 $host "$request_method $request_uri" $status "$request_body" ${http_content_type}"#,
        )
        .unwrap();
        let recorded = format
            .parse(r#"2026-11-30T10:00:01+00:00 api.example.com "POST /boards" 201 "{\x22title\x22:\x22a b\x22}" application/json"#)
            .unwrap();
        assert_eq!(recorded.request.method, http::Method::POST);
        assert_eq!(recorded.request.body.as_deref(), Some(r#"{"title":"a b"}"#));
        assert_eq!(recorded.host.as_deref(), Some("api.example.com"));
        assert_eq!(recorded.headers, [("content-type".to_owned(), "application/json".to_owned())]);
        assert!(LogFormat::named_or_parsed("$remote_addr $status").is_err());
        assert!(LogFormat::named_or_parsed("fancy").is_err());
    }
}
