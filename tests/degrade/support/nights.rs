//! Nights stored through the real store, as the judge and the gate read them: twelve recent nights at
//! 02:00 UTC, a steady `POST /cards`, a `GET /boards/{id}` whose p95 the test sets, and a ±2 % wobble.

use chrono::{DateTime, Duration, Utc};
use degrade::config::Config;
use degrade::model::BaselineSpec;
use degrade::model::{EndpointResult, LoadSummary, NewRun, OVERALL_ENDPOINT, RunResults, RunStatus};
use degrade::pipeline::alerting;
use degrade::pipeline::judge_run::{IfRegressed, judge_run};
use degrade::report::CheckReport;
use degrade::store::Store;

/// Night-to-night wobble of about ±2 %, the same every time.
pub const WOBBLE: [f64; 10] = [1.0, 1.02, 0.98, 1.01, 0.99, 1.015, 0.985, 1.0, 1.01, 0.99];

/// 02:00 UTC on the n-th of twelve recent nights (recent, so `last-7d` windows reach them).
pub fn night(n: i64) -> DateTime<Utc> {
    let today = Utc::now().date_naive().and_hms_opt(2, 0, 0).unwrap().and_utc();
    today - Duration::days(12) + Duration::days(n)
}

pub fn endpoint(name: &str, p95_ms: f64) -> EndpointResult {
    let us = (p95_ms * 1000.0) as i64;
    EndpointResult {
        endpoint: name.into(),
        requests: 12_000,
        errors: 0,
        rate: 20.0,
        p50_us: us / 2,
        p75_us: us * 3 / 4,
        p90_us: us * 9 / 10,
        p95_us: us,
        p99_us: us * 2,
        p999_us: us * 3,
        max_us: us * 4,
        mean_us: us as f64 / 1.8,
        ..EndpointResult::default()
    }
}

/// Night `n` of `scenario` as it starts: build 1.0.n, one workload.
pub fn new_run(scenario: &str, n: i64) -> NewRun {
    NewRun {
        scenario: scenario.into(),
        build_id: Some(format!("1.0.{n}")),
        seed: n,
        scenario_hash: "h".into(),
        scenario_source: None,
        deploy_output: None,
        started_at: night(n),
        confirms: None,
        judged_against: None,
        reshape: None,
    }
}

/// Stores one night of `scenario` whose `GET /boards/{id}` p95 is `boards_ms` and whose other endpoint is
/// steady; returns the run id.
pub async fn store_night(store: &Store, scenario: &str, n: i64, boards_ms: f64, status: RunStatus) -> i64 {
    store_night_under(store, scenario, n, boards_ms, status, LoadSummary::default()).await
}

/// `store_night`, with the load generator's figures given.
pub async fn store_night_under(
    store: &Store,
    scenario: &str,
    n: i64,
    boards_ms: f64,
    status: RunStatus,
    load_summary: LoadSummary,
) -> i64 {
    let cards_ms = 60.0 * WOBBLE[(n as usize + 4) % WOBBLE.len()];
    store_routes_night(store, scenario, n, (boards_ms, cards_ms), status, load_summary).await
}

/// `store_night`, with `POST /cards`' p95 given too (a night on which both routes moved).
pub async fn store_both_routes_night(store: &Store, scenario: &str, n: i64, boards_ms: f64, cards_ms: f64) -> i64 {
    store_routes_night(store, scenario, n, (boards_ms, cards_ms), RunStatus::Finished, LoadSummary::default()).await
}

async fn store_routes_night(
    store: &Store,
    scenario: &str,
    n: i64,
    (boards_ms, cards_ms): (f64, f64),
    status: RunStatus,
    load_summary: LoadSummary,
) -> i64 {
    let id = store.create_run(&new_run(scenario, n)).await.unwrap();
    finish_routes_night(store, id, n, (boards_ms, cards_ms), status, load_summary).await
}

/// A smoke run of `scenario` (`reshape` says how, as `--duration 2s`): another workload series, the usual
/// figures; returns the run id.
pub async fn store_smoke_night(store: &Store, scenario: &str, n: i64, reshape: &str) -> i64 {
    let run = NewRun { scenario_hash: format!("h {reshape}"), reshape: Some(reshape.into()), ..new_run(scenario, n) };
    let id = store.create_run(&run).await.unwrap();
    finish_routes_night(store, id, n, (100.0, 60.0), RunStatus::Finished, LoadSummary::default()).await
}

/// Finishes run `id`, already created, as night `n` with the two routes' p95 given; returns the run id.
pub async fn finish_routes_night(
    store: &Store,
    id: i64,
    n: i64,
    (boards_ms, cards_ms): (f64, f64),
    status: RunStatus,
    load_summary: LoadSummary,
) -> i64 {
    let wobble = WOBBLE[n as usize % WOBBLE.len()];
    let results = RunResults {
        status,
        finished_at: night(n) + Duration::minutes(5),
        validity_reasons: if status == RunStatus::Invalid { vec!["dropped 12 % of arrivals".into()] } else { vec![] },
        load_summary,
        endpoints: vec![
            endpoint(OVERALL_ENDPOINT, 80.0 * wobble),
            endpoint("GET /boards/{id}", boards_ms),
            endpoint("POST /cards", cards_ms),
        ],
        timeline: vec![],
    };
    store.finish_run(id, &results).await.unwrap();
    id
}

/// Judges stored run `id` against the last seven days, opens or resolves its alert episodes and stamps it
/// alerted, as the nightly chain does after a run (without confirmation: a regression stands).
pub async fn judge_and_alert(store: &Store, config: &Config, id: i64) -> CheckReport {
    let run = store.find_run(id).await.unwrap().unwrap();
    let spec = BaselineSpec::LastDays(7);
    let report = judge_run(store, config, &run, &spec, IfRegressed::Stands, Utc::now()).await.unwrap();
    alerting::after_judgement(store, config, &report, Utc::now()).await.unwrap();
    store.mark_alerted(id, Utc::now()).await.unwrap();
    report
}

/// A capacity search that held `capacity` req/s and left the zone 5 % above it, on the p75 of the boards route.
pub fn capacity_search(capacity: f64) -> degrade::model::CapacityResult {
    degrade::model::CapacityResult {
        capacity: Some(capacity),
        first_out: Some(capacity * 1.05),
        breach: Some(degrade::model::ZoneBreach {
            gate: degrade::model::ZoneGate::P75,
            endpoint: "GET /boards/{id}".into(),
            value: 240.0,
            limit: 200.0,
        }),
        ended: degrade::model::SearchEnd::Found,
        search_secs: 120.0,
        steps: vec![],
        zone: None,
    }
}
