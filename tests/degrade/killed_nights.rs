//! Nights whose degrade was killed at a fault point (`DEGRADE_FAULT`, debug builds only), finished by the next
//! degrade to touch the scenario, through the real binary: a night killed with its results stored and no
//! verdict is judged once, against the baseline stored with it, and its regression alerted once; one killed
//! before its alerts (a verdict's, a failure's) is alerted once; a run's
//! creation or its verdict committed and its acknowledgement lost is written once; on SQLite and on
//! PostgreSQL. The night's regression is an error rate (every other request answered 500), so the verdict
//! rests on no timing.

use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::Ordering;

use degrade::model::{Run, RunStatus, VerdictOutcome};
use degrade::store::Store;

use crate::support::TestDb;
use crate::support::killable::{a_project_with_history, expire_the_lease_of_the_killed, night};
use crate::support::receiver::Receiver;

/// A night killed at `point`, its lease let go; a night this machine measured invalid (its generator fell
/// behind) is killed again, up to four times; `None` when all four were invalid.
async fn killed_at(dir: &tempfile::TempDir, hook: &Receiver, store: &Store, point: &str) -> Option<Run> {
    for _ in 0..4 {
        let (status, output) = night(dir, hook, Some(point)).await;
        assert_eq!(status.signal(), Some(9), "killed by SIGKILL at the fault point: {status:?} {output}");
        expire_the_lease_of_the_killed(store).await;
        let run = store.last_runs("shop", 1).await.unwrap().remove(0);
        if run.status != RunStatus::Invalid {
            return Some(run);
        }
    }
    None
}

async fn a_night_killed_before_its_verdict_is_judged_and_alerted_once_by_the_next(db: &TestDb) {
    let (target, hook, dir, store) = a_project_with_history(db, "").await;

    // Every other request fails, and degrade is killed once the night's results are stored. A night this
    // machine measured invalid (its generator fell behind) is never judged: another is killed instead.
    target.failing.store(true, Ordering::Relaxed);
    let killed = killed_at(&dir, &hook, &store, "after-results-stored").await;
    assert!(killed.as_ref().is_none_or(|run| run.status == RunStatus::Finished), "{killed:?}");
    let Some(killed) = killed.map(|run| run.id) else {
        return eprintln!("skipped: four killed nights in a row were invalid (this machine is too busy)");
    };
    assert_eq!(store.latest_verdict(killed).await.unwrap(), None, "killed before its verdict");
    assert!(hook.delivered().is_empty(), "nothing alerted yet: {:?}", hook.delivered());

    // The next night's degrade judges it first, against the baseline stored with it, and alerts it once.
    target.failing.store(false, Ordering::Relaxed);
    let (status, output) = night(&dir, &hook, None).await;
    assert!(status.code().is_some(), "{output}");
    let verdict = store.latest_verdict(killed).await.unwrap().expect("judged by the next degrade");
    assert_eq!(verdict.id, store.first_verdict(killed).await.unwrap().unwrap().id, "judged once");
    assert_eq!((verdict.outcome, verdict.baseline_spec.as_str()), (VerdictOutcome::Regressed, "last-7d"));
    assert_eq!(store.find_run(killed).await.unwrap().unwrap().status, RunStatus::Regressed);
    let delivered = hook.delivered();
    let opened: Vec<_> = delivered.iter().filter(|m| m["event"] == "regression").collect();
    assert_eq!(opened.len(), 1, "{delivered:?}");
    assert_eq!(opened[0]["run_id"], killed, "{delivered:?}");

    // Once judged, it is left alone: a third degrade judges it no more, and alerts nothing more of it.
    let (status, output) = night(&dir, &hook, None).await;
    assert!(status.code().is_some(), "{output}");
    assert_eq!(store.latest_verdict(killed).await.unwrap().unwrap().id, verdict.id, "not judged again");
    let opened = hook.delivered().iter().filter(|m| m["event"] == "regression").count();
    assert_eq!(opened, 1, "{:?}", hook.delivered());
    store.close().await;
}

/// How many nights the scenario has run: its runs that are no confirmation rerun (a night judged regressed on
/// a busy machine has one too).
async fn nights_run(store: &Store) -> usize {
    let mut nights = 0;
    for run in store.last_runs("shop", 100).await.unwrap() {
        nights += usize::from(store.confirmed_by(run.id).await.unwrap().is_none());
    }
    nights
}

/// A night whose run creation, then whose verdict, was committed and its acknowledgement lost (a connection
/// dropped before the answer): the retry finds what was written, and the night has one run and one verdict.
async fn lost_acknowledgements_write_nothing_twice(db: &TestDb) {
    let (_target, hook, dir, store) = a_project_with_history(db, "").await;
    let before = nights_run(&store).await;
    let (status, output) = night(&dir, &hook, Some("unacknowledged-run-created")).await;
    assert!(matches!(status.code(), Some(0 | 1 | 3)), "{output}");
    assert!(output.contains("losing this write's acknowledgement"), "the fault was reached: {output}");
    let runs = store.last_runs("shop", 100).await.unwrap();
    assert_eq!(nights_run(&store).await, before + 1, "one first run for the night: {runs:?}");
    assert!(runs.iter().all(|r| r.status != RunStatus::Running), "none left running: {runs:?}");

    let (status, output) = night(&dir, &hook, Some("unacknowledged-verdict-stored")).await;
    assert!(matches!(status.code(), Some(0 | 1 | 3)), "{output}");
    assert!(output.contains("losing this write's acknowledgement"), "the fault was reached: {output}");
    let tonight = store.last_runs("shop", 1).await.unwrap().remove(0);
    if !tonight.status.is_valid_measurement() {
        return eprintln!("skipped: the verdict's night was invalid (this machine is too busy)");
    }
    let first = store.first_verdict(tonight.id).await.unwrap().expect("judged");
    let latest = store.latest_verdict(tonight.id).await.unwrap().unwrap();
    assert_eq!(first.id, latest.id, "one verdict for the night, not two: {first:?} {latest:?}");
    store.close().await;
}

/// With confirmation off, a night killed once its verdict is stored and before its alerts is alerted once by
/// the next degrade, before that one's own night (which recovers).
async fn a_night_killed_before_its_alerts_is_alerted_once_by_the_next(db: &TestDb) {
    let (target, hook, dir, store) = a_project_with_history(db, "[scenario.gates]\nconfirm = false\n").await;
    target.failing.store(true, Ordering::Relaxed);
    let Some(killed) = killed_at(&dir, &hook, &store, "after-verdict-stored").await.map(|run| run.id) else {
        return eprintln!("skipped: four nights in a row were invalid (this machine is too busy)");
    };
    assert_eq!(store.find_run(killed).await.unwrap().unwrap().status, RunStatus::Regressed);
    assert!(hook.delivered().is_empty(), "killed before its alerts: {:?}", hook.delivered());

    target.failing.store(false, Ordering::Relaxed);
    let (status, output) = night(&dir, &hook, None).await;
    assert!(status.code().is_some(), "{output}");
    let delivered = hook.delivered();
    let opened: Vec<_> = delivered.iter().filter(|m| m["event"] == "regression").collect();
    assert_eq!(opened.len(), 1, "{delivered:?}");
    assert_eq!(opened[0]["run_id"], killed, "{delivered:?}");
    // A third degrade finds nothing left to alert.
    let (status, output) = night(&dir, &hook, None).await;
    assert!(status.code().is_some(), "{output}");
    assert_eq!(hook.delivered().iter().filter(|m| m["event"] == "regression").count(), 1);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_night_killed_before_its_alerts_is_alerted_once_by_the_next_degrade_on_sqlite() {
    a_night_killed_before_its_alerts_is_alerted_once_by_the_next(&TestDb::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn a_night_killed_before_its_alerts_is_alerted_once_by_the_next_degrade_on_postgresql() {
    a_night_killed_before_its_alerts_is_alerted_once_by_the_next(&TestDb::postgres().await).await;
}

/// A night that could not be done (the target down), killed once it is stored `failed` and before its alert,
/// is alerted by the next degrade, whose own failed night then says nothing new: one run-failed alert, for the
/// killed night.
async fn a_failed_night_killed_before_its_alert_is_alerted_once_by_the_next(db: &TestDb) {
    let (target, hook, dir, store) = a_project_with_history(db, "").await;
    target.go_down();
    let (status, output) = night(&dir, &hook, Some("before-alerts-written")).await;
    assert_eq!(status.signal(), Some(9), "killed by SIGKILL at the fault point: {status:?} {output}");
    expire_the_lease_of_the_killed(&store).await;
    let killed = store.last_runs("shop", 1).await.unwrap().remove(0);
    assert_eq!(killed.status, RunStatus::Failed, "{killed:?}");
    assert!(hook.delivered().is_empty(), "killed before its alert: {:?}", hook.delivered());

    let (status, output) = night(&dir, &hook, None).await;
    assert!(status.code().is_some(), "{output}");
    let delivered = hook.delivered();
    let failed: Vec<_> = delivered.iter().filter(|m| m["event"] == "run_failed").collect();
    assert_eq!(failed.len(), 1, "{delivered:?}");
    assert_eq!(failed[0]["run_id"], killed.id, "the killed night's alert: {delivered:?}");
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_night_killed_before_its_alert_is_alerted_once_by_the_next_degrade_on_sqlite() {
    a_failed_night_killed_before_its_alert_is_alerted_once_by_the_next(&TestDb::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn a_failed_night_killed_before_its_alert_is_alerted_once_by_the_next_degrade_on_postgresql() {
    a_failed_night_killed_before_its_alert_is_alerted_once_by_the_next(&TestDb::postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_acknowledgements_write_nothing_twice_on_sqlite() {
    lost_acknowledgements_write_nothing_twice(&TestDb::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn lost_acknowledgements_write_nothing_twice_on_postgresql() {
    lost_acknowledgements_write_nothing_twice(&TestDb::postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_night_killed_before_its_verdict_is_finished_by_the_next_degrade_on_sqlite() {
    let db = TestDb::sqlite();
    a_night_killed_before_its_verdict_is_judged_and_alerted_once_by_the_next(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn a_night_killed_before_its_verdict_is_finished_by_the_next_degrade_on_postgresql() {
    let db = TestDb::postgres().await;
    a_night_killed_before_its_verdict_is_judged_and_alerted_once_by_the_next(&db).await;
}
