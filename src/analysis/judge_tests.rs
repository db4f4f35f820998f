//! The run judge on small made-up histories: which endpoint and figure it names, and how it sums a verdict up.

use super::*;
use crate::analysis::AbsoluteGates;

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
    let judgement = judge(&tonight, &nights(10), &Gates::default(), Comparison::Nightly, LoadModel::Open);
    assert_eq!(judgement.outcome, VerdictOutcome::Regressed);
    let regressions: Vec<_> = judgement
        .findings
        .iter()
        .filter(|f| f.outcome == FindingOutcome::Regression)
        .map(|f| (f.endpoint.as_str(), f.metric.as_str()))
        .collect();
    assert_eq!(regressions, [("GET /a", "p50"), ("GET /a", "p95"), ("GET /a", "p99")]);
    assert_eq!(judgement.findings.len(), 8, "4 metrics x 2 endpoints: throughput is the open model's own");
    assert!(judgement.summary.starts_with("regressed: 3 regressions, 5 unchanged"), "{}", judgement.summary);
}

#[test]
fn a_normal_night_passes() {
    let tonight = [endpoint("GET /a", 101.0, 0), endpoint("GET /b", 39.5, 0)];
    let judgement = judge(&tonight, &nights(10), &Gates::default(), Comparison::Nightly, LoadModel::Open);
    assert_eq!(judgement.outcome, VerdictOutcome::Passed, "{judgement:?}");
}

#[test]
fn too_few_baseline_runs_are_inconclusive_but_gates_still_apply() {
    let tonight = [endpoint("GET /a", 1400.0, 0), endpoint("GET /b", 40.0, 0)];
    let judgement = judge(&tonight, &nights(3), &Gates::default(), Comparison::Nightly, LoadModel::Open);
    assert_eq!(judgement.outcome, VerdictOutcome::Inconclusive);
    assert!(judgement.summary.contains("3 valid runs in the baseline, at least 5 needed"), "{}", judgement.summary);

    let green_zone = Gates {
        absolute: AbsoluteGates {
            max_p75_ms: Some(1000.0),
            max_error_rate_pct: Some(0.01),
            ..AbsoluteGates::default()
        },
        ..Gates::default()
    };
    let judgement = judge(&tonight, &nights(3), &green_zone, Comparison::Nightly, LoadModel::Open);
    assert_eq!(judgement.outcome, VerdictOutcome::Regressed);
    let breach = judgement.findings.iter().find(|f| f.outcome == FindingOutcome::GateBreached).unwrap();
    assert_eq!((breach.metric.as_str(), breach.candidate_value, breach.limit), ("max_p75_ms", 1050.0, Some(1000.0)));
}

#[test]
fn per_metric_minimum_effects_apply() {
    let tonight = [endpoint("GET /a", 130.0, 0), endpoint("GET /b", 40.0, 0)];
    let mut gates = Gates::default();
    gates.metric_min_effect_pct.extend([(Metric::P50, 50.0), (Metric::P95, 50.0), (Metric::P99, 50.0)]);
    assert_eq!(
        judge(&tonight, &nights(10), &gates, Comparison::Nightly, LoadModel::Open).outcome,
        VerdictOutcome::Passed
    );
}

#[test]
fn an_endpoint_that_stopped_serving_is_a_regression() {
    let tonight = [endpoint("GET /a", 100.0, 0), EndpointResult { requests: 0, ..endpoint("GET /b", 40.0, 0) }];
    let judgement = judge(&tonight, &nights(10), &Gates::default(), Comparison::Nightly, LoadModel::Open);
    assert_eq!(judgement.outcome, VerdictOutcome::Regressed);
    let missing = judgement.findings.iter().find(|f| f.metric == "requests").unwrap();
    assert_eq!((missing.endpoint.as_str(), missing.baseline_value), ("GET /b", Some(10_000.0)));
    let only_a = judge(&tonight[..1], &nights(10), &Gates::default(), Comparison::Nightly, LoadModel::Open);
    assert!(only_a.findings.iter().any(|f| f.endpoint == "GET /b" && f.outcome == FindingOutcome::Regression));
    assert_eq!(missing.reason, "no requests tonight; the latest baseline run served 10000 requests");
}

#[test]
fn a_push_class_that_fell_silent_is_said_to_have_no_messages() {
    // A WebSocket push class is counted, not timed: its figures are all 0.
    let pushes = |count| EndpointResult { endpoint: "WS push: cursor".into(), requests: count, ..Default::default() };
    let baseline: Vec<Vec<EndpointResult>> = nights(10)
        .into_iter()
        .map(|mut night| {
            night.push(pushes(3_200));
            night
        })
        .collect();
    let tonight = [endpoint("GET /a", 100.0, 0), endpoint("GET /b", 40.0, 0)];
    let judgement = judge(&tonight, &baseline, &Gates::default(), Comparison::Nightly, LoadModel::Open);
    let silent = judgement.findings.iter().find(|f| f.endpoint == "WS push: cursor").expect("named");
    assert_eq!(silent.reason, "no messages tonight; the latest baseline run counted 3200");
}

#[test]
fn the_summary_counts_what_it_could_not_judge() {
    let finding = |outcome| Finding {
        endpoint: "api-host".into(),
        metric: "CPU busy".into(),
        outcome,
        baseline_value: None,
        candidate_value: 0.4,
        delta_pct: None,
        limit: None,
        interval: None,
        p_value: None,
        reason: "inconclusive: 0 baseline nights kept this series, at least 5 needed".into(),
    };
    let findings = [finding(FindingOutcome::NoChange), finding(FindingOutcome::Inconclusive)];
    // A telemetry series new last night is not counted as judged.
    assert_eq!(counted_findings(VerdictOutcome::Passed, &findings), "passed: 1 unchanged, 1 inconclusive");
    assert_eq!(counted_findings(VerdictOutcome::Passed, &findings[..1]), "passed: 1 unchanged");
}

#[test]
fn one_named_run_is_compared_by_effect_alone() {
    let judge_one = |p95| {
        let tonight = [endpoint("GET /a", p95, 0), endpoint("GET /b", 40.0, 0)];
        judge(&tonight, &nights(1), &Gates::default(), Comparison::OneRun, LoadModel::Open)
    };
    let slower = judge_one(115.0);
    assert_eq!(slower.outcome, VerdictOutcome::Regressed);
    assert!(slower.findings.iter().any(|f| f.metric == "p95" && f.outcome == FindingOutcome::Regression));
    let close = judge_one(105.0);
    assert_eq!(close.outcome, VerdictOutcome::Passed, "{:#?}", close.findings);
}
