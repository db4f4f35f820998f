//! A split night holds its scenario's lease, as every other run does (`pipeline::claim`), so that it and another
//! run of its scenario never overlap: each would measure the other's load as its own, and both would be stored
//! valid. A trial ran `degrade run` in the middle of a split night, and two split nights under two keys at
//! once: every one of those nights finished, judged as measured.
//!
//! Its segments are separate processes on separate machines, so the lease is the night's, not one process's:
//! held under the night's name ([`holder`]), taken by the segment that prepares the build before it deploys
//! anything, kept renewed by every segment from its registration to the end of its load (any of them may be
//! the last alive), and given back by the segment that merges the night or turns it invalid. A night whose
//! segments all died lets it run out, as a crashed single run does.

use chrono::Utc;
use tokio::task::JoinHandle;

use crate::pipeline::claim::{HeldBy, LEASE_FOR, RENEW_EVERY};
use crate::store::Store;

/// The lease holder's name for the night `key`. A confirmation rerun (`KEY:confirm`) holds it under the same
/// name as the night it reruns: it starts once that night is judged, and must not be refused by its own night.
#[must_use]
pub fn holder(key: &str) -> String {
    format!("split night {}", key.strip_suffix(":confirm").unwrap_or(key))
}

/// Takes the lease on `scenario` for the night `key`; `Err` says who holds it instead, in words.
pub(super) async fn take(store: &Store, scenario: &str, key: &str) -> anyhow::Result<Result<(), String>> {
    let now = Utc::now();
    if store.acquire_lease(scenario, &holder(key), now, now + LEASE_FOR).await? {
        return Ok(Ok(()));
    }
    let lease = store.lease(scenario).await?.filter(|l| l.expires_at > now);
    Ok(Err(format!(
        "a run of `{scenario}` was already under way when the night was to start ({}): two runs at once would each \
         measure the other's load",
        HeldBy::new(lease, now)
    )))
}

/// Renews the night's lease every [`RENEW_EVERY`] while the handle lives (aborted when dropped). A renewal only
/// extends a current lease of the night's: before the preparing segment took it, and after it was given back,
/// it does nothing.
pub(super) struct Renewal(JoinHandle<()>);

impl Renewal {
    pub(super) fn start(store: Store, scenario: String, key: &str) -> Self {
        let holder = holder(key);
        Self(tokio::spawn(async move {
            loop {
                tokio::time::sleep(RENEW_EVERY).await;
                let now = Utc::now();
                if let Err(e) = store.renew_lease(&scenario, &holder, now, now + LEASE_FOR).await {
                    tracing::warn!(scenario, error = %e, "cannot renew the split night's lease; retrying");
                }
            }
        }))
    }
}

impl Drop for Renewal {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Gives the night's lease back (when it still holds it); a failure leaves it to run out by itself.
pub(super) async fn release(store: &Store, scenario: &str, key: &str) {
    if let Err(e) = store.release_lease(scenario, &holder(key)).await {
        tracing::warn!(scenario, error = %e, "cannot release the split night's lease; it expires by itself");
    }
}
