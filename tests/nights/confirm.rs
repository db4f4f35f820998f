//! Confirmation reruns through the real binary: `check --run-now` against a target whose requests are slow by
//! their number, so the first run of a night can be slow while its rerun is not (a noisy night), or both are
//! (a real regression), or the rerun worse than the first. Only a confirmed regression alerts, and only for
//! what both runs found.

use std::time::Duration;

use degrade::model::RunStatus;
use degrade::store::Store;

use crate::slow_target::{SlowFor, Spoiled, again_while_spoiled, five_nights_in, judged_night};
use crate::support::app::TestApp;
use crate::support::{TestDb, degrade_child, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_regression_alerts_only_when_its_rerun_reproduces_it() {
    let _apart = crate::support::ONE_HEAVY_TEST_AT_A_TIME.lock().await;
    again_while_spoiled(a_noisy_night_then_a_real_regression).await;
}

/// A noisy night that is not alerted, then a real regression that is, once, until its level is the level.
async fn a_noisy_night_then_a_real_regression() -> Result<(), Spoiled> {
    let (target, hook, dir, store) = five_nights_in().await;

    // A noisy night: the first run (80 requests) is slow throughout, its rerun is not.
    let (code, output, first, rerun) = judged_night(&dir, &hook, &target, (80, i64::MAX)).await?;
    assert_eq!(code, Some(0), "an unconfirmed regression does not fail the gate: {output}");
    let said = format!("confirmation: not confirmed: run #{first} was judged regressed, but rerun #{rerun}");
    assert!(output.contains(&said), "{output}");
    crate::support::quoted::assert_quoted("confirmation-not-confirmed", &output);
    assert_eq!(store.find_run(first).await.unwrap().unwrap().status, RunStatus::Unconfirmed);
    assert_eq!(store.confirmed_by(rerun).await.unwrap(), Some(first), "the rerun names the run it confirmed");
    assert!(hook.delivered().is_empty(), "nothing is alerted: {:?}", hook.delivered());

    // A plain check of the unconfirmed run says so, and does not fail either.
    let id = first.to_string();
    let child = degrade_child(dir.path(), &["check", "--run", &id], &[("HOOK", hook.url().as_str())]);
    let output = child.wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains(&format!("confirmation: not confirmed: rerun #{rerun} of the same build")), "{stdout}");
    // JUnit says it too: a refuted pair is no plain pass.
    let args = ["check", "--run", &id, "--format", "junit"];
    let output = degrade_child(dir.path(), &args, &[("HOOK", hook.url().as_str())]).wait_with_output().await.unwrap();
    let (xml, _) = text(&output);
    assert!(
        xml.contains(&format!("<system-out>confirmation: not confirmed: rerun #{rerun} of the same build")),
        "{xml}"
    );
    assert!(
        !xml.contains("<failure") && xml.contains("<skipped message="),
        "a refuted regression fails no step: {xml}"
    );

    // A real regression, worse in the rerun: a fifth of the first run's requests are slow (its p95, and its p99,
    // which 80 requests cannot bound but its tail judges), all of the rerun's (its p50 too). One alert, for what
    // both runs found, and the gate fails.
    let (code, output, second, second_rerun) = judged_night(&dir, &hook, &target, (16, 80)).await?;
    assert_eq!(code, Some(1), "{output}");
    let said = format!("confirmation: confirmed: run #{second} was judged regressed, and rerun #{second_rerun}");
    assert!(output.contains(&said), "{output}");
    assert!(output.contains("regressed again on (all) p95, (all) p99, GET /items p95, GET /items p99\n"), "{output}");
    assert!(output.contains("decided by the share of requests far past the baseline's p99"), "{output}");
    // A finding a share of requests decided is limited by the share's threshold, which tonight passed, never
    // by the level test's limit, which it did not.
    let ms_after =
        |line: &str, key: &str| -> Option<f64> { line.split(key).nth(1)?.split(" ms").next()?.trim().parse().ok() };
    let lines: Vec<&str> = output.lines().collect();
    for pair in lines.windows(2).filter(|p| p[1].trim_start().starts_with("decided by the share")) {
        let (tonight, limit) = (ms_after(pair[0], " -> "), ms_after(pair[0], "limit "));
        assert!(limit.is_none_or(|limit| tonight.is_some_and(|t| limit <= t)), "{output}");
    }
    assert!(output.contains("REGRESSION  GET /items  p95"), "{output}");
    // The run page does not say the p99 its tail judged needed more requests to be judged.
    let app = TestApp::spawn(&TestDb::sqlite_file(dir.path().join("degrade.db"))).await;
    let (status, page) = app.get(&format!("/runs/{second}")).await;
    assert_eq!(status, 200, "{page}");
    assert!(!page.contains("p99 needs ~") && !page.contains("p99 ~"), "the p99 was judged: {page}");
    assert!(output.contains("unconfirmed  GET /items  p50"), "seen in the rerun only: {output}");
    assert!(output.contains(&format!("seen in this rerun only: run #{second}, the night's first run")), "{output}");
    assert!(output.contains("not reproduced"), "the verdict counts it apart: {output}");
    crate::support::quoted::assert_quoted("confirmation-confirmed", &output);
    assert_eq!(store.find_run(second).await.unwrap().unwrap().status, RunStatus::Regressed);
    assert_eq!(store.find_run(second_rerun).await.unwrap().unwrap().status, RunStatus::Regressed);
    let delivered = hook.delivered();
    assert_eq!(delivered.len(), 1, "one alert for the confirmed regression: {delivered:?}");
    let mut worse: Vec<(&str, &str)> = delivered[0]["worse"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["endpoint"].as_str().unwrap(), w["metric"].as_str().unwrap()))
        .collect();
    worse.sort_unstable();
    let both = [("(all)", "p95"), ("(all)", "p99"), ("GET /items", "p95"), ("GET /items", "p99")];
    assert_eq!(worse, both, "only what both runs found: {delivered:?}");
    // The unconfirmed run never served as a baseline for the nights after it.
    let verdict = store.latest_verdict(second_rerun).await.unwrap().unwrap();
    assert!(!verdict.baseline_run_ids.contains(&first), "{verdict:?}");
    assert!(!verdict.baseline_run_ids.contains(&second), "{verdict:?}");

    // Judged again by a plain check, the rerun keeps its verdict: the run it confirmed is the same night, never
    // its baseline.
    let child = degrade_child(dir.path(), &["check"], &[("HOOK", hook.url().as_str())]);
    let output = child.wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains(&format!("this run is the rerun that confirmed run #{second}'s regression")), "{stdout}");
    let verdict = store.latest_verdict(second_rerun).await.unwrap().unwrap();
    assert!(!verdict.baseline_run_ids.contains(&second), "{verdict:?}");
    assert_eq!(store.find_run(second_rerun).await.unwrap().unwrap().status, RunStatus::Regressed);

    // The next night of the same slow build is its second night, not its third: still a regression of the p95
    // (with the pair counted as two nights, the p95 would have "held" long enough to be the new level), and
    // no new alert while the episode is open.
    let (code, output, third, _) = judged_night(&dir, &hook, &target, (0, 0)).await?;
    assert_eq!(code, Some(1), "{output}");
    assert!(output.contains("REGRESSION  GET /items  p95"), "{output}");
    let verdict = store.latest_verdict(third).await.unwrap().unwrap();
    assert!(verdict.baseline_run_ids.contains(&second_rerun) && !verdict.baseline_run_ids.contains(&second));
    assert_eq!(hook.delivered().len(), 1, "{:?}", hook.delivered());

    // Its third night: the slower level has held for three nights and is the level now. The episode resolves,
    // and the recovery says the slowdown stayed rather than that anything got faster.
    let (code, output, _, _) = judged_night(&dir, &hook, &target, (0, 0)).await?;
    assert_eq!(code, Some(0), "{output}");
    let delivered = hook.delivered();
    assert_eq!(delivered.len(), 2, "{delivered:?}");
    let summary = delivered[1]["summary"].as_str().unwrap();
    assert_eq!(delivered[1]["event"], "recovery", "{delivered:?}");
    assert!(
        summary.contains("GET /items p95 ") && summary.contains(" regressed to, and that level has held"),
        "{summary}"
    );
    assert!(summary.contains("(nothing got faster)"), "{summary}");
    store.close().await;
    Ok(())
}

/// Polls `done` every 50 ms for at most a minute; false when `child` exited or the minute ran out first.
async fn until(child: &mut tokio::process::Child, done: impl AsyncFn() -> bool) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_mins(1) && child.try_wait().unwrap().is_none() {
        if done().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done().await
}

/// A degrade killed (SIGKILL: no chance to tidy up) while its rerun measured the build leaves the regressed run
/// `confirming`, not alerted. When `serve` comes back and the killed one's lease has run out, the rerun
/// measured nothing, and the first verdict stands: the run is regressed and alerted, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_regression_whose_rerun_was_killed_stands_when_degrade_comes_back() {
    let _apart = crate::support::ONE_HEAVY_TEST_AT_A_TIME.lock().await;
    let (target, hook, dir, store) = five_nights_in().await;
    let hook_url = hook.url();
    let mut first = None;
    for _ in 0..6 {
        // Every request slow: the first run (80 requests) regresses and its rerun starts, and waits on its
        // stalled requests until their timeout; kill degrade as it does.
        let before = store.last_runs("shop", 1).await.unwrap().first().map_or(0, |r| r.id);
        target.slow((i64::MAX, i64::MAX));
        target.stall(80);
        let mut night = degrade_child(dir.path(), &["check", "--run-now"], &[("HOOK", hook_url.as_str())]);
        // The first run is `confirming` and its rerun stored and measuring.
        let status = async |id| store.find_run(id).await.unwrap().map(|r| r.status);
        let rerunning = until(&mut night, async || {
            status(before + 1).await == Some(RunStatus::Confirming)
                && status(before + 2).await == Some(RunStatus::Running)
        })
        .await;
        night.kill().await.unwrap();
        if rerunning {
            first = Some(before + 1);
            break;
        }
        // This machine, busy with other tests, made the run invalid: such a night regresses nothing.
    }
    let first = first.expect("six slow nights in a row were invalid: this machine is too busy to measure anything");
    assert_eq!(store.confirmed_by(first + 1).await.unwrap(), Some(first), "the rerun is linked from its creation");
    assert!(hook.delivered().is_empty(), "nothing is alerted before the rerun decides: {:?}", hook.delivered());
    // No rerun is under way (its degrade was killed): the gate does not wait for one, and never passes the
    // regression meanwhile: the first verdict stands for it, exit 1, saying why (`cli::confirmation_wait`).
    let gate = degrade_child(dir.path(), &["check", "--strict"], &[("HOOK", hook_url.as_str())]);
    let gate = gate.wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&gate);
    assert_eq!(gate.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("the first verdict stands for this gate"), "{stderr}");
    // The killed degrade's lease would run out in two minutes; here it has.
    let database = format!("sqlite://{}", dir.path().join("degrade.db").display());
    let pool = sqlx::SqlitePool::connect(&database).await.unwrap();
    sqlx::query("update scenario_leases set expires_at = 0").execute(&pool).await.unwrap();
    pool.close().await;

    let env = [("HOOK", hook_url.as_str()), ("DEGRADE_SERVER_LISTEN", "127.0.0.1:0")];
    let mut server = degrade_child(dir.path(), &["serve"], &env);
    let settled = until(&mut server, async || {
        store.find_run(first).await.unwrap().unwrap().status == RunStatus::Regressed && !hook.delivered().is_empty()
    })
    .await;
    server.kill().await.unwrap();
    let output = server.wait_with_output().await.unwrap();
    let (_, stderr) = text(&output);
    assert!(settled, "run #{first} was not settled: {:?}\n{stderr}", store.find_run(first).await.unwrap());
    assert!(stderr.contains("confirmation a stopped degrade left undecided is decided"), "{stderr}");
    let delivered = hook.delivered();
    assert_eq!(delivered.len(), 1, "one alert: {delivered:?}");
    assert_eq!(delivered[0]["run_id"], first, "{delivered:?}");
    // Nor is another waiting to be sent.
    let pool = sqlx::SqlitePool::connect(&database).await.unwrap();
    let (messages,): (i64,) = sqlx::query_as("select count(*) from outbox").fetch_one(&pool).await.unwrap();
    pool.close().await;
    assert_eq!(messages, 1, "one message stored: {delivered:?}");
    let rerun = store.find_run(first + 1).await.unwrap().unwrap();
    assert_eq!(rerun.status, RunStatus::Aborted, "the killed rerun: {rerun:?}");
}

/// A degrade killed after the rerun measured the build, before the rerun was judged, leaves the first run
/// `confirming` and the rerun `finished`, linked to it and unjudged. Built here from real runs (`degrade run`
/// twice on the slow build, the first judged by a plain `check`), with the two links the runner makes before a
/// rerun starts written by hand, where the kill would have left them. The next night, started by `check
/// --run-now` alone (no `serve`), first decides that pair as the runner would have (the rerun reproduced the
/// regression: both regressed, one alert for it), then judges itself after it (fast again: the recovery).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_regression_left_undecided_after_its_rerun_measured_is_decided_by_the_next_night() {
    let _apart = crate::support::ONE_HEAVY_TEST_AT_A_TIME.lock().await;
    again_while_spoiled(a_pair_left_undecided_then_a_fast_night).await;
}

/// A pair left `confirming` and `finished` by a kill, decided by the next night before it judges itself.
async fn a_pair_left_undecided_then_a_fast_night() -> Result<(), Spoiled> {
    let (target, hook, dir, store) = five_nights_in().await;
    let hook_url = hook.url();
    let env = [("HOOK", hook_url.as_str())];
    let (first, rerun) = two_valid_slow_runs(&dir, &target, &store).await?;
    let judged = degrade_child(dir.path(), &["check", "--run", &first.to_string()], &env);
    let output = judged.wait_with_output().await.unwrap();
    assert_eq!(output.status.code(), Some(1), "the slow run regressed: {:?}", text(&output));
    let database = format!("sqlite://{}", dir.path().join("degrade.db").display());
    let pool = sqlx::SqlitePool::connect(&database).await.unwrap();
    sqlx::query("update runs set status = 'confirming' where id = $1").bind(first).execute(&pool).await.unwrap();
    let link = "update runs set confirms_run_id = $1 where id = $2";
    sqlx::query(link).bind(first).bind(rerun).execute(&pool).await.unwrap();
    pool.close().await;
    assert!(hook.delivered().is_empty(), "{:?}", hook.delivered());

    // Nothing slow tonight (no request is numbered below 0).
    let (code, output, tonight, _) = judged_night(&dir, &hook, &target, (0, i64::MAX)).await?;
    assert_eq!(code, Some(0), "{output}");
    assert_eq!(store.find_run(first).await.unwrap().unwrap().status, RunStatus::Regressed);
    assert_eq!(store.find_run(rerun).await.unwrap().unwrap().status, RunStatus::Regressed);
    let delivered = hook.delivered();
    let events: Vec<(&str, i64)> =
        delivered.iter().map(|d| (d["event"].as_str().unwrap(), d["run_id"].as_i64().unwrap())).collect();
    assert_eq!(events, [("regression", rerun), ("recovery", tonight)], "{delivered:?}");
    let verdict = store.latest_verdict(tonight).await.unwrap().expect("tonight was judged");
    assert!(verdict.baseline_run_ids.contains(&rerun), "judged after the pair: {verdict:?}");
    assert!(!verdict.baseline_run_ids.contains(&first), "the pair is one night: {verdict:?}");
    store.close().await;
    Ok(())
}

/// Two runs in a row of the slow build through `degrade run` (measured, not judged), both valid. A busy
/// machine can make one invalid: measured again, the pair would follow a valid slow run, history now (two of
/// them are a new level the slow runs are judged after), so the story starts again ([`Spoiled`]).
async fn two_valid_slow_runs(dir: &tempfile::TempDir, target: &SlowFor, store: &Store) -> Result<(i64, i64), Spoiled> {
    target.slow((i64::MAX, i64::MAX));
    let mut runs = Vec::new();
    for _ in 0..2 {
        let output = degrade_child(dir.path(), &["run"], &[]).wait_with_output().await.unwrap();
        assert!(matches!(output.status.code(), Some(0 | 3)), "{:?}", text(&output));
        runs.push(store.last_runs("shop", 1).await.unwrap().remove(0));
    }
    if let Some(invalid) = runs.iter().find(|r| r.status != RunStatus::Finished) {
        return Err(Spoiled(format!("slow run #{} was not measured: {:?}", invalid.id, invalid.validity_reasons)));
    }
    Ok((runs[0].id, runs[1].id))
}

/// A build that burns CPU on a shared box can starve the generator in its rerun, which is then invalid and
/// confirms nothing. Machine trouble must never turn a regression into a pass: the rerun is tried again (three
/// in all), and when none can be judged the first verdict stands, regressed and alerted, with or without
/// `--strict`, and a plain `check` afterwards judges the first run, not an invalid rerun.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_regression_whose_reruns_cannot_be_measured_stands() {
    let _apart = crate::support::ONE_HEAVY_TEST_AT_A_TIME.lock().await;
    let (target, hook, dir, store) = five_nights_in().await;
    // Every request of the first run 40 ms slow; from the rerun on, every request crawls (400 ms), so the
    // generator drops arrivals past its 8 in flight.
    let (code, output, first) = first_run_measured(&store, &dir, &hook, || {
        target.slow((i64::MAX, i64::MAX));
        target.crawl(80);
    })
    .await;
    assert_eq!(code, Some(1), "{output}");
    let reruns = format!("#{}, #{}, #{}", first + 1, first + 2, first + 3);
    let said = format!("confirmation: the confirmation could not be made: reruns {reruns} of the same build");
    assert!(output.contains(&said), "{output}");
    assert!(output.contains("is invalid"), "and why: {output}");
    assert!(output.contains("only a rerun that measured the build can refute a regression"), "{output}");
    assert_eq!(store.find_run(first).await.unwrap().unwrap().status, RunStatus::Regressed);
    for rerun in first + 1..=first + 3 {
        let run = store.find_run(rerun).await.unwrap().unwrap();
        assert_eq!((run.status, store.confirmed_by(rerun).await.unwrap()), (RunStatus::Invalid, Some(first)));
    }
    assert!(store.find_run(first + 4).await.unwrap().is_none(), "three reruns at most");
    let delivered = hook.delivered();
    assert_eq!(delivered.len(), 1, "the regression is alerted: {delivered:?}");
    assert_eq!((delivered[0]["event"].as_str(), delivered[0]["run_id"].as_i64()), (Some("regression"), Some(first)));
    let summary = delivered[0]["summary"].as_str().unwrap();
    assert!(summary.contains("; the confirmation could not be made: reruns"), "the alert says so: {summary}");

    // The gate judges the night's first run, whose verdict stands, not its last invalid rerun.
    for args in [&["check"][..], &["check", "--strict"]] {
        let gate = degrade_child(dir.path(), args, &[("HOOK", hook.url().as_str())]).wait_with_output().await.unwrap();
        let (stdout, stderr) = text(&gate);
        assert_eq!(gate.status.code(), Some(1), "{args:?}: {stdout}{stderr}");
        assert!(stdout.contains(&format!("run #{first} ")), "{stdout}");
        assert!(stdout.contains("not confirmable: rerun #"), "{stdout}");
    }
    store.close().await;
}

/// A new build deployed between a night's first run and its rerun (by hand, or by another pipeline): the rerun
/// reads its build again and measured another one, so it can neither confirm nor refute the first run's
/// regression. The first verdict stands, alerted, and the rerun is stored under the build it measured, not
/// the first run's (the rerun of a fast new build had "refuted" the old one's regression under its name).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_that_measured_another_build_neither_confirms_nor_refutes() {
    let _apart = crate::support::ONE_HEAVY_TEST_AT_A_TIME.lock().await;
    let (target, hook, dir, store) = five_nights_in().await;
    // The first run's 80 requests slow, on build 1.0.0; then build 1.1.0, fast.
    let (code, output, first) = first_run_measured(&store, &dir, &hook, || {
        target.slow((80, i64::MAX));
        target.redeploy(80);
    })
    .await;
    assert_eq!(code, Some(1), "{output}");
    let said = format!("rerun #{} measured build 1.1.0, not 1.0.0: the build changed after the first run", first + 1);
    assert!(output.contains(&said), "{output}");
    let (first_run, rerun) =
        (store.find_run(first).await.unwrap().unwrap(), store.find_run(first + 1).await.unwrap().unwrap());
    assert_eq!((first_run.status, first_run.build_id.as_deref()), (RunStatus::Regressed, Some("1.0.0")));
    assert_eq!(rerun.build_id.as_deref(), Some("1.1.0"), "the rerun is stored under the build it measured");
    assert!(store.find_run(first + 2).await.unwrap().is_none(), "another build is not rerun again");
    let delivered = hook.delivered();
    assert_eq!(delivered.len(), 1, "the regression is alerted: {delivered:?}");
    assert_eq!((delivered[0]["event"].as_str(), delivered[0]["build"].as_str()), (Some("regression"), Some("1.0.0")));
    let rerun = store.find_run(first + 1).await.unwrap().unwrap();
    assert_eq!(rerun.status, RunStatus::Unconfirmed, "a rerun that decided nothing is no night of its own");

    // A build given with --build is the build of both runs, whatever the version source calls it (a git SHA
    // given, a semver served): the rerun confirms as any other.
    let hook_url = hook.url();
    for _ in 0..6 {
        let before = store.last_runs("shop", 1).await.unwrap().first().map_or(0, |r| r.id);
        target.slow((i64::MAX, i64::MAX));
        let args = ["check", "--run-now", "--build", "3f2a9c1"];
        let output = degrade_child(dir.path(), &args, &[("HOOK", hook_url.as_str())]).wait_with_output().await.unwrap();
        let (stdout, stderr) = text(&output);
        let runs: Vec<_> = store.last_runs("shop", 3).await.unwrap().into_iter().filter(|r| r.id > before).collect();
        if runs.iter().any(|r| r.status == RunStatus::Invalid) {
            continue; // this busy machine sent requests late: such a night judges nothing
        }
        assert!(!stdout.contains("measured build"), "{stdout}{stderr}");
        assert!(stdout.contains("confirmation: confirmed"), "{stdout}{stderr}");
        assert!(runs.iter().all(|r| r.build_id.as_deref() == Some("3f2a9c1")), "{runs:?}");
        store.close().await;
        return;
    }
    panic!("six nights in a row had an invalid run: this machine is too busy to measure anything");
}

/// One night through `check --run-now` after `set` shaped the target, again while this machine (busy with other
/// tests) made its first run invalid, which regresses nothing: the exit code, the output and the first run.
async fn first_run_measured(
    store: &Store,
    dir: &tempfile::TempDir,
    hook: &crate::support::receiver::Receiver,
    set: impl Fn(),
) -> (Option<i32>, String, i64) {
    for _ in 0..6 {
        let before = store.last_runs("shop", 1).await.unwrap().first().map_or(0, |r| r.id);
        set();
        let (code, output) = crate::slow_target::check_run_now(dir, hook).await;
        if store.find_run(before + 1).await.unwrap().unwrap().status != RunStatus::Invalid {
            return (code, output, before + 1);
        }
    }
    panic!("six first runs in a row were invalid: this machine is too busy");
}
