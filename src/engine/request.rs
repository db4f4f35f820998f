//! A step's request encoded as the bytes that go on the wire (HTTP/1.1), rendered at the moment it is sent.
//!
//! What can be decided once is decided when the run starts ([`StepRequest::prepare`]): which of the
//! target's headers a step's own replace, whether degrade writes `Host` and the JSON content type, and, for a
//! step without templates, the whole request, which each send then shares instead of encoding it again.

use std::fmt::Write as _;

use bytes::{BufMut, BytesMut};
use http::{HeaderName, Method, header};
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};

use super::failure::Failure;
use super::http1::Outgoing;
use crate::metrics::ErrorClass;
use crate::scenario::Plan;
use crate::scenario::plan::{Body, Step};
use crate::scenario::template::DrawTallies;
use crate::scenario::template::{RenderContext, Template};
use crate::tape::TapeRequest;

/// The header fields degrade writes on every gRPC call.
const GRPC_FIELDS: [&str; 3] = ["content-type", "te", "grpc-timeout"];

/// How one step's requests are encoded.
pub(super) struct StepRequest {
    /// The whole request of a step without templates.
    fixed: Option<Outgoing>,
    /// The target's headers the step does not replace with its own, by index.
    target_headers: Vec<usize>,
    /// Whether degrade writes `Host` (the scenario did not set it).
    host: bool,
    /// The `Content-Type` degrade writes (a JSON or Protobuf body whose type was not set; every gRPC call).
    content_type: Option<&'static str>,
    /// A gRPC call's `te: trailers` and `grpc-timeout`, which degrade writes.
    grpc_fields: Vec<(&'static str, String)>,
}

impl StepRequest {
    /// Decides what can be decided before the run, for each flow's steps.
    pub(super) fn prepare(plan: &Plan, host_header: &str, prefix: &str) -> Vec<Vec<Self>> {
        plan.flows
            .iter()
            .map(|flow| flow.steps.iter().map(|step| Self::for_step(plan, step, host_header, prefix)).collect())
            .collect()
    }

    fn for_step(plan: &Plan, step: &Step, host_header: &str, prefix: &str) -> Self {
        // A gRPC call's content type, `te` and `grpc-timeout` are degrade's: a target's header of those names
        // is left out of it, as a step's own would be.
        let grpc_field = |name: &HeaderName| step.grpc.is_some() && GRPC_FIELDS.contains(&name.as_str());
        let by_step = |name: &HeaderName| grpc_field(name) || step.headers.iter().any(|(n, _)| n == name);
        let target_headers: Vec<usize> =
            (0..plan.target.headers.len()).filter(|&i| !by_step(&plan.target.headers[i].0)).collect();
        let set =
            |name: &HeaderName| by_step(name) || target_headers.iter().any(|&i| plan.target.headers[i].0 == *name);
        let mut request = Self {
            fixed: None,
            host: !set(&header::HOST),
            content_type: content_type(step).filter(|_| step.grpc.is_some() || !set(&header::CONTENT_TYPE)),
            grpc_fields: grpc_fields(step),
            target_headers,
        };
        let literal = |t: &Template| t.as_literal().is_some();
        let fixed = literal(&step.path)
            && step.query.is_empty()
            && request.headers(plan, step).all(|(_, t)| literal(t))
            && match &step.body {
                None | Some(Body::Bytes(_)) => true,
                Some(Body::Text(t)) => literal(t),
                Some(Body::Json(t)) => t.expressions().is_empty(),
                Some(Body::Proto(p)) => p.json.expressions().is_empty(),
            };
        if fixed {
            // Nothing here reads the context: the templates are fixed text.
            let seq = std::sync::atomic::AtomicU64::new(0);
            let mut rng = rand::SeedableRng::seed_from_u64(0);
            let mut cx =
                RenderContext { rows: &[], variables: &[], rng: &mut rng, seq: &seq, tallies: &DrawTallies::default() };
            // Not fixed yet, so this renders the step.
            request.fixed = request.build(plan, step, host_header, prefix, &mut cx).ok();
        }
        request
    }

    /// The headers written for the step: the target's it keeps, then its own.
    fn headers<'a>(&'a self, plan: &'a Plan, step: &'a Step) -> impl Iterator<Item = &'a (HeaderName, Template)> {
        self.target_headers.iter().map(|&i| &plan.target.headers[i]).chain(&step.headers)
    }

    /// The request for one send: the shared bytes of a fixed step, or the step rendered now.
    pub(super) fn build(
        &self,
        plan: &Plan,
        step: &Step,
        host_header: &str,
        prefix: &str,
        cx: &mut RenderContext<'_>,
    ) -> Result<Outgoing, Failure> {
        if let Some(fixed) = &self.fixed {
            return Ok(fixed.clone());
        }
        let target = request_target(step, prefix, cx)?;
        let mut head = RequestHead::new(&step.method, &target);
        if self.host {
            head.header(header::HOST.as_str(), host_header);
        }
        head.rendered_headers(self.headers(plan, step), cx).map_err(|e| Failure::new(ErrorClass::Protocol, e))?;
        if let Some(content_type) = self.content_type {
            head.header(header::CONTENT_TYPE.as_str(), content_type);
        }
        for (name, value) in &self.grpc_fields {
            head.header(name, value);
        }
        let body = match &step.body {
            None => Vec::new(),
            Some(Body::Text(t)) => t.render(cx).into_bytes(),
            Some(Body::Json(t)) => t.render(cx).to_string().into_bytes(),
            Some(Body::Proto(p)) => super::protobuf::encode(p, cx)?,
            Some(Body::Bytes(b)) => b.to_vec(),
        };
        Ok(head.finish(&step.method, &body))
    }
}

/// The content type degrade writes for `step`'s body, unless the scenario set one (a gRPC call always has
/// gRPC's).
fn content_type(step: &Step) -> Option<&'static str> {
    match &step.body {
        _ if step.grpc.is_some() => Some("application/grpc"),
        Some(Body::Json(_)) => Some("application/json"),
        Some(Body::Proto(_)) => Some("application/x-protobuf"),
        _ => None,
    }
}

/// The fields a gRPC call carries besides its metadata: `te: trailers` (gRPC's servers refuse a call without
/// it) and its deadline as `grpc-timeout`, in milliseconds (at most 8 digits: a deadline is at most an hour).
fn grpc_fields(step: &Step) -> Vec<(&'static str, String)> {
    let Some(call) = &step.grpc else { return Vec::new() };
    let mut fields = vec![("te", "trailers".to_owned())];
    if let Some(deadline) = call.deadline {
        fields.push(("grpc-timeout", format!("{}m", deadline.as_millis().max(1))));
    }
    fields
}

/// A recorded request of a tape, below the base URL's `prefix`, with the target's headers (a header the
/// tape recorded wins over the target's of the same name, as a step's does).
pub(super) fn replayed(
    plan: &Plan,
    request: &TapeRequest,
    host_header: &str,
    prefix: &str,
    cx: &mut RenderContext<'_>,
) -> Result<Outgoing, String> {
    let target = format!("{prefix}{}", request.target);
    if !is_request_target(&target) {
        return Err("the path has a space, a control or a non-ASCII character".to_owned());
    }
    let recorded = |name: &HeaderName| request.headers.iter().any(|(n, _)| n == name.as_str());
    let mut head = RequestHead::new(&request.method, &target);
    let host_set = recorded(&header::HOST) || plan.target.headers.iter().any(|(n, _)| *n == header::HOST);
    if !host_set {
        head.header(header::HOST.as_str(), host_header);
    }
    head.rendered_headers(plan.target.headers.iter().filter(|(name, _)| !recorded(name)), cx)?;
    for (name, value) in &request.headers {
        head.header(name, value);
    }
    Ok(head.finish(&request.method, request.body.as_deref().unwrap_or_default().as_bytes()))
}

/// A GET of `target` (origin form) from `host_header`: a build's version or health URL.
pub(super) fn get(target: &str, host_header: &str) -> Result<Outgoing, String> {
    if !is_request_target(target) {
        return Err("the URL has characters that cannot go in a request".to_owned());
    }
    let mut head = RequestHead::new(&Method::GET, target);
    head.header(header::HOST.as_str(), host_header);
    Ok(head.finish(&Method::GET, &[]))
}

/// The request line and headers, written as they are added.
struct RequestHead(BytesMut);

impl RequestHead {
    fn new(method: &Method, target: &str) -> Self {
        let mut bytes = BytesMut::with_capacity(256);
        bytes.put_slice(method.as_str().as_bytes());
        bytes.put_u8(b' ');
        bytes.put_slice(target.as_bytes());
        bytes.put_slice(b" HTTP/1.1\r\n");
        Self(bytes)
    }

    fn header(&mut self, name: &str, value: &str) {
        self.0.put_slice(name.as_bytes());
        self.0.put_slice(b": ");
        self.0.put_slice(value.as_bytes());
        self.0.put_slice(b"\r\n");
    }

    /// Adds templated headers, rendered now; one that renders to a value a header cannot hold (a line
    /// break) fails the request.
    fn rendered_headers<'a>(
        &mut self,
        headers: impl Iterator<Item = &'a (HeaderName, Template)>,
        cx: &mut RenderContext<'_>,
    ) -> Result<(), String> {
        for (name, value) in headers {
            let value = value.render(cx);
            if !is_header_value(&value) {
                return Err(format!("header {name} renders to an invalid value"));
            }
            self.header(name.as_str(), &value);
        }
        Ok(())
    }

    /// Adds the body's length and the body. An empty body has no `Content-Length` (RFC 9110 section 8.6),
    /// except on POST, PUT and PATCH, which usually carry one and where some servers answer 411 without it
    /// (curl sends `0` there too).
    fn finish(mut self, method: &Method, body: &[u8]) -> Outgoing {
        if !body.is_empty() || matches!(*method, Method::POST | Method::PUT | Method::PATCH) {
            // Written in place: `fmt::Write` on the buffer cannot fail.
            let _ = write!(self.0, "content-length: {}\r\n", body.len());
        }
        self.0.put_slice(b"\r\n");
        self.0.put_slice(body);
        Outgoing { bytes: self.0.freeze(), response_has_body: *method != Method::HEAD }
    }
}

/// What a value put into a path by a template is percent-encoded for: the URL Standard's path percent-encode
/// set (controls, space, `"`, `#`, `<`, `>`, `?`, `` ` ``, `{`, `}`) and every byte of a non-ASCII character.
/// A `/` or a `%` stays, so a feeder column of sub-paths or of values encoded already is sent as written.
const PATH_VALUE: &AsciiSet = &WHOLE_TARGET.add(b'#').add(b'?');

/// The same for a path that is one value and nothing else (`path = "{{ location }}"`, a `Location` header): a
/// request target of its own, whose `?` starts its query and whose `#` its fragment.
const WHOLE_TARGET: &AsciiSet = &CONTROLS.add(b' ').add(b'"').add(b'<').add(b'>').add(b'`').add(b'{').add(b'}');

/// `value` as a template puts it into a path: a name with a space (`Jane Doe`) is sent as `Jane%20Doe`, as a
/// browser or an HTTP library would send it, instead of failing every request that drew it.
fn path_value(value: &str) -> String {
    utf8_percent_encode(value, PATH_VALUE).to_string()
}

/// `value` as the whole of a path (see [`WHOLE_TARGET`]).
fn whole_target_value(value: &str) -> String {
    utf8_percent_encode(value, WHOLE_TARGET).to_string()
}

/// The step's path rendered, each value encoded as its place in it asks ([`path_value`], [`whole_target_value`]).
pub(super) fn rendered_path(path: &Template, cx: &mut RenderContext<'_>) -> String {
    if path.is_one_expression() {
        path.render_escaped(cx, whole_target_value)
    } else {
        path.render_escaped(cx, path_value)
    }
}

/// The request target (origin form): the base URL's path, the step's path, and its query encoded.
fn request_target(step: &Step, prefix: &str, cx: &mut RenderContext<'_>) -> Result<String, Failure> {
    let mut path = rendered_path(&step.path, cx);
    // A URL's fragment never goes to the server (as `http::Uri` dropped it before).
    if let Some(fragment) = path.find('#') {
        path.truncate(fragment);
    }
    if !path.starts_with('/') {
        return Err(Failure::new(ErrorClass::Protocol, format!("the path `{path}` does not start with `/`")));
    }
    let mut target = format!("{prefix}{path}");
    if !step.query.is_empty() {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (key, value) in &step.query {
            query.append_pair(key, &value.render(cx));
        }
        target.push(if target.contains('?') { '&' } else { '?' });
        target.push_str(&query.finish());
    }
    if !is_request_target(&target) {
        let message = "cannot build the request: the path has a space, a control or a non-ASCII character";
        return Err(Failure::new(ErrorClass::Protocol, message));
    }
    Ok(target)
}

/// Visible ASCII only: a space or a line break would end the request line early.
fn is_request_target(target: &str) -> bool {
    !target.is_empty() && target.bytes().all(|b| b.is_ascii_graphic())
}

/// What a header value may hold (as `http::HeaderValue`): no control characters but tab, so no line break.
fn is_header_value(value: &str) -> bool {
    value.bytes().all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_a_request_line_headers_and_a_sized_body() {
        let mut head = RequestHead::new(&Method::POST, "/boards?x=1");
        head.header("host", "127.0.0.1:8080");
        let outgoing = head.finish(&Method::POST, b"{}");
        assert_eq!(
            &outgoing.bytes[..],
            b"POST /boards?x=1 HTTP/1.1\r\nhost: 127.0.0.1:8080\r\ncontent-length: 2\r\n\r\n{}"
        );
        let get = get("/version", "example.org").unwrap();
        assert_eq!(&get.bytes[..], b"GET /version HTTP/1.1\r\nhost: example.org\r\n\r\n");
        let head_request = RequestHead::new(&Method::HEAD, "/").finish(&Method::HEAD, b"");
        assert!(!head_request.response_has_body);
        let delete = RequestHead::new(&Method::DELETE, "/a/1").finish(&Method::DELETE, b"");
        assert_eq!(&delete.bytes[..], b"DELETE /a/1 HTTP/1.1\r\n\r\n");
        let put = RequestHead::new(&Method::PUT, "/a/1").finish(&Method::PUT, b"");
        assert!(put.bytes.ends_with(b"content-length: 0\r\n\r\n"));
    }

    #[test]
    fn nothing_rendered_can_end_a_line_early() {
        assert!(!is_request_target("/a b"));
        assert!(!is_request_target("/a\r\nx: y"));
        assert!(!is_request_target("/café"));
        assert!(is_request_target("/a/{b}?c=%20"));
        assert!(!is_header_value("a\r\nx: y"));
        assert!(is_header_value("Bearer abc\tdef é"));
        assert!(get("/a b", "h").is_err());
    }

    #[test]
    fn a_value_put_into_a_path_is_percent_encoded_where_a_url_needs_it() {
        assert_eq!(path_value("Jane Doe"), "Jane%20Doe");
        assert_eq!(path_value("café"), "caf%C3%A9");
        assert_eq!(path_value("what?#top"), "what%3F%23top");
        assert_eq!(path_value("x\r\nHost: y"), "x%0D%0AHost:%20y");
        // Sub-paths and values encoded already are sent as written.
        assert_eq!(path_value("a/b%2Fc"), "a/b%2Fc");
        assert!(is_request_target(&format!("/users/{}", path_value("名前 \u{7f}"))));
        // A whole path from one value (a Location) keeps its query and fragment.
        assert_eq!(whole_target_value("/boards/7?tab=cards#top"), "/boards/7?tab=cards#top");
        assert_eq!(whole_target_value("/boards/Q4 plan"), "/boards/Q4%20plan");
    }
}
