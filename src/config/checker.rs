//! The toolbox every check of a TOML file uses — `degrade.toml` here, scenario files in `scenario` — so both
//! report problems the same way: deserialize with the field path ([`parse_raw`]), check each value where it
//! stands and keep going ([`Checker`]), and the value parsers two files share (URLs, ports, listen addresses).

use std::path::{Path, PathBuf};

use toml::Spanned;

use super::{ConfigError, ConfigWarning, Location};

/// Deserializes the file, turning serde's first complaint (unknown key, wrong type, bad TOML) into an error
/// with line, column and the field path.
pub(crate) fn parse_raw<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T, ConfigError> {
    let syntax_error = |e: &toml::de::Error| {
        let offset = e.span().map_or(0, |span| span.start);
        (Location::at_offset(path, text, offset), e.message().trim().to_owned())
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
