//! What the store keeps: runs, their per-endpoint results and timelines, verdicts and their findings.
//!
//! These are the types the rest of degrade reads and writes; the rows behind them are private to `store`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use crate::metrics::Interval;

/// A run's database id.
pub type RunId = i64;

/// The endpoint name under which a run's whole-run figures are stored.
pub const OVERALL_ENDPOINT: &str = "(all)";

/// Where a run is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Load is being generated now.
    Running,
    /// Measured and stored, not judged yet (or judged inconclusive).
    Finished,
    /// Judged: no regression.
    Passed,
    /// Judged: a regression or a breached gate.
    Regressed,
    /// Judged regressed, but a rerun of the same build at once did not reproduce it: a noisy night, never
    /// alerted and never part of a baseline.
    Unconfirmed,
    /// Could not be done: deploy failed, target unhealthy or down.
    Failed,
    /// Measured, but the generator could not keep up, so the numbers say nothing about the build.
    Invalid,
    /// Stopped before it finished (shutdown, or a crash noticed at the next start).
    Aborted,
}

impl RunStatus {
    /// Every status, in life order.
    pub const ALL: [Self; 8] = [
        Self::Running,
        Self::Finished,
        Self::Passed,
        Self::Regressed,
        Self::Unconfirmed,
        Self::Failed,
        Self::Invalid,
        Self::Aborted,
    ];

    /// The stored and displayed name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Finished => "finished",
            Self::Passed => "passed",
            Self::Regressed => "regressed",
            Self::Unconfirmed => "unconfirmed",
            Self::Failed => "failed",
            Self::Invalid => "invalid",
            Self::Aborted => "aborted",
        }
    }

    /// Whether the run measured the build validly, so it may serve in a baseline.
    #[must_use]
    pub fn is_valid_measurement(self) -> bool {
        matches!(self, Self::Finished | Self::Passed | Self::Regressed)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RunStatus {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|status| status.as_str() == s).ok_or_else(|| format!("unknown run status `{s}`"))
    }
}

/// What is known when a run starts.
#[derive(Debug, Clone)]
pub struct NewRun {
    /// The `[[scenario]]` name.
    pub scenario: String,
    /// The build under test, when known.
    pub build_id: Option<String>,
    /// Seed of all randomness in the run.
    pub seed: i64,
    /// Hash of the scenario as run.
    pub scenario_hash: String,
    /// The scenario file's text as run.
    pub scenario_source: Option<String>,
    /// What the deploy command printed before the run (its end, when long).
    pub deploy_output: Option<String>,
    /// When the run started.
    pub started_at: DateTime<Utc>,
}

/// A run as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    /// Database id.
    pub id: RunId,
    /// The `[[scenario]]` name.
    pub scenario: String,
    /// The build under test, when known.
    pub build_id: Option<String>,
    /// Where the run is in its life.
    pub status: RunStatus,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// When it finished, failed or was aborted.
    pub finished_at: Option<DateTime<Utc>>,
    /// Hash of the scenario as run.
    pub scenario_hash: String,
    /// Seed of all randomness in the run.
    pub seed: i64,
    /// Why the numbers cannot be trusted; empty for a valid run.
    pub validity_reasons: Vec<String>,
    /// How well the generator delivered the planned load.
    pub load_summary: Option<LoadSummary>,
    /// Why a failed or aborted run stopped.
    pub failure_reason: Option<String>,
}

/// How well the generator delivered the planned load: the evidence behind a run's validity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadSummary {
    /// `open` or `closed`.
    pub model: String,
    /// Planned arrivals (sessions started) per second over the measured stages; 0 for the closed model,
    /// which plans users, not a rate.
    pub target_rate: f64,
    /// Sessions started per second over the measured stages.
    pub achieved_rate: f64,
    /// Arrivals that were never sent because the in-flight cap was reached.
    pub dropped: i64,
    /// 99th percentile of dispatch − intended start, in microseconds.
    pub schedule_lag_p99_us: i64,
    /// Time the generator spent busy (polling sessions, dispatching arrivals) as a percentage of one core.
    pub generator_cpu_pct: f64,
    /// The generator's whole machine, all processes: the share of its CPU time that was busy during the run,
    /// percent. `None` where the kernel publishes no such figure, and for runs stored before it was measured.
    #[serde(default)]
    pub machine_cpu_busy_pct: Option<f64>,
    /// The share of the same time its hypervisor kept from it (inside the busy share; 0 on bare metal),
    /// percent. `None` as above.
    #[serde(default)]
    pub machine_cpu_stolen_pct: Option<f64>,
    /// The cores that share covers (`None` as above).
    #[serde(default)]
    pub machine_cores: Option<u32>,
    /// The median round trip of a loopback echo between two threads of the generator, µs: how fast the
    /// machine itself was (`engine::echo_probe`). `None` for runs stored before it was measured.
    #[serde(default)]
    pub machine_echo_p50_us: Option<f64>,
    /// The 90th percentile of the same, µs.
    #[serde(default)]
    pub machine_echo_p90_us: Option<f64>,
    /// Length of the measured stages in seconds.
    pub measured_secs: f64,
}

/// One endpoint's figures for a whole run (or the whole run's, under [`OVERALL_ENDPOINT`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EndpointResult {
    /// Step name (route template by default).
    pub endpoint: String,
    /// Requests attempted, failures included.
    pub requests: i64,
    /// Failed requests, all classes.
    pub errors: i64,
    /// Achieved requests per second.
    pub rate: f64,
    /// Response-time percentiles and maximum, microseconds.
    pub p50_us: i64,
    /// 75th percentile, microseconds.
    pub p75_us: i64,
    /// 90th percentile, microseconds.
    pub p90_us: i64,
    /// 95th percentile, microseconds.
    pub p95_us: i64,
    /// 99th percentile, microseconds.
    pub p99_us: i64,
    /// 99.9th percentile, microseconds.
    pub p999_us: i64,
    /// Slowest response, microseconds.
    pub max_us: i64,
    /// Mean response time, microseconds.
    pub mean_us: f64,
    /// Failures per class (`timeout`, `http_5xx`, …).
    pub errors_by_class: BTreeMap<String, i64>,
    /// A few sample messages per class.
    pub error_samples: BTreeMap<String, Vec<String>>,
    /// How sure tonight's p50, p95, p99 and error rate are.
    pub intervals: Intervals,
    /// The response-time HdrHistogram, V2-serialized.
    #[serde(skip)]
    pub histogram: Vec<u8>,
}

/// The 95 % intervals of an endpoint's judged figures (see `metrics::interval`). A percentile whose
/// interval has no upper end rests on too few requests to be judged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Intervals {
    /// The median, µs.
    pub p50_us: Option<Interval>,
    /// The 95th percentile, µs.
    pub p95_us: Option<Interval>,
    /// The 99th percentile, µs.
    pub p99_us: Option<Interval>,
    /// The error rate, percent.
    pub error_pct: Option<Interval>,
}

impl EndpointResult {
    /// Failed requests as a percentage of all requests.
    #[must_use]
    pub fn error_pct(&self) -> f64 {
        if self.requests == 0 { 0.0 } else { self.errors as f64 * 100.0 / self.requests as f64 }
    }
}

/// One second of one endpoint, for the run's timeline.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TimelinePoint {
    /// Step name.
    pub endpoint: String,
    /// Seconds since the run started.
    pub elapsed_s: i64,
    /// Requests completed in this second.
    pub requests: i64,
    /// Of which failed.
    pub errors: i64,
    /// Median response time, microseconds.
    pub p50_us: i64,
    /// 99th percentile response time, microseconds.
    pub p99_us: i64,
    /// Slowest response, microseconds.
    pub max_us: i64,
    /// Failures per class.
    pub errors_by_class: BTreeMap<String, i64>,
}

/// Everything a finished run produced, stored in one transaction by `Store::finish_run`.
#[derive(Debug, Clone)]
pub struct RunResults {
    /// `Finished` or `Invalid` (with reasons).
    pub status: RunStatus,
    /// When the run ended.
    pub finished_at: DateTime<Utc>,
    /// Why the numbers cannot be trusted; empty for a valid run.
    pub validity_reasons: Vec<String>,
    /// How well the generator delivered the planned load.
    pub load_summary: LoadSummary,
    /// Per endpoint, plus [`OVERALL_ENDPOINT`].
    pub endpoints: Vec<EndpointResult>,
    /// Per second per endpoint.
    pub timeline: Vec<TimelinePoint>,
}

/// A run with its per-endpoint results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunDetail {
    /// The run.
    pub run: Run,
    /// Its results, the overall row first, then by endpoint name.
    pub endpoints: Vec<EndpointResult>,
}

/// A figure that can be followed across runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Median response time, ms.
    P50,
    /// 75th percentile, ms.
    P75,
    /// 90th percentile, ms.
    P90,
    /// 95th percentile, ms.
    P95,
    /// 99th percentile, ms.
    P99,
    /// 99.9th percentile, ms.
    P999,
    /// Slowest response, ms.
    Max,
    /// Mean response time, ms.
    Mean,
    /// Failed requests, percent.
    ErrorRate,
    /// Achieved requests per second.
    Throughput,
}

impl Metric {
    /// Every metric.
    pub const ALL: [Self; 10] = [
        Self::P50,
        Self::P75,
        Self::P90,
        Self::P95,
        Self::P99,
        Self::P999,
        Self::Max,
        Self::Mean,
        Self::ErrorRate,
        Self::Throughput,
    ];

    /// The name users type and see.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::P50 => "p50",
            Self::P75 => "p75",
            Self::P90 => "p90",
            Self::P95 => "p95",
            Self::P99 => "p99",
            Self::P999 => "p999",
            Self::Max => "max",
            Self::Mean => "mean",
            Self::ErrorRate => "error_rate",
            Self::Throughput => "throughput",
        }
    }

    /// This metric's value in `result`, in its display unit (ms, percent or requests per second).
    #[must_use]
    pub fn value_of(self, result: &EndpointResult) -> f64 {
        let ms = |us: i64| us as f64 / 1000.0;
        match self {
            Self::P50 => ms(result.p50_us),
            Self::P75 => ms(result.p75_us),
            Self::P90 => ms(result.p90_us),
            Self::P95 => ms(result.p95_us),
            Self::P99 => ms(result.p99_us),
            Self::P999 => ms(result.p999_us),
            Self::Max => ms(result.max_us),
            Self::Mean => result.mean_us / 1000.0,
            Self::ErrorRate => result.error_pct(),
            Self::Throughput => result.rate,
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Metric {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|m| m.as_str() == s).ok_or_else(|| {
            let names: Vec<_> = Self::ALL.iter().map(|m| m.as_str()).collect();
            format!("unknown metric `{s}`; use one of {}", names.join(", "))
        })
    }
}

/// One run's value of one endpoint metric, for trend charts and baselines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrendPoint {
    /// The run.
    pub run_id: RunId,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// The build it tested.
    pub build_id: Option<String>,
    /// Its status (invalid and regressed runs are marked on charts).
    pub status: RunStatus,
    /// The metric's value, in its display unit.
    pub value: f64,
}

/// A judgement to store: the outcome and one finding per endpoint × metric.
#[derive(Debug, Clone)]
pub struct NewVerdict {
    /// The baseline spec as given.
    pub baseline_spec: String,
    /// The runs that formed the baseline.
    pub baseline_run_ids: Vec<RunId>,
    /// `passed`, `regressed` or `inconclusive`.
    pub outcome: String,
    /// One line for humans.
    pub summary: String,
    /// When the judgement was made.
    pub created_at: DateTime<Utc>,
    /// The lines of the verdict.
    pub findings: Vec<Finding>,
}

/// A stored judgement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// Database id.
    pub id: i64,
    /// The judged run.
    pub run_id: RunId,
    /// The baseline spec as given.
    pub baseline_spec: String,
    /// The runs that formed the baseline.
    pub baseline_run_ids: Vec<RunId>,
    /// `passed`, `regressed` or `inconclusive`.
    pub outcome: String,
    /// One line for humans.
    pub summary: String,
    /// When the judgement was made.
    pub created_at: DateTime<Utc>,
    /// The lines of the verdict.
    pub findings: Vec<Finding>,
}

/// One endpoint × metric line of a verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Step name, or [`OVERALL_ENDPOINT`].
    pub endpoint: String,
    /// `p95`, `error_rate`, … or an absolute gate such as `max_p75_ms`.
    pub metric: String,
    /// What the judge made of the figure.
    pub outcome: FindingOutcome,
    /// The baseline's level, when there is one.
    pub baseline_value: Option<f64>,
    /// Tonight's value.
    pub candidate_value: f64,
    /// Change from the baseline, percent.
    pub delta_pct: Option<f64>,
    /// The threshold the candidate was held to.
    pub limit: Option<f64>,
    /// Tonight's 95 % interval of the figure, in its unit, when the figure has one.
    pub interval: Option<Interval>,
    /// The chance of a change at least this large by noise alone, when the figure was tested.
    pub p_value: Option<f64>,
    /// Why, in words.
    pub reason: String,
}

/// What the judge made of one endpoint × metric figure. Stored and serialized as its snake-case name
/// (`gate_breached`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingOutcome {
    /// Worse than the baseline by more than noise and the minimum effect.
    Regression,
    /// Better than the baseline by more than noise and the minimum effect.
    Improvement,
    /// Within the baseline's noise or below the minimum effect.
    NoChange,
    /// Too little history to tell.
    Inconclusive,
    /// Worse, but measured on a held-back machine and no worse than the rest of the run went through: not
    /// blamed on the build (`analysis::contention`).
    Excused,
    /// Worse in a confirmation rerun but not in the night's first run of the same build: seen once, so not
    /// blamed on the build (`pipeline::confirm`).
    Unconfirmed,
    /// The figure rests on too few requests to be judged.
    TooFew,
    /// Over an absolute limit.
    GateBreached,
    /// Within an absolute limit.
    GatePassed,
}

impl FindingOutcome {
    /// Every outcome, in declaration order.
    pub const ALL: [Self; 9] = [
        Self::Regression,
        Self::Improvement,
        Self::NoChange,
        Self::Inconclusive,
        Self::Excused,
        Self::Unconfirmed,
        Self::TooFew,
        Self::GateBreached,
        Self::GatePassed,
    ];

    /// The stored name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Regression => "regression",
            Self::Improvement => "improvement",
            Self::NoChange => "no_change",
            Self::Inconclusive => "inconclusive",
            Self::Excused => "excused",
            Self::Unconfirmed => "unconfirmed",
            Self::TooFew => "too_few",
            Self::GateBreached => "gate_breached",
            Self::GatePassed => "gate_passed",
        }
    }

    /// Whether the finding fails the run: a regression, or an absolute gate breached. The one place this is
    /// decided (the trend queries say the same in SQL: `outcome in ('regression', 'gate_breached')`).
    #[must_use]
    pub const fn is_failure(self) -> bool {
        matches!(self, Self::Regression | Self::GateBreached)
    }
}

impl std::fmt::Display for FindingOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for FindingOutcome {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Self::ALL.into_iter().find(|o| o.as_str() == text).ok_or_else(|| format!("unknown finding outcome `{text}`"))
    }
}
