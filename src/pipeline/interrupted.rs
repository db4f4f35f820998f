//! What a degrade stopped mid-way (a kill, a crash, a power cut) left undecided, settled by the next one: runs
//! left `running` become `aborted`, and a regression left `confirming` is decided as the runner would have
//! decided it. `serve`'s watch does this for every scenario whose lease has run out, and every run through the
//! runner first does it for the scenario it has claimed, so a setup that only runs `degrade check --run-now`
//! is covered too, and the night that follows is judged after the one left behind.
//!
//! A first run is `confirming` from its verdict (stored in the same transaction) until the pair's statuses
//! are, after the night's alerts; the rerun is linked to it from the moment it is stored. Where the rerun
//! measured the build (a kill after its load, before its verdict, the alerts or the statuses), the pair is
//! decided from the two runs, each judged again against the runner's baseline for the first. Where it measured
//! nothing (cut short, failed, never stored), the first verdict stands, as for any rerun that measured nothing.
//! The night is alerted, unless a later night has opened or resolved a regression episode of the scenario
//! since: the alerts follow that night now, and reopening one for an older night would be a stale alarm.

use anyhow::Context;
use chrono::{DateTime, Utc};

use super::alerting;
use super::confirm;
use super::judge_run::{IfRegressed, JudgeError, judge_run};
use crate::config::Config;
use crate::model::{BaselineSpec, Run, RunId, RunStatus, VerdictOutcome};
use crate::report::CheckReport;
use crate::store::{LeftBehind, Store};

/// Aborts the runs a stopped degrade left `running` and decides the regressions it left `confirming`, where
/// `scope` says; verdicts and alerts are made `at`. Everything is logged, nothing is returned: what cannot be
/// settled now is found again next time.
pub async fn settle(store: &Store, config: &Config, scope: LeftBehind<'_>, at: DateTime<Utc>) {
    // Leases are on the system's clock (see `clock`), and so is the time a run was seen to be cut short.
    match store.abort_interrupted_runs(scope, Utc::now()).await {
        Ok(aborted) if !aborted.is_empty() => {
            tracing::warn!(?aborted, "runs whose degrade stopped were marked aborted");
        }
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "cannot look for runs orphaned by a stopped degrade"),
    }
    let left = match store.confirming_left_behind(scope).await {
        Ok(left) => left,
        Err(e) => return tracing::error!(error = %e, "cannot look for regressions left confirming"),
    };
    for first in left {
        match decide(store, config, first, at).await {
            Ok(Some(night)) => tracing::warn!(
                run_id = first,
                night,
                "a regression whose confirmation a stopped degrade left undecided is decided"
            ),
            Ok(None) => {}
            Err(e) => tracing::error!(
                run_id = first,
                error = format!("{e:#}"),
                "cannot decide a regression whose confirmation a stopped degrade left undecided"
            ),
        }
    }
}

/// Decides run `first`, left `confirming`, and alerts the night; returns the run that is the night's result,
/// or `None` when another degrade decided it first. Alerts are stored before the statuses, as the runner
/// does: a kill in between leaves the pair `confirming`, to be decided (and alerted, saying nothing new) again.
async fn decide(store: &Store, config: &Config, first: RunId, at: DateTime<Utc>) -> anyhow::Result<Option<RunId>> {
    let first = store.find_run(first).await?.with_context(|| format!("run #{first} is gone"))?;
    let spec = judged_against(store, config, &first).await?;
    // Judged again while still `confirming`, which a verdict does not move (see `Store::save_verdict`).
    let Some(mut first_report) = judge_again(store, config, &first, &spec, at).await? else {
        store.end_confirmation(first.id, RunStatus::Regressed, None).await?;
        anyhow::bail!("run #{} cannot be judged again; its regression stands, not alerted", first.id);
    };
    let rerun = match store.rerun_of(first.id).await? {
        Some(id) => store.find_run(id).await?,
        None => None,
    };
    // A rerun decides only a regression; should the first run no longer regress against its baseline (a
    // baseline night since set aside), its verdict now is what stands.
    let to_decide = rerun.as_ref().filter(|r| measured(r.status) && first_report.outcome == VerdictOutcome::Regressed);
    let rerun_report = match to_decide {
        Some(rerun) => judge_again(store, config, rerun, &spec, at).await?,
        None => None,
    };
    if let Some(mut report) = rerun_report {
        let decision = confirm::Decision::of(&first_report, &mut report);
        if decision.alerted() {
            alert_unless_superseded(store, config, &report, at).await?;
        }
        return Ok(decision.store(store, first.id, report.run_id).await?.then_some(report.run_id));
    }
    first_report.confirmation =
        rerun.map(|r| format!("rerun #{} of the same build measured nothing to judge, so this verdict stands", r.id));
    alert_unless_superseded(store, config, &first_report, at).await?;
    let stands = status_after(first_report.outcome);
    Ok(store.end_confirmation(first.id, stands, None).await?.then_some(first.id))
}

/// Judges `run` again against `spec`; `None`, logged, when it cannot be judged (a store error is returned,
/// to be tried again next time).
async fn judge_again(
    store: &Store,
    config: &Config,
    run: &Run,
    spec: &BaselineSpec,
    at: DateTime<Utc>,
) -> anyhow::Result<Option<CheckReport>> {
    match judge_run(store, config, run, spec, IfRegressed::Stands, at).await {
        Ok(report) => Ok(Some(report)),
        Err(JudgeError::Refused(why)) => {
            tracing::warn!(run_id = run.id, "cannot judge the run again: {why}");
            Ok(None)
        }
        Err(JudgeError::Store(e)) => Err(e).with_context(|| format!("judge run #{} again", run.id)),
    }
}

/// Alerts the night's report as the runner would have, unless a later night has opened or resolved a
/// regression episode of the scenario since: its alerts follow that night now.
async fn alert_unless_superseded(
    store: &Store,
    config: &Config,
    night: &CheckReport,
    at: DateTime<Utc>,
) -> anyhow::Result<()> {
    if store.episodes_moved_since(night.run_id).await? {
        tracing::info!(run_id = night.run_id, "not alerted: a later night's alerts have moved the scenario on");
        return Ok(());
    }
    alerting::after_judgement(store, config, night, at).await?;
    Ok(())
}

/// The baseline the runner judged `run` against, from its first verdict (a `check` of it since may have named
/// another); the scenario's, should that be unreadable.
async fn judged_against(store: &Store, config: &Config, run: &Run) -> anyhow::Result<BaselineSpec> {
    let judged = store.first_baseline_spec(run.id).await?.and_then(|spec| spec.parse::<BaselineSpec>().ok());
    Ok(judged.unwrap_or_else(|| config.scenario(&run.scenario).map(|s| s.baseline.clone()).unwrap_or_default()))
}

/// Whether a run with this status measured the build, so it can be judged.
fn measured(status: RunStatus) -> bool {
    !matches!(status, RunStatus::Running | RunStatus::Failed | RunStatus::Aborted)
}

/// The status a first run whose rerun measured nothing ends with: its verdict's, judged again.
fn status_after(outcome: VerdictOutcome) -> RunStatus {
    match outcome {
        VerdictOutcome::Regressed => RunStatus::Regressed,
        VerdictOutcome::Passed => RunStatus::Passed,
        VerdictOutcome::Inconclusive => RunStatus::Finished,
    }
}
