//! Turns the file as written ([`super::raw_config`]) into a validated [`Config`].
//!
//! Every check records a [`ConfigError`] pointing at the value's line and column and keeps going, so one
//! `degrade validate` lists every problem. Environment overrides are applied in [`super::env`].

use std::collections::BTreeMap;
use std::path::Path;

use super::checker::{Checker, http_url, parse_listen};
use super::raw_config::{RawConfig, RawNotify, RawServer};
use super::scenario_entries::resolve_scenarios;
use super::{Config, ConfigErrors, NotifierConfig, NotifyEvent, ScenarioConfig, ServerConfig, env};
use crate::store::DatabaseUrl;

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
    let scenarios = resolve_scenarios(&mut checker, scenarios, env);
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

pub(super) fn env_var_name(text: &str) -> Result<String, String> {
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
        checker.check(&name, &field("name"), |n| super::checker::plain_name(n));
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
            vec![
                NotifyEvent::Regression,
                NotifyEvent::Recovery,
                NotifyEvent::MissingRun,
                NotifyEvent::RunFailed,
                NotifyEvent::Unjudged,
            ]
        });
        notifiers.push(NotifierConfig { name: name.into_inner(), kind, url_env: var, url, events, scenarios: names });
    }
    notifiers
}
