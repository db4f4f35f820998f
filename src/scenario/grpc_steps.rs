//! Checks gRPC steps (`grpc = "package.Service/Method"`): the method resolved in the `[proto]` files, the
//! request written as JSON and checked against the method's input type field by field, metadata as headers
//! (templated as every header), a `deadline`, and the accepted `grpc-status` codes. The step becomes an HTTP/2
//! POST to `/package.Service/Method` carrying one framed Protobuf message, so the engine times it on the same
//! connections, with the same caps, as every HTTP/2 request.

use std::time::Duration;

use http::Method;
use toml::Spanned;

use super::json_template::JsonTemplate;
use super::plan::{Body, GrpcCall, ProtoBody, Protocol, Step};
use super::raw_scenario::RawStep;
use super::scope::{Scope, header_templates};
use super::step_values::{duration, parse_think, resolve_expect};
use super::template::Template;
use crate::config::{Checker, plain_name};

/// Headers degrade writes on every gRPC call: a step may not set them, as the call would not be gRPC.
const RESERVED_METADATA: [&str; 3] = ["content-type", "te", "grpc-timeout"];

/// Longest `deadline`: gRPC's `grpc-timeout` holds at most 8 digits, and a night's call of more than an hour
/// is a typo.
const MAX_DEADLINE: Duration = Duration::from_hours(1);

/// One gRPC step; the variables it extracts are already in `scope`.
pub(super) fn resolve_grpc_step(
    checker: &mut Checker<'_>,
    scope: &mut Scope<'_>,
    prefix: &str,
    raw: RawStep,
    known: &[usize],
    later: &[String],
) -> Option<Step> {
    let field = |f: &str| format!("{prefix}.{f}");
    super::step_values::refuse_ws_keys(checker, &raw, &field);
    refuse_http_keys(checker, &raw, &field);
    if let Some(status) = raw.expect.as_ref().and_then(|e| e.status.as_ref()) {
        let message = "a gRPC call's outcome is its `grpc_status` (its HTTP status is always 200)";
        checker.error(status, &field("expect.status"), message);
    }
    let RawStep { name, grpc, headers, json, expect, extract, think, deadline, .. } = raw;
    let grpc = grpc?;
    if let Some(name) = &name {
        checker.check(name, &field("name"), |n| plain_name(n));
    }
    let Some(pool) = scope.protos.clone() else {
        if scope.protos_failed {
            return None;
        }
        let message = "a gRPC step needs the service's `.proto` files: add `[proto] files = [\"api.proto\"]`";
        checker.error(&grpc, &field("grpc"), message);
        return None;
    };
    let method = checker.check(&grpc, &field("grpc"), |g| {
        let method = super::proto::method(&pool, g)?;
        if method.is_client_streaming() {
            return Err(format!("`{g}` takes a stream of requests: only unary and server-streaming calls are run"));
        }
        Ok(method)
    });
    for (key, value) in &headers {
        if RESERVED_METADATA.contains(&key.to_ascii_lowercase().as_str()) {
            checker.error(value, &field(&format!("headers.{key}")), format!("degrade sets `{key}` on a gRPC call"));
        }
    }
    let metadata = header_templates(checker, scope, &headers, &field("headers"), known, later);
    let body = method.as_ref().and_then(|method| {
        // No `json` is the request message with every field at its default.
        let json = json.unwrap_or_else(|| Spanned::new(grpc.span(), toml::Value::Table(toml::Table::new())));
        request_message(checker, scope, method, &json, (&field("json"), known, later))
    });
    let deadline = resolve_deadline(checker, deadline.as_ref(), &field("deadline")).ok();
    let expect = resolve_expect(checker, &field("expect"), expect);
    let extract = super::step_values::resolve_extract(checker, scope, prefix, &extract);
    let think = think.and_then(|t| checker.check(&t, &field("think"), parse_think));
    let (method, body, deadline, expect) = (method?, body?, deadline?, expect?);
    let path = format!("/{}/{}", method.parent_service().full_name(), method.name());
    let key = if let Some(name) = name {
        name.into_inner()
    } else {
        let key = format!("gRPC {}", &path[1..]);
        scope.keys.grpc_call(checker, prefix, &key, &expect.grpc_status);
        key
    };
    let endpoint = scope.endpoint(&key);
    let first_message = method.is_server_streaming().then(|| scope.endpoint(&format!("{key} (first message)")));
    Some(Step {
        endpoint,
        method: Method::POST,
        path: Template::literal(&path),
        query: Vec::new(),
        headers: metadata,
        body: Some(body),
        expect,
        extract,
        think,
        ws: None,
        protocol: Some(Protocol::Http2),
        grpc: Some(GrpcCall { method, deadline, first_message }),
        decode: None,
    })
}

/// The request message of a call to `method` from its `json`, checked against the message's fields, as a template.
fn request_message(
    checker: &mut Checker<'_>,
    scope: &Scope<'_>,
    method: &prost_reflect::MethodDescriptor,
    json: &Spanned<toml::Value>,
    (field, known, later): (&str, &[usize], &[String]),
) -> Option<Body> {
    checker.check(json, field, |v| super::proto_json::check_message(v, &method.input()))?;
    let resolve = |names: &[&str]| scope.resolve(names, known, later);
    let mut compiled = checker.check(json, field, |v| JsonTemplate::compile(v, &resolve, scope.env))?;
    scope.number_json_draws(&mut compiled);
    Some(Body::Proto(ProtoBody { message: method.input(), json: compiled, grpc_framed: true }))
}

/// A gRPC step whose `deadline` is longer than `[target] timeout`: its calls end at the timeout (as `timeout`,
/// not `grpc_deadline_exceeded`), which the deadline seems to say otherwise.
pub(super) fn deadlines_past_the_timeout(
    flows: &[super::plan::Flow],
    endpoints: &[String],
    timeout: Duration,
) -> Vec<String> {
    let steps = flows.iter().flat_map(|f| &f.steps);
    steps
        .filter_map(|step| Some((step, step.grpc.as_ref()?.deadline?)))
        .filter(|(_, deadline)| *deadline > timeout)
        .map(|(step, deadline)| {
            format!(
                "{}: deadline {} is longer than [target] timeout {}: its calls end at the timeout",
                endpoints[step.endpoint],
                humantime::format_duration(deadline),
                humantime::format_duration(timeout)
            )
        })
        .collect()
}

/// `deadline`: `Ok(None)` when unset, `Err(())` when set wrong (the error is recorded).
fn resolve_deadline(
    checker: &mut Checker<'_>,
    deadline: Option<&Spanned<String>>,
    field: &str,
) -> Result<Option<Duration>, ()> {
    let Some(deadline) = deadline else { return Ok(None) };
    checker
        .check(deadline, field, |d| {
            duration(d).and_then(|d| {
                (!d.is_zero() && d <= MAX_DEADLINE)
                    .then_some(d)
                    .ok_or_else(|| "a deadline is from 1ms to 1h".to_owned())
            })
        })
        .map(Some)
        .ok_or(())
}

/// A gRPC step refuses the keys of HTTP steps it has no use for: set there, they would be silently ignored.
fn refuse_http_keys(checker: &mut Checker<'_>, raw: &RawStep, field: &dyn Fn(&str) -> String) {
    let spans = [
        ("method", raw.method.as_ref().map(Spanned::span)),
        ("path", raw.path.as_ref().map(Spanned::span)),
        ("query", raw.query.values().next().map(Spanned::span)),
        ("body", raw.body.as_ref().map(Spanned::span)),
        ("protocol", raw.protocol.as_ref().map(Spanned::span)),
        ("proto", raw.proto.as_ref().map(Spanned::span)),
        ("decode", raw.decode.as_ref().map(Spanned::span)),
        ("body_hex", raw.body_hex.as_ref().map(Spanned::span)),
        ("body_file", raw.body_file.as_ref().map(Spanned::span)),
    ];
    for (key, span) in spans {
        if let Some(span) = span {
            let message = format!(
                "`{key}` is for HTTP steps: a gRPC step's path is its method, its body the `json` request, over HTTP/2"
            );
            checker.error(&Spanned::new(span, ()), &field(key), message);
        }
    }
}

/// An HTTP step refuses the keys only gRPC steps take: set there, they would be silently ignored.
pub(super) fn refuse_grpc_keys(checker: &mut Checker<'_>, raw: &RawStep, field: &dyn Fn(&str) -> String) {
    if let Some(deadline) = &raw.deadline {
        let message = "`deadline` is a gRPC call's: add `grpc = \"package.Service/Method\"`, or use [target] timeout";
        checker.error(deadline, &field("deadline"), message);
    }
    if let Some(status) = raw.expect.as_ref().and_then(|e| e.grpc_status.as_ref()) {
        let message = "`grpc_status` is a gRPC call's: an HTTP step checks `status`";
        checker.error(status, &field("expect.grpc_status"), message);
    }
}
