//! Choosing runs for a check: the candidate to judge and the earlier runs it is judged against.
//!
//! Only runs that measured the build validly (`finished`, `passed`, `regressed`) ever form a baseline, and
//! only runs that started before the candidate, so the candidate never counts in its own baseline.

use chrono::Duration;

use super::rows::{RunRow, convert, select_runs};
use super::{Run, Store, StoreError, on_pool, to_millis};
use crate::analysis::baseline::BaselineSpec;

macro_rules! valid {
    () => {
        "and runs.status in ('finished', 'passed', 'regressed') "
    };
}

impl Store {
    /// The newest run of `scenario` that is no longer running: the run a check judges by default.
    pub async fn latest_completed_run(&self, scenario: &str) -> Result<Option<Run>, StoreError> {
        let query = concat!(
            select_runs!(),
            "where scenarios.name = $1 ",
            "and runs.status <> 'running' order by runs.started_at desc, runs.id desc limit 1"
        );
        let row: Option<RunRow> =
            on_pool!(self, |pool| sqlx::query_as(query).bind(scenario).fetch_optional(pool).await?);
        row.map(Run::try_from).transpose()
    }

    /// The valid runs `spec` selects for judging `candidate`, oldest first. `run:ID` is not a query and is
    /// answered by [`Store::find_run`].
    pub async fn baseline_runs(&self, candidate: &Run, spec: &BaselineSpec) -> Result<Vec<Run>, StoreError> {
        let before = to_millis(candidate.started_at);
        let rows: Vec<RunRow> = match spec {
            BaselineSpec::LastDays(days) => {
                let query = concat!(
                    select_runs!(),
                    "where scenarios.name = $1 ",
                    valid!(),
                    "and runs.started_at >= $2 and runs.started_at < $3 and runs.id <> $4 order by runs.started_at, runs.id"
                );
                let from = to_millis(candidate.started_at - Duration::days(i64::from(*days)));
                on_pool!(self, |pool| sqlx::query_as(query)
                    .bind(&candidate.scenario)
                    .bind(from)
                    .bind(before)
                    .bind(candidate.id)
                    .fetch_all(pool)
                    .await?)
            }
            BaselineSpec::LastRuns(count) => {
                let query = concat!(
                    select_runs!(),
                    "where scenarios.name = $1 ",
                    valid!(),
                    "and runs.started_at < $2 and runs.id <> $3 order by runs.started_at desc, runs.id desc limit $4"
                );
                let mut rows: Vec<RunRow> = on_pool!(self, |pool| sqlx::query_as(query)
                    .bind(&candidate.scenario)
                    .bind(before)
                    .bind(candidate.id)
                    .bind(i64::from(*count))
                    .fetch_all(pool)
                    .await?);
                rows.reverse();
                rows
            }
            BaselineSpec::Build(build) => {
                let query = concat!(
                    select_runs!(),
                    "where scenarios.name = $1 ",
                    valid!(),
                    "and runs.build_id = $2 and runs.id <> $3 order by runs.started_at, runs.id"
                );
                on_pool!(self, |pool| sqlx::query_as(query)
                    .bind(&candidate.scenario)
                    .bind(build)
                    .bind(candidate.id)
                    .fetch_all(pool)
                    .await?)
            }
            BaselineSpec::Run(id) => {
                return Ok(self.find_run(*id).await?.into_iter().collect());
            }
        };
        convert(rows)
    }
}
