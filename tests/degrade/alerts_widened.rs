//! A regression episode that grows: a second route that regresses while the first is still open is told
//! once, naming only what is new; a night repeating what was told says nothing; and the episode resolves
//! only on a night that judged every figure its nights named.

use chrono::Utc;
use degrade::model::{BaselineSpec, FindingOutcome, RunStatus, VerdictOutcome};
use degrade::pipeline::alerting;
use degrade::pipeline::judge_run::{IfRegressed, judge_run};

use crate::support::alerted::Alerted;
use crate::support::alerted::usual_p95;
use crate::support::nights::{capacity_search, judge_and_alert, store_both_routes_night, store_night};

#[tokio::test]
async fn a_second_route_regressing_during_an_open_episode_is_told_once() {
    let alerted = Alerted::with_usual_nights(8).await;
    let Alerted { slack, json, config, store, courier, .. } = &alerted;
    let opened = store_night(store, "checkout", 8, 150.0, RunStatus::Finished).await;
    assert_eq!(judge_and_alert(store, config, opened).await.outcome, VerdictOutcome::Regressed);
    assert_eq!(courier.deliver_due().await.unwrap(), 2, "the episode opens: one message per webhook");

    // The next night the cards route regressed too, beside the boards route still where it went.
    let widened = store_both_routes_night(store, "checkout", 9, 150.0, 90.0).await;
    let report = judge_and_alert(store, config, widened).await;
    assert_eq!(report.outcome, VerdictOutcome::Regressed);
    assert_eq!(courier.deliver_due().await.unwrap(), 2, "the widening, once per webhook: {:?}", json.posts());
    alerting::after_judgement(store, config, &report, Utc::now()).await.unwrap();
    assert_eq!(courier.deliver_due().await.unwrap(), 0, "alerting the same night again enqueues nothing");

    // The nights it was judged against are good, unjudged as they are: no suspect but the build measured.
    let first = json.delivered().into_iter().find(|p| p["event"] == "regression").unwrap();
    assert_eq!(first["builds_since_last_good"], serde_json::json!(["1.0.8"]), "{first:#}");
    assert_eq!(first["last_good_run_id"], opened - 1, "{first:#}");
    let message = json.delivered().into_iter().find(|p| p["event"] == "regression_widened").unwrap();
    assert_eq!(message["run_id"], widened, "{message:#}");
    let worse: Vec<(&str, &str)> = message["worse"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["endpoint"].as_str().unwrap(), w["metric"].as_str().unwrap()))
        .collect();
    assert_eq!(worse, [("POST /cards", "p95")], "only what no night of the episode named: {message:#}");
    let summary = message["summary"].as_str().unwrap();
    assert!(
        summary.starts_with(&format!(
            "run #{widened} also regressed on POST /cards p95 (the regression open since run #{opened} stays open)"
        )),
        "{summary}"
    );
    let said = slack.delivered().into_iter().map(|m| m["text"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(
        said,
        ["degrade: checkout regressed on build 1.0.8", "degrade: checkout regressed further on build 1.0.9"]
    );
    assert_eq!(store.episodes(10).await.unwrap().len(), 1, "still one episode");

    // Both routes again, the cards route now regressed on its p50 too: the same slowdown, nothing new to tell.
    let repeated = store_both_routes_night(store, "checkout", 10, 151.0, 91.0).await;
    let report = judge_and_alert(store, config, repeated).await;
    assert_eq!(report.outcome, VerdictOutcome::Regressed);
    let cards: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.endpoint == "POST /cards" && f.outcome == FindingOutcome::Regression)
        .map(|f| f.metric.as_str())
        .collect();
    assert_eq!(cards, ["p50", "p95"], "the night this test means");
    assert_eq!(courier.deliver_due().await.unwrap(), 0, "{:#?}", json.delivered().last());

    // The boards route back, but the cards route, which regressed after the episode opened, not judged
    // tonight: no recovery.
    let back = store_both_routes_night(store, "checkout", 11, 100.0, 60.0).await;
    let run = store.find_run(back).await.unwrap().unwrap();
    let mut report =
        judge_run(store, config, &run, &BaselineSpec::LastDays(7), IfRegressed::Stands, Utc::now()).await.unwrap();
    assert_eq!(report.outcome, VerdictOutcome::Passed);
    for finding in report.findings.iter_mut().filter(|f| f.endpoint == "POST /cards" && f.metric == "p95") {
        finding.outcome = FindingOutcome::TooFew;
    }
    alerting::after_judgement(store, config, &report, Utc::now()).await.unwrap();
    assert_eq!(courier.deliver_due().await.unwrap(), 0, "no recovery before the cards route is judged");

    let judged = store_both_routes_night(store, "checkout", 12, 100.0, 60.0).await;
    assert_eq!(judge_and_alert(store, config, judged).await.outcome, VerdictOutcome::Passed);
    assert_eq!(courier.deliver_due().await.unwrap(), 2, "the recovery, once per webhook");
    let recovery = json.delivered().into_iter().find(|p| p["event"] == "recovery").unwrap();
    assert_eq!(recovery["run_id"], judged, "{recovery:#}");
}

/// A capacity that fell on a night after the episode opened (told as its widening) is said back by the
/// recovery, from the night that told it: the opening night named only a route.
#[tokio::test]
async fn a_capacity_told_by_a_widening_is_said_back_by_the_recovery() {
    let alerted = Alerted::with_usual_nights(0).await;
    let Alerted { json, config, store, courier, .. } = &alerted;
    for n in 0..8 {
        searched_night(store, n, usual_p95(n), 156.0 + (n % 5) as f64 * 2.0).await;
    }
    let opened = searched_night(store, 8, 150.0, 160.0).await;
    assert_eq!(judge_and_alert(store, config, opened).await.outcome, VerdictOutcome::Regressed);
    let fell = searched_night(store, 9, 150.0, 110.0).await;
    let report = judge_and_alert(store, config, fell).await;
    let capacity = report.findings.iter().find(|f| f.metric == "capacity").unwrap();
    assert_eq!(capacity.outcome, FindingOutcome::Regression, "the night this test means: {report:#?}");
    courier.deliver_due().await.unwrap();
    let widened = json.delivered().into_iter().find(|p| p["event"] == "regression_widened").unwrap();
    assert_eq!(widened["worse"][0]["metric"], "capacity", "{widened:#}");

    let back = searched_night(store, 10, 100.0, 158.0).await;
    assert_eq!(judge_and_alert(store, config, back).await.outcome, VerdictOutcome::Passed);
    courier.deliver_due().await.unwrap();
    let recovery = json.delivered().into_iter().find(|p| p["event"] == "recovery").unwrap();
    let summary = recovery["summary"].as_str().unwrap();
    assert!(summary.contains(&format!("since run #{fell}, back by the nights' level of ")), "{summary}");
    assert_eq!(recovery["capacity"]["baseline"].as_f64(), Some(110.0), "{recovery:#}");
}

/// A capacity that stays where it fell until that becomes the level is said by the recovery as staying, not
/// passed over: "passed again" alone read as the capacity back.
#[tokio::test]
async fn a_capacity_that_stayed_down_is_said_by_the_recovery_that_its_level_brings() {
    let alerted = Alerted::with_usual_nights(0).await;
    let Alerted { json, config, store, courier, .. } = &alerted;
    for n in 0..8 {
        searched_night(store, n, usual_p95(n), 156.0 + (n % 5) as f64 * 2.0).await;
    }
    let fell = searched_night(store, 8, 150.0, 110.0).await;
    assert_eq!(judge_and_alert(store, config, fell).await.outcome, VerdictOutcome::Regressed);
    let mut passed = None;
    for n in 9..16 {
        let id = searched_night(store, n, usual_p95(n), 110.0 + (n % 3) as f64).await;
        if judge_and_alert(store, config, id).await.outcome == VerdictOutcome::Passed {
            passed = Some(id);
            break;
        }
    }
    let passed = passed.expect("the fallen capacity becomes the level within a week");
    courier.deliver_due().await.unwrap();
    let recovery = json.delivered().into_iter().find(|p| p["event"] == "recovery").unwrap();
    assert_eq!(recovery["run_id"], passed, "{recovery:#}");
    let summary = recovery["summary"].as_str().unwrap();
    let came_back = format!("GET /boards/{{id}} p95 100.0 ms (was 150.0 ms in run #{fell}) came back; ");
    let stayed = format!(" req/s before run #{fell}) stayed where it regressed to, and that level has held");
    assert!(summary.contains(&came_back) && summary.contains("(all) capacity 11"), "{summary}");
    assert!(summary.contains(&stayed), "{summary}");
}

/// A confirmed pair told what its rerun reproduced, not everything its noisy first run found: the recovery
/// judges and lists only that (a trial's recovery listed 17 figures of an unreproduced first run as "came back").
#[tokio::test]
async fn a_confirmed_pair_told_only_what_its_rerun_reproduced() {
    use degrade::model::NewRun;
    use degrade::pipeline::interrupted::decide;

    use crate::support::nights::{finish_routes_night, new_run};
    let alerted = Alerted::with_usual_nights(8).await;
    let Alerted { json, config, store, courier, .. } = &alerted;
    let opened = store_night(store, "checkout", 8, 150.0, RunStatus::Finished).await;
    assert_eq!(judge_and_alert(store, config, opened).await.outcome, VerdictOutcome::Regressed);
    // A noisy first run (both routes slow), whose rerun reproduced the boards route only.
    let first = store_both_routes_night(store, "checkout", 9, 150.0, 90.0).await;
    let run = store.find_run(first).await.unwrap().unwrap();
    let report = judge_run(store, config, &run, &BaselineSpec::LastDays(7), IfRegressed::Confirm, Utc::now());
    let cards = |r: &degrade::report::CheckReport| {
        r.findings.iter().any(|f| f.endpoint == "POST /cards" && f.outcome == FindingOutcome::Regression)
    };
    assert!(cards(&report.await.unwrap()), "the first run found the cards route");
    let rerun = store.create_run(&NewRun { confirms: Some(first), ..new_run("checkout", 9) }).await.unwrap();
    finish_routes_night(store, rerun, 9, (150.0, 60.0), RunStatus::Finished, degrade::model::LoadSummary::default())
        .await;
    assert_eq!(decide(store, config, first, Utc::now()).await.unwrap().map(|r| r.run_id), Some(rerun));
    store.mark_alerted(first, Utc::now()).await.unwrap();
    assert_eq!(store.find_run(first).await.unwrap().unwrap().status, RunStatus::Regressed);
    // The grid shows the first run as its pair decided: the cards route amber, the boards route the alarm.
    let grid = store.regression_grid("checkout", "h", 30).await.unwrap();
    let night = grid.iter().find(|r| r.id == first).unwrap();
    let outcome =
        |endpoint: &str| night.findings.iter().find(|f| f.endpoint == endpoint && f.metric == "p95").unwrap().outcome;
    assert_eq!(
        (outcome("GET /boards/{id}"), outcome("POST /cards")),
        (FindingOutcome::Regression, FindingOutcome::Unconfirmed)
    );

    // The boards route stays slow until that is the level: the recovery says so, and names no cards route.
    let mut passed = None;
    for n in 10..18 {
        let id = store_night(store, "checkout", n, 150.0 + (n % 3) as f64, RunStatus::Finished).await;
        if judge_and_alert(store, config, id).await.outcome == VerdictOutcome::Passed {
            passed = Some(id);
            break;
        }
    }
    let passed = passed.expect("the slower level becomes the level within a week");
    courier.deliver_due().await.unwrap();
    let recovery = json.delivered().into_iter().find(|p| p["event"] == "recovery").unwrap();
    assert_eq!(recovery["run_id"], passed, "{recovery:#}");
    let summary = recovery["summary"].as_str().unwrap();
    assert!(summary.contains("GET /boards/{id} p95 ") && summary.contains("stayed where it regressed to"), "{summary}");
    assert!(!summary.contains("POST /cards"), "the cards route was never told: {summary}");
}

/// Night `n` of `checkout` with its boards route's p95 and a capacity search that held `capacity` req/s.
async fn searched_night(store: &degrade::store::Store, n: i64, p95: f64, capacity: f64) -> i64 {
    let id = store_night(store, "checkout", n, p95, RunStatus::Finished).await;
    store.save_capacity(id, &capacity_search(capacity)).await.unwrap();
    id
}
