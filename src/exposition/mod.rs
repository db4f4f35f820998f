//! The Prometheus text exposition format, read one line at a time, and the series selectors matched against
//! its samples (`node_cpu_seconds_total{mode!="idle"}`, [`selector`]).
//!
//! What an exporter sends is outside text: any bytes, of any length. This reader takes a line and either
//! names what it is ([`Line`]) or says what is wrong with it ([`LineError`]); it never panics and never
//! allocates more than the line it was given (label values with escapes are the only copies). It knows nothing
//! of degrade: the scraper (`telemetry`) bounds how many bytes and lines it hands over.
//!
//! Why not a crate: `prometheus-parse` (the one Apache-licensed parser on crates.io) reads labels with a
//! regular expression and splits them on `,` and `=`, so a label value holding either is misread and one
//! holding `}` drops its sample without a word, and it builds the whole scrape in memory; `openmetrics-parser`
//! is LGPL. The format is small and line-based (the Prometheus project's `exposition_formats.md`): a sample is
//! `name{label="value",…} value [timestamp]`, and `#` starts a comment (`# HELP`, `# TYPE`, OpenMetrics'
//! `# UNIT` and `# EOF`). An OpenMetrics exemplar after the value (` # {trace_id="…"} 1`) is read past.

pub mod selector;

use std::borrow::Cow;

pub use selector::Selector;

/// One line of an exposition.
#[derive(Debug, Clone, PartialEq)]
pub enum Line<'a> {
    /// A sample: one series' value.
    Sample(Sample<'a>),
    /// `# TYPE name kind`: what kind of metric `name` is (`counter`, `gauge`, `histogram`, …).
    Type {
        /// The metric family's name.
        name: &'a str,
        /// As written: the format allows `counter`, `gauge`, `histogram`, `summary`, `untyped`.
        kind: &'a str,
    },
    /// A comment, `# HELP`, `# UNIT`, `# EOF` or an empty line: nothing to keep.
    Other,
}

/// One sample: a series (its metric name and labels) and its value. The timestamp an exporter may give is
/// read past: degrade stamps a scrape with its own clock, the run's.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<'a> {
    /// The metric name.
    pub name: &'a str,
    /// The labels in the order written, their values unescaped.
    pub labels: Vec<(&'a str, Cow<'a, str>)>,
    /// The value; `NaN` and `±Inf` are values the format allows.
    pub value: f64,
}

impl Sample<'_> {
    /// The value of label `name`; an absent label reads as empty, as Prometheus reads it.
    #[must_use]
    pub fn label(&self, name: &str) -> &str {
        self.labels.iter().find(|(label, _)| *label == name).map_or("", |(_, value)| value.as_ref())
    }
}

/// Why a line is not part of the format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LineError(pub String);

/// Reads one line (without its line break; a trailing `\r` is allowed).
///
/// # Errors
/// When the line is neither a comment nor a well-formed sample.
pub fn parse_line(line: &str) -> Result<Line<'_>, LineError> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let text = line.trim_start_matches([' ', '\t']);
    if text.is_empty() {
        return Ok(Line::Other);
    }
    if let Some(comment) = text.strip_prefix('#') {
        return Ok(comment_line(comment));
    }
    sample(text).map(Line::Sample)
}

/// `# TYPE name kind` names a kind; every other comment is read past.
fn comment_line(comment: &str) -> Line<'_> {
    let mut words = comment.split_ascii_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some("TYPE"), Some(name), Some(kind)) => Line::Type { name, kind },
        _ => Line::Other,
    }
}

fn sample(text: &str) -> Result<Sample<'_>, LineError> {
    let name_end = text.find(|c: char| !is_name_char(c)).unwrap_or(text.len());
    let name = &text[..name_end];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(error("does not start with a metric name", text));
    }
    let mut rest = &text[name_end..];
    let mut labels = Vec::new();
    if let Some(after_brace) = rest.strip_prefix('{') {
        rest = read_labels(after_brace, &mut labels).map_err(|why| error(&why, text))?;
    }
    let spaced = rest.trim_start_matches([' ', '\t']);
    if spaced.is_empty() {
        return Err(error("has no value", text));
    }
    if spaced.len() == rest.len() {
        return Err(error("has no space before its value", text));
    }
    let rest = spaced;
    let value_end = rest.find([' ', '\t']).unwrap_or(rest.len());
    let value = parse_value(&rest[..value_end]).ok_or_else(|| error("has no number as its value", text))?;
    let after = rest[value_end..].trim_start_matches([' ', '\t']);
    // An optional timestamp, then an OpenMetrics exemplar (`# {…} value`); anything else is not the format.
    let after = match after.find([' ', '\t']) {
        _ if after.is_empty() || after.starts_with('#') => "",
        Some(end) if parse_value(&after[..end]).is_some() => after[end..].trim_start_matches([' ', '\t']),
        None if parse_value(after).is_some() => "",
        _ => return Err(error("has text after its value that is not a timestamp", text)),
    };
    if !after.is_empty() && !after.starts_with('#') {
        return Err(error("has text after its timestamp", text));
    }
    Ok(Sample { name, labels, value })
}

/// Reads `label="value",…}` into `labels`; returns what follows the closing brace.
fn read_labels<'a>(mut rest: &'a str, labels: &mut Vec<(&'a str, Cow<'a, str>)>) -> Result<&'a str, String> {
    loop {
        rest = rest.trim_start_matches([' ', '\t']);
        if let Some(after) = rest.strip_prefix('}') {
            return Ok(after);
        }
        let name_end = rest.find(|c: char| !is_name_char(c) || c == ':').unwrap_or(rest.len());
        let name = &rest[..name_end];
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            return Err("has a label without a name, or its braces are not closed".to_owned());
        }
        rest = rest[name_end..].trim_start_matches([' ', '\t']);
        rest = rest.strip_prefix('=').ok_or("has a label without `=`")?.trim_start_matches([' ', '\t']);
        rest = rest.strip_prefix('"').ok_or("has a label value that is not in double quotes")?;
        let (value, after) = quoted(rest).ok_or("has a label value whose closing quote is missing")?;
        labels.push((name, value));
        rest = after.trim_start_matches([' ', '\t']);
        if let Some(after) = rest.strip_prefix(',') {
            rest = after;
        } else if !rest.starts_with('}') {
            return Err("has labels that are not separated by `,` or closed by `}`".to_owned());
        }
    }
}

/// The quoted text at the start of `rest` (its opening quote already read), unescaped, and what follows the
/// closing quote; `None` when it is not closed.
fn quoted(rest: &str) -> Option<(Cow<'_, str>, &str)> {
    let mut escaped: Option<String> = None;
    let mut chars = rest.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => {
                let value = escaped.map_or(Cow::Borrowed(&rest[..at]), Cow::Owned);
                return Some((value, &rest[at + 1..]));
            }
            '\\' => {
                let copy = escaped.get_or_insert_with(|| rest[..at].to_owned());
                match chars.next()?.1 {
                    'n' => copy.push('\n'),
                    other => copy.push(other),
                }
            }
            c => {
                if let Some(copy) = &mut escaped {
                    copy.push(c);
                }
            }
        }
    }
    None
}

/// A sample value as Go writes floats: decimal or exponent notation, `NaN`, `+Inf`, `-Inf`.
fn parse_value(text: &str) -> Option<f64> {
    match text {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        // Rust would also take `inf` and `infinity` in any case; the format does not, and neither do we.
        _ if text.chars().any(|c| c.is_ascii_alphabetic() && !matches!(c, 'e' | 'E')) => None,
        _ => text.parse().ok(),
    }
}

pub(crate) fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// The error for `line`, quoting its start with control characters escaped.
fn error(why: &str, line: &str) -> LineError {
    LineError(format!("`{}` {why}", crate::outside_text::clipped(line, 80)))
}

#[cfg(test)]
mod tests;
