//! A split night holds its scenario's lease as every run does: a single run or another split night of the same
//! scenario is refused while it goes on, and a night is refused while another run holds the scenario, before it
//! deploys or measures anything. A trial ran both over a split night and stored every one of them valid, each
//! having measured the other's load. Skipped, saying so, without `DEGRADE_TEST_POSTGRES_URL`.

use degrade::model::RunStatus;

use crate::support::{degrade_child, unique_name};

use super::segments::{a_split_project_with, ended, segment, wait_for_start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_night_and_another_run_of_its_scenario_never_overlap() {
    let Some((_db, _target, dir, store)) = a_split_project_with("").await else { return };
    let key = unique_name("night");
    let long = ["--duration", "6s"];
    let night: Vec<_> = (0..2).map(|k| segment(&dir, &key, &format!("{k}/2"), &long, &[])).collect();
    wait_for_start(&store, &key).await;

    // A single run of the scenario, meanwhile: refused, naming the night, as a second single run is.
    let single = degrade_child(dir.path(), &["run", "shop", "--duration", "2s"], &[]);
    let (code, output) = ended(single).await;
    assert_eq!(code, Some(2), "{output}");
    assert!(output.contains(&format!("held by the split night `{key}`")), "{output}");
    // Another split night of it: refused before anything is deployed or sent.
    let other = unique_name("other");
    let (code, output) = ended(segment(&dir, &other, "0/2", &["--barrier-timeout", "5s"], &[])).await;
    assert_eq!(code, Some(2), "could not be done, as a single run refused: {output}");
    assert!(output.contains(&format!("the night `{other}` could not start: a run of `shop`")), "{output}");
    assert!(output.contains("a run of `shop` was already under way when the night was to start"), "{output}");
    assert!(output.contains(&format!("held by the split night `{key}`")), "{output}");

    let mut outputs = Vec::new();
    for child in night {
        outputs.push(ended(child).await);
    }
    let runs = store.last_runs("shop", 5).await.unwrap();
    assert_eq!(runs.len(), 1, "only the split night ran: {runs:?} {outputs:#?}");
    crate::support::assert_measured(runs[0].status, &runs[0].validity_reasons);
    assert_eq!(store.lease("shop").await.unwrap(), None, "the merging segment gave the lease back: {outputs:#?}");

    // A single run holding the scenario: the next night is refused, every segment saying why, none sending.
    let now = chrono::Utc::now();
    assert!(
        store.acquire_lease("shop", "ci-box:4242:0badcafe", now, now + chrono::Duration::minutes(2)).await.unwrap()
    );
    let refused = unique_name("night");
    // One segment as `degrade run`, the other as a CI step's `check --run-now`: both end as a refused run does.
    let checked = ["check", "--run-now", "shop", "--segment", "1/2", "--run-key", &refused, "--barrier-timeout", "5s"];
    let children =
        [segment(&dir, &refused, "0/2", &["--barrier-timeout", "5s"], &[]), degrade_child(dir.path(), &checked, &[])];
    for child in children {
        let (code, output) = ended(child).await;
        assert_eq!(code, Some(2), "{output}");
        assert!(output.contains("held by pid 4242 on host ci-box"), "{output}");
    }
    let runs = store.last_runs("shop", 5).await.unwrap();
    assert_eq!(runs.len(), 1, "the refused night stored no run: {runs:?}");
    assert_ne!(runs[0].status, RunStatus::Running);
    assert!(store.segmented_run(&refused).await.unwrap().unwrap().invalid_reason.is_some());
}
