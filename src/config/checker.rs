//! The toolbox every check of a TOML file uses — `degrade.toml` here, scenario files in `scenario` — so both
//! report problems the same way: deserialize with the field path ([`parse_raw`]), check each value where it
//! stands and keep going ([`Checker`]), and the value parsers two files share (URLs, ports, listen addresses).

use std::path::{Path, PathBuf};

use toml::Spanned;

use super::{ConfigError, ConfigWarning, Location};
use crate::outside_text::printable;

/// Deserializes the file, turning serde's first complaint (unknown key, wrong type, bad TOML) into an error
/// with line, column and the field path.
pub(crate) fn parse_raw<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T, ConfigError> {
    let syntax_error = |e: &toml::de::Error| {
        let offset = e.span().map_or(0, |span| span.start);
        let mut message = e.message().trim().to_owned();
        // The parser says "duplicate key" and points at the second one: name it, as the reader looks for it.
        if message == "duplicate key"
            && let Some(key) = e.span().and_then(|span| text.get(span))
        {
            message = format!("duplicate key `{}`: it is set earlier in the same table", printable(key.trim()));
        }
        (Location::at_offset(path, text, offset), plain_types(&message))
    };
    let deserializer = toml::Deserializer::parse(text).map_err(|e| {
        let (location, message) = syntax_error(&e);
        ConfigError::new(location, "", format!("invalid TOML: {message}"))
    })?;
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        // `Spanned` values deserialize through a private inner field that is no part of the user's file.
        let field = e.path().to_string().replace(".$__serde_spanned_private_value", "");
        let (location, message) = syntax_error(e.inner());
        ConfigError::new(location, if field == "." { String::new() } else { field }, message)
    })
}

/// serde's complaint in the words of a TOML file's writer: `expected i64` is `expected a whole number`, and a
/// number written in quotes is told to lose them.
fn plain_types(message: &str) -> String {
    const WHOLE: [&str; 10] = ["i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize"];
    let Some((found, rust_type)) = message.rsplit_once(", expected ") else { return message.to_owned() };
    let whole = WHOLE.contains(&rust_type);
    if !whole && !matches!(rust_type, "f32" | "f64") {
        return message.to_owned();
    }
    let words = if whole { "a whole number" } else { "a number" };
    let quoted = found.strip_prefix("invalid type: string \"").and_then(|s| s.strip_suffix('"')).map(str::trim);
    // Only where the quoted text is what was meant: `"100"` for a number, not `"nan"` or `"1.5"` for a count.
    let meant = quoted
        .is_some_and(|q| if whole { q.parse::<i64>().is_ok() } else { q.parse::<f64>().is_ok_and(f64::is_finite) });
    let hint = if meant { ": write it without quotes" } else { "" };
    format!("{found}, expected {words}{hint}")
}

/// Collects problems while the raw config is checked.
pub(crate) struct Checker<'a> {
    path: &'a Path,
    text: &'a str,
    pub(crate) errors: Vec<ConfigError>,
    pub(crate) warnings: Vec<ConfigWarning>,
}

impl<'a> Checker<'a> {
    /// A checker for `text`, read from `path`, with no problems found yet.
    pub(crate) fn new(path: &'a Path, text: &'a str) -> Self {
        Self { path, text, errors: Vec::new(), warnings: Vec::new() }
    }

    pub(crate) fn location<T>(&self, value: &Spanned<T>) -> Location {
        Location::at_offset(self.path, self.text, value.span().start)
    }

    pub(crate) fn error<T>(&mut self, value: &Spanned<T>, field: &str, message: impl Into<String>) {
        let location = self.location(value);
        self.errors.push(ConfigError::new(location, field, message));
    }

    /// Runs `parse` on the value and records its error, if any, at the value's position.
    pub(crate) fn check<T, U>(
        &mut self,
        value: &Spanned<T>,
        field: &str,
        parse: impl FnOnce(&T) -> Result<U, String>,
    ) -> Option<U> {
        match parse(value.get_ref()) {
            Ok(parsed) => Some(parsed),
            Err(message) => {
                self.error(value, field, message);
                None
            }
        }
    }

    pub(crate) fn path(&self) -> &Path {
        self.path
    }

    pub(crate) fn folder(&self) -> PathBuf {
        self.path.parent().map(Path::to_path_buf).unwrap_or_default()
    }
}

/// A name degrade shows and stores (a flow, a step, a notifier): text without control characters. A NUL
/// cannot be stored in PostgreSQL at all, a line break splits a report's line, an escape acts on a terminal.
pub(crate) fn plain_name(name: &str) -> Result<(), String> {
    match name.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!(
            "`{}` holds a control character ({}); a name is printable text on one line",
            shown(name),
            c.escape_unicode()
        )),
        None => Ok(()),
    }
}

/// A fixed header value as a request can carry it: no control character but tab (a line break would end
/// the header early, a NUL is refused by servers), so a mistake is found by `validate`, not by every request.
pub(crate) fn header_text(value: &str) -> Result<(), String> {
    match value.chars().find(|&c| c.is_control() && c != '\t') {
        Some(c) => Err(format!(
            "`{}` holds a control character ({}), which no header value can carry",
            shown(value),
            c.escape_unicode()
        )),
        None => Ok(()),
    }
}

/// A step's path as the request line carries it: outside `{{ … }}`, visible ASCII only (a space, a control or
/// a non-ASCII character would end the request line early or be refused); write them percent-encoded.
pub(crate) fn path_text(path: &str) -> Result<(), String> {
    let mut rest = path;
    let mut literal = String::new();
    while let Some(open) = rest.find("{{") {
        literal.push_str(&rest[..open]);
        rest = rest[open..].find("}}").map_or("", |close| &rest[open + close + 2..]);
    }
    literal.push_str(rest);
    if let Some(c) = path.chars().find(|c| c.is_control()) {
        return Err(format!(
            "`{}` holds a control character ({}); write it percent-encoded",
            shown(path),
            c.escape_unicode()
        ));
    }
    match literal.chars().find(|c| !c.is_ascii_graphic()) {
        Some(' ') => Err(format!("`{path}` holds a space, which would end the request line; write it as `%20`")),
        Some(c) => Err(format!("`{path}` holds `{c}`, which a request line cannot carry; write it percent-encoded")),
        None => Ok(()),
    }
}

/// A refused value quoted in its message: cut short, and every control character written out, line breaks
/// too (the message is one line).
fn shown(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(60)
        .map(|c| if c.is_control() { c.escape_unicode().to_string() } else { c.to_string() })
        .collect();
    if text.chars().nth(60).is_some() {
        out.push('…');
    }
    out
}

/// A listen address with its port: `127.0.0.1:8080`, `[::]:8080`.
pub(crate) fn parse_listen(text: &str) -> Result<std::net::SocketAddr, String> {
    text.parse().map_err(|_| format!("`{text}` is not an address with a port, e.g. `127.0.0.1:8080` or `[::]:8080`"))
}

/// Accepts `http://host…` and `https://host…` URLs whose port, if given, is one a socket can use.
pub(crate) fn http_url(text: &str) -> Result<String, String> {
    let rest = text.strip_prefix("http://").or_else(|| text.strip_prefix("https://"));
    match rest {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') => {
            url_port(rest).map_err(|e| format!("`{}` {e}", crate::secret::redact_url(text)))?;
            // What the load engine's client will parse (`HttpClient::new`), checked here once for every URL.
            match text.parse::<http::Uri>() {
                Ok(uri) if uri.host().is_some_and(|h| !h.is_empty()) => Ok(text.trim_end_matches('/').to_owned()),
                _ => Err(format!("`{}` is not a valid URL", crate::secret::redact_url(text))),
            }
        }
        _ => Err(format!("`{}` is not an http:// or https:// URL", crate::secret::redact_url(text))),
    }
}

/// The explicit port of a URL's `host[:port]…` part (after the scheme), if it has one. A port past 65535
/// would otherwise be dropped by the URI parser, and the request would silently go to port 80.
pub(crate) fn url_port(after_scheme: &str) -> Result<Option<u16>, String> {
    let authority = after_scheme.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    // An IPv6 host is bracketed, and its colons are not a port's.
    let after_host = match host_port.strip_prefix('[') {
        Some(bracketed) => bracketed.split_once(']').map_or("", |(_, after)| after),
        None => host_port,
    };
    let Some((_, port)) = after_host.rsplit_once(':') else { return Ok(None) };
    match port.parse::<u16>() {
        Ok(0) | Err(_) if !port.is_empty() => {
            Err(format!("has port `{}`: a port is a number from 1 to 65535", port.chars().take(12).collect::<String>()))
        }
        Ok(port) => Ok(Some(port)),
        Err(_) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::plain_types;

    #[test]
    fn serdes_type_names_read_as_a_toml_writer_says_them() {
        let quoted = plain_types("invalid type: string \"100\", expected f64");
        assert_eq!(quoted, "invalid type: string \"100\", expected a number: write it without quotes");
        let negative = plain_types("invalid value: integer `-1`, expected u32");
        assert_eq!(negative, "invalid value: integer `-1`, expected a whole number");
        let fraction = plain_types("invalid type: string \"1.5\", expected i64");
        assert_eq!(fraction, "invalid type: string \"1.5\", expected a whole number", "no hint to a second error");
        assert_eq!(
            plain_types("invalid type: string \"nan\", expected f64"),
            "invalid type: string \"nan\", expected a number"
        );
        assert_eq!(plain_types("missing field `name`"), "missing field `name`");
        let string = "invalid type: integer `1`, expected a string";
        assert_eq!(plain_types(string), string);
    }
}
