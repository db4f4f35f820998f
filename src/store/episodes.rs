//! Alert episodes: a regression, a missing run or a failed run, from the night it opened until the night it resolved.
//! Alerts are sent per episode, not per run, so a team hears once when it starts and once when it ends;
//! the schema allows one unresolved episode per scenario and kind.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::outbox::{NewMessage, enqueue_on};
use super::retry::retry_busy;
use super::{Store, StoreError, from_millis, in_transaction, on_pool, to_millis};
use crate::model::RunId;
use crate::outside_text::storable;

/// An episode as stored.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Episode {
    pub id: i64,
    /// The scenario it belongs to.
    pub scenario: String,
    /// `regression`, `missing_run`, `run_failed` or `unjudged`.
    pub kind: String,
    /// `open`, `acknowledged` or `resolved`.
    pub state: String,
    pub opened_at: DateTime<Utc>,
    /// The run that opened it.
    pub opened_run_id: Option<i64>,
    /// What happened, in one line.
    pub summary: String,
    /// When someone acknowledged it, and why.
    pub acknowledged_at: Option<DateTime<Utc>>,
    /// The reason given on acknowledging.
    pub acknowledged_reason: Option<String>,
    /// When it resolved, and the run that resolved it.
    pub resolved_at: Option<DateTime<Utc>>,
    /// The run that passed again.
    pub resolved_run_id: Option<i64>,
}

#[derive(sqlx_macros::FromRow)]
struct EpisodeRow {
    id: i64,
    scenario: String,
    kind: String,
    state: String,
    opened_at: i64,
    opened_run_id: Option<i64>,
    summary: String,
    acknowledged_at: Option<i64>,
    acknowledged_reason: Option<String>,
    resolved_at: Option<i64>,
    resolved_run_id: Option<i64>,
}

impl From<EpisodeRow> for Episode {
    fn from(row: EpisodeRow) -> Self {
        let EpisodeRow {
            id,
            scenario,
            kind,
            state,
            opened_at,
            opened_run_id,
            summary,
            acknowledged_at,
            acknowledged_reason,
            resolved_at,
            resolved_run_id,
        } = row;
        Episode {
            id,
            scenario,
            kind,
            state,
            opened_at: from_millis(opened_at),
            opened_run_id,
            summary,
            acknowledged_at: acknowledged_at.map(from_millis),
            acknowledged_reason,
            resolved_at: resolved_at.map(from_millis),
            resolved_run_id,
        }
    }
}

/// What acknowledging an episode found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acknowledged {
    /// The episode was open and is now acknowledged.
    Done,
    /// It was acknowledged already (it stays open until it recovers); nothing changed.
    AlreadyAcknowledged,
    /// It is over: the scenario recovered; nothing changed.
    Resolved,
    /// No episode has this id.
    NotFound,
}

/// An episode to open.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone)]
pub struct NewEpisode {
    /// The scenario it belongs to.
    pub scenario: String,
    /// `regression`, `missing_run`, `run_failed` or `unjudged`.
    pub kind: String,
    /// The run that opened it (none for a missing run).
    pub run_id: Option<i64>,
    /// The last run that passed before it; the builds since are the suspects.
    pub last_good_run_id: Option<i64>,
    /// What happened, in one line.
    pub summary: String,
    pub at: DateTime<Utc>,
}

impl Store {
    /// Opens an episode unless one of its kind is unresolved for the scenario already, and in the same
    /// transaction enqueues the alert messages `messages` makes from the new episode's id. Returns that id, or
    /// `None` when an episode was open already (and nothing was enqueued): a team hears once per episode.
    pub async fn open_episode(
        &self,
        episode: &NewEpisode,
        messages: impl Fn(i64) -> Vec<NewMessage>,
    ) -> Result<Option<i64>, StoreError> {
        let scenario_id = self.ensure_scenario(&episode.scenario, episode.at).await?;
        let existing = "select id from episodes where scenario_id = $1 and kind = $2 and state <> 'resolved'";
        let insert = "insert into episodes (scenario_id, kind, state, opened_at, opened_run_id, last_good_run_id, \
                      summary) values ($1, $2, 'open', $3, $4, $5, $6) returning id";
        let messages = &messages;
        let opened = retry_busy(|| async move {
            Ok(in_transaction!(self, |tx| {
                let open: Option<i64> = sqlx::query_scalar(existing)
                    .bind(scenario_id)
                    .bind(storable(&episode.kind))
                    .fetch_optional(&mut *tx)
                    .await?;
                if open.is_some() {
                    None
                } else {
                    let id: i64 = sqlx::query_scalar(insert)
                        .bind(scenario_id)
                        .bind(storable(&episode.kind))
                        .bind(to_millis(episode.at))
                        .bind(episode.run_id)
                        .bind(episode.last_good_run_id)
                        .bind(storable(&episode.summary))
                        .fetch_one(&mut *tx)
                        .await?;
                    for message in messages(id) {
                        enqueue_on!(&mut *tx, &message);
                    }
                    Some(id)
                }
            }))
        })
        .await;
        match opened {
            // Another degrade instance opened the same episode a moment earlier (PostgreSQL reports the
            // one-open-episode index; SQLite's write lock never lets both get this far).
            Err(StoreError::Database(e))
                if e.as_database_error().is_some_and(sqlx::error::DatabaseError::is_unique_violation) =>
            {
                Ok(None)
            }
            other => other,
        }
    }

    /// Resolves the episode `id` by `run_id` and, in the same transaction, enqueues `messages`; `false` when
    /// it was resolved already (by another degrade instance, say), in which case nothing is enqueued.
    pub async fn resolve_episode(
        &self,
        id: i64,
        run_id: Option<i64>,
        at: DateTime<Utc>,
        messages: &[NewMessage],
    ) -> Result<bool, StoreError> {
        let update = "update episodes set state = 'resolved', resolved_at = $1, resolved_run_id = $2 \
                      where id = $3 and state <> 'resolved'";
        retry_busy(|| async move {
            Ok(in_transaction!(self, |tx| {
                let updated = sqlx::query(update)
                    .bind(to_millis(at))
                    .bind(run_id)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if updated == 1 {
                    for message in messages {
                        enqueue_on!(&mut *tx, message);
                    }
                }
                updated == 1
            }))
        })
        .await
    }

    /// The scenario's episodes that are not resolved yet.
    pub async fn unresolved_episodes(&self, scenario: &str) -> Result<Vec<Episode>, StoreError> {
        let query = "select e.id, s.name as scenario, e.kind, e.state, e.opened_at, e.opened_run_id, e.summary, \
                     e.acknowledged_at, e.acknowledged_reason, e.resolved_at, e.resolved_run_id \
                     from episodes e join scenarios s on s.id = e.scenario_id \
                     where s.name = $1 and e.state <> 'resolved' order by e.id";
        let rows: Vec<EpisodeRow> = on_pool!(self, |pool| sqlx::query_as(query).bind(scenario).fetch_all(pool).await?);
        Ok(rows.into_iter().map(Episode::from).collect())
    }

    /// Unresolved episodes first (newest first), then the `recent` most recently resolved ones.
    pub async fn episodes(&self, recent: u32) -> Result<Vec<Episode>, StoreError> {
        let query = "select e.id, s.name as scenario, e.kind, e.state, e.opened_at, e.opened_run_id, e.summary, \
                     e.acknowledged_at, e.acknowledged_reason, e.resolved_at, e.resolved_run_id \
                     from episodes e join scenarios s on s.id = e.scenario_id \
                     where e.state <> 'resolved' or e.id in (select id from episodes where state = 'resolved' \
                       order by resolved_at desc limit $1) \
                     order by case when e.state = 'resolved' then 1 else 0 end, e.opened_at desc, e.id desc";
        let rows: Vec<EpisodeRow> =
            on_pool!(self, |pool| sqlx::query_as(query).bind(i64::from(recent)).fetch_all(pool).await?);
        Ok(rows.into_iter().map(Episode::from).collect())
    }

    /// Marks an open episode acknowledged, with the reason a person gave.
    pub async fn acknowledge_episode(
        &self,
        id: i64,
        reason: &str,
        at: DateTime<Utc>,
    ) -> Result<Acknowledged, StoreError> {
        let update = "update episodes set state = 'acknowledged', acknowledged_at = $1, acknowledged_reason = $2 \
                      where id = $3 and state = 'open'";
        let updated = retry_busy(|| async move {
            Ok(on_pool!(self, |pool| sqlx::query(update)
                .bind(to_millis(at))
                .bind(storable(reason))
                .bind(id)
                .execute(pool)
                .await?
                .rows_affected()))
        })
        .await?;
        if updated == 1 {
            return Ok(Acknowledged::Done);
        }
        let state = "select state from episodes where id = $1";
        let state: Option<String> =
            on_pool!(self, |pool| sqlx::query_scalar(state).bind(id).fetch_optional(pool).await?);
        Ok(match state.as_deref() {
            None => Acknowledged::NotFound,
            Some("acknowledged") => Acknowledged::AlreadyAcknowledged,
            Some(_) => Acknowledged::Resolved,
        })
    }

    /// Enqueues `messages` for the unresolved episode `id` in one transaction; `false` when it is resolved (or
    /// gone), in which case nothing is enqueued. Messages whose key exists already are not enqueued twice.
    pub async fn tell_episode(&self, id: i64, messages: &[NewMessage]) -> Result<bool, StoreError> {
        let unresolved = "select id from episodes where id = $1 and state <> 'resolved'";
        retry_busy(|| async move {
            Ok(in_transaction!(self, |tx| {
                let open: Option<i64> = sqlx::query_scalar(unresolved).bind(id).fetch_optional(&mut *tx).await?;
                if open.is_some() {
                    for message in messages {
                        enqueue_on!(&mut *tx, message);
                    }
                }
                open.is_some()
            }))
        })
        .await
    }

    /// The runs of `scenario` from `from` up to (not including) `before` that regressed and were alerted
    /// (stamped once their night's alerts were stored), oldest first: the nights a regression episode opened by
    /// `from` has told the team about. A run judged only by a `check` was never alerted, nor a confirmed
    /// night's first run (its rerun was), nor a rerun that refuted it.
    pub async fn regressed_runs_between(
        &self,
        scenario: &str,
        from: RunId,
        before: RunId,
    ) -> Result<Vec<RunId>, StoreError> {
        let query = "select runs.id from runs join scenarios on scenarios.id = runs.scenario_id \
                     where scenarios.name = $1 and runs.id >= $2 and runs.id < $3 and runs.status = 'regressed' \
                     and runs.alerted_at is not null order by runs.id";
        Ok(on_pool!(self, |pool| sqlx::query_scalar(query)
            .bind(scenario)
            .bind(from)
            .bind(before)
            .fetch_all(pool)
            .await?))
    }
}
