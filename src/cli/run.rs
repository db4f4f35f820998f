//! `degrade run`: runs one scenario now, with a live progress line, stores the run with all its results in
//! one transaction, and prints the per-endpoint table and the validity verdict.

use std::time::Duration;

use anyhow::{Context, bail};

use super::live::Live;
use super::run_report::{RunFormat, RunReport};
use super::{ConfigSource, Exit, print_stdout};
use crate::clock::Clock;
use crate::model::RunStatus;
use crate::pipeline::claim::holder_name;
use crate::pipeline::{self, Claim, Job, RunOutcome, RunsUnderWay};
use crate::store::Store;

/// What to run and how.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// `--config` after the subcommand.
    #[command(flatten)]
    pub config: super::ConfigArg,
    /// A [[scenario]] name from degrade.toml, or a scenario file's path. Default: the only scenario.
    pub scenario: Option<String>,
    /// Stretch or shrink the whole plan to this length (e.g. 20s for a smoke run); stages keep their shares.
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub duration: Option<Duration>,
    /// Multiply every rate and user count (e.g. 0.1 for a gentle smoke run).
    #[arg(long, value_name = "FACTOR", default_value_t = 1.0, value_parser = positive_factor)]
    pub rate_scale: f64,
    /// The build under test, instead of asking the scenario's version_url or version_command.
    #[arg(long, value_name = "ID")]
    pub build: Option<String>,
    /// How to print the result.
    #[arg(long, short, value_enum, default_value_t = RunFormat::Human)]
    pub format: RunFormat,
    /// A segment of a night split across machines.
    #[command(flatten)]
    pub split: super::segment::SegmentArgs,
}

/// A `--duration` such as `20s` or `2m`: longer than zero (a run of no time measures nothing), at most a week.
pub(super) fn duration_arg(text: &str) -> Result<Duration, String> {
    crate::config::durations::parse_positive(text, "20s or 2m")
}

/// A `--rate-scale`: a positive, finite factor.
pub(super) fn positive_factor(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(f),
        _ => Err(format!("`{text}` is not a positive number")),
    }
}

pub(super) async fn run(source: &ConfigSource, args: RunArgs) -> anyhow::Result<Exit> {
    let config = source.load_or_defaults(super::Uses::NoAlerts)?;
    let mut job = Job::find(&config, args.scenario.as_deref())?;
    job.reshape(args.duration, args.rate_scale)?;
    // After the reshape: a warning about the night's size speaks of the night that runs.
    for warning in &job.plan.warnings {
        say!("warning: {warning}");
    }
    let store = Store::connect(&config.database)
        .await
        .with_context(|| format!("cannot open the database {}", config.database))?;
    if args.split.segment.is_some() {
        let ran = super::segment::run(&store, job, &args.split, args.build, None).await;
        store.close().await;
        return Ok(super::segment::exit(&ran?));
    }
    let planned = stepped_endpoints(&job.plan);
    let searches = job.scenario.as_ref().is_some_and(|s| s.capacity.is_some());
    let outcome = run_job(&store, job, args.build).await;
    let capacity = match &outcome {
        Ok((_, RunOutcome::Measured { run_id, .. })) => store.capacity(*run_id).await.unwrap_or_else(|e| {
            tracing::warn!("run {run_id}: its capacity search could not be read back ({e})");
            None
        }),
        _ => None,
    };
    store.close().await;
    let report = match outcome? {
        (_, RunOutcome::Failed { run_id, reason }) => bail!("run {run_id} failed before any load was sent: {reason}"),
        (_, RunOutcome::Stopped { run_id, reason }) => bail!("run {run_id} is stored as aborted: {reason}"),
        (scenario, RunOutcome::Measured { run_id, build_id, measurement, telemetry }) => RunReport {
            unreached: never_reached(&planned, &measurement.results.endpoints),
            id: run_id,
            scenario,
            build_id,
            status: measurement.results.status,
            measurement: *measurement,
            telemetry,
            capacity,
            searches,
        },
    };
    print_stdout(&report.render(args.format))?;
    Ok(match report.status {
        RunStatus::Finished => Exit::Ok,
        RunStatus::Invalid => Exit::Inconclusive,
        _ => Exit::Error,
    })
}

/// The endpoints the flows' steps send to, in the plan's order: not a WebSocket close (never measured), a
/// push class or a fan-out (the server's messages, absent on many nights), nor a tape's routes (a short replay
/// reaches a few of thousands).
fn stepped_endpoints(plan: &crate::scenario::Plan) -> Vec<String> {
    let stepped = |index: usize| {
        plan.flows
            .iter()
            .flat_map(|f| &f.steps)
            .any(|s| s.endpoint == index && !matches!(s.ws, Some(crate::scenario::ws_plan::WsAction::Close)))
    };
    plan.endpoints.iter().enumerate().filter(|&(i, _)| stepped(i)).map(|(_, name)| name.clone()).collect()
}

/// The planned endpoints no request of the night reached, in the plan's order.
fn never_reached(planned: &[String], measured: &[crate::model::EndpointResult]) -> Vec<String> {
    planned.iter().filter(|name| !measured.iter().any(|e| &e.endpoint == *name && e.requests > 0)).cloned().collect()
}

/// Runs `job` through the pipeline with a progress bar and Ctrl-C handling, holding the scenario's claim so
/// it cannot overlap a nightly or API-started run; returns the scenario's name too.
async fn run_job(store: &Store, job: Job, build: Option<String>) -> anyhow::Result<(String, RunOutcome)> {
    let name = job.name.clone();
    let claim = Claim::take(store, &RunsUnderWay::default(), &name, &holder_name()).await?;
    let (live, stop) = Live::start(&job.plan);
    let outcome = pipeline::run(store, job, build, &Clock::system(), stop, |p| live.update(p)).await;
    live.finish();
    claim.release().await;
    Ok((name, outcome?))
}
