//! One check on a JSON value ([`Assertion`]): what an HTTP step's `expect` and a WebSocket await or push class
//! hold a message to.

use serde_json_path::JsonPath;

/// One check on the JSON body.
#[derive(Debug, Clone)]
pub struct Assertion {
    /// The compiled JSONPath.
    pub path: JsonPath,
    /// The path as written, for messages.
    pub path_text: String,
    /// What must hold.
    pub check: Check,
}

impl Assertion {
    /// Whether it holds on `json`; if not, what was found instead.
    pub fn holds(&self, json: &serde_json::Value) -> Result<(), String> {
        let found = self.path.query(json).first();
        let holds = match (&self.check, found) {
            (Check::Exists(expected), found) => found.is_some() == *expected,
            (Check::Eq(expected), Some(v)) => v == expected,
            (Check::Lt(limit), Some(v)) => v.as_f64().is_some_and(|v| v < *limit),
            (Check::Gt(limit), Some(v)) => v.as_f64().is_some_and(|v| v > *limit),
            (_, None) => false,
        };
        if holds {
            return Ok(());
        }
        let text = found.map_or_else(|| "nothing".to_owned(), ToString::to_string);
        let shown = if text.len() <= 80 { text } else { format!("{}…", &text[..text.floor_char_boundary(80)]) };
        Err(format!("{} {:?} failed: found {shown}", self.path_text, self.check))
    }
}

/// What must hold for the value a JSONPath selects.
#[derive(Debug, Clone)]
pub enum Check {
    /// The path selects something (`true`) or nothing (`false`).
    Exists(bool),
    /// The selected value equals this.
    Eq(serde_json::Value),
    /// The selected value is a number below this.
    Lt(f64),
    /// The selected value is a number above this.
    Gt(f64),
}
