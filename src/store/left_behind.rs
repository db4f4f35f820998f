//! What a degrade that stopped mid-way (a kill, a crash, a power cut) left for the next one to settle: runs
//! still `running`, regressions still `confirming`, and nights measured but never judged, or judged (or
//! failed) but never alerted (see `pipeline::interrupted`), where [`LeftBehind`] says; and what one run's row
//! says of where its night stands, for the run page.

use chrono::{DateTime, Utc};

use super::retry::retry_busy;
use super::{Store, StoreError, on_pool, to_millis};
use crate::model::{NightRecord, RunId, RunStatus};

/// Where to look for what a stopped degrade left behind.
#[derive(Debug, Clone, Copy)]
pub enum LeftBehind<'a> {
    /// Every scenario whose lease has run out at this time (by the system's clock): at start-up and in
    /// `serve`'s watch (a degrade still running keeps its leases renewed).
    Unleased(DateTime<Utc>),
    /// The scenario the caller holds the claim on, so no run of it can be under way elsewhere.
    Claimed(&'a str),
}

impl<'a> LeftBehind<'a> {
    /// The queries' two optional parameters: the lease time (`Unleased`) and the scenario's name (`Claimed`).
    fn parameters(self) -> (Option<i64>, Option<&'a str>) {
        match self {
            Self::Unleased(now) => (Some(to_millis(now)), None),
            Self::Claimed(scenario) => (None, Some(scenario)),
        }
    }
}

impl Store {
    /// Marks `aborted`, at `now`, every run still `running` where `scope` says; returns their ids. A night split
    /// across machines is told left behind by its segments (they meet in `segmented_runs`), not by its lease,
    /// which outlives them by up to two minutes: it is left running while one of
    /// its segments was seen in the last minute; once none was, `pipeline::segments::lost` marks it invalid with
    /// the reason first, and this marks it like any other only if that could not.
    pub async fn abort_interrupted_runs(
        &self,
        scope: LeftBehind<'_>,
        now: DateTime<Utc>,
    ) -> Result<Vec<RunId>, StoreError> {
        let (unleased, claimed) = scope.parameters();
        let query = "update runs set status = 'aborted', finished_at = $1, \
                     failure_reason = 'degrade stopped while the run was under way' \
                     where status = 'running' \
                     and (cast($2 as bigint) is null or scenario_id not in \
                         (select scenario_id from scenario_leases where expires_at > $2)) \
                     and id not in (select s.run_id from segmented_runs s \
                         where s.run_id is not null and s.merged_at is null and exists (select 1 from run_segments r \
                             where r.run_key = s.run_key and r.seen_at > $1 - 60000)) \
                     and (cast($3 as text) is null or scenario_id in (select id from scenarios where name = $3)) \
                     returning id";
        let mut ids: Vec<RunId> = retry_busy(|| async move {
            Ok(on_pool!(self, |pool| sqlx::query_scalar(query)
                .bind(to_millis(now))
                .bind(unleased)
                .bind(claimed)
                .fetch_all(pool)
                .await?))
        })
        .await?;
        ids.sort_unstable();
        Ok(ids)
    }

    /// The split nights none of whose segments was seen in the `quiet` before `now` (system clock): their run
    /// still `running`, never merged. Each as its run key, its run and its segment count.
    pub async fn split_nights_gone_quiet(
        &self,
        now: DateTime<Utc>,
        quiet: std::time::Duration,
    ) -> Result<Vec<(String, RunId, i64)>, StoreError> {
        let query = "select s.run_key, s.run_id, s.segments from segmented_runs s join runs on runs.id = s.run_id \
                     where runs.status = 'running' and s.merged_at is null \
                     and not exists (select 1 from run_segments r where r.run_key = s.run_key and r.seen_at > $1) \
                     order by s.run_id";
        let since = to_millis(now) - i64::try_from(quiet.as_millis()).unwrap_or(i64::MAX);
        Ok(on_pool!(self, |pool| sqlx::query_as(query).bind(since).fetch_all(pool).await?))
    }

    /// Runs left `confirming` by a degrade that stopped before their rerun decided them, where `scope` says. A
    /// split night is told by its segments, not its lease: it is left to them while one of the night's or of its rerun's
    /// (`KEY:confirm`) was seen in the last minute.
    pub async fn confirming_left_behind(&self, scope: LeftBehind<'_>) -> Result<Vec<RunId>, StoreError> {
        let (unleased, claimed) = scope.parameters();
        let query = "select runs.id from runs join scenarios on scenarios.id = runs.scenario_id \
                     where runs.status = 'confirming' and runs.confirms_run_id is null \
                     and (cast($1 as bigint) is null or runs.scenario_id not in \
                         (select scenario_id from scenario_leases where expires_at > $1)) \
                     and runs.id not in (select s.run_id from segmented_runs s where s.run_id is not null \
                         and exists (select 1 from run_segments r where r.seen_at > $1 - 60000 \
                             and (r.run_key = s.run_key or r.run_key = s.run_key || ':confirm'))) \
                     and (cast($2 as text) is null or scenarios.name = $2) \
                     order by runs.id";
        let rows: Vec<(i64,)> =
            on_pool!(self, |pool| sqlx::query_as(query).bind(unleased).bind(claimed).fetch_all(pool).await?);
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// Runner nights a degrade stopped between their stored results and their verdict, where `scope` says:
    /// `finished`, never judged, and a night's first run (a rerun left so is decided with its pair), each with
    /// the baseline it was to be judged against, as stored.
    pub async fn unjudged_left_behind(&self, scope: LeftBehind<'_>) -> Result<Vec<(RunId, String)>, StoreError> {
        let (unleased, claimed) = scope.parameters();
        let query = "select runs.id, runs.judged_against from runs join scenarios on scenarios.id = runs.scenario_id \
                     where runs.status = 'finished' and runs.judged_against is not null \
                     and runs.confirms_run_id is null \
                     and not exists (select 1 from verdicts where verdicts.run_id = runs.id) \
                     and (cast($1 as bigint) is null or runs.scenario_id not in \
                         (select scenario_id from scenario_leases where expires_at > $1)) \
                     and (cast($2 as text) is null or scenarios.name = $2) \
                     order by runs.id";
        Ok(on_pool!(self, |pool| sqlx::query_as(query).bind(unleased).bind(claimed).fetch_all(pool).await?))
    }

    /// Runner nights judged or failed and never alerted (a degrade stopped between the verdict, or the failure,
    /// and the alerts), where `scope` says: a night's first run, passed, regressed, judged inconclusive or
    /// failed, not stamped `alerted_at`. A pair's first run left `confirming` is the confirmation's to settle,
    /// and a night never judged is judged first (`unjudged_left_behind`). An invalid night judged (inconclusive,
    /// its run-failed alert due) is one too: the run page says the next degrade alerts it, and it must.
    pub async fn unalerted_left_behind(&self, scope: LeftBehind<'_>) -> Result<Vec<RunId>, StoreError> {
        let (unleased, claimed) = scope.parameters();
        let query = "select runs.id from runs join scenarios on scenarios.id = runs.scenario_id \
                     where runs.judged_against is not null and runs.confirms_run_id is null \
                     and runs.alerted_at is null and (runs.status = 'failed' \
                         or (runs.status in ('passed', 'regressed', 'finished', 'invalid') \
                             and exists (select 1 from verdicts where verdicts.run_id = runs.id))) \
                     and (cast($1 as bigint) is null or runs.scenario_id not in \
                         (select scenario_id from scenario_leases where expires_at > $1)) \
                     and (cast($2 as text) is null or scenarios.name = $2) \
                     order by runs.id";
        let rows: Vec<(i64,)> =
            on_pool!(self, |pool| sqlx::query_as(query).bind(unleased).bind(claimed).fetch_all(pool).await?);
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// Stamps run `run_id` alerted at `at`: its night's alerts are stored (or were not due).
    pub async fn mark_alerted(&self, run_id: RunId, at: DateTime<Utc>) -> Result<(), StoreError> {
        let query = "update runs set alerted_at = $2 where id = $1 and alerted_at is null";
        retry_busy(|| async move {
            on_pool!(self, |pool| sqlx::query(query)
                .bind(run_id)
                .bind(to_millis(at))
                .execute(pool)
                .await?
                .rows_affected());
            Ok(())
        })
        .await
    }

    /// What run `id`'s row says of where its night stands (`model::NightStep`); `None` when there is no such run.
    pub async fn night_record(&self, id: RunId) -> Result<Option<NightRecord>, StoreError> {
        let query = "select status, cast(case when judged_against is null then 0 else 1 end as bigint), \
                     cast(case when confirms_run_id is null then 0 else 1 end as bigint), \
                     cast(case when exists (select 1 from verdicts where verdicts.run_id = runs.id) then 1 else 0 end \
                     as bigint), cast(case when alerted_at is null then 0 else 1 end as bigint) from runs where id = $1";
        let row: Option<(String, i64, i64, i64, i64)> =
            on_pool!(self, |pool| sqlx::query_as(query).bind(id).fetch_optional(pool).await?);
        row.map(|(status, runners, rerun, judged, alerted)| {
            let status = status.parse::<RunStatus>().map_err(StoreError::Corrupt)?;
            Ok(NightRecord {
                status,
                runners: runners == 1,
                rerun: rerun == 1,
                judged: judged == 1,
                alerted: alerted == 1,
            })
        })
        .transpose()
    }
}
