//! The gates a scenario sets (`[scenario.gates]` in `degrade.toml`): how much history a verdict needs, how
//! large a change counts, fixed limits, and whether a regression is confirmed by a rerun. The config checks
//! and builds them; the judge applies them.

use std::collections::BTreeMap;

use crate::model::Metric;

/// When a run fails the check.
#[derive(Debug, Clone, PartialEq)]
pub struct Gates {
    /// Fewer valid baseline runs than this make the verdict inconclusive; default 5.
    pub min_runs: u32,
    /// The smallest change, in percent, that counts as a regression; default 10.
    pub min_effect_pct: f64,
    /// Per-metric overrides of `min_effect_pct`, one of
    /// [`Metric::JUDGED`].
    pub metric_min_effect_pct: BTreeMap<Metric, f64>,
    /// Absolute limits, checked on every endpoint whatever the baseline says.
    pub absolute: AbsoluteGates,
    /// Absolute limits on telemetry series (`max`, `min` in `[[scenario.telemetry]] limits`), checked on
    /// tonight's mean of each whatever the baseline says.
    pub telemetry_limits: Vec<TelemetryLimit>,
    /// Rerun a run judged regressed at once, on the same build, before believing it; default true.
    pub confirm: bool,
    /// A latency regression measured while the machine was held back (far busier, its host stealing time, or
    /// slower in itself by its loopback echo) is excused unless it stands out from the rest of the run, and
    /// such nights leave the baseline (`analysis::contention`, `pipeline::held_back`); default true.
    pub busy_machine_inconclusive: bool,
}

impl Default for Gates {
    /// Five runs are the fewest from which night-to-night noise can be estimated at all; ten percent is the
    /// smallest change worth waking someone for; one slow night on a shared machine is the commonest false
    /// alarm there is, so a regression is confirmed by a rerun before anyone hears of it; a slow night on a
    /// machine kept busy by someone else lasts through the rerun, so it is not blamed on the build either.
    fn default() -> Self {
        Self {
            min_runs: 5,
            min_effect_pct: 10.0,
            metric_min_effect_pct: BTreeMap::new(),
            absolute: AbsoluteGates::default(),
            telemetry_limits: Vec::new(),
            confirm: true,
            busy_machine_inconclusive: true,
        }
    }
}

/// Fixed limits, like the capacity-planning "green zone" (p75 < 1 s, failures < 0.01 %).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AbsoluteGates {
    /// Highest acceptable p75 response time in milliseconds.
    pub max_p75_ms: Option<f64>,
    /// Highest acceptable p95 response time in milliseconds.
    pub max_p95_ms: Option<f64>,
    /// Highest acceptable p99 response time in milliseconds.
    pub max_p99_ms: Option<f64>,
    /// Highest acceptable share of failed requests, in percent.
    pub max_error_rate_pct: Option<f64>,
}

/// A fixed limit on one telemetry series' mean over the measured stages: the capacity guide's green zone holds
/// CPU on every server to at most 60 %, whatever the nights before did.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetryLimit {
    /// The source's name.
    pub source: String,
    /// The series' name within it.
    pub series: String,
    /// The highest acceptable mean, in the series' unit (a share from 0 to 1 for a share).
    pub max: Option<f64>,
    /// The lowest acceptable mean (a cache hit ratio).
    pub min: Option<f64>,
}

impl Gates {
    /// The smallest change of `metric`, in percent, that counts as a regression: its own override, or the
    /// scenario's `min_effect_pct`.
    #[must_use]
    pub fn min_effect_pct_of(&self, metric: Metric) -> f64 {
        self.metric_min_effect_pct.get(&metric).copied().unwrap_or(self.min_effect_pct)
    }
}
