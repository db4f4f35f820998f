//! What a degrade stopped mid-way (a kill, a crash, a power cut) left undecided, settled by the next one: runs
//! left `running` become `aborted`, a regression left `confirming` is decided as the runner would have
//! decided it, and a night measured but never judged (killed between its stored results and its verdict) is
//! judged against the baseline stored with it, and alerted. `serve`'s watch does this for every scenario whose lease has run out, and every run through the
//! runner first does it for the scenario it has claimed, so a setup that only runs `degrade check --run-now`
//! is covered too, and the night that follows is judged after the one left behind.
//!
//! A first run is `confirming` from its verdict (stored in the same transaction) until the pair's statuses
//! are, after the night's alerts; the rerun is linked to it from the moment it is stored. Where the rerun
//! measured the build (a kill after its load, before its verdict, the alerts or the statuses), the rerun is
//! judged again against the baseline of the runner's verdict on the first run, and the pair decided from that
//! verdict and the rerun's. Where it measured nothing (cut short, failed, never stored) or could not be judged
//! (invalid, a held-back machine), the first verdict stands, as after the runner's last rerun. The night is alerted, unless a later night has been judged,
//! or has moved the scenario's regression episodes, since: the team has heard of that night, and an alarm for
//! an older one would be stale.

use anyhow::Context;
use chrono::{DateTime, Utc};

use super::alerting;
use super::confirm;
use super::judge_run::{IfRegressed, JudgeError, judge_run};
use crate::config::Config;
use crate::model::{BaselineSpec, Run, RunId, RunStatus, Verdict, VerdictOutcome};
use crate::report::{BaselineRun, CheckReport};
use crate::store::{LeftBehind, Store, StoreError};

/// Aborts the runs a stopped degrade left `running` and decides the regressions it left `confirming`, where
/// `scope` says; verdicts and alerts are made `at`. Everything is logged, nothing is returned: what cannot be
/// settled now is found again next time.
pub async fn settle(store: &Store, config: &Config, scope: LeftBehind<'_>, at: DateTime<Utc>) {
    // Leases are on the system's clock (see `clock`), and so is the time a run was seen to be cut short.
    // A split night is told lost by its segments, not by its lease (which runs out minutes later): one whose
    // segments are all gone is lost first, invalid with the reason.
    settle_lost_nights(store, config, Utc::now(), at).await;
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
        let decided = decide(store, config, first, at).await;
        if let Ok(Some(_)) = decided
            && let Err(e) = store.mark_alerted(first, at).await
        {
            tracing::error!(run_id = first, error = %e, "cannot stamp a decided night alerted");
        }
        match decided {
            Ok(Some(night)) => tracing::warn!(
                run_id = first,
                night = night.run_id,
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
    // Boxed: judging holds a whole judgement, and every run through the runner awaits `settle` first.
    Box::pin(judge_unjudged(store, config, scope, at)).await;
    alert_unalerted(store, config, scope, at).await;
}

/// Marks the split nights whose segments are all gone invalid and alerts them (`segments::lost`), with `now`
/// on the system's clock.
pub async fn settle_lost_nights(store: &Store, config: &Config, now: DateTime<Utc>, at: DateTime<Utc>) {
    match super::segments::lost::settle_lost(store, config, now, at).await {
        Ok(lost) if !lost.is_empty() => tracing::warn!(?lost, "split nights whose segments are all gone are invalid"),
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "cannot look for split nights whose segments are all gone"),
    }
}

/// Alerts the nights a stopped degrade judged and never alerted, as the runner would have (unless a later night
/// was judged since), and stamps each: a night is looked at once.
async fn alert_unalerted(store: &Store, config: &Config, scope: LeftBehind<'_>, at: DateTime<Utc>) {
    let left = match store.unalerted_left_behind(scope).await {
        Ok(left) => left,
        Err(e) => return tracing::error!(error = %e, "cannot look for nights left unalerted"),
    };
    for run_id in left {
        let alerted = async {
            let run = store.find_run(run_id).await?.with_context(|| format!("run #{run_id} is gone"))?;
            if run.status == RunStatus::Failed {
                alert_failure_unless_superseded(store, config, &run, at).await?;
            } else {
                // The runner's own verdict is the night's first; a later `degrade check` of it alerts nothing.
                let verdict =
                    store.first_verdict(run_id).await?.with_context(|| format!("run #{run_id}: no verdict"))?;
                let report = stored_report(store, &run, verdict).await?;
                alert_unless_superseded(store, config, &report, at).await?;
            }
            store.mark_alerted(run_id, at).await?;
            anyhow::Ok(())
        };
        match alerted.await {
            Ok(()) => tracing::info!(run_id, "a night a stopped degrade judged and never alerted is alerted"),
            Err(e) => tracing::error!(run_id, error = format!("{e:#}"), "cannot alert a night left unalerted"),
        }
    }
}

/// Judges the nights a stopped degrade measured and never judged, against the baseline each was to be judged
/// against, and alerts them as the runner would have (unless a later night was judged since). No rerun
/// confirms a regression found this way: the night has gone by, and a rerun now would measure another one.
async fn judge_unjudged(store: &Store, config: &Config, scope: LeftBehind<'_>, at: DateTime<Utc>) {
    let left = match store.unjudged_left_behind(scope).await {
        Ok(left) => left,
        Err(e) => return tracing::error!(error = %e, "cannot look for nights left unjudged"),
    };
    for (run_id, spec) in left {
        match judge_left_behind(store, config, run_id, &spec, at).await {
            Ok(Some(outcome)) => tracing::warn!(
                run_id,
                outcome = outcome.as_str(),
                "a night a stopped degrade measured but never judged is judged"
            ),
            Ok(None) => {}
            Err(e) => tracing::error!(
                run_id,
                error = format!("{e:#}"),
                "cannot judge a night a stopped degrade measured but never judged"
            ),
        }
    }
}

/// Judges run `run_id` against `spec` (as stored with it) and alerts it; `None` when it is gone or cannot be
/// judged (logged).
async fn judge_left_behind(
    store: &Store,
    config: &Config,
    run_id: RunId,
    spec: &str,
    at: DateTime<Utc>,
) -> anyhow::Result<Option<VerdictOutcome>> {
    let spec = spec.parse::<BaselineSpec>().map_err(|e| anyhow::anyhow!("run #{run_id}'s baseline: {e}"))?;
    let Some(run) = store.find_run(run_id).await? else { return Ok(None) };
    alerting::after_start(store, config, &run.scenario, run.id, at).await?;
    let Some(report) = judge_again(store, config, &run, &spec, at).await? else { return Ok(None) };
    alert_unless_superseded(store, config, &report, at).await?;
    store.mark_alerted(run.id, at).await?;
    Ok(Some(report.outcome))
}

/// Decides run `first`, left `confirming`, and alerts the night; returns the report of the run that is the
/// night's result, its confirmation said, or `None` when another degrade decided it first. A split night's segment that merged its rerun decides the
/// pair this way too (`check --run-now --segment`). Alerts are stored before the statuses, as the runner
/// does: a kill in between leaves the pair `confirming`, to be decided (and alerted, saying nothing new) again.
pub async fn decide(
    store: &Store,
    config: &Config,
    first: RunId,
    at: DateTime<Utc>,
) -> anyhow::Result<Option<CheckReport>> {
    let first = store.find_run(first).await?.with_context(|| format!("run #{first} is gone"))?;
    // The runner's verdict, which made the run `confirming`, is the one the rerun confirms or refutes.
    let verdict = store.first_verdict(first.id).await?.with_context(|| format!("run #{} has no verdict", first.id))?;
    let spec = verdict.baseline_spec.parse::<BaselineSpec>().map_err(|e| anyhow::anyhow!(e))?;
    let mut first_report = stored_report(store, &first, verdict).await?;
    // The newest rerun decides; the ones before it could not be judged (the runner tries again only then).
    let mut reruns = store.reruns_of(first.id).await?;
    let rerun = match reruns.pop() {
        Some(id) => store.find_run(id).await?,
        None => None,
    };
    let earlier = reruns;
    // A rerun that measured another build (deployed between the two) neither confirms nor refutes.
    if let Some(other) = rerun.as_ref().and_then(|r| confirm::other_build(&first, r)) {
        let mut ended: Vec<(RunId, RunStatus)> = earlier.iter().map(|id| (*id, RunStatus::Unconfirmed)).collect();
        ended.push((other.rerun, RunStatus::Unconfirmed));
        first_report.confirmation = Some(confirm::stands_note(&[], confirm::LastRerun::OtherBuild(other)));
        alert_unless_superseded(store, config, &first_report, at).await?;
        return Ok(store.end_confirmation(first.id, RunStatus::Regressed, &ended).await?.then_some(first_report));
    }
    // A rerun still `running` here was left so by a stopped degrade (`settle` aborts such runs first).
    let rerun_report = match rerun.as_ref().filter(|r| r.status != RunStatus::Running && !r.status.measured_nothing()) {
        Some(rerun) => judge_again(store, config, rerun, &spec, at).await?,
        None => None,
    };
    if let Some(mut report) = rerun_report {
        let decision = confirm::Decision::of(&first_report, &mut report);
        if decision.confirmation.rerun == confirm::Rerun::Undecided {
            // No more reruns for a night gone by: the first verdict stands, as after the runner's last attempt.
            let undecided = [(report.run_id, report.summary.clone())];
            first_report.confirmation = Some(confirm::stands_note(&undecided, confirm::LastRerun::Undecided));
            alert_unless_superseded(store, config, &first_report, at).await?;
            return Ok(decision.store(store, first.id, report.run_id, &earlier).await?.then_some(first_report));
        }
        if decision.alerted() {
            alert_unless_superseded(store, config, &report, at).await?;
        }
        return Ok(decision.store(store, first.id, report.run_id, &earlier).await?.then_some(report));
    }
    first_report.confirmation = Some(confirm::measured_nothing_note(rerun.map(|r| r.id)));
    alert_unless_superseded(store, config, &first_report, at).await?;
    let earlier: Vec<(RunId, RunStatus)> = earlier.iter().map(|id| (*id, RunStatus::Unconfirmed)).collect();
    Ok(store.end_confirmation(first.id, RunStatus::Regressed, &earlier).await?.then_some(first_report))
}

/// `run`'s report as its stored `verdict` made it (the nights the verdict left out are not stored, and not
/// listed).
pub(super) async fn stored_report(store: &Store, run: &Run, verdict: Verdict) -> Result<CheckReport, StoreError> {
    let mut baseline = Vec::new();
    for id in &verdict.baseline_run_ids {
        if let Some(night) = store.find_run(*id).await? {
            baseline.push(BaselineRun::from(&night));
        }
    }
    Ok(CheckReport {
        scenario: run.scenario.clone(),
        run_id: run.id,
        build_id: run.build_id.clone(),
        started_at: run.started_at,
        outcome: verdict.outcome,
        summary: verdict.summary,
        baseline_spec: verdict.baseline_spec,
        baseline,
        left_out: Vec::new(),
        findings: verdict.findings,
        confirmation: None,
        capacity: store.capacity(run.id).await?.map(Box::new),
    })
}

/// Judges `run` against `spec`, unless it was judged against it already (a degrade killed after storing a
/// rerun's verdict, before deciding the pair): that verdict is taken, so a night is judged once. `None`,
/// logged, when it cannot be judged (a store error is returned, to be tried again next time).
async fn judge_again(
    store: &Store,
    config: &Config,
    run: &Run,
    spec: &BaselineSpec,
    at: DateTime<Utc>,
) -> anyhow::Result<Option<CheckReport>> {
    if let Some(verdict) = store.latest_verdict(run.id).await?.filter(|v| v.baseline_spec == spec.to_string()) {
        return Ok(Some(stored_report(store, run, verdict).await?));
    }
    match judge_run(store, config, run, spec, IfRegressed::Stands, at).await {
        Ok(report) => Ok(Some(report)),
        Err(JudgeError::Refused(why)) => {
            tracing::warn!(run_id = run.id, "cannot judge the run: {why}");
            Ok(None)
        }
        Err(JudgeError::Store(e)) => Err(e).with_context(|| format!("judge run #{} again", run.id)),
    }
}

/// Alerts a failed night as the runner would have (a run-failed episode), unless a later night has been judged
/// since.
async fn alert_failure_unless_superseded(
    store: &Store,
    config: &Config,
    run: &Run,
    at: DateTime<Utc>,
) -> anyhow::Result<()> {
    if store.superseded(run.id).await? {
        tracing::info!(run_id = run.id, "not alerted: a later night of the scenario was judged since");
        return Ok(());
    }
    let reason = run.failure_reason.as_deref().unwrap_or("the run could not be done");
    alerting::after_failure(store, config, &run.scenario, run.id, run.build_id.clone(), reason, at).await?;
    Ok(())
}

/// Alerts the night's report as the runner would have, unless a later night has been judged or has moved the
/// scenario's regression episodes since: the team has heard of that night, and the alerts follow it now.
async fn alert_unless_superseded(
    store: &Store,
    config: &Config,
    night: &CheckReport,
    at: DateTime<Utc>,
) -> anyhow::Result<()> {
    if store.superseded(night.run_id).await? {
        tracing::info!(run_id = night.run_id, "not alerted: a later night of the scenario was judged since");
        return Ok(());
    }
    alerting::after_judgement(store, config, night, at).await?;
    Ok(())
}
