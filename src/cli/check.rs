//! `degrade check`: the CI gate. Judges a stored run against its baseline, stores the verdict, prints the
//! report, and exits 0 (passed), 1 (regressed) or 3 (inconclusive, 0 unless `--strict`).

use anyhow::{Context, bail};
use chrono::Utc;

use super::{ConfigSource, Exit, print_stdout};
use crate::analysis::baseline::BaselineSpec;
use crate::analysis::judge::{Comparison, Judgement, Outcome, judge};
use crate::config::Config;
use crate::pipeline::{Job, RunOutcome};
use crate::report::{BaselineRun, CheckReport, Format};
use crate::store::{EndpointResult, NewVerdict, Run, RunStatus, Store};

/// What to judge and how to say it.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Which earlier runs to compare with: last-7d (days), last-10 (runs), run:ID or build:ID.
    /// Default: the scenario's `baseline` in degrade.toml, else last-7d.
    #[arg(long, short, value_name = "SPEC", value_parser = |s: &str| s.parse::<BaselineSpec>())]
    pub baseline: Option<BaselineSpec>,
    /// The scenario; needed only when several are configured or stored.
    #[arg(long, short, value_name = "NAME")]
    pub scenario: Option<String>,
    /// Judge this run instead of the scenario's latest completed one.
    #[arg(long, value_name = "ID")]
    pub run: Option<i64>,
    /// Run the scenario now (deploy, health, build id, load, as configured), then judge that run.
    #[arg(long, conflicts_with = "run")]
    pub run_now: bool,
    /// How to print the report.
    #[arg(long, short, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Exit 3 when the verdict is inconclusive (too few baseline runs, invalid run) instead of 0.
    #[arg(long)]
    pub strict: bool,
}

pub(super) async fn run(source: &ConfigSource, args: CheckArgs) -> anyhow::Result<Exit> {
    let config = source.load_or_defaults()?;
    let store = if args.run_now {
        Store::connect(&config.database).await
    } else {
        Store::connect_existing(&config.database).await
    }
    .with_context(|| format!("cannot open the database {}", config.database))?;
    let outcome = run_now_and_check(&store, &config, &args).await;
    store.close().await;
    let report = outcome?;
    print_stdout(&report.render(args.format))?;
    Ok(match report.outcome {
        Outcome::Regressed => Exit::Regression,
        Outcome::Inconclusive if args.strict => Exit::Inconclusive,
        Outcome::Inconclusive => {
            eprintln!("warning: the verdict is inconclusive; exiting 0 (pass --strict to exit 3)");
            Exit::Ok
        }
        Outcome::Passed => Exit::Ok,
    })
}

/// With `--run-now`, runs the scenario through the pipeline first and judges that run.
async fn run_now_and_check(store: &Store, config: &Config, args: &CheckArgs) -> anyhow::Result<CheckReport> {
    if !args.run_now {
        return check(store, config, args, args.run).await;
    }
    let job = Job::find(config, args.scenario.as_deref())?;
    match super::run::run_job(store, job, None).await? {
        (_, RunOutcome::Failed { run_id, reason }) => bail!("run {run_id} failed before any load was sent: {reason}"),
        (_, RunOutcome::Measured { run_id, .. }) => check(store, config, args, Some(run_id)).await,
    }
}

async fn check(store: &Store, config: &Config, args: &CheckArgs, run: Option<i64>) -> anyhow::Result<CheckReport> {
    let candidate = candidate(store, config, args, run).await?;
    let scenario = config.scenario(&candidate.scenario);
    let spec =
        args.baseline.clone().or_else(|| scenario.map(|s| s.baseline.clone())).unwrap_or(BaselineSpec::LastDays(7));
    let gates = scenario.map(|s| s.gates.clone()).unwrap_or_default();
    match candidate.status {
        RunStatus::Running => bail!("run #{} is still running; check it once it has finished", candidate.id),
        RunStatus::Failed | RunStatus::Aborted => bail!(
            "run #{} {}: {}; it measured nothing to judge",
            candidate.id,
            candidate.status,
            candidate.failure_reason.as_deref().unwrap_or("no reason recorded")
        ),
        _ => {}
    }
    let (baseline, judgement) = if candidate.status == RunStatus::Invalid {
        (Vec::new(), invalid_run(&candidate))
    } else {
        let baseline = baseline_runs(store, &candidate, &spec).await?;
        let comparison = if matches!(spec, BaselineSpec::Run(_)) { Comparison::OneRun } else { Comparison::Nightly };
        let tonight = endpoints(store, candidate.id).await?;
        let judgement = judge(&tonight, &baseline_results(store, &baseline).await?, &gates, comparison);
        (baseline, judgement)
    };
    let verdict = NewVerdict {
        baseline_spec: spec.to_string(),
        baseline_run_ids: baseline.iter().map(|r| r.id).collect(),
        outcome: judgement.outcome.as_str().to_owned(),
        summary: judgement.summary.clone(),
        created_at: Utc::now(),
        findings: judgement.findings.clone(),
    };
    store.save_verdict(candidate.id, &verdict).await?;
    let Judgement { outcome, findings, summary } = judgement;
    Ok(CheckReport {
        scenario: candidate.scenario.clone(),
        run_id: candidate.id,
        build_id: candidate.build_id.clone(),
        started_at: candidate.started_at,
        outcome,
        summary,
        baseline_spec: spec.to_string(),
        baseline: baseline.iter().map(BaselineRun::from).collect(),
        findings,
    })
}

/// The run to judge: `--run ID`, or the latest completed run of the chosen scenario.
async fn candidate(store: &Store, config: &Config, args: &CheckArgs, run: Option<i64>) -> anyhow::Result<Run> {
    if let Some(id) = run {
        let Some(run) = store.find_run(id).await? else { bail!("run #{id} does not exist") };
        if let Some(scenario) = args.scenario.as_ref().filter(|s| **s != run.scenario) {
            bail!("run #{id} belongs to scenario `{}`, not `{scenario}`", run.scenario);
        }
        return Ok(run);
    }
    let scenario = scenario_name(store, config, args.scenario.as_deref()).await?;
    store.latest_completed_run(&scenario).await?.with_context(|| {
        format!("scenario `{scenario}` has no completed runs yet; run it first (degrade run {scenario})")
    })
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

/// The runs `spec` selects; when a `run:ID` baseline selects nothing, says why that run cannot serve.
async fn baseline_runs(store: &Store, candidate: &Run, spec: &BaselineSpec) -> anyhow::Result<Vec<Run>> {
    let runs = store.baseline_runs(candidate, spec).await?;
    if let (BaselineSpec::Run(id), true) = (spec, runs.is_empty()) {
        let Some(run) = store.find_run(*id).await? else { bail!("baseline run #{id} does not exist") };
        if run.id == candidate.id {
            bail!("run #{id} cannot be its own baseline");
        }
        if run.scenario != candidate.scenario {
            bail!("baseline run #{id} belongs to scenario `{}`, not `{}`", run.scenario, candidate.scenario);
        }
        if !run.status.is_valid_measurement() {
            bail!("baseline run #{id} is {}, so its numbers cannot serve as a baseline", run.status);
        }
        bail!("baseline run #{id} ran a different version of the scenario file, so its numbers are not comparable");
    }
    Ok(runs)
}

async fn endpoints(store: &Store, id: i64) -> anyhow::Result<Vec<EndpointResult>> {
    Ok(store.run_detail(id).await?.map(|d| d.endpoints).unwrap_or_default())
}

async fn baseline_results(store: &Store, runs: &[Run]) -> anyhow::Result<Vec<Vec<EndpointResult>>> {
    let mut results = Vec::with_capacity(runs.len());
    for run in runs {
        results.push(endpoints(store, run.id).await?);
    }
    Ok(results)
}

/// An invalid run says nothing about the build: inconclusive, with the generator's reasons.
fn invalid_run(run: &Run) -> Judgement {
    let reasons =
        if run.validity_reasons.is_empty() { "no reason recorded".to_owned() } else { run.validity_reasons.join("; ") };
    Judgement {
        outcome: Outcome::Inconclusive,
        findings: Vec::new(),
        summary: format!(
            "inconclusive: run #{} is invalid, the load generator could not be trusted: {reasons}",
            run.id
        ),
    }
}
