//! The generated scenario's steps, written as TOML a user can read: inline tables, quoted strings.

use std::fmt::Write as _;

use serde_json::Value;

use super::{Extract, StepDraft};

pub(super) fn write_flow(text: &mut String, page: &str, steps: &[StepDraft]) {
    let _ = write!(text, "\n[[flow]]\nname = {}\nweight = 1\n", toml_string(page));
    for step in steps {
        if let Some(grpc) = &step.grpc {
            super::grpc::write_step(text, grpc);
            if !step.headers.is_empty() {
                let headers = step.headers.iter().map(|(k, v)| (k.as_str(), toml_string(v)));
                let _ = writeln!(text, "  headers = {}", inline(headers));
            }
            continue;
        }
        if step.websocket {
            // The socket's messages are what the product does, and may be private: the user writes them.
            let _ = write!(
                text,
                "\n  # A WebSocket session was recorded here; its messages are not copied: add `ws = \"send\"` and\n  \
                 # `ws = \"await\"` steps after this one (see the manual's WebSocket chapter).\n  \
                 [[flow.step]]\n  ws = \"connect\"\n  path = {}\n",
                toml_string(&step.path)
            );
            continue;
        }
        // Named by its route as `tape import` keys it (`GET /orders/{id}`, `GET /search?page=&q=`): a recorded id
        // or search term left in the path or query is one request's, and must not make an endpoint of its own
        // (a trial's flows measured 67 endpoints such as `GET /orders/89157`, with 45 warnings).
        let _ = write!(
            text,
            "\n  [[flow.step]]\n  name = {}\n  method = {}\n  path = {}\n",
            toml_string(&step.name),
            toml_string(&step.method),
            toml_string(&step.path)
        );
        if !step.query.is_empty() {
            let _ =
                writeln!(text, "  query = {}", inline(step.query.iter().map(|(k, v)| (k.as_str(), toml_string(v)))));
        }
        if !step.headers.is_empty() {
            let _ = writeln!(
                text,
                "  headers = {}",
                inline(step.headers.iter().map(|(k, v)| (k.as_str(), toml_string(v))))
            );
        }
        if let Some(json) = &step.json {
            let value: toml::Value =
                serde_json::from_value(strip_nulls(json.clone())).unwrap_or(toml::Value::String(String::new()));
            let _ = writeln!(text, "  json = {value}");
        } else if let Some(body) = &step.body {
            let _ = writeln!(text, "  body = {}", toml_string(body));
        }
        if let Some(status) = step.status {
            let _ = writeln!(text, "  expect = {{ status = \"{}xx\" }}", status / 100);
        }
        if !step.extract.is_empty() {
            let extract = step.extract.iter().map(|(variable, from)| {
                let spec = match from {
                    Extract::Json(path) => toml_string(path),
                    Extract::Header(name) => format!("{{ header = {} }}", toml_string(name)),
                };
                (variable.as_str(), spec)
            });
            let _ = writeln!(text, "  extract = {}", inline(extract));
        }
    }
}

/// TOML has no null: a null field is left out.
fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(object) => {
            Value::Object(object.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k, strip_nulls(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().filter(|v| !v.is_null()).map(strip_nulls).collect()),
        other => other,
    }
}

fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

fn inline<'a>(pairs: impl Iterator<Item = (&'a str, String)>) -> String {
    let items: Vec<String> = pairs
        .map(|(k, v)| {
            let bare = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            format!("{} = {v}", if bare { k.to_owned() } else { toml_string(k) })
        })
        .collect();
    format!("{{ {} }}", items.join(", "))
}
