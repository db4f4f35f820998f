//! A split night holds its scenario's lease, as every other run does (`pipeline::claim`), so that it and another
//! run of its scenario never overlap: each would measure the other's load as its own, and both would be stored
//! valid. A trial ran `degrade run` in the middle of a split night, and two split nights under two keys at
//! once: every one of those nights finished, judged as measured.
//!
//! Its segments are separate processes on separate machines, so the lease is the night's, not one process's:
//! held under the night's name ([`holder`]), taken by the segment that prepares the build before it deploys
//! anything, kept renewed by every segment from its registration to the end of its load (any of them may be
//! the last alive), and given back by the segment that turns the night invalid, or that merges it when the
//! night is only measured (`degrade run`); a night to be judged (`check --run-now`) keeps it until it is
//! judged, or until its confirmation rerun, under the same holder, has decided it. A night whose segments all
//! died lets it run out, as a crashed single run does.

use chrono::Utc;
use tokio::task::JoinHandle;

use crate::pipeline::claim::{HeldBy, LEASE_FOR, RENEW_EVERY, SPLIT_NIGHT_HOLDER};
use crate::store::Store;

/// The lease holder's name for the night `key`. A confirmation rerun (`KEY:confirm`) holds it under the same
/// name as the night it reruns, which keeps it until the rerun has decided: the rerun is never refused by its
/// own night, and no other run slips in between the two.
#[must_use]
pub fn holder(key: &str) -> String {
    format!("{SPLIT_NIGHT_HOLDER}{}", key.strip_suffix(":confirm").unwrap_or(key))
}

/// Takes the lease on `scenario` for the night `key`; `Err` says who holds it instead, in words.
pub(super) async fn take(store: &Store, scenario: &str, key: &str) -> anyhow::Result<Result<(), String>> {
    let now = Utc::now();
    if store.acquire_lease(scenario, &holder(key), now, now + LEASE_FOR).await? {
        return Ok(Ok(()));
    }
    let held_by = match store.lease(scenario).await?.filter(|l| l.expires_at > now) {
        Some(lease) => HeldBy::new(Some(lease), now).to_string(),
        // Its key names this night now, whatever happens to it: another night needs a key of its own.
        None => "it ended a moment ago; start the night again under a new run key".to_owned(),
    };
    Ok(Err(format!(
        "{REFUSED} `{scenario}` was already under way when the night was to start ({held_by}): two runs at once \
         would each measure the other's load"
    )))
}

/// How the reason of a night refused for its scenario's lease begins: every segment reads it from the night's
/// registry (the preparing segment wrote it there), and ends as a single run refused the same way does.
const REFUSED: &str = "a run of";

/// Whether a night's invalid reason is the refusal written by [`take`]: the night never started, because its
/// scenario was running, which is no invalid measurement but a night that could not be done (exit 2).
#[must_use]
pub fn refused(reason: &str) -> bool {
    reason.starts_with(REFUSED) && reason.contains("was already under way when the night was to start")
}

/// Renews the night's lease every [`RENEW_EVERY`] while the handle lives (aborted when dropped). A renewal only
/// extends a current lease of the night's: before the preparing segment took it, and after it was given back,
/// it does nothing, which is why a renewal that extends nothing is not an error here (`claim`'s is).
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
pub async fn release(store: &Store, scenario: &str, key: &str) {
    if let Err(e) = store.release_lease(scenario, &holder(key)).await {
        tracing::warn!(scenario, error = %e, "cannot release the split night's lease; it expires by itself");
    }
}
