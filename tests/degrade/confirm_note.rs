//! What the run page and `check` say of a confirmation pair is the pair's decision: a later `check --run` of
//! the rerun, against another baseline, stores another verdict of it but rewrites nothing the pair decided (a
//! trial's run page read "confirmed by rerun #7" after #7, which could not be judged that night, passed later).

use degrade::model::{LoadSummary, NewRun, NewVerdict, RunStatus, VerdictOutcome};
use degrade::pipeline::confirm::note;
use degrade::store::Store;

use crate::support::TestDb;
use crate::support::nights::{finish_routes_night, new_run, night, store_night};

fn verdict(outcome: VerdictOutcome) -> NewVerdict {
    NewVerdict {
        baseline_spec: "last-7d".into(),
        baseline_run_ids: vec![],
        outcome,
        summary: format!("{outcome:?}"),
        created_at: night(9),
        findings: vec![],
    }
}

/// Night 8 of `checkout`, judged regressed and waiting for its rerun.
async fn first_run_confirming(store: &Store) -> i64 {
    let first = store_night(store, "checkout", 8, 150.0, RunStatus::Finished).await;
    store.save_verdict_to_confirm(first, &verdict(VerdictOutcome::Regressed)).await.unwrap();
    first
}

/// What the run page and `check` say of run `run`'s confirmation.
async fn said(store: &Store, run: i64) -> String {
    note(store, &store.find_run(run).await.unwrap().unwrap()).await.unwrap().unwrap().0
}

#[tokio::test]
async fn a_later_check_of_an_undecided_rerun_does_not_rewrite_the_pair() {
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    let first = first_run_confirming(&store).await;
    let rerun = store.create_run(&NewRun { confirms: Some(first), ..new_run("checkout", 8) }).await.unwrap();
    finish_routes_night(&store, rerun, 8, (150.0, 60.0), RunStatus::Finished, LoadSummary::default()).await;
    store.save_verdict(rerun, &verdict(VerdictOutcome::Inconclusive)).await.unwrap();
    assert!(store.end_confirmation(first, RunStatus::Regressed, &[(rerun, RunStatus::Unconfirmed)]).await.unwrap());

    let stands = format!("not confirmable: rerun #{rerun} of the same build could not be judged");
    let of_rerun = format!("this run is a rerun of run #{first} and could not be judged, so that run's verdict stands");
    assert!(said(&store, first).await.starts_with(&stands), "{}", said(&store, first).await);
    assert_eq!(said(&store, rerun).await, of_rerun);

    // A plain `check --run` of the rerun, later, against a baseline that holds the first run: passed.
    store.save_verdict(rerun, &verdict(VerdictOutcome::Passed)).await.unwrap();
    assert!(said(&store, first).await.starts_with(&stands), "{}", said(&store, first).await);
    assert_eq!(said(&store, rerun).await, of_rerun);
    store.close().await;
}

/// A rerun that measured another build (a redeploy between the two) was never judged: neither run's note may
/// call it a confirmation (a trial's pages read "confirmed by rerun #18 of the same build").
#[tokio::test]
async fn a_rerun_of_another_build_is_no_confirmation_on_either_run() {
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    let first = first_run_confirming(&store).await;
    let redeployed = NewRun { confirms: Some(first), build_id: Some("1.1.0".into()), ..new_run("checkout", 8) };
    let rerun = store.create_run(&redeployed).await.unwrap();
    finish_routes_night(&store, rerun, 8, (100.0, 60.0), RunStatus::Finished, LoadSummary::default()).await;
    assert!(store.end_confirmation(first, RunStatus::Regressed, &[(rerun, RunStatus::Unconfirmed)]).await.unwrap());
    let of_first = said(&store, first).await;
    assert!(
        of_first.starts_with(&format!("not confirmable: rerun #{rerun} measured build 1.1.0, not 1.0.8")),
        "{of_first}"
    );
    let of_rerun = said(&store, rerun).await;
    let expected = format!("this run is the rerun of run #{first} and measured build 1.1.0, not 1.0.8, so it neither");
    assert!(of_rerun.starts_with(&expected), "{of_rerun}");
    store.close().await;
}
