//! The whole chain for one scenario: claim it → run it (deploy, health, build id, load, store) → judge the run
//! against the baseline → confirm a regression with a rerun → open or resolve episodes and enqueue alerts. The
//! scheduler, the API's run trigger and `degrade check --run-now` all go through [`Runner`], so a run means the
//! same thing however it was started, and two of them never overlap.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use super::claim::{Claim, ClaimError, RunsUnderWay, holder_name};
use super::confirm::Confirmation;
use super::judge_run::{IfRegressed, JudgeError, judge_run};
use super::{Job, RunOutcome, alerting, interrupted};
use crate::analysis::Gates;
use crate::clock::Clock;
use crate::config::Config;
use crate::engine::Progress;
use crate::model::{BaselineSpec, RunId, RunStatus, VerdictOutcome};
use crate::report::CheckReport;
use crate::store::fault::{self, Step};
use crate::store::{LeftBehind, Retry, Store, retry};

mod rerun;

pub use rerun::{CONFIRMATION_ATTEMPTS, RETRY_PAUSE_MAX_SECS};

/// How a chained run ended.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug)]
pub struct Ended {
    pub run_id: RunId,
    /// Its status after judging.
    pub status: RunStatus,
    /// The verdict, when the run measured something to judge.
    pub report: Option<CheckReport>,
    /// Why the run could not be done, when it could not.
    pub failure: Option<String>,
    /// When the run is the rerun that confirmed (or did not confirm) a regression: what it found.
    pub confirmation: Option<Confirmation>,
}

impl Ended {
    /// A run that ended without a verdict: stopped, or failed (with the reason when there is one).
    fn unjudged(run_id: RunId, status: RunStatus, failure: Option<String>) -> Self {
        Self { run_id, status, report: None, failure, confirmation: None }
    }
}

/// Runs scenarios through the chain; cheap to clone.
#[derive(Clone)]
pub struct Runner {
    store: Store,
    config: Arc<Config>,
    holder: String,
    runs: RunsUnderWay,
    stop: watch::Receiver<bool>,
    /// Cleared at shutdown: claims fail from then on, so nothing starts while runs under way are awaited.
    accepting: Arc<AtomicBool>,
    clock: Clock,
}

impl Runner {
    /// A runner whose runs stop (and are stored as aborted) when `stop` becomes true.
    #[must_use]
    pub fn new(store: Store, config: Arc<Config>, stop: watch::Receiver<bool>) -> Self {
        let accepting = Arc::new(AtomicBool::new(true));
        let clock = Clock::system();
        Self { store, config, holder: holder_name(), runs: RunsUnderWay::default(), stop, accepting, clock }
    }

    /// The same runner on `clock`: its runs, verdicts and episodes are stamped with its time, and the
    /// scheduler that shares it decides by it (the demo's nights, tests that move time on). Leases stay on
    /// the system's clock.
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The clock this runner stamps and decides by.
    #[must_use]
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The runs under way in this process.
    #[must_use]
    pub fn runs(&self) -> &RunsUnderWay {
        &self.runs
    }

    /// Starts no new run from now on (shutdown); runs under way go on until they end or are stopped.
    pub fn stop_accepting(&self) {
        self.accepting.store(false, Ordering::SeqCst);
    }

    /// Claims `scenario` here and in the database; a database that does not answer is asked again a few
    /// times before giving up.
    pub async fn claim(&self, scenario: &str) -> Result<Claim, ClaimError> {
        if !self.accepting.load(Ordering::SeqCst) || *self.stop.borrow() {
            return Err(ClaimError::ShuttingDown(scenario.to_owned()));
        }
        retry(Retry::Unreachable, "take the scenario's lease", || {
            Claim::take(&self.store, &self.runs, scenario, &self.holder)
        })
        .await
    }

    /// Claims `scenario` for a scheduled night, waiting out a lease held elsewhere until it runs out: a degrade
    /// killed or redeployed shortly before the night holds its lease up to two minutes, and the night was lost
    /// (a trial's `kill -9` then restart lost two nights so, each logged as routine). A live holder renews its
    /// lease and keeps it: asked again after the expiry, the night is refused then.
    async fn claim_for_night(&self, scenario: &str) -> Result<Claim, ClaimError> {
        let wait = match self.claim(scenario).await {
            Err(ClaimError::RunningElsewhere(_, held)) => match held.expires_in() {
                Some(left) => left + Duration::from_secs(1),
                // Released between the refusal and the look: free now.
                None => return self.claim(scenario).await,
            },
            claimed => return claimed,
        };
        tracing::info!(
            scenario,
            "the scenario's lease is held elsewhere: asking again when it runs out, in {} s",
            wait.as_secs()
        );
        let mut stop = self.stop.clone();
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|stopping| *stopping) => return Err(ClaimError::ShuttingDown(scenario.to_owned())),
        }
        self.claim(scenario).await
    }

    /// Claims, finds and runs `scenario` with its configured baseline; `None` when it is running already,
    /// degrade is shutting down, or a run started at or after `not_before` (the fire time a scheduled run is
    /// for: another degrade on the database may have done it already).
    pub async fn run_scenario(
        &self,
        scenario: &str,
        not_before: Option<DateTime<Utc>>,
    ) -> anyhow::Result<Option<Ended>> {
        let claimed =
            if not_before.is_some() { self.claim_for_night(scenario).await } else { self.claim(scenario).await };
        let claim = match claimed {
            Ok(claim) => claim,
            Err(busy @ ClaimError::ShuttingDown(_)) => {
                tracing::info!("not starting a run: {busy}");
                return Ok(None);
            }
            Err(busy @ (ClaimError::RunningHere(_) | ClaimError::RunningElsewhere(..))) => {
                // A scheduled night not run is a night lost: said as such, not as routine, unless another degrade
                // on the database is running it.
                let ran_elsewhere = match not_before {
                    Some(due) => self.store.last_runs(scenario, 1).await?.first().is_some_and(|r| r.started_at >= due),
                    None => true,
                };
                if ran_elsewhere {
                    tracing::info!("not starting a run: {busy}");
                } else {
                    tracing::warn!(scenario, "not starting the scheduled night: {busy}");
                }
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        if let Some(due) = not_before {
            let latest = self.store.last_runs(scenario, 1).await?.into_iter().next();
            if let Some(run) = latest.filter(|run| run.started_at >= due) {
                tracing::info!(
                    scenario,
                    run_id = run.id,
                    "not starting a run: run #{} was already started for {due}",
                    run.id
                );
                claim.release().await;
                return Ok(None);
            }
        }
        let job = Job::find(&self.config, Some(scenario))?;
        let spec = self.config.scenario(scenario).map_or_else(BaselineSpec::default, |s| s.baseline.clone());
        self.run(claim, job, None, &spec, |_| {}).await.map(Some)
    }

    /// Runs a claimed job (as `build`, if given), judges it against `spec`, confirms a regression with a rerun
    /// when the scenario's gates ask for it, and updates episodes and alerts.
    pub async fn run(
        &self,
        claim: Claim,
        mut job: Job,
        build: Option<String>,
        spec: &BaselineSpec,
        mut on_progress: impl FnMut(&Progress),
    ) -> anyhow::Result<Ended> {
        let scenario = job.name.clone();
        // Stored with the run, so a degrade killed before the verdict leaves the next one what to judge it by.
        job.judged_against = Some(spec.clone());
        // What a stopped degrade left of this scenario is settled first, so tonight is judged after it.
        interrupted::settle(&self.store, &self.config, LeftBehind::Claimed(&scenario), self.clock.now()).await;
        let confirm = self.config.scenario(&scenario).map_or(Gates::default().confirm, |s| s.gates.confirm);
        let rerun = confirm.then(|| job.rerun_of(build.as_deref()));
        // The claim is held until the verdict and the alerts are stored, so a shutdown that waits for runs
        // under way waits for those too.
        let ended = async {
            // Boxed, as is the rerun's: each run's future holds the whole engine.
            let outcome =
                Box::pin(super::run(&self.store, job, build, &self.clock, self.stop.clone(), &mut on_progress)).await?;
            // A regression to confirm is stored `confirming` with its verdict.
            let if_regressed = if rerun.is_some() { IfRegressed::Confirm } else { IfRegressed::Stands };
            let judge = || self.conclude(&scenario, &outcome, spec, if_regressed, Step::VerdictStored);
            let first = retry(Retry::Unreachable, "judge the run", judge).await?;
            let regressed = first.report.as_ref().is_some_and(|r| r.outcome == VerdictOutcome::Regressed);
            if let Some(rerun) = rerun.filter(|_| regressed) {
                return Box::pin(self.confirm(first, rerun, spec, &mut on_progress)).await;
            }
            if let Some(report) = &first.report {
                self.alert(report).await?;
            }
            Ok(first)
        }
        .await;
        claim.release().await;
        ended
    }

    /// Opens or resolves the scenario's episodes after `report`, asking again while the database is unreachable.
    async fn alert(&self, report: &CheckReport) -> anyhow::Result<()> {
        let update = || async {
            fault::before(Step::AlertsWritten);
            alerting::after_judgement(&self.store, &self.config, report, self.clock.now()).await?;
            fault::after(Step::AlertsWritten)
        };
        retry(Retry::Unreachable, "update alerts", update).await?;
        // Stamped after the alerts: a kill in between leaves the night for the next degrade to alert, and
        // alerting it again repeats nothing (an open episode is not opened twice).
        self.stamp_alerted(report.run_id, self.clock.now()).await?;
        Ok(())
    }

    /// Stamps `run_id` alerted, asking again while the database is unreachable (stamping twice changes nothing).
    async fn stamp_alerted(&self, run_id: RunId, at: DateTime<Utc>) -> Result<(), crate::store::StoreError> {
        let stamp = || async {
            fault::before(Step::AlertedStamped);
            self.store.mark_alerted(run_id, at).await?;
            fault::after(Step::AlertedStamped)
        };
        retry(Retry::Unreachable, "stamp the alerts", stamp).await
    }

    /// Judges a stored run (a regressed one moved as `if_regressed` says; its verdict is `step`'s write) and opens or resolves the scenario's
    /// run-failed and missing-run episodes; safe to repeat. Regression episodes are the caller's.
    async fn conclude(
        &self,
        scenario: &str,
        outcome: &RunOutcome,
        spec: &BaselineSpec,
        if_regressed: IfRegressed,
        step: Step,
    ) -> Result<Ended, JudgeError> {
        let (store, config) = (&self.store, self.config.as_ref());
        let (run_id, results) = match outcome {
            RunOutcome::Stopped { run_id, reason } => {
                return Ok(Ended::unjudged(*run_id, RunStatus::Aborted, Some(reason.clone())));
            }
            RunOutcome::Failed { run_id, reason } => {
                alerting::after_start(store, config, scenario, *run_id, self.clock.now()).await?;
                return self.failed_night(scenario, *run_id, reason.clone()).await;
            }
            RunOutcome::Measured { run_id, measurement, .. } => (*run_id, &measurement.results),
        };
        alerting::after_start(store, config, scenario, run_id, self.clock.now()).await?;
        match results.status {
            RunStatus::Aborted => return Ok(Ended::unjudged(run_id, RunStatus::Aborted, None)),
            // The target was down: a failed night, alerted as one, never judged.
            RunStatus::Failed => return self.failed_night(scenario, run_id, results.validity_reasons.join("; ")).await,
            _ => {}
        }
        let Some(run) = store.find_run(run_id).await? else {
            return Err(JudgeError::Refused(format!("run #{run_id}, just stored, is gone")));
        };
        // A verdict already stored against this baseline was this runner's own, its acknowledgement lost to a
        // dropped connection: the retry returns it rather than judging (and storing) the night twice.
        let report = if let Some(verdict) =
            store.latest_verdict(run_id).await?.filter(|v| v.baseline_spec == spec.to_string())
        {
            interrupted::stored_report(store, &run, verdict).await?
        } else {
            fault::before(step);
            let report = judge_run(store, config, &run, spec, if_regressed, self.clock.now()).await?;
            fault::after(step)?;
            report
        };
        let status = store.find_run(run_id).await?.map_or(run.status, |r| r.status);
        Ok(Ended { run_id, status, report: Some(report), failure: None, confirmation: None })
    }

    /// A night that could not be measured: alerted as a failed run, never judged.
    async fn failed_night(&self, scenario: &str, run_id: RunId, reason: String) -> Result<Ended, JudgeError> {
        let build_id = self.store.find_run(run_id).await?.and_then(|r| r.build_id);
        let at = self.clock.now();
        let update = || async {
            fault::before(Step::AlertsWritten);
            alerting::after_failure(&self.store, &self.config, scenario, run_id, build_id.clone(), &reason, at).await?;
            fault::after(Step::AlertsWritten)
        };
        retry(Retry::Unreachable, "alert the failed run", update).await?;
        self.stamp_alerted(run_id, at).await?;
        Ok(Ended::unjudged(run_id, RunStatus::Failed, Some(reason)))
    }
}
