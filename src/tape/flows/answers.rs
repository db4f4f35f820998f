//! What a recorded answer gave that a later request may send back: the values of its JSON body (and a
//! relative `Location`), each with where it came from. A body is read into a JSON tree only up to
//! [`MAX_ANSWER_BYTES`] (the HAR reader lets longer ones go): past it, the answer is left unread, and said so.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Extract, Known, UnreadAnswer};
use crate::tape::sources::{Answer, HarEntry};

/// Remembers the values `entry`'s answer gave, to be found in later requests.
pub(super) fn learn(known: &mut BTreeMap<String, Known>, step: usize, route: &str, entry: &HarEntry) {
    let resource = route.rsplit('/').find(|s| !s.starts_with('{') && !s.is_empty()).unwrap_or("answer");
    let resource: String =
        resource.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    let name = |field: &str| {
        let field: String =
            field.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
        format!("{resource}_{field}")
    };
    // The body first: `$.id` reads better than the end of a Location header, and is where ids usually are.
    let json = match &entry.answer {
        Answer::Text(body) if entry.response_type.contains("json") => Some(body.as_str()),
        _ => None,
    };
    let mut values = Vec::new();
    if let Some(json) = json.and_then(|body| serde_json::from_str::<Value>(body).ok()) {
        collect_values(&json, "$".to_owned(), "", &mut values);
    }
    // The first answer that gave a value is where it came from; later answers only repeat it.
    for (path, field, value) in values {
        if known.contains_key(&value) {
            continue;
        }
        known.insert(value, Known { name: name(&field), variable: None, step, from: Extract::Json(path) });
    }
    // A relative Location is a whole path a later request may open as it is.
    if let Some(location) = entry.location.clone().filter(|l| l.starts_with('/') && !known.contains_key(l)) {
        let from = Extract::Header("location".to_owned());
        known.insert(location, Known { name: name("location"), variable: None, step, from });
    }
}

/// The JSON answer of `entry`, sent to `route`, if it was too long to be read for values.
pub(super) fn unread(entry: &HarEntry, route: &str) -> Option<UnreadAnswer> {
    match entry.answer {
        Answer::TooLong(bytes) if entry.response_type.contains("json") => {
            Some(UnreadAnswer { entry: entry.number, step: route.to_owned(), bytes })
        }
        _ => None,
    }
}

/// Scalars distinctive enough to recognise later: integers of 3+ digits, strings of 4+ characters that are
/// not plain words (they hold a digit, or are 8+ characters long without spaces).
fn collect_values(value: &Value, path: String, field: &str, out: &mut Vec<(String, String, String)>) {
    match value {
        Value::Object(object) => {
            for (key, v) in object {
                let simple = key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                let child =
                    if simple { format!("{path}.{key}") } else { format!("{path}['{}']", key.replace('\'', "\\'")) };
                collect_values(v, child, key, out);
            }
        }
        // The first few items of a list: a later request usually opens one of the first.
        Value::Array(items) => {
            for (i, v) in items.iter().take(3).enumerate() {
                collect_values(v, format!("{path}[{i}]"), field, out);
            }
        }
        Value::Number(n) if n.as_i64().is_some_and(|i| i.abs() >= 100) => {
            out.push((path, field.to_owned(), n.to_string()));
        }
        Value::String(s)
            if s.len() >= 4 && !s.contains(' ') && (s.chars().any(|c| c.is_ascii_digit()) || s.len() >= 8) =>
        {
            out.push((path, field.to_owned(), s.clone()));
        }
        _ => {}
    }
}
