//! The server's side of a night judged: each kept telemetry series is one more test in the run's family
//! (`nightly`), and each configured limit one more absolute gate (`judge`).
//!
//! A series is judged on one figure: a counter's growth per 1,000 requests where the night has it (CPU
//! seconds, transactions, blocks read per 1,000 requests: the cost that stays comparable when the load
//! changes), otherwise its mean over the measured stages (connections open, memory used). Like a latency
//! percentile it is a ratio scale, so it is judged on the log scale with the same level and noise estimate
//! (`level`) and the same test against the level (`shift`): a build that needs 40 % more CPU per request is a
//! regression on a night when the latency held. The series' own `worse` says which way is bad. A night knows
//! no sampling noise of a telemetry figure: the night-to-night noise carries it all.
//!
//! What is not judged: a series missing tonight (its source did not answer: the summary says so, the night is
//! judged on what the client measured) or scraped over too little of it (more than one scrape in ten failed), a series too few baseline nights have (inconclusive), and a figure at
//! or below zero, which has no ratio. Telemetry findings are never excused by a held-back machine
//! (`contention` excuses latency alone): a busier machine is what a build that burns more CPU makes.

use super::detector::{LOG_PRIOR, LOG_SIGMA_FLOOR};
use super::evidence::{SlowShares, ValueEvidence};
use super::level::estimate;
use super::reasons::few_nights_note;
use super::shift::shift;
use crate::analysis::{Gates, TelemetryLimit};
use crate::model::{
    Finding, FindingOutcome, RunTelemetry, SeriesKind, SeriesTelemetry, SourceTelemetry, TelemetryFigure,
    TelemetryMetric, TelemetryStatus, Worse, value_in_unit,
};

/// Tonight's telemetry and the baseline nights' (oldest first, one per baseline run), as the judge reads it.
#[derive(Debug, Clone, Copy, Default)]
pub struct TelemetryNights<'a> {
    /// Tonight's; `None` when the run kept none.
    pub tonight: Option<&'a RunTelemetry>,
    /// The baseline nights', in the same order as their endpoint results.
    pub baseline: &'a [RunTelemetry],
}

/// One series' judged figure tonight and on the baseline nights that have it.
#[derive(Debug, Clone)]
pub(super) struct SeriesFigures {
    /// The source's name: the finding's endpoint.
    pub source: String,
    /// The series, figure and unit: the finding's metric.
    pub metric: TelemetryMetric,
    /// Which way is worse.
    pub worse: Worse,
    /// Tonight's value.
    pub tonight: f64,
    /// The baseline nights' values, oldest first.
    pub history: Vec<f64>,
}

/// What is known about one series before the family is judged.
#[derive(Debug, Clone)]
pub(super) enum SeriesEvidence {
    /// Too few baseline nights have the series.
    ShortHistory {
        /// Nights that have it.
        nights: usize,
        /// Nights needed.
        needed: usize,
    },
    /// Tonight or a baseline night is at or below zero: the figure has no ratio to judge.
    NotPositive,
    /// The series on the judging scale, tested against its level.
    Value(Box<ValueEvidence>),
}

/// A series with its evidence.
#[derive(Debug, Clone)]
pub(super) struct SeriesDraft {
    /// Its figures.
    pub figures: SeriesFigures,
    /// The smallest change that counts, as a fraction.
    pub min_effect: f64,
    /// The evidence.
    pub evidence: SeriesEvidence,
}

/// The figure a series is judged on, its unit and tonight's value; `None` when the night has no summary.
fn judged_figure(series: &SeriesTelemetry) -> Option<(TelemetryFigure, String, f64)> {
    let summary = series.summary?;
    match (series.kind, summary.per_1000_requests, &series.count_unit) {
        (SeriesKind::Counter, Some(per_1000), Some(unit)) => {
            Some((TelemetryFigure::Per1000Requests, unit.clone(), per_1000))
        }
        _ => Some((TelemetryFigure::Mean, series.unit.clone(), summary.mean)),
    }
}

/// The same figure of the same series on another night, when it has it.
fn figure_on(night: &RunTelemetry, source: &str, series: &str, figure: TelemetryFigure) -> Option<f64> {
    let kept = night.sources.iter().find(|s| s.name == source)?.series.iter().find(|s| s.name == series)?;
    judged_figure(kept).filter(|(f, _, _)| *f == figure).map(|(_, _, value)| value)
}

/// Whether `series` was read over too little of tonight to be judged: its source failed more than one scrape
/// in [`PARTIAL_SHARE`] (an exporter that died a third of the way in gives a figure of the night's first third,
/// not of the night). Only failures the series itself carries count: a scraped series is partial with its
/// source's reason, while a `prometheus` source's failures are whole queries (its `scrapes`), whose series are
/// missing instead, and a series of its that lacks a step says so in its own words.
fn read_too_little(source: &SourceTelemetry, series: &SeriesTelemetry) -> bool {
    let failed_scrapes =
        source.reason.as_deref().is_some_and(|why| series.reason.as_deref().is_some_and(|r| r.contains(why)));
    series.status == TelemetryStatus::Partial
        && failed_scrapes
        && source.failed_scrapes * PARTIAL_SHARE > source.scrapes
}

/// One failed scrape in this many is a night's blip; more leave a series unjudged ([`read_too_little`]).
const PARTIAL_SHARE: u32 = 10;

/// Every series tonight has a figure of, with that figure on the baseline nights.
pub(super) fn series_figures(nights: TelemetryNights<'_>) -> Vec<SeriesFigures> {
    let Some(tonight) = nights.tonight else { return Vec::new() };
    tonight
        .sources
        .iter()
        .flat_map(|source| source.series.iter().map(move |series| (source, series)))
        .filter(|(source, series)| !read_too_little(source, series))
        .filter_map(|(source, series)| {
            let (figure, unit, value) = judged_figure(series)?;
            let history =
                nights.baseline.iter().filter_map(|n| figure_on(n, &source.name, &series.name, figure)).collect();
            Some(SeriesFigures {
                source: source.name.clone(),
                metric: TelemetryMetric { series: series.name.clone(), figure, unit },
                worse: series.worse,
                tonight: value,
                history,
            })
        })
        .collect()
}

/// Each series' evidence against its level, when `needed` baseline nights have it.
pub(super) fn series_drafts(nights: TelemetryNights<'_>, gates: &Gates) -> Vec<SeriesDraft> {
    let needed = (gates.min_runs as usize).max(2);
    let min_effect = gates.min_effect_pct / 100.0;
    series_figures(nights)
        .into_iter()
        .map(|figures| {
            let evidence = evidence(&figures, needed);
            SeriesDraft { figures, min_effect, evidence }
        })
        .collect()
}

fn evidence(figures: &SeriesFigures, needed: usize) -> SeriesEvidence {
    if figures.history.len() < needed {
        return SeriesEvidence::ShortHistory { nights: figures.history.len(), needed };
    }
    if figures.tonight <= 0.0 || figures.history.iter().any(|v| *v <= 0.0) {
        return SeriesEvidence::NotPositive;
    }
    let sign = if figures.worse == Worse::Higher { 1.0 } else { -1.0 };
    let values: Vec<f64> = figures.history.iter().map(|v| sign * v.ln()).collect();
    let estimate = estimate(&values, &vec![0.0; values.len()], LOG_SIGMA_FLOOR, Some(LOG_PRIOR));
    let tonight = sign * figures.tonight.ln();
    let tested = shift(&estimate, tonight, 0.0);
    SeriesEvidence::Value(Box::new(ValueEvidence {
        sign,
        estimate,
        tonight,
        tonight_var: 0.0,
        interval: None,
        slow_shares: SlowShares::default(),
        shift: Some(tested),
        relative: None,
        shown: None,
    }))
}

/// The test's p-value for the family, when the series is tested.
pub(super) fn p_worse(draft: &SeriesDraft) -> Option<f64> {
    match &draft.evidence {
        SeriesEvidence::Value(v) => v.shift.as_ref().map(|s| s.p_worse),
        _ => None,
    }
}

/// What Holm's procedure made of a series' test: the p-value it had to reach, and whether it did.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tested {
    /// The p-value it had to reach at its step.
    pub alpha: f64,
    /// Whether it did.
    pub rejected: bool,
}

/// The finding a series becomes; `tested` is its test's fate when it was one of the `family`.
/// `plain_alpha` is the run's false-alarm rate shared by the family's tests, which an improvement must reach.
pub(super) fn series_finding(d: &SeriesDraft, tested: Option<Tested>, family: usize, plain_alpha: f64) -> Finding {
    let f = &d.figures;
    let mut finding = Finding {
        endpoint: f.source.clone(),
        metric: f.metric.to_string(),
        outcome: FindingOutcome::NoChange,
        baseline_value: None,
        candidate_value: f.tonight,
        delta_pct: None,
        limit: None,
        interval: None,
        p_value: None,
        reason: String::new(),
    };
    match &d.evidence {
        SeriesEvidence::ShortHistory { nights, needed } => {
            finding.outcome = FindingOutcome::Inconclusive;
            finding.reason = format!(
                "inconclusive: {nights} baseline night{} kept this series, at least {needed} needed",
                if *nights == 1 { "" } else { "s" }
            );
        }
        SeriesEvidence::NotPositive => {
            "not judged: a value at or below zero, tonight or on a baseline night, has no ratio to compare"
                .clone_into(&mut finding.reason);
        }
        SeriesEvidence::Value(v) => value_finding(&mut finding, d, v, tested, (family, plain_alpha)),
    }
    finding
}

fn value_finding(
    finding: &mut Finding,
    d: &SeriesDraft,
    v: &ValueEvidence,
    tested: Option<Tested>,
    (family, plain_alpha): (usize, f64),
) {
    let shift = v.shift.as_ref().expect("telemetry values are tested on creation");
    let alpha = tested.map_or(plain_alpha, |t| t.alpha);
    let k = shift.threshold(alpha);
    let base = v.raw(v.estimate.level);
    finding.baseline_value = Some(base);
    finding.delta_pct = Some(100.0 * (finding.candidate_value - base) / base);
    finding.p_value = Some(shift.p_worse);
    let limit = (shift.forecast + k * shift.se).max(v.estimate.level + d.min_effect.ln_1p());
    finding.limit = Some(v.raw(limit));
    let (worse_way, better_way, beyond) =
        if v.sign > 0.0 { ("above", "below", "over") } else { ("below", "above", "under") };
    let side = if shift.z >= 0.0 { worse_way } else { better_way };
    finding.reason = format!(
        "{:.1} sigma {side} the level of {} nights (night-to-night noise ±{:.1} %); a regression needs {k:.1} sigma \
         (1 % false alarms over the run's {family} tests) and {:.0} %: {beyond} {}",
        shift.z.abs(),
        v.estimate.level_nights,
        100.0 * v.estimate.night_var.sqrt(),
        100.0 * d.min_effect,
        value_in_unit(v.raw(limit), &d.figures.metric.unit),
    );
    finding.reason += &few_nights_note(&v.estimate, k, alpha);
    if let Some((_, nights)) = v.estimate.tail {
        finding.reason += &format!("; the last {nights} nights moved to a new level that is not settled yet");
    }
    let regressed = tested.is_some_and(|t| t.rejected) && v.worse_by() >= d.min_effect;
    let improved = shift.p_better <= plain_alpha && v.better_by() >= d.min_effect;
    finding.outcome = if regressed {
        FindingOutcome::Regression
    } else if improved {
        FindingOutcome::Improvement
    } else {
        FindingOutcome::NoChange
    };
}

/// One gate finding per configured bound on a series tonight has a mean of; a series missing tonight is not
/// held to its limits (the summary names it as missing).
pub(super) fn limit_findings(tonight: Option<&RunTelemetry>, limits: &[TelemetryLimit]) -> Vec<Finding> {
    let Some(tonight) = tonight else { return Vec::new() };
    let mut findings = Vec::new();
    for limit in limits {
        let series = tonight
            .sources
            .iter()
            .find(|s| s.name == limit.source)
            .and_then(|source| source.series.iter().find(|s| s.name == limit.series));
        let Some((series, summary)) = series.and_then(|s| Some((s, s.summary?))) else { continue };
        let bounds = [(TelemetryFigure::Ceiling, limit.max), (TelemetryFigure::Floor, limit.min)];
        for (figure, bound) in bounds {
            if let Some(bound) = bound {
                findings.push(limit_finding(&limit.source, series, figure, bound, summary.mean));
            }
        }
    }
    findings
}

fn limit_finding(source: &str, series: &SeriesTelemetry, figure: TelemetryFigure, bound: f64, mean: f64) -> Finding {
    let shown = |v: f64| value_in_unit(v, &series.unit);
    let (breached, side) = match figure {
        TelemetryFigure::Floor => (mean < bound, "under"),
        _ => (mean > bound, "over"),
    };
    let reason = if breached {
        format!("{} mean {} over the measured stages is {side} the limit of {}", series.name, shown(mean), shown(bound))
    } else {
        format!("{} mean {} over the measured stages is within the limit of {}", series.name, shown(mean), shown(bound))
    };
    Finding {
        endpoint: source.to_owned(),
        metric: TelemetryMetric { series: series.name.clone(), figure, unit: series.unit.clone() }.to_string(),
        outcome: if breached { FindingOutcome::GateBreached } else { FindingOutcome::GatePassed },
        baseline_value: None,
        candidate_value: mean,
        delta_pct: None,
        limit: Some(bound),
        interval: None,
        p_value: None,
        reason,
    }
}

/// `; telemetry missing tonight, not judged: api-host (connection refused), db blocks read (no sample matched
/// …)`: what the night could not read, so the verdict says it was judged without it; empty when nothing is
/// missing.
#[must_use]
pub fn missing_tonight(tonight: Option<&RunTelemetry>) -> String {
    let Some(tonight) = tonight else { return String::new() };
    let mut missing = Vec::new();
    for source in &tonight.sources {
        let reason = |r: &Option<String>| r.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
        if source.status == TelemetryStatus::Missing {
            missing.push(format!("{}{}", source.name, reason(&source.reason)));
            continue;
        }
        missing.extend(
            source
                .series
                .iter()
                .filter(|s| s.summary.is_none())
                .map(|s| format!("{} {}{}", source.name, s.name, reason(&s.reason))),
        );
        if source.series.iter().any(|s| s.summary.is_some() && read_too_little(source, s)) {
            missing.push(format!(
                "{} ({} of {} scrapes failed: read over too little of the night)",
                source.name, source.failed_scrapes, source.scrapes
            ));
        }
    }
    if missing.is_empty() {
        return String::new();
    }
    format!("; telemetry missing tonight, not judged: {}", missing.join(", "))
}

#[cfg(test)]
#[path = "telemetry_tests.rs"]
mod tests;
