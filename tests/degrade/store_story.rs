//! The storage story: what a season of nightly runs does to the store, told once and run on both backends.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, TimeZone, Utc};
use degrade::model::{
    EndpointResult, Finding, FindingOutcome, Interval, Intervals, LoadSummary, Metric, NewRun, NewVerdict,
    OVERALL_ENDPOINT, RunResults, RunStatus, TimelinePoint, VerdictOutcome,
};
use degrade::store::{LeftBehind, Store, StoreError, TrendSpan};

use crate::support::TestDb;

#[tokio::test]
async fn story_on_sqlite() {
    let db = TestDb::sqlite();
    storage_story(&db).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn story_on_postgres() {
    let db = TestDb::postgres().await;
    storage_story(&db).await;
}

#[tokio::test]
async fn concurrent_writers_on_sqlite() {
    let db = TestDb::sqlite();
    concurrent_writers(&db).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn concurrent_writers_on_postgres() {
    let db = TestDb::postgres().await;
    concurrent_writers(&db).await;
}

pub(crate) fn night(n: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 2, 0, 0).unwrap() + Duration::days(n)
}

pub(crate) fn new_run(n: i64) -> NewRun {
    NewRun {
        scenario: "checkout".into(),
        build_id: Some(format!("1.0.{n}")),
        seed: 42 + n,
        scenario_hash: "abc123".into(),
        scenario_source: Some("[load]\nmodel = \"open\"\n".into()),
        deploy_output: None,
        started_at: night(n),
        confirms: None,
        judged_against: None,
        reshape: None,
    }
}

/// An endpoint whose p95 is `p95_ms`; the other figures are derived so every column is distinct.
pub(crate) fn endpoint(name: &str, p95_ms: i64) -> EndpointResult {
    let p95 = p95_ms * 1000;
    EndpointResult {
        endpoint: name.into(),
        requests: 6000,
        errors: 3,
        rate: 100.0,
        p50_us: p95 / 3,
        p75_us: p95 / 2,
        p90_us: p95 * 4 / 5,
        p95_us: p95,
        p99_us: p95 * 2,
        p999_us: p95 * 3,
        max_us: p95 * 4,
        mean_us: p95 as f64 / 2.5,
        errors_by_class: BTreeMap::from([("http_5xx".into(), 2), ("timeout".into(), 1)]),
        error_samples: BTreeMap::from([("http_5xx".into(), vec!["503 Service Unavailable".into()])]),
        intervals: Intervals {
            p50_us: Some(Interval { lo: (p95 / 3 - 10) as f64, hi: Some((p95 / 3 + 12) as f64) }),
            p95_us: Some(Interval { lo: (p95 - 100) as f64, hi: Some((p95 + 150) as f64) }),
            p99_us: Some(Interval { lo: (p95 * 2 - 900) as f64, hi: None }),
            error_pct: Some(Interval { lo: 0.017, hi: Some(0.146) }),
        },
        histogram: vec![0x1c, 0x84, 0x93, 0x14, n_bytes(p95_ms)],
    }
}

pub(crate) fn n_bytes(n: i64) -> u8 {
    (n % 251) as u8
}

/// 1,200 timeline points: more than one insert statement's worth, so chunking is exercised.
pub(crate) fn timeline() -> Vec<TimelinePoint> {
    ["GET /boards/{id}", "POST /cards"]
        .into_iter()
        .flat_map(|name| {
            (0..600).map(move |s| TimelinePoint {
                endpoint: name.into(),
                elapsed_s: s,
                requests: 100,
                errors: i64::from(s % 100 == 0),
                p50_us: 20_000 + s,
                p99_us: 90_000 + s,
                max_us: 120_000 + s,
                errors_by_class: BTreeMap::from([("timeout".into(), i64::from(s % 100 == 0))]),
            })
        })
        .collect()
}

pub(crate) fn results(n: i64, p95_ms: i64, status: RunStatus, reasons: &[&str]) -> RunResults {
    RunResults {
        status,
        finished_at: night(n) + Duration::minutes(10),
        validity_reasons: reasons.iter().map(|r| (*r).to_owned()).collect(),
        load_summary: LoadSummary {
            model: "open".into(),
            target_rate: 100.0,
            achieved_rate: 99.8,
            dropped: 0,
            schedule_lag_p99_us: 800,
            generator_cpu_pct: 31.5,
            machine_cpu_busy_pct: Some(12.5),
            machine_cpu_stolen_pct: Some(0.4),
            machine_cores: Some(2),
            machine_echo_p50_us: Some(41.0),
            machine_echo_p90_us: Some(63.0),
            measured_secs: 600.0,
            // A replayed tape's coverage is kept with the run, as the run page shows it.
            tape: Some(degrade::model::TapeCoverage {
                file: "access.tape.gz".into(),
                digest: "00ff00ff00ff00ff".into(),
                requests: 20_000,
                distinct: 12_345,
                planned_requests: Some(6000.0),
                realism: Some("this run sends 6,000 requests, 30 % of the tape's 20,000".into()),
                routes: vec![degrade::model::RouteCoverage {
                    route: "GET /boards/{id}".into(),
                    requests: 20_000,
                    distinct_ids: 812,
                }],
            }),
            // So are the skewed draws' predicted and observed shares.
            skew: vec![degrade::model::SkewObserved {
                site: "boards".into(),
                draw: "zipf".into(),
                keys: 1000,
                predicted_hottest: 0.134,
                predicted_top_percent: 0.388,
                draws: 59_880,
                observed_hottest: 0.1337,
                observed_top_percent: 0.3902,
            }],
            // What an HTTP/2 run negotiated is kept with it, to compare with its baseline's.
            connection: Some(degrade::model::ConnectionReport {
                negotiated: degrade::model::WireProtocol::H2,
                connections_opened: 2,
                max_concurrent_streams: Some(100),
                steps_only: false,
            }),
        },
        endpoints: vec![
            endpoint("POST /cards", p95_ms * 2),
            endpoint(OVERALL_ENDPOINT, p95_ms),
            endpoint("GET /boards/{id}", p95_ms),
        ],
        timeline: timeline(),
    }
}

async fn storage_story(db: &TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    assert_eq!(store.schema_version().await.unwrap(), Store::latest_known_version());

    // Five nights: night 3 is invalid (the generator fell behind), the others finished normally.
    let mut ids = Vec::new();
    for n in 0..5 {
        let id = store.create_run(&new_run(n)).await.unwrap();
        let (status, reasons): (_, &[&str]) = if n == 3 {
            (RunStatus::Invalid, &["schedule lag p99 2.1 s exceeds 100 ms"])
        } else {
            (RunStatus::Finished, &[])
        };
        store.finish_run(id, &results(n, 100 + n * 10, status, reasons)).await.unwrap();
        ids.push(id);
    }

    // A time window holds exactly the runs that started in it, oldest first.
    let window = store.runs_between("checkout", night(1), night(4)).await.unwrap();
    assert_eq!(window.iter().map(|r| r.id).collect::<Vec<_>>(), ids[1..4]);
    assert_eq!(window[2].status, RunStatus::Invalid);
    assert_eq!(window[2].validity_reasons, ["schedule lag p99 2.1 s exceeds 100 ms"]);
    assert!(store.runs_between("other", night(0), night(9)).await.unwrap().is_empty());

    // The last N runs, newest first.
    let last = store.last_runs("checkout", 2).await.unwrap();
    assert_eq!(last.iter().map(|r| r.id).collect::<Vec<_>>(), [ids[4], ids[3]]);

    // One run with all it measured, overall row first, every figure as stored.
    let detail = store.run_detail(ids[2]).await.unwrap().unwrap();
    assert_eq!(detail.run.build_id.as_deref(), Some("1.0.2"));
    assert_eq!(detail.run.seed, 44);
    assert_eq!(detail.run.finished_at, Some(night(2) + Duration::minutes(10)));
    assert_eq!(detail.run.load_summary.as_ref().unwrap().generator_cpu_pct, 31.5);
    let tape = detail.run.load_summary.as_ref().unwrap().tape.as_ref().expect("the tape's coverage is stored");
    assert_eq!((tape.distinct, tape.routes[0].distinct_ids), (12_345, 812));
    let names: Vec<_> = detail.endpoints.iter().map(|e| e.endpoint.as_str()).collect();
    assert_eq!(names, [OVERALL_ENDPOINT, "GET /boards/{id}", "POST /cards"]);
    assert_eq!(detail.endpoints[1], endpoint("GET /boards/{id}", 120));
    assert!(store.run_detail(999_999).await.unwrap().is_none());

    let points = store.timeline(ids[2]).await.unwrap();
    assert_eq!(points.len(), 1200);
    assert!(points == timeline(), "every second of every endpoint comes back as stored, in order");

    // The trend of one endpoint metric, in milliseconds, with each run's status for the chart.
    let trend = store.trend("checkout", "GET /boards/{id}", Metric::P95, night(0), night(5)).await.unwrap();
    let values: Vec<f64> = trend.iter().map(|p| p.value).collect();
    assert_eq!(values, [100.0, 110.0, 120.0, 130.0, 140.0]);
    assert_eq!(trend[3].status, RunStatus::Invalid);
    assert_eq!(trend[1].build_id.as_deref(), Some("1.0.1"));
    let errors = store.trend("checkout", OVERALL_ENDPOINT, Metric::ErrorRate, night(0), night(1)).await.unwrap();
    assert_eq!(errors[0].value, 0.05);

    crash_story(&store, &db.url).await;
    nothing_half_written(&store).await;
    verdict_story(&store, ids[4]).await;
    capacity_round_trip(&store, ids[1], ids[2]).await;

    // Reconnecting runs the migrations again harmlessly and finds everything where it was.
    store.close().await;
    let reopened = Store::connect(&db.url).await.unwrap();
    assert_eq!(reopened.last_runs("checkout", 100).await.unwrap().len(), 8);
    reopened.close().await;
}

/// A capacity search stored with the night it ran after, read back figure for figure; the scenario's capacity
/// night over night marks the night whose verdict found the capacity fallen. (The search itself, against a
/// real target, is `tests/nights/capacity.rs`, on SQLite: what depends on the database is here.)
async fn capacity_round_trip(store: &Store, held: i64, fell: i64) {
    use degrade::model::{CapacityResult, CapacityStep, SearchEnd, StepVerdict, ZoneBreach, ZoneGate};
    let breach = ZoneBreach { gate: ZoneGate::P75, endpoint: "POST /cards".into(), value: 412.5, limit: 300.0 };
    let step = |rate: f64, verdict, breach: Option<ZoneBreach>| CapacityStep {
        rate,
        achieved_rate: rate * 0.998,
        holds: 2,
        verdict,
        requests: (rate * 30.0) as i64,
        errors: 3,
        p75_ms: Some(rate / 10.0),
        p95_ms: Some(rate / 5.0),
        p99_ms: (verdict == StepVerdict::Held).then_some(rate / 2.0),
        breach,
        reason: "left the zone: p75 of POST /cards 412.5 ms against 300 ms (+38 %) \u{2014} «held»".into(),
    };
    let found = |capacity: f64| CapacityResult {
        capacity: Some(capacity),
        first_out: Some(capacity * 1.06),
        breach: Some(breach.clone()),
        ended: SearchEnd::Found,
        search_secs: 171.25,
        steps: vec![
            step(capacity, StepVerdict::Held, None),
            step(capacity * 1.06, StepVerdict::Left, Some(breach.clone())),
        ],
        zone: Some("p75 ≤ 300 ms; api CPU ≤ 0.6".into()),
    };
    store.save_capacity(held, &found(4000.0)).await.unwrap();
    store.save_capacity(fell, &found(3100.0)).await.unwrap();
    assert_eq!(store.capacity(held).await.unwrap(), Some(found(4000.0)), "every figure as stored");
    let mut fallen = regressed_on("(all)", night(2) + Duration::minutes(11));
    fallen.findings[0].metric = "capacity".into();
    store.save_verdict(fell, &fallen).await.unwrap();

    let heads = store.capacities(&[fell, 999_999, held]).await.unwrap();
    let without_steps = |capacity| CapacityResult { steps: Vec::new(), ..found(capacity) };
    assert_eq!(heads, [(fell, without_steps(3100.0)), (held, without_steps(4000.0))]);
    let span = TrendSpan { scenario: "checkout", series: "abc123", from: night(0), to: night(9), buckets: 100 };
    let nights: Vec<_> = store.capacity_trend(span).await.unwrap().into_iter().map(|n| (n.run_id, n.fell)).collect();
    assert_eq!(nights, [(held, false), (fell, true)], "oldest first, the fall marked");
}

/// A run left `running` by a crash becomes `aborted` at the next start, or when its scenario is next claimed,
/// and can no longer be finished.
async fn crash_story(store: &Store, url: &degrade::store::DatabaseUrl) {
    let crashed = store.create_run(&new_run(5)).await.unwrap();
    let elsewhere = store.create_run(&NewRun { scenario: "search".into(), ..new_run(5) }).await.unwrap();
    let restarted = Store::connect(url).await.unwrap();
    let unleased = LeftBehind::Unleased(night(6));
    // Whoever claims `checkout` aborts what was left running of it, and only of it.
    assert_eq!(restarted.abort_interrupted_runs(LeftBehind::Claimed("checkout"), night(6)).await.unwrap(), [crashed]);
    assert_eq!(restarted.abort_interrupted_runs(unleased, night(6)).await.unwrap(), [elsewhere]);
    assert!(restarted.abort_interrupted_runs(unleased, night(6)).await.unwrap().is_empty());
    let run = restarted.find_run(crashed).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Aborted);
    assert!(run.failure_reason.unwrap().contains("stopped while the run was under way"));
    let late = restarted.finish_run(crashed, &results(5, 100, RunStatus::Finished, &[])).await;
    assert!(matches!(late, Err(StoreError::RunNotRunning(id)) if id == crashed), "{late:?}");
    let unknown = restarted.finish_run(424_242, &results(5, 100, RunStatus::Finished, &[])).await;
    assert!(matches!(unknown, Err(StoreError::RunNotFound(424_242))), "{unknown:?}");
    restarted.close().await;
}

/// A failure part-way through storing results rolls everything back: the run is still `running`, with no
/// results, and can be stored again.
async fn nothing_half_written(store: &Store) {
    let id = store.create_run(&new_run(6)).await.unwrap();
    let mut broken = results(6, 100, RunStatus::Finished, &[]);
    // The same endpoint twice violates the primary key after the run row and one result were written.
    broken.endpoints.push(endpoint("GET /boards/{id}", 1));
    assert!(store.finish_run(id, &broken).await.is_err());
    let detail = store.run_detail(id).await.unwrap().unwrap();
    assert_eq!(detail.run.status, RunStatus::Running);
    assert!(detail.endpoints.is_empty());
    assert!(store.timeline(id).await.unwrap().is_empty());

    // A NaN figure is refused before anything is written, the same on both backends.
    let mut not_a_number = results(6, 100, RunStatus::Finished, &[]);
    not_a_number.endpoints[1].mean_us = f64::NAN;
    let refused = store.finish_run(id, &not_a_number).await;
    assert!(matches!(&refused, Err(StoreError::NotFinite(what)) if what.contains("mean_us")), "{refused:?}");
    assert_eq!(store.find_run(id).await.unwrap().unwrap().status, RunStatus::Running);

    store.finish_run(id, &results(6, 100, RunStatus::Finished, &[])).await.unwrap();
    assert_eq!(store.run_detail(id).await.unwrap().unwrap().endpoints.len(), 3);

    let failed = store.create_run(&new_run(7)).await.unwrap();
    store.end_run(failed, RunStatus::Failed, "health_url never answered 2xx", night(7)).await.unwrap();
    assert_eq!(
        store.find_run(failed).await.unwrap().unwrap().failure_reason.as_deref(),
        Some("health_url never answered 2xx")
    );
}

/// A verdict is stored with its findings and sets the run's status.
async fn verdict_story(store: &Store, run_id: i64) {
    let finding = Finding {
        endpoint: "GET /boards/{id}".into(),
        metric: "p95".into(),
        outcome: FindingOutcome::Regression,
        baseline_value: Some(110.0),
        candidate_value: 140.0,
        delta_pct: Some(27.3),
        limit: Some(121.0),
        reason: "p95 27.3 % above the baseline (noise ±4 %)".into(),
        interval: Some(Interval { lo: 131.5, hi: Some(149.0) }),
        p_value: Some(1.5e-7),
    };
    let verdict = NewVerdict {
        baseline_spec: "last-7d".into(),
        baseline_run_ids: vec![run_id - 4, run_id - 3, run_id - 2],
        outcome: VerdictOutcome::Regressed,
        summary: "1 regression".into(),
        created_at: night(4) + Duration::minutes(11),
        findings: vec![finding.clone()],
    };
    store.save_verdict(run_id, &verdict).await.unwrap();
    let stored = store.latest_verdict(run_id).await.unwrap().unwrap();
    assert_eq!(stored.findings, [finding]);
    assert_eq!(stored.baseline_run_ids, verdict.baseline_run_ids);
    assert_eq!(stored.created_at, verdict.created_at);
    assert_eq!(store.find_run(run_id).await.unwrap().unwrap().status, RunStatus::Regressed);
    assert!(matches!(store.save_verdict(777_777, &verdict).await, Err(StoreError::RunNotFound(777_777))));
}

/// Several runs stored at once (a CLI `check --run-now` while the server stores a nightly run) all land.
async fn concurrent_writers(db: &TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    let tasks: Vec<_> = (0..8)
        .map(|n| {
            let store = store.clone();
            tokio::spawn(async move {
                let id = store.create_run(&new_run(n)).await.unwrap();
                store.finish_run(id, &results(n, 100, RunStatus::Finished, &[])).await.unwrap();
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let runs = store.last_runs("checkout", 100).await.unwrap();
    assert_eq!(runs.len(), 8);
    assert!(runs.iter().all(|r| r.status == RunStatus::Finished));
    store.close().await;
}

#[tokio::test]
async fn baseline_selection_on_sqlite() {
    baseline_selection(&TestDb::sqlite()).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn baseline_selection_on_postgres() {
    let db = TestDb::postgres().await;
    baseline_selection(&db).await;
}

/// Which runs each baseline spec picks: only valid runs of the same workload that started before the
/// candidate, never the candidate, and a `last-Nd` window that tolerates start-time jitter.
async fn baseline_selection(db: &TestDb) {
    use degrade::model::BaselineSpec;

    let store = Store::connect(&db.url).await.unwrap();
    // Ten nights; night 4 invalid, night 6 ran an edited scenario file, and start times wander: night 2 began
    // at 02:14, the candidate (night 9) at 02:22, so night 2 lies a few minutes beyond exactly 7 days.
    let mut ids = Vec::new();
    for n in 0..10 {
        let mut run = new_run(n);
        run.started_at += Duration::minutes((n * 7) % 41);
        run.build_id = Some(if n < 5 { "1.0".into() } else { "1.1".into() });
        if n == 6 {
            run.scenario_hash = "edited".into();
        }
        let id = store.create_run(&run).await.unwrap();
        let status = if n == 4 { RunStatus::Invalid } else { RunStatus::Finished };
        store.finish_run(id, &results(n, 100, status, &[])).await.unwrap();
        ids.push(id);
    }
    let later_same_build = {
        let mut run = new_run(12);
        run.build_id = Some("1.0".into());
        let id = store.create_run(&run).await.unwrap();
        store.finish_run(id, &results(12, 100, RunStatus::Finished, &[])).await.unwrap();
        id
    };
    let candidate = store.find_run(ids[9]).await.unwrap().unwrap();
    let picked = |spec: &str| {
        let spec: BaselineSpec = spec.parse().unwrap();
        let store = store.clone();
        let candidate = candidate.clone();
        async move { store.baseline_runs(&candidate, &spec).await.unwrap().iter().map(|r| r.id).collect::<Vec<_>>() }
    };
    // Nights 2..=8 started within 7 days (give or take their jitter); 4 is invalid and 6 another workload.
    assert_eq!(picked("last-7d").await, [ids[2], ids[3], ids[5], ids[7], ids[8]]);
    assert_eq!(picked("last-3").await, [ids[5], ids[7], ids[8]]);
    // A build's runs before the candidate only: the later run of build 1.0 is not in it.
    assert_eq!(picked("build:1.0").await, [ids[0], ids[1], ids[2], ids[3]]);
    assert!(!picked("build:1.0").await.contains(&later_same_build));
    assert_eq!(picked(&format!("run:{}", ids[1])).await, [ids[1]]);
    for unusable in [ids[9], ids[4], ids[6], 999_999] {
        assert!(picked(&format!("run:{unusable}")).await.is_empty(), "run:{unusable}");
    }
    store.close().await;
}

/// A verdict of one regression, on `endpoint`'s p95.
pub(crate) fn regressed_on(endpoint: &str, at: DateTime<Utc>) -> NewVerdict {
    let finding = Finding {
        endpoint: endpoint.into(),
        metric: "p95".into(),
        outcome: FindingOutcome::Regression,
        baseline_value: Some(100.0),
        candidate_value: 180.0,
        delta_pct: Some(80.0),
        limit: Some(112.0),
        interval: None,
        p_value: Some(1e-9),
        reason: "far above the level".into(),
    };
    NewVerdict {
        baseline_spec: "last-7d".into(),
        baseline_run_ids: Vec::new(),
        outcome: VerdictOutcome::Regressed,
        summary: "regressed: 1 regression".into(),
        created_at: at,
        findings: vec![finding],
    }
}
