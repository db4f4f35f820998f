//! What `degrade check` prints: one [`CheckReport`], rendered for a terminal, a program, a CI test report or a
//! pull-request comment.

mod human;
mod junit;
mod markdown;

pub use junit::{error_document as junit_error, skipped_document as junit_skipped};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::model::{CapacityResult, Change, Finding, FindingOutcome, Run, VerdictOutcome};

/// The output formats of `degrade check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Lines for a terminal: what matters, the baseline, the verdict.
    Human,
    /// One JSON document with every finding.
    Json,
    /// JUnit XML: one test case per endpoint × metric, for CI test reports.
    Junit,
    /// A Markdown table for a PR comment or a CI job summary.
    Markdown,
}

/// A baseline run, as listed in the report so readers can see what tonight was compared with.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BaselineRun {
    pub id: i64,
    pub started_at: DateTime<Utc>,
    /// The build it tested.
    pub build_id: Option<String>,
}

impl From<&Run> for BaselineRun {
    fn from(run: &Run) -> Self {
        Self { id: run.id, started_at: run.started_at, build_id: run.build_id.clone() }
    }
}

/// A baseline run left out because its machine was held back (`pipeline::held_back`), and why.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeftOut {
    pub id: i64,
    /// Why, in a few words: `its host stole 3.1 % of the CPU time, against 0.2 % usually`.
    pub why: String,
}

/// Everything one check concluded.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    pub scenario: String,
    pub run_id: i64,
    pub build_id: Option<String>,
    pub started_at: DateTime<Utc>,
    pub outcome: VerdictOutcome,
    pub summary: String,
    /// The baseline spec as given.
    pub baseline_spec: String,
    /// The runs that formed the baseline, oldest first.
    pub baseline: Vec<BaselineRun>,
    /// The runs the baseline spec selected but whose machine was held back, oldest first.
    pub left_out: Vec<LeftOut>,
    /// Every endpoint × metric line and every absolute gate.
    pub findings: Vec<Finding>,
    /// What the confirmation rerun found, when the run was one or had one.
    pub confirmation: Option<String>,
    /// The night's capacity search, every step with it, when the scenario has `[scenario.capacity]` (left out
    /// of the JSON otherwise). Boxed: a report is held across the nightly chain's awaits, and most have none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Box<CapacityResult>>,
}

impl CheckReport {
    /// Marks the regressions `unconfirmed`: the report of a run whose rerun refuted them or has not decided
    /// them yet, which fails no gate.
    pub fn regressions_as_unconfirmed(&mut self) {
        for f in self.findings.iter_mut().filter(|f| f.outcome == FindingOutcome::Regression) {
            f.outcome = FindingOutcome::Unconfirmed;
        }
    }

    /// The report in `format`, ending with a newline.
    #[must_use]
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Human => human::render(self),
            Format::Json => serde_json::to_string_pretty(self).expect("a report always serializes") + "\n",
            Format::Junit => junit::render(self),
            Format::Markdown => markdown::render(self),
        }
    }

    /// The baseline as one line: `last-7d: 7 runs: #3 (2026-03-01, 1.0.3), …`.
    fn baseline_line(&self) -> String {
        let runs: Vec<String> = self
            .baseline
            .iter()
            .map(|run| match &run.build_id {
                Some(build) => format!("#{} ({}, build {build})", run.id, run.started_at.format("%Y-%m-%d")),
                None => format!("#{} ({})", run.id, run.started_at.format("%Y-%m-%d")),
            })
            .collect();
        let count = runs.len();
        let noun = if count == 1 { "run" } else { "runs" };
        let mut line = if runs.is_empty() {
            format!("baseline {}: no valid runs", self.baseline_spec)
        } else {
            format!("baseline {}: {count} {noun}: {}", self.baseline_spec, runs.join(", "))
        };
        if !self.left_out.is_empty() {
            let left: Vec<String> = self.left_out.iter().map(|l| format!("#{} ({})", l.id, l.why)).collect();
            line += &format!("; left out, their machine held back: {}", left.join(", "));
        }
        line
    }

    fn run_line(&self) -> String {
        let build = self.build_id.as_deref().map(|b| format!(", build {b}")).unwrap_or_default();
        format!(
            "scenario {}, run #{} ({}{build})",
            self.scenario,
            self.run_id,
            self.started_at.format("%Y-%m-%d %H:%M UTC")
        )
    }
}

/// A finding's value with its unit: `123.4 ms`, `0.52 %`, `99.8 req/s`.
pub(crate) fn with_unit(metric: &str, value: f64) -> String {
    if let Some(telemetry) = crate::model::TelemetryMetric::parse(metric) {
        return crate::model::value_in_unit(value, &telemetry.unit);
    }
    match metric {
        "error_rate" | "max_error_rate_pct" => format!("{value:.3} %"),
        "throughput" => format!("{value:.1} req/s"),
        // A capacity is a planner's figure: whole arrivals per second, thousands grouped (`4,000 req/s`).
        "capacity" => format!("{} req/s", crate::model::rate_text(value)),
        // An endpoint that stopped serving: its finding counts requests, not time.
        "requests" => format!("{value:.0} requests"),
        _ => format!("{value:.1} ms"),
    }
}

/// Tonight's 95 % interval of a finding's figure, in its unit: `35.1–44.0 ms`, or `≥ 35.1 ms` when the
/// requests cannot bound it from above.
pub(crate) fn interval_text(f: &Finding) -> Option<String> {
    let interval = f.interval?;
    Some(match interval.hi {
        Some(hi) => {
            let hi = with_unit(&f.metric, hi);
            let lo = with_unit(&f.metric, interval.lo);
            // `35.1 ms–44.0 ms` reads worse than `35.1–44.0 ms`: keep the unit once.
            let lo_number = lo.split(' ').next().unwrap_or(&lo);
            format!("{lo_number}–{hi}")
        }
        None => format!("≥ {}", with_unit(&f.metric, interval.lo)),
    })
}

/// A finding's change as every output writes it ([`Change`]): `+31.9 %`, `×316`; `from none` for a rise from
/// zero (an endpoint that never failed: no ratio says anything, and "n/a" read as a missing figure) and `none`
/// for zero again; `n/a` without a baseline.
pub(crate) fn change_text(baseline: Option<f64>, tonight: f64, delta_pct: Option<f64>) -> String {
    match (baseline, delta_pct) {
        (_, Some(pct)) => Change::from_pct(pct).to_string(),
        (Some(base), None) if base == 0.0 && tonight == 0.0 => "none".to_owned(),
        (Some(0.0), None) => "from none".to_owned(),
        (_, None) => "n/a".to_owned(),
    }
}
