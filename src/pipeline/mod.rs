//! The one place that chains a run: deploy the latest build (if configured) → wait until it is healthy →
//! learn its build id → run the scenario → store everything ([`run`]), then judge it ([`judge_run`]) and open or
//! resolve episodes with their alerts ([`alerting`]). [`runner::Runner`] chains all of it behind a claim
//! ([`claim`]) for the scheduler, the API and `degrade check --run-now`; `degrade run` measures only.
//!
//! While the load runs, the scenario's telemetry sources are scraped beside it (`telemetry`), and what they
//! gave is stored after the run's results, never in their way. A scenario with `[scenario.capacity]` then runs
//! its capacity search ([`capacity`]) and stores what it found beside the run.
//!
//! Every attempt leaves a stored run: one that could not start (deploy failed, target never healthy,
//! version unknown) is stored as `failed` with the reason, so a missed night is visible, not silent.

pub mod alerting;
pub mod capacity;
pub mod claim;
pub mod confirm;
pub mod held_back;
pub mod interrupted;
pub mod judge_run;
pub mod protocol_change;
pub mod runner;
pub mod segments;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use tokio::sync::watch;

use crate::clock::Clock;
use crate::config::{Config, ScenarioConfig};
use crate::engine::{self, Measurement, Progress};
use crate::model::{BaselineSpec, NewRun, RunId, RunStatus, RunTelemetry};
use crate::scenario::{self, Plan};
use crate::store::fault::{self, Step};
use crate::store::{Retry, Store, StoreCause, StoreError, retry};

pub use claim::{Claim, ClaimError, RunsUnderWay};
pub use runner::{Ended, Runner};

/// A scenario ready to run: its name (the key of its runs), its plan and its `[[scenario]]` entry, if any.
#[allow(missing_docs, reason = "the field names say what they hold")]
pub struct Job {
    /// The `[[scenario]]` name, or the file's stem for a scenario file run on its own.
    pub name: String,
    pub plan: Plan,
    /// Its degrade.toml entry: target, build settings, gates.
    pub scenario: Option<ScenarioConfig>,
    /// The run this one reruns to confirm a regression (see [`Job::rerun`]).
    pub confirms: Option<RunId>,
    /// The baseline the runner will judge the run against, stored with the run from its start (see
    /// `NewRun::judged_against`); `None` for `degrade run`, which measures only.
    pub judged_against: Option<BaselineSpec>,
}

impl Job {
    /// Stretches or shrinks the plan to `duration` and scales its rates (`degrade run --duration 20s`, a smoke
    /// run); `true` when that changed the workload, which then forms a series of its own. A smoke run does not
    /// search capacity: the search climbs to its `max_rate` over up to `max_time` whatever the night's size,
    /// which is no gentle check (a trial's `--duration 2s --rate-scale 0.1` took the target to 200 req/s).
    ///
    /// # Errors
    /// When the scaled plan asks for more than one generator can plan.
    pub fn reshape(&mut self, duration: Option<std::time::Duration>, rate_scale: f64) -> anyhow::Result<bool> {
        let reshaped = duration.is_some() || (rate_scale - 1.0).abs() > f64::EPSILON;
        if reshaped {
            self.plan = self.plan.clone().scaled(duration, rate_scale).map_err(anyhow::Error::msg)?;
            if let Some(search) = self.scenario.as_mut().and_then(|s| s.capacity.take()) {
                self.plan.warnings.push(format!(
                    "a smoke run (--duration, --rate-scale) does not search capacity: the search climbs to {} \
                     req/s whatever the night's size; run without them to search",
                    crate::model::thousands(search.max_rate)
                ));
            }
        }
        Ok(reshaped)
    }

    /// [`Job::rerun`] of a run measured as `given` (`--build`), if it was: its build is then the given one, not
    /// the version source's (which may name it otherwise: a git SHA given, a semver served), so the rerun does
    /// not read it again.
    #[must_use]
    pub fn rerun_of(&self, given: Option<&str>) -> Self {
        let mut rerun = self.rerun();
        if given.is_some()
            && let Some(scenario) = &mut rerun.scenario
        {
            scenario.build.version = None;
        }
        rerun
    }

    /// The same job again, to confirm a regression on the build it measured: no deploy (the build is there).
    /// The runner sets which run it confirms ([`Job::confirms`]) once that run is judged regressed.
    #[must_use]
    pub fn rerun(&self) -> Self {
        let mut scenario = self.scenario.clone();
        if let Some(scenario) = &mut scenario {
            scenario.build.deploy = None;
        }
        let (name, plan, judged_against) = (self.name.clone(), self.plan.clone(), self.judged_against.clone());
        Self { name, plan, scenario, confirms: None, judged_against }
    }

    /// The job for `wanted`: a `[[scenario]]` name, a scenario file's path, or (when `None`) the only
    /// configured scenario.
    pub fn find(config: &Config, wanted: Option<&str>) -> anyhow::Result<Self> {
        let entry = match wanted {
            Some(name) => config.scenario(name).cloned(),
            None => match config.scenarios.as_slice() {
                [only] => Some(only.clone()),
                [] => bail!(
                    "no [[scenario]] in {}; name a scenario file: degrade run scenarios/x.toml",
                    config.source.display()
                ),
                many => {
                    let names: Vec<&str> = many.iter().map(|s| s.name.as_str()).collect();
                    bail!("several scenarios are configured; name one: {}", names.join(", "))
                }
            },
        };
        let (name, file, target) = match (&entry, wanted) {
            (Some(s), _) => (s.name.clone(), s.file.clone(), s.target.clone()),
            (None, Some(path)) if is_scenario_file(Path::new(path)) => {
                let file = PathBuf::from(path);
                let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                // The file's name becomes the scenario's: it must follow the naming rule like a configured one.
                let name = crate::config::scenario_name(&stem).map_err(|e| {
                    anyhow::anyhow!("{path}: the file name is the scenario's name, and {e}; rename the file")
                })?;
                (name, file, None)
            }
            (None, Some(path)) if Path::new(path).exists() && !Path::new(path).is_file() => {
                bail!("{path} is not a regular file (a directory or a device); a scenario is a .toml file")
            }
            (None, Some(name)) => {
                let names: Vec<&str> = config.scenarios.iter().map(|s| s.name.as_str()).collect();
                bail!(
                    "no [[scenario]] is named `{name}` and no such .toml file exists (configured: {})",
                    names.join(", ")
                )
            }
            (None, None) => unreachable!("no name means the only configured scenario"),
        };
        let env = |name: &str| std::env::var(name).ok();
        let plan = scenario::load(&file, target.as_deref(), &env).map_err(|errors| {
            let count = errors.0.len();
            anyhow::anyhow!("{errors}\n{count} problem{} in the scenario", if count == 1 { "" } else { "s" })
        })?;
        Ok(Self { name, plan, scenario: entry, confirms: None, judged_against: None })
    }
}

/// Whether `path` names a scenario file (an existing `.toml` file) rather than a configured scenario.
pub(crate) fn is_scenario_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml")) && path.is_file()
}

/// How an attempt ended.
pub enum RunOutcome {
    /// The scenario ran and everything it measured is stored (`finished`, `invalid`, `failed` or `aborted`).
    Measured {
        /// The stored run.
        run_id: RunId,
        /// The build it measured, when known.
        build_id: Option<String>,
        /// Its numbers (boxed: far larger than the other variants).
        measurement: Box<Measurement>,
        /// What its telemetry sources gave (stored with it, unless storing it failed).
        telemetry: RunTelemetry,
    },
    /// degrade was stopped before the load started; the run is stored as `aborted`.
    Stopped {
        /// The stored run.
        run_id: RunId,
        /// Why.
        reason: String,
    },
    /// The run could not start; it is stored as `failed` with this reason.
    Failed {
        /// The stored run.
        run_id: RunId,
        /// Why.
        reason: String,
    },
}

impl RunOutcome {
    /// The stored run, however it ended.
    #[must_use]
    pub fn run_id(&self) -> RunId {
        match self {
            Self::Measured { run_id, .. } | Self::Stopped { run_id, .. } | Self::Failed { run_id, .. } => *run_id,
        }
    }
}

/// Runs `job` end to end: deploy, health, build id (unless `build` names it), load, store. The run is stamped
/// on `clock`; how long it took is the engine's, measured on the monotonic clock.
pub async fn run(
    store: &Store,
    job: Job,
    build: Option<String>,
    clock: &Clock,
    stop: watch::Receiver<bool>,
    on_progress: impl FnMut(&Progress),
) -> anyhow::Result<RunOutcome> {
    let Job { name, plan, scenario, confirms, judged_against } = job;
    let started_at = clock.now();
    let mut deploy_output = None;
    let (prepared, stopped) = prepare_unless_stopped(scenario.as_ref(), build, &mut deploy_output, stop.clone()).await;
    // A failed or hung deploy's output is kept with the failed run: it is where the reason is.
    if let Err(e) = &prepared
        && let Some(failed) = e.downcast_ref::<crate::latest_build::DeployFailed>()
    {
        deploy_output = Some(failed.output.clone());
    }
    let new_run = NewRun {
        scenario: name,
        build_id: prepared.as_ref().ok().and_then(Clone::clone),
        deploy_output,
        seed: plan.seed.cast_signed(),
        scenario_hash: plan.hash.clone(),
        scenario_source: Some(plan.source_text.clone()),
        started_at,
        confirms,
        judged_against,
        reshape: plan.reshape.clone(),
    };
    let steps = FaultSteps::of(&new_run);
    let run_id = record_start(store, &new_run, steps.created).await?;
    if let Err(e) = prepared {
        let reason = format!("{e:#}");
        let status = if stopped { RunStatus::Aborted } else { RunStatus::Failed };
        store.end_run(run_id, status, &reason, clock.now()).await?;
        return Ok(if stopped {
            RunOutcome::Stopped { run_id, reason }
        } else {
            RunOutcome::Failed { run_id, reason }
        });
    }
    // The exporters are scraped on this runtime while the engine runs on its own; the latency timeline counts
    // from the engine's start, a thread and a runtime later than this instant (well under a millisecond).
    let sources = scenario.as_ref().map(|s| s.telemetry.as_slice()).unwrap_or_default();
    let watch = crate::telemetry::Watch::start(sources, &crate::telemetry::measured_windows(&plan), Instant::now());
    // Apart from the dashboard's and the scheduler's threads, so a page loaded mid-run does not delay it.
    let plan = Arc::new(plan);
    let mut measurement = engine::run_apart(Arc::clone(&plan), stop.clone(), on_progress).await;
    let telemetry = match watch {
        Some(watch) => watch.finish(completed(&measurement.results)).await,
        None => RunTelemetry::default(),
    };
    // The engine stamps its start and end on the system's clock; a shifted or manual clock moves them alike,
    // so a stored run still spans its deploy, health wait and load.
    let shift = clock.shift();
    measurement.started_at += shift;
    measurement.results.finished_at += shift;
    store_results(store, run_id, &measurement, steps.stored, clock).await?;
    store_telemetry(store, run_id, &telemetry).await;
    if let Some(scenario) = &scenario {
        capacity_after(store, run_id, scenario, &plan, measurement.results.status, &stop).await;
    }
    Ok(RunOutcome::Measured { run_id, build_id: new_run.build_id, measurement: Box::new(measurement), telemetry })
}

/// The fault-injection points of a run's two writes. A rerun's are points of their own: a kill there leaves
/// a pair `confirming`, not a night unjudged.
struct FaultSteps {
    created: Step,
    stored: Step,
}

impl FaultSteps {
    fn of(run: &NewRun) -> Self {
        if run.confirms.is_some() {
            Self { created: Step::RerunCreated, stored: Step::RerunStored }
        } else {
            Self { created: Step::RunCreated, stored: Step::ResultsStored }
        }
    }
}

/// Stores the run's start, retried while the store is unreachable. `create_run` finds the run a lost
/// acknowledgement hid rather than storing it twice.
async fn record_start(store: &Store, new_run: &NewRun, created: Step) -> anyhow::Result<RunId> {
    fault::before(created);
    let create = || async {
        let id = store.create_run(new_run).await?;
        fault::after(created)?;
        Ok::<_, StoreError>(id)
    };
    retry(Retry::Unreachable, "record the run's start", create).await.context("cannot record the run's start")
}

/// Stores what the night measured, retried while the store is unreachable; a run whose results cannot be
/// stored is ended as failed, saying so.
async fn store_results(
    store: &Store,
    run_id: RunId,
    measurement: &Measurement,
    stored: Step,
    clock: &Clock,
) -> anyhow::Result<()> {
    fault::before(stored);
    let finish = || async {
        store.finish_run(run_id, &measurement.results).await?;
        fault::after(stored)
    };
    if let Err(e) = retry(Retry::Unreachable, "store the results", finish).await {
        let failed = format!("storing the results failed: {e}");
        let _ = store.end_run(run_id, RunStatus::Failed, &failed, clock.now()).await;
        return Err(e).context("cannot store the run's results");
    }
    Ok(())
}

/// Stores the night's telemetry apart, after the run's own results: whatever it holds, the night is kept.
async fn store_telemetry(store: &Store, run_id: RunId, telemetry: &RunTelemetry) {
    if telemetry.sources.is_empty() {
        return;
    }
    let save = || async {
        fault::before(Step::TelemetryStored);
        store.save_telemetry(run_id, telemetry).await?;
        fault::after(Step::TelemetryStored)
    };
    if let Err(e) = retry(Retry::Unreachable, "store the telemetry", save).await {
        tracing::warn!("run {run_id}: its telemetry could not be stored ({e}); the run's own results are");
    }
}

/// Runs the scenario's capacity search after a finished night. A night the generator shaped, or the target
/// failed, says nothing a search could build on.
async fn capacity_after(
    store: &Store,
    run_id: RunId,
    scenario: &ScenarioConfig,
    plan: &Plan,
    night: RunStatus,
    stop: &watch::Receiver<bool>,
) {
    let Some(search) = &scenario.capacity else { return };
    if night == RunStatus::Finished {
        let zone = capacity::Zone { gates: &scenario.gates.absolute, sources: &scenario.telemetry };
        search_capacity(store, run_id, plan, search, zone, stop).await;
    } else {
        tracing::info!("run {run_id}: no capacity search: the night's stages were {}", night.as_str());
    }
}

/// Runs the capacity search after the night's stages and stores it beside the run; a search that cannot be
/// stored is logged, and the night's own results stand.
async fn search_capacity(
    store: &Store,
    run_id: RunId,
    plan: &Plan,
    search: &crate::analysis::capacity::CapacitySearch,
    zone: capacity::Zone<'_>,
    stop: &watch::Receiver<bool>,
) {
    tracing::info!("run {run_id}: capacity search: {}", search.describe());
    let result = capacity::search(plan, search, zone, stop).await;
    tracing::info!("run {run_id}: {}", result.describe());
    let save = || async {
        fault::before(Step::CapacityStored);
        store.save_capacity(run_id, &result).await?;
        fault::after(Step::CapacityStored)
    };
    if let Err(e) = retry(Retry::Unreachable, "store the capacity search", save).await {
        tracing::warn!("run {run_id}: its capacity search could not be stored ({e}); the run's own results are");
    }
}

/// What the run's measured stages completed: the denominator of a counter's cost per 1,000 requests.
fn completed(results: &crate::model::RunResults) -> crate::telemetry::Completed {
    let requests =
        results.endpoints.iter().find(|e| e.endpoint == crate::model::OVERALL_ENDPOINT).map_or(0, |e| e.requests);
    crate::telemetry::Completed { requests: requests.max(0) as u64, measured_secs: results.load_summary.measured_secs }
}

/// [`prepare`], given up when `stop` becomes true: a shutdown during a long deploy or health wait must not be
/// held up by it. The flag says whether it was stopped.
async fn prepare_unless_stopped(
    scenario: Option<&ScenarioConfig>,
    build: Option<String>,
    deploy_output: &mut Option<String>,
    mut stop: watch::Receiver<bool>,
) -> (anyhow::Result<Option<String>>, bool) {
    tokio::select! {
        prepared = prepare(scenario, build, deploy_output) => (prepared, false),
        _ = stop.wait_for(|stopped| *stopped) => {
            (Err(anyhow::anyhow!("degrade was stopped before the load started (during deploy or the health wait)")), true)
        }
    }
}

/// The build ready to be loaded.
/// Rolls the latest build out and waits for it, then names it: `build` if given, else the version source.
/// What a successful deploy printed is put in `deploy_output` at once, so it is kept with the run when the
/// health check or the build id fails after it (it often says why the service did not come up).
async fn prepare(
    scenario: Option<&ScenarioConfig>,
    build: Option<String>,
    deploy_output: &mut Option<String>,
) -> anyhow::Result<Option<String>> {
    let Some(settings) = scenario.map(|s| &s.build) else { return Ok(build) };
    if let Some(deploy) = &settings.deploy {
        *deploy_output = Some(crate::latest_build::deploy(deploy).await?);
    }
    if let Some(health) = &settings.health {
        crate::latest_build::wait_healthy(health).await?;
    }
    let build_id = match (build, &settings.version) {
        (Some(id), _) => Some(id),
        (None, Some(version)) => Some(crate::latest_build::resolve_version(version).await?),
        (None, None) => None,
    };
    Ok(build_id)
}

impl StoreCause for ClaimError {
    fn store_error(&self) -> Option<&StoreError> {
        match self {
            ClaimError::Database(_, e) => Some(e),
            _ => None,
        }
    }
}
