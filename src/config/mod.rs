//! The service configuration, `degrade.toml`: what to test, when, where results go and who is told.
//!
//! Values come from defaults, then the file, then `DEGRADE_*` environment variables. Secrets (the API token,
//! webhook URLs, a database password) only ever come from the environment: the file names the variable, never
//! the value. Loading is parse-then-validate: `raw_config` mirrors the file, `from_raw` turns it into [`Config`],
//! whose fields are already checked, so the rest of degrade never re-checks a string.

pub mod durations;
mod env;
mod error;
mod capacity;
mod checker;
mod raw_config;
mod scenario_entries;
mod from_raw;
pub mod schedule;
pub mod exporters;
mod telemetry;
mod telemetry_series;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub(crate) use checker::{Checker, header_text, http_url, parse_raw, path_text, plain_name, url_port};
pub use error::{ConfigError, ConfigErrors, Location};
pub(crate) use scenario_entries::scenario_name;
pub use schedule::{CronForm, RunBy, Schedule};
pub use telemetry::{DEFAULT_EVERY, ScrapeAuth, TelemetrySource};
pub use telemetry_series::{Reads, SeriesSpec, SourceKind};

use crate::analysis::Gates;
use crate::model::BaselineSpec;
use crate::secret::Secret;
use crate::store::DatabaseUrl;

/// The file `degrade` reads when `--config` is not given.
pub const DEFAULT_CONFIG_FILE: &str = "degrade.toml";

/// The commented `degrade.toml` that `degrade init` writes. It is also parsed by the tests, so it always
/// validates.
pub const EXAMPLE_CONFIG: &str = include_str!("degrade.example.toml");

/// A validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it was read from.
    pub source: PathBuf,
    /// The dashboard and API server.
    pub server: ServerConfig,
    /// Where runs are stored.
    pub database: DatabaseUrl,
    /// The scenarios to run, in file order; names are unique.
    pub scenarios: Vec<ScenarioConfig>,
    /// The webhooks to alert; names are unique.
    pub notifiers: Vec<NotifierConfig>,
    /// Problems that do not stop degrade from working but that the user should hear about (an unset
    /// secret variable, for example, matters only to the command that needs it).
    pub warnings: Vec<ConfigWarning>,
}

/// Something valid in the config that the user should hear about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    /// What it is about, so a command can leave out what does not concern it.
    pub kind: WarningKind,
    /// What to tell the user.
    pub message: String,
}

/// What a [`ConfigWarning`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningKind {
    /// A webhook whose URL variable is unset: it matters only to commands that deliver alerts.
    UnsetWebhook,
    /// A setting that has no effect as written.
    Setting,
}

impl ConfigWarning {
    pub(crate) fn new(kind: WarningKind, message: String) -> Self {
        Self { kind, message }
    }
}

impl std::fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl PartialEq<&str> for ConfigWarning {
    fn eq(&self, other: &&str) -> bool {
        self.message == *other
    }
}

/// `[server]`.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address the dashboard listens on; default `127.0.0.1:8080`.
    pub listen: SocketAddr,
    /// The URL people reach the dashboard at, used for links in alerts.
    pub public_url: Option<String>,
    /// Bearer token for `POST` API routes, read from the environment variable `api_token_env` names.
    pub api_token: Option<Secret>,
    /// Whether the HTML pages require the token too.
    pub pages_require_token: bool,
}

/// One `[[scenario]]`: a workload, its target, and when and how it is judged.
#[derive(Debug, Clone)]
pub struct ScenarioConfig {
    /// Unique name; the key of its runs in the database.
    pub name: String,
    /// The scenario file, resolved relative to the config file.
    pub file: PathBuf,
    /// Base URL of the service under test, overriding the scenario file's `[target]`.
    pub target: Option<String>,
    /// When the nightly run happens; `None` means only on demand.
    pub schedule: Option<Schedule>,
    /// Who runs the scheduled nights: `serve`, or something else that `serve` only watches for.
    pub run_by: RunBy,
    /// Run at start-up when the last scheduled run was missed because the service was down.
    pub catch_up: bool,
    /// How long after a scheduled run was due, with no run started since, a "missing run" alert is raised;
    /// default 1 h (for a nightly schedule: 25 h after the last run).
    pub missing_run_grace: Duration,
    /// The runs a new run is compared with.
    pub baseline: BaselineSpec,
    /// How to learn (and optionally deploy and wait for) the build under test.
    pub build: BuildConfig,
    /// When a run fails the check.
    pub gates: Gates,
    /// Where the server's side of the night is read while it runs: exporters scraped during the measured
    /// stages (`[[scenario.telemetry]]`).
    pub telemetry: Vec<TelemetrySource>,
    /// `[scenario.capacity]`: a search for the highest rate held inside the zone, after the night's stages.
    pub capacity: Option<crate::analysis::capacity::CapacitySearch>,
}

/// `[scenario.build]`.
#[derive(Debug, Clone, Default)]
pub struct BuildConfig {
    /// How to learn which build is being tested; `None` records runs without a build id.
    pub version: Option<VersionSource>,
    /// A command that rolls the latest build out before the run.
    pub deploy: Option<DeployCommand>,
    /// A URL polled until it answers 2xx before the run starts.
    pub health: Option<HealthCheck>,
}

/// Where the build id comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionSource {
    /// `GET url`, then the JSON pointer (or the whole trimmed body when there is none).
    Url {
        /// The version endpoint.
        url: String,
        /// A JSON pointer such as `/build/id`.
        pointer: Option<String>,
    },
    /// A shell command whose trimmed standard output is the build id.
    Command(String),
}

/// `deploy_command` with its time limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeployCommand {
    /// Shell command line.
    pub command: String,
    /// Killed and the run failed after this long; default 10 minutes.
    pub timeout: Duration,
}

/// `health_url` with its time limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthCheck {
    /// Polled until it answers 2xx.
    pub url: String,
    /// The run fails when the target is not healthy after this long; default 5 minutes.
    pub timeout: Duration,
}

/// One `[[notify]]` webhook.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone)]
pub struct NotifierConfig {
    /// Unique name, shown in logs instead of the (secret) URL.
    pub name: String,
    pub kind: NotifyKind,
    /// The environment variable holding the webhook URL.
    pub url_env: String,
    /// The webhook URL, when that variable is set.
    pub url: Option<Secret>,
    /// Which events are sent.
    pub events: Vec<NotifyEvent>,
    /// Which scenarios' events are sent; empty means all.
    pub scenarios: Vec<String>,
}

/// Webhook message formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyKind {
    /// Slack incoming-webhook JSON (`text` plus `blocks`); also accepted by Mattermost and others.
    Slack,
    /// degrade's own documented JSON.
    Json,
}

impl NotifyKind {
    /// The name as `kind` is written in `degrade.toml`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Slack => "slack",
            Self::Json => "json",
        }
    }
}

/// Events a webhook can receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyEvent {
    /// A regression episode opened.
    Regression,
    /// A regression episode resolved: a run passed again.
    Recovery,
    /// A scheduled run did not happen.
    MissingRun,
    /// A run could not be done (deploy failed, target unhealthy).
    RunFailed,
    /// The gate has not judged the scenario for nights in a row: each night's machine was held back.
    Unjudged,
}

impl Config {
    /// Reads and validates the config at `path`, then applies `DEGRADE_*` overrides from the process
    /// environment.
    pub fn load(path: &Path) -> Result<Self, ConfigErrors> {
        Self::load_with_env(path, &|name| std::env::var(name).ok())
    }

    /// As [`Config::load`], with the environment given as a lookup function (tests pass a map).
    pub fn load_with_env(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigErrors> {
        let bytes = std::fs::read(path).map_err(|e| {
            let message = if e.kind() == std::io::ErrorKind::NotFound {
                format!("no such file; run `degrade init` to write a commented one, or pass --config PATH ({e})")
            } else {
                format!("cannot read: {e}")
            };
            ConfigError::new(Location::WholeFile(path.to_owned()), "", message)
        })?;
        let text = String::from_utf8(bytes).map_err(|e| ConfigError::not_utf8(path, &e))?;
        Self::parse_with_env(path, &text, env)
    }

    /// Validates `text` as if read from `path` (relative paths inside resolve against its folder).
    pub fn parse_with_env(path: &Path, text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigErrors> {
        let raw = checker::parse_raw(path, text)?;
        from_raw::resolve(path, text, raw, env)
    }

    /// The scenario called `name`.
    #[must_use]
    pub fn scenario(&self, name: &str) -> Option<&ScenarioConfig> {
        self.scenarios.iter().find(|s| s.name == name)
    }
}
