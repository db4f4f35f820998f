//! Runs: their ids, life cycle, load model and what a finished run hands to the store.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

use super::{BaselineSpec, EndpointResult, TimelinePoint};

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
    /// Judged regressed, and a rerun of the same build is measuring now to confirm it: not alerted yet, never
    /// part of a baseline. One a stopped degrade left so is settled by the next (`pipeline::interrupted`).
    Confirming,
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
    pub const ALL: [Self; 9] = [
        Self::Running,
        Self::Finished,
        Self::Passed,
        Self::Regressed,
        Self::Confirming,
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
            Self::Confirming => "confirming",
            Self::Unconfirmed => "unconfirmed",
            Self::Failed => "failed",
            Self::Invalid => "invalid",
            Self::Aborted => "aborted",
        }
    }

    /// Whether the run measured nothing to judge: it could not be done, or was cut short.
    #[must_use]
    pub fn measured_nothing(self) -> bool {
        matches!(self, Self::Failed | Self::Aborted)
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
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone)]
pub struct NewRun {
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
    /// The run this one reruns to confirm its regression, linked from the start so a rerun a kill cuts short
    /// is still found.
    pub confirms: Option<RunId>,
    /// The baseline a runner's night is to be judged against, stored from the start so that a night whose
    /// degrade was killed before its verdict is judged by the next one (`pipeline::interrupted`); `None` for a
    /// run measured alone (`degrade run`), never judged by design.
    pub judged_against: Option<BaselineSpec>,
    /// A smoke run's options (`--duration 20s --rate-scale 0.1`); `None` for the scenario as written.
    pub reshape: Option<String>,
}

/// A run as stored.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    pub id: RunId,
    pub scenario: String,
    /// The build under test, when known.
    pub build_id: Option<String>,
    /// Where the run is in its life.
    pub status: RunStatus,
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
    /// How many generator machines measured it: 1, or a night's segments (`--segment K/N`). Its baseline is
    /// nights measured by as many.
    pub segments: u32,
}

impl Run {
    /// Why the run stopped, when its validity reasons do not say it already (an invalid split night's reason
    /// is both): what the run page writes after "Stopped:".
    #[must_use]
    pub fn stopped_reason(&self) -> Option<&str> {
        self.failure_reason.as_deref().filter(|reason| !self.validity_reasons.iter().any(|r| r == reason))
    }
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
    /// The tape the run replayed, if it replayed one. `None` for flows, and for runs stored before tapes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tape: Option<TapeCoverage>,
    /// Each skewed feeder and draw of the scenario: the shape `validate` predicted beside what the run drew.
    /// Empty for scenarios without skewed data, and for runs stored before it was counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skew: Vec<SkewObserved>,
    /// How the run's requests reached the target when its scenario asked for HTTP/2 (`[target] protocol`):
    /// what was negotiated, and the server's stream limit. `None` for HTTP/1.1 by choice, and for runs stored
    /// before HTTP/2, which were all HTTP/1.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<ConnectionReport>,
}

/// What a run's connections to its target negotiated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionReport {
    /// The protocol the requests went over.
    pub negotiated: WireProtocol,
    /// Connections opened during the run (more than `[target] http2_connections` when the server closed
    /// some, with GOAWAY or not).
    pub connections_opened: u64,
    /// The lowest `SETTINGS_MAX_CONCURRENT_STREAMS` the server sent; `None` when it set no limit.
    pub max_concurrent_streams: Option<u64>,
    /// Only the steps that asked for HTTP/2 themselves (gRPC, a step's `protocol`) went over these
    /// connections: the target asked for HTTP/1.1, which its other requests went over.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub steps_only: bool,
}

/// The protocol a run's requests went over, named as TLS's ALPN names it (`h2c` for HTTP/2 on plain TCP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireProtocol {
    /// HTTP/1.1.
    #[serde(rename = "http/1.1")]
    Http1,
    /// HTTP/2 over TLS, agreed by ALPN.
    #[serde(rename = "h2")]
    H2,
    /// HTTP/2 over plain TCP, with prior knowledge.
    #[serde(rename = "h2c")]
    H2c,
}

impl WireProtocol {
    /// The name as stored and shown.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http1 => "http/1.1",
            Self::H2 => "h2",
            Self::H2c => "h2c",
        }
    }

    /// What a run's summary says it went over: HTTP/1.1 when it reported nothing.
    #[must_use]
    pub fn of(summary: &LoadSummary) -> Self {
        summary.connection.as_ref().map_or(Self::Http1, |c| c.negotiated)
    }
}

/// One skewed feeder or draw as a run drew it: its predicted shares beside the observed ones, so a cap, a
/// short night or a mistaken skew shows before anyone reads its latencies as production's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkewObserved {
    /// Where it draws: a feeder's name, or a step's endpoint and field (`GET /boards/{id} path`).
    pub site: String,
    /// The function or order: `zipf`, `zipf_scrambled`, `hotspot`, `weighted`.
    pub draw: String,
    /// How many keys, rows or values it draws from.
    pub keys: u64,
    /// Predicted share of the draws on the hottest key.
    pub predicted_hottest: f64,
    /// Predicted share of the draws on the hottest 1 % of keys (at least one key).
    pub predicted_top_percent: f64,
    /// Draws the run made (warm-up included: every draw warms the target's caches alike).
    pub draws: u64,
    /// Observed share of the draws on the predicted hottest key.
    pub observed_hottest: f64,
    /// Observed share of the draws on the predicted top 1 %.
    pub observed_top_percent: f64,
}

impl SkewObserved {
    /// Whether either observed share lies further from its prediction than chance explains: more than four
    /// binomial standard errors of its draws (a 1-in-15,000 event for a right draw), and more than half a
    /// percentage point, so that millions of draws do not flag a difference no cache would notice.
    #[must_use]
    pub fn departs(&self) -> bool {
        let draws = self.draws as f64;
        let far = |predicted: f64, observed: f64| {
            let standard_error = (predicted * (1.0 - predicted) / draws).sqrt();
            let gap = (observed - predicted).abs();
            gap > 4.0 * standard_error && gap > 0.005
        };
        self.draws > 0
            && (far(self.predicted_hottest, self.observed_hottest)
                || far(self.predicted_top_percent, self.observed_top_percent))
    }
}

/// A replayed tape as it was on the night (`[[tape]]`): what it holds and how much of it the run used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TapeCoverage {
    /// The tape's file name.
    pub file: String,
    /// The hash of its requests (part of the workload's hash).
    pub digest: String,
    /// Requests in the tape.
    pub requests: u64,
    /// Distinct requests in the tape.
    pub distinct: u64,
    /// Requests the run planned to send (open model).
    pub planned_requests: Option<f64>,
    /// The realism report: the run's requests against the tape's distinct ones.
    pub realism: Option<String>,
    /// Per route, the most requested first: requests in the tape and distinct ids (objects) it touches.
    pub routes: Vec<RouteCoverage>,
}

/// One route of a replayed tape.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteCoverage {
    /// `GET /boards/{id}`.
    pub route: String,
    /// Its requests in the tape.
    pub requests: u64,
    /// Distinct values of its placeholders; 0 for a route without any.
    pub distinct_ids: u64,
}

impl TapeCoverage {
    /// A route's share of the tape, percent, for the run page.
    #[must_use]
    pub fn share(&self, route: &RouteCoverage) -> String {
        format!("{:.1}", route.requests as f64 / self.requests.max(1) as f64 * 100.0)
    }
}

/// Everything a finished run produced, stored in one transaction by `Store::finish_run`.
#[derive(Debug, Clone)]
pub struct RunResults {
    /// `Finished`, `Invalid` (with reasons), `Failed` (the target was not there) or `Aborted` (stopped).
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
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunDetail {
    pub run: Run,
    /// Its results, the overall row first, then by endpoint name.
    pub endpoints: Vec<EndpointResult>,
}

/// How sessions are started: the load model of a scenario. It is written in the scenario file, so the
/// workload hash already keeps the two models' runs in separate series; it is stored with each run for the
/// judge, which tests throughput only in the closed model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadModel {
    /// Sessions arrive at a planned rate whatever the target's speed, as real users do: a slower build gets
    /// the same load, so its slowness shows. The nightly default.
    Open,
    /// A fixed number of users each run one session after another: the load falls when the target slows.
    Closed,
}

impl LoadModel {
    /// As written and stored.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Closed => "closed",
        }
    }

    /// The model a stored name stands for; anything but `closed` is the open model.
    #[must_use]
    pub fn from_stored(name: &str) -> Self {
        if name == Self::Closed.as_str() { Self::Closed } else { Self::Open }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_the_validity_reasons_say_already_is_not_said_again_as_stopped() {
        let run = Run {
            id: 17,
            scenario: "shop".into(),
            build_id: None,
            status: RunStatus::Invalid,
            started_at: DateTime::UNIX_EPOCH,
            finished_at: None,
            scenario_hash: "h".into(),
            seed: 1,
            validity_reasons: vec!["no segment of the night was seen for 60 s".into()],
            load_summary: None,
            failure_reason: Some("no segment of the night was seen for 60 s".into()),
            segments: 1,
        };
        assert_eq!(run.stopped_reason(), None);
        let failed = Run { validity_reasons: Vec::new(), status: RunStatus::Failed, ..run };
        assert_eq!(failed.stopped_reason(), Some("no segment of the night was seen for 60 s"));
    }
}
