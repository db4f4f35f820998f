//! Alerts: what a team is told when a regression episode opens or resolves, a run is missing or fails, in
//! Slack's incoming-webhook format or degrade's own JSON, and the courier that delivers them.
//!
//! Messages are made when the episode changes and stored in the outbox in the same transaction (see
//! `store::outbox`); [`courier`] posts them with retries. Each message carries an idempotency key derived
//! from the episode, the event and the notifier, so the same alert is never enqueued twice and a receiver
//! can drop a repeat.

pub mod courier;
mod json;
mod slack;
pub mod webhook;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::config::{Config, NotifierConfig, NotifyEvent, NotifyKind};
use crate::model::CapacityChange;
use crate::store::NewMessage;

pub use courier::Courier;
pub use webhook::Webhooks;

/// What an alert is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// A regression episode opened.
    Regression,
    /// While a regression episode is open, a later night regressed on figures it had not named yet.
    RegressionWidened,
    /// A regression episode resolved: a run passed again.
    Recovery,
    /// A scheduled run did not happen.
    MissingRun,
    /// A run could not be done (deploy failed, target unhealthy).
    RunFailed,
    /// A run_failed episode resolved: a run measured the scenario again.
    RunFailedResolved,
    /// A missing_run episode resolved: a run started.
    MissingRunResolved,
    /// Nights in a row went unjudged: each night's machine was held back.
    Unjudged,
    /// An unjudged episode resolved: a night was judged again.
    UnjudgedResolved,
    /// `degrade notify test`.
    Test,
}

impl Event {
    /// The stored and posted name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Regression => "regression",
            Self::RegressionWidened => "regression_widened",
            Self::Recovery => "recovery",
            Self::MissingRun => "missing_run",
            Self::RunFailed => "run_failed",
            Self::RunFailedResolved => "run_failed_resolved",
            Self::MissingRunResolved => "missing_run_resolved",
            Self::Unjudged => "unjudged",
            Self::UnjudgedResolved => "unjudged_resolved",
            Self::Test => "test",
        }
    }

    /// Whether `notifier` asked for this event (every notifier gets test messages).
    fn wanted_by(self, notifier: &NotifierConfig) -> bool {
        let event = match self {
            // Part of the regression episode: whoever hears of the episode hears how it grows.
            Self::Regression | Self::RegressionWidened => NotifyEvent::Regression,
            Self::Recovery => NotifyEvent::Recovery,
            // Whoever was told an episode began is told it ended: an incident opened by the first is closed by
            // the second (the same `episode_id`).
            Self::MissingRun | Self::MissingRunResolved => NotifyEvent::MissingRun,
            Self::RunFailed | Self::RunFailedResolved => NotifyEvent::RunFailed,
            Self::Unjudged | Self::UnjudgedResolved => NotifyEvent::Unjudged,
            Self::Test => return true,
        };
        notifier.events.contains(&event)
    }
}

/// One endpoint metric that got worse, as an alert lists it.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Worse {
    pub endpoint: String,
    /// `p95`, `error_rate`, … or an absolute gate such as `max_p75_ms`.
    pub metric: String,
    /// The baseline's level (or the gate's limit), when there is one.
    #[serde(serialize_with = "significant::some")]
    pub baseline: Option<f64>,
    #[serde(serialize_with = "significant::one")]
    pub tonight: f64,
    /// Change from the baseline, percent.
    #[serde(serialize_with = "significant::some")]
    pub delta_pct: Option<f64>,
    /// `ms`, `%` or `req/s`; a telemetry series' own unit (`CPU s`, or `share` for a fraction from 0 to 1).
    pub unit: String,
}

/// An alert's figures in JSON to six significant digits: a trial's receiver read `"tonight":
/// 27.839000000000002` and `"delta_pct": 1008.4521480053796`, digits no measurement holds.
mod significant {
    use serde::Serializer;

    /// Six significant digits, whatever the figure's scale (a share of 0.0123, a p99 of 1,834.27 ms).
    pub(super) fn rounded(value: f64) -> f64 {
        if value == 0.0 || !value.is_finite() {
            return value;
        }
        let decimals = 5 - value.abs().log10().floor() as i32;
        let scale = 10_f64.powi(decimals);
        (value * scale).round() / scale
    }

    #[allow(clippy::trivially_copy_pass_by_ref, reason = "serde's serialize_with passes the field by reference")]
    pub(super) fn one<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(rounded(*value))
    }

    #[allow(clippy::ref_option, reason = "serde's serialize_with passes the field by reference")]
    pub(super) fn some<S: Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => serializer.serialize_some(&rounded(*value)),
            None => serializer.serialize_none(),
        }
    }
    #[cfg(test)]
    mod tests {
        #[test]
        #[allow(clippy::float_cmp, reason = "the rounded figure is the nearest double to the decimal, exactly")]
        fn figures_keep_six_significant_digits_in_json() {
            let worse = super::super::Worse {
                endpoint: "GET /items/{item_id}".into(),
                metric: "p50".into(),
                baseline: Some(2.511_520_235_681_377_5),
                tonight: 27.839_000_000_000_002,
                delta_pct: Some(1_008.452_148_005_379_6),
                unit: "ms".into(),
            };
            let json = serde_json::to_string(&worse).unwrap();
            assert!(json.contains(r#""baseline":2.51152,"tonight":27.839,"delta_pct":1008.45,"#), "{json}");
            assert_eq!(super::rounded(0.012_345_678_9), 0.012_345_7, "a share keeps its digits");
            assert_eq!(super::rounded(0.0), 0.0);
            let none = super::super::Worse { baseline: None, delta_pct: None, ..worse };
            assert!(serde_json::to_string(&none).unwrap().contains(r#""baseline":null"#));
        }
    }
}

/// Everything an alert says, whatever the format.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    pub event: Event,
    pub scenario: String,
    /// The run it is about (none for a missing run or a test).
    pub run_id: Option<i64>,
    pub build_id: Option<String>,
    /// The builds tested since the last run that passed, oldest first: the suspects.
    pub builds_since_last_good: Vec<String>,
    /// The last run that passed.
    pub last_good_run_id: Option<i64>,
    pub summary: String,
    /// What got worse (regressions only), worst first.
    pub worse: Vec<Worse>,
    /// The capacity's change, when a capacity search fell (a regression) or came back (a recovery).
    pub capacity: Option<CapacityChange>,
    pub at: DateTime<Utc>,
}

impl Alert {
    /// An alert about `scenario` with nothing but its summary; set the other fields with struct update syntax.
    #[must_use]
    pub fn about(event: Event, scenario: &str, summary: String, at: DateTime<Utc>) -> Self {
        Self {
            event,
            scenario: scenario.to_owned(),
            run_id: None,
            build_id: None,
            builds_since_last_good: Vec::new(),
            last_good_run_id: None,
            summary,
            worse: Vec::new(),
            capacity: None,
            at,
        }
    }
}

/// Whether more of `metric` is better (a capacity, a closed model's throughput): its fall is what got worse.
#[must_use]
pub fn higher_is_better(metric: &str) -> bool {
    matches!(metric, "throughput" | "capacity")
}

/// The unit a metric's values are in: a telemetry finding's is in its name (`model::TelemetryMetric`).
#[must_use]
pub fn unit_of(metric: &str) -> String {
    if let Some(telemetry) = crate::model::TelemetryMetric::parse(metric) {
        return telemetry.unit;
    }
    match metric {
        "error_rate" | "max_error_rate_pct" => "%",
        "throughput" | "capacity" => "req/s",
        _ => "ms",
    }
    .to_owned()
}

/// One message per notifier that wants `alert` about `episode`.
#[must_use]
pub fn messages(config: &Config, alert: &Alert, episode: i64) -> Vec<NewMessage> {
    config
        .notifiers
        .iter()
        .filter(|n| alert.event.wanted_by(n) && (n.scenarios.is_empty() || n.scenarios.contains(&alert.scenario)))
        .map(|notifier| {
            // One episode has at most one message per event and notifier, but for a widening, one per night
            // that widened it: so this key never repeats, and alerting the same night again enqueues nothing.
            let key = match (alert.event, alert.run_id) {
                (Event::RegressionWidened, Some(run)) => {
                    format!("degrade-episode-{episode}-{}-run-{run}-{}", alert.event.as_str(), notifier.name)
                }
                _ => format!("degrade-episode-{episode}-{}-{}", alert.event.as_str(), notifier.name),
            };
            NewMessage {
                episode_id: Some(episode),
                notifier: notifier.name.clone(),
                event: alert.event.as_str().to_owned(),
                payload: payload(config, notifier.kind, alert, Some(episode), &key),
                idempotency_key: key,
                created_at: alert.at,
            }
        })
        .collect()
}

/// The JSON body for `kind`.
#[must_use]
pub fn payload(config: &Config, kind: NotifyKind, alert: &Alert, episode: Option<i64>, key: &str) -> String {
    let links = Links::new(config.server.public_url.as_deref(), alert);
    let value = match kind {
        NotifyKind::Slack => slack::payload(alert, &links),
        NotifyKind::Json => json::payload(alert, &links, episode, key),
    };
    value.to_string()
}

/// Links into the dashboard, when `[server] public_url` says where it is.
struct Links {
    run: Option<String>,
    scenario: Option<String>,
}

impl Links {
    fn new(public_url: Option<&str>, alert: &Alert) -> Self {
        let base = public_url.map(|u| u.trim_end_matches('/').to_owned());
        Self {
            run: base.as_ref().zip(alert.run_id).map(|(base, id)| format!("{base}/runs/{id}")),
            scenario: base.map(|base| format!("{base}/scenarios/{}", alert.scenario)),
        }
    }
}
