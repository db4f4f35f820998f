//! The courier: posts outbox messages to their webhooks, retrying with exponential backoff, and records
//! every attempt, so the alerts page shows what was sent, what is pending and why.
//!
//! A receiver that is down gets the message when it is back (retries continue for a day, at most five minutes
//! apart); a restart of degrade loses nothing, because the outbox is in the database. A message is claimed before
//! each attempt, so two couriers on one database never post it both. The webhook URL is a secret: it is read from
//! the environment when the config loads, held as a `Secret`, and never logged or stored (see [`super::webhook`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::webhook::{PostError, Webhooks};
use crate::clock::Clock;
use crate::config::{Config, NotifyKind};
use crate::store::fault::{self, Step};
use crate::store::{Claim, OutboxMessage, Retry, Store, StoreError, retry};

/// Wait before the first retry; it doubles with each failure.
const FIRST_RETRY: Duration = Duration::from_secs(2);
/// Longest wait between retries: a receiver back after an outage gets its messages within this.
const LONGEST_RETRY: Duration = Duration::from_mins(5);
/// A message still undelivered this long after it was written is given up: news that old misleads.
const GIVE_UP_AFTER: chrono::TimeDelta = chrono::TimeDelta::hours(24);
/// How long a claimed message is left to its courier before another may try it (longer than a request).
const CLAIM_FOR: chrono::TimeDelta = chrono::TimeDelta::seconds(60);
/// How often the outbox is looked at.
const POLL_EVERY: Duration = Duration::from_secs(1);
/// Messages handled per look.
const BATCH: u32 = 50;

/// Delivers outbox messages.
#[derive(Clone)]
pub struct Courier {
    store: Store,
    config: Arc<Config>,
    webhooks: Webhooks,
    clock: Clock,
}

impl Courier {
    /// A courier for the notifiers in `config`.
    pub fn new(store: Store, config: Arc<Config>) -> anyhow::Result<Self> {
        Ok(Self { store, config, webhooks: Webhooks::new()?, clock: Clock::system() })
    }

    /// The same courier deciding what is due, and stamping attempts, by `clock`.
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Delivers every message that is due; returns how many got through.
    pub async fn deliver_due(&self) -> Result<usize, StoreError> {
        let mut delivered = 0;
        for message in self.store.due_messages(self.clock.now(), BATCH).await? {
            // Claimed from the moment of the attempt: a batch behind slow receivers takes minutes. A claim whose
            // answer was lost is asked again and found to be this courier's (the same claim's token): left alone,
            // the message would wait for its claim to run out, and `check --run-now` would deliver it a night late.
            let ours = Claim::until(self.clock.now() + CLAIM_FOR);
            let claim = || async {
                fault::before(Step::MessageClaimed);
                let claimed = self.store.claim_message(&message, ours).await?;
                fault::after(Step::MessageClaimed)?;
                Ok::<_, StoreError>(claimed)
            };
            let claimed = retry(Retry::Unreachable, "claim the alert", claim).await?;
            if claimed && self.deliver(&message).await? {
                delivered += 1;
            }
        }
        Ok(delivered)
    }

    /// One attempt at a claimed message, recorded; `true` when it got through.
    async fn deliver(&self, message: &OutboxMessage) -> Result<bool, StoreError> {
        let notifier = self.config.notifiers.iter().find(|n| n.name == message.notifier);
        let outcome = match notifier {
            None => Err(PostError {
                message: format!("no [[notify]] is named `{}` any more", message.notifier),
                permanent: true,
            }),
            Some(n) => match &n.url {
                None => Err(PostError {
                    message: format!("the environment variable {} with the webhook URL is not set", n.url_env),
                    permanent: false,
                }),
                Some(url) => {
                    // A JSON receiver drops the duplicate by its key; a Slack channel would show it twice unmarked.
                    let payload = if message.may_have_arrived() && n.kind == NotifyKind::Slack {
                        std::borrow::Cow::Owned(super::slack::said_again(&message.payload))
                    } else {
                        std::borrow::Cow::Borrowed(message.payload.as_str())
                    };
                    fault::before(Step::MessagePosted);
                    let posted = self.webhooks.post(url, &message.idempotency_key, &payload).await;
                    // Killed here, the message was posted and is not marked: it is posted again, a duplicate
                    // the idempotency key lets a receiver drop.
                    fault::reached(Step::MessagePosted.after());
                    posted
                }
            },
        };
        let now = self.clock.now();
        let (id, notifier, event) = (message.id, &message.notifier, &message.event);
        match outcome {
            Ok(()) => {
                tracing::info!(id, notifier, event, "alert delivered");
                self.record(id, now, Ok(())).await?;
                Ok(true)
            }
            Err(PostError { message: error, permanent }) => {
                let expired = now - message.created() >= GIVE_UP_AFTER;
                let retry_at = (!permanent && !expired).then(|| now + retry_delay(message.attempts + 1));
                if let Some(at) = retry_at {
                    tracing::warn!(id, notifier, event, error, retry_at = %at, "alert not delivered");
                } else {
                    tracing::error!(id, notifier, event, error, "alert not delivered; giving up");
                }
                self.record(id, now, Err((&error, retry_at))).await?;
                Ok(false)
            }
        }
    }

    /// Records an attempt, asking again while the database is unreachable: a delivery left unmarked would be
    /// posted again once its claim ran out, a duplicate at the receiver (recording twice only counts an attempt
    /// more).
    async fn record(
        &self,
        id: i64,
        now: chrono::DateTime<chrono::Utc>,
        outcome: Result<(), (&str, Option<chrono::DateTime<chrono::Utc>>)>,
    ) -> Result<(), StoreError> {
        let record = || async {
            fault::before(Step::MessageMarkedSent);
            self.store.record_attempt(id, now, outcome).await?;
            fault::after(Step::MessageMarkedSent)
        };
        retry(Retry::Unreachable, "record the delivery", record).await
    }

    /// Delivers due messages until `stop` becomes true. Stopping does not wait for slow receivers: a post cut
    /// short stays claimed for a minute and is then retried (with the same idempotency key).
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        while !*stop.borrow() {
            tokio::select! {
                outcome = self.deliver_due() => {
                    if let Err(e) = outcome {
                        tracing::error!(error = %e, "cannot read the alert outbox; trying again shortly");
                    }
                }
                _ = stop.changed() => return,
            }
            tokio::select! {
                () = tokio::time::sleep(POLL_EVERY) => {}
                _ = stop.changed() => {}
            }
        }
    }
}

/// The wait after the `failures`-th failed attempt: 2 s, 4 s, 8 s, … at most five minutes.
fn retry_delay(failures: i64) -> chrono::TimeDelta {
    let doublings = u32::try_from(failures.saturating_sub(1)).unwrap_or(u32::MAX).min(16);
    let delay = FIRST_RETRY.saturating_mul(1 << doublings).min(LONGEST_RETRY);
    chrono::TimeDelta::from_std(delay).unwrap_or(GIVE_UP_AFTER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_exponentially_up_to_five_minutes() {
        let waits: Vec<i64> = (1..=10).map(|n| retry_delay(n).num_seconds()).collect();
        assert_eq!(waits, [2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(retry_delay(1_000).num_seconds(), 300);
    }
}
