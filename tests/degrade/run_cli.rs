//! `degrade run` through the real binary: the table, JSON, the stored run (SQLite and PostgreSQL), the
//! build id, Ctrl-C, and `validate` over scenario files.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use degrade::store::{DatabaseUrl, Store};

use degrade::model::{OVERALL_ENDPOINT, RunStatus};

use crate::support::target::{StubTarget, refused_url};
use crate::support::{TestDb, assert_measured, degrade, degrade_child, project, text};

/// A project whose `checkout` scenario loads `target` at 50 sessions/s: two steps, one warm-up stage.
fn checkout_project(target: &StubTarget, config_extra: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    checkout_project_at(&target.url(), config_extra)
}

/// The same project with its target at `url`.
fn checkout_project_at(url: &str, config_extra: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let config = format!(
        "[[scenario]]\nname = \"checkout\"\nfile = \"scenarios/checkout.toml\"\ntarget = \"{url}\"\n{config_extra}"
    );
    let scenario = "[[flow]]\nname = \"buy\"\n[[flow.step]]\npath = \"/fast\"\nextract = { first = \"$.items[0].id\" }\n\
         [[flow.step]]\nmethod = \"POST\"\npath = \"/items\"\njson = { after = \"{{ first }}\" }\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"5s\"\nrate = 20\nmeasure = false\n\
         [[load.stage]]\nduration = \"30s\"\nrate = 50\n";
    project(&config, &[("scenarios/checkout.toml", scenario)])
}

async fn run_is_printed_and_stored(db: TestDb) {
    let target = StubTarget::start().await;
    let (dir, _) = checkout_project(&target, "[scenario.build]\nversion_command = \"echo 1.4.2\"\n");
    let url = db.url_string();
    let env = [("DEGRADE_DATABASE_URL", url.as_str())];
    let child = degrade_child(dir.path(), &["run", "--duration", "2s"], &env);
    let output = child.wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    // 0 for a valid run; 3 when this machine was too slow to keep the schedule (checked below).
    assert!(matches!(output.status.code(), Some(0 | 3)), "{stdout}\n{stderr}");
    assert!(stdout.contains("Run 1 of checkout (build 1.4.2): "), "{stdout}");
    assert!(stdout.contains("GET /fast") && stdout.contains("POST /items"), "{stdout}");
    assert!(stdout.contains("Valid: the generator delivered") || stdout.contains("Not valid, so"), "{stdout}");
    // How fast the machine itself was: a loopback echo, whatever this machine's speed.
    assert!(stdout.contains(" µs (p50/p90)") && stdout.contains("loopback echo "), "{stdout}");
    // The manual quotes a valid run; a machine too slow to keep the schedule prints another ending.
    if stdout.contains("): finished") {
        crate::support::quoted::assert_quoted("run-table", &stdout);
    }

    let store = Store::connect(&db.url).await.unwrap();
    let detail = store.run_detail(1).await.unwrap().unwrap();
    assert_measured(detail.run.status, &detail.run.validity_reasons);
    assert_eq!(detail.run.build_id.as_deref(), Some("1.4.2"));
    let source = store.scenario_source(1).await.unwrap().unwrap();
    assert!(source.contains("[[flow.step]]"), "{source}");
    let names: Vec<&str> = detail.endpoints.iter().map(|e| e.endpoint.as_str()).collect();
    assert_eq!(names, [OVERALL_ENDPOINT, "GET /fast", "POST /items"]);
    let load = detail.run.load_summary.as_ref().expect("a load summary");
    let echo = load.machine_echo_p50_us.zip(load.machine_echo_p90_us);
    assert!(echo.is_some_and(|(p50, p90)| p50 >= 1.0 && p50 <= p90), "the echo is stored: {load:?}");
    // 2 s stretched from 35 s: the measured stage is 30/35 of it, at 50/s.
    let fast = &detail.endpoints[1];
    assert!((80..=90).contains(&fast.requests), "{fast:?}");
    assert!(!fast.histogram.is_empty());
    assert!(!store.timeline(1).await.unwrap().is_empty());

    // The same scenario at full length is a different workload from this smoke run.
    let json = degrade_child(dir.path(), &["run", "--duration", "1s", "--rate-scale", "0.5", "-f", "json"], &env);
    let output = json.wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    assert!(matches!(output.status.code(), Some(0 | 3)), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["run_id"].as_i64(), Some(2));
    assert!(matches!(report["status"].as_str(), Some("finished" | "invalid")), "{report}");
    assert_eq!(report["endpoints"][0]["endpoint"], OVERALL_ENDPOINT);
    assert!(report["load_summary"]["target_rate"].as_f64().unwrap() > 24.9);
    let runs = store.last_runs("checkout", 2).await.unwrap();
    assert_ne!(runs[0].scenario_hash, runs[1].scenario_hash, "smoke runs of different scale are separate series");
    // Both runs were reshaped: each series says how, as its options read.
    let series = store.workload_series("checkout").await.unwrap();
    let reshapes: Vec<Option<&str>> = series.iter().map(|s| s.reshape.as_deref()).collect();
    assert_eq!(reshapes, [Some("--duration 1s --rate-scale 0.5"), Some("--duration 2s")]);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_printed_and_stored_in_sqlite() {
    run_is_printed_and_stored(TestDb::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn a_run_is_printed_and_stored_in_postgres() {
    run_is_printed_and_stored(TestDb::postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_the_run_and_stores_it_as_aborted() {
    let target = StubTarget::start().await;
    let (dir, _) = checkout_project(&target, "");
    let child = degrade_child(dir.path(), &["run", "checkout"], &[]);
    // Wait until load is flowing (bounded: the test fails rather than waits forever).
    let started = std::time::Instant::now();
    while target.counters.created.load(Ordering::Relaxed) == 0 {
        assert!(started.elapsed() < Duration::from_secs(20), "no load arrived");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pid = child.id().unwrap().to_string();
    let killed = tokio::process::Command::new("kill").args(["-INT", &pid]).status().await.unwrap();
    assert!(killed.success());
    let output = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output()).await.unwrap().unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stdout.contains("Run 1 of checkout: aborted"), "{stdout}");
    assert!(stdout.contains("stopped after"), "{stdout}");

    let store = Store::connect(&DatabaseUrl::Sqlite(dir.path().join("degrade.db"))).await.unwrap();
    let detail = store.run_detail(1).await.unwrap().unwrap();
    assert_eq!(detail.run.status, RunStatus::Aborted);
    let why = detail.run.failure_reason.as_deref().unwrap_or_default();
    assert!(why.contains("stopped after"), "an aborted run says why it stopped: {why:?}");
    // Stopped in the warm-up: nothing measured, but the timeline of what was sent is kept.
    assert_eq!(detail.endpoints[0].requests, 0);
    assert!(!store.timeline(1).await.unwrap().is_empty(), "what was recorded before Ctrl-C is kept");
    store.close().await;
}

#[test]
fn validate_checks_every_scenario_file_and_scenario_files_alone() {
    let config = "[[scenario]]\nname = \"a\"\nfile = \"a.toml\"\ntarget = \"http://127.0.0.1:9\"\n";
    let scenario = "[target]\nbase_url = \"http://127.0.0.1:9\"\n[[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"/x/{{ idd }}\"\n\
                    [load]\nmodel = \"closed\"\n[[load.stage]]\nduration = \"1m\"\nusers = 2\n";
    let (dir, _) = project(config, &[("a.toml", scenario)]);
    let output = degrade(dir.path(), &["validate"], &[]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    assert!(stderr.contains("a.toml:6:8: flow[0].step[0].path: in `{{ idd }}`: unknown variable `idd`"), "{stderr}");
    assert!(stderr.contains("1 problem in the scenarios"), "{stderr}");

    std::fs::write(dir.path().join("a.toml"), scenario.replace("{{ idd }}", "{{ seq() }}")).unwrap();
    let output = degrade(dir.path(), &["validate"], &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("endpoints GET /x/{seq}"), "{stdout}");
    assert!(stdout.contains("load      closed model, 1 stage(s), 1m in all (1m measured)"), "{stdout}");

    let alone = degrade(dir.path(), &["validate", "a.toml"], &[]);
    assert!(alone.status.success(), "{:?}", text(&alone));
    assert!(text(&alone).0.contains("a.toml is valid."));
}

/// Runs `args` in a checkout project with `build` as its `[scenario.build]` table; returns exit code, output
/// and the stored run 1.
async fn run_with_build(build: &str, args: &[&str]) -> (Option<i32>, String, degrade::model::Run) {
    let target = StubTarget::start().await;
    let (dir, _) = checkout_project(&target, &format!("[scenario.build]\n{}", build.replace("TARGET", &target.url())));
    // Two seconds of load are enough here: these tests are about what happens around the load.
    let scenario = dir.path().join("scenarios/checkout.toml");
    let shorter = std::fs::read_to_string(&scenario).unwrap().replace("\"30s\"", "\"2s\"").replace("\"5s\"", "\"1s\"");
    std::fs::write(&scenario, shorter).unwrap();
    let output = degrade_child(dir.path(), args, &[]).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    let store = Store::connect(&DatabaseUrl::Sqlite(dir.path().join("degrade.db"))).await.unwrap();
    let run = store.find_run(1).await.unwrap().expect("every attempt is stored");
    store.close().await;
    (output.status.code(), format!("{stdout}{stderr}"), run)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_deploy_is_stored_as_a_failed_run_with_its_output() {
    let build = "deploy_command = \"echo rolling out 1.4.3; echo 'image pull failed' >&2; exit 3\"\n";
    let (code, output, run) = run_with_build(build, &["run"]).await;
    assert_eq!(code, Some(2), "{output}");
    assert!(output.contains("run 1 failed before any load was sent: deploy_command failed"), "{output}");
    assert_eq!(run.status, RunStatus::Failed);
    let reason = run.failure_reason.unwrap();
    assert!(reason.contains("image pull failed") && reason.contains("rolling out 1.4.3"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_deploy_is_stopped_at_its_timeout_and_its_output_kept() {
    let build = "deploy_command = \"echo pulling image 1.4.3; sleep 30\"\ndeploy_timeout = \"1s\"\n";
    let started = std::time::Instant::now();
    let (code, output, run) = run_with_build(build, &["run"]).await;
    assert_eq!(code, Some(2));
    assert!(started.elapsed() < Duration::from_secs(20), "the deploy was not waited for");
    let reason = run.failure_reason.unwrap();
    assert!(reason.contains("did not finish within 1s") && reason.contains("pulling image 1.4.3"), "{reason}");
    assert!(output.contains("pulling image 1.4.3"), "{output}");
}

/// A deploy script that starts the service in the background (`server &`) is done when the script exits,
/// although the service still holds its output pipes; the service keeps running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deploy_that_starts_a_service_in_the_background_is_done_when_it_exits() {
    let build = "deploy_command = \"sleep 60 & echo $! > service.pid; echo service started\"\n\
                 deploy_timeout = \"20s\"\n";
    let started = std::time::Instant::now();
    let target = StubTarget::start().await;
    let (dir, _) = checkout_project(&target, &format!("[scenario.build]\n{build}"));
    let args = ["run", "--duration", "2s"];
    let output = degrade_child(dir.path(), &args, &[]).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    let service = std::fs::read_to_string(dir.path().join("service.pid")).unwrap().trim().to_owned();
    let alive = std::process::Command::new("kill").args(["-0", &service]).status().unwrap().success();
    let _ = std::process::Command::new("kill").arg(&service).status();
    assert!(matches!(output.status.code(), Some(0 | 3)), "{stdout}{stderr}");
    assert!(started.elapsed() < Duration::from_secs(18), "the deploy was waited for until its timeout");
    assert!(alive, "the service the deploy started was stopped with it");
    let store = Store::connect(&DatabaseUrl::Sqlite(dir.path().join("degrade.db"))).await.unwrap();
    assert_eq!(store.deploy_output(1).await.unwrap().as_deref(), Some("service started"));
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unhealthy_target_fails_the_run_after_the_health_timeout() {
    let build = "health_url = \"TARGET/status/503\"\nhealth_timeout = \"1s\"\n";
    let (code, output, run) = run_with_build(build, &["run"]).await;
    assert_eq!(code, Some(2), "{output}");
    let reason = run.failure_reason.unwrap();
    assert!(reason.contains("not healthy within 1s") && reason.contains("503"), "{reason}");
}

/// A deploy that succeeded before the health check failed: its output is kept with the failed run, since it
/// often says why the service did not come up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deploys_output_is_kept_when_the_health_check_fails_after_it() {
    let target = StubTarget::start().await;
    let build = format!(
        "[scenario.build]\ndeploy_command = \"echo started 1.4.4; echo missing DATABASE_URL >&2\"\n\
         health_url = \"{}/status/503\"\nhealth_timeout = \"1s\"\n",
        target.url()
    );
    let (dir, _) = checkout_project(&target, &build);
    let output = degrade_child(dir.path(), &["run"], &[]).wait_with_output().await.unwrap();
    let stderr = text(&output).1;
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    // The wait is said while it lasts, not only when it gave up.
    let waiting = format!("waiting up to 1s for health_url {}/status/503 to answer 2xx (it said: ", target.url());
    assert!(stderr.contains(&waiting), "{stderr}");
    let store = Store::connect(&DatabaseUrl::Sqlite(dir.path().join("degrade.db"))).await.unwrap();
    let kept = store.deploy_output(1).await.unwrap().unwrap_or_default();
    assert!(kept.contains("started 1.4.4") && kept.contains("missing DATABASE_URL"), "{kept:?}");
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_run_now_waits_for_health_names_the_build_runs_and_judges() {
    let build = "health_url = \"TARGET/fast\"\nversion_url = \"TARGET/json\"\nversion_pointer = \"/count\"\n";
    let (code, output, run) = run_with_build(build, &["check", "--run-now", "--strict"]).await;
    // The first run has no baseline: the verdict is inconclusive, which --strict turns into exit 3.
    assert_eq!(code, Some(3), "{output}");
    assert!(output.contains("inconclusive"), "{output}");
    assert_eq!(run.build_id.as_deref(), Some("3"));
    assert_measured(run.status, &run.validity_reasons);
}

/// `check --run-now` is the same night as `run`: `--build` names the build there too, instead of the
/// scenario's version_url; without `--run-now` there is no run for it to name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_run_now_takes_the_build_as_run_does() {
    let build = "version_url = \"TARGET/json\"\nversion_pointer = \"/count\"\n";
    let args = ["check", "--run-now", "--build", "1.1.1"];
    let (code, output, run) = run_with_build(build, &args).await;
    assert!(matches!(code, Some(0 | 3)), "{output}");
    assert_eq!(run.build_id.as_deref(), Some("1.1.1"), "{output}");
    let (dir, _) = project("", &[]);
    let output = degrade(dir.path(), &["check", "--build", "1.1.1"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).1.contains("--run-now"), "{}", text(&output).1);
}

#[test]
fn run_names_what_is_wrong_with_its_arguments() {
    let config = "[[scenario]]\nname = \"a\"\nfile = \"a.toml\"\ntarget = \"http://127.0.0.1:9\"\n";
    let (dir, _) = project(config, &[("a.toml", "# a workload\n")]);
    let output = degrade(dir.path(), &["run", "nope"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).1.contains("no [[scenario]] is named `nope` and no such .toml file exists (configured: a)"));
    let output = degrade(dir.path(), &["run", "a", "--rate-scale", "0"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).1.contains("`0` is not a positive number"), "{}", text(&output).1);
    let output = degrade(dir.path(), &["run", "a", "--duration", "soon"], &[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).1.contains("invalid value 'soon' for '--duration <DURATION>'"), "{}", text(&output).1);
}

/// Back-to-back runs of one scenario on one database, each a fresh process, as a nightly script does them:
/// the lease each one takes is gone when it ends, so none is ever refused.
#[tokio::test]
async fn fifty_short_runs_in_a_row_are_never_refused() {
    let target = StubTarget::start().await;
    let (dir, _) = checkout_project(&target, "");
    let db = TestDb::sqlite();
    let url = db.url_string();
    let env = [("DEGRADE_DATABASE_URL", url.as_str())];
    for n in 1..=50 {
        let child = degrade_child(dir.path(), &["run", "--duration", "300ms", "--rate-scale", "0.2"], &env);
        let output = child.wait_with_output().await.unwrap();
        let (stdout, stderr) = text(&output);
        assert!(!stderr.contains("already under way"), "run {n} was refused: {stderr}");
        assert!(matches!(output.status.code(), Some(0 | 3)), "run {n}: {stdout}\n{stderr}");
    }
    let store = Store::connect(&db.url).await.unwrap();
    assert_eq!(store.lease("checkout").await.unwrap(), None, "the last run left its lease behind");
    store.close().await;
}

/// A target that answers the first 400 requests of an 8 s run (about 4.7 s of it), then shuts down: a session
/// refused at its first step sends no second one, so under half of the requests fail (about 30 %), but the
/// run measured no build for its last seconds and is `failed`, saying when the target went away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_goes_away_part_way_fails_the_night() {
    let gone = Arc::new(tokio::sync::Notify::new());
    let served = Arc::new(AtomicUsize::new(0));
    let (counter, stop) = (Arc::clone(&served), Arc::clone(&gone));
    let app = axum::Router::new().fallback(move || {
        let (counter, stop) = (Arc::clone(&counter), Arc::clone(&stop));
        async move {
            if counter.fetch_add(1, Ordering::SeqCst) + 1 == 400 {
                stop.notify_one();
            }
            axum::Json(serde_json::json!({"items": [{"id": 1}]}))
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        axum::serve(listener, app).with_graceful_shutdown(async move { gone.notified().await }).await.unwrap();
    });
    let (dir, _) = checkout_project_at(&url, "");
    let run = degrade_child(dir.path(), &["run", "--duration", "8s"], &[]).wait_with_output().await.unwrap();
    server.abort();
    let (stdout, stderr) = text(&run);
    assert_eq!(run.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stdout.contains("Run 1 of checkout: failed"), "{stdout}");
    assert!(stdout.contains("the target stopped answering ") && stdout.contains("did not come back"), "{stdout}");
    assert!(!stdout.contains("Valid: the generator delivered"), "{stdout}");
}

/// A stopped target: the night is `failed` with the reason, exits 2 from `run` and `check --run-now`, opens a
/// run-failed episode, and is never judged (so never a baseline: only measured, valid runs are).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_target_fails_the_night_and_is_never_judged() {
    let (dir, _) = checkout_project_at(&refused_url().await, "");
    let run = degrade_child(dir.path(), &["run", "--duration", "1s"], &[]).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&run);
    assert_eq!(run.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stdout.contains("Run 1 of checkout: failed"), "{stdout}");
    assert!(stdout.contains("Failed, so it is never judged and never serves as a baseline:"), "{stdout}");
    assert!(stdout.contains("the target could not be reached: ") && stdout.contains(" connect)"), "{stdout}");
    assert!(!stdout.contains("Valid: the generator delivered"), "{stdout}");
    assert!(!stdout.contains("degrade check --run"), "a failed run is not offered to be judged: {stdout}");

    let check = degrade_child(dir.path(), &["check"], &[]).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&check);
    assert_eq!(check.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("run #1 failed: the target could not be reached"), "{stderr}");
    // The JUnit a CI step publishes says so too, instead of being empty.
    let junit = degrade_child(dir.path(), &["check", "--format", "junit"], &[]).wait_with_output().await.unwrap();
    let (stdout, _) = text(&junit);
    assert_eq!(junit.status.code(), Some(2), "{stdout}");
    assert!(stdout.starts_with("<?xml") && stdout.contains("errors=\"1\""), "{stdout}");
    assert!(stdout.contains("<error message=\"run #1 failed: the target could not be reached"), "{stdout}");

    let args = ["check", "--run-now", "--duration", "1s"];
    let run_now = degrade_child(dir.path(), &args, &[]).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&run_now);
    assert_eq!(run_now.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("run 2 failed: the target could not be reached"), "{stderr}");
    assert!(stderr.contains("another workload: it starts its own series"), "{stderr}");

    let store = Store::connect(&DatabaseUrl::Sqlite(dir.path().join("degrade.db"))).await.unwrap();
    for id in [1, 2] {
        let stored = store.find_run(id).await.unwrap().unwrap();
        assert_eq!(stored.status, RunStatus::Failed, "run {id}");
        assert!(store.latest_verdict(id).await.unwrap().is_none(), "run {id} was judged");
    }
    let episodes = store.unresolved_episodes("checkout").await.unwrap();
    assert!(episodes.iter().any(|e| e.kind == "run_failed" && e.opened_run_id == Some(2)), "{episodes:?}");
    store.close().await;
    // Its page lists no percentile as "judged": the run never is.
    let app =
        crate::support::app::TestApp::spawn(&crate::support::TestDb::sqlite_file(dir.path().join("degrade.db"))).await;
    let (_, page) = app.get("/runs/1").await;
    assert!(page.contains("Failed: the run measured no build") && !page.contains("p50 judged"), "{page}");
}

/// A short baseline says why when the scenario's other runs are another workload (smoke runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_baseline_of_smoke_runs_says_they_are_another_series() {
    let target = StubTarget::start().await;
    let (dir, _) = checkout_project(&target, "");
    for _ in 0..2 {
        let smoke = degrade_child(dir.path(), &["run", "--duration", "1s"], &[]).wait_with_output().await.unwrap();
        assert!(matches!(smoke.status.code(), Some(0 | 3)), "{}", text(&smoke).1);
    }
    let args = ["run", "--duration", "1s", "--rate-scale", "0.5"];
    let gentler = degrade_child(dir.path(), &args, &[]).wait_with_output().await.unwrap();
    assert!(matches!(gentler.status.code(), Some(0 | 3)), "{}", text(&gentler).1);
    let check = degrade_child(dir.path(), &["check"], &[]).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&check);
    assert_eq!(check.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("verdict: inconclusive: 0 valid runs in the baseline"), "{stdout}");
    // A smoke run this machine was too slow for is invalid and not counted: the message counts measured runs.
    let store = Store::connect(&DatabaseUrl::Sqlite(dir.path().join("degrade.db"))).await.unwrap();
    let mut measured = 0;
    for id in [1, 2] {
        measured += i32::from(store.find_run(id).await.unwrap().unwrap().status.is_valid_measurement());
    }
    store.close().await;
    let counted = match measured {
        0 => None,
        1 => Some("the 1 earlier run of this scenario is another workload".to_owned()),
        n => Some(format!("the {n} earlier runs of this scenario are another workload")),
    };
    if let Some(counted) = counted {
        assert!(stdout.contains(&counted), "{stdout}");
        // Said of the smoke run judged, which the other smoke runs' shape is not.
        assert!(stdout.contains("; run #3 is a smoke run (--duration 1s --rate-scale 0.5), judged only"), "{stdout}");
    }
}

/// A smoke run of a scenario that searches capacity runs its short night only: the search would climb to its
/// `max_rate` whatever the night's size.
#[tokio::test]
async fn a_smoke_run_does_not_search_capacity_and_says_so() {
    let target = StubTarget::start().await;
    let search = "[scenario.gates]\nmax_p75_ms = 1000\n[scenario.capacity]\nstart_rate = 50\nhold = \"2s\"\n\
                  max_rate = 400\nmax_time = \"1m\"\n";
    let (dir, _) = checkout_project(&target, search);
    let smoke = degrade_child(dir.path(), &["run", "--duration", "1s"], &[]).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&smoke);
    assert!(matches!(smoke.status.code(), Some(0 | 3)), "{stdout}{stderr}");
    assert!(
        stderr.contains(
            "warning: a smoke run (--duration, --rate-scale) does not search capacity: the search climbs to 400 \
             req/s whatever the night's size; run without them to search"
        ),
        "{stderr}"
    );
    let store = Store::connect(&DatabaseUrl::Sqlite(dir.path().join("degrade.db"))).await.unwrap();
    assert_eq!(store.capacity(1).await.unwrap(), None, "{stdout}");
    store.close().await;
}

/// A night whose own stages were invalid (here its feeder ran out, so the run ended early) runs no capacity
/// search, and `degrade run` says so instead of printing nothing about it (a trial's night with a schedule lag).
#[tokio::test]
async fn a_night_that_ended_invalid_says_it_searched_no_capacity() {
    let target = StubTarget::start().await;
    let config = format!(
        "[[scenario]]\nname = \"short\"\nfile = \"scenarios/short.toml\"\ntarget = \"{}\"\n[scenario.gates]\n\
         max_p75_ms = 1000\n[scenario.capacity]\nstart_rate = 50\nhold = \"2s\"\nmax_rate = 400\nmax_time = \"1m\"\n",
        target.url()
    );
    let scenario = "[[data]]\nname = \"users\"\nfile = \"users.csv\"\nwhen_exhausted = \"stop\"\n\
                    [[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"/named/{{ users.name }}\"\n\
                    [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"3s\"\nrate = 20\n";
    let files = [("scenarios/short.toml", scenario), ("scenarios/users.csv", "name\nann\nbob\n")];
    let (dir, _) = project(&config, &files);
    let night = degrade_child(dir.path(), &["run"], &[]).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&night);
    assert_eq!(night.status.code(), Some(3), "an invalid night: {stdout}{stderr}");
    assert!(
        stdout.contains(
            "Capacity search: not run: the night's own stages were invalid (why below), and a search runs only \
             after a valid night."
        ),
        "{stdout}"
    );
    assert!(stdout.contains("the run ended early"), "{stdout}");
}

/// A generator stopped for 2 s (a VM pause, `kill -STOP`) mid-run at 1,500 arrivals/s with 10 in flight at
/// most: the backlog of dropped arrivals is recorded in the seconds they were due, and the run is stored
/// (invalid, since the stall cut its load), with one timeline row per endpoint and second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_generator_still_stores_its_run() {
    let target = StubTarget::start().await;
    let config = format!("[[scenario]]\nname = \"burst\"\nfile = \"burst.toml\"\ntarget = \"{}\"\n", target.url());
    let scenario = "[[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"/echo\"\n\
                    [load]\nmodel = \"open\"\nmax_in_flight = 10\n[[load.stage]]\nduration = \"5s\"\nrate = 1500\n";
    let (dir, _) = project(&config, &[("burst.toml", scenario)]);
    let child = degrade_child(dir.path(), &["run"], &[]);
    let started = std::time::Instant::now();
    while target.counters.echoed.lock().unwrap().len() < 500 {
        assert!(started.elapsed() < Duration::from_secs(20), "no load arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = child.id().unwrap().to_string();
    assert!(tokio::process::Command::new("kill").args(["-STOP", &pid]).status().await.unwrap().success());
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(tokio::process::Command::new("kill").args(["-CONT", &pid]).status().await.unwrap().success());
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output()).await.unwrap().unwrap();
    let (stdout, stderr) = text(&output);
    assert!(!stderr.contains("cannot store"), "{stdout}\n{stderr}");
    assert!(matches!(output.status.code(), Some(0 | 3)), "{stdout}\n{stderr}");
    let store = Store::connect(&DatabaseUrl::Sqlite(dir.path().join("degrade.db"))).await.unwrap();
    let detail = store.run_detail(1).await.unwrap().unwrap();
    assert!(matches!(detail.run.status, RunStatus::Invalid | RunStatus::Finished), "{:?}", detail.run);
    let timeline = store.timeline(1).await.unwrap();
    let mut seconds: Vec<(String, i64)> = timeline.iter().map(|p| (p.endpoint.clone(), p.elapsed_s)).collect();
    let rows = seconds.len();
    seconds.dedup();
    assert_eq!(seconds.len(), rows, "a second was written twice");
    let dropped: i64 = timeline.iter().filter_map(|p| p.errors_by_class.get("dropped")).sum();
    let recorded: i64 = timeline.iter().map(|p| p.requests).sum();
    assert!(dropped > 0 && recorded > 5000, "{dropped} dropped of {recorded}: the stall's backlog is missing");
    store.close().await;
}
