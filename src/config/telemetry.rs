//! `[[scenario.telemetry]]`: where the server's side of a night is read (Prometheus exporters degrade scrapes
//! itself during the measured stages, or a Prometheus server queried after the run), and which series each
//! keeps (checked in `telemetry_series`).
//!
//! Why in `degrade.toml` and not in the scenario file: an exporter's address, like `[scenario.build]`'s
//! `health_url` and `version_url`, belongs to the deployment the scenario is run against (staging's database
//! host), not to the workload, and its secrets come from the environment as the webhooks' do; the scenario
//! file is the workload, hashed into its series, and must not start a new series when an exporter moves.

use std::time::Duration;

use toml::Spanned;

use super::checker::{Checker, http_url};
use super::from_raw::env_var_name;
use super::raw_config::{RawLimit, RawTelemetry};
use super::telemetry_series::{SeriesSpec, SourceKind, resolve_series, source_name};
use super::{ConfigWarning, WarningKind, exporters};
use crate::analysis::TelemetryLimit;
use crate::model::SHARE_UNIT;
use crate::secret::Secret;

/// How often a source is scraped when `every` is not given: Prometheus' own habit for a detailed board.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(5);

/// The longest a scrape may take when `timeout` is not given (and `every` is longer).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Scrapes at most this often: an exporter reads `/proc` or queries its database on every scrape.
const SHORTEST_EVERY: Duration = Duration::from_secs(1);

/// One telemetry source of a scenario.
#[derive(Debug, Clone)]
pub struct TelemetrySource {
    /// Unique within the scenario: `api-host`; shown on the run page and stored with the run.
    pub name: String,
    /// Scraped by degrade, or queried from a Prometheus server.
    pub kind: SourceKind,
    /// The exposition endpoint (`http://host:9100/metrics`), scraped with GET; or the Prometheus server's
    /// address (`http://prometheus:9090`), under which `/api/v1/…` is asked. Never carries a password.
    pub url: String,
    /// The known exporter whose default series it keeps, if one is named (a scrape only).
    pub exporter: Option<exporters::Exporter>,
    /// How often it is scraped during the measured stages; for a Prometheus server, the query's step.
    pub every: Duration,
    /// How long one scrape (or one query) may take, its whole answer read; at most `every` for a scrape.
    pub timeout: Duration,
    /// Credentials sent with each scrape, from the environment.
    pub auth: Option<ScrapeAuth>,
    /// The series it keeps: the exporter's defaults, then the listed ones (a listed series named like a
    /// default replaces it).
    pub series: Vec<SeriesSpec>,
    /// Absolute limits on its series' means (`limits`), which the scenario's gates hold.
    pub limits: Vec<TelemetryLimit>,
}

/// How a scrape authenticates. The secret is read from the environment once, when the config is loaded.
#[derive(Debug, Clone)]
pub enum ScrapeAuth {
    /// `Authorization: Bearer …`.
    Bearer {
        /// The variable named in the file.
        var: String,
        /// Its value, when set.
        token: Option<Secret>,
    },
    /// HTTP basic authentication.
    Basic {
        /// The user name, written in the file (it is no secret).
        user: String,
        /// The variable holding the password.
        var: String,
        /// Its value, when set.
        password: Option<Secret>,
    },
}

type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Checks a scenario's `[[scenario.telemetry]]` entries; `prefix` is `scenario[N]`.
pub(super) fn resolve_telemetry(
    checker: &mut Checker<'_>,
    prefix: &str,
    raw: Vec<RawTelemetry>,
    env: Env<'_>,
) -> Option<Vec<TelemetrySource>> {
    let mut sources: Vec<TelemetrySource> = Vec::new();
    let mut valid = true;
    for (index, entry) in raw.into_iter().enumerate() {
        let field_prefix = format!("{prefix}.telemetry[{index}]");
        let duplicate = sources.iter().any(|s| &s.name == entry.name.get_ref());
        if duplicate {
            let message = format!("another telemetry source of this scenario is named `{}`", entry.name.get_ref());
            checker.error(&entry.name, &format!("{field_prefix}.name"), message);
        }
        match resolve_source(checker, &field_prefix, entry, env) {
            Some(source) if !duplicate => sources.push(source),
            _ => valid = false,
        }
    }
    valid.then_some(sources)
}

fn resolve_source(checker: &mut Checker<'_>, prefix: &str, raw: RawTelemetry, env: Env<'_>) -> Option<TelemetrySource> {
    let RawTelemetry {
        name,
        kind,
        url,
        exporter,
        every,
        timeout,
        bearer_token_env,
        basic_auth_user,
        basic_auth_password_env,
        series,
        limits,
    } = raw;
    let field = |f: &str| format!("{prefix}.{f}");
    let anchor = checker.location(&name);
    let name = checker.check(&name, &field("name"), |n| source_name(n));
    let kind = checker.check(&kind, &field("kind"), |k| k.parse::<SourceKind>());
    let url = checker.check(&url, &field("url"), |u| scrape_url(u));
    let exporter = match (&exporter, kind) {
        (Some(e), Some(SourceKind::Prometheus)) => {
            let message = "an exporter's defaults are what degrade scrapes itself; a `prometheus` source lists \
                           each series' `query` (the manual's telemetry chapter gives node_exporter's)";
            checker.error(e, &field("exporter"), message);
            None
        }
        (Some(e), _) => checker.check(e, &field("exporter"), |e| e.parse::<exporters::Exporter>()).map(Some),
        (None, _) => Some(None),
    };
    let every = match &every {
        Some(e) => checker.check(e, &field("every"), |e| interval(e)),
        None => Some(DEFAULT_EVERY),
    };
    let timeout = match (&timeout, every, kind) {
        // A query is asked once after the run, not every `every`: its timeout is its own.
        (Some(t), _, Some(SourceKind::Prometheus)) => checker.check(t, &field("timeout"), |t| scrape_timeout(t, None)),
        (Some(t), every, _) => checker.check(t, &field("timeout"), |t| scrape_timeout(t, every)),
        (None, _, Some(SourceKind::Prometheus)) => Some(DEFAULT_TIMEOUT),
        (None, every, _) => Some(every.unwrap_or(DEFAULT_EVERY).min(DEFAULT_TIMEOUT)),
    };
    let auth = resolve_auth(checker, prefix, bearer_token_env, basic_auth_user, basic_auth_password_env, env);
    let listed = resolve_series(checker, prefix, kind, series);
    let (exporter, listed) = (exporter?, listed?);
    let series = kept_series(exporter, listed);
    if series.is_empty() {
        let message = match kind {
            Some(SourceKind::Prometheus) => {
                "keeps no series: list [[scenario.telemetry.series]], each with its \
                                             PromQL `query`"
            }
            _ => {
                "keeps no series: name a known `exporter` (node_exporter, postgres_exporter) or list \
                  [[scenario.telemetry.series]]"
            }
        };
        checker.errors.push(super::ConfigError::new(anchor, field("series"), message));
        return None;
    }
    let name = name?;
    let limits = resolve_limits(checker, prefix, &name, &series, limits);
    let (kind, url, every, timeout, auth) = (kind?, url?, every?, timeout?, auth?);
    Some(TelemetrySource { name, kind, url, exporter, every, timeout, auth, series, limits: limits? })
}

/// The `limits` table: each key a series the source keeps, each bound a finite number (a share's between 0
/// and 1), at least one bound, and `min` under `max`; `None` when any is wrong (the errors are recorded).
fn resolve_limits(
    checker: &mut Checker<'_>,
    prefix: &str,
    source: &str,
    series: &[SeriesSpec],
    raw: std::collections::BTreeMap<Spanned<String>, RawLimit>,
) -> Option<Vec<TelemetryLimit>> {
    let mut limits = Vec::new();
    let mut valid = true;
    for (name, RawLimit { max, min }) in raw {
        let field = format!("{prefix}.limits.{}", name.get_ref());
        let Some(spec) = series.iter().find(|s| &s.name == name.get_ref()) else {
            let kept: Vec<String> = series.iter().map(|s| format!("`{}`", s.name)).collect();
            let message =
                format!("this source keeps no series named `{}`; it keeps {}", name.get_ref(), kept.join(", "));
            checker.error(&name, &field, message);
            valid = false;
            continue;
        };
        let share = spec.value_unit() == SHARE_UNIT;
        let mut bound = |value: Option<Spanned<f64>>, key: &str| match value {
            Some(v) => checker.check(&v, &format!("{field}.{key}"), |v| limit_value(*v, share)).map(Some),
            None => Some(None),
        };
        let (max, min) = (bound(max, "max"), bound(min, "min"));
        let (Some(max), Some(min)) = (max, min) else {
            valid = false;
            continue;
        };
        let problem = match (min, max) {
            (None, None) => Some("give `max`, `min` or both".to_owned()),
            (Some(min), Some(max)) if min >= max => Some(format!("`min` ({min}) must be below `max` ({max})")),
            _ => None,
        };
        if let Some(problem) = problem {
            checker.error(&name, &field, problem);
            valid = false;
            continue;
        }
        limits.push(TelemetryLimit { source: source.to_owned(), series: spec.name.clone(), max, min });
    }
    valid.then_some(limits)
}

/// A bound: finite, and for a share a fraction, so `max = 60` meant as 60 % is caught.
fn limit_value(value: f64, share: bool) -> Result<f64, String> {
    if !value.is_finite() {
        return Err(format!("{value} is not a number"));
    }
    if share && !(0.0..=1.0).contains(&value) {
        return Err(format!("{value} is outside 0..=1: this series is a share, so 60 % is written 0.6"));
    }
    Ok(value)
}

/// The exporter's default series, then the listed ones; a listed series named like a default replaces it.
fn kept_series(exporter: Option<exporters::Exporter>, listed: Vec<SeriesSpec>) -> Vec<SeriesSpec> {
    let mut series = exporter.map(exporters::Exporter::series).unwrap_or_default();
    for spec in listed {
        match series.iter_mut().find(|s| s.name == spec.name) {
            Some(default) => *default = spec,
            None => series.push(spec),
        }
    }
    series
}

/// `bearer_token_env`, or `basic_auth_user` with `basic_auth_password_env`; `Some(None)` for neither, `None`
/// when what is given is wrong (the error is recorded), as the gates' limits are read.
#[allow(clippy::option_option, reason = "set, not set, and wrong are three answers")]
fn resolve_auth(
    checker: &mut Checker<'_>,
    prefix: &str,
    bearer: Option<Spanned<String>>,
    user: Option<Spanned<String>>,
    password: Option<Spanned<String>>,
    env: Env<'_>,
) -> Option<Option<ScrapeAuth>> {
    let field = |f: &str| format!("{prefix}.{f}");
    let secret = |checker: &mut Checker<'_>, var: &Spanned<String>, name: &str| {
        let var = checker.check(var, &field(name), |v| env_var_name(v))?;
        let value = env(&var).filter(|v| !v.trim().is_empty()).map(Secret::new);
        if value.is_none() {
            let message = format!("{}: environment variable {var} is not set; scrapes go without it", field(name));
            checker.warnings.push(ConfigWarning::new(WarningKind::Setting, message));
        }
        Some((var, value))
    };
    match (bearer, user, password) {
        (None, None, None) => Some(None),
        (Some(bearer), None, None) => {
            secret(checker, &bearer, "bearer_token_env").map(|(var, token)| Some(ScrapeAuth::Bearer { var, token }))
        }
        (None, Some(user), Some(password)) => {
            let name = checker.check(&user, &field("basic_auth_user"), |u| basic_user(u));
            let (var, password) = secret(checker, &password, "basic_auth_password_env")?;
            Some(Some(ScrapeAuth::Basic { user: name?, var, password }))
        }
        (Some(bearer), _, _) => {
            checker.error(&bearer, &field("bearer_token_env"), "give a bearer token or basic auth, not both");
            None
        }
        (None, Some(user), None) => {
            checker.error(
                &user,
                &field("basic_auth_user"),
                "needs basic_auth_password_env, the variable holding the password",
            );
            None
        }
        (None, None, Some(password)) => {
            checker.error(&password, &field("basic_auth_password_env"), "needs basic_auth_user");
            None
        }
    }
}

/// A basic-auth user name: no `:`, which would end it early in the header.
fn basic_user(user: &str) -> Result<String, String> {
    super::checker::header_text(user)?;
    if user.contains(':') { Err("a basic-auth user name cannot hold `:`".to_owned()) } else { Ok(user.to_owned()) }
}

/// The exposition (or Prometheus) URL: http(s), and never with a password in it (that goes in
/// basic_auth_password_env).
fn scrape_url(url: &str) -> Result<String, String> {
    if crate::secret::url_has_password(url) {
        return Err("contains a password; secrets only come from the environment: remove it here and set \
                    basic_auth_user and basic_auth_password_env"
            .to_owned());
    }
    http_url(url)
}

fn interval(text: &str) -> Result<Duration, String> {
    let every = super::durations::parse_positive(text, "5s, 15s or 1m")?;
    if every < SHORTEST_EVERY {
        return Err(format!("`{text}` is shorter than 1s, the most often degrade scrapes"));
    }
    Ok(every)
}

fn scrape_timeout(text: &str, every: Option<Duration>) -> Result<Duration, String> {
    let timeout = super::durations::parse_positive(text, "2s or 10s")?;
    match every {
        Some(every) if timeout > every => Err(format!(
            "`{text}` is longer than `every` ({}): a scrape must end before the next one is due",
            humantime::format_duration(every)
        )),
        _ => Ok(timeout),
    }
}
