//! A night split across segments (`degrade run --segment k/3 --run-key KEY`) through the real binary: three
//! child processes meeting in a fresh PostgreSQL database, sending their exact shares to a local stub target at
//! a low rate and merged into one run whose counts equal the plan; and the faults: two processes for one index,
//! one of three never started (the start barrier's timeout names it), one killed mid-night, one with another
//! scenario, one whose clock is off. Skipped, saying so, without `DEGRADE_TEST_POSTGRES_URL`.

use std::time::Duration;

use degrade::model::{OVERALL_ENDPOINT, RunStatus};
use degrade::store::{LeftBehind, Store};

use crate::support::target::StubTarget;
use crate::support::{POSTGRES_ENV, TestDb, degrade_child, project, text, unique_name};

/// 30 arrivals a second for 3 s, evenly: 90 planned arrivals, 30 a segment.
const SCENARIO: &str = "[[flow]]\nname = \"fast\"\n[[flow.step]]\npath = \"/fast\"\n\
                        [load]\nmodel = \"open\"\narrivals = \"uniform\"\n[[load.stage]]\nduration = \"3s\"\nrate = 30\n";

/// A project on a fresh PostgreSQL database against a stub target; `None` (and a line saying so) without a
/// server.
async fn a_split_project() -> Option<(TestDb, StubTarget, tempfile::TempDir, Store)> {
    a_split_project_with("").await
}

/// [`a_split_project`] with `extra` at the end of its `degrade.toml` (a `[[notify]]`, say).
pub(crate) async fn a_split_project_with(extra: &str) -> Option<(TestDb, StubTarget, tempfile::TempDir, Store)> {
    if std::env::var(POSTGRES_ENV).is_err() {
        eprintln!("skipped: set {POSTGRES_ENV} (source ci/postgres.sh) to run the split-night tests");
        return None;
    }
    let db = TestDb::postgres().await;
    let target = StubTarget::start().await;
    let config = format!(
        "[database]\nurl = \"{}\"\n\n[[scenario]]\nname = \"shop\"\nfile = \"shop.toml\"\ntarget = \"{}\"\n{extra}",
        db.url_string(),
        target.url()
    );
    let other = format!("[target]\nbase_url = \"{}\"\n{}", target.url(), SCENARIO.replace("rate = 30", "rate = 31"));
    let (dir, _) = project(&config, &[("shop.toml", SCENARIO), ("other/shop.toml", &other)]);
    let store = Store::connect(&db.url).await.unwrap();
    Some((db, target, dir, store))
}

/// Segment `segment` of the night `key` as a child process, with `env` beside it.
pub(crate) fn segment(
    dir: &tempfile::TempDir,
    key: &str,
    segment: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> tokio::process::Child {
    let mut args = vec!["run", "shop", "--segment", segment, "--run-key", key];
    if !extra.contains(&"--barrier-timeout") {
        args.extend(["--barrier-timeout", "20s"]);
    }
    args.extend_from_slice(extra);
    degrade_child(dir.path(), &args, env)
}

/// Waits for a child: its exit code and what it printed.
pub(crate) async fn ended(child: tokio::process::Child) -> (Option<i32>, String) {
    let output = tokio::time::timeout(Duration::from_mins(1), child.wait_with_output()).await.expect("ends").unwrap();
    let (stdout, stderr) = text(&output);
    (output.status.code(), format!("{stdout}{stderr}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_segments_make_one_run_whose_counts_equal_the_plan() {
    let Some((db, _target, dir, store)) = a_split_project().await else { return };
    let key = unique_name("night");
    let children: Vec<_> = (0..3).map(|k| segment(&dir, &key, &format!("{k}/3"), &[], &[])).collect();
    let mut outputs = Vec::new();
    for child in children {
        outputs.push(ended(child).await);
    }
    let merged: Vec<&(Option<i32>, String)> = outputs.iter().filter(|(_, o)| o.contains("merged 3 segments")).collect();
    assert_eq!(merged.len(), 1, "one segment merges the night: {outputs:#?}");
    let run = store.last_runs("shop", 1).await.unwrap().remove(0);
    assert_eq!(run.segments, 3, "the API and the run page say how many machines measured it");
    let detail = store.run_detail(run.id).await.unwrap().unwrap();
    let overall = detail.endpoints.iter().find(|e| e.endpoint == OVERALL_ENDPOINT).unwrap();
    // Counts are exact whatever this machine's speed; only the validity may say it was slow.
    assert_eq!(overall.requests, 90, "{outputs:#?}");
    assert_eq!(overall.errors, 0);
    let timeline = store.timeline(run.id).await.unwrap();
    let summed: i64 = timeline.iter().map(|p| p.requests).sum();
    assert_eq!(summed, 90, "the segments' timelines sum to the night's: {timeline:?}");
    let figures = store.segment_figures(run.id).await.unwrap();
    assert_eq!(figures.iter().map(|f| f.requests.unwrap()).collect::<Vec<_>>(), [30, 30, 30]);
    let spread = figures.iter().filter_map(|f| f.start_lag_us).max().unwrap();
    assert!(spread < 50_000, "the segments started {spread} µs apart: {figures:?}");
    crate::support::assert_measured(run.status, &run.validity_reasons);
    assert!(merged[0].1.contains("start spread"), "{}", merged[0].1);
    let app = crate::support::app::TestApp::spawn(&db).await;
    let (_, page) = app.get(&format!("/runs/{}", run.id)).await;
    let split = "This night was split into 3 segments, one a generator machine, each";
    assert!(page.contains(split) && page.contains("the figures above are theirs added up"), "{page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_for_one_index_leave_the_second_sending_nothing() {
    let Some((_db, target, dir, store)) = a_split_project().await else { return };
    let key = unique_name("night");
    let first = segment(&dir, &key, "0/2", &[], &[]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (code, output) = ended(segment(&dir, &key, "0/2", &[], &[])).await;
    // Nothing to do is no failure: a Job's failure policy must not stop the night for a duplicate pod.
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains("segment 0/2 of the night") && output.contains("is taken by"), "{output}");
    let partner = segment(&dir, &key, "1/2", &[], &[]);
    let (first, partner) = (ended(first).await, ended(partner).await);
    assert!(first.0.is_some() && partner.0.is_some(), "{first:?} {partner:?}");
    let run = store.last_runs("shop", 1).await.unwrap().remove(0);
    let detail = store.run_detail(run.id).await.unwrap().unwrap();
    assert_eq!(detail.endpoints[0].requests, 90, "the second process for index 0 sent nothing: {first:?} {partner:?}");

    // The night is over, longer ago than a barrier's wait (a duplicate pod starts within the night): its key
    // given again (a Job created twice under one name) is no duplicate to pass over.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (code, output) = ended(segment(&dir, &key, "0/2", &["--barrier-timeout", "1s"], &[])).await;
    assert_eq!(code, Some(2), "{output}");
    let said = format!("error: the night `{key}` is over already (run {}, merged): a run key names one night", run.id);
    assert!(output.contains(&said), "{output}");
    assert_eq!(store.last_runs("shop", 1).await.unwrap()[0].id, run.id, "nothing more was run");
    drop(target);
}

/// A build that never becomes healthy fails the night, in every segment's words and exit (2, as a single
/// machine's failed night), even with a barrier shorter than the health check: the barrier waits the build's
/// preparation on top (a trial's pods all said "the start barrier timed out" and exited 3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unhealthy_build_fails_the_night_in_every_segment() {
    let unhealthy = "[scenario.build]\nhealth_url = \"{TARGET}/status/404\"\nhealth_timeout = \"8s\"\n";
    let Some((_db, target, dir, store)) = a_split_project_with("").await else { return };
    let config = std::fs::read_to_string(dir.path().join("degrade.toml")).unwrap();
    std::fs::write(dir.path().join("degrade.toml"), config + &unhealthy.replace("{TARGET}", &target.url())).unwrap();
    let key = unique_name("night");
    // A barrier shorter than the health check, with room for a busy machine's start-up before the check.
    let extra = ["--barrier-timeout", "5s"];
    let children: Vec<_> = (0..2).map(|k| segment(&dir, &key, &format!("{k}/2"), &extra, &[])).collect();
    for child in children {
        let (code, output) = ended(child).await;
        assert_eq!(code, Some(2), "{output}");
        assert!(output.contains("failed: ") && output.contains("answered 404"), "{output}");
        assert!(!output.contains("start barrier timed out"), "{output}");
    }
    let run = store.last_runs("shop", 1).await.unwrap().remove(0);
    assert_eq!(run.status, RunStatus::Failed, "{run:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segment_never_started_ends_the_barrier_naming_it() {
    let Some((db, _target, dir, store)) = a_split_project().await else { return };
    let key = unique_name("night");
    let extra = ["--barrier-timeout", "3s"];
    let children: Vec<_> = (0..2).map(|k| segment(&dir, &key, &format!("{k}/3"), &extra, &[])).collect();
    for child in children {
        let (code, output) = ended(child).await;
        assert_eq!(code, Some(3), "{output}");
        assert!(output.contains("segment 2 of 3 never became ready (ready: 0, 1)"), "{output}");
        // Said once, as the command's result, not again as a log line.
        assert_eq!(output.matches("is invalid: ").count(), 1, "{output}");
    }
    let run = store.last_runs("shop", 1).await.unwrap().remove(0);
    assert_eq!(run.status, RunStatus::Invalid);
    // Where every invalid run's reasons are read (the API's `validity_reasons`), not only as a failure's.
    assert!(run.validity_reasons.iter().any(|r| r.contains("start barrier timed out")), "{run:?}");
    assert!(run.failure_reason.unwrap().contains("start barrier timed out"));
    // The missing segment's pod, started at last: its key names a night that is over, which it says (exit 2).
    let (code, output) = ended(segment(&dir, &key, "2/3", &extra, &[])).await;
    assert_eq!(code, Some(2), "{output}");
    let said =
        format!("error: the night `{key}` is over already (run {}, invalid: the start barrier timed out", run.id);
    assert!(output.contains(&said), "{output}");
    // Its page: how many segments the night had and how many came, its reason once, no figures to add up.
    let app = crate::support::app::TestApp::spawn(&db).await;
    let (_, page) = app.get(&format!("/runs/{}", run.id)).await;
    assert!(page.contains("This night was split into 3 segments, one a generator machine (2 of them came)"), "{page}");
    assert!(page.contains("none measured anything") && !page.contains("Stopped:"), "{page}");
    assert_eq!(page.matches("never became ready").count(), 1, "{page}");
    // No endpoints table under its headers with nothing in it.
    assert!(
        page.contains("Nothing was measured: this run stored no endpoint") && !page.contains("Under each percentile"),
        "{page}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segment_killed_mid_night_stops_the_others_and_the_night_is_invalid() {
    let Some((_db, _target, dir, store)) = a_split_project().await else { return };
    let key = unique_name("night");
    let long = ["--duration", "20s"];
    let mut children: Vec<_> = (0..3).map(|k| segment(&dir, &key, &format!("{k}/3"), &long, &[])).collect();
    // Until the load is under way (the shared start is 2 s after all are ready), then segment 2 dies.
    wait_for_start(&store, &key).await;
    // `serve`'s watch leaves a split night alone while its segments are seen, whatever its lease says.
    let now = chrono::Utc::now();
    assert_eq!(store.abort_interrupted_runs(LeftBehind::Unleased(now), now).await.unwrap(), Vec::<i64>::new());
    tokio::time::sleep(Duration::from_secs(3)).await;
    children[2].start_kill().unwrap();
    let survivors: Vec<_> = children.drain(..2).collect();
    let started = std::time::Instant::now();
    for child in survivors {
        let (code, output) = ended(child).await;
        assert_eq!(code, Some(3), "{output}");
    }
    assert!(started.elapsed() < Duration::from_secs(15), "stopped early, not at the plan's end");
    let run = store.last_runs("shop", 1).await.unwrap().remove(0);
    assert_eq!(run.status, RunStatus::Invalid, "{run:?}");
    assert!(
        run.validity_reasons.iter().any(|r| r.contains("segment 2") && r.contains("is gone")),
        "{:?}",
        run.validity_reasons
    );
    // The night holds both survivors' requests, whichever finished last: it was merged once both had reported,
    // and only the killed segment is named as missing.
    let reported: i64 = store
        .run_segments(&key)
        .await
        .unwrap()
        .iter()
        .filter(|r| r.segment_index != 2)
        .map(|r| {
            let results: serde_json::Value =
                serde_json::from_str(r.results.as_deref().expect("a survivor reported")).unwrap();
            results["endpoints"][0]["requests"].as_i64().expect("its (all) row")
        })
        .sum();
    let merged = store.run_detail(run.id).await.unwrap().unwrap();
    assert_eq!(merged.endpoints[0].requests, reported, "{:?}", run.validity_reasons);
    assert!(
        run.validity_reasons.iter().any(|r| r == "segment 2 of 3 reported no results"),
        "{:?}",
        run.validity_reasons
    );
}

pub(crate) async fn wait_for_start(store: &Store, key: &str) {
    for _ in 0..400 {
        if store.segmented_run(key).await.unwrap().is_some_and(|r| r.start_at.is_some()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the night never started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segment_with_another_scenario_or_a_wrong_clock_makes_the_night_invalid() {
    let Some((_db, _target, dir, store)) = a_split_project().await else { return };
    let key = unique_name("night");
    let other = dir.path().join("other/shop.toml");
    let first = segment(&dir, &key, "0/2", &[], &[]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let second = degrade_child(
        dir.path(),
        &["run", other.to_str().unwrap(), "--segment", "1/2", "--run-key", &key, "--barrier-timeout", "20s"],
        &[],
    );
    let (first, second) = (ended(first).await, ended(second).await);
    assert_eq!((first.0, second.0), (Some(3), Some(3)), "{first:?} {second:?}");
    assert!(second.1.contains("differs from the night's"), "{}", second.1);
    let run = store.last_runs("shop", 1).await.unwrap().remove(0);
    assert_eq!(run.status, RunStatus::Invalid);

    let key = unique_name("night");
    let skewed = [("DEGRADE_TEST_CLOCK_SKEW_MS", "2000")];
    let children = [segment(&dir, &key, "0/2", &[], &[]), segment(&dir, &key, "1/2", &[], &skewed)];
    let mut outputs = Vec::new();
    for child in children {
        outputs.push(ended(child).await);
    }
    let run = store.last_runs("shop", 1).await.unwrap().remove(0);
    assert_eq!(run.status, RunStatus::Invalid, "{outputs:?}");
    assert!(
        run.validity_reasons
            .iter()
            .any(|r| r.starts_with("segment 1's clock is") && r.contains("ms from the database's")),
        "{:?}",
        run.validity_reasons
    );
    // Its offset was measured and corrected: it still started with the other.
    let figures = store.segment_figures(run.id).await.unwrap();
    assert!(figures.iter().filter_map(|f| f.start_lag_us).max().unwrap() < 50_000, "{figures:?}");
}

#[test]
fn sqlite_refuses_segments_saying_why() {
    let (dir, _) = project(
        "[[scenario]]\nname = \"shop\"\nfile = \"shop.toml\"\ntarget = \"http://127.0.0.1:9\"\n",
        &[("shop.toml", SCENARIO)],
    );
    let output = crate::support::degrade(dir.path(), &["run", "shop", "--segment", "0/2", "--run-key", "n1"], &[]);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--segment needs a PostgreSQL database"), "{stderr}");
    let output = crate::support::degrade(dir.path(), &["run", "shop", "--segment", "2/2", "--run-key", "n1"], &[]);
    assert!(text(&output).1.contains("must be below 2"), "{:?}", text(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_run_now_in_segments_judges_the_merged_night_once() {
    let Some((_db, _target, dir, store)) = a_split_project().await else { return };
    // A night this busy machine made invalid (its segments sent late) is never judged: tried again, up to four.
    for _ in 0..4 {
        let key = unique_name("night");
        let children: Vec<_> = (0..2)
            .map(|k| {
                degrade_child(
                    dir.path(),
                    &[
                        "check",
                        "--run-now",
                        "shop",
                        "--segment",
                        &format!("{k}/2"),
                        "--run-key",
                        &key,
                        "--format",
                        "junit",
                    ],
                    &[],
                )
            })
            .collect();
        let mut outputs = Vec::new();
        for child in children {
            outputs.push(ended(child).await);
        }
        let run = store.last_runs("shop", 1).await.unwrap().remove(0);
        crate::support::assert_measured(run.status, &run.validity_reasons);
        if run.status == RunStatus::Invalid {
            continue;
        }
        assert!(outputs.iter().all(|(code, _)| *code == Some(0)), "{outputs:#?}");
        // Each segment writes one JUnit report: the night's from the one that merged it, and one saying so from
        // the other (a CI step publishing every segment's report found an empty file).
        assert!(outputs.iter().all(|(_, o)| o.matches("<?xml").count() == 1), "{outputs:#?}");
        let sent_only = outputs.iter().filter(|(_, o)| o.contains("the segment that merges the night judges it"));
        assert_eq!(sent_only.count(), 1, "{outputs:#?}");
        let verdict = store.latest_verdict(run.id).await.unwrap();
        assert!(verdict.is_some(), "the merging segment judged the night: {outputs:#?}");
        assert_eq!(store.run_detail(run.id).await.unwrap().unwrap().endpoints[0].requests, 90);
        return;
    }
    panic!("four split nights in a row were invalid: this machine is too busy to measure anything");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segment_evicted_with_sigterm_stops_the_others_and_says_so() {
    let Some((_db, _target, dir, store)) = a_split_project().await else { return };
    let key = unique_name("night");
    let long = ["--duration", "20s"];
    let children: Vec<_> = (0..2).map(|k| segment(&dir, &key, &format!("{k}/2"), &long, &[])).collect();
    wait_for_start(&store, &key).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pid = children[1].id().unwrap();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success());
    let started = std::time::Instant::now();
    let mut outputs = Vec::new();
    for child in children {
        outputs.push(ended(child).await);
    }
    assert!(started.elapsed() < Duration::from_secs(12), "stopped early, not at the plan's end: {outputs:#?}");
    assert!(outputs.iter().all(|(code, _)| *code == Some(3)), "{outputs:#?}");
    let run = store.last_runs("shop", 1).await.unwrap().remove(0);
    assert_eq!(run.status, RunStatus::Invalid, "{run:?}");
    assert!(
        run.validity_reasons.iter().any(|r| r == "segment 1 was stopped (SIGTERM or Ctrl-C) before its plan ended"),
        "{:?}",
        run.validity_reasons
    );
}
