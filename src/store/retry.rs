//! Retrying writes that SQLite reports as busy or locked.
//!
//! With WAL, `BEGIN IMMEDIATE` and a busy timeout, a writer waits its turn inside SQLite. A busy error can
//! still escape (a timeout under a long writer, a snapshot that went stale); the whole transaction then rolled
//! back, so running it again from the start is safe.

use std::future::Future;
use std::time::Duration;

use super::StoreError;

/// Attempts before a busy error is returned to the caller.
const ATTEMPTS: u32 = 5;
/// Wait after the first busy error; doubled after each further one.
const FIRST_BACKOFF: Duration = Duration::from_millis(50);

/// Runs `write` until it succeeds, fails with something other than busy, or [`ATTEMPTS`] are used up.
pub(super) async fn retry_busy<T, F, Fut>(mut write: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let mut backoff = FIRST_BACKOFF;
    for attempt in 1.. {
        match write().await {
            Err(StoreError::Database(e)) if attempt < ATTEMPTS && is_busy(&e) => {
                tracing::warn!(attempt, "database busy, retrying the transaction in {backoff:?}");
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
            outcome => return outcome,
        }
    }
    unreachable!("the loop returns on the last attempt")
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
}
