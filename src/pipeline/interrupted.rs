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
/// leases ran out, `lease_now` on the system's clock), judged and alerted `at`; returns those runs.
pub async fn settle_unconfirmed_orphans(
    store: &Store,
    config: &Config,
    lease_now: DateTime<Utc>,
    at: DateTime<Utc>,
) -> anyhow::Result<Vec<RunId>> {
    let orphans = store.unconfirmed_without_rerun(lease_now).await?;
    for &id in &orphans {
        store.set_confirmed_status(id, RunStatus::Regressed).await?;
        let run = store.find_run(id).await?.with_context(|| format!("run #{id} is gone"))?;
        // The baseline it was judged against; the scenario's, should that verdict be unreadable.
        let judged = store.latest_verdict(id).await?.and_then(|v| v.baseline_spec.parse::<BaselineSpec>().ok());
        let spec =
            judged.unwrap_or_else(|| config.scenario(&run.scenario).map(|s| s.baseline.clone()).unwrap_or_default());
        let report = judge_run(store, config, &run, &spec, at).await.with_context(|| format!("judge run #{id}"))?;
        alerting::after_judgement(store, config, &report, at).await?;
    }
    Ok(orphans)
}
