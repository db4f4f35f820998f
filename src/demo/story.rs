//! `degrade demo`: the whole job on the bundled API in a couple of minutes. It starts the dashboard and a local
//! alert receiver, deploys the demo API (each build a process of its own, its CPU scraped at `/metrics` every
//! second), runs the demo scenario as several short nights of build 1.0.x (labelled as consecutive nights so
//! `last-7d` has a history), then one of build 1.1.0, which slows one route and spends more CPU on each
//! request off the answers' path (the other routes answer as fast as before), judges it, and delivers the
//! alert; then the capacity chapter (`capacity_story`): build 1.2.0, whose board exports carry a quarter less
//! while answering as fast at the nightly rate, caught by the capacity verdict alone; then it says what to
//! look at.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use chrono::{TimeDelta, Utc};

use super::capacity_story::{self, CAPACITY_NIGHTS, CapacityVerdict};
use super::deploy::{Build, Deployer};
use super::export::EXPORT_WORKERS;
use super::receiver::LogReceiver;
use crate::clock::Clock;
use crate::config::Config;
use crate::model::{BaselineSpec, Finding, OVERALL_ENDPOINT, RunStatus};
use crate::notify::Courier;
use crate::pipeline::confirm::Rerun;
use crate::pipeline::{Ended, Job, Runner};
use crate::store::Store;
use crate::web::{self, AppState};

/// The demo scenario, also in the repository as `scenarios/demo.toml`.
pub const DEMO_SCENARIO: &str = include_str!("../../scenarios/demo.toml");
/// Its search terms feeder.
pub const DEMO_TERMS: &str = include_str!("../../scenarios/demo-terms.csv");
/// The route the demo slows down tonight, as the demo target names it.
pub const SLOW_ROUTE: &str = "GET /boards/{board_id}/cards";
/// The demo scenario's metric key for the requests to [`SLOW_ROUTE`]: its path and the names of its query.
pub const SLOW_ENDPOINT: &str = "GET /boards/{board_id}/cards?page=&per_page=";
const SCENARIO: &str = "demo";
/// The telemetry source that scrapes the demo API's own `/metrics`: a resource finding's endpoint.
pub const API_SOURCE: &str = "demo-api";
/// The demo API's CPU ceiling, in cores (CPU seconds per second) at the demo scenario's load: the team's green
/// zone for it. Builds 1.0.x use about 0.09 of a core, build 1.1.0 about 0.27; the ceiling sits between them
/// with a factor of 1.7 either side, so a machine twice as slow as this one still tells the same story. The
/// night-over-night test of the CPU per request catches 1.1.0 too once the history is long enough to trust
/// (on six nights it may not be: a series of its own has no other series' noise to lean on).
const CPU_LIMIT: f64 = 0.15;
/// CPU microseconds each request of builds 1.0.x costs off the answers' path, beside the API's own work (about
/// 0.4 ms in a release build): the cost of a real service's logging.
const BURN_CPU_US: u64 = 100;
/// Build 1.1.0's: ten times as much, so each request costs 0.9 ms more CPU (about three times the CPU per
/// request in all). The judge's bar for a series measured on the demo's six nights is high (7 to 8 sigma at the
/// run's 1 % false-alarm rate, the noise estimated from five degrees of freedom), and the API's own CPU per
/// request moves by ±10 % from night to night on a busy machine; a change a team would want to hear about
/// stands well clear of both. The work is done off the answers' path (`cpu.rs`), so it adds no latency while
/// the machine has a core to spare.
const TONIGHT_BURN_CPU_US: u64 = 10 * BURN_CPU_US;
const WEBHOOK_ENV: &str = "DEGRADE_DEMO_WEBHOOK";
const TOKEN_ENV: &str = "DEGRADE_DEMO_TOKEN";

/// How the story is told.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the config, scenario, database and alert log are written.
    pub folder: PathBuf,
    /// Where the dashboard listens.
    pub listen: SocketAddr,
    /// Nights of history before tonight (at least 5: the judge's `min_runs`).
    pub nights: u32,
    /// How long each night's run lasts.
    pub night_length: Duration,
    /// Milliseconds added to [`SLOW_ROUTE`] tonight.
    pub slowdown_ms: u64,
    /// The degrade executable, run as `demo-target` for each build deployed.
    pub program: PathBuf,
}

/// Everything the demo started; it keeps serving until dropped.
#[allow(missing_docs, reason = "the field names say what they hold")]
pub struct Demo {
    pub dashboard: String,
    /// What happened, and whether it is what the demo set out to show.
    pub verdict: StoryVerdict,
    _api: Deployer,
    _receiver: LogReceiver,
    _server: tokio::sync::oneshot::Sender<()>,
    _stop_runs: tokio::sync::watch::Sender<bool>,
    store: Store,
}

impl Demo {
    /// Closes the database (the demo's servers stop when this is dropped).
    pub async fn close(self) {
        self.store.close().await;
    }
}

/// The outcome of tonight's run, checked against the plan.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug)]
pub struct StoryVerdict {
    pub run_id: i64,
    /// Endpoint metrics judged worse, on the slowed route or the whole run, and the API's CPU.
    pub found: Vec<Finding>,
    /// Endpoint metrics judged worse anywhere else: false alarms.
    pub false_findings: Vec<Finding>,
    /// Alert messages the local receiver got.
    pub alerts: Vec<serde_json::Value>,
    /// Whether it was judged a regression.
    pub regressed: bool,
    /// Nights of build 1.0.x judged regressed: false alarms in the history.
    pub false_alarms: Vec<i64>,
    /// Tonight's verdict in a sentence, with what its confirmation rerun found.
    pub summary: String,
    /// The capacity chapter: build 1.2.0's capacity night.
    pub capacity: Option<CapacityVerdict>,
}

impl StoryVerdict {
    /// The regression was found on the slowed route and the API's CPU only, build 1.2.0's on its capacity only,
    /// and each alerted exactly once.
    #[must_use]
    pub fn as_planned(&self) -> bool {
        self.regressed
            && self.found.iter().any(|f| f.endpoint == SLOW_ENDPOINT)
            && self.found.iter().any(|f| f.endpoint == API_SOURCE)
            && self.false_findings.is_empty()
            && self.false_alarms.is_empty()
            && self.capacity.as_ref().is_some_and(CapacityVerdict::as_planned)
            && self.alerts.len() == 2
    }
}

/// Tells the story and leaves everything running.
pub async fn tell(options: &Options) -> anyhow::Result<Demo> {
    // Boxed once here rather than at every caller: the story's nights hold the whole engine.
    Box::pin(tell_unboxed(options)).await
}

async fn tell_unboxed(options: &Options) -> anyhow::Result<Demo> {
    std::fs::create_dir_all(options.folder.join("scenarios"))
        .with_context(|| format!("cannot create {}", options.folder.display()))?;
    let mut api = Deployer::new(&options.program);
    api.deploy(&history_build(0)).await?;
    let receiver = LogReceiver::start(options.folder.join("alerts.log")).await?;
    // The demo writes its own configuration, so the address to change is the command line's.
    let listener = tokio::net::TcpListener::bind(options.listen).await.map_err(|e| {
        let address = options.listen;
        anyhow::anyhow!("cannot listen on {address}: {e}; pass `--listen` another address (port 0: any free port)")
    })?;
    let dashboard = format!("http://{}", listener.local_addr()?);
    // A token of this demo's own: it lives as long as the demo and guards only this local dashboard.
    let token = format!("{:032x}", rand::random::<u128>());
    write_token_file(&options.folder.join(TOKEN_FILE), &token)?;
    let config = Arc::new(write_config(&options.folder, api.url(), &dashboard, &receiver.url(), &token)?);
    let store = Store::connect(&config.database).await.context("cannot open the demo database")?;
    let (state, stop_runs) = AppState::new(store.clone(), config.as_ref().clone());
    // The story's own clock: each night of history is told on the day it stands for, tonight on today.
    let runner = state.runner.clone().with_clock(Clock::shifted(TimeDelta::zero()));
    let (server, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(web::serve(listener, state, async move {
        let _ = stopped.await;
    }));
    println!("degrade demo: the dashboard is at {dashboard}/ (database {})", config.database);
    println!("  the demo API (boards and cards, {} boards seeded) is at {}", super::target::BOARDS, api.url());
    let (false_alarms, capacity_false_alarms) = history(&runner, (&config, &store), options, &mut api).await?;
    let tonight = Build {
        id: "1.1.0".to_owned(),
        slowdown_ms: options.slowdown_ms,
        burn_cpu_us: TONIGHT_BURN_CPU_US,
        export_workers: EXPORT_WORKERS,
    };
    api.deploy(&tonight).await?;
    println!(
        "tonight: build 1.1.0, which adds {} ms to {SLOW_ROUTE} and spends {} µs more CPU on each request after \
         answering (its other routes answer as fast as before)",
        options.slowdown_ms,
        TONIGHT_BURN_CPU_US - BURN_CPU_US
    );
    runner.clock().set(Utc::now());
    let tonight = night(&runner, &config, options).await?;
    let courier = Courier::new(store.clone(), config.clone())?.with_clock(runner.clock().clone());
    courier.deliver_due().await?;
    let capacity = capacity_chapter(&runner, (&config, &store), &mut api, capacity_false_alarms).await?;
    courier.deliver_due().await?;
    let verdict = StoryVerdict { false_alarms, capacity: Some(capacity), ..verdict(&tonight, receiver.received())? };
    Ok(Demo { dashboard, verdict, _api: api, _receiver: receiver, _server: server, _stop_runs: stop_runs, store })
}

/// Build 1.2.0 after tonight's story: its capacity night, judged against the capacity nights of history.
async fn capacity_chapter(
    runner: &Runner,
    (config, store): (&Config, &Store),
    api: &mut Deployer,
    false_alarms: Vec<i64>,
) -> anyhow::Result<CapacityVerdict> {
    api.deploy(&capacity_story::fewer_renderers_build(BURN_CPU_US)).await?;
    println!(
        "then: build 1.2.0 undoes 1.1.0, but renders board exports with {} renderers instead of {EXPORT_WORKERS}: \
         at the nightly rate its exports answer as fast as before",
        capacity_story::FEWER_RENDERERS
    );
    let (ended, found) = capacity_story::night(runner, config, store, Utc::now()).await?;
    let verdict = CapacityVerdict::of(&ended, false_alarms)?;
    let judged = verdict.capacity.as_ref().map_or_else(|| capacity_story::said(found.as_ref()), |f| f.reason.clone());
    println!("  capacity night: build 1.2.0, run #{}, {}: {judged}", ended.run_id, ended.status);
    Ok(verdict)
}

/// Runs the nights of build 1.0.x, each labelled one day after the other, ending yesterday, the last
/// [`CAPACITY_NIGHTS`] of them with a capacity night too; returns the runs among them judged regressed, of the
/// nightly scenario and of the capacity one (there should be none).
async fn history(
    runner: &Runner,
    (config, store): (&Config, &Store),
    options: &Options,
    api: &mut Deployer,
) -> anyhow::Result<(Vec<i64>, Vec<i64>)> {
    let today = Utc::now();
    let (mut false_alarms, mut capacity_false_alarms) = (Vec::new(), Vec::new());
    for n in 0..options.nights {
        let build = history_build(n);
        api.deploy(&build).await?;
        let build = build.id;
        let when = today - TimeDelta::days(i64::from(options.nights - n));
        runner.clock().set(when);
        let ended = night(runner, config, options).await?;
        let outcome = ended.report.as_ref().map_or("not judged", |r| r.outcome.as_str());
        if ended.status == RunStatus::Regressed {
            false_alarms.push(ended.run_id);
        }
        let rerun = ended.confirmation.as_ref().map_or_else(String::new, |c| {
            let said = match c.rerun {
                Rerun::Reproduced(_) => "confirmed it",
                Rerun::NotReproduced => "did not confirm it",
                Rerun::Undecided => "could not be judged, so it neither confirmed nor refuted it",
            };
            format!(" (run #{} was judged regressed; this rerun {said})", c.first_run)
        });
        println!(
            "  night {}/{} ({}): build {build}, run #{}, {outcome}{rerun}",
            n + 1,
            options.nights,
            when.format("%Y-%m-%d"),
            ended.run_id
        );
        if n + CAPACITY_NIGHTS >= options.nights {
            // An hour after the nightly run, on the same build.
            let (ended, found) = capacity_story::night(runner, config, store, when + TimeDelta::hours(1)).await?;
            if ended.status == RunStatus::Regressed {
                capacity_false_alarms.push(ended.run_id);
            }
            println!("    capacity run #{}: {}", ended.run_id, capacity_story::said(found.as_ref()));
        }
    }
    Ok((false_alarms, capacity_false_alarms))
}

/// Build 1.0.`n`: as fast and as costly as every other 1.0.x.
fn history_build(n: u32) -> Build {
    Build { id: format!("1.0.{n}"), slowdown_ms: 0, burn_cpu_us: BURN_CPU_US, export_workers: EXPORT_WORKERS }
}

/// One run of the demo scenario, shortened to the night length, through the whole nightly chain, on the
/// runner's clock.
async fn night(runner: &Runner, config: &Config, options: &Options) -> anyhow::Result<Ended> {
    let mut job = Job::find(config, Some(SCENARIO))?;
    job.plan = job.plan.scaled(Some(options.night_length), 1.0).map_err(anyhow::Error::msg)?;
    // The demo's nights are its nights, not smoke runs of them: the dashboard shows them by default.
    job.plan.reshape = None;
    let claim = runner.claim(SCENARIO).await?;
    Box::pin(runner.run(claim, job, None, &BaselineSpec::default(), |_| {})).await
}

fn verdict(tonight: &Ended, alerts: Vec<serde_json::Value>) -> anyhow::Result<StoryVerdict> {
    let report = tonight.report.as_ref().with_context(|| {
        format!("tonight's run #{} was not judged: {}", tonight.run_id, tonight.failure.as_deref().unwrap_or("stopped"))
    })?;
    // After a confirmation rerun, what it alone found is `unconfirmed` in its report: only what both runs found
    // still counts (and is alerted).
    let worse = report.findings.iter().filter(|f| f.outcome.is_failure());
    let planned = [SLOW_ENDPOINT, OVERALL_ENDPOINT, API_SOURCE];
    let (found, false_findings): (Vec<Finding>, Vec<Finding>) =
        worse.cloned().partition(|f| planned.contains(&f.endpoint.as_str()));
    let regressed = tonight.status == RunStatus::Regressed;
    let summary = match &report.confirmation {
        Some(confirmation) => format!("{}; {confirmation}", report.summary),
        None => report.summary.clone(),
    };
    Ok(StoryVerdict {
        run_id: report.run_id,
        found,
        false_findings,
        alerts,
        regressed,
        false_alarms: Vec::new(),
        summary,
        capacity: None,
    })
}

/// Where the demo keeps its token, beside its degrade.toml: read by its owner only, and never printed, so a
/// terminal, a CI log or a screen share does not carry it (the rule for every secret degrade holds).
pub const TOKEN_FILE: &str = "api-token";

/// Writes `token` to `path`, readable by its owner alone (the file is made so, not narrowed after writing).
fn write_token_file(path: &Path, token: &str) -> anyhow::Result<()> {
    let _ = std::fs::remove_file(path);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).with_context(|| format!("cannot write {}", path.display()))?;
    std::io::Write::write_all(&mut file, format!("{token}\n").as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Writes the demo's degrade.toml, scenario and feeder into `folder` and loads the config; an earlier demo's
/// database is removed, so every demo starts from the same empty history.
fn write_config(folder: &Path, target: &str, dashboard: &str, webhook: &str, token: &str) -> anyhow::Result<Config> {
    for stale in ["degrade-demo.db", "degrade-demo.db-wal", "degrade-demo.db-shm"] {
        let _ = std::fs::remove_file(folder.join(stale));
    }
    std::fs::write(folder.join("scenarios/demo.toml"), DEMO_SCENARIO)?;
    std::fs::write(folder.join("scenarios/demo-terms.csv"), DEMO_TERMS)?;
    std::fs::write(folder.join("scenarios/demo.proto"), super::grpc::DEMO_PROTO)?;
    std::fs::write(folder.join("scenarios/demo-capacity.toml"), capacity_story::DEMO_CAPACITY_SCENARIO)?;
    let config = format!(
        "# Written by `degrade demo` for the bundled demo API; it is rewritten on every demo.\n\
         [server]\npublic_url = \"{dashboard}\"\napi_token_env = \"{TOKEN_ENV}\"\n\n\
         [database]\nurl = \"sqlite://degrade-demo.db\"\n\n\
         [[scenario]]\nname = \"{SCENARIO}\"\nfile = \"scenarios/demo.toml\"\ntarget = \"{target}\"\nbaseline = \"last-7d\"\n\n\
         [scenario.build]\nversion_url = \"{target}/version\"\nversion_pointer = \"/build\"\n\
         health_url = \"{target}/healthz\"\nhealth_timeout = \"30s\"\n\n\
         [[scenario.telemetry]]\nname = \"{API_SOURCE}\"\nkind = \"scrape\"\nurl = \"{target}/metrics\"\nevery = \"1s\"\n\
         limits = {{ \"CPU\" = {{ max = {CPU_LIMIT} }} }}\n\n\
         [[scenario.telemetry.series]]\nname = \"CPU\"\nmetric = \"process_cpu_seconds_total\"\nkind = \"counter\"\n\
         unit = \"CPU s\"\n\n\
         {capacity}\n\
         [[notify]]\nname = \"local-log\"\nkind = \"slack\"\nurl_env = \"{WEBHOOK_ENV}\"\n",
        capacity = capacity_story::config_entry(target)
    );
    let path = folder.join("degrade.toml");
    std::fs::write(&path, config)?;
    let env = |name: &str| match name {
        WEBHOOK_ENV => Some(webhook.to_owned()),
        TOKEN_ENV => Some(token.to_owned()),
        _ => std::env::var(name).ok(),
    };
    Config::load_with_env(&path, &env).map_err(|errors| anyhow::anyhow!("the demo's config does not load: {errors}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_file_is_its_owners_alone_and_a_new_demo_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TOKEN_FILE);
        write_token_file(&path, "first").unwrap();
        write_token_file(&path, "second").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
    }
}
