//! The alerts of split nights run by `degrade check --run-now --segment K/N` through the real binary, posted to
//! a local JSON webhook receiver: a night that could not be measured as one (here, a segment that never came,
//! so the start barrier timed out) is alerted once, though every segment sees it, saying why, and is never
//! judged; and a night whose segments all died is lost by `serve`'s watch, invalid naming the segments that
//! never reported, and alerted once. Skipped, saying so, without `DEGRADE_TEST_POSTGRES_URL`.

use std::time::Duration;

use degrade::config::Config;
use degrade::model::RunStatus;
use degrade::notify::Courier;
use degrade::pipeline::interrupted::settle_lost_nights;

use crate::segments::{a_split_project_with, ended};
use crate::support::receiver::Receiver;
use crate::support::{degrade_child, unique_name};

/// A JSON webhook for every event, its URL from OPS.
const NOTIFY: &str = "[[notify]]\nname = \"ops\"\nkind = \"json\"\nurl_env = \"OPS\"\n";

/// `check --run-now` for segment `segment` of the night `key`, alerts posted to `ops`.
fn checked_segment(
    dir: &tempfile::TempDir,
    key: &str,
    segment: &str,
    extra: &[&str],
    ops: &str,
) -> tokio::process::Child {
    let mut args = vec!["check", "--run-now", "shop", "--segment", segment, "--run-key", key];
    args.extend_from_slice(extra);
    degrade_child(dir.path(), &args, &[("OPS", ops)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_split_night_is_alerted_once_saying_why_and_never_judged() {
    let ops = Receiver::start().await;
    let Some((_db, _target, dir, store)) = a_split_project_with(NOTIFY).await else { return };
    let key = unique_name("night");
    let extra = ["--barrier-timeout", "3s"];
    // Two of three: both see the barrier time out, and both try to alert.
    let children: Vec<_> = (0..2).map(|k| checked_segment(&dir, &key, &format!("{k}/3"), &extra, &ops.url())).collect();
    let mut outputs = Vec::new();
    for child in children {
        outputs.push(ended(child).await);
    }
    // Inconclusive, as a single machine's invalid night: 0 without --strict, saying so (the alert tells the team).
    assert!(outputs.iter().all(|(code, _)| *code == Some(0)), "{outputs:#?}");
    assert!(outputs.iter().all(|(_, o)| o.contains("exiting 0 (pass --strict to exit 3)")), "{outputs:#?}");
    let run = store.last_runs("shop", 1).await.unwrap().remove(0);
    assert_eq!(run.status, RunStatus::Invalid, "{run:?}");
    assert_eq!(store.latest_verdict(run.id).await.unwrap(), None, "an invalid night is never judged");
    let delivered = ops.delivered();
    assert_eq!(delivered.len(), 1, "once, however many segments saw it: {delivered:#?}\n{outputs:#?}");
    let alert = &delivered[0];
    assert_eq!(alert["event"], "run_failed", "{alert:#}");
    assert_eq!(alert["run_id"], run.id, "{alert:#}");
    let summary = alert["summary"].as_str().unwrap();
    assert!(
        summary.contains("the split night is invalid, never judged")
            && summary.contains("segment 2 of 3 never became ready (ready: 0, 1)"),
        "{summary}"
    );
    assert_eq!(summary.matches("never became ready").count(), 1, "the reason said once: {summary}");
    let episodes = store.episodes(10).await.unwrap();
    assert_eq!(episodes.len(), 1, "{episodes:?}");
    assert_eq!((episodes[0].kind.as_str(), episodes[0].opened_run_id), ("run_failed", Some(run.id)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_night_whose_segments_all_died_is_lost_naming_them_and_alerted_once() {
    let ops = Receiver::start().await;
    let Some((_db, _target, dir, store)) = a_split_project_with(NOTIFY).await else { return };
    let key = unique_name("night");
    // Two of three come, prepare the night's run and wait at the barrier; then both die (SIGKILL: no goodbye).
    let extra = ["--barrier-timeout", "5m"];
    let mut children: Vec<_> =
        (0..2).map(|k| checked_segment(&dir, &key, &format!("{k}/3"), &extra, &ops.url())).collect();
    for _ in 0..400 {
        let ready = store.run_segments(&key).await.unwrap().iter().filter(|r| r.state == "ready").count();
        if ready == 2 && store.segmented_run(&key).await.unwrap().is_some_and(|r| r.run_id.is_some()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for child in &mut children {
        child.kill().await.unwrap();
    }
    let env = |name: &str| (name == "OPS").then(|| ops.url());
    let config = Config::load_with_env(&dir.path().join("degrade.toml"), &env).unwrap();
    let now = chrono::Utc::now();
    // Within its minute the night may still be going (a paused cluster): the watch leaves it running.
    settle_lost_nights(&store, &config, now, now).await;
    let run = store.last_runs("shop", 1).await.unwrap().remove(0);
    assert_eq!(run.status, RunStatus::Running, "{run:?}");
    // A minute later, as `serve`'s watch sees it then.
    let later = now + chrono::TimeDelta::seconds(61);
    // Alerts stamped now, as the courier's clock reads the time; settled twice, alerted once.
    settle_lost_nights(&store, &config, later, now).await;
    settle_lost_nights(&store, &config, later, now).await;
    let run = store.find_run(run.id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Invalid, "{run:?}");
    let reason = run.failure_reason.clone().unwrap();
    assert!(
        reason.starts_with("no segment of the night was seen for 60 s, and segment 0 (ready, last seen")
            && reason.contains("segment 1 (ready, last seen")
            && reason.ends_with("segment 2 (never registered) never reported their results"),
        "{reason}"
    );
    assert_eq!(store.latest_verdict(run.id).await.unwrap(), None, "a lost night is never judged");
    Courier::new(store.clone(), std::sync::Arc::new(config)).unwrap().deliver_due().await.unwrap();
    let delivered = ops.delivered();
    assert_eq!(delivered.len(), 1, "{delivered:#?}");
    assert_eq!((delivered[0]["event"].as_str(), delivered[0]["run_id"].as_i64()), (Some("run_failed"), Some(run.id)));
    assert!(delivered[0]["summary"].as_str().unwrap().contains("segment 2 (never registered)"), "{:#}", delivered[0]);
}
