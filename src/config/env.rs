//! `DEGRADE_*` environment variables: overrides of file values and the secrets the file only names.
//!
//! Overrides win over the file, so one `degrade.toml` can serve a laptop and CI. Errors name the variable,
//! never its value, because the value may be a secret.

use std::net::SocketAddr;
use std::path::Path;

use super::checker::{Checker, http_url, parse_listen};
use super::{ConfigError, Location};
use crate::secret::{Secret, redact_url};
use crate::store::DatabaseUrl;

/// Overrides `[database] url`; may carry a password.
pub const DATABASE_URL: &str = "DEGRADE_DATABASE_URL";
/// Overrides `[server] listen`.
pub const SERVER_LISTEN: &str = "DEGRADE_SERVER_LISTEN";
/// Overrides `[server] public_url`.
pub const SERVER_PUBLIC_URL: &str = "DEGRADE_SERVER_PUBLIC_URL";

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

fn non_empty(env: Env<'_>, var: &str) -> Option<String> {
    env(var).filter(|value| !value.trim().is_empty())
}

fn fail(checker: &mut Checker<'_>, var: &str, field: &str, message: String) {
    checker.errors.push(ConfigError::new(Location::Env(var.to_owned()), field, message));
}

pub(super) fn database_override(checker: &mut Checker<'_>, env: Env<'_>) -> Option<DatabaseUrl> {
    let url = non_empty(env, DATABASE_URL)?;
    // Relative SQLite paths from the environment resolve against the working directory, like any CLI path.
    match DatabaseUrl::parse(&url, Path::new("")) {
        Ok(url) => Some(url),
        Err(message) => {
            fail(checker, DATABASE_URL, "database.url", message.replace(&url, &redact_url(&url)));
            None
        }
    }
}

pub(super) fn listen_override(checker: &mut Checker<'_>, env: Env<'_>) -> Option<SocketAddr> {
    let listen = non_empty(env, SERVER_LISTEN)?;
    parse_listen(&listen).map_err(|message| fail(checker, SERVER_LISTEN, "server.listen", message)).ok()
}

pub(super) fn public_url_override(checker: &mut Checker<'_>, env: Env<'_>) -> Option<String> {
    let url = non_empty(env, SERVER_PUBLIC_URL)?;
    http_url(&url).map_err(|message| fail(checker, SERVER_PUBLIC_URL, "server.public_url", message)).ok()
}

/// Reads the secret in `var`, if it is set.
pub(super) fn secret(env: Env<'_>, var: &str) -> Option<Secret> {
    non_empty(env, var).map(Secret::new)
}

/// Reads a webhook URL from `var` and checks its scheme without ever echoing it: webhook URLs are secrets.
pub(super) fn webhook_url(checker: &mut Checker<'_>, env: Env<'_>, var: &str, field: &str) -> Option<Secret> {
    // Unset is a warning, not an error: only `serve` and `notify test` need the URL.
    let Some(url) = secret(env, var) else {
        // Not "skipped": its alerts are stored and wait in the outbox (up to a day) for a degrade that has the
        // variable, `serve` say, which a night pod without it read as alerts lost (trial).
        let message = format!(
            "{field}: environment variable {var} is not set; this webhook's alerts wait in the outbox (up to a day) \
             for a degrade that has it set, such as `degrade serve`"
        );
        checker.warnings.push(super::ConfigWarning::new(super::WarningKind::UnsetWebhook, message));
        return None;
    };
    if http_url(url.expose()).is_err() {
        let message = "the webhook URL in this variable is not an http:// or https:// URL".to_owned();
        fail(checker, var, field, message);
        return None;
    }
    Some(url)
}
