//! A capacity night's result: the highest arrival rate the build held inside its zone (the scenario's absolute
//! gates), the first rate that left it and why, and every step the search ran.

use serde::Serialize;

/// Which limit of the zone a step was judged against. Stored as the gate's name in degrade.toml.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ZoneGate {
    /// `max_p75_ms`.
    P75,
    /// `max_p95_ms`.
    P95,
    /// `max_p99_ms`.
    P99,
    /// `max_error_rate_pct`.
    ErrorRate,
    /// Arrivals dropped at the in-flight cap: the target held so many requests that no more could be sent.
    InFlight,
    /// A telemetry series' `max` in `limits` (CPU at most 60 %), on the step's own window.
    TelemetryMax,
    /// A telemetry series' `min` in `limits` (a cache hit ratio at least 0.9), on the step's own window.
    TelemetryMin,
}

impl ZoneGate {
    /// Every gate, in declaration order.
    pub const ALL: [Self; 7] =
        [Self::P75, Self::P95, Self::P99, Self::ErrorRate, Self::InFlight, Self::TelemetryMax, Self::TelemetryMin];

    /// The stored name: the gate's key in `[scenario.gates]` (`max_in_flight` names `[load] max_in_flight`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::P75 => "max_p75_ms",
            Self::P95 => "max_p95_ms",
            Self::P99 => "max_p99_ms",
            Self::ErrorRate => "max_error_rate_pct",
            Self::InFlight => "max_in_flight",
            Self::TelemetryMax => "telemetry_max",
            Self::TelemetryMin => "telemetry_min",
        }
    }

    /// How the figure reads in a sentence: `p75`, `error rate`.
    #[must_use]
    pub const fn figure(self) -> &'static str {
        match self {
            Self::P75 => "p75",
            Self::P95 => "p95",
            Self::P99 => "p99",
            Self::ErrorRate => "error rate",
            Self::InFlight => "dropped arrivals",
            Self::TelemetryMax | Self::TelemetryMin => "mean",
        }
    }

    /// The figure's unit, after its value.
    #[must_use]
    pub const fn unit(self) -> &'static str {
        match self {
            Self::P75 | Self::P95 | Self::P99 => " ms",
            Self::ErrorRate | Self::InFlight => " %",
            // A series' own unit: its name in the breach's endpoint says what it is.
            Self::TelemetryMax | Self::TelemetryMin => "",
        }
    }
}

impl std::str::FromStr for ZoneGate {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Self::ALL.into_iter().find(|g| g.as_str() == text).ok_or_else(|| format!("unknown zone gate `{text}`"))
    }
}

/// Why a step left the zone: the gate, the endpoint, tonight's figure and the limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ZoneBreach {
    /// The gate crossed.
    pub gate: ZoneGate,
    /// The endpoint whose figure crossed it (`(all)` for the whole step; for a telemetry limit, the source and
    /// series: `api-host CPU`).
    pub endpoint: String,
    /// The step's figure, in the gate's unit.
    pub value: f64,
    /// The gate's limit, in the same unit.
    pub limit: f64,
}

impl ZoneBreach {
    /// `p75 of POST /orders 412.0 ms against 300 ms (+37 %)`; `api-host CPU mean 0.712 over its limit 0.6
    /// (+19 %)` for a telemetry limit.
    #[must_use]
    pub fn describe(&self) -> String {
        let over = if self.limit > 0.0 { (self.value / self.limit - 1.0) * 100.0 } else { f64::INFINITY };
        let side = match self.gate {
            ZoneGate::TelemetryMax => Some("over"),
            ZoneGate::TelemetryMin => Some("under"),
            _ => None,
        };
        if let Some(side) = side {
            let (value, limit) = apart(self.value, self.limit);
            // A breach by a hair reads as one, not as `0.300 over its limit 0.300 (+0 %)`.
            let over = if over.abs() < 1.0 { format!("{over:+.2}") } else { format!("{over:+.0}") };
            return format!("{} mean {value} {side} its limit {limit} ({over} %)", self.endpoint);
        }
        let unit = self.gate.unit();
        format!(
            "{} of {} {:.1}{unit} against {}{unit} ({over:+.0} %)",
            self.gate.figure(),
            self.endpoint,
            self.value,
            self.limit
        )
    }
}

/// `0.712`, `1,234`-free: a telemetry value to `digits` significant digits (`0.000412`, `12.3`, `1230` at 3).
fn significant(value: f64, digits: i32) -> String {
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    let decimals = (digits - 1 - value.abs().log10().floor() as i32).clamp(0, 9) as usize;
    format!("{value:.decimals$}")
}

/// `value` and `limit` to three significant digits, or as many more as it takes (up to eight) for two
/// different numbers to read differently: a value just over its limit must not read as equal to it.
fn apart(value: f64, limit: f64) -> (String, String) {
    let mut shown = (significant(value, 3), significant(limit, 3));
    for digits in 4..=8 {
        // Equal numbers read equal however many digits are shown.
        if shown.0 != shown.1 || (value - limit).abs() <= f64::EPSILON * limit.abs() {
            break;
        }
        shown = (significant(value, digits), significant(limit, digits));
    }
    shown
}

/// What the zone made of one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepVerdict {
    /// Every figure inside every limit, as its interval says.
    Held,
    /// Some figure past its limit, as its interval says (or past it still after the last hold).
    Left,
    /// The generator could not send the step on time: it says nothing about the target.
    Invalid,
    /// The target was not there (connections refused, every request failed): the search stops at once.
    TargetFailed,
    /// Its requests held, but a telemetry limit of the zone could not be read on any hold (its source failed):
    /// whether the step was inside the zone is unknown, and the search stops there.
    Unread,
}

impl StepVerdict {
    /// Every verdict, in declaration order.
    pub const ALL: [Self; 5] = [Self::Held, Self::Left, Self::Invalid, Self::TargetFailed, Self::Unread];

    /// The stored name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Held => "held",
            Self::Left => "left",
            Self::Invalid => "invalid",
            Self::TargetFailed => "target_failed",
            Self::Unread => "unread",
        }
    }
}

impl std::str::FromStr for StepVerdict {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Self::ALL.into_iter().find(|v| v.as_str() == text).ok_or_else(|| format!("unknown step verdict `{text}`"))
    }
}

/// One rate the search held: its figures over its requests only (every hold of it pooled).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacityStep {
    /// Planned arrivals per second.
    pub rate: f64,
    /// Sessions started per second, over all its holds.
    pub achieved_rate: f64,
    /// How many holds it took for the intervals to decide (1 when the first did).
    pub holds: u32,
    /// What the zone made of it.
    pub verdict: StepVerdict,
    /// Requests over all its holds.
    pub requests: i64,
    /// Of which failed.
    pub errors: i64,
    /// The whole step's p75, p95 and p99 in ms (`None` without a response).
    pub p75_ms: Option<f64>,
    /// 95th percentile, ms.
    pub p95_ms: Option<f64>,
    /// 99th percentile, ms.
    pub p99_ms: Option<f64>,
    /// Why it left the zone, when it did.
    pub breach: Option<ZoneBreach>,
    /// In words: what decided it.
    pub reason: String,
}

/// How the search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchEnd {
    /// A step left the zone and the rates between it and the last held one were refined.
    Found,
    /// Every step up to the maximum rate held: the capacity is at least that.
    MaxRateHeld,
    /// The maximum total time ran out before a step left the zone.
    OutOfTime,
    /// The start rate already left the zone.
    LeftAtStart,
    /// The generator could not send a step on time: the capacity is at least the last rate held.
    GeneratorLimit,
    /// The target was not there.
    TargetFailed,
    /// degrade was stopped.
    Stopped,
    /// A telemetry limit of the zone could not be read: the capacity is at least the last rate held with it read.
    ZoneUnread,
}

impl SearchEnd {
    /// Every end, in declaration order.
    pub const ALL: [Self; 8] = [
        Self::Found,
        Self::MaxRateHeld,
        Self::OutOfTime,
        Self::LeftAtStart,
        Self::GeneratorLimit,
        Self::TargetFailed,
        Self::Stopped,
        Self::ZoneUnread,
    ];

    /// The stored name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Found => "found",
            Self::MaxRateHeld => "max_rate_held",
            Self::OutOfTime => "out_of_time",
            Self::LeftAtStart => "left_at_start",
            Self::GeneratorLimit => "generator_limit",
            Self::TargetFailed => "target_failed",
            Self::Stopped => "stopped",
            Self::ZoneUnread => "zone_unread",
        }
    }

    /// Whether the capacity found is the target's (a step left the zone), not a lower bound or nothing.
    #[must_use]
    pub const fn measured_the_target(self) -> bool {
        matches!(self, Self::Found | Self::LeftAtStart)
    }
}

impl std::str::FromStr for SearchEnd {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Self::ALL.into_iter().find(|e| e.as_str() == text).ok_or_else(|| format!("unknown search end `{text}`"))
    }
}

/// The night's capacity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacityResult {
    /// The highest rate held inside the zone, arrivals per second; `None` when the start rate left it.
    pub capacity: Option<f64>,
    /// The lowest rate that left the zone, when one did.
    pub first_out: Option<f64>,
    /// Why that rate left it.
    pub breach: Option<ZoneBreach>,
    /// How the search ended.
    pub ended: SearchEnd,
    /// How long the search took, seconds.
    pub search_secs: f64,
    /// Every step, in the order run.
    pub steps: Vec<CapacityStep>,
    /// The zone searched, in words (`p75 ≤ 60 ms; api CPU ≤ 0.12`); `None` for searches stored before it was
    /// recorded.
    pub zone: Option<String>,
}

impl CapacityResult {
    /// The capacity as a rate to compare, and whether it is only an upper bound: a search whose start rate
    /// already left the zone held nothing, so its capacity is under that rate, not zero.
    #[must_use]
    pub fn rate_bound(&self) -> (f64, bool) {
        match (self.capacity, self.first_out) {
            (Some(capacity), _) => (capacity, false),
            (None, Some(first_out)) if self.ended == SearchEnd::LeftAtStart => (first_out, true),
            (None, _) => (0.0, false),
        }
    }

    /// `capacity 780 req/s; 820 req/s left the zone on p75 of (all) 48.0 ms against 30 ms (+60 %)`.
    #[must_use]
    pub fn describe(&self) -> String {
        let capacity = match (self.capacity, self.ended) {
            (Some(c), SearchEnd::Found) => format!("capacity {} req/s", rate_text(c)),
            (Some(c), _) => format!("capacity at least {} req/s", rate_text(c)),
            (None, SearchEnd::LeftAtStart) => "no capacity: the start rate already left the zone".to_owned(),
            (None, _) => "no capacity measured".to_owned(),
        };
        let why = match (&self.first_out, &self.breach) {
            (Some(rate), Some(breach)) => {
                format!("; {} req/s left the zone on {}", rate_text(*rate), breach.describe())
            }
            _ => String::new(),
        };
        let end = match self.ended {
            SearchEnd::Found | SearchEnd::LeftAtStart => "",
            SearchEnd::MaxRateHeld => " (every step up to the maximum rate held)",
            SearchEnd::OutOfTime => " (the search's maximum time ran out)",
            SearchEnd::GeneratorLimit => " (the generator could not send the next step on time)",
            SearchEnd::TargetFailed => " (the target failed; the search stopped)",
            SearchEnd::Stopped => " (degrade was stopped)",
            SearchEnd::ZoneUnread => " (a telemetry limit of the zone could not be read; the search stopped there)",
        };
        format!("{capacity}{why}{end}")
    }
}

/// A rate in whole arrivals per second, its thousands grouped as a capacity planner writes them: `4,000`,
/// `162`, `12,500`.
#[must_use]
pub fn rate_text(rate: f64) -> String {
    if !rate.is_finite() {
        return "n/a".to_owned();
    }
    super::thousands(rate)
}

/// A night's capacity against the one it is compared with, as the verdict, the alerts and the API word it:
/// `capacity 4,000 → 3,100 req/s (-22.5 %): left the green zone on p75 of POST /orders 412.0 ms against 300 ms
/// (+37 %)`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacityChange {
    /// The capacity compared with: the baseline nights' median, or the night an alert recalls.
    pub baseline: f64,
    /// Tonight's capacity; when the start rate already left the zone, that rate, an upper bound (`under`).
    pub tonight: f64,
    /// Tonight's capacity is under `tonight`: no step held, and the first left the zone at that rate.
    pub under: bool,
    /// Change from the baseline, percent (when `under`, the fall is at least this).
    pub delta_pct: f64,
    /// The first rate that left the zone tonight, when one did.
    pub first_out: Option<f64>,
    /// The zone's name (`[scenario.capacity] zone_name`): `green` reads "the green zone".
    pub zone: String,
    /// Why tonight's first rate out left the zone.
    pub breach: Option<ZoneBreach>,
}

impl CapacityChange {
    /// `baseline` against `tonight`'s result, in the zone named `zone`.
    #[must_use]
    pub fn new(baseline: f64, tonight: &CapacityResult, zone: &str) -> Self {
        let (capacity, under) = tonight.rate_bound();
        let delta_pct = if baseline > 0.0 { (capacity / baseline - 1.0) * 100.0 } else { 0.0 };
        Self {
            baseline,
            tonight: capacity,
            under,
            delta_pct,
            first_out: tonight.first_out,
            zone: zone.to_owned(),
            breach: tonight.breach.clone(),
        }
    }

    /// `capacity 4,000 → 3,100 req/s (-22.5 %)`.
    #[must_use]
    pub fn headline(&self) -> String {
        let change = super::Change::from_pct(self.delta_pct);
        // Under a rate: a fall is at least that large, a rise at most.
        let (under, change) = match (self.under, self.delta_pct < 0.0) {
            (false, _) => ("", change.to_string()),
            (true, true) => ("under ", format!("{change} or more")),
            (true, false) => ("under ", format!("at most {change}")),
        };
        format!("capacity {} → {under}{} req/s ({change})", rate_text(self.baseline), rate_text(self.tonight))
    }

    /// The headline and why the next rate left the zone: `…: left the green zone on p75 of POST /orders 412.0
    /// ms against 300 ms (+37 %)`.
    #[must_use]
    pub fn describe(&self) -> String {
        match &self.breach {
            Some(breach) => format!("{}: {}", self.headline(), self.left_on(breach)),
            None => self.headline(),
        }
    }

    /// `left the green zone on p75 of POST /orders 412.0 ms against 300 ms (+37 %)`.
    #[must_use]
    pub fn left_on(&self, breach: &ZoneBreach) -> String {
        format!("left the {} on {}", zone_words(&self.zone), breach.describe())
    }
}

/// `the green zone` from `green`; a name that already says "zone" is kept as it is.
fn zone_words(zone: &str) -> String {
    if zone.to_lowercase().ends_with("zone") { zone.to_owned() } else { format!("{zone} zone") }
}

#[cfg(test)]
#[path = "capacity_tests.rs"]
mod tests;
