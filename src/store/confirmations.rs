//! Confirmation reruns: which run a rerun was asked to confirm, and the status the pair ends with. A run judged
//! regressed is run again at once on the same build; the night is regressed only when the rerun reproduces it,
//! else the first run is `unconfirmed` (shown, never alerted, never a baseline) and the rerun is the night.

use chrono::{DateTime, Utc};

use super::retry::retry_busy;
use super::{Store, StoreError, on_pool, to_millis};
use crate::model::{RunId, RunStatus};

impl Store {
    /// Records that `rerun` was run to confirm `first`.
    pub async fn link_confirmation(&self, rerun: RunId, first: RunId) -> Result<(), StoreError> {
        let update = "update runs set confirms_run_id = $1 where id = $2";
        retry_busy(|| async move {
            on_pool!(self, |pool| sqlx::query(update).bind(first).bind(rerun).execute(pool).await?.rows_affected());
            Ok(())
        })
        .await
    }

    /// Sets a judged run's status to `status` (regressed or unconfirmed, as its rerun decided).
    pub async fn set_confirmed_status(&self, run: RunId, status: RunStatus) -> Result<(), StoreError> {
        let update = "update runs set status = $1 where id = $2 and status in ('regressed', 'unconfirmed')";
        retry_busy(|| async move {
            on_pool!(self, |pool| sqlx::query(update)
                .bind(status.as_str())
                .bind(run)
                .execute(pool)
                .await?
                .rows_affected());
            Ok(())
        })
        .await
    }

    /// Runs left `unconfirmed` that no rerun is linked to, of scenarios no degrade holds a lease on at `now`:
    /// their rerun was cut short by a kill or a crash (one that ends in any other way is linked first).
    pub async fn unconfirmed_without_rerun(&self, now: DateTime<Utc>) -> Result<Vec<RunId>, StoreError> {
        let query = "select id from runs where status = 'unconfirmed' \
                     and not exists (select 1 from runs reruns where reruns.confirms_run_id = runs.id) \
                     and scenario_id not in (select scenario_id from scenario_leases where expires_at > $1) \
                     order by id";
        let rows: Vec<(i64,)> =
            on_pool!(self, |pool| sqlx::query_as(query).bind(to_millis(now)).fetch_all(pool).await?);
        Ok(rows.into_iter().map(|(id,)| id).collect())
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
