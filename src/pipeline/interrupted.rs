//! What a degrade that was killed mid-way left undecided. A regressed run is `unconfirmed` while its rerun
//! measures the same build; a rerun that ends in any way, even stopped or failed, is linked to the run and
//! decides it (`runner`). A rerun cut short by a kill, a crash or a power cut decides nothing, and the run
//! stayed `unconfirmed` for good: never alerted and never a baseline, so a real regression went unheard. Such a
//! rerun measured nothing, and as for any rerun that measured nothing, the first verdict stands: the run is
//! judged again against the baseline it was judged against, and its regression alerted.

use anyhow::Context;
use chrono::{DateTime, Utc};

use super::alerting;
use super::judge_run::judge_run;
use crate::config::Config;
use crate::model::{BaselineSpec, RunId, RunStatus};
use crate::store::Store;

/// Lets the first verdict stand for every run whose rerun a stopped degrade left unfinished (their scenarios'
/// leases ran out, `lease_now` on the system's clock), judged and alerted `at`; returns those settled. One
/// that cannot be judged again is logged and left regressed: the verdict stands, only its alert is missing.
pub async fn settle_unconfirmed_orphans(
    store: &Store,
    config: &Config,
    lease_now: DateTime<Utc>,
    at: DateTime<Utc>,
) -> anyhow::Result<Vec<RunId>> {
    let mut settled = Vec::new();
    for id in store.unconfirmed_without_rerun(lease_now).await? {
        // First, so the verdict stored again moves the run as any verdict does, and the watch never finds it
        // again however the rest goes.
        store.set_confirmed_status(id, RunStatus::Regressed).await?;
        match judge_and_alert(store, config, id, at).await {
            Ok(()) => settled.push(id),
            Err(e) => {
                tracing::error!(run_id = id, error = format!("{e:#}"), "cannot alert a run whose rerun was cut short");
            }
        }
    }
    Ok(settled)
}

/// Judges run `id` again against the baseline it was judged against and updates the scenario's episodes.
async fn judge_and_alert(store: &Store, config: &Config, id: RunId, at: DateTime<Utc>) -> anyhow::Result<()> {
    let run = store.find_run(id).await?.with_context(|| format!("run #{id} is gone"))?;
    // The scenario's baseline, should that verdict be unreadable.
    let judged = store.latest_verdict(id).await?.and_then(|v| v.baseline_spec.parse::<BaselineSpec>().ok());
    let spec = judged.unwrap_or_else(|| config.scenario(&run.scenario).map(|s| s.baseline.clone()).unwrap_or_default());
    let report = judge_run(store, config, &run, &spec, at).await.with_context(|| format!("judge run #{id}"))?;
    alerting::after_judgement(store, config, &report, at).await?;
    Ok(())
}
