//! The store's trends on a season of runs, on both backends: long ranges one point per run, years read from
//! the period sums, runs an hour apart kept apart, and a bucket's build named from its newest run.

use chrono::Duration;
use degrade::model::{Finding, FindingOutcome, NewRun, NewVerdict, RunResults, RunStatus, VerdictOutcome};
use degrade::store::{ChartPoint, Store, TrendSpan};

use crate::store_story::{new_run, night, regressed_on, results};
use crate::support::TestDb;

#[tokio::test]
async fn long_trends_on_sqlite() {
    long_trends(&TestDb::sqlite()).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn long_trends_on_postgres() {
    let db = TestDb::postgres().await;
    long_trends(&db).await;
}

/// A range over 120 days that holds at most 400 runs is still one point per run, with every run's pin.
async fn long_trends(db: &TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    let nights = 200;
    for n in 0..nights {
        let id = store.create_run(&new_run(n)).await.unwrap();
        let mut stored = results(n, 100 + (n % 2) * 20, RunStatus::Finished, &[]);
        stored.timeline.clear();
        store.finish_run(id, &stored).await.unwrap();
        if n == 150 {
            store.save_verdict(id, &regressed_on("GET /boards/{id}", night(n))).await.unwrap();
        }
    }
    let span = |from| TrendSpan { scenario: "checkout", series: "abc123", from, to: night(nights), buckets: 20 };
    let trend = store.trend_points(span(night(0))).await.unwrap();
    assert!(!trend.every_series, "200 runs are read one by one, however long their range");
    let boards: Vec<_> = trend.points.iter().filter(|b| b.endpoint == "GET /boards/{id}").collect();
    assert_eq!(boards.len(), 200);
    assert!(boards.windows(2).all(|w| w[0].started_at < w[1].started_at), "in time order");
    let pinned: Vec<_> = boards.iter().filter(|b| b.regressed > 0).collect();
    assert_eq!(pinned.len(), 1, "{boards:?}");
    assert_eq!(pinned[0].started_at, night(150));
    assert!(trend.points.iter().filter(|b| b.endpoint != "GET /boards/{id}").all(|b| b.regressed == 0));
    let p95: Vec<f64> = boards[190..].iter().map(|b| b.p95_ms).collect();
    assert_eq!(p95, [100.0, 120.0, 100.0, 120.0, 100.0, 120.0, 100.0, 120.0, 100.0, 120.0]);
    let judged =
        |b: &&&ChartPoint| b.status == Some(if b.regressed > 0 { RunStatus::Regressed } else { RunStatus::Finished });
    assert!(boards.iter().all(|b| b.runs == 1 && b.run_id.is_some() && judged(&b)));
    store.close().await;
}

#[tokio::test]
async fn years_of_trends_on_sqlite() {
    years_of_trends(&TestDb::sqlite()).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn years_of_trends_on_postgres() {
    let db = TestDb::postgres().await;
    years_of_trends(&db).await;
}

/// Past 400 runs over years, trend buckets come from the 4-week period sums, whole periods to a bucket, and
/// still hold every run, its weighted mean, the worst night of each bucket and the pin of a regressed run.
async fn years_of_trends(db: &TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    // A run every two days for 2.3 years; p95 100 ms, and 300 ms on one night, which regressed.
    let slow = 2 * 300;
    for n in (0..420).map(|k| k * 2) {
        let id = store.create_run(&new_run(n)).await.unwrap();
        let mut stored = results(n, if n == slow { 300 } else { 100 }, RunStatus::Finished, &[]);
        stored.timeline.clear();
        store.finish_run(id, &stored).await.unwrap();
        if n == slow {
            store.save_verdict(id, &regressed_on("GET /boards/{id}", night(n))).await.unwrap();
        }
    }
    let span = TrendSpan { scenario: "checkout", series: "abc123", from: night(0), to: night(840), buckets: 20 };
    let trend = store.trend_points(span).await.unwrap();
    assert!(trend.every_series, "420 runs over years are read from the period sums");
    let boards: Vec<_> = trend.points.iter().filter(|b| b.endpoint == "GET /boards/{id}").collect();
    // 120 weeks in 20 buckets: 6 weeks each, made of 4-week periods rounded to 2 of them: 8-week buckets.
    assert!((15..=17).contains(&boards.len()), "{} buckets: {boards:?}", boards.len());
    assert!(boards.iter().all(|b| b.runs <= 28), "a bucket spans 8 weeks: {boards:?}");
    assert_eq!(boards.iter().map(|b| b.runs).sum::<i64>(), 420, "every run is in some bucket");
    let total: f64 = boards.iter().map(|b| b.p95_ms * b.runs as f64).sum();
    assert!((total / 420.0 - (419.0 * 100.0 + 300.0) / 420.0).abs() < 1e-3, "weighted mean {}", total / 420.0);
    let worst: Vec<_> = boards.iter().filter(|b| b.p95_range_ms.1 == 300.0).collect();
    assert_eq!(worst.len(), 1, "the one slow night is its bucket's worst: {boards:?}");
    assert!(worst[0].started_at <= night(slow) && night(slow) - worst[0].started_at < Duration::weeks(8));
    let pinned: Vec<_> = boards.iter().filter(|b| b.regressed > 0).collect();
    assert_eq!(pinned.len(), 1, "the regressed night pins its bucket: {boards:?}");
    assert_eq!(pinned[0].started_at, worst[0].started_at);
    store.close().await;
}

#[tokio::test]
async fn runs_an_hour_apart_are_points_of_their_own_on_sqlite() {
    runs_an_hour_apart(&TestDb::sqlite()).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn runs_an_hour_apart_are_points_of_their_own_on_postgres() {
    let db = TestDb::postgres().await;
    runs_an_hour_apart(&db).await;
}

/// Ten runs within one hour (a deploy each), one of them regressed on one endpoint, and one run of another
/// workload series: on a 7-day range the series' runs are ten points, each naming its run, and only the
/// regressed run's endpoint is marked.
async fn runs_an_hour_apart(db: &TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    let start = night(0);
    let mut ids = Vec::new();
    for n in 0..10 {
        let started_at = start + Duration::minutes(6 * n);
        let id = store.create_run(&NewRun { started_at, ..new_run(n) }).await.unwrap();
        let stored = results(0, if n == 7 { 32 } else { 5 }, RunStatus::Finished, &[]);
        store.finish_run(id, &RunResults { finished_at: started_at + Duration::minutes(5), ..stored }).await.unwrap();
        ids.push(id);
    }
    let smoke = NewRun { scenario_hash: "smoke-run".into(), started_at: start + Duration::minutes(3), ..new_run(0) };
    let smoke = store.create_run(&smoke).await.unwrap();
    store.finish_run(smoke, &results(0, 900, RunStatus::Finished, &[])).await.unwrap();
    let finding = Finding {
        endpoint: "GET /boards/{id}".into(),
        metric: "p95".into(),
        outcome: FindingOutcome::Regression,
        baseline_value: Some(5.0),
        candidate_value: 32.0,
        delta_pct: Some(540.0),
        limit: Some(5.6),
        interval: None,
        p_value: Some(1e-9),
        reason: "far above the level".into(),
    };
    let verdict = NewVerdict {
        baseline_spec: "last-7d".into(),
        baseline_run_ids: ids[..7].to_vec(),
        outcome: VerdictOutcome::Regressed,
        summary: "regressed".into(),
        created_at: start + Duration::minutes(45),
        findings: vec![finding],
    };
    store.save_verdict(ids[7], &verdict).await.unwrap();

    let span = TrendSpan {
        scenario: "checkout",
        series: "abc123",
        from: start - Duration::days(6),
        to: start + Duration::days(1),
        buckets: 60,
    };
    let trend = store.trend_points(span).await.unwrap();
    let boards: Vec<_> = trend.points.iter().filter(|p| p.endpoint == "GET /boards/{id}").collect();
    let runs: Vec<i64> = boards.iter().map(|p| p.run_id.unwrap()).collect();
    assert_eq!(runs, ids, "ten runs are ten points, oldest first, and the smoke run's series is not among them");
    assert_eq!(boards[7].p95_ms, 32.0, "the regressed run is its own point, not averaged into an hour's bucket");
    assert_eq!(boards[7].status, Some(RunStatus::Regressed));
    let marked: Vec<usize> = boards.iter().enumerate().filter(|(_, p)| p.regressed > 0).map(|(i, _)| i).collect();
    assert_eq!(marked, [7]);
    let cards: Vec<_> = trend.points.iter().filter(|p| p.endpoint == "POST /cards").collect();
    assert!(cards.iter().all(|p| p.regressed == 0), "an endpoint without a finding is not marked");
    store.close().await;
}

#[tokio::test]
async fn a_bucket_names_the_build_of_its_newest_run_on_sqlite() {
    bucket_builds(&TestDb::sqlite()).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn a_bucket_names_the_build_of_its_newest_run_on_postgres() {
    let db = TestDb::postgres().await;
    bucket_builds(&db).await;
}

/// More runs than a chart shows one by one (every six hours for 105 days) are merged into buckets; each bucket
/// is labelled with the build of its newest run, which text order would get wrong (`1.0.10` after `1.0.9`).
async fn bucket_builds(db: &TestDb) {
    let store = Store::connect(&db.url).await.unwrap();
    let runs = 420;
    let start = night(0);
    for n in 0..runs {
        let started_at = start + Duration::hours(6 * n);
        let id = store.create_run(&NewRun { started_at, ..new_run(n) }).await.unwrap();
        let mut stored = results(0, 5, RunStatus::Finished, &[]);
        stored.timeline.clear();
        store.finish_run(id, &RunResults { finished_at: started_at + Duration::minutes(5), ..stored }).await.unwrap();
    }
    let span = TrendSpan {
        scenario: "checkout",
        series: "abc123",
        from: start,
        to: start + Duration::hours(6 * runs),
        buckets: 60,
    };
    let trend = store.trend_points(span).await.unwrap();
    let boards: Vec<_> = trend.points.iter().filter(|p| p.endpoint == "GET /boards/{id}").collect();
    assert!(boards.len() <= 61 && boards.iter().all(|p| p.run_id.is_none()), "{} points", boards.len());
    let mut seen = 0;
    for bucket in boards {
        seen += bucket.runs;
        let newest = format!("1.0.{}", seen - 1);
        assert_eq!(bucket.build_id.as_deref(), Some(newest.as_str()), "the bucket ending with run {seen}");
    }
    assert_eq!(seen, runs, "every run is in some bucket");
    store.close().await;
}
