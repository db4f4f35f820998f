//! Bodies: JSON field by field, forms pair by pair, plain text searched inside; a body that cannot be checked
//! is dropped. JSON is read into a tree only up to [`MAX_JSON_TREE_BYTES`] (a tree takes up to ~35 times its
//! text): a longer JSON body cannot be checked, and is dropped.

use serde_json::Value;

use super::{Counter, Scrubber};
use crate::tape::MAX_JSON_TREE_BYTES;

impl Scrubber {
    /// A body scrubbed by its kind: JSON field by field, a form pair by pair; a body that cannot be read
    /// field by field (multipart, binary, JSON that does not parse or is over 1 MiB) is dropped and counted,
    /// since what it holds cannot be checked. Plain text keeps its words, with what is private inside it replaced.
    pub(super) fn any_body(&mut self, body: String, content_type: &str) -> Option<String> {
        let looks_json = matches!(body.trim_start().chars().next(), Some('{' | '['));
        let looks_form = !body.contains(char::is_whitespace) && body.contains('=');
        if content_type.contains("json") || looks_json {
            match self.json_body(&body) {
                Ok(scrubbed) => Some(scrubbed.unwrap_or(body)),
                Err(()) => self.drop_body(),
            }
        } else if content_type.contains("x-www-form-urlencoded") || (content_type.is_empty() && looks_form) {
            Some(self.pairs(&body, Counter::Field))
        } else if content_type.starts_with("text/") || content_type.is_empty() {
            Some(self.within(&body).inspect(|_| self.counts.values += 1).unwrap_or(body))
        } else {
            self.drop_body()
        }
    }

    fn drop_body(&mut self) -> Option<String> {
        self.counts.bodies += 1;
        None
    }

    /// A JSON body with secret fields and private-looking strings replaced, if anything was; `Ok(None)` when
    /// it is unchanged (so it stays as recorded, key order and spacing included); `Err` when it is not JSON,
    /// or too long to be read as a tree.
    fn json_body(&mut self, body: &str) -> Result<Option<String>, ()> {
        if body.len() > MAX_JSON_TREE_BYTES {
            return Err(());
        }
        let mut json: Value = serde_json::from_str(body).map_err(|_| ())?;
        let before = self.counts;
        self.json(&mut json);
        Ok((self.counts != before).then(|| json.to_string()))
    }

    fn json(&mut self, value: &mut Value) {
        match value {
            Value::Object(object) => {
                for (name, field) in object.iter_mut() {
                    if self.rules.is_secret(name) && !field.is_null() {
                        self.counts.fields += 1;
                        self.replace_all(field);
                    } else {
                        self.json(field);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.json(item)),
            Value::String(text) => {
                if let Some(scrubbed) = self.private(text) {
                    self.counts.values += 1;
                    *text = scrubbed;
                }
            }
            // A card number sent as a JSON number: its placeholder is a number too. One written as a float
            // (`4111111111111111.0`, as a client that holds every number as a double may send it) is read as
            // the whole number it is.
            Value::Number(number) => {
                let whole = number.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 2f64.powi(53));
                let text = whole.map_or_else(|| number.to_string(), |f| format!("{f:.0}"));
                if let Some(scrubbed) = self.private(&text).and_then(|s| s.parse::<u64>().ok()) {
                    self.counts.values += 1;
                    *value = Value::from(scrubbed);
                }
            }
            Value::Bool(_) | Value::Null => {}
        }
    }

    /// Every scalar inside `value` replaced (a secret field may hold an object).
    pub fn replace_all(&self, value: &mut Value) {
        match value {
            Value::Object(object) => object.values_mut().for_each(|v| self.replace_all(v)),
            Value::Array(items) => items.iter_mut().for_each(|v| self.replace_all(v)),
            Value::String(text) => *text = self.secret(text),
            // A card number sent as a number keeps its shape, and stays a number.
            Value::Number(_) | Value::Bool(_) => {
                let scrubbed = self.secret(&value.to_string());
                *value = scrubbed.parse::<u64>().map_or(Value::String(scrubbed), Value::from);
            }
            Value::Null => {}
        }
    }
}
