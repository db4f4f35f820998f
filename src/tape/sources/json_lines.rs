//! JSON Lines logs: one object per request, as structured loggers and API gateways write them.
//!
//! Keys read: `method`; the target from `path`, `url`, `uri` or `request_uri` (or a whole request line in
//! `request`); `status`; optional `body` (a string, or JSON kept as JSON), `headers` (an object, or a list of
//! `{name, value}`), `time` (or `timestamp`: RFC 3339 or seconds since the epoch), `session` and `host`.

use serde_json::{Map, Value};

use super::{Recorded, method, status, target};
use crate::tape::format::TapeRequest;

/// Reads one line.
pub(super) fn parse(line: &str) -> Result<Recorded, String> {
    let object = match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(object)) => object,
        Ok(_) => return Err("not a JSON object".to_owned()),
        Err(e) => return Err(format!("not JSON: {e}")),
    };
    let text = |key: &str| match object.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let (method_text, target_text) =
        match (text("method"), ["path", "url", "uri", "request_uri"].iter().find_map(|k| text(k))) {
            (Some(m), Some(t)) => (m, t),
            (m, t) => match text("request") {
                Some(line) if m.is_none() && t.is_none() => {
                    let mut parts = line.split(' ');
                    (parts.next().unwrap_or_default().to_owned(), parts.next().unwrap_or_default().to_owned())
                }
                _ if m.is_none() => return Err("method: missing".to_owned()),
                _ => return Err("path: missing (or `url`, `uri`, `request_uri`)".to_owned()),
            },
        };
    let method = method(&method_text.to_ascii_uppercase()).map_err(|e| format!("method: {e}"))?;
    let (target, absolute_host) = target(&target_text).map_err(|e| format!("path: {e}"))?;
    let mut request = TapeRequest::new(method, target);
    request.status = status(&text("status").unwrap_or_default()).map_err(|e| format!("status: {e}"))?;
    // A time that is there but cannot be read makes the line malformed, rather than kept without its time.
    request.time =
        match ["time", "timestamp"].iter().find_map(|key| text(key).filter(|t| !t.is_empty()).map(|t| (key, t))) {
            Some((key, time)) => Some(super::time(&time).ok_or_else(|| {
                format!("{key}: `{}` is not a time (RFC 3339, or seconds since the epoch)", super::excerpt(&time))
            })?),
            None => None,
        };
    request.session = text("session");
    request.body = match object.get("body") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(json) => Some(json.to_string()),
    };
    let headers = headers(&object).map_err(|e| format!("headers: {e}"))?;
    let host = absolute_host.or_else(|| text("host").map(|h| h.to_ascii_lowercase()));
    Ok(Recorded { request, headers, host, unreadable_body: false })
}

fn headers(object: &Map<String, Value>) -> Result<Vec<(String, String)>, String> {
    let as_text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    match object.get("headers") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| as_text(v).map(|v| (k.to_ascii_lowercase(), v)).ok_or_else(|| format!("`{k}` is not text")))
            .collect(),
        Some(Value::Array(list)) => list
            .iter()
            .map(|item| {
                let name = item.get("name").and_then(as_text);
                let value = item.get("value").and_then(as_text);
                name.zip(value)
                    .map(|(n, v)| (n.to_ascii_lowercase(), v))
                    .ok_or("each header is {name, value}".to_owned())
            })
            .collect(),
        Some(_) => Err("an object of name: value, or a list of {name, value}".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_requests_or_say_why_not() {
        let recorded = parse(
            r#"{"method":"post","url":"https://API.example.com/boards?x=1","status":201,"body":{"title":"a"},"headers":{"Content-Type":"application/json"},"time":"2026-11-30T10:00:00Z","session":7}"#,
        )
        .unwrap();
        assert_eq!(recorded.request.method, http::Method::POST);
        assert_eq!(recorded.request.target, "/boards?x=1");
        assert_eq!(recorded.host.as_deref(), Some("api.example.com"));
        assert_eq!(recorded.request.body.as_deref(), Some(r#"{"title":"a"}"#));
        assert_eq!(recorded.request.session.as_deref(), Some("7"));
        assert_eq!(recorded.headers, [("content-type".to_owned(), "application/json".to_owned())]);
        assert_eq!(parse(r#"{"request":"GET /a HTTP/1.1","status":"404"}"#).unwrap().request.status, Some(404));
        assert_eq!(parse("{oops").unwrap_err().split(':').next(), Some("not JSON"));
        assert_eq!(parse(r#"{"status":200}"#).unwrap_err(), "method: missing");
        assert!(parse(r#"{"method":"GET","path":"/a","status":9}"#).unwrap_err().starts_with("status:"));
        assert_eq!(
            parse(r#"{"method":"GET","path":"/a","status":200,"time":"yesterday"}"#).unwrap_err(),
            "time: `yesterday` is not a time (RFC 3339, or seconds since the epoch)"
        );
    }
}
