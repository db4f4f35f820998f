//! Claiming a scenario before running it, so it never runs twice at once: first in this process (a set of
//! scenarios under way, no database round trip), then across every degrade sharing the database (a lease
//! row, renewed while the run goes on and released at its end; see `store::leases`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::Utc;

use crate::store::{Store, StoreError};

/// How long a lease lasts without renewal: a crashed holder blocks its scenario this long at most.
const LEASE_FOR: Duration = Duration::from_mins(2);
/// How often a holder renews its leases: well inside [`LEASE_FOR`], so one slow database call loses nothing.
const RENEW_EVERY: Duration = Duration::from_secs(30);

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
    #[error("a run of `{0}` is already under way in another degrade sharing this database")]
    RunningElsewhere(String),
    /// degrade is shutting down and starts no more runs.
    #[error("degrade is shutting down; it starts no new run of `{0}`")]
    ShuttingDown(String),
    /// The database could not be asked.
    #[error("cannot take the lease on `{0}`: {1}")]
    Database(String, StoreError),
}

/// The right to run one scenario, held until dropped.
pub struct Claim {
    _under_way: UnderWay,
    renewal: tokio::task::JoinHandle<()>,
    release: Option<(Store, String, String)>,
}

impl Claim {
    /// Claims `scenario` for `holder` (this process's lease name).
    pub async fn take(store: &Store, runs: &RunsUnderWay, scenario: &str, holder: &str) -> Result<Self, ClaimError> {
        let under_way = runs.start(scenario).ok_or_else(|| ClaimError::RunningHere(scenario.to_owned()))?;
        let now = Utc::now();
        let taken = store
            .acquire_lease(scenario, holder, now, now + LEASE_FOR)
            .await
            .map_err(|e| ClaimError::Database(scenario.to_owned(), e))?;
        if !taken {
            return Err(ClaimError::RunningElsewhere(scenario.to_owned()));
        }
        let (store, scenario, holder) = (store.clone(), scenario.to_owned(), holder.to_owned());
        let renewal = tokio::spawn(renew(store.clone(), scenario.clone(), holder.clone()));
        Ok(Self { _under_way: under_way, renewal, release: Some((store, scenario, holder)) })
    }

    /// Gives the lease back now (dropping the claim does it in the background).
    pub async fn release(mut self) {
        self.renewal.abort();
        if let Some((store, scenario, holder)) = self.release.take()
            && let Err(e) = store.release_lease(&scenario, &holder).await
        {
            tracing::warn!(scenario, error = %e, "cannot release the lease; it expires by itself");
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.renewal.abort();
        if let Some((store, scenario, holder)) = self.release.take() {
            tokio::spawn(async move {
                let _ = store.release_lease(&scenario, &holder).await;
            });
        }
    }
}

async fn renew(store: Store, scenario: String, holder: String) {
    loop {
        tokio::time::sleep(RENEW_EVERY).await;
        let now = Utc::now();
        match store.acquire_lease(&scenario, &holder, now, now + LEASE_FOR).await {
            Ok(true) => {}
            Ok(false) => tracing::error!(scenario, "the lease was taken over by another degrade while running"),
            Err(e) => tracing::warn!(scenario, error = %e, "cannot renew the lease; retrying"),
        }
    }
}

/// A name for this process's leases: host, process id and a random part, so two degrades never share one.
#[must_use]
pub fn holder_name() -> String {
    let host = std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_owned()).unwrap_or_default();
    format!("{}:{}:{:08x}", if host.is_empty() { "degrade" } else { &host }, std::process::id(), rand::random::<u32>())
}
