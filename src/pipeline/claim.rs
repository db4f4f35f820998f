//! Claiming a scenario before running it, so it never runs twice at once: first in this process (a set of
//! scenarios under way, no database round trip), then across every degrade sharing the database (a lease
//! row, renewed while the run goes on and released at its end; see `store::leases`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::store::{Lease, Store, StoreError};

/// How long a lease lasts without renewal: a crashed holder blocks its scenario this long at most.
pub(crate) const LEASE_FOR: Duration = Duration::from_mins(2);
/// How often a holder renews its leases: well inside [`LEASE_FOR`], so one slow database call loses nothing.
pub(crate) const RENEW_EVERY: Duration = Duration::from_secs(30);

/// The scenarios with a run under way in this process.
#[derive(Debug, Clone, Default)]
pub struct RunsUnderWay(Arc<Mutex<HashSet<String>>>);

impl RunsUnderWay {
    /// Marks `scenario` as running, or `None` if it already is; the mark goes when the guard is dropped.
    fn start(&self, scenario: &str) -> Option<UnderWay> {
        let mut running = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        running.insert(scenario.to_owned()).then(|| UnderWay { runs: self.clone(), scenario: scenario.to_owned() })
    }

    /// Whether `scenario` has a run under way.
    #[must_use]
    pub fn contains(&self, scenario: &str) -> bool {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).contains(scenario)
    }

    /// How many runs are under way.
    #[must_use]
    pub fn count(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

struct UnderWay {
    runs: RunsUnderWay,
    scenario: String,
}

impl Drop for UnderWay {
    fn drop(&mut self) {
        self.runs.0.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.scenario);
    }
}

/// Why a scenario could not be claimed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// A run is under way in this process.
    #[error("a run of `{0}` is already under way here")]
    RunningHere(String),
    /// Another degrade holds the lease.
    #[error("a run of `{0}` is already under way in another degrade sharing this database: {1}")]
    RunningElsewhere(String, HeldBy),
    /// degrade is shutting down and starts no more runs.
    #[error("degrade is shutting down; it starts no new run of `{0}`")]
    ShuttingDown(String),
    /// The database could not be asked.
    #[error("cannot take the lease on `{0}`: {1}")]
    Database(String, StoreError),
}

/// Who holds a lease another degrade asked for, in words: which process, since when, until when, and what to
/// do if that process is gone.
#[derive(Debug, Clone)]
pub struct HeldBy {
    lease: Option<Lease>,
    now: DateTime<Utc>,
}

impl HeldBy {
    /// The lease found current at `now`, if any (`None`: released a moment ago).
    #[must_use]
    pub fn new(lease: Option<Lease>, now: DateTime<Utc>) -> Self {
        Self { lease, now }
    }

    /// How long the lease has left before it runs out unless renewed; `None` when it was released already.
    #[must_use]
    pub fn expires_in(&self) -> Option<Duration> {
        let lease = self.lease.as_ref()?;
        Some((lease.expires_at - self.now).to_std().unwrap_or_default().min(LEASE_FOR))
    }
}

impl std::fmt::Display for HeldBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(lease) = &self.lease else {
            return f.write_str("its lease was released a moment ago; start the run again");
        };
        // `host:pid:random` (see `holder_name`), or a split night's (`segments::lease::holder`); a name in
        // another shape is shown whole.
        let split_night = lease.holder.strip_prefix(SPLIT_NIGHT_HOLDER);
        if let Some(key) = split_night {
            write!(f, "held by the split night `{key}`")?;
        } else {
            match lease.holder.rsplitn(3, ':').collect::<Vec<_>>()[..] {
                [_, pid, host] => write!(f, "held by pid {pid} on host {host}")?,
                _ => write!(f, "held by {}", lease.holder)?,
            }
        }
        if let Some(taken_at) = lease.taken_at {
            write!(f, " since {}", taken_at.format("%Y-%m-%d %H:%M:%S UTC"))?;
        }
        let left = (lease.expires_at - self.now).num_seconds().max(0);
        let (gone, live) = if split_night.is_some() {
            ("If its segments are gone", "each live segment renews it")
        } else {
            ("If that process is gone", "a live one renews its lease")
        };
        write!(
            f,
            "; its lease expires at {} (in {left} s). {gone}, the next run after the expiry goes ahead; {live} \
             every {} s while it runs",
            lease.expires_at.format("%Y-%m-%d %H:%M:%S UTC"),
            RENEW_EVERY.as_secs()
        )
    }
}

/// The right to run one scenario, held until dropped.
pub struct Claim {
    _under_way: UnderWay,
    renewal: Option<tokio::task::JoinHandle<()>>,
    release: Option<(Store, String, String)>,
}

impl Claim {
    /// Claims `scenario` for `holder` (this process's lease name). Lease times are always the system's: they
    /// bound real time between processes, whatever clock the runs are stamped on.
    pub async fn take(store: &Store, runs: &RunsUnderWay, scenario: &str, holder: &str) -> Result<Self, ClaimError> {
        let under_way = runs.start(scenario).ok_or_else(|| ClaimError::RunningHere(scenario.to_owned()))?;
        let now = Utc::now();
        let taken = store
            .acquire_lease(scenario, holder, now, now + LEASE_FOR)
            .await
            .map_err(|e| ClaimError::Database(scenario.to_owned(), e))?;
        if !taken {
            // Asked after the refusal, so the holder may have let go in between: the message says so.
            let lease = store.lease(scenario).await.ok().flatten().filter(|l| l.expires_at > now);
            return Err(ClaimError::RunningElsewhere(scenario.to_owned(), HeldBy { lease, now }));
        }
        let (store, scenario, holder) = (store.clone(), scenario.to_owned(), holder.to_owned());
        let renewal = tokio::spawn(renew(store.clone(), scenario.clone(), holder.clone(), RENEW_EVERY));
        Ok(Self { _under_way: under_way, renewal: Some(renewal), release: Some((store, scenario, holder)) })
    }

    /// Gives the lease back now, once: after the renewal has stopped (dropping the claim does the same in the
    /// background).
    pub async fn release(mut self) {
        if let Some((store, scenario, holder)) = self.release.take() {
            stop_and_release(self.renewal.take(), store, scenario, holder).await;
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some((store, scenario, holder)) = self.release.take() {
            let renewal = self.renewal.take();
            if let Some(renewal) = &renewal {
                renewal.abort();
            }
            tokio::spawn(stop_and_release(renewal, store, scenario, holder));
        }
    }
}

/// Stops the renewal and waits until it has (an aborted task may be inside a database call), then releases.
/// Renewals only ever extend a current lease of ours, so even one that lands late cannot bring it back.
async fn stop_and_release(
    renewal: Option<tokio::task::JoinHandle<()>>,
    store: Store,
    scenario: String,
    holder: String,
) {
    if let Some(renewal) = renewal {
        renewal.abort();
        let _ = renewal.await;
    }
    if let Err(e) = store.release_lease(&scenario, &holder).await {
        tracing::warn!(scenario, error = %e, "cannot release the lease; it expires by itself");
    }
}

async fn renew(store: Store, scenario: String, holder: String, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let now = Utc::now();
        match store.renew_lease(&scenario, &holder, now, now + LEASE_FOR).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::error!(
                    scenario,
                    "the lease was lost (expired or taken over by another degrade) while running"
                );
                return;
            }
            Err(e) => tracing::warn!(scenario, error = %e, "cannot renew the lease; retrying"),
        }
    }
}

/// How the lease holder's name of a night split into segments begins (`segments::lease::holder`): the night
/// holds the lease, not one of its processes, and is said so in its own words here.
pub const SPLIT_NIGHT_HOLDER: &str = "split night ";

/// A name for this process's leases: host, process id and a random part, so two degrades never share one.
#[must_use]
pub fn holder_name() -> String {
    let host = std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_owned()).unwrap_or_default();
    format!("{}:{}:{:08x}", if host.is_empty() { "degrade" } else { &host }, std::process::id(), rand::random::<u32>())
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::store::DatabaseUrl;

    async fn store(dir: &tempfile::TempDir) -> Store {
        Store::connect(&DatabaseUrl::Sqlite(dir.path().join("leases.db"))).await.unwrap()
    }

    #[tokio::test]
    async fn a_renewal_that_lands_after_the_release_cannot_bring_the_lease_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir).await;
        let now = Utc::now();
        assert!(store.acquire_lease("nightly", "a:1:0", now, now + LEASE_FOR).await.unwrap());
        store.release_lease("nightly", "a:1:0").await.unwrap();
        // The order of the race that left leases behind: the release, then a renewal already under way.
        assert!(!store.renew_lease("nightly", "a:1:0", now, now + LEASE_FOR).await.unwrap());
        assert_eq!(store.lease("nightly").await.unwrap(), None);
        assert!(store.acquire_lease("nightly", "b:2:0", now, now + LEASE_FOR).await.unwrap(), "free at once");
        // Nor can a renewal take over another holder's lease, or revive an expired one of its own.
        assert!(!store.renew_lease("nightly", "a:1:0", now, now + LEASE_FOR).await.unwrap());
        let later = now + LEASE_FOR + chrono::Duration::seconds(1);
        assert!(!store.renew_lease("nightly", "b:2:0", later, later + LEASE_FOR).await.unwrap());
        store.close().await;
    }

    #[tokio::test]
    async fn a_claim_released_while_renewing_nonstop_leaves_no_lease() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir).await;
        let runs = RunsUnderWay::default();
        for round in 0..20 {
            let mut claim = Claim::take(&store, &runs, "nightly", "a:1:0").await.unwrap();
            // Renew as often as the runtime allows, so the release meets a renewal in every state: about to
            // start, inside its database call, or just done.
            if let Some(slow) = claim.renewal.take() {
                slow.abort();
            }
            let busy = tokio::spawn(renew(store.clone(), "nightly".into(), "a:1:0".into(), Duration::ZERO));
            claim.renewal = Some(busy);
            for _ in 0..round % 4 {
                tokio::task::yield_now().await;
            }
            claim.release().await;
            assert_eq!(store.lease("nightly").await.unwrap(), None, "round {round}");
        }
        store.close().await;
    }

    #[tokio::test]
    async fn a_refusal_names_the_holder_since_when_and_the_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir).await;
        let runs_there = RunsUnderWay::default();
        let _held = Claim::take(&store, &runs_there, "nightly", "build-box:4242:1a2b3c4d").await.unwrap();
        let Err(refusal) = Claim::take(&store, &RunsUnderWay::default(), "nightly", "ci:7:0").await else {
            panic!("a second degrade must be refused");
        };
        let message = refusal.to_string();
        assert!(message.starts_with("a run of `nightly` is already under way in another degrade"), "{message}");
        assert!(message.contains("held by pid 4242 on host build-box since 20"), "{message}");
        assert!(message.contains("its lease expires at 20") && message.contains(" (in 1"), "{message}");
        assert!(message.contains("If that process is gone, the next run after the expiry goes ahead"), "{message}");
        store.close().await;
    }
}
