//! `degrade check` of a stored night whose confirmation rerun is under way elsewhere (`serve`, another CI step):
//! it waits for the rerun to decide and exits on the decision, instead of passing the gate meanwhile (a trial's
//! pipeline got exit 0 beside six regressions of 10 to 100 sigma); with no rerun under way, the first verdict
//! stands at once.

use std::time::Duration;

use chrono::Utc;
use degrade::model::{NewRun, NewVerdict, RunStatus, VerdictOutcome};
use degrade::store::Store;

use crate::support::nights::{WOBBLE, new_run, store_night};
use crate::support::{TestDb, degrade_child, text};

/// Ten steady nights, then night 10 with `GET /boards/{id}` doubled, judged regressed and being confirmed: the
/// first run and its rerun.
async fn a_regression_being_confirmed(store: &Store) -> (i64, i64) {
    for n in 0..10 {
        store_night(store, "checkout", n, 100.0 * WOBBLE[n as usize], RunStatus::Finished).await;
    }
    let first = store_night(store, "checkout", 10, 200.0, RunStatus::Finished).await;
    let verdict = NewVerdict {
        baseline_spec: "last-7d".into(),
        baseline_run_ids: vec![],
        outcome: VerdictOutcome::Regressed,
        summary: "regressed".into(),
        created_at: Utc::now(),
        findings: vec![],
    };
    store.save_verdict_to_confirm(first, &verdict).await.unwrap();
    let rerun = store.create_run(&NewRun { confirms: Some(first), ..new_run("checkout", 11) }).await.unwrap();
    (first, rerun)
}

/// `degrade check` as a child, while the test decides the pair `after` it started; its exit and output.
async fn check_while(db: &TestDb, decide: impl AsyncFnOnce(), after: Duration) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let child = degrade_child(dir.path(), &["check"], &[("DEGRADE_DATABASE_URL", &db.url_string())]);
    tokio::time::sleep(after).await;
    decide().await;
    let output = tokio::time::timeout(Duration::from_mins(1), child.wait_with_output()).await.unwrap().unwrap();
    let (stdout, stderr) = text(&output);
    (output.status.code(), format!("{stdout}{stderr}"))
}

#[tokio::test]
async fn a_check_during_a_confirmation_waits_for_the_rerun_and_exits_on_what_it_decided() {
    for (rerun_reproduced, exit) in [(false, 0), (true, 1)] {
        let db = TestDb::sqlite();
        let store = Store::connect(&db.url).await.unwrap();
        let (first, rerun) = a_regression_being_confirmed(&store).await;
        let now = Utc::now();
        assert!(
            store
                .acquire_lease("checkout", "serve-box:77:0abc", now, now + chrono::Duration::minutes(2))
                .await
                .unwrap()
        );
        let decide = async || {
            let status = if rerun_reproduced { RunStatus::Regressed } else { RunStatus::Unconfirmed };
            assert!(store.end_confirmation(first, status, &[(rerun, status)]).await.unwrap());
            store.release_lease("checkout", "serve-box:77:0abc").await.unwrap();
        };
        let (code, output) = check_while(&db, decide, Duration::from_secs(3)).await;
        assert_eq!(code, Some(exit), "{output}");
        let waited =
            format!("run #{first} is being confirmed (rerun #{rerun}): waiting for the rerun of the same build");
        assert!(output.contains(&waited), "{output}");
        crate::support::quoted::assert_quoted("waiting-for-the-rerun", &output);
        if !rerun_reproduced {
            assert!(output.contains("this regression was not confirmed by its rerun"), "{output}");
        }
        assert!(!output.contains("exiting 0 (pass --strict"), "never passed as undecided: {output}");
    }
}

#[tokio::test]
async fn a_confirmation_no_rerun_is_under_way_for_leaves_the_first_verdict_standing() {
    // The degrade confirming it was stopped: nobody holds the scenario's lease, and nothing will decide it soon.
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    a_regression_being_confirmed(&store).await;
    let (code, output) = check_while(&db, async || {}, Duration::ZERO).await;
    assert_eq!(code, Some(1), "{output}");
    assert!(
        output.contains(
            "note: no rerun is under way (the degrade confirming it was stopped): the first verdict stands for this \
             gate"
        ),
        "{output}"
    );
}
