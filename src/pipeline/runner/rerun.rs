//! Confirming a regression: the runner reruns the same build, up to a bounded number of times, and the pair's
//! statuses follow what the rerun measured. Only a rerun that measured the build and did not reproduce the
//! finding refutes it; a rerun that could not be judged is tried again, and when none could be, the first
//! verdict stands (alerted, saying why), so machine trouble never turns a regression into a pass.

use anyhow::Context;

use super::{Ended, Runner};
use crate::engine::Progress;
use crate::model::{BaselineSpec, RunId, RunStatus};
use crate::pipeline::Job;
use crate::pipeline::confirm;
use crate::pipeline::judge_run::{IfRegressed, JudgeError};
use crate::report::CheckReport;
use crate::store::fault::{self, Step};
use crate::store::{Retry, retry};

/// How many reruns a regression gets before its first verdict stands unconfirmed: a rerun the machine spoilt
/// is worth another try, but a night must end, and the first verdict already holds its false alarms to 1 %.
pub const CONFIRMATION_ATTEMPTS: usize = 3;
/// The longest wait between two confirmation reruns, seconds.
pub const RETRY_PAUSE_MAX_SECS: f64 = 60.0;

/// What one confirmation rerun came to.
enum Attempt {
    /// It was judged (its verdict may still be inconclusive).
    Judged(Box<Ended>),
    /// It measured nothing to judge (the rerun, if one was stored): the first verdict stands.
    MeasuredNothing(Option<RunId>),
    /// It measured another build (deployed since the first run): the first verdict stands.
    OtherBuild(confirm::LastRerun),
}

impl Runner {
    /// Reruns the build `first` was judged regressed on and judges the rerun against the same baseline; the
    /// night is regressed only when the rerun reproduces a finding, and unconfirmed when a rerun measured the
    /// build and did not (see `confirm`). A rerun that could not be judged (invalid, or on a held-back machine)
    /// is tried again, up to [`CONFIRMATION_ATTEMPTS`] reruns spaced by [`pause_before_retry`]; when none could
    /// be, or one measured nothing (it could not be done, the target went down, degrade was stopped), the first
    /// verdict stands. The night's alerts are stored before the pair's statuses: a degrade stopped before the
    /// statuses leaves the first run `confirming`, for the next one to decide (`interrupted`).
    pub(super) async fn confirm(
        &self,
        first: Ended,
        job: Job,
        spec: &BaselineSpec,
        on_progress: &mut impl FnMut(&Progress),
    ) -> anyhow::Result<Ended> {
        let first_report = first.report.clone().context("a regressed run has its report")?;
        tracing::info!(
            scenario = job.name,
            run_id = first.run_id,
            "judged regressed; rerunning the same build to confirm"
        );
        let mut undecided: Vec<(RunId, String)> = Vec::new();
        for attempt in 1..=CONFIRMATION_ATTEMPTS {
            if attempt > 1 {
                self.pause_before_retry(&first_report).await;
            }
            let attempt_job = Job { confirms: Some(first.run_id), ..job.rerun() };
            let rerun = match Box::pin(self.rerun_once(attempt_job, &first_report, spec, on_progress)).await? {
                Attempt::MeasuredNothing(rerun) => {
                    let last = confirm::LastRerun::MeasuredNothing(rerun);
                    return self.first_stands(first, first_report, &undecided, last).await;
                }
                Attempt::OtherBuild(last) => return self.first_stands(first, first_report, &undecided, last).await,
                Attempt::Judged(rerun) => rerun,
            };
            let report = rerun.report.as_ref().context("a judged rerun has its report")?;
            let mut rerun_report = report.clone();
            let decision = confirm::Decision::of(&first_report, &mut rerun_report);
            if decision.confirmation.rerun != confirm::Rerun::Undecided {
                let earlier: Vec<RunId> = undecided.iter().map(|(id, _)| *id).collect();
                return self.decided(first.run_id, *rerun, rerun_report, decision, &earlier).await;
            }
            tracing::warn!(
                scenario = job.name,
                run_id = rerun.run_id,
                attempt,
                "the confirmation rerun could not be judged: {}",
                report.summary
            );
            undecided.push((rerun.run_id, report.summary.clone()));
        }
        self.first_stands(first, first_report, &undecided, confirm::LastRerun::Undecided).await
    }

    /// Runs and judges one confirmation rerun of `job`'s build.
    async fn rerun_once(
        &self,
        job: Job,
        first_report: &CheckReport,
        spec: &BaselineSpec,
        on_progress: &mut impl FnMut(&Progress),
    ) -> anyhow::Result<Attempt> {
        let (store, scenario) = (&self.store, job.name.clone());
        if *self.stop.borrow() {
            // Stopped during the pause: no rerun is started, let alone stored.
            return Ok(Attempt::MeasuredNothing(None));
        }
        // The build is read again where the scenario has a version source: a deploy between the two runs (by
        // hand, or by another pipeline) would otherwise be measured under the first run's build id, and a fast
        // new build "refute" the old one's regression.
        let reads_its_build = job.scenario.as_ref().is_some_and(|s| s.build.version.is_some());
        let build = if reads_its_build { None } else { first_report.build_id.clone() };
        let outcome = match Box::pin(crate::pipeline::run(
            store,
            job,
            build,
            &self.clock,
            self.stop.clone(),
            on_progress,
        ))
        .await
        {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::warn!(scenario, error = %e, "the confirmation rerun could not be done; the first verdict stands");
                return Ok(Attempt::MeasuredNothing(None));
            }
        };
        if let Some(other) = Box::pin(self.other_build(outcome.run_id(), first_report.run_id)).await? {
            tracing::warn!(scenario, "the confirmation rerun measured another build: the first verdict stands");
            return Ok(Attempt::OtherBuild(other));
        }
        let judge = || self.conclude(&scenario, &outcome, spec, IfRegressed::Stands, Step::RerunJudged);
        match retry(Retry::Unreachable, "judge the rerun", judge).await {
            Ok(rerun) if rerun.report.is_some() => Ok(Attempt::Judged(Box::new(rerun))),
            Ok(_) => Ok(Attempt::MeasuredNothing(Some(outcome.run_id()))),
            Err(JudgeError::Refused(why)) => {
                tracing::warn!(scenario, "cannot judge the confirmation rerun: {why}; the first verdict stands");
                Ok(Attempt::MeasuredNothing(Some(outcome.run_id())))
            }
            // The database did not answer: the pair stays `confirming`, for the next degrade to decide.
            Err(e) => Err(e).context("judge the confirmation rerun"),
        }
    }

    /// How `rerun` ended when it measured another build than run `first` (see [`confirm::other_build`]).
    async fn other_build(&self, rerun: RunId, first: RunId) -> anyhow::Result<Option<confirm::LastRerun>> {
        let read = || async {
            Ok::<_, crate::store::StoreError>((self.store.find_run(first).await?, self.store.find_run(rerun).await?))
        };
        let runs = retry(Retry::Unreachable, "read the runs back", read).await?;
        Ok(match runs {
            (Some(first), Some(rerun)) => confirm::other_build(&first, &rerun).map(confirm::LastRerun::OtherBuild),
            _ => None,
        })
    }

    /// Stores what a judged rerun decided: its alerts, then the pair's statuses (the `earlier` reruns, which could
    /// not be judged, `unconfirmed`: the night counts once).
    async fn decided(
        &self,
        first: RunId,
        mut rerun: Ended,
        report: CheckReport,
        decision: confirm::Decision,
        earlier: &[RunId],
    ) -> anyhow::Result<Ended> {
        if decision.alerted() {
            self.alert(&report).await?;
        }
        let decide = || async {
            fault::before(Step::PairDecided);
            let decided = decision.store(&self.store, first, rerun.run_id, earlier).await?;
            fault::after(Step::PairDecided)?;
            Ok::<_, crate::store::StoreError>(decided)
        };
        let decided = retry(Retry::Unreachable, "decide the pair", decide).await?;
        // The night's alerts are the pair's, stored above: the first run has nothing left to alert.
        self.stamp_alerted(first, self.clock.now()).await?;
        tracing::info!(run_id = rerun.run_id, "{}", decision.confirmation.describe(rerun.run_id));
        rerun.status = decision.rerun.unwrap_or(rerun.status);
        rerun.report = Some(report);
        rerun.confirmation = Some(decision.confirmation);
        only_if_decided(rerun, first, decided)
    }

    /// Waits before another confirmation rerun, so a passing spell on the machine can end: as long as the first
    /// run measured, between 1 s and a minute; a stop cuts the wait short (the rerun then measures nothing).
    async fn pause_before_retry(&self, first: &CheckReport) {
        let measured = self.store.find_run(first.run_id).await.ok().flatten().and_then(|run| run.finished_at);
        let secs =
            measured.map_or(RETRY_PAUSE_MAX_SECS, |end| (end - first.started_at).num_milliseconds() as f64 / 1e3);
        let pause = std::time::Duration::from_secs_f64(secs.clamp(1.0, RETRY_PAUSE_MAX_SECS));
        let mut stop = self.stop.clone();
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            _ = stop.wait_for(|stopped| *stopped) => {}
        }
    }

    /// The first verdict stands without a rerun to decide it: none of the reruns (`undecided`, each with why)
    /// could be judged, and the `last` measured nothing or could not be judged either. Alerted, then the run
    /// `regressed` and the reruns that measured validly `unconfirmed` (the night counts once).
    async fn first_stands(
        &self,
        first: Ended,
        mut report: CheckReport,
        undecided: &[(RunId, String)],
        last: confirm::LastRerun,
    ) -> anyhow::Result<Ended> {
        report.confirmation = Some(confirm::stands_note(undecided, last.clone()));
        if !undecided.is_empty() {
            tracing::warn!(run_id = first.run_id, "{}", report.confirmation.as_deref().unwrap_or_default());
        }
        self.alert(&report).await?;
        let mut reruns: Vec<(RunId, RunStatus)> =
            undecided.iter().map(|(id, _)| (*id, RunStatus::Unconfirmed)).collect();
        // A rerun of another build is no night of its own either: like every rerun that did not decide, it
        // stays out of the baselines, and its first run stays in them.
        if let confirm::LastRerun::OtherBuild(other) = &last {
            reruns.push((other.rerun, RunStatus::Unconfirmed));
        }
        let decide = || async {
            fault::before(Step::PairDecided);
            let decided = self.store.end_confirmation(first.run_id, RunStatus::Regressed, &reruns).await?;
            fault::after(Step::PairDecided)?;
            Ok::<_, crate::store::StoreError>(decided)
        };
        let decided = retry(Retry::Unreachable, "decide the pair", decide).await?;
        only_if_decided(Ended { status: RunStatus::Regressed, report: Some(report), ..first }, first.run_id, decided)
    }
}

/// How the pair of `first` ended, unless another degrade decided it first: this one's lease ran out while it
/// ran (its renewals failed), and the scenario's next holder settled what it took for left behind.
fn only_if_decided(ended: Ended, first: RunId, decided: bool) -> anyhow::Result<Ended> {
    anyhow::ensure!(decided, "run #{first} was decided by another degrade while its rerun was under way");
    Ok(ended)
}
