//! `degrade.toml` exactly as the user wrote it.
//!
//! These types only mirror the file: serde rejects unknown keys and wrong types here, and values whose
//! meaning must be checked later (cron expressions, timezones, paths, URLs) keep their position in the file
//! as [`Spanned`] so that `validate` can point at them. Nothing outside `config` sees these types.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    #[serde(default)]
    pub server: RawServer,
    #[serde(default)]
    pub database: RawDatabase,
    #[serde(default, rename = "scenario")]
    pub scenarios: Vec<RawScenario>,
    #[serde(default, rename = "notify")]
    pub notifiers: Vec<RawNotify>,
}

/// `[server]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawServer {
    pub listen: Option<Spanned<String>>,
    pub public_url: Option<Spanned<String>>,
    pub api_token_env: Option<Spanned<String>>,
    pub pages_require_token: Option<bool>,
}

/// `[database]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDatabase {
    pub url: Option<Spanned<String>>,
}

/// One `[[scenario]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub name: Spanned<String>,
    pub file: Spanned<String>,
    pub target: Option<Spanned<String>>,
    pub schedule: Option<Spanned<String>>,
    pub timezone: Option<Spanned<String>>,
    pub run_by: Option<Spanned<String>>,
    #[serde(default)]
    pub catch_up: Option<Spanned<bool>>,
    pub missing_run_grace: Option<Spanned<String>>,
    pub baseline: Option<Spanned<String>>,
    #[serde(default)]
    pub build: RawBuild,
    #[serde(default)]
    pub gates: RawGates,
    #[serde(default)]
    pub telemetry: Vec<RawTelemetry>,
    pub capacity: Option<Spanned<RawCapacity>>,
}

/// `[scenario.capacity]`: a capacity search after the night's stages.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCapacity {
    pub start_rate: Option<Spanned<f64>>,
    pub step_factor: Option<Spanned<f64>>,
    pub step_increment: Option<Spanned<f64>>,
    pub hold: Option<Spanned<String>>,
    pub max_holds: Option<Spanned<i64>>,
    pub max_rate: Option<Spanned<f64>>,
    pub max_time: Option<Spanned<String>>,
    pub refine_steps: Option<Spanned<i64>>,
    pub zone_name: Option<Spanned<String>>,
}

/// One `[[scenario.telemetry]]`: a source of the server's side of the night.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTelemetry {
    pub name: Spanned<String>,
    pub kind: Spanned<String>,
    pub url: Spanned<String>,
    pub exporter: Option<Spanned<String>>,
    pub every: Option<Spanned<String>>,
    pub timeout: Option<Spanned<String>>,
    pub bearer_token_env: Option<Spanned<String>>,
    pub basic_auth_user: Option<Spanned<String>>,
    pub basic_auth_password_env: Option<Spanned<String>>,
    #[serde(default)]
    pub series: Vec<RawSeries>,
    /// Absolute limits, keyed by the name of a series the source keeps.
    #[serde(default)]
    pub limits: BTreeMap<Spanned<String>, RawLimit>,
}

/// One entry of `[scenario.telemetry.limits]`: the bounds of a series' mean over the measured stages.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimit {
    pub max: Option<Spanned<f64>>,
    pub min: Option<Spanned<f64>>,
}

/// One `[[scenario.telemetry.series]]`: a series a source keeps.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSeries {
    pub name: Spanned<String>,
    pub metric: Option<Spanned<String>>,
    pub query: Option<Spanned<String>>,
    pub minus: Option<Spanned<String>>,
    pub divide_by: Option<Spanned<String>>,
    pub kind: Spanned<String>,
    pub unit: Spanned<String>,
    pub worse: Option<Spanned<String>>,
}

/// `[scenario.build]`: how to learn, deploy and wait for the latest build.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBuild {
    pub version_url: Option<Spanned<String>>,
    pub version_pointer: Option<Spanned<String>>,
    pub version_command: Option<Spanned<String>>,
    pub deploy_command: Option<Spanned<String>>,
    pub deploy_timeout: Option<Spanned<String>>,
    pub health_url: Option<Spanned<String>>,
    pub health_timeout: Option<Spanned<String>>,
}

/// `[scenario.gates]`: when a run fails the check.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGates {
    pub min_runs: Option<Spanned<i64>>,
    pub min_effect_pct: Option<Spanned<f64>>,
    #[serde(default)]
    pub metric_min_effect_pct: BTreeMap<Spanned<String>, Spanned<f64>>,
    pub max_p75_ms: Option<Spanned<f64>>,
    pub max_p95_ms: Option<Spanned<f64>>,
    pub max_p99_ms: Option<Spanned<f64>>,
    pub max_error_rate_pct: Option<Spanned<f64>>,
    pub confirm: Option<bool>,
    pub busy_machine_inconclusive: Option<bool>,
}

/// One `[[notify]]` webhook.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNotify {
    pub name: Spanned<String>,
    pub kind: super::NotifyKind,
    pub url_env: Spanned<String>,
    pub events: Option<Vec<super::NotifyEvent>>,
    pub scenarios: Option<Vec<Spanned<String>>>,
}
