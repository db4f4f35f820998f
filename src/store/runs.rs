//! Runs: starting one, storing everything it measured in one transaction, and ending one that measured
//! nothing; reading them back is `run_reads.rs`'s.

use chrono::{DateTime, Utc};
use sqlx::QueryBuilder;

use super::retry::retry_busy;
use super::rows::to_json;
use super::{Store, StoreError, in_transaction, on_pool, to_millis};
use crate::model::{EndpointResult, Interval, NewRun, RunId, RunResults, RunStatus};
use crate::outside_text::storable;

/// A week, the unit of `rollups.weeks`.
pub(super) const MILLIS_PER_WEEK: i64 = 7 * 24 * 3600 * 1000;

/// The lengths of the periods every run is summed into, in weeks, longest first (`rollups.period` is the run's
/// start divided by `weeks` weeks): a trend page over years reads the longest that fits its buckets.
pub(super) const ROLLUP_WEEKS: [i64; 3] = [16, 4, 1];

/// Rows of the timeline written per statement: 9 binds each stays far below both backends' bind limits, and
/// a statement this size prepares in little memory (a 1,000-row one made peak memory grow with run length).
const TIMELINE_ROWS_PER_INSERT: usize = 100;

/// A run's end, written only while it is still `running`.
const FINISH: &str = "update runs set status = $1, finished_at = $2, validity_reasons = $3, load_summary = $4, \
    failure_reason = $6 where id = $5 and status = 'running'";

/// One endpoint's results.
const INSERT_ENDPOINT: &str = "insert into endpoint_results (run_id, endpoint, requests, errors, error_pct, rate, \
    p50_us, p75_us, p90_us, p95_us, p99_us, p999_us, max_us, mean_us, errors_by_class, error_samples, histogram, \
    p50_lo_us, p50_hi_us, p95_lo_us, p95_hi_us, p99_lo_us, p99_hi_us, error_pct_lo, error_pct_hi) \
    values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, \
    $23, $24, $25)";

/// Where a run's results go in the rollups: its scenario and start.
const RUN_PLACE: &str = "select scenario_id, started_at from runs where id = $1";

/// Keeps `rollups` (the trend pages' long ranges) in step, in the same transaction as the results.
const ADD_TO_PERIOD: &str = "insert into rollups (scenario_id, endpoint, weeks, period, first_started_at, runs, \
    sum_p50_us, sum_p95_us, sum_p99_us, sum_error_pct, sum_rate, max_p95_us, min_p95_us, max_p99_us, \
    max_error_pct) values ($1, $2, $3, $4, $5, 1, $6, $7, $8, $9, $10, $7, $7, $8, $9) \
    on conflict (scenario_id, endpoint, weeks, period) do update set runs = rollups.runs + 1, \
    first_started_at = case when excluded.first_started_at < rollups.first_started_at \
      then excluded.first_started_at else rollups.first_started_at end, \
    sum_p50_us = rollups.sum_p50_us + excluded.sum_p50_us, \
    sum_p95_us = rollups.sum_p95_us + excluded.sum_p95_us, \
    sum_p99_us = rollups.sum_p99_us + excluded.sum_p99_us, \
    sum_error_pct = rollups.sum_error_pct + excluded.sum_error_pct, \
    sum_rate = rollups.sum_rate + excluded.sum_rate, \
    max_p95_us = case when excluded.max_p95_us > rollups.max_p95_us \
      then excluded.max_p95_us else rollups.max_p95_us end, \
    min_p95_us = case when excluded.min_p95_us < rollups.min_p95_us \
      then excluded.min_p95_us else rollups.min_p95_us end, \
    max_p99_us = case when excluded.max_p99_us > rollups.max_p99_us \
      then excluded.max_p99_us else rollups.max_p99_us end, \
    max_error_pct = case when excluded.max_error_pct > rollups.max_error_pct \
      then excluded.max_error_pct else rollups.max_error_pct end";

/// The timeline's rows, their values pushed after it.
const TIMELINE_HEAD: &str = "insert into timeline (run_id, endpoint, elapsed_s, requests, errors, p50_us, p99_us, \
    max_us, errors_by_class) ";

impl Store {
    /// The id of the scenario called `name`, creating it on first use.
    pub async fn ensure_scenario(&self, name: &str, now: DateTime<Utc>) -> Result<i64, StoreError> {
        // `do update` (a no-op) rather than `do nothing`, so `returning` yields the id on conflict as well.
        let query = "insert into scenarios (name, created_at) values ($1, $2) \
                     on conflict (name) do update set name = excluded.name returning id";
        retry_busy(|| async move {
            Ok(on_pool!(self, |pool| sqlx::query_scalar(query)
                .bind(storable(name))
                .bind(to_millis(now))
                .fetch_one(pool)
                .await?))
        })
        .await
    }

    /// Records that a run has started; it stays `running` until [`Store::finish_run`] or [`Store::end_run`].
    /// Asked again for the same run while it is `running` (a retry), returns the one stored.
    pub async fn create_run(&self, run: &NewRun) -> Result<RunId, StoreError> {
        let scenario_id = self.ensure_scenario(&run.scenario, run.started_at).await?;
        // A caller that tries again after a dropped connection may have had its insert committed and the answer
        // lost: the run it asked for is then found (the same scenario, start to the millisecond, seed and rerun
        // link, still `running`: two degrades never start a scenario at once, the claim sees to that), not
        // stored twice.
        let existing = "select id from runs where scenario_id = $1 and started_at = $2 and seed = $3 \
                        and status = 'running' and coalesce(confirms_run_id, 0) = coalesce($4, 0)";
        let found: Option<RunId> = on_pool!(self, |pool| sqlx::query_scalar(existing)
            .bind(scenario_id)
            .bind(to_millis(run.started_at))
            .bind(run.seed)
            .bind(run.confirms)
            .fetch_optional(pool)
            .await?);
        if let Some(id) = found {
            return Ok(id);
        }
        let query = "insert into runs (scenario_id, build_id, status, started_at, scenario_hash, seed, scenario_source, \
                     deploy_output, confirms_run_id, judged_against, reshape) \
                     values ($1, $2, 'running', $3, $4, $5, $6, $7, $8, $9, $10) \
                     returning id";
        retry_busy(|| async move {
            Ok(on_pool!(self, |pool| sqlx::query_scalar(query)
                .bind(scenario_id)
                .bind(run.build_id.as_deref().map(storable))
                .bind(to_millis(run.started_at))
                .bind(storable(&run.scenario_hash))
                .bind(run.seed)
                .bind(run.scenario_source.as_deref().map(storable))
                .bind(run.deploy_output.as_deref().map(storable))
                .bind(run.confirms)
                .bind(run.judged_against.as_ref().map(ToString::to_string))
                .bind(run.reshape.as_deref().map(storable))
                .fetch_one(pool)
                .await?))
        })
        .await
    }

    /// Stores everything a run measured and its final status, all in one transaction: either the run is
    /// complete in the database or it is still `running` and nothing of its results is there.
    pub async fn finish_run(&self, id: RunId, results: &RunResults) -> Result<(), StoreError> {
        ensure_finite_results(results)?;
        retry_busy(|| self.finish_run_once(id, results)).await
    }

    async fn finish_run_once(&self, id: RunId, results: &RunResults) -> Result<(), StoreError> {
        let updated = in_transaction!(self, |tx| {
            let updated = sqlx::query(FINISH)
                .bind(results.status.as_str())
                .bind(to_millis(results.finished_at))
                .bind(to_json(&results.validity_reasons))
                .bind(to_json(&results.load_summary))
                .bind(id)
                // An aborted run says why it stopped where a failed one does (its reasons are the why).
                .bind(
                    (results.status == RunStatus::Aborted)
                        .then(|| storable(&results.validity_reasons.join("; ")).into_owned()),
                )
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if updated == 1 {
                let (scenario_id, started_at): (i64, i64) =
                    sqlx::query_as(RUN_PLACE).bind(id).fetch_one(&mut *tx).await?;
                for e in &results.endpoints {
                    bind_endpoint(sqlx::query(INSERT_ENDPOINT).bind(id), e).execute(&mut *tx).await?;
                    // A run against a down target measured no build: its fast refusals stay out of the trends;
                    // so do a stopped run's cut-off requests.
                    if matches!(results.status, RunStatus::Failed | RunStatus::Aborted) {
                        continue;
                    }
                    for weeks in ROLLUP_WEEKS {
                        sqlx::query(ADD_TO_PERIOD)
                            .bind(scenario_id)
                            .bind(storable(&e.endpoint).into_owned())
                            .bind(weeks)
                            .bind(started_at / (weeks * MILLIS_PER_WEEK))
                            .bind(started_at)
                            .bind(e.p50_us as f64)
                            .bind(e.p95_us as f64)
                            .bind(e.p99_us as f64)
                            .bind(e.error_pct())
                            .bind(e.rate)
                            .execute(&mut *tx)
                            .await?;
                    }
                }
                for chunk in results.timeline.chunks(TIMELINE_ROWS_PER_INSERT) {
                    let mut insert = QueryBuilder::new(TIMELINE_HEAD);
                    insert.push_values(chunk, |mut row, p| {
                        row.push_bind(id)
                            .push_bind(storable(&p.endpoint))
                            .push_bind(p.elapsed_s)
                            .push_bind(p.requests)
                            .push_bind(p.errors)
                            .push_bind(p.p50_us)
                            .push_bind(p.p99_us)
                            .push_bind(p.max_us)
                            .push_bind(to_json(&p.errors_by_class));
                    });
                    insert.build().execute(&mut *tx).await?;
                }
            }
            updated
        });
        if updated == 1 { Ok(()) } else { self.finished_already(id, results).await }
    }

    /// Asked again after a dropped connection whose transaction had committed: the run already holds these
    /// results (the same status and end to the millisecond), and storing them is done, once.
    async fn finished_already(&self, id: RunId, results: &RunResults) -> Result<(), StoreError> {
        match self.find_run(id).await? {
            Some(run)
                if run.status == results.status
                    && run.finished_at.map(to_millis) == Some(to_millis(results.finished_at)) =>
            {
                Ok(())
            }
            _ => Err(self.not_running(id).await),
        }
    }

    /// Ends a run that produced no results: `Failed` (could not be done), `Aborted` (stopped part-way) or
    /// `Invalid` (a split night that could not be measured), with why. An invalid run's reason is also its
    /// validity reason, where every invalid run's reasons are read (the API's `validity_reasons`); a trial found
    /// a split night's barrier timeout there as `[]`.
    pub async fn end_run(
        &self,
        id: RunId,
        status: RunStatus,
        reason: &str,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let query = "update runs set status = $1, failure_reason = $2, finished_at = $3, \
                     validity_reasons = coalesce($5, validity_reasons) where id = $4 and status = 'running'";
        let validity = (status == RunStatus::Invalid).then(|| to_json(&[storable(reason)]));
        let updated = retry_busy(|| async {
            Ok(on_pool!(self, |pool| sqlx::query(query)
                .bind(status.as_str())
                .bind(storable(reason))
                .bind(to_millis(at))
                .bind(id)
                .bind(validity.as_deref())
                .execute(pool)
                .await?
                .rows_affected()))
        })
        .await?;
        if updated == 1 { Ok(()) } else { Err(self.not_running(id).await) }
    }

    /// Why a run could not be moved out of `running`: it does not exist, or it already left that state.
    async fn not_running(&self, id: RunId) -> StoreError {
        match self.find_run(id).await {
            Ok(Some(_)) => StoreError::RunNotRunning(id),
            Ok(None) => StoreError::RunNotFound(id),
            Err(e) => e,
        }
    }
}

/// Rejects NaN and infinite figures before anything is written: SQLite would store them as NULL (breaking
/// `not null`) and JSON as `null` (unreadable later), while PostgreSQL keeps them; the backends must agree.
fn ensure_finite_results(results: &RunResults) -> Result<(), StoreError> {
    let summary = &results.load_summary;
    let mut figures = vec![
        ("load_summary.target_rate".to_owned(), summary.target_rate),
        ("load_summary.achieved_rate".to_owned(), summary.achieved_rate),
        ("load_summary.generator_cpu_pct".to_owned(), summary.generator_cpu_pct),
        ("load_summary.measured_secs".to_owned(), summary.measured_secs),
        ("load_summary.machine_cpu_busy_pct".to_owned(), summary.machine_cpu_busy_pct.unwrap_or(0.0)),
        ("load_summary.machine_cpu_stolen_pct".to_owned(), summary.machine_cpu_stolen_pct.unwrap_or(0.0)),
    ];
    for e in &results.endpoints {
        figures.push((format!("{} rate", e.endpoint), e.rate));
        figures.push((format!("{} mean_us", e.endpoint), e.mean_us));
    }
    super::ensure_finite(figures)
}

/// Binds the 16 figures of one endpoint result after its run id, in the column order of the insert.
fn bind_endpoint<'q, DB: sqlx::Database>(
    query: sqlx::query::Query<'q, DB, DB::Arguments>,
    e: &'q EndpointResult,
) -> sqlx::query::Query<'q, DB, DB::Arguments>
where
    &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    String: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    i64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    f64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<i64>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<f64>: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    &'q [u8]: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    let us = |interval: Option<Interval>| {
        (interval.map(|i| i.lo.round() as i64), interval.and_then(|i| i.hi).map(|hi| hi.round() as i64))
    };
    let (p50_lo, p50_hi) = us(e.intervals.p50_us);
    let (p95_lo, p95_hi) = us(e.intervals.p95_us);
    let (p99_lo, p99_hi) = us(e.intervals.p99_us);
    let errors = e.intervals.error_pct;
    query
        .bind(storable(&e.endpoint).into_owned())
        .bind(e.requests)
        .bind(e.errors)
        .bind(e.error_pct())
        .bind(e.rate)
        .bind(e.p50_us)
        .bind(e.p75_us)
        .bind(e.p90_us)
        .bind(e.p95_us)
        .bind(e.p99_us)
        .bind(e.p999_us)
        .bind(e.max_us)
        .bind(e.mean_us)
        .bind(to_json(&e.errors_by_class))
        .bind(to_json(&e.error_samples))
        .bind(e.histogram.as_slice())
        .bind(p50_lo)
        .bind(p50_hi)
        .bind(p95_lo)
        .bind(p95_hi)
        .bind(p99_lo)
        .bind(p99_hi)
        .bind(errors.map(|i| i.lo))
        .bind(errors.and_then(|i| i.hi))
}
