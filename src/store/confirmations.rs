//! Confirmation reruns: which run a rerun was asked to confirm, and the status the pair ends with. A run judged
//! regressed is `confirming` while the same build is run again at once; the night is regressed only when the
//! rerun reproduces it, else the first run is `unconfirmed` (shown, never alerted, never a baseline) and the
//! rerun is the night. A pair a stopped degrade left undecided is found again here ([`LeftBehind`]).

use chrono::{DateTime, Utc};

use super::retry::retry_busy;
use super::{Store, StoreError, in_transaction, on_pool, to_millis};
use crate::model::{RunId, RunStatus};

/// Where to look for what a stopped degrade left undecided.
#[derive(Debug, Clone, Copy)]
pub enum LeftBehind<'a> {
    /// Every scenario whose lease has run out at this time (by the system's clock): `serve`'s watch.
    Unleased(DateTime<Utc>),
    /// The scenario the caller holds the claim on, so no run of it can be under way elsewhere.
    Claimed(&'a str),
}

impl Store {
    /// Moves a run judged regressed to `confirming`, while its rerun measures.
    pub async fn begin_confirmation(&self, first: RunId) -> Result<(), StoreError> {
        let update = "update runs set status = 'confirming' where id = $1 and status = 'regressed'";
        retry_busy(|| async move {
            on_pool!(self, |pool| sqlx::query(update).bind(first).execute(pool).await?.rows_affected());
            Ok(())
        })
        .await
    }

    /// Ends `first`'s confirmation in one transaction: `first` takes `first_status`, and the rerun its status
    /// when one is given. Returns false, changing nothing, when `first` is no longer `confirming` (another
    /// degrade settled it first).
    pub async fn end_confirmation(
        &self,
        first: RunId,
        first_status: RunStatus,
        rerun: Option<(RunId, RunStatus)>,
    ) -> Result<bool, StoreError> {
        let update_first = "update runs set status = $1 where id = $2 and status = 'confirming'";
        let update_rerun = "update runs set status = $1 where id = $2";
        retry_busy(|| async move {
            Ok(in_transaction!(self, |tx| {
                let ended = sqlx::query(update_first)
                    .bind(first_status.as_str())
                    .bind(first)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected()
                    == 1;
                if let Some((rerun, status)) = rerun.filter(|_| ended) {
                    sqlx::query(update_rerun).bind(status.as_str()).bind(rerun).execute(&mut *tx).await?;
                }
                ended
            }))
        })
        .await
    }

    /// Runs left `confirming` by a degrade that stopped before their rerun decided them, where `scope` says.
    pub async fn confirming_left_behind(&self, scope: LeftBehind<'_>) -> Result<Vec<RunId>, StoreError> {
        let (unleased, claimed) = match scope {
            LeftBehind::Unleased(now) => (Some(to_millis(now)), None),
            LeftBehind::Claimed(scenario) => (None, Some(scenario)),
        };
        let query = "select runs.id from runs join scenarios on scenarios.id = runs.scenario_id \
                     where runs.status = 'confirming' \
                     and (cast($1 as bigint) is null or runs.scenario_id not in \
                         (select scenario_id from scenario_leases where expires_at > $1)) \
                     and (cast($2 as text) is null or scenarios.name = $2) \
                     order by runs.id";
        let rows: Vec<(i64,)> =
            on_pool!(self, |pool| sqlx::query_as(query).bind(unleased).bind(claimed).fetch_all(pool).await?);
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// Whether a run of `run`'s scenario started after it, other than its own rerun, has a verdict: the
    /// scenario's episodes already follow a later night.
    pub async fn judged_since(&self, run: RunId) -> Result<bool, StoreError> {
        let query = "select count(*) from runs later join runs this on this.id = $1 \
                     where later.scenario_id = this.scenario_id and later.id > this.id \
                     and (later.confirms_run_id is null or later.confirms_run_id <> this.id) \
                     and exists (select 1 from verdicts where verdicts.run_id = later.id)";
        let (count,): (i64,) = on_pool!(self, |pool| sqlx::query_as(query).bind(run).fetch_one(pool).await?);
        Ok(count > 0)
    }

    /// The rerun that was asked to confirm `first`, if there was one.
    pub async fn rerun_of(&self, first: RunId) -> Result<Option<RunId>, StoreError> {
        let query = "select id from runs where confirms_run_id = $1 order by id desc limit 1";
        let row: Option<(i64,)> = on_pool!(self, |pool| sqlx::query_as(query).bind(first).fetch_optional(pool).await?);
        Ok(row.map(|(id,)| id))
    }

    /// The run that `rerun` was asked to confirm, if it is a rerun.
    pub async fn confirmed_by(&self, rerun: RunId) -> Result<Option<RunId>, StoreError> {
        let query = "select confirms_run_id from runs where id = $1";
        let row: Option<(Option<i64>,)> =
            on_pool!(self, |pool| sqlx::query_as(query).bind(rerun).fetch_optional(pool).await?);
        Ok(row.and_then(|(id,)| id))
    }
}
