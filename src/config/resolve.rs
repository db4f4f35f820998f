//! Turns the file as written ([`super::raw`]) into a validated [`Config`].
//!
//! Every check records a [`ConfigError`] pointing at the value's line and column and keeps going, so one
//! `degrade validate` lists every problem. Environment overrides are applied in [`super::env`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::Spanned;

use super::raw::{RawConfig, RawNotify, RawServer};
use super::scenario::resolve_scenarios;
use super::{
    Config, ConfigError, ConfigErrors, Location, NotifierConfig, NotifyEvent, ScenarioConfig, ServerConfig, env,
};
use crate::store::DatabaseUrl;

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
    pub(crate) warnings: Vec<super::ConfigWarning>,
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

pub(super) fn resolve(
    path: &Path,
    text: &str,
    raw: RawConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigErrors> {
    let mut checker = Checker::new(path, text);
    let RawConfig { server, database, scenarios, notifiers } = raw;
    let folder = checker.folder();
    let server = resolve_server(&mut checker, server, env);
    let database = match &database.url {
        Some(url) if crate::secret::url_has_password(url.get_ref()) => {
            checker.error(
                url,
                "database.url",
                "contains a password; secrets only come from the environment: remove it here and set \
                 DEGRADE_DATABASE_URL",
            );
            None
        }
        Some(url) => checker.check(url, "database.url", |url| DatabaseUrl::parse(url, &folder)),
        None => Some(DatabaseUrl::default_in(&folder)),
    };
    let database = env::database_override(&mut checker, env).or(database);
    let scenarios = resolve_scenarios(&mut checker, scenarios);
    let notifiers = resolve_notifiers(&mut checker, notifiers, &scenarios, env);
    match (checker.errors.is_empty(), server, database) {
        (true, Some(server), Some(database)) => {
            Ok(Config { source: path.to_owned(), server, database, scenarios, notifiers, warnings: checker.warnings })
        }
        _ => Err(ConfigErrors(checker.errors)),
    }
}

fn resolve_server(
    checker: &mut Checker<'_>,
    raw: RawServer,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<ServerConfig> {
    let RawServer { listen, public_url, api_token_env, pages_require_token } = raw;
    let listen = match &listen {
        Some(listen) => checker.check(listen, "server.listen", |s| parse_listen(s)),
        None => Some(([127, 0, 0, 1], 8080).into()),
    };
    let listen = env::listen_override(checker, env).or(listen);
    let public_url = public_url.and_then(|url| checker.check(&url, "server.public_url", |u| http_url(u)));
    let public_url = env::public_url_override(checker, env).or(public_url);
    let token_var = match &api_token_env {
        Some(var) => checker.check(var, "server.api_token_env", |v| env_var_name(v)),
        None => Some("DEGRADE_API_TOKEN".to_owned()),
    };
    let api_token = token_var.as_deref().and_then(|var| env::secret(env, var));
    let pages_require_token = pages_require_token.unwrap_or(false);
    if pages_require_token && api_token.is_none() {
        let message = format!(
            "server.pages_require_token is set but {} is not: the dashboard would be unreachable",
            token_var.as_deref().unwrap_or("the token variable")
        );
        checker.warnings.push(super::ConfigWarning::new(super::WarningKind::Setting, message));
    }
    Some(ServerConfig { listen: listen?, public_url, api_token, pages_require_token })
}

pub(super) fn parse_listen(text: &str) -> Result<std::net::SocketAddr, String> {
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

fn env_var_name(text: &str) -> Result<String, String> {
    let valid = !text.is_empty()
        && !text.starts_with(|c: char| c.is_ascii_digit())
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        Ok(text.to_owned())
    } else {
        // The value is not echoed: a user who pasted the secret itself here must not see it in CI logs.
        Err("is not an environment variable name; give the NAME of the variable that holds the secret \
             (e.g. SLACK_WEBHOOK_URL), never the secret itself"
            .to_owned())
    }
}

fn resolve_notifiers(
    checker: &mut Checker<'_>,
    raw: Vec<RawNotify>,
    scenarios: &[ScenarioConfig],
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<NotifierConfig> {
    let mut seen = BTreeMap::new();
    let mut notifiers = Vec::new();
    for (index, notify) in raw.into_iter().enumerate() {
        let RawNotify { name, kind, url_env, events, scenarios: only } = notify;
        let field = |f: &str| format!("notify[{index}].{f}");
        if let Some(first) = seen.insert(name.get_ref().clone(), checker.location(&name)) {
            checker.error(
                &name,
                &field("name"),
                format!("duplicate notifier name `{}`; already used at {first}", name.get_ref()),
            );
        }
        let Some(var) = checker.check(&url_env, &field("url_env"), |v| env_var_name(v)) else { continue };
        let url = env::webhook_url(checker, env, &var, &field("url_env"));
        let mut names = Vec::new();
        for scenario in only.unwrap_or_default() {
            if scenarios.iter().any(|s| &s.name == scenario.get_ref()) {
                names.push(scenario.into_inner());
            } else {
                checker.error(
                    &scenario,
                    &field("scenarios"),
                    format!("no [[scenario]] is named `{}`", scenario.get_ref()),
                );
            }
        }
        let events = events.unwrap_or_else(|| {
            vec![NotifyEvent::Regression, NotifyEvent::Recovery, NotifyEvent::MissingRun, NotifyEvent::RunFailed]
        });
        notifiers.push(NotifierConfig { name: name.into_inner(), kind, url_env: var, url, events, scenarios: names });
    }
    notifiers
}
