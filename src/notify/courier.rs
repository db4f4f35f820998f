//! The courier: posts outbox messages to their webhooks, retrying with exponential backoff, and records
//! every attempt, so the alerts page shows what was sent, what is pending and why.
//!
//! A receiver that is down gets the message when it is back (retries continue for a day, at most five
//! minutes apart); a restart of degrade loses nothing, because the outbox is in the database. A message is
//! claimed before each attempt, so two couriers on one database never post it both. The webhook URL is a
//! secret: it is read from the environment at delivery time and never logged or stored.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::watch;

use crate::config::Config;
use crate::engine::client::{chain, tls_config};
use crate::secret::Secret;
use crate::store::{OutboxMessage, Store, StoreError};

/// How long one webhook request may take: a hanging receiver is retried like one that answered 500.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
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

/// Why a post did not get through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostError {
    /// What happened, without the URL.
    pub message: String,
    /// Retrying cannot help: the receiver rejected the message itself (4xx other than 408 and 429).
    pub permanent: bool,
}

/// Delivers outbox messages.
#[derive(Clone)]
pub struct Courier {
    store: Store,
    config: Arc<Config>,
    client: reqwest::Client,
}

impl Courier {
    /// A courier for the notifiers in `config`.
    pub fn new(store: Store, config: Arc<Config>) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls_config())
            .timeout(REQUEST_TIMEOUT)
            // A webhook that redirects is misconfigured, and following it could carry the message elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("degrade/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { store, config, client })
    }

    /// Posts `payload` to `url` with the idempotency key.
    pub async fn post(&self, url: &Secret, key: &str, payload: &str) -> Result<(), PostError> {
        let response = self
            .client
            .post(url.expose())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("Idempotency-Key", key)
            .body(payload.to_owned())
            .send()
            .await
            .map_err(|e| PostError { message: describe(e), permanent: false })?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let body: String = response.text().await.unwrap_or_default().chars().take(200).collect();
        let body = without_url(&body, url.expose());
        let permanent = status.is_client_error()
            && status != reqwest::StatusCode::REQUEST_TIMEOUT
            && status != reqwest::StatusCode::TOO_MANY_REQUESTS;
        Err(PostError { message: format!("the receiver answered {status}: {}", body.trim()), permanent })
    }

    /// Delivers every message that is due; returns how many got through.
    pub async fn deliver_due(&self) -> Result<usize, StoreError> {
        let mut delivered = 0;
        for message in self.store.due_messages(Utc::now(), BATCH).await? {
            // Claimed from the moment of the attempt: a batch behind slow receivers takes minutes.
            let claimed = self.store.claim_message(&message, Utc::now() + CLAIM_FOR).await?;
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
                Some(url) => self.post(url, &message.idempotency_key, &message.payload).await,
            },
        };
        let now = Utc::now();
        let (id, notifier, event) = (message.id, &message.notifier, &message.event);
        match outcome {
            Ok(()) => {
                tracing::info!(id, notifier, event, "alert delivered");
                self.store.record_attempt(id, now, Ok(())).await?;
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
                self.store.record_attempt(id, now, Err((&error, retry_at))).await?;
                Ok(false)
            }
        }
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

/// `text` (a receiver's answer, which may quote the request path) with every part of `url` that could be the
/// secret hidden: the URL itself, its path, and each long path segment (webhook tokens live there).
fn without_url(text: &str, url: &str) -> String {
    let mut out = text.replace(url, "[webhook URL]");
    if let Ok(parsed) = reqwest::Url::parse(url) {
        if parsed.path().len() > 1 {
            out = out.replace(parsed.path(), "/[webhook path]");
        }
        for segment in parsed.path_segments().into_iter().flatten().filter(|s| s.len() >= 8) {
            out = out.replace(segment, "***");
        }
        if let Some(query) = parsed.query().filter(|q| !q.is_empty()) {
            out = out.replace(query, "***");
        }
    }
    out
}

/// What went wrong, with the cause chain but never the URL (reqwest puts it in its message).
fn describe(error: reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        format!("no answer within {} s", REQUEST_TIMEOUT.as_secs())
    } else if error.is_connect() {
        "cannot connect".to_owned()
    } else {
        "the request failed".to_owned()
    };
    format!("{kind}: {}", chain(&error.without_url()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receiver_answers_never_quote_the_webhook_url() {
        let url = "https://hooks.example.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX";
        let answer = "<pre>Cannot POST /services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX</pre> (https://hooks.example.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX)";
        let shown = without_url(answer, url);
        assert!(!shown.contains("XXXXXXXX"), "{shown}");
        assert_eq!(shown, "<pre>Cannot POST /[webhook path]</pre> ([webhook URL])");
        assert_eq!(without_url("invalid_token", url), "invalid_token");
    }

    #[test]
    fn retries_back_off_exponentially_up_to_five_minutes() {
        let waits: Vec<i64> = (1..=10).map(|n| retry_delay(n).num_seconds()).collect();
        assert_eq!(waits, [2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(retry_delay(1_000).num_seconds(), 300);
    }
}
