//! Confirmation reruns: which run a rerun was asked to confirm, and the status the pair ends with. A run judged
//! regressed is `confirming` while the same build is run again at once; the night is regressed only when the
//! rerun reproduces it, else the first run is `unconfirmed` (shown, never alerted, never a baseline) and the
//! rerun is the night. A pair a stopped degrade left undecided is found again in `left_behind`.

use super::retry::retry_busy;
use super::{Store, StoreError, in_transaction, on_pool};
use crate::model::{RunId, RunStatus};

impl Store {
    /// Ends `first`'s confirmation in one transaction: `first` takes `first_status`, and each of `reruns` its
    /// status if it measured the build validly (an invalid or failed rerun keeps what it was). Returns false,
    /// changing nothing, when `first` is no longer `confirming` and was ended otherwise (another degrade settled
    /// it first); true when it already has `first_status`: this call asked again after a dropped connection whose
    /// transaction had committed (or another degrade decided the pair alike, which comes to the same).
    pub async fn end_confirmation(
        &self,
        first: RunId,
        first_status: RunStatus,
        reruns: &[(RunId, RunStatus)],
    ) -> Result<bool, StoreError> {
        let update_first = "update runs set status = $1 where id = $2 and status = 'confirming'";
        let update_rerun = "update runs set status = $1 where id = $2 and status in ('finished', 'passed', 'regressed', 'unconfirmed')";
        let ended = retry_busy(|| async move {
            Ok(in_transaction!(self, |tx| {
                let ended = sqlx::query(update_first)
                    .bind(first_status.as_str())
                    .bind(first)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected()
                    == 1;
                for (rerun, status) in reruns.iter().filter(|_| ended) {
                    sqlx::query(update_rerun).bind(status.as_str()).bind(rerun).execute(&mut *tx).await?;
                }
                ended
            }))
        })
        .await?;
        if ended {
            return Ok(true);
        }
        Ok(self.find_run(first).await?.is_some_and(|run| run.status == first_status))
    }

    /// Whether a later night of `run`'s scenario has been judged by the runner (any run since, other than
    /// `run`'s own rerun, that passed, regressed or awaits or failed its confirmation) or has opened or resolved
    /// a regression episode: the team has heard of a later night, and the scenario's alerts follow it now.
    pub async fn superseded(&self, run: RunId) -> Result<bool, StoreError> {
        let query = "select count(*) from runs this where this.id = $1 and (\
                     exists (select 1 from runs later where later.scenario_id = this.scenario_id \
                         and later.id > this.id and later.status in ('passed', 'regressed', 'confirming', 'unconfirmed') \
                         and (later.confirms_run_id is null or later.confirms_run_id <> this.id)) \
                     or exists (select 1 from episodes where episodes.scenario_id = this.scenario_id \
                         and episodes.kind = 'regression' \
                         and (episodes.opened_run_id > this.id or episodes.resolved_run_id > this.id)))";
        let (count,): (i64,) = on_pool!(self, |pool| sqlx::query_as(query).bind(run).fetch_one(pool).await?);
        Ok(count > 0)
    }

    /// The rerun that was asked to confirm `first`, if there was one.
    pub async fn rerun_of(&self, first: RunId) -> Result<Option<RunId>, StoreError> {
        let query = "select id from runs where confirms_run_id = $1 order by id desc limit 1";
        let row: Option<(i64,)> = on_pool!(self, |pool| sqlx::query_as(query).bind(first).fetch_optional(pool).await?);
        Ok(row.map(|(id,)| id))
    }

    /// Every rerun that was asked to confirm `first`, oldest first.
    pub async fn reruns_of(&self, first: RunId) -> Result<Vec<RunId>, StoreError> {
        let query = "select id from runs where confirms_run_id = $1 order by id";
        let rows: Vec<(i64,)> = on_pool!(self, |pool| sqlx::query_as(query).bind(first).fetch_all(pool).await?);
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// The run that `rerun` was asked to confirm, if it is a rerun.
    pub async fn confirmed_by(&self, rerun: RunId) -> Result<Option<RunId>, StoreError> {
        let query = "select confirms_run_id from runs where id = $1";
        let row: Option<(Option<i64>,)> =
            on_pool!(self, |pool| sqlx::query_as(query).bind(rerun).fetch_optional(pool).await?);
        Ok(row.and_then(|(id,)| id))
    }
}
