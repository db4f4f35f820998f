//! The values of a step that take several shapes, read by hand for clear messages: its method, `expect`
//! (statuses and JSON assertions), `extract` (a JSONPath or a header) and `think` (a constant, uniform or
//! log-normal pause); and the durations every scenario field shares; and the keys an HTTP step refuses.

use std::ops::RangeInclusive;
use std::time::Duration;

use http::{HeaderName, Method};
use serde_json::Value;
use serde_json_path::JsonPath;

use toml::Spanned;

use super::plan::{Assertion, Check, Expect, ExtractFrom, Extraction, Think};
use super::raw_scenario::{RawAssertion, RawExpect, RawStep};
use super::scope::Scope;
use crate::config::{Checker, plain_name};
use crate::outside_text::printable;

pub(super) fn parse_method(text: &str) -> Result<Method, String> {
    let upper = text.to_ascii_uppercase();
    match upper.as_str() {
        "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS" => {
            Method::from_bytes(upper.as_bytes()).map_err(|e| e.to_string())
        }
        _ => Err(format!("`{text}` is not an HTTP method; use GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS")),
    }
}

pub(super) fn resolve_expect(checker: &mut Checker<'_>, prefix: &str, raw: Option<RawExpect>) -> Option<Expect> {
    let ok = vec![crate::metrics::GrpcCode::Ok];
    let Some(RawExpect { status, grpc_status, json }) = raw else {
        return Some(Expect { status: vec![200..=399], json: Vec::new(), grpc_status: ok });
    };
    let status = match &status {
        Some(s) => checker.check(s, &format!("{prefix}.status"), parse_statuses),
        None => Some(vec![200..=399]),
    };
    let grpc_status = match &grpc_status {
        Some(s) => checker.check(s, &format!("{prefix}.grpc_status"), parse_grpc_statuses),
        None => Some(ok),
    };
    let assertions = resolve_assertions(checker, prefix, &json);
    Some(Expect { status: status?, json: assertions?, grpc_status: grpc_status? })
}

/// JSON assertions (`json = [{ path = "$.id", exists = true }]`) at `prefix.json[i]`; `None` if one is wrong.
pub(super) fn resolve_assertions(
    checker: &mut Checker<'_>,
    prefix: &str,
    json: &[RawAssertion],
) -> Option<Vec<Assertion>> {
    let mut assertions = Vec::new();
    let mut all = true;
    for (i, a) in json.iter().enumerate() {
        let field = format!("{prefix}.json[{i}]");
        let compiled = checker.check(&a.path, &format!("{field}.path"), |p| json_path(p));
        let checks = [
            a.exists.map(Check::Exists),
            a.eq.clone().map(|v| Check::Eq(serde_json::to_value(v).unwrap_or(Value::Null))),
            a.lt.map(Check::Lt),
            a.gt.map(Check::Gt),
        ];
        let mut checks: Vec<Check> = checks.into_iter().flatten().collect();
        if checks.len() != 1 {
            checker.error(&a.path, &field, "give exactly one of `exists`, `eq`, `lt` or `gt`");
            all = false;
            continue;
        }
        match compiled {
            Some(path) => {
                assertions.push(Assertion { path, path_text: a.path.get_ref().clone(), check: checks.remove(0) });
            }
            None => all = false,
        }
    }
    all.then_some(assertions)
}

pub(super) fn json_path(text: &str) -> Result<JsonPath, String> {
    JsonPath::parse(text).map_err(|e| format!("`{text}` is not a JSONPath (like `$.items[0].id`): {e}"))
}

/// `"OK"`, `"NOT_FOUND"` or a list of gRPC's code names.
fn parse_grpc_statuses(value: &toml::Value) -> Result<Vec<crate::metrics::GrpcCode>, String> {
    use crate::metrics::GrpcCode;
    let one = |v: &toml::Value| {
        v.as_str().and_then(GrpcCode::parse).ok_or_else(|| {
            format!("`{v}` is not a gRPC status: use a name such as \"OK\", \"NOT_FOUND\" or \"UNAVAILABLE\"")
        })
    };
    match value {
        toml::Value::Array(items) if !items.is_empty() => items.iter().map(one).collect(),
        toml::Value::Array(_) => Err("name at least one gRPC status".to_owned()),
        single => Ok(vec![one(single)?]),
    }
}

/// `200`, `[200, 201]`, `"2xx"`, `"200-299"`, or a list mixing them.
pub(super) fn parse_statuses(value: &toml::Value) -> Result<Vec<RangeInclusive<u16>>, String> {
    let one = |v: &toml::Value| -> Result<RangeInclusive<u16>, String> {
        let bad = || format!("`{v}` is not a status: use 200, \"2xx\" or \"200-299\"");
        let code = |n: i64| u16::try_from(n).ok().filter(|c| (100..=599).contains(c)).ok_or_else(bad);
        match v {
            toml::Value::Integer(n) => code(*n).map(|c| c..=c),
            toml::Value::String(s) if s.len() == 3 && s.ends_with("xx") => {
                let class = s[..1].parse::<u16>().map_err(|_| bad())?;
                if (1..=5).contains(&class) { Ok(class * 100..=class * 100 + 99) } else { Err(bad()) }
            }
            toml::Value::String(s) => {
                let (low, high) = s.split_once('-').ok_or_else(bad)?;
                let low = code(low.trim().parse().map_err(|_| bad())?)?;
                let high = code(high.trim().parse().map_err(|_| bad())?)?;
                if low <= high { Ok(low..=high) } else { Err(bad()) }
            }
            _ => Err(bad()),
        }
    };
    match value {
        toml::Value::Array(items) if items.is_empty() => Err("list at least one status".to_owned()),
        toml::Value::Array(items) => items.iter().map(one).collect(),
        single => Ok(vec![one(single)?]),
    }
}

/// `"$.id"` (JSONPath) or `{ header = "Location" }`.
pub(super) fn parse_extract(value: &toml::Value) -> Result<ExtractFrom, String> {
    match value {
        toml::Value::String(path) => Ok(ExtractFrom::Json(json_path(path)?, path.clone())),
        toml::Value::Table(t) if t.len() == 1 => match (t.get("header"), t.get("json")) {
            (Some(toml::Value::String(h)), _) => HeaderName::try_from(h.as_str())
                .map(ExtractFrom::Header)
                .map_err(|_| format!("`{h}` is not a valid header name")),
            (_, Some(toml::Value::String(p))) => Ok(ExtractFrom::Json(json_path(p)?, p.clone())),
            _ => Err("use a JSONPath string, `{ json = \"$.id\" }` or `{ header = \"Location\" }`".to_owned()),
        },
        _ => Err("use a JSONPath string, `{ json = \"$.id\" }` or `{ header = \"Location\" }`".to_owned()),
    }
}

pub(super) fn duration(text: &str) -> Result<Duration, String> {
    crate::config::durations::parse(text, "500ms, 90s or 5m")
}

/// `"1s"`, `{ uniform = ["500ms", "2s"] }` or `{ lognormal = { median = "1s", sigma = 0.5 } }`.
pub(super) fn parse_think(value: &toml::Value) -> Result<Think, String> {
    const SHAPES: &str =
        "use \"1s\", { uniform = [\"500ms\", \"2s\"] } or { lognormal = { median = \"1s\", sigma = 0.5 } }";
    fn text(v: Option<&toml::Value>) -> Result<&str, String> {
        v.and_then(toml::Value::as_str).ok_or_else(|| SHAPES.to_owned())
    }
    match value {
        toml::Value::String(s) => Ok(Think::Constant(duration(s)?)),
        toml::Value::Table(t) if t.len() == 1 => {
            if let Some(toml::Value::Array(bounds)) = t.get("uniform")
                && let [low, high] = bounds.as_slice()
            {
                let (low, high) = (duration(text(Some(low))?)?, duration(text(Some(high))?)?);
                return if low <= high {
                    Ok(Think::Uniform(low, high))
                } else {
                    Err("uniform bounds: low > high".into())
                };
            }
            if let Some(toml::Value::Table(ln)) = t.get("lognormal") {
                let median = duration(text(ln.get("median"))?)?;
                let sigma = match ln.get("sigma") {
                    Some(toml::Value::Float(s)) if (0.0..=3.0).contains(s) => *s,
                    Some(_) => return Err("lognormal sigma must be a number from 0.0 to 3.0".to_owned()),
                    None => 0.5,
                };
                return Ok(Think::LogNormal { median, sigma });
            }
            Err(SHAPES.to_owned())
        }
        _ => Err(SHAPES.to_owned()),
    }
}

/// A size such as `4MB`, `512KiB` or `1000000` (bytes), at least one byte.
pub(super) fn body_size(text: &str) -> Result<u64, String> {
    match parse_size::parse_size(text) {
        Ok(0) => Err("must be at least one byte".to_owned()),
        Ok(bytes) => Ok(bytes),
        Err(_) => Err(format!(
            "`{}` is not a size; write e.g. `4MB`, `512KiB` or a number of bytes",
            text.chars().take(40).collect::<String>()
        )),
    }
}

/// A step's `extract`: each variable's source, for the variables already in `scope`.
pub(super) fn resolve_extract(
    checker: &mut Checker<'_>,
    scope: &mut Scope<'_>,
    prefix: &str,
    extract: &std::collections::BTreeMap<String, Spanned<toml::Value>>,
) -> Vec<Extraction> {
    let mut extractions = Vec::new();
    for (var, value) in extract {
        let var_field = format!("{prefix}.extract.{}", printable(var));
        if checker.check(value, &var_field, |_| plain_name(var)).is_none() {
            continue;
        }
        if let Some(from) = checker.check(value, &var_field, parse_extract) {
            extractions.push(Extraction { variable: scope.variable(var), from });
        }
    }
    extractions
}

/// An HTTP step refuses the keys only WebSocket steps take: set there, they would be silently ignored.
pub(super) fn refuse_ws_keys(checker: &mut Checker<'_>, raw: &RawStep, field: &dyn Fn(&str) -> String) {
    let spans = [
        ("subprotocols", raw.subprotocols.as_ref().map(Spanned::span)),
        ("binary_hex", raw.binary_hex.as_ref().map(Spanned::span)),
        ("binary_base64", raw.binary_base64.as_ref().map(Spanned::span)),
        ("await", raw.wait.as_ref().map(Spanned::span)),
        ("fanout", raw.fanout.as_ref().map(Spanned::span)),
    ];
    for (key, span) in spans {
        if let Some(span) = span {
            checker.error(
                &Spanned::new(span, ()),
                &field(key),
                format!("`{key}` is for WebSocket steps: add `ws = \"connect\"`, `\"send\"` or `\"await\"`"),
            );
        }
    }
}
