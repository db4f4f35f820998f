//! The alerts of a split night run by `check --run-now --segment K/N`, through the same episodes and outbox as
//! a single process's night: a night that could not be measured as one (invalid: a segment died, was evicted,
//! the barrier timed out, a plan or a clock differed; or failed: the target was down) opens a `run_failed`
//! episode saying why, and a judged night opens or resolves episodes as the runner's do. Every segment that
//! sees its night end so may call these: the one-open-episode rule (a unique index on PostgreSQL) makes the
//! team hear it once however many segments race, and the run is stamped alerted after its alerts.

use chrono::{DateTime, Utc};

use crate::config::Config;
use crate::model::{RunId, RunStatus};
use crate::pipeline::alerting;
use crate::report::CheckReport;
use crate::store::{Store, StoreError};

/// Alerts run `run_id` of a split night when it was not measured as one night (invalid or failed): a run-failed
/// episode whose message gives the stored reasons. `false` when the run is measured (or gone): the caller
/// judges it.
pub async fn after_unmeasured(
    store: &Store,
    config: &Config,
    run_id: RunId,
    at: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let Some(run) = store.find_run(run_id).await? else { return Ok(false) };
    if !matches!(run.status, RunStatus::Invalid | RunStatus::Failed) {
        return Ok(false);
    }
    // An invalid night's reason is its validity reason too (`Store::end_run`): said once.
    let reasons: Vec<&str> = run
        .stopped_reason()
        .into_iter()
        .chain(run.validity_reasons.iter().map(String::as_str))
        .filter(|r| !r.is_empty())
        .collect();
    let why = if reasons.is_empty() { "no reason was recorded".to_owned() } else { reasons.join("; ") };
    let reason = format!("the split night is {}, never judged: {why}", run.status);
    alerting::after_start(store, config, &run.scenario, run_id, at).await?;
    alerting::after_failure(store, config, &run.scenario, run_id, run.build_id.clone(), &reason, at).await?;
    store.mark_alerted(run_id, at).await?;
    Ok(true)
}

/// Opens or resolves the scenario's episodes after the merged night was judged, as the runner does after a
/// night, and stamps it alerted.
pub async fn after_judgement(
    store: &Store,
    config: &Config,
    report: &CheckReport,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    alerting::after_start(store, config, &report.scenario, report.run_id, at).await?;
    alerting::after_judgement(store, config, report, at).await?;
    store.mark_alerted(report.run_id, at).await
}
