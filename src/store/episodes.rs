//! Alert episodes: a regression (or missing run) from the night it opened until the night it resolved.
//! Alerts are sent per episode, not per run, so a team hears once when it starts and once when it ends;
//! the schema allows one unresolved episode per scenario and kind.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::retry::retry_busy;
use super::{Store, StoreError, from_millis, on_pool, to_millis};

/// An episode as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Episode {
    /// Database id.
    pub id: i64,
    /// The scenario it belongs to.
    pub scenario: String,
    /// `regression`, `missing_run` or `run_failed`.
    pub kind: String,
    /// `open`, `acknowledged` or `resolved`.
    pub state: String,
    /// When it opened.
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

#[derive(sqlx::FromRow)]
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
    /// It was acknowledged or resolved already; nothing changed.
    NotOpen,
    /// No episode has this id.
    NotFound,
}

impl Store {
    /// Opens an episode of `kind` for `scenario`, unless one is unresolved already; returns its id.
    pub async fn open_episode(
        &self,
        scenario: &str,
        kind: &str,
        run_id: Option<i64>,
        summary: &str,
        at: DateTime<Utc>,
    ) -> Result<i64, StoreError> {
        let scenario_id = self.ensure_scenario(scenario, at).await?;
        let existing = "select id from episodes where scenario_id = $1 and kind = $2 and state <> 'resolved'";
        let insert = "insert into episodes (scenario_id, kind, state, opened_at, opened_run_id, summary) \
                      values ($1, $2, 'open', $3, $4, $5) returning id";
        retry_busy(|| async move {
            let open: Option<i64> = on_pool!(self, |pool| sqlx::query_scalar(existing)
                .bind(scenario_id)
                .bind(kind)
                .fetch_optional(pool)
                .await?);
            if let Some(id) = open {
                return Ok(id);
            }
            Ok(on_pool!(self, |pool| sqlx::query_scalar(insert)
                .bind(scenario_id)
                .bind(kind)
                .bind(to_millis(at))
                .bind(run_id)
                .bind(summary)
                .fetch_one(pool)
                .await?))
        })
        .await
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
                .bind(reason)
                .bind(id)
                .execute(pool)
                .await?
                .rows_affected()))
        })
        .await?;
        if updated == 1 {
            return Ok(Acknowledged::Done);
        }
        let exists = "select count(*) from episodes where id = $1";
        let count: i64 = on_pool!(self, |pool| sqlx::query_scalar(exists).bind(id).fetch_one(pool).await?);
        Ok(if count == 0 { Acknowledged::NotFound } else { Acknowledged::NotOpen })
    }
}
