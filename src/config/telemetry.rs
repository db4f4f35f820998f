//! `[[scenario.telemetry]]`: where the server's side of a night is read (Prometheus exporters degrade scrapes
//! itself during the measured stages), and which series each keeps.
//!
//! Why in `degrade.toml` and not in the scenario file: an exporter's address, like `[scenario.build]`'s
//! `health_url` and `version_url`, belongs to the deployment the scenario is run against (staging's database
//! host), not to the workload, and its secrets come from the environment as the webhooks' do; the scenario
//! file is the workload, hashed into its series, and must not start a new series when an exporter moves.

use std::time::Duration;

use toml::Spanned;

use super::checker::{Checker, http_url};
use super::from_raw::env_var_name;
use super::raw_config::{RawLimit, RawSeries, RawTelemetry};
use super::{ConfigWarning, WarningKind, exporters};
use crate::analysis::TelemetryLimit;
use crate::exposition::Selector;
use crate::model::{SHARE_UNIT, SeriesKind, Worse};
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
    /// The exposition endpoint (`http://host:9100/metrics`), scraped with GET. Never carries a password.
    pub url: String,
    /// The known exporter whose default series it keeps, if one is named.
    pub exporter: Option<exporters::Exporter>,
    /// How often it is scraped during the measured stages.
    pub every: Duration,
    /// How long one scrape may take, its whole answer read; at most `every`.
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

/// One kept series: what to read from a scrape and how to show it.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesSpec {
    /// Unique within its source: `CPU busy`.
    pub name: String,
    /// The samples summed into the series.
    pub metric: Selector,
    /// Samples summed and subtracted (memory used: total minus available).
    pub minus: Option<Selector>,
    /// Samples summed into the divisor: the series is then a share of them (CPU busy over all CPU time).
    pub divide_by: Option<Selector>,
    /// Gauge or counter (counters become rates).
    pub kind: SeriesKind,
    /// The unit of what `metric` measures: `bytes`, `connections`, `transactions`, `CPU s`.
    pub unit: String,
    /// Which direction is bad.
    pub worse: Worse,
}

impl SeriesSpec {
    /// The unit of the series' values: a share, the unit itself for a gauge, or per second for a counter.
    #[must_use]
    pub fn value_unit(&self) -> String {
        match (self.divide_by.is_some(), self.kind) {
            (true, _) => SHARE_UNIT.to_owned(),
            (false, SeriesKind::Gauge) => self.unit.clone(),
            (false, SeriesKind::Counter) => format!("{}/s", self.unit),
        }
    }

    /// For a counter, the unit its growth per 1,000 requests is told in.
    #[must_use]
    pub fn count_unit(&self) -> Option<String> {
        (self.kind == SeriesKind::Counter).then(|| self.unit.clone())
    }

    /// How the series is computed, in one line: `rate(sum(a)) / rate(sum(b))`, for `validate` and `probe`.
    #[must_use]
    pub fn formula(&self) -> String {
        let sum = |s: &Selector| format!("sum({s})");
        let mut numerator = sum(&self.metric);
        if let Some(minus) = &self.minus {
            numerator = format!("{numerator} - {}", sum(minus));
        }
        let of = |text: String| match self.kind {
            SeriesKind::Gauge => text,
            SeriesKind::Counter => format!("rate({text})"),
        };
        match &self.divide_by {
            Some(divisor) => format!("{} / {}", of(numerator), of(sum(divisor))),
            None => of(numerator),
        }
    }
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
    let kind = checker.check(&kind, &field("kind"), |k| match k.as_str() {
        "scrape" => Ok(()),
        "prometheus" => Err("`prometheus` (a query to a Prometheus server) is not supported yet; use `scrape`, \
                             and give the exporter's own /metrics URL"
            .to_owned()),
        other => Err(format!("`{}` is not a telemetry kind; use `scrape`", crate::outside_text::clipped(other, 40))),
    });
    let url = checker.check(&url, &field("url"), |u| scrape_url(u));
    let exporter = match &exporter {
        Some(e) => checker.check(e, &field("exporter"), |e| e.parse::<exporters::Exporter>()).map(Some),
        None => Some(None),
    };
    let every = match &every {
        Some(e) => checker.check(e, &field("every"), |e| interval(e)),
        None => Some(DEFAULT_EVERY),
    };
    let timeout = match (&timeout, every) {
        (Some(t), every) => checker.check(t, &field("timeout"), |t| scrape_timeout(t, every)),
        (None, every) => Some(every.unwrap_or(DEFAULT_EVERY).min(DEFAULT_TIMEOUT)),
    };
    let auth = resolve_auth(checker, prefix, bearer_token_env, basic_auth_user, basic_auth_password_env, env);
    let listed = resolve_series(checker, prefix, series);
    let (exporter, listed) = (exporter?, listed?);
    let series = kept_series(exporter, listed);
    if series.is_empty() {
        let message = "keeps no series: name a known `exporter` (node_exporter, postgres_exporter) or list \
                       [[scenario.telemetry.series]]";
        checker.errors.push(super::ConfigError::new(anchor, field("series"), message));
        return None;
    }
    let name = name?;
    let limits = resolve_limits(checker, prefix, &name, &series, limits);
    kind?;
    Some(TelemetrySource {
        name,
        url: url?,
        exporter,
        every: every?,
        timeout: timeout?,
        auth: auth?,
        series,
        limits: limits?,
    })
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

/// The listed `[[scenario.telemetry.series]]`, each checked; `None` when any is wrong.
fn resolve_series(checker: &mut Checker<'_>, prefix: &str, raw: Vec<RawSeries>) -> Option<Vec<SeriesSpec>> {
    let mut series: Vec<SeriesSpec> = Vec::new();
    let mut valid = true;
    for (index, entry) in raw.into_iter().enumerate() {
        let RawSeries { name, metric, minus, divide_by, kind, unit, worse } = entry;
        let field = |f: &str| format!("{prefix}.series[{index}].{f}");
        let checked_name = checker.check(&name, &field("name"), |n| series_name(n));
        if series.iter().any(|s| &s.name == name.get_ref()) {
            checker.error(
                &name,
                &field("name"),
                format!("another series of this source is named `{}`", name.get_ref()),
            );
            valid = false;
        }
        let selector = |checker: &mut Checker<'_>, value: &Spanned<String>, f: &str| {
            checker.check(value, &field(f), |text| Selector::parse(text))
        };
        let metric = selector(checker, &metric, "metric");
        // `Err` when given and wrong (the error is recorded), so each optional selector is checked too.
        let minus = minus.map(|m| selector(checker, &m, "minus").ok_or(())).transpose();
        let divide_by = divide_by.map(|d| selector(checker, &d, "divide_by").ok_or(())).transpose();
        let kind = checker.check(&kind, &field("kind"), |k| k.parse::<SeriesKind>());
        let unit = checker.check(&unit, &field("unit"), |u| series_unit(u));
        let worse = match &worse {
            Some(w) => checker.check(w, &field("worse"), |w| w.parse::<Worse>()),
            None => Some(Worse::Higher),
        };
        let (Some(name), Some(metric), Ok(minus), Ok(divide_by), Some(kind), Some(unit), Some(worse)) =
            (checked_name, metric, minus, divide_by, kind, unit, worse)
        else {
            valid = false;
            continue;
        };
        series.push(SeriesSpec { name, metric, minus, divide_by, kind, unit, worse });
    }
    valid.then_some(series)
}

/// A source's name: shown on the run page and stored with the run.
fn source_name(name: &str) -> Result<String, String> {
    short_text(name, "a source needs a name, e.g. `api-host`", 60)
}

/// A series' name: a label on the run page.
fn series_name(name: &str) -> Result<String, String> {
    short_text(name, "a series needs a name, e.g. `CPU busy`", 60)
}

/// A unit: `bytes`, `CPU s`.
fn series_unit(unit: &str) -> Result<String, String> {
    short_text(unit, "a series needs a unit, e.g. `bytes`, `connections`, `transactions`", 30)
}

/// Printable text on one line, not blank (`empty` says what is missing) and at most `longest` characters:
/// it labels a chart and a table cell.
fn short_text(text: &str, empty: &str, longest: usize) -> Result<String, String> {
    super::checker::plain_name(text)?;
    match text.trim() {
        "" => Err(empty.to_owned()),
        t if t.chars().count() > longest => Err(format!("is longer than {longest} characters")),
        t => Ok(t.to_owned()),
    }
}

/// A basic-auth user name: no `:`, which would end it early in the header.
fn basic_user(user: &str) -> Result<String, String> {
    super::checker::header_text(user)?;
    if user.contains(':') { Err("a basic-auth user name cannot hold `:`".to_owned()) } else { Ok(user.to_owned()) }
}

/// The exposition URL: http(s), and never with a password in it (that goes in basic_auth_password_env).
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
