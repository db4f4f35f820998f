//! The confirmation rerun of a split night's regression through the real binary: two `check --run-now
//! --segment k/2` processes on a fresh PostgreSQL database against a target slow by its requests' numbers.
//! When the merged night regresses, both segments rerun their shares together under the derived run key: a
//! target slow only during the first night is not confirmed (nothing alerted, every segment exits 0), one slow
//! all night is (one regression alert, the deciding segment exits 1). Skipped, saying so, without
//! `DEGRADE_TEST_POSTGRES_URL`.

use std::time::Duration;

use degrade::model::RunStatus;
use degrade::store::Store;

use crate::slow_target::{SlowFor, Spoiled, again_while_spoiled};
use crate::support::receiver::Receiver;
use crate::support::{ONE_HEAVY_TEST_AT_A_TIME, POSTGRES_ENV, TestDb, degrade_child, project, text, unique_name};

/// `GET /items` at 40/s for 2 s: 80 requests a night, 40 a segment.
const SCENARIO: &str = "[[flow]]\nname = \"list\"\n[[flow.step]]\npath = \"/items\"\n\
                        [load]\nmodel = \"open\"\nmax_in_flight = 8\n[[load.stage]]\nduration = \"2s\"\nrate = 40\n";

/// A night in two segments through `check --run-now --format junit`: each segment's exit code and output.
/// Every segment writes one JUnit document whatever its part (the one that merged, the one that only sent its
/// share, the one that decided a rerun), and a failure in it exactly when it exits 1.
async fn split_night(dir: &tempfile::TempDir, hook: &Receiver) -> Vec<(Option<i32>, String)> {
    let key = unique_name("night");
    let url = hook.url();
    let children: Vec<_> = (0..2)
        .map(|k| {
            let segment = format!("{k}/2");
            let args = ["check", "--run-now", "shop", "--segment", &segment, "--run-key", &key, "--format", "junit"];
            degrade_child(dir.path(), &args, &[("HOOK", url.as_str())])
        })
        .collect();
    let mut outputs = Vec::new();
    for child in children {
        let output = tokio::time::timeout(Duration::from_mins(2), child.wait_with_output()).await.unwrap().unwrap();
        let (stdout, stderr) = text(&output);
        let xml = roxmltree::Document::parse(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
        let failed = xml.descendants().any(|n| n.has_tag_name("failure"));
        assert_eq!(failed, output.status.code() == Some(1), "{stdout}{stderr}");
        outputs.push((output.status.code(), format!("{stdout}{stderr}")));
    }
    outputs
}

/// A split night with requests slowed as `slow` says, again while its first run was invalid (this machine,
/// busy with other tests, sent requests late: such a run judges nothing). A rerun made invalid let the first
/// verdict stand: [`Spoiled`]. The outputs, the night's first run and its rerun.
async fn confirmed_night(
    dir: &tempfile::TempDir,
    hook: &Receiver,
    target: &SlowFor,
    store: &Store,
    slow: (i64, i64),
) -> Result<(Vec<(Option<i32>, String)>, i64, i64), Spoiled> {
    let mut seen = Vec::new();
    for _ in 0..6 {
        let before = store.last_runs("shop", 1).await.unwrap().first().map_or(0, |r| r.id);
        target.slow(slow);
        let outputs = split_night(dir, hook).await;
        let first = store.find_run(before + 1).await.unwrap().unwrap();
        let Some(&rerun) = store.reruns_of(first.id).await.unwrap().last() else {
            assert_eq!(first.status, RunStatus::Invalid, "a valid night regressed is rerun: {outputs:#?}");
            seen.push((first.id, first.validity_reasons));
            continue;
        };
        let rerun = store.find_run(rerun).await.unwrap().unwrap();
        if rerun.status == RunStatus::Invalid {
            return Err(Spoiled(format!("rerun #{} was invalid: {:?}", rerun.id, rerun.validity_reasons)));
        }
        return Ok((outputs, first.id, rerun.id));
    }
    panic!("six nights in a row had an invalid first run: this machine is too busy to measure anything: {seen:#?}");
}

/// Whether the PostgreSQL server these tests need is given; a line saying they are skipped when not.
fn postgres_given() -> bool {
    let given = std::env::var(POSTGRES_ENV).is_ok();
    if !given {
        eprintln!("skipped: set {POSTGRES_ENV} (source ci/postgres.sh) to run the split confirmation tests");
    }
    given
}

/// A fresh PostgreSQL database, a project on it against `target` alerting regressions to `hook`, and five
/// valid split nights of history on a fast target.
async fn split_project_with_history(target: &SlowFor, hook: &Receiver) -> (TestDb, tempfile::TempDir, Store) {
    let db = TestDb::postgres().await;
    // As `slow_target::project_for`: the slow requests take 40 ms on a route answering in about 1 ms.
    let config = format!(
        "[database]\nurl = \"{}\"\n\n[[scenario]]\nname = \"shop\"\nfile = \"shop.toml\"\ntarget = \"http://{}\"\n\
         [scenario.gates]\nbusy_machine_inconclusive = false\nmin_effect_pct = 200\n\n\
         [[notify]]\nname = \"team\"\nkind = \"json\"\nurl_env = \"HOOK\"\nevents = [\"regression\"]\n",
        db.url_string(),
        target.address
    );
    let (dir, _) = project(&config, &[("shop.toml", SCENARIO)]);
    let store = Store::connect(&db.url).await.unwrap();
    target.slow((0, i64::MAX));
    let mut valid = 0;
    let mut seen = Vec::new();
    for night in 0..12 {
        let outputs = split_night(&dir, hook).await;
        let run = store.last_runs("shop", 1).await.unwrap().remove(0);
        valid += i32::from(run.status.is_valid_measurement());
        seen.push((run.id, run.status, run.validity_reasons, run.failure_reason));
        assert!(outputs.iter().all(|(code, _)| matches!(code, Some(0 | 3))), "history night {night}: {outputs:#?}");
        if valid == 5 {
            return (db, dir, store);
        }
    }
    panic!("12 history nights without 5 valid ones: {seen:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_regression_its_rerun_by_every_segment_does_not_reproduce_is_not_alerted() {
    let _apart = ONE_HEAVY_TEST_AT_A_TIME.lock().await;
    if postgres_given() {
        again_while_spoiled(a_split_night_slow_only_in_its_first_run).await;
    }
}

/// Slow for the first night's 80 requests only: its rerun by both segments is fast.
async fn a_split_night_slow_only_in_its_first_run() -> Result<(), Spoiled> {
    let (target, hook) = (SlowFor::start().await, Receiver::start().await);
    let (_db, dir, store) = split_project_with_history(&target, &hook).await;
    let (outputs, first, rerun) = confirmed_night(&dir, &hook, &target, &store, (80, i64::MAX)).await?;
    assert!(outputs.iter().all(|(code, _)| *code == Some(0)), "{outputs:#?}");
    assert!(outputs.iter().all(|(_, o)| o.contains("every segment reruns its share")), "{outputs:#?}");
    assert!(outputs.iter().any(|(_, o)| o.contains("was not confirmed by its rerun")), "{outputs:#?}");
    assert_eq!(store.find_run(first).await.unwrap().unwrap().status, RunStatus::Unconfirmed);
    assert_eq!(store.confirmed_by(rerun).await.unwrap(), Some(first));
    assert_eq!(store.run_detail(rerun).await.unwrap().unwrap().endpoints[0].requests, 80, "both segments reran");
    assert!(hook.delivered().is_empty(), "nothing is alerted: {:?}", hook.delivered());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_regression_its_rerun_by_every_segment_reproduces_is_alerted_once() {
    let _apart = ONE_HEAVY_TEST_AT_A_TIME.lock().await;
    if postgres_given() {
        again_while_spoiled(a_split_night_slow_all_night).await;
    }
}

/// Slow all night, the rerun too: confirmed, one alert, and the segment that decided it fails the gate.
async fn a_split_night_slow_all_night() -> Result<(), Spoiled> {
    let (target, hook) = (SlowFor::start().await, Receiver::start().await);
    let (_db, dir, store) = split_project_with_history(&target, &hook).await;
    let (outputs, first, rerun) = confirmed_night(&dir, &hook, &target, &store, (i64::MAX, i64::MAX)).await?;
    let codes: Vec<Option<i32>> = outputs.iter().map(|(code, _)| *code).collect();
    assert!(codes.contains(&Some(1)) && codes.iter().all(|c| matches!(c, Some(0 | 1))), "{outputs:#?}");
    assert!(outputs.iter().any(|(_, o)| o.contains(&format!("run {first}'s regression stands"))), "{outputs:#?}");
    assert_eq!(store.find_run(first).await.unwrap().unwrap().status, RunStatus::Regressed);
    assert_eq!(store.find_run(rerun).await.unwrap().unwrap().status, RunStatus::Regressed);
    let delivered = hook.delivered();
    assert_eq!(delivered.len(), 1, "one alert for the regression: {delivered:#?}");
    assert_eq!(delivered[0]["event"], "regression");
    Ok(())
}
