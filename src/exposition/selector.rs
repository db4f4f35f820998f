//! Series selectors as PromQL writes them: a metric name with label matchers, `node_cpu_seconds_total{mode!="idle"}`,
//! or matchers alone with one on the name, `{__name__=~"pg_stat_database_xact_(commit|rollback)"}`. The four
//! matchers are PromQL's: `=`, `!=`, `=~` and `!~`, the regular expressions anchored at both ends as in PromQL.
//! An absent label reads as the empty value, as Prometheus reads it.

use std::fmt;

use regex::Regex;

use super::{Sample, is_name_char};

/// The most a selector's regular expression may compile to: a pattern is written by the user once, but a
/// typo's pathological pattern should be refused, not built.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A parsed selector.
#[derive(Debug, Clone)]
pub struct Selector {
    /// The metric name, when written before the braces.
    name: Option<String>,
    matchers: Vec<Matcher>,
}

#[derive(Debug, Clone)]
struct Matcher {
    label: String,
    op: MatchOp,
    value: String,
    /// For `=~` and `!~`: the value compiled, anchored.
    regex: Option<Regex>,
}

/// How a matcher compares a label's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MatchOp {
    Equal,
    NotEqual,
    Matches,
    NotMatches,
}

impl MatchOp {
    fn as_str(self) -> &'static str {
        match self {
            Self::Equal => "=",
            Self::NotEqual => "!=",
            Self::Matches => "=~",
            Self::NotMatches => "!~",
        }
    }
}

impl Selector {
    /// Parses `text`.
    ///
    /// # Errors
    /// Says what is wrong, quoting the selector.
    pub fn parse(text: &str) -> Result<Self, String> {
        let fail =
            |why: &str| Err(format!("`{}` is not a series selector: {why}", crate::outside_text::clipped(text, 120)));
        let text = text.trim();
        let name_end = text.find(|c: char| !is_name_char(c)).unwrap_or(text.len());
        let name = &text[..name_end];
        if name.starts_with(|c: char| c.is_ascii_digit()) {
            return fail("a metric name starts with a letter, `_` or `:`");
        }
        let rest = &text[name_end..];
        let matchers = if rest.is_empty() {
            Vec::new()
        } else if let Some(inside) = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
            match matchers(inside) {
                Ok(matchers) => matchers,
                Err(why) => return fail(&why),
            }
        } else {
            return fail("write a metric name, then label matchers in braces: name{label=\"value\"}");
        };
        let names_metric = matchers.iter().any(|m| m.label == "__name__" && !m.matches(""));
        if name.is_empty() && !names_metric {
            return fail("it names no metric; start with the metric's name, or match `__name__`");
        }
        Ok(Self { name: (!name.is_empty()).then(|| name.to_owned()), matchers })
    }

    /// Whether `sample` is one of the selected series.
    #[must_use]
    pub fn matches(&self, sample: &Sample<'_>) -> bool {
        if self.name.as_deref().is_some_and(|name| name != sample.name) {
            return false;
        }
        self.matchers.iter().all(|m| {
            let value = if m.label == "__name__" { sample.name } else { sample.label(&m.label) };
            m.matches(value)
        })
    }
}

impl Matcher {
    fn matches(&self, value: &str) -> bool {
        match (self.op, &self.regex) {
            (MatchOp::Equal, _) => value == self.value,
            (MatchOp::NotEqual, _) => value != self.value,
            (MatchOp::Matches, Some(regex)) => regex.is_match(value),
            (MatchOp::NotMatches, Some(regex)) => !regex.is_match(value),
            (MatchOp::Matches | MatchOp::NotMatches, None) => false,
        }
    }
}

/// `label op "value", …` (the braces' inside).
fn matchers(mut rest: &str) -> Result<Vec<Matcher>, String> {
    let mut matchers = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return Ok(matchers);
        }
        let label_end = rest.find(|c: char| !is_name_char(c) || c == ':').unwrap_or(rest.len());
        let label = &rest[..label_end];
        if label.is_empty() || label.starts_with(|c: char| c.is_ascii_digit()) {
            return Err("a label matcher starts with the label's name".to_owned());
        }
        rest = rest[label_end..].trim_start();
        let op = [MatchOp::Matches, MatchOp::NotMatches, MatchOp::NotEqual, MatchOp::Equal]
            .into_iter()
            .find(|op| rest.starts_with(op.as_str()))
            .ok_or_else(|| format!("`{label}` is not followed by `=`, `!=`, `=~` or `!~`"))?;
        rest = rest[op.as_str().len()..].trim_start();
        let inside = rest.strip_prefix('"').ok_or_else(|| format!("the value of `{label}` is not in double quotes"))?;
        let (value, after) =
            super::quoted(inside).ok_or_else(|| format!("the value of `{label}` has no closing quote"))?;
        let value = value.into_owned();
        let regex = match op {
            MatchOp::Matches | MatchOp::NotMatches => Some(
                regex::RegexBuilder::new(&format!("^(?:{value})$"))
                    .size_limit(REGEX_SIZE_LIMIT)
                    .build()
                    .map_err(|e| format!("the pattern of `{label}` is not a regular expression: {e}"))?,
            ),
            MatchOp::Equal | MatchOp::NotEqual => None,
        };
        matchers.push(Matcher { label: label.to_owned(), op, value, regex });
        rest = after.trim_start();
        match rest.strip_prefix(',') {
            Some(after) => rest = after,
            None if rest.is_empty() => return Ok(matchers),
            None => return Err("label matchers are separated by `,`".to_owned()),
        }
    }
}

impl fmt::Display for Selector {
    /// The selector written back in its canonical form: `name{label="value",…}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name.as_deref().unwrap_or(""))?;
        if self.matchers.is_empty() {
            return Ok(());
        }
        f.write_str("{")?;
        for (i, m) in self.matchers.iter().enumerate() {
            let value = m.value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
            let separator = if i == 0 { "" } else { ", " };
            write!(f, "{separator}{}{}\"{value}\"", m.label, m.op.as_str())?;
        }
        f.write_str("}")
    }
}

impl PartialEq for Selector {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}
