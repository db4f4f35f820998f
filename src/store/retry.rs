//! Retrying database work, decided on the typed [`StoreError`] wherever it is carried (a pipeline step's own
//! error type says which of its errors came from the store, see [`StoreCause`]):
//!
//! - [`Retry::Busy`]: a SQLite write reported busy or locked. With WAL, `BEGIN IMMEDIATE` and a busy timeout a
//!   writer waits its turn inside SQLite, but a busy error can still escape (a timeout under a long writer, a
//!   snapshot that went stale); the whole transaction then rolled back, so running it again is safe.
//! - [`Retry::Unreachable`]: the database could not be reached (a restart, a network blip, a pool timeout);
//!   a run's steps wait seconds for it, so a database restart at run time delays the night instead of losing it.
//!   A SQLite write still busy after [`Retry::Busy`]'s attempts (another process holding the file's write lock
//!   for long) is waited for the same way: each attempt rolled back whole, and the log says what it waits for.
//!
//! While a retry waits, [`waiting_for`] says so (what, why, since when), for `serve`'s `/healthz`: a process
//! that waits for a locked file or a restarting server is not a hung one, and an operator should read which.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::StoreError;

/// Which failures are tried again, and how patiently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// A transaction SQLite reported busy: 5 attempts, 50 ms after the first failure, doubling.
    Busy,
    /// A database that cannot be reached: 4 attempts, 2 + 4 + 8 s between them.
    Unreachable,
}

impl Retry {
    fn attempts(self) -> u32 {
        match self {
            Self::Busy => 5,
            Self::Unreachable => 4,
        }
    }

    fn first_wait(self) -> Duration {
        match self {
            Self::Busy => Duration::from_millis(50),
            Self::Unreachable => Duration::from_secs(2),
        }
    }

    fn applies_to(self, error: &StoreError) -> bool {
        match self {
            Self::Busy => matches!(error, StoreError::Database(e) if is_busy(e)),
            // A write SQLite still reports busy after its own retries (another process holding the file's
            // write lock for long) rolled back whole: the step is asked again too, and waits with it.
            Self::Unreachable => error.is_unreachable() || matches!(error, StoreError::Database(e) if is_busy(e)),
        }
    }
}

/// An error that may have come from the store: [`StoreError`] itself, or a step's error that wraps one.
pub trait StoreCause {
    /// The store's error inside, if this is one.
    fn store_error(&self) -> Option<&StoreError>;
}

impl StoreCause for StoreError {
    fn store_error(&self) -> Option<&StoreError> {
        Some(self)
    }
}

/// The retries of this process waiting now, by ticket: what each waits for, and since when.
static WAITING: Mutex<BTreeMap<u64, (String, Instant)>> = Mutex::new(BTreeMap::new());

/// What this process's database work is waiting for, if any retry is waiting now, the longest wait first (a
/// step's retry holds a write's own: `cannot store the results: the database is locked by another writer (for
/// 52 s); cannot write: the database is busy (another writer holds its lock) (for 2 s)`). For `/healthz`.
#[must_use]
pub fn waiting_for() -> Option<String> {
    let waiting = WAITING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut waits: Vec<&(String, Instant)> = waiting.values().collect();
    waits.sort_by_key(|(_, since)| *since);
    let said: Vec<String> =
        waits.iter().map(|(what, since)| format!("{what} (for {} s)", since.elapsed().as_secs())).collect();
    (!said.is_empty()).then(|| said.join("; "))
}

/// A retry's entry in [`WAITING`], removed when the retry ends however it ends.
struct Ticket(u64);

impl Ticket {
    fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// Says what the retry waits for now; the first time sets since when.
    fn waiting(&self, what: String) {
        let mut waiting = WAITING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let since = waiting.get(&self.0).map_or_else(Instant::now, |(_, since)| *since);
        waiting.insert(self.0, (what, since));
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        WAITING.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.0);
    }
}

/// Runs `call` until it succeeds, fails with an error `policy` does not retry, or its attempts are used up;
/// `what` names the work in the log ("store the results").
pub async fn retry<T, E, F, Fut>(policy: Retry, what: &str, mut call: F) -> Result<T, E>
where
    E: StoreCause + Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut wait = policy.first_wait();
    let ticket = Ticket::new();
    for attempt in 1.. {
        match call().await {
            Err(e) if attempt < policy.attempts() && e.store_error().is_some_and(|s| policy.applies_to(s)) => {
                let why = match policy {
                    Retry::Busy => "busy (another writer holds its lock)",
                    Retry::Unreachable if e.store_error().is_some_and(StoreError::is_unreachable) => "unreachable",
                    Retry::Unreachable => "locked by another writer",
                };
                ticket.waiting(format!("cannot {what}: the database is {why}"));
                match policy {
                    Retry::Busy => {
                        tracing::warn!(attempt, "cannot {what}: the database is {why}; retrying in {wait:?}");
                    }
                    Retry::Unreachable => {
                        tracing::warn!(attempt, error = %e, "cannot {what}: the database is {why}; retrying in {wait:?}");
                    }
                }
                tokio::time::sleep(wait).await;
                wait *= 2;
            }
            outcome => return outcome,
        }
    }
    unreachable!("the loop returns on the last attempt")
}

/// A write transaction, run again from the start while SQLite reports it busy.
pub(super) async fn retry_busy<T, F, Fut>(write: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    retry(Retry::Busy, "write", write).await
}

impl StoreError {
    /// Whether the database could not be reached, as opposed to a query it refused: trying again later may
    /// succeed.
    #[must_use]
    pub fn is_unreachable(&self) -> bool {
        let StoreError::Database(error) = self else { return false };
        match error {
            sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::Tls(_) | sqlx::Error::Protocol(_) => true,
            // SQLite cannot open its file (SQLITE_CANTOPEN, 14, in any extended form). PostgreSQL going away or
            // refusing connections for now: connection exceptions (08…), an administrator's or a crash's
            // shutdown (57P01-57P03), "not accepting connections" (55000) and "too many connections" (53300).
            sqlx::Error::Database(db) => {
                let code = db.code().unwrap_or_default();
                if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                    code.parse::<i64>().is_ok_and(|c| c & 0xff == 14)
                } else {
                    code.starts_with("08") || code.starts_with("57P") || code == "55000" || code == "53300"
                }
            }
            _ => false,
        }
    }
}

/// SQLite's `SQLITE_BUSY` (5) and `SQLITE_LOCKED` (6), including their extended codes. PostgreSQL errors are
/// never "busy": their SQLSTATE codes are not numbers of this kind.
fn is_busy(error: &sqlx::Error) -> bool {
    let Some(db) = error.as_database_error() else { return false };
    if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_none() {
        return false;
    }
    let code: Option<i64> = db.code().and_then(|c| c.parse().ok());
    matches!(code.map(|c| c & 0xff), Some(5 | 6))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test(start_paused = true)]
    async fn gives_up_on_other_errors_at_once() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = retry_busy(|| async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(StoreError::RunNotFound(7))
        })
        .await;
        assert!(matches!(result, Err(StoreError::RunNotFound(7))));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    /// A step's own error type, as the pipeline's are: some of its errors come from the store.
    #[derive(Debug)]
    enum StepError {
        Store(StoreError),
        Refused,
    }

    impl std::fmt::Display for StepError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{self:?}")
        }
    }

    impl StoreCause for StepError {
        fn store_error(&self) -> Option<&StoreError> {
            match self {
                Self::Store(e) => Some(e),
                Self::Refused => None,
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_unreachable_database_is_waited_for_through_a_steps_own_error() {
        let calls = AtomicU32::new(0);
        let started = tokio::time::Instant::now();
        let result = retry(Retry::Unreachable, "judge the run", || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0..=2 => Err(StepError::Store(StoreError::Database(sqlx::Error::PoolTimedOut))),
                _ => Ok("judged"),
            }
        })
        .await;
        assert_eq!(result.unwrap(), "judged");
        assert_eq!(started.elapsed(), Duration::from_secs(2 + 4 + 8));
        let gives_up: Result<(), _> =
            retry(Retry::Unreachable, "judge", || async { Err(StepError::Store(StoreError::RunNotFound(1))) }).await;
        assert!(matches!(gives_up, Err(StepError::Store(StoreError::RunNotFound(1)))));
        let refused: Result<(), _> = retry(Retry::Unreachable, "judge", || async { Err(StepError::Refused) }).await;
        assert!(matches!(refused, Err(StepError::Refused)));
    }

    #[tokio::test(start_paused = true)]
    async fn an_unreachable_database_is_given_up_after_four_attempts() {
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = retry(Retry::Unreachable, "store the results", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(StoreError::Database(sqlx::Error::PoolTimedOut))
        })
        .await;
        assert!(result.unwrap_err().is_unreachable());
        assert_eq!(calls.load(Ordering::SeqCst), 4);
    }

    /// What the unit tests' concurrent retries wait for now (`waiting_for` gives only the oldest).
    fn waiting_now() -> Vec<String> {
        WAITING.lock().unwrap().values().map(|(what, _)| what.clone()).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_retry_says_what_it_waits_for_until_it_ends() {
        let what = "store the telemetry of the waiting test";
        let said = Mutex::new(Vec::new());
        let result = retry(Retry::Unreachable, what, || async {
            said.lock().unwrap().push(waiting_now());
            match said.lock().unwrap().len() {
                1 => Err(StoreError::Database(sqlx::Error::PoolTimedOut)),
                _ => Ok(()),
            }
        })
        .await;
        result.unwrap();
        let said = said.into_inner().unwrap();
        let expected = format!("cannot {what}: the database is unreachable");
        assert!(!said[0].contains(&expected), "not waiting before the first failure: {said:?}");
        assert!(said[1].contains(&expected), "waiting after it: {said:?}");
        assert!(!waiting_now().contains(&expected), "no longer once it ended");
        assert!(waiting_for().is_none_or(|w| !w.contains(&expected)));
    }
}
