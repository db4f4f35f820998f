//! Checks the WebSocket steps of a flow (`ws = "connect" | "send" | "await" | "close"`) into
//! [`super::ws_plan`], and the matchers awaits and push classes share (the `[ws]` table itself: `ws_settings.rs`).
//! Each kind of step takes only its own keys, and a key another kind takes is an error naming the step and the
//! key, never silently ignored.

use std::time::Duration;

use http::Method;
use toml::Spanned;

use super::json_template::JsonTemplate;
use super::plan::{Expect, ExtractFrom, Extraction, Step};
use super::raw_scenario::{RawAssertion, RawAwait, RawStep};
use super::scope::{Scope, header_templates, template};
use super::step_values::{duration, json_path, parse_extract, parse_think, resolve_assertions};
use super::template::Template;
use super::ws_plan::{Encoding, Fanout, WsAction, WsAwait, WsMatch, WsPayload};
use crate::config::{Checker, path_text, plain_name};
use crate::outside_text::printable;

/// The kinds of WebSocket step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Connect,
    Send,
    Await,
    Close,
}

impl Kind {
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        match text {
            "connect" => Ok(Self::Connect),
            "send" => Ok(Self::Send),
            "await" => Ok(Self::Await),
            "close" => Ok(Self::Close),
            _ => Err(format!("`{text}` is not a WebSocket step; use \"connect\", \"send\", \"await\" or \"close\"")),
        }
    }

    /// The keys a step of this kind takes besides `ws`, `name` and `think`.
    fn takes(self, key: &str) -> bool {
        match self {
            Self::Connect => matches!(key, "path" | "headers" | "subprotocols"),
            Self::Send => {
                matches!(key, "body" | "json" | "binary_hex" | "binary_base64" | "await" | "extract" | "fanout")
            }
            Self::Await => matches!(key, "await" | "extract"),
            Self::Close => false,
        }
    }
}

/// The spans of the keys a step set, for "does not apply" errors: `(key, where)`.
fn keys_set(raw: &RawStep, ws: &Spanned<String>) -> Vec<(&'static str, std::ops::Range<usize>)> {
    let here = |s: Option<std::ops::Range<usize>>| s.unwrap_or_else(|| ws.span());
    let mut set = Vec::new();
    let mut add = |key, span: Option<std::ops::Range<usize>>, present: bool| {
        if present {
            set.push((key, here(span)));
        }
    };
    add("method", raw.method.as_ref().map(Spanned::span), raw.method.is_some());
    add("path", raw.path.as_ref().map(Spanned::span), raw.path.is_some());
    add("query", raw.query.values().next().map(Spanned::span), !raw.query.is_empty());
    add("headers", raw.headers.values().next().map(Spanned::span), !raw.headers.is_empty());
    add("subprotocols", raw.subprotocols.as_ref().map(Spanned::span), raw.subprotocols.is_some());
    add("body", raw.body.as_ref().map(Spanned::span), raw.body.is_some());
    add("json", raw.json.as_ref().map(Spanned::span), raw.json.is_some());
    add("binary_hex", raw.binary_hex.as_ref().map(Spanned::span), raw.binary_hex.is_some());
    add("binary_base64", raw.binary_base64.as_ref().map(Spanned::span), raw.binary_base64.is_some());
    add("await", raw.wait.as_ref().map(Spanned::span), raw.wait.is_some());
    add("fanout", raw.fanout.as_ref().map(Spanned::span), raw.fanout.is_some());
    add("expect", None, raw.expect.is_some());
    add("extract", raw.extract.values().next().map(Spanned::span), !raw.extract.is_empty());
    // A socket opens with HTTP/1.1's upgrade whatever the target's protocol.
    add("protocol", raw.protocol.as_ref().map(Spanned::span), raw.protocol.is_some());
    for (key, value) in [
        ("grpc", &raw.grpc),
        ("deadline", &raw.deadline),
        ("proto", &raw.proto),
        ("decode", &raw.decode),
        ("body_hex", &raw.body_hex),
        ("body_file", &raw.body_file),
    ] {
        add(key, value.as_ref().map(Spanned::span), value.is_some());
    }
    set
}

/// One WebSocket step (`raw.ws` is set); the variables it extracts are already in `scope`.
pub(super) fn resolve_ws_step(
    checker: &mut Checker<'_>,
    scope: &mut Scope<'_>,
    prefix: &str,
    raw: &RawStep,
    known: &[usize],
    later: &[String],
) -> Option<Step> {
    let field = |f: &str| format!("{prefix}.{f}");
    let ws = raw.ws.clone().expect("called for WebSocket steps");
    let kind = checker.check(&ws, &field("ws"), |k| Kind::parse(k))?;
    for (key, span) in keys_set(raw, &ws) {
        if !kind.takes(key) {
            let at = Spanned::new(span, ());
            let message = format!("`{key}` does not apply to a `ws = \"{}\"` step", ws.get_ref());
            checker.error(&at, &field(key), message);
        }
    }
    if let Some(name) = &raw.name {
        checker.check(name, &field("name"), |n| plain_name(n));
    }
    let think = raw.think.as_ref().and_then(|t| checker.check(t, &field("think"), parse_think));
    let at = Place { prefix, known, later, ws: &ws };
    let (action, path, headers) = match kind {
        Kind::Connect => connect(checker, scope, raw, &at)?,
        _ => (exchange(checker, scope, raw, kind, &at)?, Template::literal("/"), Vec::new()),
    };
    let awaits = matches!(action, WsAction::Await(_) | WsAction::Send { wait: Some(_), .. });
    let extract = ws_extractions(checker, scope, raw, prefix, awaits);
    let endpoint_name = endpoint_name(checker, scope, raw, &ws, &field("name"), kind, &path)?;
    Some(Step {
        endpoint: scope.endpoint(&endpoint_name),
        method: Method::GET,
        path,
        query: Vec::new(),
        headers,
        body: None,
        expect: Expect { status: vec![101..=101], json: Vec::new(), grpc_status: vec![crate::metrics::GrpcCode::Ok] },
        extract: extract?,
        think,
        ws: Some(action),
        protocol: None,
        grpc: None,
        decode: None,
    })
}

/// A send's `fanout`: the JSONPath to its message's correlation id, and the endpoint its fan-out is measured on,
/// `WS fanout: <step name>`. Only a JSON or text message has one.
fn send_fanout(
    checker: &mut Checker<'_>,
    scope: &mut Scope<'_>,
    raw: &RawStep,
    path: &Spanned<String>,
    field: &str,
) -> Option<Fanout> {
    if raw.binary_hex.is_some() || raw.binary_base64.is_some() {
        checker.error(path, field, "a binary message has no JSON correlation id; send `json` or `body`");
        return None;
    }
    let compiled = checker.check(path, field, |p| json_path(p))?;
    let Some(name) = raw.name.as_ref().map(Spanned::get_ref) else {
        // Said here: without a fan-out the step would fail the same check later, but this one ends it first.
        let name_field = field.replace(".fanout", ".name");
        checker.error(
            path,
            &name_field,
            "name this step: it is measured under its name, its fan-out as `WS fanout: NAME`",
        );
        return None;
    };
    let endpoint = scope.endpoint(&format!("WS fanout: {name}"));
    Some(Fanout { path: compiled, path_text: path.get_ref().clone(), endpoint })
}

/// Where a step stands: its field prefix, the variables in scope, and its `ws` value for errors.
struct Place<'a> {
    prefix: &'a str,
    known: &'a [usize],
    later: &'a [String],
    ws: &'a Spanned<String>,
}

impl Place<'_> {
    fn field(&self, key: &str) -> String {
        format!("{}.{key}", self.prefix)
    }
}

/// A step's header templates.
type Headers = Vec<(http::HeaderName, Template)>;

/// A `connect`: its action, its path and its headers.
fn connect(
    checker: &mut Checker<'_>,
    scope: &Scope<'_>,
    raw: &RawStep,
    at: &Place<'_>,
) -> Option<(WsAction, Template, Headers)> {
    let Some(raw_path) = &raw.path else {
        checker.error(at.ws, &at.field("path"), "a `ws = \"connect\"` step needs the `path` of the socket");
        return None;
    };
    let path = connect_path(checker, scope, raw_path, &at.field("path"), at.known, at.later);
    let headers = header_templates(checker, scope, &raw.headers, &at.field("headers"), at.known, at.later);
    let subprotocols = match &raw.subprotocols {
        Some(s) => checker.check(s, &at.field("subprotocols"), |s| subprotocols(s))?,
        None => Vec::new(),
    };
    Some((WsAction::Connect { subprotocols }, path?, headers))
}

/// A `send`, `await` or `close`.
fn exchange(
    checker: &mut Checker<'_>,
    scope: &mut Scope<'_>,
    raw: &RawStep,
    kind: Kind,
    at: &Place<'_>,
) -> Option<WsAction> {
    match kind {
        Kind::Send => {
            let payload = payload(checker, scope, raw, at.ws, at.prefix, at.known, at.later)?;
            let wait = raw.wait.as_ref().and_then(|w| resolve_await(checker, scope, w, at));
            if raw.wait.is_some() && wait.is_none() {
                return None;
            }
            let fanout = match &raw.fanout {
                Some(path) => Some(send_fanout(checker, scope, raw, path, &at.field("fanout"))?),
                None => None,
            };
            Some(WsAction::Send { payload, wait, fanout })
        }
        Kind::Await => {
            let Some(raw_wait) = &raw.wait else {
                let message = "a `ws = \"await\"` step needs `await = { … }`: which message";
                checker.error(at.ws, &at.field("await"), message);
                return None;
            };
            Some(WsAction::Await(resolve_await(checker, scope, raw_wait, at)?))
        }
        Kind::Close => Some(WsAction::Close),
        // Resolved by `connect`, with its path and headers.
        Kind::Connect => None,
    }
}

/// The metric key: the step's `name`; a connect without one is `WS connect /boards/{board}`. A send or await
/// must be named: its message says nothing a key could be made of.
fn endpoint_name(
    checker: &mut Checker<'_>,
    scope: &Scope<'_>,
    raw: &RawStep,
    ws: &Spanned<String>,
    field: &str,
    kind: Kind,
    path: &Template,
) -> Option<String> {
    match (&raw.name, kind) {
        (Some(name), _) => Some(name.get_ref().clone()),
        (None, Kind::Connect) => Some(format!("WS connect {}", path.route(&|e| super::scope::expr_name(scope, e)))),
        (None, Kind::Close) => Some("WS close".to_owned()),
        (None, _) => {
            checker.error(ws, field, "name this step: it is measured (or counted) under its name");
            None
        }
    }
}

fn connect_path(
    checker: &mut Checker<'_>,
    scope: &Scope<'_>,
    raw: &Spanned<String>,
    field: &str,
    known: &[usize],
    later: &[String],
) -> Option<Template> {
    if !raw.get_ref().starts_with('/') {
        checker.error(raw, field, format!("`{}` must start with `/`", printable(raw.get_ref())));
        return None;
    }
    checker.check(raw, field, |p| path_text(p))?;
    template(checker, scope, raw, field, known, later)
}

/// `Sec-WebSocket-Protocol` tokens: visible ASCII without separators, each once.
fn subprotocols(list: &[String]) -> Result<Vec<String>, String> {
    const SEPARATORS: &[u8] = b"()<>@,;:\\\"/[]?={} \t";
    for (i, p) in list.iter().enumerate() {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_graphic() && !SEPARATORS.contains(&b)) {
            return Err(format!("`{}` is not a subprotocol name (a token such as `board.v1`)", printable(p)));
        }
        if list[..i].contains(p) {
            return Err(format!("`{p}` is listed twice"));
        }
    }
    Ok(list.to_vec())
}

/// The message of a send: exactly one of `body`, `json`, `binary_hex` and `binary_base64`.
fn payload(
    checker: &mut Checker<'_>,
    scope: &Scope<'_>,
    raw: &RawStep,
    ws: &Spanned<String>,
    prefix: &str,
    known: &[usize],
    later: &[String],
) -> Option<WsPayload> {
    let field = |f: &str| format!("{prefix}.{f}");
    let given = [raw.body.is_some(), raw.json.is_some(), raw.binary_hex.is_some(), raw.binary_base64.is_some()];
    if given.iter().filter(|&&g| g).count() != 1 {
        let message = "give exactly one message: `body` (text), `json`, `binary_hex` or `binary_base64`";
        checker.error(ws, &field("body"), message);
        return None;
    }
    if let Some(json) = &raw.json {
        let resolve = |names: &[&str]| scope.resolve(names, known, later);
        let mut compiled = checker.check(json, &field("json"), |v| JsonTemplate::compile(v, &resolve, scope.env));
        if let Some(json) = &mut compiled {
            scope.number_json_draws(json);
        }
        return compiled.map(WsPayload::Json);
    }
    if let Some(text) = &raw.body {
        return template(checker, scope, text, &field("body"), known, later).map(WsPayload::Text);
    }
    let (text, key, encoding) = match (&raw.binary_hex, &raw.binary_base64) {
        (Some(hex), _) => (hex, "binary_hex", Encoding::Hex),
        (_, Some(b64)) => (b64, "binary_base64", Encoding::Base64),
        _ => unreachable!("one message was given"),
    };
    let compiled = template(checker, scope, text, &field(key), known, later)?;
    // A fixed message is decoded now, so a typo is found by `validate`, not by the first session.
    if let Some(literal) = compiled.as_literal() {
        checker.check(text, &field(key), |_| encoding.decode(literal))?;
    }
    Some(match encoding {
        Encoding::Hex => WsPayload::Hex(compiled),
        Encoding::Base64 => WsPayload::Base64(compiled),
    })
}

/// Which message ends an await, and its timeout; an `eq` written as a template is compiled against the names
/// the step knows.
fn resolve_await(
    checker: &mut Checker<'_>,
    scope: &Scope<'_>,
    raw: &Spanned<RawAwait>,
    at: &Place<'_>,
) -> Option<WsAwait> {
    let field = &at.field("await");
    let wait = raw.get_ref();
    let mut templated = Vec::new();
    for (i, assertion) in wait.json.iter().enumerate() {
        let Some(toml::Value::String(text)) = &assertion.eq else { continue };
        if !text.contains("{{") {
            continue;
        }
        let value = Spanned::new(assertion.path.span(), text.clone());
        let eq = template(checker, scope, &value, &format!("{field}.json[{i}].eq"), at.known, at.later)?;
        templated.push((i, eq));
    }
    let matcher = resolve_match(checker, raw, field, &wait.json, wait.prefix_hex.as_ref(), wait.offset.as_ref())?;
    let timeout = match &wait.timeout {
        Some(t) => Some(checker.check(t, &format!("{field}.timeout"), |t| {
            duration(t).and_then(|d| if d > Duration::ZERO { Ok(d) } else { Err("must be more than 0".to_owned()) })
        })?),
        None => None,
    };
    Some(WsAwait { matcher, timeout, templated })
}

/// A matcher from `json` assertions and a `prefix_hex` at `offset`; at least one condition.
pub(super) fn resolve_match<T>(
    checker: &mut Checker<'_>,
    at: &Spanned<T>,
    field: &str,
    json: &[RawAssertion],
    prefix_hex: Option<&Spanned<String>>,
    offset: Option<&Spanned<i64>>,
) -> Option<WsMatch> {
    if json.is_empty() && prefix_hex.is_none() {
        checker.error(at, field, "say which message: `json = [{ path = …, eq = … }]` and/or `prefix_hex = \"…\"`");
        return None;
    }
    let assertions = resolve_assertions(checker, field, json);
    let prefix = match prefix_hex {
        Some(p) => Some(checker.check(p, &format!("{field}.prefix_hex"), |p| Encoding::Hex.decode(p))?),
        None => None,
    };
    let offset = match offset {
        Some(o) => checker.check(o, &format!("{field}.offset"), |&o| {
            usize::try_from(o).map_err(|_| format!("{o} is not a byte offset (0 or more)"))
        })?,
        None => 0,
    };
    if prefix.is_none() && offset > 0 {
        checker.error(at, &format!("{field}.offset"), "`offset` places `prefix_hex`; give one");
    }
    Some(WsMatch { json: assertions?, prefix, offset })
}

/// A WebSocket step's `extract`: JSONPaths into the message its await matched.
fn ws_extractions(
    checker: &mut Checker<'_>,
    scope: &mut Scope<'_>,
    raw: &RawStep,
    prefix: &str,
    awaits: bool,
) -> Option<Vec<Extraction>> {
    let mut out = Vec::new();
    for (var, value) in &raw.extract {
        let field = format!("{prefix}.extract.{}", printable(var));
        if !awaits {
            checker.error(value, &field, "only a step with `await` has a message to extract from");
            continue;
        }
        checker.check(value, &field, |_| plain_name(var))?;
        match checker.check(value, &field, parse_extract)? {
            from @ ExtractFrom::Json(..) => out.push(Extraction { variable: scope.variable(var), from }),
            ExtractFrom::Header(_) => {
                checker.error(value, &field, "a WebSocket message has no headers; use a JSONPath");
            }
        }
    }
    Some(out)
}
