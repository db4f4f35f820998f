//! Where recorded traffic comes from: access logs in any nginx `log_format` (combined by default), JSON Lines
//! logs and HAR recordings. Each is read as a stream of [`Recorded`] requests, handed over one at a time; a
//! line (or HAR entry) that is not a request is a [`Malformed`] item with its line number, counted and
//! skipped by the import; only a source that cannot be read further (a truncated gzip stream) stops it.

mod har;
mod json_lines;
mod log_format;

use std::path::Path;

use chrono::{DateTime, Utc};
use http::Method;

pub use har::{Answer, HarEntry, HarError, MAX_ENTRY_BYTES, read_har};
pub use log_format::LogFormat;

use super::format::TapeRequest;
use super::lines::{Line, LineReader};
use super::private_values::excerpt;

/// One request as a source recorded it, before filtering and scrubbing.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Method, target, status, session, time and body (headers come apart: they are scrubbed first).
    pub request: TapeRequest,
    /// Headers as recorded.
    pub headers: Vec<(String, String)>,
    /// The host it was sent to, if the source says.
    pub host: Option<String>,
    /// A body was recorded that is not text (base64 of binary bytes): left out, and counted as a body that
    /// could not be checked, as the scrubber counts one.
    pub unreadable_body: bool,
}

/// A line (or HAR entry) that is not a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// 1-based line (or entry) number.
    pub line: u64,
    /// Why, naming the field.
    pub message: String,
    /// The source cannot be read past it (a truncated gzip stream, a read error): the import stops.
    pub fatal: bool,
}

impl Malformed {
    /// A line that is not a request; the import goes on.
    #[must_use]
    pub fn new(line: u64, message: String) -> Self {
        Self { line, message, fatal: false }
    }
}

/// How a source is written.
#[derive(Debug, Clone)]
pub enum SourceFormat {
    /// An access log in this nginx `log_format`.
    Log(LogFormat),
    /// One JSON object per line.
    JsonLines,
    /// A HAR 1.2 recording.
    Har,
}

impl SourceFormat {
    /// `--format` as given (`combined`, `common`, `json`, `har` or an nginx `log_format` string), or guessed
    /// from the file name: `.har`, `.jsonl`/`.ndjson`/`.json`, else the combined log format.
    pub fn choose(given: Option<&str>, path: &Path) -> Result<Self, String> {
        // Lowercased first, so `.HAR` and `.har` are one.
        let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
        let name = name.strip_suffix(".gz").unwrap_or(&name);
        match given {
            Some("json" | "jsonl") => Ok(Self::JsonLines),
            Some("har") => Ok(Self::Har),
            Some(format) => Ok(Self::Log(LogFormat::named_or_parsed(format)?)),
            None if has_extension(name, &["har"]) => Ok(Self::Har),
            None if has_extension(name, &["jsonl", "ndjson", "json"]) => Ok(Self::JsonLines),
            None => Ok(Self::Log(LogFormat::named_or_parsed("combined")?)),
        }
    }

    /// A short name for the report.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Self::Log(format) => format!("{} access log", format.name()),
            Self::JsonLines => "JSON Lines log".to_owned(),
            Self::Har => "HAR recording".to_owned(),
        }
    }
}

/// Whether the (lowercased) file `name` ends in `.EXT` for one of `extensions`.
fn has_extension(name: &str, extensions: &[&str]) -> bool {
    name.rsplit_once('.').is_some_and(|(_, ext)| extensions.contains(&ext))
}

/// Hands every request of the file at `path` (or why a line is not one) to `each`, in order, as it is read;
/// stops at the first error, of the source or of `each`.
pub fn read(
    path: &Path,
    format: &SourceFormat,
    each: &mut dyn FnMut(Result<Recorded, Malformed>) -> Result<(), String>,
) -> Result<(), String> {
    let lines = LineReader::open(path).map_err(|e| format!("{}: cannot read it: {e}", path.display()))?;
    let parse = match format {
        SourceFormat::Log(format) => LineParser::Log(format.clone()),
        SourceFormat::JsonLines => LineParser::Json,
        SourceFormat::Har => {
            // A HAR is read for the import's requests alone: one entry at a time, whatever its length.
            return match read_har(lines, None, &mut |entry| each(entry.map(|e| e.recorded))) {
                Ok(_) => Ok(()),
                Err(HarError::Unreadable(why)) => Err(format!("{}: {why}", path.display())),
                Err(HarError::Stopped(why)) => Err(why),
            };
        }
    };
    LineSource { lines, parse, broken: false }.try_for_each(each)
}

enum LineParser {
    Log(LogFormat),
    Json,
}

/// A line-per-request source.
struct LineSource {
    lines: LineReader,
    parse: LineParser,
    /// Set after a read error: nothing more is read (the same error would come again, forever).
    broken: bool,
}

impl Iterator for LineSource {
    type Item = Result<Recorded, Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.broken {
            return None;
        }
        loop {
            let line = match self.lines.next_line() {
                Ok(Some(line)) => line,
                Ok(None) => return None,
                Err(e) => {
                    self.broken = true;
                    let message = format!("cannot read further: {e}");
                    return Some(Err(Malformed { line: self.lines.number + 1, message, fatal: true }));
                }
            };
            let (number, text) = match line {
                (_, Line::Text(text)) if text.trim().is_empty() => continue,
                (number, Line::Text(text)) => (number, text),
                (number, Line::Unreadable(why)) => {
                    return Some(Err(Malformed::new(number, why.to_owned())));
                }
            };
            let parsed = match &self.parse {
                LineParser::Log(format) => format.parse(text),
                LineParser::Json => json_lines::parse(text),
            };
            return Some(parsed.map_err(|message| Malformed::new(number, message)));
        }
    }
}

/// The longest request target kept: the common limit of servers (nginx's default buffers, Apache's
/// `LimitRequestLine`); a longer one would only replay as an error.
const MAX_TARGET_BYTES: usize = 8192;

/// A method as logged: an uppercase token (`GET`), or why not.
fn method(text: &str) -> Result<Method, String> {
    if text.is_empty() || text.len() > 20 || !text.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(format!("`{}` is not an HTTP method", excerpt(text)));
    }
    Method::from_bytes(text.as_bytes()).map_err(|_| format!("`{}` is not an HTTP method", excerpt(text)))
}

/// A request target as logged, in origin form (`/path?query`) or absolute form (`https://host/path`, whose
/// host is returned too). The fragment is dropped: it never reaches a server.
fn target(text: &str) -> Result<(String, Option<String>), String> {
    let text = sent_form(text.split('#').next().unwrap_or_default());
    let text = text.as_ref();
    let (target, host) = match text.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https") => {
            let end = rest.find(['/', '?']).unwrap_or(rest.len());
            let (authority, path) = rest.split_at(end);
            let path = if path.starts_with('/') { path.to_owned() } else { format!("/{path}") };
            let host = authority.rsplit('@').next().unwrap_or(authority).to_ascii_lowercase();
            // A host name, an IPv4 or a bracketed IPv6 address, and a port: nothing that could end a line or
            // a quoted string where it is printed or written.
            if host.is_empty() || !host.chars().all(|c| c.is_ascii_alphanumeric() || ".-:[]_".contains(c)) {
                return Err(format!("`{}` is not a host", excerpt(&host)));
            }
            (path, Some(host))
        }
        _ => (text.to_owned(), None),
    };
    if !target.starts_with('/') || !target.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!("`{}` is not a request path", excerpt(&target)));
    }
    if target.len() > MAX_TARGET_BYTES {
        return Err(format!("the path is {} bytes long; servers refuse more than 8 KiB", target.len()));
    }
    Ok((target, host))
}

/// A target as a client sends it: a space and any text past ASCII percent-encoded (a log or a hand-made HAR
/// writes `q=café` and `q=red hat`, which no request line carries as they are; a trial lost them as "not a
/// request path"). Control characters are left for the check to refuse.
fn sent_form(text: &str) -> std::borrow::Cow<'_, str> {
    if text.bytes().all(|b| b != b' ' && b.is_ascii()) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            ' ' => out.push_str("%20"),
            c if c.is_ascii() => out.push(c),
            c => {
                for byte in c.encode_utf8(&mut [0; 4]).bytes() {
                    out.push_str(&format!("%{byte:02X}"));
                }
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A recorded status, 100–599.
fn status(text: &str) -> Result<Option<u16>, String> {
    match text {
        "" | "-" => Ok(None),
        s => s
            .parse::<u16>()
            .ok()
            .filter(|s| (100..=599).contains(s))
            .map(Some)
            .ok_or_else(|| format!("status `{}` is not an HTTP status", excerpt(s))),
    }
}

/// A time given as RFC 3339 or as a number since the epoch: seconds, or milli-, micro- or nanoseconds when it
/// is that large. Only years 1970 to 9999 count: a tape writes times as RFC 3339, which has four-digit years.
fn time(text: &str) -> Option<DateTime<Utc>> {
    let time = if let Ok(time) = DateTime::parse_from_rfc3339(text) {
        time.with_timezone(&Utc)
    } else {
        let number: f64 = text.parse().ok().filter(|n: &f64| n.is_finite() && *n >= 0.0)?;
        let millis = match number {
            n if n > 1e17 => n / 1e6,
            n if n > 1e14 => n / 1e3,
            n if n > 1e11 => n,
            n => n * 1e3,
        };
        DateTime::from_timestamp_millis(millis as i64)?
    };
    (1970..=9999).contains(&chrono::Datelike::year(&time)).then_some(time)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_times_in_any_unit_and_only_four_digit_years() {
        let year = |text: &str| time(text).map(|t| chrono::Datelike::year(&t));
        for text in ["1764496800", "1764496800123", "1764496800123456", "1764496800123456789", "2025-11-30T10:00:00Z"] {
            assert_eq!(year(text), Some(2025), "{text}");
        }
        assert_eq!(year("99999999999999999999999"), None);
        assert_eq!(year("-5"), None);
    }

    #[test]
    fn an_absolute_url_gives_its_path_and_a_plain_host() {
        assert_eq!(
            target("https://user:pw@API.example.com:8443?x=1").unwrap(),
            ("/?x=1".to_owned(), Some("api.example.com:8443".to_owned()))
        );
        assert!(target("https://x\nseed = 2\n#/a").is_err());
        let long = format!("/{}", "x".repeat(9000));
        assert_eq!(target(&long).unwrap_err(), "the path is 9001 bytes long; servers refuse more than 8 KiB");
        // A malformed target is quoted without its query: the query is where tokens travel.
        assert_eq!(target("/a\u{7}b?token=SECRET").unwrap_err(), "`/a\\u{7}b?…` is not a request path");
        // Sent as a client sends it: spaces and text past ASCII percent-encoded.
        assert_eq!(target("/search?q=café au lait&page=1").unwrap().0, "/search?q=caf%C3%A9%20au%20lait&page=1");
    }
}
