//! The server's side judged beside the client's: whole runs through `judge_with_telemetry`.

use super::*;
use crate::analysis::judge::{Comparison, judge_with_telemetry};
use crate::model::{EndpointResult, LoadModel, SeriesSummary, SourceTelemetry, TelemetryStatus, VerdictOutcome, Worse};

fn endpoint(name: &str, p95_ms: f64) -> EndpointResult {
    let us = (p95_ms * 1000.0) as i64;
    EndpointResult {
        endpoint: name.into(),
        requests: 10_000,
        rate: 50.0,
        p50_us: us / 2,
        p75_us: us * 3 / 4,
        p95_us: us,
        p99_us: us * 2,
        ..EndpointResult::default()
    }
}

const WOBBLE: [f64; 10] = [1.0, 1.02, 0.98, 1.01, 0.99, 1.015, 0.985, 1.0, 1.01, 0.99];

/// A night whose `api` source kept CPU (a counter: `cpu` CPU s per 1,000 requests) and a hit ratio (a gauge
/// share where lower is worse).
fn night(cpu: Option<f64>, hit_ratio: f64) -> RunTelemetry {
    let series = |name: &str, kind, unit: &str, worse, summary: Option<SeriesSummary>| SeriesTelemetry {
        name: name.into(),
        unit: unit.into(),
        count_unit: (kind == SeriesKind::Counter).then(|| "CPU s".to_owned()),
        kind,
        worse,
        status: if summary.is_some() { TelemetryStatus::Complete } else { TelemetryStatus::Missing },
        reason: summary.is_none().then(|| "no sample matched `process_cpu_seconds_total` in any scrape".to_owned()),
        points: Vec::new(),
        summary,
    };
    let cpu_summary = cpu.map(|c| SeriesSummary { mean: c / 20.0, max: c / 10.0, per_1000_requests: Some(c) });
    let hits = SeriesSummary { mean: hit_ratio, max: hit_ratio, per_1000_requests: None };
    RunTelemetry {
        sources: vec![SourceTelemetry {
            name: "api".into(),
            status: TelemetryStatus::Complete,
            reason: None,
            scrapes: 10,
            failed_scrapes: 0,
            series: vec![
                series("CPU", SeriesKind::Counter, "CPU s/s", Worse::Higher, cpu_summary),
                series("hit ratio", SeriesKind::Gauge, "share", Worse::Lower, Some(hits)),
            ],
        }],
    }
}

struct Nights {
    results: Vec<Vec<EndpointResult>>,
    telemetry: Vec<RunTelemetry>,
}

fn nights(count: usize) -> Nights {
    Nights {
        results: (0..count).map(|n| vec![endpoint("GET /a", 100.0 * WOBBLE[n % 10])]).collect(),
        telemetry: (0..count).map(|n| night(Some(0.41 * WOBBLE[(n + 3) % 10]), 0.95 * WOBBLE[(n + 5) % 10])).collect(),
    }
}

fn judged(tonight: &RunTelemetry, before: &Nights, gates: &Gates) -> crate::analysis::judge::Judgement {
    let telemetry = TelemetryNights { tonight: Some(tonight), baseline: &before.telemetry };
    let results = [endpoint("GET /a", 101.0)];
    judge_with_telemetry(&results, &before.results, telemetry, gates, Comparison::Nightly, LoadModel::Open)
}

fn outcome_of<'a>(judgement: &'a crate::analysis::judge::Judgement, metric: &str) -> &'a Finding {
    judgement.findings.iter().find(|f| f.metric == metric).unwrap_or_else(|| panic!("{metric}: {judgement:#?}"))
}

#[test]
fn twice_the_cpu_per_request_is_a_regression_with_the_latency_unchanged() {
    let judgement = judged(&night(Some(0.82), 0.95), &nights(10), &Gates::default());
    assert_eq!(judgement.outcome, VerdictOutcome::Regressed, "{judgement:#?}");
    let cpu = outcome_of(&judgement, "CPU per 1,000 requests (CPU s)");
    assert_eq!((cpu.endpoint.as_str(), cpu.outcome), ("api", FindingOutcome::Regression));
    assert!((cpu.baseline_value.unwrap() - 0.41).abs() < 0.01, "{cpu:?}");
    assert!(cpu.reason.contains("tests)"), "{}", cpu.reason);
    let failing: Vec<&str> =
        judgement.findings.iter().filter(|f| f.outcome.is_failure()).map(|f| f.metric.as_str()).collect();
    assert_eq!(failing, ["CPU per 1,000 requests (CPU s)"], "the latency held: {judgement:#?}");
    assert_eq!(outcome_of(&judgement, "hit ratio mean (share)").outcome, FindingOutcome::NoChange);
}

#[test]
fn an_ordinary_night_passes_and_telemetry_counts_in_the_family() {
    let judgement = judged(&night(Some(0.415), 0.951), &nights(10), &Gates::default());
    assert_eq!(judgement.outcome, VerdictOutcome::Passed, "{judgement:#?}");
    // GET /a: p50, p95, p99 with two slow shares, and errors (6); the two series.
    assert!(outcome_of(&judgement, "CPU per 1,000 requests (CPU s)").reason.contains("the run's 8 tests"));
}

#[test]
fn a_falling_hit_ratio_is_worse_and_a_rising_one_better() {
    let fell = judged(&night(Some(0.41), 0.6), &nights(10), &Gates::default());
    assert_eq!(outcome_of(&fell, "hit ratio mean (share)").outcome, FindingOutcome::Regression, "{fell:#?}");
    let less_cpu = judged(&night(Some(0.2), 0.95), &nights(10), &Gates::default());
    let cpu = outcome_of(&less_cpu, "CPU per 1,000 requests (CPU s)");
    assert_eq!(cpu.outcome, FindingOutcome::Improvement, "{cpu:?}");
}

#[test]
fn a_series_missing_tonight_is_said_and_not_judged_and_one_new_is_inconclusive() {
    let judgement = judged(&night(None, 0.95), &nights(10), &Gates::default());
    assert_eq!(judgement.outcome, VerdictOutcome::Passed, "{judgement:#?}");
    assert!(judgement.findings.iter().all(|f| !f.metric.starts_with("CPU")), "{judgement:#?}");
    assert!(
        judgement.summary.ends_with(
            "; telemetry missing tonight, not judged: api CPU (no sample matched `process_cpu_seconds_total` in any \
             scrape)"
        ),
        "{}",
        judgement.summary
    );
    let mut before = nights(10);
    for n in before.telemetry.iter_mut().skip(4) {
        n.sources[0].series.remove(0);
    }
    let judgement = judged(&night(Some(2.0), 0.95), &before, &Gates::default());
    let cpu = outcome_of(&judgement, "CPU per 1,000 requests (CPU s)");
    assert_eq!(cpu.outcome, FindingOutcome::Inconclusive, "{cpu:?}");
    assert_eq!(cpu.reason, "inconclusive: 4 baseline nights kept this series, at least 5 needed");
}

/// An exporter that died a third of the way in: its figures are the night's first third, not the night's.
#[test]
fn a_source_that_failed_more_than_a_tenth_of_its_scrapes_is_said_and_not_judged() {
    let partial = |failed: u32| {
        let mut tonight = night(Some(0.82), 0.95);
        let source = &mut tonight.sources[0];
        let why = format!("{failed} of 13 scrapes failed; the first: connection refused");
        (source.status, source.failed_scrapes, source.scrapes) = (TelemetryStatus::Partial, failed, 13);
        source.reason = Some(why.clone());
        for series in &mut source.series {
            (series.status, series.reason) = (TelemetryStatus::Partial, Some(why.clone()));
        }
        tonight
    };
    let judgement = judged(&partial(8), &nights(10), &Gates::default());
    assert_eq!(judgement.outcome, VerdictOutcome::Passed, "{judgement:#?}");
    assert!(judgement.findings.iter().all(|f| f.endpoint != "api"), "{judgement:#?}");
    let said =
        "; telemetry missing tonight, not judged: api (8 of 13 scrapes failed: read over too little of the night)";
    assert!(judgement.summary.ends_with(said), "{}", judgement.summary);
    // One failed scrape of thirteen is a blip: judged.
    let judgement = judged(&partial(1), &nights(10), &Gates::default());
    assert_eq!(judgement.outcome, VerdictOutcome::Regressed, "{judgement:#?}");
    // A Prometheus source whose one query of two was refused: the other series, short of one step in its own
    // words, is judged.
    let mut queried = partial(1);
    let source = &mut queried.sources[0];
    (source.failed_scrapes, source.scrapes) = (1, 2);
    source.reason = Some("1 of 2 queries gave nothing; the first: parse error".into());
    source.series[0].reason = Some("no value at 1 of 5 steps".into());
    let judgement = judged(&queried, &nights(10), &Gates::default());
    assert_eq!(judgement.outcome, VerdictOutcome::Regressed, "{judgement:#?}");
}

#[test]
fn limits_are_gates_even_without_history() {
    let gates = Gates {
        telemetry_limits: vec![
            TelemetryLimit { source: "api".into(), series: "CPU".into(), max: Some(0.03), min: None },
            TelemetryLimit { source: "api".into(), series: "hit ratio".into(), max: None, min: Some(0.9) },
        ],
        ..Gates::default()
    };
    let judgement = judged(&night(Some(0.82), 0.95), &nights(2), &gates);
    assert_eq!(judgement.outcome, VerdictOutcome::Regressed, "{judgement:#?}");
    let ceiling = outcome_of(&judgement, "CPU ceiling (CPU s/s)");
    assert_eq!((ceiling.outcome, ceiling.limit), (FindingOutcome::GateBreached, Some(0.03)));
    assert_eq!(ceiling.reason, "CPU mean 0.0410 CPU s/s over the measured stages is over the limit of 0.0300 CPU s/s");
    let floor = outcome_of(&judgement, "hit ratio floor (share)");
    assert_eq!(floor.outcome, FindingOutcome::GatePassed);
    assert!(judgement.summary.starts_with("regressed: 1 gate breached"), "{}", judgement.summary);
}

#[test]
fn against_one_named_run_the_minimum_effect_alone_decides() {
    let before = nights(1);
    let one_run = |cpu: f64| {
        let tonight = night(Some(cpu), 0.95);
        let telemetry = TelemetryNights { tonight: Some(&tonight), baseline: &before.telemetry };
        let results = [endpoint("GET /a", 100.0)];
        judge_with_telemetry(
            &results,
            &before.results,
            telemetry,
            &Gates::default(),
            Comparison::OneRun,
            LoadModel::Open,
        )
    };
    let more = one_run(0.41 * 1.15);
    let cpu = outcome_of(&more, "CPU per 1,000 requests (CPU s)");
    assert_eq!((cpu.outcome, cpu.baseline_value), (FindingOutcome::Regression, Some(0.41 * WOBBLE[3])), "{cpu:?}");
    let close = one_run(0.41 * 1.05);
    assert_eq!(outcome_of(&close, "CPU per 1,000 requests (CPU s)").outcome, FindingOutcome::NoChange);
}

#[test]
fn a_bar_raised_by_few_nights_says_so_and_one_of_ten_nights_does_not() {
    let few = judged(&night(Some(0.42), 0.95), &nights(3), &Gates { min_runs: 3, ..Gates::default() });
    let cpu = outcome_of(&few, "CPU per 1,000 requests (CPU s)");
    assert!(
        cpu.reason.contains("; so few nights tell the noise only roughly, which raises the bar from 3."),
        "{}",
        cpu.reason
    );
    let usual = judged(&night(Some(0.42), 0.95), &nights(10), &Gates::default());
    let cpu = outcome_of(&usual, "CPU per 1,000 requests (CPU s)");
    assert!(!cpu.reason.contains("tell the noise only roughly"), "{}", cpu.reason);
}
