//! The nightly scheduler inside `degrade serve`: one tokio-cron-scheduler job per scheduled scenario, a
//! catch-up run at start-up for a night missed while degrade was down (`catch_up = true`), and a watch that
//! raises a missing-run alert when a due run has not started within its grace, also for a schedule that
//! something else runs (`run_by = "elsewhere"`: a CronJob's nights, which serve only watches for).
//!
//! tokio-cron-scheduler freezes a timezone's UTC offset when a cron job is created, so a job made in winter
//! would run an hour off all summer. Each scenario's job is therefore a one-shot at the next fire time that
//! [`Schedule`] computes in the scenario's timezone (croner, the parser `validate` uses, so what validates is
//! what runs), re-armed from that fire time each time it fires. Overlaps are prevented where runs start, by
//! the claim in [`Runner`]: a fire that finds the previous run still going is skipped and logged.

pub mod timing;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, Utc};
use tokio_cron_scheduler::{Job, JobScheduler};

use crate::config::{Config, RunBy, ScenarioConfig, Schedule};
use crate::pipeline::interrupted;
use crate::pipeline::{Runner, alerting};
use crate::store::{LeftBehind, Store};

/// How often overdue runs and runs orphaned by a crashed degrade are looked for.
const WATCH_EVERY: Duration = Duration::from_mins(1);

/// What the scheduler's jobs share.
struct SchedulerContext {
    runner: Runner,
    store: Store,
    config: Arc<Config>,
}

/// The running scheduler; [`Scheduler::stop`] ends it (runs under way are left to the caller).
pub struct Scheduler {
    jobs: JobScheduler,
}

impl Scheduler {
    /// Arms every scheduled scenario, starts catch-up runs, checks for missing runs, and starts ticking.
    pub async fn start(runner: Runner, store: Store, config: Arc<Config>) -> anyhow::Result<Self> {
        let jobs = JobScheduler::new().await.context("cannot create the scheduler")?;
        let shared = Arc::new(SchedulerContext { runner, store, config });
        let now = shared.runner.clock().now();
        for scenario in scheduled(&shared.config) {
            // The first time a scenario is scheduled is the reference for "missing" until it has runs.
            shared.store.ensure_scenario(&scenario.name, now).await?;
            // A schedule run elsewhere (a CronJob) is only watched: its nights are looked for, not started.
            if scenario.run_by == RunBy::Serve {
                arm(jobs.clone(), shared.clone(), scenario.name.clone(), now).await?;
            }
        }
        catch_up(&shared).await;
        let watch = shared.clone();
        jobs.add(Job::new_repeated_async(WATCH_EVERY, move |_, _| {
            let shared = watch.clone();
            Box::pin(async move { look_after(&shared).await })
        })?)
        .await?;
        look_after(&shared).await;
        jobs.start().await.context("cannot start the scheduler")?;
        Ok(Self { jobs })
    }

    /// Stops firing: no new scheduled runs start after this.
    pub async fn stop(mut self) {
        if let Err(e) = self.jobs.shutdown().await {
            tracing::warn!(error = %e, "the scheduler did not shut down cleanly");
        }
    }
}

fn scheduled(config: &Config) -> impl Iterator<Item = &ScenarioConfig> {
    config.scenarios.iter().filter(|s| s.schedule.is_some())
}

fn schedule_of<'a>(config: &'a Config, scenario: &str) -> Option<&'a Schedule> {
    config.scenario(scenario).and_then(|s| s.schedule.as_ref())
}

/// Adds a one-shot job for the scenario's first fire time after `after`; when it fires, it arms the next
/// one and starts the run.
fn arm(
    jobs: JobScheduler,
    shared: Arc<SchedulerContext>,
    scenario: String,
    after: DateTime<Utc>,
) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>> {
    Box::pin(async move {
        let Some(schedule) = schedule_of(&shared.config, &scenario) else { return Ok(()) };
        let Some(fire_at) = schedule.next_after(after).map(|t| t.with_timezone(&Utc)) else {
            tracing::warn!(scenario, schedule = %schedule, "the schedule never fires again");
            return Ok(());
        };
        tracing::info!(scenario, schedule = %schedule, next_run = %fire_at, "scheduled");
        let wait = (fire_at - shared.runner.clock().now()).to_std().unwrap_or_default();
        let job = Job::new_one_shot_at_instant_async(Instant::now() + wait, move |_, jobs| {
            let (shared, scenario) = (shared.clone(), scenario.clone());
            Box::pin(async move {
                // The crate ticks on whole seconds and may fire just before the instant; running early would
                // let the next fire time be this same one.
                if let Ok(early) = (fire_at - shared.runner.clock().now()).to_std() {
                    tokio::time::sleep(early).await;
                }
                if let Err(e) = arm(jobs, shared.clone(), scenario.clone(), fire_at).await {
                    tracing::error!(scenario, error = format!("{e:#}"), "cannot schedule the next run");
                }
                tokio::spawn(fire(shared, scenario, "scheduled", fire_at));
            })
        })?;
        jobs.add(job).await?;
        Ok(())
    })
}

/// Runs the scenario through the whole chain for the fire time `due`, logging how it ended.
async fn fire(shared: Arc<SchedulerContext>, scenario: String, why: &'static str, due: DateTime<Utc>) {
    tracing::info!(scenario, why, %due, "starting a run");
    match shared.runner.run_scenario(&scenario, Some(due)).await {
        Ok(Some(ended)) => tracing::info!(scenario, run_id = ended.run_id, status = %ended.status, "run ended"),
        Ok(None) => {}
        Err(e) => tracing::error!(scenario, error = format!("{e:#}"), "the run could not be completed"),
    }
}

/// When the scenario's last run started, and the reference for "missing": that start, else when the
/// scenario was first stored.
async fn last_run(shared: &SchedulerContext, scenario: &str) -> anyhow::Result<(Option<DateTime<Utc>>, DateTime<Utc>)> {
    let last = shared.store.last_runs(scenario, 1).await?.first().map(|r| r.started_at);
    let first_seen = shared.store.scenario_created_at(scenario).await?.unwrap_or_else(|| shared.runner.clock().now());
    Ok((last, last.unwrap_or(first_seen)))
}

/// Starts a run for each `catch_up` scenario whose last fire time passed while degrade was down.
async fn catch_up(shared: &Arc<SchedulerContext>) {
    for scenario in scheduled(&shared.config).filter(|s| s.catch_up && s.run_by == RunBy::Serve) {
        let Some(schedule) = &scenario.schedule else { continue };
        match last_run(shared, &scenario.name).await {
            Ok((_, reference)) => {
                if let Some(missed) = timing::missed_fire(schedule, reference, shared.runner.clock().now()) {
                    tracing::info!(scenario = scenario.name, %missed, "catching up on a run missed while degrade was down");
                    tokio::spawn(fire(shared.clone(), scenario.name.clone(), "catch-up", missed));
                }
            }
            Err(e) => tracing::error!(scenario = scenario.name, error = format!("{e:#}"), "cannot decide on catch-up"),
        }
    }
}

/// The periodic watch: what a degrade that stopped left of scenarios whose lease has run out is settled (runs
/// left `running` are aborted, regressions left `confirming` decided: `pipeline::interrupted`), then overdue
/// runs raise their alerts.
async fn look_after(shared: &SchedulerContext) {
    // Leases are on the system's clock (see `clock`), so the watch for expired ones is too.
    let left_behind = LeftBehind::Unleased(Utc::now());
    interrupted::settle(&shared.store, &shared.config, left_behind, shared.runner.clock().now()).await;
    check_missing(shared).await;
}

/// Opens a missing-run episode (and its alert) for each scheduled scenario whose due run has not started.
async fn check_missing(shared: &SchedulerContext) {
    for scenario in scheduled(&shared.config) {
        let Some(schedule) = &scenario.schedule else { continue };
        if shared.runner.runs().contains(&scenario.name) {
            continue;
        }
        let outcome = async {
            let (last, reference) = last_run(shared, &scenario.name).await?;
            if let Some(due) =
                timing::overdue_fire(schedule, reference, scenario.missing_run_grace, shared.runner.clock().now())
            {
                let now = shared.runner.clock().now();
                alerting::missing_run(&shared.store, &shared.config, &scenario.name, last, due, now).await?;
            }
            anyhow::Ok(())
        };
        if let Err(e) = outcome.await {
            tracing::error!(scenario = scenario.name, error = format!("{e:#}"), "cannot check for a missing run");
        }
    }
}
