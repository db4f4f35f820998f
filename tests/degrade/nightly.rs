//! The nightly service: the chain a scheduled run goes through (claim, deploy, load, judge, alerts), the
//! scheduler in-process and inside the real `degrade serve`, and the lease that keeps two instances on one
//! PostgreSQL database from running a scenario at the same time. Targets and receivers are real servers on
//! 127.0.0.1.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{TimeDelta, Utc};
use degrade::clock::Clock;
use degrade::model::{Run, RunStatus};
use degrade::notify::Courier;
use degrade::pipeline::Runner;
use degrade::scheduler::Scheduler;
use degrade::service::{ServeOptions, Stopped, serve};
use degrade::store::Store;

use crate::support::config::{QUICK_SCENARIO, alerting_config, load};
use crate::support::nights::{night, store_night};
use crate::support::receiver::Receiver;
use crate::support::target::StubTarget;
use crate::support::{TestDb, degrade_child, project, text};

fn new_runner(store: &Store, config: &Arc<degrade::config::Config>) -> (Runner, tokio::sync::watch::Sender<bool>) {
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    (Runner::new(store.clone(), config.clone(), stop), stop_tx)
}

/// The quick scenario against `target` on a fresh SQLite database, its webhooks unreachable: the project, its
/// config, the database and its store.
async fn quick_project(target: &StubTarget) -> (tempfile::TempDir, Arc<degrade::config::Config>, TestDb, Store) {
    let (dir, config_path) =
        project(&alerting_config(&format!("target = \"{}\"", target.url())), &[("quick.toml", QUICK_SCENARIO)]);
    let config = load(&config_path, "http://127.0.0.1:9/hook", "http://127.0.0.1:9/hook");
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    (dir, config, db, store)
}

/// Polls `store` until `done` holds for the scenario's runs, or fails after `limit`.
async fn wait_for_runs(store: &Store, limit: Duration, done: impl Fn(&[Run]) -> bool) -> Vec<Run> {
    let started = Instant::now();
    loop {
        let runs = store.last_runs("checkout", 100).await.unwrap();
        if done(&runs) {
            return runs;
        }
        assert!(started.elapsed() < limit, "gave up waiting; runs so far: {runs:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_failed_deploy_alerts_once_and_a_good_run_keeps_the_deploy_output() {
    let target = StubTarget::start().await;
    let receiver = Receiver::start().await;
    let failing = format!(
        "target = \"{}\"\n[scenario.build]\ndeploy_command = \"echo rolling out 1.4.2; echo image pull failed >&2; exit 3\"\n",
        target.url()
    );
    let (dir, config_path) = project(&alerting_config(&failing), &[("quick.toml", QUICK_SCENARIO)]);
    let config = load(&config_path, &receiver.url(), &receiver.url());
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    let (runner, _stop) = new_runner(&store, &config);
    let courier = Courier::new(store.clone(), config.clone()).unwrap();

    for _ in 0..2 {
        let ended = runner.run_scenario("checkout", None).await.unwrap().expect("nothing else is running");
        assert_eq!(ended.status, RunStatus::Failed);
        assert!(ended.failure.as_deref().unwrap().contains("image pull failed"), "{ended:?}");
    }
    assert_eq!(courier.deliver_due().await.unwrap(), 1, "two failed nights, one run_failed episode, one alert");
    let [alert] = receiver.delivered().try_into().unwrap();
    assert_eq!(alert["text"], "degrade: a run of checkout failed");
    assert!(alert.to_string().contains("deploy_command failed (exit status: 3)"), "{alert:#}");

    let working = format!(
        "target = \"{}\"\n[scenario.build]\ndeploy_command = \"echo deployed 1.4.3\"\nversion_command = \"echo 1.4.3\"\n",
        target.url()
    );
    let (_dir2, config_path) = project(&alerting_config(&working), &[("quick.toml", QUICK_SCENARIO)]);
    let config = load(&config_path, &receiver.url(), &receiver.url());
    let (runner, _stop) = new_runner(&store, &config);
    let ended = runner.run_scenario("checkout", None).await.unwrap().unwrap();
    let run = store.find_run(ended.run_id).await.unwrap().unwrap();
    crate::support::assert_measured(ended.status, &run.validity_reasons);
    assert!(ended.report.is_some(), "a measured run is judged (inconclusive without history)");
    assert_eq!(run.build_id.as_deref(), Some("1.4.3"));
    assert_eq!(store.deploy_output(ended.run_id).await.unwrap().as_deref(), Some("deployed 1.4.3"));
    let episodes = store.episodes(10).await.unwrap();
    assert_eq!((episodes[0].kind.as_str(), episodes[0].state.as_str()), ("run_failed", "resolved"));
    // Whoever was told the runs failed is told they measure again, once, on the same episode.
    assert_eq!(courier.deliver_due().await.unwrap(), 1, "a failed run's episode resolving says so");
    let [_, back] = receiver.delivered().try_into().unwrap();
    assert_eq!(back["text"], "degrade: checkout is measured again", "{back:#}");
    let said = format!("run #{} measured checkout again (inconclusive), after run #", ended.run_id);
    assert!(back.to_string().contains(&said) && back.to_string().contains("image pull failed"), "{back:#}");
    drop(dir);
}

#[tokio::test]
async fn two_overlapping_triggers_run_once() {
    let target = StubTarget::start().await;
    let (_dir, config, _db, store) = quick_project(&target).await;
    let (runner, _stop) = new_runner(&store, &config);
    let fire_time = Utc::now();
    let (a, b) = tokio::join!(runner.run_scenario("checkout", None), runner.run_scenario("checkout", None));
    let ran: Vec<_> = [a.unwrap(), b.unwrap()].into_iter().flatten().collect();
    assert_eq!(ran.len(), 1, "{ran:?}");
    // Another degrade whose job for the same fire time fires a moment late finds that run and skips.
    let (late, _stop) = new_runner(&store, &config);
    assert!(late.run_scenario("checkout", Some(fire_time)).await.unwrap().is_none());
    assert_eq!(store.last_runs("checkout", 10).await.unwrap().len(), 1);
}

/// A scheduled night finds the lease of a degrade killed a moment before (not renewed, running out): it waits
/// the lease out and runs, instead of losing the night (a trial's restart after a `kill -9` lost two so). A
/// live holder renews and keeps its lease, and the night is refused once it is asked again.
#[tokio::test]
async fn a_scheduled_night_waits_out_the_lease_of_a_killed_degrade() {
    let target = StubTarget::start().await;
    let (_dir, config, _db, store) = quick_project(&target).await;
    let now = Utc::now();
    assert!(store.acquire_lease("checkout", "gone:4242:0", now, now + TimeDelta::seconds(2)).await.unwrap());
    let (runner, _stop) = new_runner(&store, &config);
    let ran = runner.run_scenario("checkout", Some(now)).await.unwrap();
    assert!(ran.is_some(), "the night ran once the dead holder's lease ran out");
    assert_eq!(store.last_runs("checkout", 10).await.unwrap().len(), 1);

    // A live holder keeps renewing: the night is not run.
    let live = store.clone();
    let renewing = tokio::spawn(async move {
        for _ in 0..30 {
            let now = Utc::now();
            live.acquire_lease("checkout", "live:1:0", now, now + TimeDelta::seconds(5)).await.unwrap();
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    });
    while store.lease("checkout").await.unwrap().is_none_or(|l| l.holder != "live:1:0") {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(runner.run_scenario("checkout", Some(Utc::now())).await.unwrap().is_none());
    assert_eq!(store.last_runs("checkout", 10).await.unwrap().len(), 1);
    renewing.abort();
}

#[tokio::test]
async fn a_missing_run_raises_one_alert_across_restarts() {
    let receiver = Receiver::start().await;
    let (_dir, config_path) = project(
        &alerting_config("schedule = \"0 2 * * *\"\ntimezone = \"Europe/Berlin\""),
        &[("quick.toml", QUICK_SCENARIO)],
    );
    let config = load(&config_path, &receiver.url(), &receiver.url());
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    // The last night that ran was three nights ago.
    store_night(&store, "checkout", 9, 100.0, RunStatus::Finished).await;
    for _ in 0..2 {
        let (runner, _stop) = new_runner(&store, &config);
        let scheduler = Scheduler::start(runner, store.clone(), config.clone()).await.unwrap();
        Courier::new(store.clone(), config.clone()).unwrap().deliver_due().await.unwrap();
        scheduler.stop().await;
    }
    let [alert] = receiver.delivered().try_into().unwrap();
    assert_eq!(alert["text"], "degrade: no recent run of checkout");
    let summary = alert["blocks"][2]["elements"][0]["text"].as_str().unwrap();
    assert!(summary.contains("was due at") && summary.contains(&night(9).format("%Y-%m-%d").to_string()), "{summary}");
    assert_eq!(store.runs_between("checkout", night(0), Utc::now()).await.unwrap().len(), 1, "catch_up is off");
    // A run starts at last: the episode ends, and whoever was told it began is told so, once.
    let run = store_night(&store, "checkout", 12, 100.0, RunStatus::Finished).await;
    degrade::pipeline::alerting::after_start(&store, &config, "checkout", run, Utc::now()).await.unwrap();
    degrade::pipeline::alerting::after_start(&store, &config, "checkout", run, Utc::now()).await.unwrap();
    Courier::new(store.clone(), config.clone()).unwrap().deliver_due().await.unwrap();
    let [_, resumed] = receiver.delivered().try_into().unwrap();
    assert_eq!(resumed["text"], "degrade: runs of checkout have resumed", "{resumed:#}");
    let said = format!("run #{run} of checkout started: runs have resumed (none had started when one was due");
    assert!(resumed.to_string().contains(&said), "{resumed:#}");
}

/// The scheduler's decisions read its runner's clock: the test moves it on two days instead of waiting.
#[tokio::test]
async fn the_scheduler_decides_what_is_missing_by_its_clock() {
    let (_dir, config_path) = project(&alerting_config("schedule = \"0 2 * * *\""), &[("quick.toml", QUICK_SCENARIO)]);
    let config = load(&config_path, "http://127.0.0.1:9/hook", "http://127.0.0.1:9/hook");
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    store_night(&store, "checkout", 9, 100.0, RunStatus::Finished).await;
    // An hour after that night's run: the next one is not due for a day.
    let clock = Clock::manual(night(9) + TimeDelta::hours(1));
    let look = |clock: &Clock| {
        let (runner, _stop) = new_runner(&store, &config);
        let (runner, store, config) = (runner.with_clock(clock.clone()), store.clone(), config.clone());
        async move { Scheduler::start(runner, store, config).await.unwrap().stop().await }
    };
    look(&clock).await;
    assert!(store.episodes(10).await.unwrap().is_empty(), "nothing was due yet");
    clock.advance(TimeDelta::days(2));
    look(&clock).await;
    let [missing] = store.episodes(10).await.unwrap().try_into().unwrap();
    assert_eq!(missing.kind, "missing_run");
    assert_eq!(missing.opened_at, clock.now(), "stamped on the scheduler's clock");
}

#[tokio::test]
async fn catch_up_runs_the_night_missed_while_down() {
    let target = StubTarget::start().await;
    let extra = format!("target = \"{}\"\nschedule = \"0 2 * * *\"\ncatch_up = true", target.url());
    let (_dir, config_path) = project(&alerting_config(&extra), &[("quick.toml", QUICK_SCENARIO)]);
    let config = load(&config_path, "http://127.0.0.1:9/hook", "http://127.0.0.1:9/hook");
    let db = TestDb::sqlite();
    let store = Store::connect(&db.url).await.unwrap();
    store_night(&store, "checkout", 9, 100.0, RunStatus::Finished).await;
    let (runner, _stop) = new_runner(&store, &config);
    let scheduler = Scheduler::start(runner, store.clone(), config.clone()).await.unwrap();
    let runs =
        wait_for_runs(&store, Duration::from_secs(30), |runs| runs.len() == 2 && runs[0].status != RunStatus::Running)
            .await;
    scheduler.stop().await;
    assert!(runs[0].started_at > night(11), "{runs:#?}");
    assert!(store.episodes(10).await.unwrap().is_empty(), "the caught-up run is not missing");
}

/// Two schedulers with their own pools and lease names on one database, firing every two seconds a
/// scenario that runs for three: whichever takes the lease runs, the other skips, and no runs overlap.
async fn two_schedulers_never_overlap(db: TestDb) {
    let target = StubTarget::start().await;
    let scenario = QUICK_SCENARIO.replace("duration = \"1s\"", "duration = \"3s\"");
    let extra = format!("target = \"{}\"\nschedule = \"*/2 * * * * *\"", target.url());
    let (_dir, config_path) = project(&alerting_config(&extra), &[("quick.toml", &scenario)]);
    let config = load(&config_path, "http://127.0.0.1:9/hook", "http://127.0.0.1:9/hook");
    let mut schedulers = Vec::new();
    let mut stops = Vec::new();
    for _ in 0..2 {
        let store = Store::connect(&db.url).await.unwrap();
        let (runner, stop) = new_runner(&store, &config);
        schedulers.push((Scheduler::start(runner.clone(), store, config.clone()).await.unwrap(), runner));
        stops.push(stop);
    }
    let store = Store::connect(&db.url).await.unwrap();
    wait_for_runs(&store, Duration::from_secs(40), |runs| {
        runs.iter().filter(|r| r.status != RunStatus::Running).count() >= 2
    })
    .await;
    for (scheduler, _) in schedulers {
        scheduler.stop().await;
    }
    let mut runs =
        wait_for_runs(&store, Duration::from_secs(20), |runs| runs.iter().all(|r| r.status != RunStatus::Running))
            .await;
    runs.reverse();
    for pair in runs.windows(2) {
        let (earlier, later) = (&pair[0], &pair[1]);
        assert!(later.started_at >= earlier.finished_at.unwrap(), "runs overlap: {earlier:#?} {later:#?}");
    }
}

#[tokio::test]
async fn two_schedulers_never_overlap_on_sqlite() {
    two_schedulers_never_overlap(TestDb::sqlite()).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn two_schedulers_never_overlap_on_postgres() {
    let db = TestDb::postgres().await;
    two_schedulers_never_overlap(db).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn a_database_outage_during_a_run_delays_storing_it_instead_of_losing_it() {
    use sqlx::{AssertSqlSafe, Connection, Executor};
    let db = TestDb::postgres().await;
    let target = StubTarget::start().await;
    let scenario = QUICK_SCENARIO.replace("duration = \"1s\"", "duration = \"2s\"");
    let (_dir, config_path) =
        project(&alerting_config(&format!("target = \"{}\"", target.url())), &[("quick.toml", &scenario)]);
    let config = load(&config_path, "http://127.0.0.1:9/hook", "http://127.0.0.1:9/hook");
    let store = Store::connect(&db.url).await.unwrap();
    let (runner, _stop) = new_runner(&store, &config);
    let run = tokio::spawn(async move { runner.run_scenario("checkout", None).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The database goes away while the load runs (names are generated by the test support, never input).
    let (server, name) = db.postgres_server().unwrap();
    let mut admin = sqlx::PgConnection::connect(server).await.unwrap();
    admin.execute(AssertSqlSafe(format!("alter database {name} allow_connections false"))).await.unwrap();
    let kick = format!("select pg_terminate_backend(pid) from pg_stat_activity where datname = '{name}'");
    admin.execute(AssertSqlSafe(kick)).await.unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    admin.execute(AssertSqlSafe(format!("alter database {name} allow_connections true"))).await.unwrap();
    let ended = run.await.unwrap().unwrap().expect("nothing else was running");
    let stored = store.run_detail(ended.run_id).await.unwrap().unwrap();
    crate::support::assert_measured(stored.run.status, &stored.run.validity_reasons);
    assert!(stored.endpoints.iter().any(|e| e.requests == 20), "{:#?}", stored.endpoints);
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set DEGRADE_TEST_POSTGRES_URL and pass --include-ignored (.ci/run does)"]
async fn leases_keep_out_other_holders_until_released_or_expired() {
    let db = TestDb::postgres().await;
    let (a, b) = (Store::connect(&db.url).await.unwrap(), Store::connect(&db.url).await.unwrap());
    let now = Utc::now();
    let minute = chrono::TimeDelta::minutes(1);
    assert!(a.acquire_lease("checkout", "a", now, now + minute).await.unwrap());
    assert!(!b.acquire_lease("checkout", "b", now, now + minute).await.unwrap());
    assert!(a.acquire_lease("checkout", "a", now, now + minute).await.unwrap(), "the holder renews");
    a.release_lease("checkout", "a").await.unwrap();
    assert!(b.acquire_lease("checkout", "b", now, now + minute).await.unwrap());
    // b crashes; its lease runs out and a takes over.
    assert!(!a.acquire_lease("checkout", "a", now, now + minute).await.unwrap());
    assert!(a.acquire_lease("checkout", "a", now + minute, now + minute * 2).await.unwrap());
}

/// The real `degrade serve` binary on a SQLite database with `checkout` scheduled every two seconds against
/// `target`: SIGTERM handling and the log lines are the binary's own, so this one test goes through it.
struct Served {
    child: tokio::process::Child,
    store: Store,
    _db: TestDb,
    dir: tempfile::TempDir,
}

impl Served {
    async fn start(target: &StubTarget, scenario: &str, hook: &str, grace: &str) -> Self {
        let db = TestDb::sqlite();
        let entry = format!("target = \"{}\"\nschedule = \"*/2 * * * * *\"", target.url());
        let config = format!("[database]\nurl = \"{}\"\n{}", db.url_string(), alerting_config(&entry));
        let (dir, _) = project(&config, &[("quick.toml", scenario)]);
        let env = [("DEGRADE_SERVER_LISTEN", "127.0.0.1:0"), ("HOOK", hook), ("OPS", "http://127.0.0.1:9/x")];
        // Migrated before the server starts, so the two never race to create the schema.
        let store = Store::connect(&db.url).await.unwrap();
        let child = degrade_child(dir.path(), &["serve", "--shutdown-grace", grace], &env);
        Self { child, store, _db: db, dir }
    }

    /// Waits (at most a minute) until `done` holds for the stored runs; fails with the server's output.
    async fn wait_until(&mut self, done: impl Fn(&[Run]) -> bool) -> Vec<Run> {
        let started = Instant::now();
        loop {
            let runs = self.store.last_runs("checkout", 100).await.unwrap();
            if done(&runs) {
                return runs;
            }
            if self.child.try_wait().unwrap().is_some() || started.elapsed() > Duration::from_mins(1) {
                use tokio::io::AsyncReadExt;
                let _ = self.child.start_kill();
                let mut stderr = String::new();
                let _ = self.child.stderr.take().unwrap().read_to_string(&mut stderr).await;
                panic!("gave up waiting; runs: {runs:#?}\n{stderr}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// A second `degrade serve` of the same project, on the same SQLite file: its exit code and output.
    async fn another(&self, hook: &str) -> (Option<i32>, String) {
        let env = [("DEGRADE_SERVER_LISTEN", "127.0.0.1:0"), ("HOOK", hook), ("OPS", "http://127.0.0.1:9/x")];
        let child = degrade_child(self.dir.path(), &["serve"], &env);
        let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output()).await.unwrap().unwrap();
        let (stdout, stderr) = text(&output);
        (output.status.code(), format!("{stdout}{stderr}"))
    }

    /// Sends SIGTERM and returns the exit code and standard error (the database stays for the test to read).
    async fn terminate(&mut self) -> (Option<i32>, String) {
        use tokio::io::AsyncReadExt;
        let mut stderr_pipe = self.child.stderr.take().unwrap();
        let stderr = tokio::spawn(async move {
            let mut stderr = String::new();
            let _ = stderr_pipe.read_to_string(&mut stderr).await;
            stderr
        });
        let pid = self.child.id().unwrap().to_string();
        assert!(tokio::process::Command::new("kill").args(["-TERM", &pid]).status().await.unwrap().success());
        let status = tokio::time::timeout(Duration::from_secs(45), self.child.wait()).await.unwrap().unwrap();
        (status.code(), stderr.await.unwrap())
    }
}

#[tokio::test]
async fn serve_runs_the_schedule_and_stops_gracefully() {
    let target = StubTarget::start().await;
    let receiver = Receiver::start().await;
    let mut served = Served::start(&target, QUICK_SCENARIO, &receiver.url(), "20s").await;
    let runs = served.wait_until(|runs| runs.iter().any(|r| r.status != RunStatus::Running)).await;
    // A second serve on the same SQLite file is refused: it would run the schedule beside the first (a trial's
    // second serve caught up a night the first had skipped, and a night was lost between their leases).
    let (code, output) = served.another(&receiver.url()).await;
    assert_eq!(code, Some(2), "{output}");
    assert!(output.contains("another degrade serve runs the schedule on") && output.contains("takes one"), "{output}");
    assert!(!output.contains("is serving the dashboard"), "refused before it says it serves: {output}");
    let (code, stderr) = served.terminate().await;
    let store = &served.store;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("scheduled") && stderr.contains("next_run"), "{stderr}");
    assert!(!stderr.contains(&receiver.url()), "webhook URLs are secrets: {stderr}");
    assert!(!stderr.contains('\u{1b}'), "a log that is not a terminal gets no colour codes: {stderr:?}");
    let finished = runs.iter().find(|r| r.status != RunStatus::Running).unwrap();
    crate::support::assert_measured(finished.status, &finished.validity_reasons);
    let after = store.last_runs("checkout", 100).await.unwrap();
    assert!(after.iter().all(|r| r.status != RunStatus::Running), "runs under way finished in the grace: {after:#?}");
}

/// `degrade::service::serve` in this process: the same service `degrade serve` runs, stopped by a channel.
#[tokio::test]
async fn serve_stops_a_run_that_outlasts_the_grace_and_stores_it_as_aborted() {
    let target = StubTarget::start().await;
    let long = QUICK_SCENARIO.replace("duration = \"1s\"", "duration = \"5m\"");
    let db = TestDb::sqlite();
    let entry = format!("target = \"{}\"\nschedule = \"*/2 * * * * *\"", target.url());
    let config = format!("[database]\nurl = \"{}\"\n{}", db.url_string(), alerting_config(&entry));
    let (_dir, config_path) = project(&config, &[("quick.toml", &long)]);
    let config = Arc::unwrap_or_clone(load(&config_path, "http://127.0.0.1:9/x", "http://127.0.0.1:9/x"));
    let store = Store::connect(&db.url).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let options = ServeOptions { shutdown_grace: Duration::from_secs(1), scheduler: true };
    let service = tokio::spawn(serve(config, listener, options, async move {
        let _ = stopped.await;
    }));
    let started = Instant::now();
    while !store.last_runs("checkout", 10).await.unwrap().iter().any(|r| r.status == RunStatus::Running) {
        assert!(started.elapsed() < Duration::from_mins(1) && !service.is_finished(), "no run started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.send(()).unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(45), service).await.unwrap().unwrap().unwrap();
    assert_eq!(ended, Stopped { runs_stopped: 1 });
    let [run] = store.last_runs("checkout", 100).await.unwrap().try_into().unwrap();
    assert_eq!(run.status, RunStatus::Aborted, "{run:#?}");
    let detail = store.run_detail(run.id).await.unwrap().unwrap();
    assert!(detail.endpoints.iter().any(|e| e.requests > 0), "what it measured is kept: {detail:#?}");
}

#[tokio::test]
async fn notify_test_posts_to_every_webhook_and_names_the_ones_that_failed() {
    let good = Receiver::start().await;
    let bad = Receiver::start().await;
    bad.answer(crate::support::receiver::Answer::Fail(500));
    let (dir, _) = project(&alerting_config(""), &[("quick.toml", QUICK_SCENARIO)]);
    let db = dir.path().join("degrade.db");
    let db_url = format!("sqlite://{}", db.display());
    let env = [("HOOK", good.url()), ("OPS", bad.url()), ("DEGRADE_DATABASE_URL", db_url)];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // A child on this runtime: the receivers answer on it while the binary waits.
    let output = degrade_child(dir.path(), &["notify", "test"], &env).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stdout.contains("team: delivered"), "{stdout}");
    assert!(stdout.contains("ops: not delivered: the receiver answered 500"), "{stdout}");
    assert!(!stdout.contains(&bad.url()) && !stderr.contains(&bad.url()), "{stdout}{stderr}");
    let [slack] = good.delivered().try_into().unwrap();
    assert_eq!(slack["blocks"][0]["text"]["text"], "degrade test message");
    assert_eq!(bad.posts()[0].body["event"], "test");
}

#[tokio::test]
async fn notify_test_says_when_no_webhook_is_configured() {
    let (dir, _) =
        project("[[scenario]]\nname = \"checkout\"\nfile = \"quick.toml\"\n", &[("quick.toml", QUICK_SCENARIO)]);
    let db_url = format!("sqlite://{}", dir.path().join("degrade.db").display());
    let output = degrade_child(dir.path(), &["notify", "test"], &[("DEGRADE_DATABASE_URL", &db_url)])
        .wait_with_output()
        .await
        .unwrap();
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no [[notify]] webhook is configured in degrade.toml"), "{stderr}");
}
