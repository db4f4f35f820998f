//! A plain `degrade check` of a run whose confirmation rerun is under way elsewhere (`serve`'s night, another
//! CI step's `--run-now`) waits for the rerun to decide instead of passing the gate: a trial's release pipeline
//! ran `check` during that window and got exit 0 beside six regressions of 10 to 100 sigma.
//!
//! The wait is bounded by what the rerun can take: every confirmation attempt the runner makes, each as long
//! as the first run took (a rerun repeats its plan on the same build, without a deploy) plus the pause before
//! a retry, and a margin for judging. If nothing was decided by then, the first verdict stands for this gate,
//! as it does when no rerun could measure the build: a gate never passes a regression it could not refute. So it
//! does at once when no rerun is under way (nobody holds the scenario's lease: the degrade confirming it was
//! stopped).

use std::time::Duration;

use crate::model::{Run, RunStatus};
use crate::pipeline::runner::{CONFIRMATION_ATTEMPTS, RETRY_PAUSE_MAX_SECS};
use crate::store::{Store, StoreError};

/// Room beyond the reruns' own length: starting one, judging it, storing the pair's statuses.
const MARGIN: Duration = Duration::from_mins(2);
/// How often the run's status is read.
const POLL: Duration = Duration::from_secs(2);

/// How the wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Waited {
    /// The rerun decided: the run is no longer `confirming`.
    Decided,
    /// Nothing was decided within this bound.
    TimedOut(Duration),
    /// No process holds the scenario's lease: no rerun is under way (the degrade confirming it was stopped, and
    /// the scenario's next run, or `serve`, decides the pair).
    NoneUnderWay,
}

/// The longest a confirmation of `first` can take: every attempt as long as `first` itself (its stages, and
/// its capacity `search`, which a rerun repeats and which ends after the run's own end is stored), with the
/// pauses.
pub(super) fn bound(first: &Run, search: Duration) -> Duration {
    let length = first.finished_at.and_then(|end| (end - first.started_at).to_std().ok()).unwrap_or_default();
    let attempts = u32::try_from(CONFIRMATION_ATTEMPTS).unwrap_or(u32::MAX);
    (length + search + Duration::from_secs_f64(RETRY_PAUSE_MAX_SECS)) * attempts + MARGIN
}

/// Waits for `first`'s confirmation to be decided, at most [`bound`], saying so first.
pub(super) async fn for_the_rerun(store: &Store, first: &Run) -> Result<Waited, StoreError> {
    let search = store.capacity(first.id).await?.map_or(0.0, |c| c.search_secs);
    let bound = bound(first, Duration::try_from_secs_f64(search).unwrap_or_default());
    let rerun = store.rerun_of(first.id).await?.map_or_else(String::new, |id| format!(" (rerun #{id})"));
    say!(
        "run #{} is being confirmed{rerun}: waiting for the rerun of the same build to decide, at most {}",
        first.id,
        humantime::format_duration(Duration::from_secs(bound.as_secs()))
    );
    let since = tokio::time::Instant::now();
    while since.elapsed() < bound {
        if decided(store, first).await? {
            return Ok(Waited::Decided);
        }
        // The pair's statuses are stored before the lease is given back: read again once it is gone.
        let now = chrono::Utc::now();
        let under_way = store.lease(&first.scenario).await?.is_some_and(|l| l.expires_at > now);
        if !under_way {
            return Ok(if decided(store, first).await? { Waited::Decided } else { Waited::NoneUnderWay });
        }
        tokio::time::sleep(POLL).await;
    }
    Ok(Waited::TimedOut(bound))
}

async fn decided(store: &Store, first: &Run) -> Result<bool, StoreError> {
    Ok(store.find_run(first.id).await?.is_none_or(|r| r.status != RunStatus::Confirming))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_covers_every_attempt_of_a_rerun_as_long_as_the_first_run() {
        let started_at = chrono::DateTime::UNIX_EPOCH;
        let first = Run {
            id: 11,
            scenario: "shop".into(),
            build_id: None,
            status: RunStatus::Confirming,
            started_at,
            finished_at: Some(started_at + chrono::Duration::seconds(65)),
            scenario_hash: "h".into(),
            seed: 1,
            validity_reasons: Vec::new(),
            load_summary: None,
            failure_reason: None,
            segments: 1,
        };
        // Three reruns of 65 s, each after a pause of up to a minute, and two minutes to judge: 8 min 15 s.
        assert_eq!(bound(&first, Duration::ZERO), Duration::from_secs(3 * (65 + 60) + 120));
        // A capacity night's search, after its stages: each rerun repeats it.
        assert_eq!(bound(&first, Duration::from_mins(10)), Duration::from_secs(3 * (65 + 600 + 60) + 120));
        let unfinished = Run { finished_at: None, ..first };
        assert_eq!(bound(&unfinished, Duration::ZERO), Duration::from_mins(5), "never shorter than the pauses");
    }
}
