//! Fills a SQLite database for `ci/bench-dashboard.sh`: three years of nightly runs of one scenario with 20
//! endpoints, each judged (a verdict with a finding per endpoint × metric), one night in 60 regressed on one
//! endpoint with an episode opened and resolved the next night, and per-second timelines (10 minutes) for the
//! last 30 runs. Goes through the real store.
//!
//!     cargo run --release --example bench_fill -- /tmp/bench.db

use std::collections::BTreeMap;

use chrono::{Duration, Utc};
use degrade::model::{
    EndpointResult, Finding, FindingOutcome, Intervals, LoadSummary, NewRun, NewVerdict, OVERALL_ENDPOINT, RunResults,
    RunStatus, TimelinePoint, VerdictOutcome,
};
use degrade::store::{DatabaseUrl, NewEpisode, Store};

const NIGHTS: i64 = 3 * 365;
const ENDPOINTS: usize = 20;
const TIMELINE_RUNS: i64 = 30;
const TIMELINE_SECONDS: i64 = 600;
/// One night in this many regresses, on one endpoint.
const REGRESSION_EVERY: i64 = 60;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let path = std::env::args().nth(1).ok_or_else(|| anyhow::anyhow!("usage: bench_fill DB_PATH"))?;
    let store = Store::connect(&DatabaseUrl::Sqlite(path.into())).await?;
    let names: Vec<String> = (0..ENDPOINTS).map(|i| format!("GET /resource{i}/{{id}}")).collect();
    let first = Utc::now() - Duration::days(NIGHTS);
    let mut open_episode = None;
    for night in 0..NIGHTS {
        let started_at = first + Duration::days(night);
        let run = NewRun {
            scenario: "bench".into(),
            build_id: Some(format!("1.{}.{}", night / 30, night % 30)),
            seed: night,
            scenario_hash: "bench".into(),
            scenario_source: None,
            deploy_output: None,
            started_at,
            confirms: None,
            judged_against: None,
            reshape: None,
        };
        let id = store.create_run(&run).await?;
        let wobble = 1.0 + ((night * 7919) % 41) as f64 / 400.0;
        let regressed = (night % REGRESSION_EVERY == REGRESSION_EVERY - 1).then_some(night as usize % ENDPOINTS);
        let mut endpoints: Vec<EndpointResult> = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let slower = if regressed == Some(i) { 1.5 } else { 1.0 };
                endpoint(name, (20.0 + i as f64 * 5.0) * wobble * slower)
            })
            .collect();
        endpoints.push(endpoint(OVERALL_ENDPOINT, 60.0 * wobble));
        let timeline = if night >= NIGHTS - TIMELINE_RUNS { timeline(&names) } else { Vec::new() };
        let results = RunResults {
            status: RunStatus::Finished,
            finished_at: started_at + Duration::minutes(10),
            validity_reasons: vec![],
            load_summary: LoadSummary::default(),
            endpoints,
            timeline,
        };
        store.finish_run(id, &results).await?;
        store.save_verdict(id, &verdict(&names, regressed, started_at)).await?;
        if let Some(episode) = open_episode.take() {
            store.resolve_episode(episode, Some(id), started_at, &[]).await?;
        }
        if let Some(i) = regressed {
            let episode = NewEpisode {
                scenario: "bench".into(),
                kind: "regression".into(),
                run_id: Some(id),
                last_good_run_id: Some(id - 1),
                summary: format!("regressed: {} p95 +50.0 %", names[i]),
                at: started_at,
            };
            open_episode = store.open_episode(&episode, |_| Vec::new()).await?;
        }
    }
    store.close().await;
    println!("filled: {NIGHTS} runs x {ENDPOINTS} endpoints, timelines for the last {TIMELINE_RUNS}");
    Ok(())
}

/// A night's verdict: every endpoint × metric unchanged but the regressed endpoint's p95.
fn verdict(names: &[String], regressed: Option<usize>, at: chrono::DateTime<Utc>) -> NewVerdict {
    let findings: Vec<Finding> = names
        .iter()
        .enumerate()
        .flat_map(|(i, name)| {
            ["p50", "p95", "p99", "error_rate"].map(|metric| {
                let worse = regressed == Some(i) && metric == "p95";
                Finding {
                    endpoint: name.clone(),
                    metric: metric.into(),
                    outcome: if worse { FindingOutcome::Regression } else { FindingOutcome::NoChange },
                    baseline_value: Some(20.0),
                    candidate_value: if worse { 30.0 } else { 20.2 },
                    delta_pct: Some(if worse { 50.0 } else { 1.0 }),
                    limit: Some(22.0),
                    interval: None,
                    p_value: Some(if worse { 1e-6 } else { 0.6 }),
                    reason: "within the night-to-night noise of 7 nights".into(),
                }
            })
        })
        .collect();
    NewVerdict {
        baseline_spec: "last-7d".into(),
        baseline_run_ids: Vec::new(),
        outcome: if regressed.is_some() { VerdictOutcome::Regressed } else { VerdictOutcome::Passed },
        summary: if regressed.is_some() { "regressed: 1 regression, 79 unchanged" } else { "passed: 80 unchanged" }
            .into(),
        created_at: at,
        findings,
    }
}

fn endpoint(name: &str, p95_ms: f64) -> EndpointResult {
    let us = (p95_ms * 1000.0) as i64;
    EndpointResult {
        endpoint: name.to_owned(),
        requests: 6000,
        errors: 2,
        rate: 10.0,
        p50_us: us / 2,
        p75_us: us * 3 / 4,
        p90_us: us * 9 / 10,
        p95_us: us,
        p99_us: us * 2,
        p999_us: us * 3,
        max_us: us * 4,
        mean_us: us as f64 / 1.8,
        errors_by_class: BTreeMap::from([("http_5xx".to_owned(), 2)]),
        error_samples: BTreeMap::new(),
        intervals: Intervals::default(),
        histogram: vec![0; 64],
    }
}

fn timeline(names: &[String]) -> Vec<TimelinePoint> {
    names
        .iter()
        .flat_map(|name| {
            (0..TIMELINE_SECONDS).map(move |s| TimelinePoint {
                endpoint: name.clone(),
                elapsed_s: s,
                requests: 10,
                errors: 0,
                p50_us: 20_000 + s,
                p99_us: 80_000 + s,
                max_us: 100_000,
                errors_by_class: BTreeMap::new(),
            })
        })
        .collect()
}
