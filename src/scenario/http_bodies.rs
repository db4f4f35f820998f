//! An HTTP step's body and how its answer is read: `json` (sent as JSON, or with `proto = "package.Message"`
//! encoded as that Protobuf message, `application/x-protobuf`), `body` (text), `body_hex` or `body_file` (bytes
//! as they are), and `decode = "package.Message"` (the answer read as that message, to JSON, for `expect` and
//! `extract`). At most one body key; the Protobuf ones need `[proto]` files.

use prost_reflect::MessageDescriptor;
use toml::Spanned;

use super::bounded_file::read_bytes;
use super::json_template::JsonTemplate;
use super::plan::{Body, ProtoBody};
use super::scope::{Scope, template};
use crate::config::Checker;

/// Most bytes of a `body_file`: a request body is held in memory and sent as it is, every time.
const MAX_BODY_FILE: u64 = 16_000_000;

/// The body keys of one HTTP step, as written.
pub(super) struct RawBody {
    pub json: Option<Spanned<toml::Value>>,
    pub body: Option<Spanned<String>>,
    pub proto: Option<Spanned<String>>,
    pub body_hex: Option<Spanned<String>>,
    pub body_file: Option<Spanned<String>>,
}

/// The step's body, if it has one (`None` too when it is wrong: the error is pushed).
pub(super) fn resolve_body(
    checker: &mut Checker<'_>,
    scope: &mut Scope<'_>,
    prefix: &str,
    raw: RawBody,
    (known, later): (&[usize], &[String]),
) -> Option<Body> {
    let field = |f: &str| format!("{prefix}.{f}");
    let RawBody { json, body, proto, body_hex, body_file } = raw;
    let given: Vec<(&str, std::ops::Range<usize>)> = [
        ("json", json.as_ref().map(Spanned::span)),
        ("body", body.as_ref().map(Spanned::span)),
        ("body_hex", body_hex.as_ref().map(Spanned::span)),
        ("body_file", body_file.as_ref().map(Spanned::span)),
    ]
    .into_iter()
    .filter_map(|(key, span)| span.map(|s| (key, s)))
    .collect();
    if let [_, (second, span), ..] = given.as_slice() {
        let message = "give one of `json`, `body`, `body_hex` or `body_file`";
        checker.error(&Spanned::new(span.clone(), ()), &field(second), message);
        return None;
    }
    if let (Some(proto), None) = (&proto, &json) {
        checker.error(proto, &field("proto"), "`proto` encodes the step's `json` as that message: add `json`");
        return None;
    }
    if let Some(json) = json {
        let resolve = |names: &[&str]| scope.resolve(names, known, later);
        let mut compiled = checker.check(&json, &field("json"), |v| JsonTemplate::compile(v, &resolve, scope.env))?;
        scope.number_json_draws(&mut compiled);
        let Some(proto) = proto else { return Some(Body::Json(compiled)) };
        let message = message_type(checker, scope, &proto, &field("proto"))?;
        checker.check(&json, &field("json"), |v| super::proto_json::check_message(v, &message))?;
        return Some(Body::Proto(ProtoBody { message, json: compiled, grpc_framed: false }));
    }
    if let Some(text) = body {
        return template(checker, scope, &text, &field("body"), known, later).map(Body::Text);
    }
    if let Some(hex) = body_hex {
        let bytes = checker.check(&hex, &field("body_hex"), |h| super::ws_plan::Encoding::Hex.decode(h))?;
        return Some(Body::Bytes(bytes.into()));
    }
    let file = body_file?;
    let folder = checker.folder();
    let bytes = checker.check(&file, &field("body_file"), |f| {
        read_bytes(&folder.join(f), MAX_BODY_FILE).map_err(|p| p.about(&format!("the body file `{f}`")))
    })?;
    Some(Body::Bytes(bytes.into()))
}

/// `decode = "package.Message"`, or `proto`'s message type, resolved in the `[proto]` files.
pub(super) fn message_type(
    checker: &mut Checker<'_>,
    scope: &Scope<'_>,
    name: &Spanned<String>,
    field: &str,
) -> Option<MessageDescriptor> {
    let Some(pool) = &scope.protos else {
        if scope.protos_failed {
            return None;
        }
        checker.error(
            name,
            field,
            "a Protobuf message type needs `.proto` files: add `[proto] files = [\"api.proto\"]`",
        );
        return None;
    };
    checker.check(name, field, |n| super::proto::message(pool, n))
}
