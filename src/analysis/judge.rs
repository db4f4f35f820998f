//! Judging one run: every endpoint × metric of the candidate against the same figure in the baseline runs,
//! plus the absolute gates. Pure: results in, findings out.

use std::fmt;

use super::detector::{Change, Direction, Question, SeriesKind, detect};
use crate::config::Gates;
use crate::store::{EndpointResult, Finding, Metric};

/// What a check concluded about a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// No regression and no gate breached.
    Passed,
    /// At least one regression or breached gate.
    Regressed,
    /// Not enough valid baseline runs to tell (and no gate breached).
    Inconclusive,
}

impl Outcome {
    /// The stored and displayed name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Regressed => "regressed",
            Self::Inconclusive => "inconclusive",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Finding outcomes, as stored.
pub mod finding {
    /// Worse than the baseline by more than noise and the minimum effect.
    pub const REGRESSION: &str = "regression";
    /// Better than the baseline by more than noise and the minimum effect.
    pub const IMPROVEMENT: &str = "improvement";
    /// Within the baseline's noise or below the minimum effect.
    pub const NO_CHANGE: &str = "no_change";
    /// Too little history to tell.
    pub const INCONCLUSIVE: &str = "inconclusive";
    /// Over an absolute limit.
    pub const GATE_BREACHED: &str = "gate_breached";
    /// Within an absolute limit.
    pub const GATE_PASSED: &str = "gate_passed";
}

/// The result of judging a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// The verdict.
    pub outcome: Outcome,
    /// One line per endpoint × metric and per absolute gate, candidate order.
    pub findings: Vec<Finding>,
    /// One sentence for humans.
    pub summary: String,
}

/// The metrics judged against the baseline, with the direction in which they get worse.
const JUDGED: [(Metric, Direction, SeriesKind); 5] = [
    (Metric::P50, Direction::HigherIsWorse, SeriesKind::Latency),
    (Metric::P95, Direction::HigherIsWorse, SeriesKind::Latency),
    (Metric::P99, Direction::HigherIsWorse, SeriesKind::Latency),
    (Metric::ErrorRate, Direction::HigherIsWorse, SeriesKind::ErrorRate),
    (Metric::Throughput, Direction::LowerIsWorse, SeriesKind::Throughput),
];

/// Judges `candidate`'s endpoints against `baseline` (one entry per baseline run, oldest first).
#[must_use]
pub fn judge(candidate: &[EndpointResult], baseline: &[Vec<EndpointResult>], gates: &Gates) -> Judgement {
    let min_runs = gates.min_runs as usize;
    let mut findings = Vec::new();
    for endpoint in candidate {
        for (metric, direction, kind) in JUDGED {
            let history: Vec<f64> = baseline
                .iter()
                .filter_map(|run| run.iter().find(|e| e.endpoint == endpoint.endpoint))
                .map(|e| metric.value_of(e))
                .collect();
            let min_effect_pct =
                gates.metric_min_effect_pct.get(metric.as_str()).copied().unwrap_or(gates.min_effect_pct);
            let question = Question {
                history: &history,
                candidate: metric.value_of(endpoint),
                direction,
                kind,
                min_effect_pct,
                min_runs,
            };
            findings.push(finding_from(&endpoint.endpoint, metric, &question));
        }
        findings.extend(gate_findings(endpoint, gates));
    }
    let count = |outcome: &str| findings.iter().filter(|f| f.outcome == outcome).count();
    let (regressions, breaches) = (count(finding::REGRESSION), count(finding::GATE_BREACHED));
    let outcome = if regressions + breaches > 0 {
        Outcome::Regressed
    } else if baseline.len() < min_runs {
        Outcome::Inconclusive
    } else {
        Outcome::Passed
    };
    let summary = summarize(outcome, &findings, baseline.len(), min_runs);
    Judgement { outcome, findings, summary }
}

fn finding_from(endpoint: &str, metric: Metric, question: &Question<'_>) -> Finding {
    let answer = detect(question);
    let outcome = match answer.change {
        Change::Regression => finding::REGRESSION,
        Change::Improvement => finding::IMPROVEMENT,
        Change::NoChange => finding::NO_CHANGE,
        Change::Inconclusive => finding::INCONCLUSIVE,
    };
    Finding {
        endpoint: endpoint.to_owned(),
        metric: metric.as_str().to_owned(),
        outcome: outcome.to_owned(),
        baseline_value: answer.baseline,
        candidate_value: question.candidate,
        delta_pct: answer.delta_pct,
        limit: answer.limit,
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
            outcome: (if breached { finding::GATE_BREACHED } else { finding::GATE_PASSED }).to_owned(),
            baseline_value: None,
            candidate_value: value,
            delta_pct: None,
            limit: Some(limit),
            reason,
        })
    })
    .collect()
}

fn summarize(outcome: Outcome, findings: &[Finding], baseline_runs: usize, min_runs: usize) -> String {
    let count = |outcome: &str| findings.iter().filter(|f| f.outcome == outcome).count();
    let counted = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    if outcome == Outcome::Inconclusive {
        return format!(
            "inconclusive: {} in the baseline, at least {min_runs} needed to judge against night-to-night noise",
            counted(baseline_runs, "valid run", "valid runs")
        );
    }
    let mut parts: Vec<String> = [
        (finding::REGRESSION, "regression", "regressions"),
        (finding::GATE_BREACHED, "gate breached", "gates breached"),
        (finding::IMPROVEMENT, "improvement", "improvements"),
    ]
    .into_iter()
    .filter(|(outcome, _, _)| count(outcome) > 0)
    .map(|(outcome, one, many)| counted(count(outcome), one, many))
    .collect();
    parts.push(format!("{} unchanged", count(finding::NO_CHANGE)));
    format!("{outcome}: {}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AbsoluteGates;

    fn endpoint(name: &str, p95_ms: f64, errors: i64) -> EndpointResult {
        let us = (p95_ms * 1000.0) as i64;
        EndpointResult {
            endpoint: name.into(),
            requests: 10_000,
            errors,
            rate: 50.0,
            p50_us: us / 2,
            p75_us: us * 3 / 4,
            p95_us: us,
            p99_us: us * 2,
            ..EndpointResult::default()
        }
    }

    fn nights(count: usize) -> Vec<Vec<EndpointResult>> {
        let wobble = [1.0, 1.02, 0.98, 1.01, 0.99, 1.015, 0.985, 1.0, 1.01, 0.99];
        (0..count)
            .map(|n| {
                vec![endpoint("GET /a", 100.0 * wobble[n % 10], 0), endpoint("GET /b", 40.0 * wobble[(n + 3) % 10], 0)]
            })
            .collect()
    }

    #[test]
    fn flags_only_the_endpoint_that_regressed() {
        let tonight = [endpoint("GET /a", 140.0, 0), endpoint("GET /b", 40.5, 0)];
        let judgement = judge(&tonight, &nights(10), &Gates::default());
        assert_eq!(judgement.outcome, Outcome::Regressed);
        let regressions: Vec<_> = judgement
            .findings
            .iter()
            .filter(|f| f.outcome == finding::REGRESSION)
            .map(|f| (f.endpoint.as_str(), f.metric.as_str()))
            .collect();
        assert_eq!(regressions, [("GET /a", "p50"), ("GET /a", "p95"), ("GET /a", "p99")]);
        assert_eq!(judgement.findings.len(), 10, "5 metrics x 2 endpoints");
        assert!(judgement.summary.starts_with("regressed: 3 regressions, 7 unchanged"), "{}", judgement.summary);
    }

    #[test]
    fn a_normal_night_passes() {
        let tonight = [endpoint("GET /a", 101.0, 0), endpoint("GET /b", 39.5, 0)];
        let judgement = judge(&tonight, &nights(10), &Gates::default());
        assert_eq!(judgement.outcome, Outcome::Passed, "{judgement:?}");
    }

    #[test]
    fn too_few_baseline_runs_are_inconclusive_but_gates_still_apply() {
        let tonight = [endpoint("GET /a", 1400.0, 0)];
        let judgement = judge(&tonight, &nights(3), &Gates::default());
        assert_eq!(judgement.outcome, Outcome::Inconclusive);
        assert!(judgement.summary.contains("3 valid runs in the baseline, at least 5 needed"), "{}", judgement.summary);

        let green_zone = Gates {
            absolute: AbsoluteGates {
                max_p75_ms: Some(1000.0),
                max_error_rate_pct: Some(0.01),
                ..AbsoluteGates::default()
            },
            ..Gates::default()
        };
        let judgement = judge(&tonight, &nights(3), &green_zone);
        assert_eq!(judgement.outcome, Outcome::Regressed);
        let breach = judgement.findings.iter().find(|f| f.outcome == finding::GATE_BREACHED).unwrap();
        assert_eq!(
            (breach.metric.as_str(), breach.candidate_value, breach.limit),
            ("max_p75_ms", 1050.0, Some(1000.0))
        );
    }

    #[test]
    fn per_metric_minimum_effects_apply() {
        let tonight = [endpoint("GET /a", 130.0, 0), endpoint("GET /b", 40.0, 0)];
        let mut gates = Gates::default();
        gates.metric_min_effect_pct.extend([
            ("p50".to_owned(), 50.0),
            ("p95".to_owned(), 50.0),
            ("p99".to_owned(), 50.0),
        ]);
        assert_eq!(judge(&tonight, &nights(10), &gates).outcome, Outcome::Passed);
    }
}
