//! `degrade check`: the CI gate. Judges a stored run against its baseline, stores the verdict, prints the
//! report, and exits 0 (passed), 1 (regressed) or 3 (inconclusive; 0 unless `--strict`). A stored run whose
//! regression is being confirmed elsewhere is waited for (`confirmation_wait`) and judged as its rerun decides.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use chrono::Utc;

use super::confirmation_wait::{self, Waited};
use super::live::Live;
use super::{ConfigSource, Exit, print_stdout};
use crate::config::Config;
use crate::model::{BaselineSpec, Run, RunStatus, VerdictOutcome};
use crate::notify::Courier;
use crate::pipeline::judge_run::{IfRegressed, judge_run};
use crate::pipeline::{Job, Runner};
use crate::report::{CheckReport, Format};
use crate::store::Store;

/// What to judge and how to say it.
#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// `--config` after the subcommand.
    #[command(flatten)]
    pub config: super::ConfigArg,
    /// Which earlier runs to compare with: last-7d (days), last-10 (runs), run:ID or build:ID.
    /// Default: the scenario's `baseline` in degrade.toml, else last-7d.
    #[arg(long, short, value_name = "SPEC", value_parser = |s: &str| s.parse::<BaselineSpec>())]
    pub baseline: Option<BaselineSpec>,
    /// The scenario, as `degrade run` takes it (`degrade check checkout`); needed only when several are
    /// configured or stored.
    #[arg(value_name = "SCENARIO")]
    pub scenario_name: Option<String>,
    /// The scenario, named as an option (the same as SCENARIO).
    #[arg(long, short, value_name = "NAME", conflicts_with = "scenario_name")]
    pub scenario: Option<String>,
    /// Judge this run instead of the scenario's latest completed one.
    #[arg(long, value_name = "ID")]
    pub run: Option<i64>,
    /// Run the scenario now (deploy, health, build id, load, as configured), then judge that run; like a
    /// nightly run, it opens or resolves alert episodes and posts their messages.
    #[arg(long, conflicts_with = "run")]
    pub run_now: bool,
    /// With --run-now: stretch or shrink the plan to this length, as `degrade run --duration` does. Such a
    /// run is another workload: it starts its own series and is judged only against runs shaped the same.
    #[arg(long, value_name = "DURATION", requires = "run_now", value_parser = super::run::duration_arg)]
    pub duration: Option<Duration>,
    /// With --run-now: multiply every rate and user count, as `degrade run --rate-scale` does (its own series
    /// too).
    #[arg(long, value_name = "FACTOR", requires = "run_now", value_parser = super::run::positive_factor)]
    pub rate_scale: Option<f64>,
    /// With --run-now: the build under test, instead of asking the scenario's version_url or
    /// version_command, as `degrade run --build` takes it (it is the same night).
    #[arg(long, value_name = "ID", requires = "run_now")]
    pub build: Option<String>,
    /// How to print the report.
    #[arg(long, short, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// With --run-now: a segment of a night split across machines.
    #[command(flatten)]
    pub split: super::segment::SegmentArgs,
    /// Exit 3 when the verdict is inconclusive (too few baseline runs, invalid run), or a regression whose
    /// --run-now rerun was stopped before it decided, instead of 0. (A stored run being confirmed elsewhere is
    /// waited for, and judged as its rerun decides.)
    #[arg(long)]
    pub strict: bool,
}

impl CheckArgs {
    /// The scenario named positionally or with `--scenario`. A scenario file's path, as `degrade run` takes
    /// it, names the scenario after the file, as `run` stored it.
    fn scenario(&self) -> Option<&str> {
        let named = self.scenario_as_given()?;
        let path = std::path::Path::new(named);
        if crate::pipeline::is_scenario_file(path) { path.file_stem().and_then(|s| s.to_str()) } else { Some(named) }
    }

    /// The scenario as given, a name or a scenario file's path (what `--run-now` runs).
    fn scenario_as_given(&self) -> Option<&str> {
        self.scenario_name.as_deref().or(self.scenario.as_deref())
    }
}

pub(super) async fn run(source: &ConfigSource, args: CheckArgs) -> anyhow::Result<Exit> {
    let (junit, scenario) = (args.format == Format::Junit, args.scenario().map(str::to_owned));
    let checked = checked(source, args).await;
    if let (true, Err(error)) = (junit, &checked) {
        // A check that cannot judge (the target down, a failed run, no database, a bad config) still writes its
        // report: the CI step that publishes it shows why, instead of an empty file (trial).
        print_stdout(&crate::report::junit_error(scenario.as_deref(), &format!("{error:#}")))?;
    }
    checked
}

async fn checked(source: &ConfigSource, args: CheckArgs) -> anyhow::Result<Exit> {
    // Only `--run-now` judges a night it alerts on: a stored run's check touches no alert.
    let uses = if args.run_now { super::Uses::Alerts } else { super::Uses::NoAlerts };
    let config = source.load_or_defaults(uses)?;
    let store = if args.run_now {
        Store::connect(&config.database).await
    } else {
        Store::connect_existing(&config.database).await
    }
    .with_context(|| format!("cannot open the database {}", config.database))?;
    if args.split.segment.is_some() {
        let exit = Box::pin(check_segment(&store, &config, &args)).await;
        store.close().await;
        return exit;
    }
    // Boxed: a night and its confirmation rerun hold the whole engine.
    let mut outcome = Box::pin(run_now_and_check(&store, &config, &args)).await;
    let mut status = status_of(&store, &outcome).await;
    // A stored run being confirmed elsewhere: its rerun decides, and this gate waits for it (bounded).
    let waited_out = if let (Ok(report), false, Some(RunStatus::Confirming)) = (&outcome, args.run_now, status) {
        let first = report.run_id;
        after_its_confirmation(&store, &config, &args, first, (&mut outcome, &mut status)).await?
    } else {
        None
    };
    let held_back = match &outcome {
        Ok(report) if report.outcome == VerdictOutcome::Inconclusive => store
            .held_back_in_a_row(&report.scenario, report.run_id)
            .await
            .unwrap_or_default()
            .told_at(Some(report.run_id)),
        _ => None,
    };
    store.close().await;
    let mut report = outcome?;
    let undecided = status == Some(RunStatus::Confirming) && waited_out.is_none();
    if args.format == Format::Junit && (status == Some(RunStatus::Unconfirmed) || undecided) {
        // JUnit's failures fail a CI step: a regression its rerun refuted, or has not decided yet, exits 0 (or
        // 3), so its cases are skipped with the reason, never failures beside a passing exit.
        report.regressions_as_unconfirmed();
    }
    print_stdout(&report.render(args.format))?;
    if let Some(streak) = held_back {
        say!(
            "warning: the gate has not judged scenario {} {}; give the nightly run a quieter machine or hour",
            report.scenario,
            streak.describe()
        );
    }
    Ok(gate_exit(report.outcome, status, waited_out, args.strict))
}

/// The gate's exit on a verdict, given the run's status after it (`unconfirmed`, still `confirming`) and why the
/// first verdict stands when a confirmation elsewhere decided nothing (`waited_out`).
fn gate_exit(outcome: VerdictOutcome, status: Option<RunStatus>, waited_out: Option<String>, strict: bool) -> Exit {
    match outcome {
        VerdictOutcome::Regressed if status == Some(RunStatus::Unconfirmed) => {
            say!("note: this regression was not confirmed by its rerun on the same build; exiting 0");
            Exit::Ok
        }
        VerdictOutcome::Regressed if let Some(why) = waited_out => {
            say!(
                "note: {why}: the first verdict stands for this gate, as it does when no rerun could measure the \
                 build; exiting 1"
            );
            Exit::Regression
        }
        // The rerun of `--run-now` was cut short (stopped), and the scenario's next run, or `serve`, decides it:
        // not a verdict yet.
        VerdictOutcome::Regressed if status == Some(RunStatus::Confirming) => super::undecided(
            "this regression is not decided yet: a rerun of the same build confirms or refutes it",
            strict,
        ),
        VerdictOutcome::Regressed => Exit::Regression,
        VerdictOutcome::Inconclusive => super::undecided("the verdict is inconclusive", strict),
        VerdictOutcome::Passed => Exit::Ok,
    }
}

/// Waits for the rerun deciding run `first`, which another degrade is confirming, and judges `first` again as
/// decided (`outcome` and `status` updated); `Some(why)` the first verdict stands for this gate when nothing was
/// decided: no rerun under way, or none decided within the bound (`confirmation_wait`).
async fn after_its_confirmation(
    store: &Store,
    config: &Config,
    args: &CheckArgs,
    first: i64,
    (outcome, status): (&mut anyhow::Result<CheckReport>, &mut Option<RunStatus>),
) -> anyhow::Result<Option<String>> {
    let first = store.find_run(first).await?.context("the run vanished")?;
    Ok(match confirmation_wait::for_the_rerun(store, &first).await? {
        Waited::Decided => {
            // The same run again, as decided now (the rerun may since be the scenario's latest).
            let pinned = CheckArgs { run: Some(first.id), ..args.clone() };
            *outcome = Box::pin(run_now_and_check(store, config, &pinned)).await;
            *status = status_of(store, outcome).await;
            None
        }
        Waited::TimedOut(after) => {
            Some(format!("the rerun did not decide within {}", humantime::format_duration(after)))
        }
        Waited::NoneUnderWay => Some("no rerun is under way (the degrade confirming it was stopped)".to_owned()),
    })
}

/// The status of the run a check reported on, when it has one.
async fn status_of(store: &Store, outcome: &anyhow::Result<CheckReport>) -> Option<RunStatus> {
    let report = outcome.as_ref().ok()?;
    store.find_run(report.run_id).await.ok().flatten().map(|run| run.status)
}

/// With `--run-now`, runs the scenario through the whole chain (claim, deploy, load, store, judge, episodes
/// and alerts) and reports that run; otherwise judges a stored run.
async fn run_now_and_check(store: &Store, config: &Config, args: &CheckArgs) -> anyhow::Result<CheckReport> {
    if !args.run_now {
        let candidate = candidate(store, config, args, args.run).await?;
        let spec = spec(config, args, &candidate.scenario);
        let storing = match store.latest_verdict(candidate.id).await? {
            Some(night) if night.baseline_spec != spec.to_string() => {
                say!(
                    "note: run #{} was judged against {} already; this judgment against {spec} is reported, not \
                     stored (the run's verdict, status and history stay as they were)",
                    candidate.id,
                    night.baseline_spec
                );
                IfRegressed::Unstored
            }
            _ => IfRegressed::Stands,
        };
        return Ok(judge_run(store, config, &candidate, &spec, storing, Utc::now()).await?);
    }
    let mut job = Job::find(config, args.scenario_as_given())?;
    let reshaped = job.reshape(args.duration, args.rate_scale.unwrap_or(1.0))?;
    // After the reshape: a warning about the night's size speaks of the night that runs.
    for warning in &job.plan.warnings {
        say!("warning: {warning}");
    }
    if reshaped {
        say!(
            "note: a run reshaped by --duration or --rate-scale is another workload: it starts its own series and \
             is judged only against runs shaped the same way, never against the nightly ones"
        );
    }
    let spec = spec(config, args, &job.name);
    let (live, stop) = Live::start(&job.plan);
    let config = Arc::new(config.clone());
    let runner = Runner::new(store.clone(), config.clone(), stop);
    let claim = runner.claim(&job.name).await?;
    let ended = runner.run(claim, job, args.build.clone(), &spec, |p| live.update(p)).await;
    live.finish();
    let ended = ended?;
    // Alerts about this run go out now; what cannot be delivered stays in the outbox for `degrade serve`.
    if let Err(e) = Courier::new(store.clone(), config)?.deliver_due().await {
        say!("warning: alerts were stored but not delivered: {e}");
    }
    match (ended.report, ended.failure) {
        (Some(report), _) => Ok(report),
        (None, Some(reason)) if ended.status == RunStatus::Failed => bail!("run {} failed: {reason}", ended.run_id),
        (None, Some(reason)) => bail!("run {} is stored as {}: {reason}", ended.run_id, ended.status),
        (None, None) => bail!("run {} was stopped before it finished; it is stored as {}", ended.run_id, ended.status),
    }
}

/// `check --run-now --segment K/N`: the job and its baseline, for `segment_check`.
async fn check_segment(store: &Store, config: &Config, args: &CheckArgs) -> anyhow::Result<Exit> {
    if !args.run_now {
        bail!("--segment runs a night: it goes with --run-now");
    }
    let mut job = Job::find(config, args.scenario_as_given())?;
    job.reshape(args.duration, args.rate_scale.unwrap_or(1.0))?;
    let spec = spec(config, args, &job.name);
    let split = super::segment_check::SplitCheck {
        job,
        spec,
        flags: &args.split,
        build: args.build.clone(),
        format: args.format,
        strict: args.strict,
    };
    Box::pin(super::segment_check::check_segment(store, config, split)).await
}

/// `--baseline`, else the scenario's configured baseline, else last-7d.
fn spec(config: &Config, args: &CheckArgs, scenario: &str) -> BaselineSpec {
    args.baseline.clone().or_else(|| config.scenario(scenario).map(|s| s.baseline.clone())).unwrap_or_default()
}

/// The run to judge: `--run ID`, or the latest completed run of the chosen scenario.
async fn candidate(store: &Store, config: &Config, args: &CheckArgs, run: Option<i64>) -> anyhow::Result<Run> {
    if let Some(id) = run {
        let Some(run) = store.find_run(id).await? else { bail!("run #{id} does not exist") };
        if let Some(scenario) = args.scenario().filter(|s| *s != run.scenario) {
            bail!("run #{id} belongs to scenario `{}`, not `{scenario}`", run.scenario);
        }
        return Ok(run);
    }
    let scenario = scenario_name(store, config, args.scenario()).await?;
    let latest = store.latest_completed_run(&scenario, false).await?.with_context(|| {
        format!("scenario `{scenario}` has no completed runs yet; run it first (degrade run {scenario})")
    })?;
    // The gate speaks for the nightly series: a smoke run made after a regressed night had judged itself,
    // inconclusive on a baseline of its own, and passed the gate (trial).
    let latest = match store.latest_completed_run(&scenario, true).await? {
        Some(nightly) if nightly.id != latest.id => {
            say!(
                "note: run #{}, the latest, is a smoke run (reshaped by --duration or --rate-scale); the gate judges \
                 #{}, the latest nightly run (degrade check --run {} judges the smoke run against its own series)",
                latest.id,
                nightly.id,
                latest.id
            );
            nightly
        }
        _ => latest,
    };
    if latest.status == RunStatus::Aborted {
        // Never judged, and never passed over in silence either (the gate would then speak for a build it did
        // not measure tonight): say which run before it can be judged.
        let earlier = store.last_runs(&scenario, 20).await?;
        let same_series = |r: &&Run| r.id != latest.id && r.scenario_hash == latest.scenario_hash;
        if let Some(measured) = earlier.iter().filter(same_series).find(|r| r.status.is_valid_measurement()) {
            say!(
                "note: run #{}, the latest, was stopped before it ended; the latest run that measured is #{} \
                 (degrade check --run {})",
                latest.id,
                measured.id,
                measured.id
            );
        }
    }
    Ok(latest)
}

/// `--scenario`, or the only scenario configured or stored.
async fn scenario_name(store: &Store, config: &Config, named: Option<&str>) -> anyhow::Result<String> {
    let stored = store.scenario_names().await?;
    if let Some(name) = named {
        if config.scenario(name).is_none() && !stored.iter().any(|s| s == name) {
            bail!("unknown scenario `{name}`: it is not in {} and has no stored runs", config.source.display());
        }
        return Ok(name.to_owned());
    }
    let mut names: Vec<String> = config.scenarios.iter().map(|s| s.name.clone()).collect();
    names.extend(stored.into_iter().filter(|s| config.scenario(s).is_none()));
    match names.as_slice() {
        [only] => Ok(only.clone()),
        [] => bail!("no scenario has been run yet: add a [[scenario]] to {} and run it", config.source.display()),
        several => bail!("{} scenarios exist ({}); choose one with --scenario NAME", several.len(), several.join(", ")),
    }
}
