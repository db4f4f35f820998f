//! Checks each `[[flow]]` and its `[[flow.step]]`s: names, paths and headers as a request can carry them,
//! templates against the names in scope; `expect`, `extract` and `think` are read by [`super::step_values`],
//! and a step without a `name` is keyed by [`super::step_key`].
//!
//! Names in scope for a step: `[vars]` constants, feeder columns (`users.email`), and the variables that
//! *earlier* steps of the same flow extract. A name extracted only later, or in another flow, is an error
//! that says so.

use http::Method;
use toml::Spanned;

use super::plan::{Flow, Protocol, Step};
use super::raw_scenario::{RawFlow, RawStep};
use super::scope::{Scope, expr_name, header_templates, template};
use super::step_values::{parse_method, parse_think, refuse_ws_keys, resolve_expect, resolve_extract};
use super::template::Template;
use crate::config::{Checker, path_text, plain_name};
use crate::outside_text::printable;

pub(super) fn resolve_flows(checker: &mut Checker<'_>, scope: &mut Scope<'_>, raw: Vec<RawFlow>) -> Vec<Flow> {
    let mut flows = Vec::new();
    for (index, flow) in raw.into_iter().enumerate() {
        let RawFlow { name, weight, session_vars, steps } = flow;
        let prefix = format!("flow[{index}]");
        checker.check(&name, &format!("{prefix}.name"), |n| plain_name(n));
        let weight = match &weight {
            Some(w) => checker.check(w, &format!("{prefix}.weight"), |&w| {
                u32::try_from(w).ok().filter(|&w| w > 0).ok_or_else(|| format!("{w} is not a positive weight"))
            }),
            None => Some(1),
        };
        if steps.is_empty() {
            checker.error(&name, &format!("{prefix}.step"), "a flow needs at least one [[flow.step]]");
        }
        // Every name this flow extracts, so a step using one too early gets a precise message.
        let extracted: Vec<String> = steps.iter().flat_map(|s| s.get_ref().extract.keys().cloned()).collect();
        let (session_vars, mut known) = resolve_session_vars(checker, scope, &prefix, &session_vars, &extracted);
        let mut resolved = Vec::new();
        let mut extracted_so_far = 0;
        let mut socket = super::ws_settings::SocketOrder::default();
        for (i, step) in steps.into_iter().enumerate() {
            let (at, step) = (step.span(), step.into_inner());
            socket.check(checker, &step, &format!("{prefix}.step[{i}].ws"));
            let later = &extracted[extracted_so_far..];
            // A step's names are in scope for the steps after it even when the step itself has an error (a
            // bad JSONPath, say): one mistake gets one message, not a second, wrong one further down.
            let names: Vec<usize> = step.extract.keys().map(|name| scope.variable(name)).collect();
            extracted_so_far += names.len();
            let prefix = format!("{prefix}.step[{i}]");
            match resolve_step(checker, scope, (&prefix, at.clone()), step, &known, later) {
                Some(step) => resolved.push(step),
                // A step left out must have been said why (here or by an error it follows from, such as a
                // `.proto` file that did not compile): one dropped silently is never measured, and the night
                // would read green without it (a trial's unnamed WebSocket send).
                None if checker.errors.is_empty() => {
                    let step = Spanned::new(at, ());
                    checker.error(
                        &step,
                        &prefix,
                        "this step cannot be run as written (a degrade bug: please report it)",
                    );
                }
                None => {}
            }
            known.extend(names);
        }
        if let Some(weight) = weight {
            flows.push(Flow { name: name.into_inner(), weight, session_vars, steps: resolved });
        }
    }
    flows
}

/// A flow's `session_vars`, rendered once a session before its first step, and the variables they make known
/// to its steps. Each reads `[vars]` and feeder rows, not another session variable (their order is a table's).
fn resolve_session_vars(
    checker: &mut Checker<'_>,
    scope: &mut Scope<'_>,
    prefix: &str,
    raw: &std::collections::BTreeMap<String, Spanned<String>>,
    extracted: &[String],
) -> (Vec<(usize, super::template::Template)>, Vec<usize>) {
    let mut vars = Vec::new();
    for (name, value) in raw {
        let field = format!("{prefix}.session_vars.{}", printable(name));
        let valid = |_: &String| {
            let word = name.chars().all(|c| c.is_alphanumeric() || c == '_');
            let starts = name.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_');
            if word && starts {
                Ok(())
            } else {
                Err(format!("`{}` is not a variable name; use letters, digits and `_`", printable(name)))
            }
        };
        if checker.check(value, &field, valid).is_none() {
            continue;
        }
        if let Some(compiled) = template(checker, scope, value, &field, &[], extracted) {
            vars.push((scope.variable(name), compiled));
        }
    }
    let known = vars.iter().map(|(index, _)| *index).collect();
    (vars, known)
}

/// One step; the variables it extracts are already in `scope`.
fn resolve_step(
    checker: &mut Checker<'_>,
    scope: &mut Scope<'_>,
    (prefix, at): (&str, std::ops::Range<usize>),
    raw: RawStep,
    known: &[usize],
    later: &[String],
) -> Option<Step> {
    if raw.ws.is_some() {
        return super::ws_steps::resolve_ws_step(checker, scope, prefix, &raw, known, later);
    }
    if raw.grpc.is_some() {
        return super::grpc_steps::resolve_grpc_step(checker, scope, prefix, raw, known, later);
    }
    resolve_http_step(checker, scope, (prefix, at), raw, (known, later))
}

/// An HTTP step: its request's parts as templates over the variables in scope, its checks and extractions.
fn resolve_http_step(
    checker: &mut Checker<'_>,
    scope: &mut Scope<'_>,
    (prefix, at): (&str, std::ops::Range<usize>),
    raw: RawStep,
    (known, later): (&[usize], &[String]),
) -> Option<Step> {
    let field = |f: &str| format!("{prefix}.{f}");
    refuse_ws_keys(checker, &raw, &field);
    super::grpc_steps::refuse_grpc_keys(checker, &raw, &field);
    let protocol = raw.protocol.as_ref().and_then(|p| {
        checker.check(p, &field("protocol"), |p| {
            Protocol::parse(p).ok_or_else(|| format!("`{p}` is not a protocol; use {}", Protocol::NAMES))
        })
    });
    let RawStep {
        name,
        method,
        path,
        query,
        headers,
        json,
        body,
        expect,
        extract,
        think,
        proto,
        decode,
        body_hex,
        body_file,
        ..
    } = raw;
    let Some(path) = path else {
        checker.error(
            &Spanned::new(at, ()),
            &field("path"),
            "an HTTP step needs a `path` (or set `ws` for a WebSocket step)",
        );
        return None;
    };
    if let Some(name) = &name {
        checker.check(name, &field("name"), |n| plain_name(n));
    }
    let method = match &method {
        Some(m) => checker.check(m, &field("method"), |m| parse_method(m)),
        None => Some(Method::GET),
    };
    let path_template = resolve_path(checker, scope, &path, &field("path"), (known, later));
    let query_templates = query_templates(checker, scope, &query, &field("query"), (known, later));
    let header_templates = header_templates(checker, scope, &headers, &field("headers"), known, later);
    let decode = decode.and_then(|d| super::http_bodies::message_type(checker, scope, &d, &field("decode")));
    let raw_body = super::http_bodies::RawBody { json, body, proto, body_hex, body_file };
    let body = super::http_bodies::resolve_body(checker, scope, prefix, raw_body, (known, later));
    let expect = resolve_expect(checker, &field("expect"), expect);
    let extractions = resolve_extract(checker, scope, prefix, &extract);
    let think = think.and_then(|t| checker.check(&t, &field("think"), parse_think));
    let (method, path_template) = (method?, path_template?);
    let endpoint_name = if let Some(name) = &name {
        name.get_ref().clone()
    } else {
        let route = path_template.route(&|e| expr_name(scope, e));
        scope.keys.key(checker, prefix, &method, &route, &query)
    };
    let endpoint = scope.endpoint(&endpoint_name);
    let step = Step {
        endpoint,
        method,
        path: path_template,
        query: query_templates,
        headers: header_templates,
        body,
        expect: expect?,
        extract: extractions,
        think,
        ws: None,
        protocol,
        grpc: None,
        decode,
    };
    Some(step)
}

/// A step's `query` table, each value a template.
fn query_templates(
    checker: &mut Checker<'_>,
    scope: &Scope<'_>,
    query: &std::collections::BTreeMap<String, Spanned<String>>,
    field: &str,
    (known, later): (&[usize], &[String]),
) -> Vec<(String, Template)> {
    query
        .iter()
        .filter_map(|(key, value)| {
            let t = template(checker, scope, value, &format!("{field}.{key}"), known, later);
            t.map(|t| (key.clone(), t))
        })
        .collect()
}

/// A step's path as a template. A path may also be one extracted whole (`{{ location }}`), which the server
/// made absolute.
fn resolve_path(
    checker: &mut Checker<'_>,
    scope: &Scope<'_>,
    path: &Spanned<String>,
    field: &str,
    (known, later): (&[usize], &[String]),
) -> Option<Template> {
    if path.get_ref().starts_with('/') || path.get_ref().starts_with("{{") {
        checker.check(path, field, |p| path_text(p)).and_then(|()| template(checker, scope, path, field, known, later))
    } else {
        checker.error(path, field, format!("`{}` must start with `/`", path.get_ref()));
        None
    }
}
