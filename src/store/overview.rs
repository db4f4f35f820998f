//! What the dashboard's front page needs in few queries: every scenario with its latest run and the
//! number of its open alert episodes, and the endpoints a scenario's latest run measured.

use super::rows::{RunRow, convert, select_runs};
use chrono::{DateTime, Utc};

use super::{Store, StoreError, on_pool, to_millis};
use crate::model::{Run, RunStatus};

/// One scenario as the overview shows it.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ScenarioSummary {
    pub name: String,
    /// Its most recent run, whatever its status.
    pub latest_run: Option<Run>,
    /// How many runs it has.
    pub runs: i64,
    /// Alert episodes not resolved yet.
    pub open_episodes: i64,
}

/// How many runs of one scenario have one status, for `/metrics`.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq, Eq, sqlx_macros::FromRow)]
pub struct StatusCount {
    pub scenario: String,
    pub status: String,
    /// How many runs have it.
    pub runs: i64,
}

#[derive(sqlx_macros::FromRow)]
struct CountsRow {
    name: String,
    runs: i64,
    open_episodes: i64,
    latest_run_id: Option<i64>,
}

impl Store {
    /// Every scenario that has runs or episodes, alphabetically, with its latest run.
    pub async fn scenario_summaries(&self) -> Result<Vec<ScenarioSummary>, StoreError> {
        let counts = "select scenarios.name, \
             (select count(*) from runs where runs.scenario_id = scenarios.id) as runs, \
             (select count(*) from episodes where episodes.scenario_id = scenarios.id and episodes.state <> 'resolved') \
               as open_episodes, \
             (select runs.id from runs where runs.scenario_id = scenarios.id \
               order by runs.started_at desc, runs.id desc limit 1) as latest_run_id \
             from scenarios order by scenarios.name";
        let rows: Vec<CountsRow> = on_pool!(self, |pool| sqlx::query_as(counts).fetch_all(pool).await?);
        let mut summaries = Vec::with_capacity(rows.len());
        for CountsRow { name, runs, open_episodes, latest_run_id } in rows {
            let latest_run = match latest_run_id {
                Some(id) => self.find_run(id).await?,
                None => None,
            };
            summaries.push(ScenarioSummary { name, latest_run, runs, open_episodes });
        }
        Ok(summaries)
    }

    /// The endpoints `scenario`'s most recent run with results measured, overall row excluded, by name.
    pub async fn latest_endpoints(&self, scenario: &str) -> Result<Vec<String>, StoreError> {
        let query = "select r.endpoint from endpoint_results r where r.run_id = ( \
                       select runs.id from runs join scenarios on scenarios.id = runs.scenario_id \
                       where scenarios.name = $1 and exists (select 1 from endpoint_results e where e.run_id = runs.id) \
                       order by runs.started_at desc, runs.id desc limit 1) \
                     and r.endpoint <> '(all)' order by r.endpoint";
        Ok(on_pool!(self, |pool| sqlx::query_scalar(query).bind(scenario).fetch_all(pool).await?))
    }

    /// One page of `scenario`'s runs, newest first: those with `status` (any when `None`) that come before
    /// run `before` in that order (from the newest when `None`), at most `limit`.
    pub async fn runs_page(
        &self,
        scenario: &str,
        status: Option<RunStatus>,
        before: Option<Run>,
        limit: u32,
    ) -> Result<Vec<Run>, StoreError> {
        // Keyset paging on (started_at, id): stable while new runs arrive, unlike an offset.
        let query = concat!(
            select_runs!(),
            "where scenarios.name = $1 and (cast($2 as text) is null or runs.status = $2) \
             and (cast($3 as bigint) is null or runs.started_at < $3 or (runs.started_at = $3 and runs.id < $4)) \
             order by runs.started_at desc, runs.id desc limit $5"
        );
        let rows: Vec<RunRow> = on_pool!(self, |pool| sqlx::query_as(query)
            .bind(scenario)
            .bind(status.map(RunStatus::as_str))
            .bind(before.as_ref().map(|r| to_millis(r.started_at)))
            .bind(before.as_ref().map_or(0, |r| r.id))
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?);
        convert(rows)
    }

    /// Runs per scenario and status.
    pub async fn status_counts(&self) -> Result<Vec<StatusCount>, StoreError> {
        let query = "select s.name as scenario, r.status, count(*) as runs from runs r \
                     join scenarios s on s.id = r.scenario_id group by s.name, r.status order by s.name, r.status";
        Ok(on_pool!(self, |pool| sqlx::query_as(query).fetch_all(pool).await?))
    }

    /// The scenario file's text as a run ran it, when it was recorded.
    pub async fn scenario_source(&self, run_id: i64) -> Result<Option<String>, StoreError> {
        let query = "select scenario_source from runs where id = $1";
        let source: Option<Option<String>> =
            on_pool!(self, |pool| sqlx::query_scalar(query).bind(run_id).fetch_optional(pool).await?);
        Ok(source.flatten())
    }

    /// What the deploy command printed before a run, when one ran and succeeded.
    pub async fn deploy_output(&self, run_id: i64) -> Result<Option<String>, StoreError> {
        let query = "select deploy_output from runs where id = $1";
        let output: Option<Option<String>> =
            on_pool!(self, |pool| sqlx::query_scalar(query).bind(run_id).fetch_optional(pool).await?);
        Ok(output.flatten())
    }

    /// When a scenario was first stored (first run, or first scheduled), if it ever was.
    pub async fn scenario_created_at(&self, scenario: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        let query = "select created_at from scenarios where name = $1";
        let created: Option<i64> =
            on_pool!(self, |pool| sqlx::query_scalar(query).bind(scenario).fetch_optional(pool).await?);
        Ok(created.map(super::from_millis))
    }

    /// Whether a scenario of this name has ever been stored.
    pub async fn scenario_exists(&self, scenario: &str) -> Result<bool, StoreError> {
        let exists = "select count(*) from scenarios where name = $1";
        let count: i64 = on_pool!(self, |pool| sqlx::query_scalar(exists).bind(scenario).fetch_one(pool).await?);
        Ok(count > 0)
    }
}
