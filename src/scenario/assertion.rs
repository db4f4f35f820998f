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
        Err(format!("{} {} failed: found {shown}", self.path_text, self.check))
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

impl std::fmt::Display for Check {
    /// As a reader writes the check: `exists`, `== 41`, `< 2.5`, `== "open"`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exists(true) => f.write_str("exists"),
            Self::Exists(false) => f.write_str("is absent"),
            Self::Eq(value) => {
                let text = value.to_string();
                let shown =
                    if text.len() <= 80 { text } else { format!("{}…", &text[..text.floor_char_boundary(80)]) };
                write!(f, "== {shown}")
            }
            Self::Lt(limit) => write!(f, "< {limit}"),
            Self::Gt(limit) => write!(f, "> {limit}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Assertion, Check};

    fn assertion(path: &str, check: Check) -> Assertion {
        Assertion { path: serde_json_path::JsonPath::parse(path).unwrap(), path_text: path.to_owned(), check }
    }

    #[test]
    fn a_failed_check_reads_as_it_is_written() {
        let json = serde_json::json!({ "cards": 40, "title": "mobile board 7" });
        let failed = |path: &str, check: Check| assertion(path, check).holds(&json).unwrap_err();
        assert_eq!(failed("$.cards", Check::Eq(41.into())), "$.cards == 41 failed: found 40");
        assert_eq!(failed("$.title", Check::Eq("x".into())), "$.title == \"x\" failed: found \"mobile board 7\"");
        assert_eq!(failed("$.cards", Check::Gt(999.0)), "$.cards > 999 failed: found 40");
        assert_eq!(failed("$.cards", Check::Lt(2.5)), "$.cards < 2.5 failed: found 40");
        assert_eq!(failed("$.id", Check::Exists(true)), "$.id exists failed: found nothing");
        assert_eq!(failed("$.cards", Check::Exists(false)), "$.cards is absent failed: found 40");
    }
}
