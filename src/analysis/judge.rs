//! Judging one run: every endpoint × metric of the candidate against the same figure in the baseline runs
//! (the nightly family of `nightly`, or one named run), an endpoint that stopped serving, and the absolute
//! gates, with the server's telemetry beside them (`telemetry`). Pure: results in, findings out.

use super::detector::{Answer, Change, Direction, Question, SeriesKind};
use super::nightly::judge_nightly;
use super::telemetry::{TelemetryNights, limit_findings, missing_tonight, series_drafts, series_figures};
use crate::analysis::Gates;
use crate::model::{EndpointResult, Finding, FindingOutcome, LoadModel, Metric, VerdictOutcome, Worse};

/// The result of judging a run.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub outcome: VerdictOutcome,
    /// One line per endpoint × metric and per absolute gate, candidate order.
    pub findings: Vec<Finding>,
    /// One sentence for humans.
    pub summary: String,
}

/// The metrics compared with one named run, with the direction in which they get worse.
const JUDGED: [(Metric, Direction, SeriesKind); 5] = [
    (Metric::P50, Direction::HigherIsWorse, SeriesKind::Latency),
    (Metric::P95, Direction::HigherIsWorse, SeriesKind::Latency),
    (Metric::P99, Direction::HigherIsWorse, SeriesKind::Latency),
    (Metric::ErrorRate, Direction::HigherIsWorse, SeriesKind::ErrorRate),
    (Metric::Throughput, Direction::LowerIsWorse, SeriesKind::Throughput),
];

/// How a run is compared with its baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// Against the level and night-to-night noise of several runs (`last-7d`, `last-N`, `build:ID`).
    Nightly,
    /// Against one named run (`run:ID`): there is no noise to measure, so only the minimum effect decides.
    OneRun,
}

/// Judges `candidate`'s endpoints against `baseline` (one entry per baseline run, oldest first). Throughput
/// is judged only for the closed `model`: in the open model the generator sets the rate.
#[must_use]
pub fn judge(
    candidate: &[EndpointResult],
    baseline: &[Vec<EndpointResult>],
    gates: &Gates,
    comparison: Comparison,
    model: LoadModel,
) -> Judgement {
    judge_with_telemetry(candidate, baseline, TelemetryNights::default(), gates, comparison, model)
}

/// [`judge`], with each telemetry series of `telemetry` judged too (its nights in the order of `baseline`)
/// and its limits in `gates` applied.
#[must_use]
pub fn judge_with_telemetry(
    candidate: &[EndpointResult],
    baseline: &[Vec<EndpointResult>],
    telemetry: TelemetryNights<'_>,
    gates: &Gates,
    comparison: Comparison,
    model: LoadModel,
) -> Judgement {
    let min_runs = match comparison {
        Comparison::Nightly => gates.min_runs as usize,
        Comparison::OneRun => 1,
    };
    let judge_throughput = model == LoadModel::Closed;
    let mut findings = missing_endpoints(candidate, baseline);
    findings.extend(match comparison {
        Comparison::Nightly => {
            judge_nightly(candidate, baseline, gates, judge_throughput, &series_drafts(telemetry, gates))
        }
        Comparison::OneRun => {
            let mut findings = one_run_findings(candidate, baseline, gates, judge_throughput);
            findings.extend(one_run_telemetry(telemetry, gates));
            findings
        }
    });
    for endpoint in candidate.iter().filter(|e| e.requests > 0) {
        findings.extend(gate_findings(endpoint, gates));
    }
    findings.extend(limit_findings(telemetry.tonight, &gates.telemetry_limits));
    // Each endpoint's lines together, in the candidate's order.
    let position = |name: &str| candidate.iter().position(|e| e.endpoint == name).unwrap_or(usize::MAX);
    findings.sort_by_key(|f| position(&f.endpoint));
    let outcome = if findings.iter().any(|f| f.outcome.is_failure()) {
        VerdictOutcome::Regressed
    } else if baseline.len() < min_runs {
        VerdictOutcome::Inconclusive
    } else {
        VerdictOutcome::Passed
    };
    let summary = summarize(outcome, &findings, baseline.len(), min_runs) + &missing_tonight(telemetry.tonight);
    Judgement { outcome, findings, summary }
}

/// Every telemetry series against one named run, by the minimum effect alone.
fn one_run_telemetry(telemetry: TelemetryNights<'_>, gates: &Gates) -> Vec<Finding> {
    series_figures(telemetry)
        .into_iter()
        .map(|series| {
            let direction =
                if series.worse == Worse::Higher { Direction::HigherIsWorse } else { Direction::LowerIsWorse };
            let question = Question {
                history: &series.history,
                candidate: series.tonight,
                direction,
                kind: SeriesKind::Latency,
                min_effect_pct: gates.min_effect_pct,
                min_runs: 1,
            };
            let mut finding =
                finding_from(&series.source, Metric::P50, series.tonight, compare_with_one_run(&question));
            finding.metric = series.metric.to_string();
            finding
        })
        .collect()
}

/// Every endpoint × metric against one named run.
fn one_run_findings(
    candidate: &[EndpointResult],
    baseline: &[Vec<EndpointResult>],
    gates: &Gates,
    judge_throughput: bool,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    for endpoint in candidate.iter().filter(|e| e.requests > 0) {
        for (metric, direction, kind) in JUDGED {
            if metric == Metric::Throughput && !judge_throughput {
                continue;
            }
            let history: Vec<f64> = baseline
                .iter()
                .filter_map(|run| run.iter().find(|e| e.endpoint == endpoint.endpoint))
                .map(|e| metric.value_of(e))
                .collect();
            let min_effect_pct = gates.min_effect_pct_of(metric);
            let question = Question {
                history: &history,
                candidate: metric.value_of(endpoint),
                direction,
                kind,
                min_effect_pct,
                min_runs: 1,
            };
            findings.push(finding_from(
                &endpoint.endpoint,
                metric,
                question.candidate,
                compare_with_one_run(&question),
            ));
        }
    }
    findings
}

/// Endpoints the most recent baseline run served but tonight's run did not (absent, or no requests): the
/// worst regression of all, which per-metric comparisons cannot see.
fn missing_endpoints(candidate: &[EndpointResult], baseline: &[Vec<EndpointResult>]) -> Vec<Finding> {
    let Some(latest) = baseline.last() else { return Vec::new() };
    latest
        .iter()
        .filter(|before| before.requests > 0)
        .filter(|before| !candidate.iter().any(|e| e.endpoint == before.endpoint && e.requests > 0))
        .map(|before| Finding {
            endpoint: before.endpoint.clone(),
            metric: "requests".to_owned(),
            outcome: FindingOutcome::Regression,
            baseline_value: Some(before.requests as f64),
            candidate_value: 0.0,
            delta_pct: Some(-100.0),
            limit: None,
            interval: None,
            p_value: None,
            // A WebSocket push class or a send without an await counts messages, not requests.
            reason: if before.is_counted_only() {
                format!("no messages tonight; the latest baseline run counted {}", before.requests)
            } else {
                format!("no requests tonight; the latest baseline run served {} requests", before.requests)
            },
        })
        .collect()
}

/// One named run as the baseline: no noise can be measured, so a change of at least the minimum effect
/// (and, for error rates, at least +0.1 percentage points) decides.
fn compare_with_one_run(question: &Question<'_>) -> Answer {
    let Some(&base) = question.history.last() else {
        return Answer {
            change: Change::Inconclusive,
            baseline: None,
            delta_pct: None,
            limit: None,
            reason: "inconclusive: the baseline run has no figures for this endpoint".to_owned(),
        };
    };
    let sign = if question.direction == Direction::LowerIsWorse { -1.0 } else { 1.0 };
    let effect = question.min_effect_pct / 100.0;
    let worse_by = sign * (question.candidate - base);
    let relative = if base.abs() > 0.0 { worse_by / base.abs() } else { worse_by.signum() * f64::INFINITY };
    let error_floor = question.kind != SeriesKind::ErrorRate || worse_by >= 0.1;
    let change = if relative >= effect && error_floor && worse_by > 0.0 {
        Change::Regression
    } else if -relative >= effect && question.kind != SeriesKind::ErrorRate {
        Change::Improvement
    } else {
        Change::NoChange
    };
    Answer {
        change,
        baseline: Some(base),
        delta_pct: (base.abs() > 0.0).then(|| 100.0 * (question.candidate - base) / base.abs()),
        limit: Some(base * (1.0 + sign * effect)),
        reason: format!(
            "compared with one run: without night-to-night noise, a change of {} % decides",
            question.min_effect_pct
        ),
    }
}

fn finding_from(endpoint: &str, metric: Metric, candidate: f64, answer: Answer) -> Finding {
    let outcome = match answer.change {
        Change::Regression => FindingOutcome::Regression,
        Change::Improvement => FindingOutcome::Improvement,
        Change::NoChange => FindingOutcome::NoChange,
        Change::Inconclusive => FindingOutcome::Inconclusive,
    };
    Finding {
        endpoint: endpoint.to_owned(),
        metric: metric.as_str().to_owned(),
        outcome,
        baseline_value: answer.baseline,
        candidate_value: candidate,
        delta_pct: answer.delta_pct,
        limit: answer.limit,
        interval: None,
        p_value: None,
        reason: answer.reason,
    }
}

/// One finding per configured absolute limit.
fn gate_findings(endpoint: &EndpointResult, gates: &Gates) -> Vec<Finding> {
    let limits = &gates.absolute;
    [
        ("max_p75_ms", Metric::P75, limits.max_p75_ms, "ms"),
        ("max_p95_ms", Metric::P95, limits.max_p95_ms, "ms"),
        ("max_p99_ms", Metric::P99, limits.max_p99_ms, "ms"),
        ("max_error_rate_pct", Metric::ErrorRate, limits.max_error_rate_pct, "%"),
    ]
    .into_iter()
    .filter_map(|(gate, metric, limit, unit)| {
        let limit = limit?;
        let value = metric.value_of(endpoint);
        let breached = value > limit;
        let reason = if breached {
            format!("{metric} {value:.3} {unit} is over the absolute limit of {limit} {unit}")
        } else {
            format!("{metric} {value:.3} {unit} is within the absolute limit of {limit} {unit}")
        };
        Some(Finding {
            endpoint: endpoint.endpoint.clone(),
            metric: gate.to_owned(),
            outcome: if breached { FindingOutcome::GateBreached } else { FindingOutcome::GatePassed },
            baseline_value: None,
            candidate_value: value,
            delta_pct: None,
            limit: Some(limit),
            interval: None,
            p_value: None,
            reason,
        })
    })
    .collect()
}

fn summarize(outcome: VerdictOutcome, findings: &[Finding], baseline_runs: usize, min_runs: usize) -> String {
    if outcome == VerdictOutcome::Inconclusive {
        return format!(
            "inconclusive: {baseline_runs} valid run{} in the baseline, at least {min_runs} needed to judge against \
             night-to-night noise",
            if baseline_runs == 1 { "" } else { "s" }
        );
    }
    counted_findings(outcome, findings)
}

/// "regressed: 2 regressions, 40 unchanged": the outcome and how many findings ended how.
#[must_use]
pub fn counted_findings(outcome: VerdictOutcome, findings: &[Finding]) -> String {
    let count = |outcome: FindingOutcome| findings.iter().filter(|f| f.outcome == outcome).count();
    let counted = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut parts: Vec<String> = [
        (FindingOutcome::Regression, "regression", "regressions"),
        (FindingOutcome::GateBreached, "gate breached", "gates breached"),
        (FindingOutcome::Improvement, "improvement", "improvements"),
    ]
    .into_iter()
    .filter(|(outcome, _, _)| count(*outcome) > 0)
    .map(|(outcome, one, many)| counted(count(outcome), one, many))
    .collect();
    for (outcome, words) in [(FindingOutcome::Excused, "excused"), (FindingOutcome::Unconfirmed, "not reproduced")] {
        if count(outcome) > 0 {
            parts.push(format!("{} {words}", count(outcome)));
        }
    }
    parts.push(format!("{} unchanged", count(FindingOutcome::NoChange)));
    if count(FindingOutcome::TooFew) > 0 {
        parts.push(format!("{} on too few requests to judge", count(FindingOutcome::TooFew)));
    }
    // A finding that could not be judged (a telemetry series the baseline nights do not hold yet, a capacity
    // the generator limited): left out of the count, a reader takes it for judged. Each says why on its own.
    if count(FindingOutcome::Inconclusive) > 0 {
        parts.push(format!("{} inconclusive", count(FindingOutcome::Inconclusive)));
    }
    format!("{outcome}: {}", parts.join(", "))
}

#[cfg(test)]
#[path = "judge_tests.rs"]
mod tests;
