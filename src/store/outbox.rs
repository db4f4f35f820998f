//! The notification outbox: alert messages written in the same breath as the episode change that caused
//! them, then delivered by a courier with retries. Rows stay after delivery as the log of what was sent.
//!
//! Delivery is claimed before it is attempted (a compare-and-set on `next_attempt_at`), so two `degrade
//! serve` instances on one database never post the same message at the same time; the idempotency key lets
//! a receiver drop the one duplicate a crash between "posted" and "marked delivered" could cause.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::retry::retry_busy;
use super::{Store, StoreError, from_millis, on_pool, to_millis};

impl OutboxMessage {
    /// Whether an earlier attempt was claimed but never recorded: degrade stopped while posting it, so the
    /// receiver may have it already, and this attempt is a re-send.
    #[must_use]
    pub fn may_have_arrived(&self) -> bool {
        self.claims > self.attempts
    }
}

/// One courier's claim on a message for one delivery attempt: until when it holds, and a token drawn at
/// random, by which a claim asked again is told from another courier's made in the same millisecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// When the claim runs out and another courier may attempt the message.
    pub until: DateTime<Utc>,
    token: i64,
}

impl Claim {
    /// A new claim, with a token of its own, holding until `until`.
    #[must_use]
    pub fn until(until: DateTime<Utc>) -> Self {
        Self { until, token: rand::random() }
    }
}

/// A message to enqueue.
#[derive(Debug, Clone)]
pub struct NewMessage {
    /// The episode it is about; `None` for test messages.
    pub episode_id: Option<i64>,
    /// The `[[notify]]` name it goes to.
    pub notifier: String,
    /// `regression`, `regression_widened`, `recovery`, `missing_run`, `run_failed`, `unjudged`, one of the last
    /// three's `…_resolved`, or `test`.
    pub event: String,
    /// The JSON body to post.
    pub payload: String,
    /// Unique per message; enqueuing the same key twice stores it once.
    pub idempotency_key: String,
    /// When it was written; the first attempt is due then.
    pub created_at: DateTime<Utc>,
}

/// A message as stored.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq, Serialize, sqlx_macros::FromRow)]
pub struct OutboxMessage {
    pub id: i64,
    /// The episode it is about.
    pub episode_id: Option<i64>,
    /// The `[[notify]]` name it goes to.
    pub notifier: String,
    pub event: String,
    /// The JSON body.
    #[serde(skip)]
    pub payload: String,
    /// Sent as the `Idempotency-Key` header.
    pub idempotency_key: String,
    /// Milliseconds since the epoch when it was written.
    pub created_at: i64,
    /// Delivery attempts so far, whose outcome was recorded.
    pub attempts: i64,
    /// Claims for an attempt so far: more than `attempts` when an attempt was cut short (degrade killed while
    /// it posted), so the message may have arrived already.
    pub claims: i64,
    /// When the next attempt is due (milliseconds since the epoch).
    pub next_attempt_at: i64,
    /// When it was delivered.
    pub delivered_at: Option<i64>,
    /// When delivery stopped for good.
    pub gave_up_at: Option<i64>,
    /// What went wrong on the last failed attempt.
    pub last_error: Option<String>,
}

impl OutboxMessage {
    /// When the message was written.
    #[must_use]
    pub fn created(&self) -> DateTime<Utc> {
        from_millis(self.created_at)
    }

    /// `delivered`, `gave up` or `pending`.
    #[must_use]
    pub fn state(&self) -> &'static str {
        match (self.delivered_at, self.gave_up_at) {
            (Some(_), _) => "delivered",
            (None, Some(_)) => "gave up",
            (None, None) => "pending",
        }
    }
}

/// The insert behind [`Store::enqueue_message`]; also run inside the transactions that open and resolve
/// episodes, so an episode change and its alerts are stored together or not at all.
pub(super) const INSERT: &str = "insert into outbox (episode_id, notifier, event, payload, idempotency_key, created_at, \
                      next_attempt_at) values ($1, $2, $3, $4, $5, $6, $6) on conflict (idempotency_key) do nothing";

/// Runs [`INSERT`] for `$message` on `$executor` (a pool or a transaction of either backend); evaluates to
/// the number of rows inserted.
macro_rules! enqueue_on {
    ($executor:expr, $message:expr) => {{
        let message: &$crate::store::NewMessage = $message;
        sqlx::query($crate::store::outbox::INSERT)
            .bind(message.episode_id)
            .bind($crate::outside_text::storable(&message.notifier))
            .bind($crate::outside_text::storable(&message.event))
            .bind($crate::outside_text::storable(&message.payload))
            .bind($crate::outside_text::storable(&message.idempotency_key))
            .bind($crate::store::to_millis(message.created_at))
            .execute($executor)
            .await?
            .rows_affected()
    }};
}
pub(super) use enqueue_on;

/// `select` of every column [`OutboxMessage`] reads, for `concat!` into each query.
macro_rules! select_messages {
    () => {
        "select id, episode_id, notifier, event, payload, idempotency_key, created_at, attempts, claims, \
         next_attempt_at, delivered_at, gave_up_at, last_error from outbox "
    };
}

impl Store {
    /// Enqueues `message`; `false` when a message with its idempotency key exists already.
    pub async fn enqueue_message(&self, message: &NewMessage) -> Result<bool, StoreError> {
        let inserted = retry_busy(|| async move { Ok(on_pool!(self, |pool| enqueue_on!(pool, message))) }).await?;
        Ok(inserted == 1)
    }

    /// Undelivered messages whose next attempt is due at `now`, oldest first.
    pub async fn due_messages(&self, now: DateTime<Utc>, limit: u32) -> Result<Vec<OutboxMessage>, StoreError> {
        let query = concat!(
            select_messages!(),
            "where delivered_at is null and gave_up_at is null and next_attempt_at <= $1 order by id limit $2"
        );
        Ok(on_pool!(self, |pool| sqlx::query_as(query)
            .bind(to_millis(now))
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?))
    }

    /// Claims `message` for one delivery attempt by moving its next attempt to `claim.until`; `false` when
    /// another courier claimed it (or it was delivered) since it was read. Safe to ask again with the same
    /// `claim` after an error: a claim that was written but whose acknowledgement was lost is found as this
    /// one's by its token and returned `true`, so the courier delivers now instead of leaving the message
    /// claimed by nobody until the claim runs out (a night's alert a day late under `check` alone).
    pub async fn claim_message(&self, message: &OutboxMessage, claim: Claim) -> Result<bool, StoreError> {
        let update = "update outbox set next_attempt_at = $1, claims = claims + 1, claim_token = $2 where id = $3 \
                      and next_attempt_at = $4 and delivered_at is null and gave_up_at is null";
        let ours = "select count(*) from outbox where id = $1 and claim_token = $2 and next_attempt_at = $3 \
                    and delivered_at is null and gave_up_at is null";
        let until = to_millis(claim.until);
        let claimed = retry_busy(|| async move {
            Ok(on_pool!(self, |pool| sqlx::query(update)
                .bind(until)
                .bind(claim.token)
                .bind(message.id)
                .bind(message.next_attempt_at)
                .execute(pool)
                .await?
                .rows_affected()))
        })
        .await?;
        if claimed == 1 {
            return Ok(true);
        }
        let already: i64 = on_pool!(self, |pool| sqlx::query_scalar(ours)
            .bind(message.id)
            .bind(claim.token)
            .bind(until)
            .fetch_one(pool)
            .await?);
        Ok(already == 1)
    }

    /// Records an attempt: delivered at `delivered`, or failed with `error` and retried at `retry_at` (or given up
    /// for good when that is `None`).
    pub async fn record_attempt(
        &self,
        id: i64,
        now: DateTime<Utc>,
        outcome: Result<(), (&str, Option<DateTime<Utc>>)>,
    ) -> Result<(), StoreError> {
        let (delivered, error, next, gave_up) = match outcome {
            Ok(()) => (Some(to_millis(now)), None, to_millis(now), None),
            Err((error, Some(retry_at))) => (None, Some(error), to_millis(retry_at), None),
            Err((error, None)) => (None, Some(error), to_millis(now), Some(to_millis(now))),
        };
        let update = "update outbox set attempts = attempts + 1, delivered_at = $1, last_error = coalesce($2, last_error), \
                      next_attempt_at = $3, gave_up_at = $4 where id = $5";
        retry_busy(|| async move {
            on_pool!(self, |pool| sqlx::query(update)
                .bind(delivered)
                .bind(error.map(crate::outside_text::storable))
                .bind(next)
                .bind(gave_up)
                .bind(id)
                .execute(pool)
                .await?
                .rows_affected());
            Ok(())
        })
        .await
    }

    /// The `limit` most recent messages, newest first: the sent log the alerts page shows.
    pub async fn recent_messages(&self, limit: u32) -> Result<Vec<OutboxMessage>, StoreError> {
        let query = concat!(select_messages!(), "order by id desc limit $1");
        Ok(on_pool!(self, |pool| sqlx::query_as(query).bind(i64::from(limit)).fetch_all(pool).await?))
    }
}
