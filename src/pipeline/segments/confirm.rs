//! The confirmation rerun of a split night's regression, as a k6-operator user would expect of a night run by N
//! machines: the rerun is the same N segments again, never one machine rerunning the whole plan (that would be
//! another workload, judged against nights of another segment count). When the merged night is judged regressed
//! and the scenario confirms (`[scenario.gates] confirm`), its run is stored `confirming`; every segment, having
//! waited for that verdict, reruns its share of the same build (no deploy) under a run key derived from the
//! night's ([`rerun_key`]), through a second start barrier; the segment that merges the rerun decides the pair as
//! the runner decides one (`interrupted::decide`): regressed only for what both found, alerted once, or unconfirmed. A rerun
//! that could not be measured (a segment missing, stopped, lost) leaves the first verdict standing, decided by
//! whichever segment sees it so.

use std::time::{Duration, Instant};

use crate::model::{RunId, RunStatus};
use crate::store::Store;
use anyhow::Context;

/// How often a segment that did not merge looks for the night's verdict.
const POLL: Duration = Duration::from_millis(200);

/// The run key of night `key`'s confirmation rerun: the same for its N segments, another night's registry.
#[must_use]
pub fn rerun_key(key: &str) -> String {
    format!("{key}:confirm")
}

/// Waits, at most `timeout`, for run `run_id` (a split night this segment took part in) to be judged or
/// ended; its status then (`confirming` asks for the rerun), `None` when nothing was decided in time.
pub async fn wait_for_verdict(store: &Store, run_id: RunId, timeout: Duration) -> anyhow::Result<Option<RunStatus>> {
    let since = Instant::now();
    while since.elapsed() < timeout {
        let run = store.find_run(run_id).await?.with_context(|| format!("run {run_id} vanished"))?;
        let judged = run.status == RunStatus::Finished && store.latest_verdict(run_id).await?.is_some();
        if !matches!(run.status, RunStatus::Running | RunStatus::Finished) || judged {
            return Ok(Some(run.status));
        }
        tokio::time::sleep(POLL).await;
    }
    Ok(None)
}
