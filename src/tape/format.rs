//! The tape file: one recorded request per line, tab-separated, diff-friendly, gzip-compressed when large.
//!
//! ```text
//! # degrade tape 1
//! GET → /api/boards/17/cards?page=2 → 200 → t=2026-11-30T10:00:01.250Z
//! POST → /api/boards → 201 → s=page_3 → h=content-type: application/json → b={"title":"Q4 plan"}
//! ```
//!
//! (`→` stands for a tab.) Each line is `METHOD`, the request target (path and query, as sent), the recorded status (`-` if
//! unknown), then optional tagged fields: `s=` the recorded session, `t=` when it was sent (RFC 3339), `h=`
//! one header (`name: value`, repeatable), `b=` the body. In every field a tab, a line break and a backslash
//! are written `\t`, `\n`, `\r` and `\\`. Lines starting with `#` are comments. Never in a tape: credentials —
//! `authorization`, `cookie` and `proxy-authorization` headers are refused when it is read, since auth comes
//! from the scenario's `[target] headers`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chrono::{DateTime, SecondsFormat, Utc};
use http::Method;

use super::fnv::Fnv;
use super::lines::{Line, LineReader};
use super::private_values::{ScrubRules, excerpt};

/// The first line of every tape, naming the format's version.
pub const HEADER: &str = "# degrade tape 1";

/// How the version line starts, whatever the version.
const VERSION_LINE: &str = "# degrade tape ";

/// One recorded request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TapeRequest {
    /// As recorded: `GET`, `POST`, …
    pub method: Method,
    /// Path and query, starting with `/`, sent as they are.
    pub target: String,
    /// What the recorded server answered, if known.
    pub status: Option<u16>,
    /// Which recorded session (browser page, user) it belongs to, if known.
    pub session: Option<String>,
    /// When it was sent, if known.
    pub time: Option<DateTime<Utc>>,
    /// Headers kept by the import (content type and the like; never credentials).
    pub headers: Vec<(String, String)>,
    /// The body, if any (text).
    pub body: Option<String>,
}

/// Headers that frame the message on the wire: degrade writes them, a tape cannot.
const FRAMING_HEADERS: &[&str] = &["content-length", "transfer-encoding", "connection", "upgrade", "te"];

/// Headers a tape may not hold: auth comes from the scenario.
pub const CREDENTIAL_HEADERS: &[&str] = &["authorization", "cookie", "proxy-authorization"];

impl TapeRequest {
    /// A request with nothing but its method and target.
    #[must_use]
    pub fn new(method: Method, target: String) -> Self {
        Self { method, target, status: None, session: None, time: None, headers: Vec::new(), body: None }
    }

    /// Appends this request as one tape line, with its line break.
    pub fn write_line(&self, out: &mut String) {
        out.push_str(self.method.as_str());
        out.push('\t');
        escape_into(out, &self.target);
        out.push('\t');
        match self.status {
            Some(status) => {
                let _ = write!(out, "{status}");
            }
            None => out.push('-'),
        }
        if let Some(session) = &self.session {
            out.push_str("\ts=");
            escape_into(out, session);
        }
        if let Some(time) = self.time {
            out.push_str("\tt=");
            out.push_str(&time.to_rfc3339_opts(SecondsFormat::AutoSi, true));
        }
        for (name, value) in &self.headers {
            out.push_str("\th=");
            escape_into(out, name);
            out.push_str(": ");
            escape_into(out, value);
        }
        if let Some(body) = &self.body {
            out.push_str("\tb=");
            escape_into(out, body);
        }
        out.push('\n');
    }

    /// Reads one tape line (not a comment). The error names the field that is wrong.
    pub fn parse(line: &str) -> Result<Self, (&'static str, String)> {
        let mut fields = line.split('\t');
        let method = fields.next().unwrap_or_default();
        let method = Method::from_bytes(method.as_bytes())
            .ok()
            .filter(|_| !method.is_empty() && method.bytes().all(|b| b.is_ascii_uppercase()))
            .ok_or_else(|| {
                let hint = if method.contains(' ') { " (fields are separated by tabs)" } else { "" };
                ("method", format!("`{}` is not an HTTP method{hint}", excerpt(method)))
            })?;
        let target = unescape(fields.next().ok_or_else(|| ("target", "missing".to_owned()))?);
        if !target.starts_with('/') || !target.bytes().all(|b| b.is_ascii_graphic()) {
            return Err((
                "target",
                format!("`{}` is not a path: it must start with `/`, visible ASCII only", excerpt(&target)),
            ));
        }
        let status = match fields.next().ok_or_else(|| ("status", "missing".to_owned()))? {
            "-" => None,
            s => Some(
                s.parse::<u16>()
                    .ok()
                    .filter(|s| (100..=599).contains(s))
                    .ok_or_else(|| ("status", format!("`{}` is not an HTTP status", excerpt(s))))?,
            ),
        };
        let mut request = Self { status, ..Self::new(method, target) };
        for field in fields {
            request.read_tagged(field)?;
        }
        Ok(request)
    }

    fn read_tagged(&mut self, field: &str) -> Result<(), (&'static str, String)> {
        let (tag, value) = field.split_at_checked(2).unwrap_or((field, ""));
        match tag {
            "s=" => self.session = Some(unescape(value)),
            "t=" => {
                let time = DateTime::parse_from_rfc3339(value)
                    .map_err(|_| ("t", format!("`{}` is not an RFC 3339 time", excerpt(value))))?;
                self.time = Some(time.with_timezone(&Utc));
            }
            "h=" => {
                let header = unescape(value);
                let (name, value) =
                    header.split_once(": ").ok_or_else(|| ("h", "write a header as `name: value`".to_owned()))?;
                let name = name.to_ascii_lowercase();
                if http::HeaderName::from_bytes(name.as_bytes()).is_err()
                    || value.bytes().any(|b| b < 0x20 && b != b'\t' || b == 0x7f)
                {
                    return Err(("h", format!("`{}` is not a valid header", excerpt(&header))));
                }
                if FRAMING_HEADERS.contains(&name.as_str()) {
                    return Err((
                        "h",
                        format!("`{name}` is written by degrade from the body, never taken from a tape"),
                    ));
                }
                if CREDENTIAL_HEADERS.contains(&name.as_str()) || ScrubRules::default().is_secret(&name) {
                    return Err((
                        "h",
                        format!("a tape holds no credentials (`{name}`); set them in [target] headers with env()"),
                    ));
                }
                self.headers.push((name, value.to_owned()));
            }
            "b=" => self.body = Some(unescape(value)),
            _ => return Err(("field", format!("`{}` is not a field; fields are s=, t=, h= and b=", excerpt(field)))),
        }
        Ok(())
    }
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
}

fn unescape(text: &str) -> String {
    if !text.contains('\\') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// A problem at one line of a tape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {field}: {message}", file.display(), if *line > 0 { format!(":{line}") } else { String::new() })]
pub struct TapeError {
    /// The tape.
    pub file: PathBuf,
    /// 1-based; 0 when the whole file is concerned.
    pub line: u64,
    /// Which field (`method`, `target`, `status`, `h`, …) or `file`.
    pub field: &'static str,
    /// What is wrong.
    pub message: String,
}

/// Reads a tape's requests in order, skipping comments and empty lines.
pub struct TapeReader {
    lines: LineReader,
    file: PathBuf,
    digest: Fnv,
    /// Whether a line so far said it is a tape (its version line) or was a request: until one has, a line that
    /// is neither is not quoted (a scenario's `file` pointing at `/etc/shadow` printed a password hash).
    known_tape: bool,
}

impl TapeReader {
    /// Opens a tape (plain or gzip).
    pub fn open(file: &Path) -> Result<Self, TapeError> {
        let lines = LineReader::open(file).map_err(|e| TapeError {
            file: file.to_owned(),
            line: 0,
            field: "file",
            message: format!("cannot read it: {e}"),
        })?;
        Ok(Self { lines, file: file.to_owned(), digest: Fnv::default(), known_tape: false })
    }

    /// The next request and its line number, `None` at the end.
    pub fn next_request(&mut self) -> Option<Result<(u64, TapeRequest), TapeError>> {
        loop {
            let line = match self.lines.next_line() {
                Ok(None) => return None,
                Ok(Some(line)) => line,
                Err(e) => return Some(Err(self.error("file", format!("cannot read it: {e}")))),
            };
            let (number, text) = match line {
                (number, Line::Text(text)) if text.starts_with(VERSION_LINE) && text != HEADER => {
                    let message = format!("`{}`: this degrade reads `{HEADER}`", excerpt(text));
                    return Some(Err(TapeError { file: self.file.clone(), line: number, field: "version", message }));
                }
                (_, Line::Text(text)) if text.is_empty() || text.starts_with('#') => {
                    self.known_tape |= text == HEADER;
                    continue;
                }
                (number, Line::Text(text)) => (number, text),
                (_, Line::Unreadable(why)) => return Some(Err(self.error("line", why.to_owned()))),
            };
            self.digest.add(text.as_bytes()).add(b"\n");
            let parsed = TapeRequest::parse(text);
            // Every line degrade writes ends with a line feed: a request without one was cut off (a tape
            // copied while it was written), and its body may be half of one.
            if self.lines.unterminated {
                let message = "the tape ends inside this request, with no line feed after it: it was cut off \
                               (copied while being written?); a tape ends every line with one"
                    .to_owned();
                return Some(Err(TapeError { file: self.file.clone(), line: number, field: "line", message }));
            }
            let file = &self.file;
            let known = std::mem::replace(&mut self.known_tape, true);
            return Some(parsed.map(|r| (number, r)).map_err(|(field, message)| {
                // A method and a path make a line a tape's: only then is what follows worth quoting.
                if known || !matches!(field, "method" | "target") {
                    return TapeError { file: file.clone(), line: number, field, message };
                }
                let message = format!(
                    "not a tape: no `{HEADER}` line, and its first line does not start with a method and a path \
                     (`degrade tape import` makes a tape of a log or a HAR)"
                );
                TapeError { file: file.clone(), line: number, field: "line", message }
            }));
        }
    }

    /// A hash of the request lines read so far (comments are not content).
    #[must_use]
    pub fn digest(&self) -> u64 {
        self.digest.value()
    }

    fn error(&self, field: &'static str, message: String) -> TapeError {
        TapeError { file: self.file.clone(), line: self.lines.number, field, message }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tape_cut_off_inside_its_last_request_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.tape");
        std::fs::write(&file, "# degrade tape 1\nGET\t/a\t200\nPOST\t/pay\t201\tb={\"card\":\"9998 75").unwrap();
        let mut reader = TapeReader::open(&file).unwrap();
        assert!(reader.next_request().unwrap().is_ok());
        let error = reader.next_request().unwrap().unwrap_err().to_string();
        assert!(error.ends_with(":3: line: the tape ends inside this request, with no line feed after it: it was cut off (copied while being written?); a tape ends every line with one"), "{error}");
        // A comment without one at the end is no request cut off.
        std::fs::write(&file, "# degrade tape 1\nGET\t/a\t200\n# the end").unwrap();
        let mut reader = TapeReader::open(&file).unwrap();
        assert!(reader.next_request().unwrap().is_ok() && reader.next_request().is_none());
    }

    #[test]
    fn a_line_reads_back_as_written() {
        let mut request = TapeRequest::new(Method::POST, "/a/1?x=%20".to_owned());
        request.status = Some(201);
        request.session = Some("page\t1".to_owned());
        request.time = Some("2026-11-30T10:00:01.250Z".parse().unwrap());
        request.headers.push(("content-type".to_owned(), "application/json".to_owned()));
        request.body = Some("{\"a\":\"line\nbreak \\ tab\t\"}".to_owned());
        let mut line = String::new();
        request.write_line(&mut line);
        assert_eq!(line.matches('\n').count(), 1, "{line}");
        assert_eq!(TapeRequest::parse(line.trim_end_matches('\n')).unwrap(), request);
    }

    #[test]
    fn bad_fields_are_named() {
        let field = |line: &str| TapeRequest::parse(line).unwrap_err().0;
        assert_eq!(field("get\t/a\t200"), "method");
        assert_eq!(field("GET\ta\t200"), "target");
        assert_eq!(field("GET\t/a b\t200"), "target");
        assert_eq!(field("GET\t/a\t999"), "status");
        assert_eq!(field("GET\t/a"), "status");
        assert_eq!(field("GET\t/a\t-\tt=yesterday"), "t");
        assert_eq!(field("GET\t/a\t-\th=Cookie: sid=1"), "h");
        assert_eq!(field("GET\t/a\t-\tx=1"), "field");
        let message = |line: &str| TapeRequest::parse(line).unwrap_err().1;
        assert!(message("GET /a 200").ends_with("(fields are separated by tabs)"), "{}", message("GET /a 200"));
        assert!(message("GET\t/a\t-\th=X-Api-Key: k").contains("a tape holds no credentials (`x-api-key`)"));
        assert!(message("GET\t/a\t-\th=Content-Length: 3").contains("`content-length` is written by degrade"));
        assert_eq!(
            message("GET\t/a?token=SECRET x\t200"),
            "`/a?…` is not a path: it must start with `/`, visible ASCII only"
        );
    }

    #[test]
    fn a_file_that_is_no_tape_is_not_quoted() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("shadow");
        std::fs::write(&file, "root:$6$salt$hash:20228:0:99999:7:::\n").unwrap();
        let error = TapeReader::open(&file).unwrap().next_request().unwrap().unwrap_err();
        assert_eq!((error.line, error.field), (1, "line"));
        assert!(
            error.to_string().contains("not a tape: no `# degrade tape 1` line") && !error.to_string().contains("$6$")
        );
        // An all-capital first field passes for a method: the next is still not quoted.
        std::fs::write(&file, "ADMIN\thunter2\n").unwrap();
        let error = TapeReader::open(&file).unwrap().next_request().unwrap().unwrap_err();
        assert!(error.to_string().contains("not a tape") && !error.to_string().contains("hunter2"), "{error}");
        // A tape without its version line still reads, and still says what is wrong with a later line.
        std::fs::write(&file, "GET\t/a\t200\nroot:x\n").unwrap();
        let mut reader = TapeReader::open(&file).unwrap();
        assert!(reader.next_request().unwrap().is_ok());
        assert_eq!(reader.next_request().unwrap().unwrap_err().field, "method");
    }

    #[test]
    fn a_tape_of_another_version_is_refused_with_where() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.tape");
        std::fs::write(&file, "# degrade tape 2\nGET\t/a\t200\n").unwrap();
        let error = TapeReader::open(&file).unwrap().next_request().unwrap().unwrap_err();
        assert_eq!((error.line, error.field), (1, "version"));
        assert!(
            error.to_string().ends_with(":1: version: `# degrade tape 2`: this degrade reads `# degrade tape 1`"),
            "{error}"
        );
    }
}
