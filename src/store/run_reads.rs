//! Reading runs back: one by id (with its results, or its per-second timeline), the runs of a scenario by
//! time window or by count, the run before another of the same workload, and the trend of one endpoint metric
//! across runs. Writing them is `runs.rs`'s.

use chrono::{DateTime, Utc};

use super::rows::{EndpointRow, RunRow, TimelineSeconds, convert, select_runs};
use super::{Store, StoreError, from_millis, on_pool, to_millis};
use crate::model::{EndpointResult, Metric, OVERALL_ENDPOINT, Run, RunDetail, RunId, TimelinePoint, TrendPoint};

/// The trend query for one stored column.
macro_rules! trend_query {
    ($column:literal) => {
        concat!(
            "select runs.id as run_id, runs.started_at, runs.build_id, runs.status, cast(r.",
            $column,
            " as double precision) as value from endpoint_results r join runs on runs.id = r.run_id \
             join scenarios on scenarios.id = runs.scenario_id where scenarios.name = $1 and r.endpoint = $2 \
             and runs.started_at >= $3 and runs.started_at < $4 order by runs.started_at, runs.id"
        )
    };
}

#[derive(sqlx_macros::FromRow)]
struct TrendRow {
    run_id: i64,
    started_at: i64,
    build_id: Option<String>,
    status: String,
    value: f64,
}
impl Store {
    /// One run, without its results.
    pub async fn find_run(&self, id: RunId) -> Result<Option<Run>, StoreError> {
        let query = concat!(select_runs!(), "where runs.id = $1");
        let row: Option<RunRow> = on_pool!(self, |pool| sqlx::query_as(query).bind(id).fetch_optional(pool).await?);
        row.map(Run::try_from).transpose()
    }

    /// One run with its per-endpoint results (the overall row first), or `None` if there is no such run.
    pub async fn run_detail(&self, id: RunId) -> Result<Option<RunDetail>, StoreError> {
        let Some(run) = self.find_run(id).await? else { return Ok(None) };
        let query = "select endpoint, requests, errors, rate, p50_us, p75_us, p90_us, p95_us, p99_us, p999_us, max_us, \
                     mean_us, errors_by_class, error_samples, histogram, p50_lo_us, p50_hi_us, p95_lo_us, p95_hi_us, \
                     p99_lo_us, p99_hi_us, error_pct_lo, error_pct_hi from endpoint_results where run_id = $1 \
                     order by endpoint";
        let rows: Vec<EndpointRow> = on_pool!(self, |pool| sqlx::query_as(query).bind(id).fetch_all(pool).await?);
        let mut endpoints: Vec<EndpointResult> = convert(rows)?;
        endpoints.sort_by_key(|e| e.endpoint != OVERALL_ENDPOINT);
        Ok(Some(RunDetail { run, endpoints }))
    }

    /// A run's per-second timeline, by endpoint then second. It is read as one row per endpoint, its seconds
    /// joined into one text in the database: the SQLite driver hands every row across threads, and the 12,000
    /// rows of a 10-minute run of 20 endpoints took 80–150 ms a page that way, against a few ms for 20 rows.
    pub async fn timeline(&self, id: RunId) -> Result<Vec<TimelinePoint>, StoreError> {
        // One line per second, fields split by spaces, the JSON of error classes last (it may hold spaces, never
        // a raw line break). The seconds are put in order here: an `order by` inside `string_agg` made SQLite
        // sort every endpoint's seconds through a temporary b-tree, a third of a comparison page's time.
        let query = "select endpoint, string_agg(cast(elapsed_s as text) || ' ' || cast(requests as text) || ' ' \
                     || cast(errors as text) || ' ' || cast(p50_us as text) || ' ' || cast(p99_us as text) || ' ' \
                     || cast(max_us as text) || ' ' || errors_by_class, '\n') as seconds \
                     from timeline where run_id = $1 group by endpoint order by endpoint";
        let rows: Vec<TimelineSeconds> = on_pool!(self, |pool| sqlx::query_as(query).bind(id).fetch_all(pool).await?);
        let mut endpoints = rows.into_iter().map(TimelineSeconds::points).collect::<Result<Vec<_>, _>>()?;
        // Usually in order already (the primary key's), which a stable sort only checks.
        for seconds in &mut endpoints {
            seconds.sort_by_key(|p| p.elapsed_s);
        }
        Ok(endpoints.concat())
    }

    /// Runs of `scenario` that started in `[from, to)`, oldest first, whatever their status.
    pub async fn runs_between(
        &self,
        scenario: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<Run>, StoreError> {
        let query = concat!(
            select_runs!(),
            "where scenarios.name = $1 and runs.started_at >= $2 and runs.started_at < $3 order by runs.started_at, runs.id"
        );
        let rows: Vec<RunRow> = on_pool!(self, |pool| sqlx::query_as(query)
            .bind(scenario)
            .bind(to_millis(from))
            .bind(to_millis(to))
            .fetch_all(pool)
            .await?);
        convert(rows)
    }

    /// The `count` most recent runs of `scenario`, newest first, whatever their status.
    pub async fn last_runs(&self, scenario: &str, count: u32) -> Result<Vec<Run>, StoreError> {
        let query =
            concat!(select_runs!(), "where scenarios.name = $1 order by runs.started_at desc, runs.id desc limit $2");
        let rows: Vec<RunRow> =
            on_pool!(self, |pool| sqlx::query_as(query).bind(scenario).bind(i64::from(count)).fetch_all(pool).await?);
        convert(rows)
    }

    /// The measured run of the same scenario and workload series that started just before run `id`, if any.
    pub async fn previous_run(&self, id: RunId) -> Result<Option<RunId>, StoreError> {
        let query = "select earlier.id from runs earlier join runs this on this.scenario_id = earlier.scenario_id \
                     and this.scenario_hash = earlier.scenario_hash \
                     where this.id = $1 and earlier.status not in ('running', 'failed', 'aborted') \
                     and (earlier.started_at < this.started_at \
                     or (earlier.started_at = this.started_at and earlier.id < this.id)) \
                     order by earlier.started_at desc, earlier.id desc limit 1";
        Ok(on_pool!(self, |pool| sqlx::query_scalar(query).bind(id).fetch_optional(pool).await?))
    }

    /// The names of every scenario that has been run, alphabetically.
    pub async fn scenario_names(&self) -> Result<Vec<String>, StoreError> {
        let query = "select name from scenarios order by name";
        Ok(on_pool!(self, |pool| sqlx::query_scalar(query).fetch_all(pool).await?))
    }

    /// One endpoint metric of `scenario` across the runs that started in `[from, to)`, oldest first.
    /// Runs of every status that stored results are included, so charts can mark invalid and regressed nights.
    pub async fn trend(
        &self,
        scenario: &str,
        endpoint: &str,
        metric: Metric,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<TrendPoint>, StoreError> {
        let query = match metric {
            Metric::P50 => trend_query!("p50_us"),
            Metric::P75 => trend_query!("p75_us"),
            Metric::P90 => trend_query!("p90_us"),
            Metric::P95 => trend_query!("p95_us"),
            Metric::P99 => trend_query!("p99_us"),
            Metric::P999 => trend_query!("p999_us"),
            Metric::Max => trend_query!("max_us"),
            Metric::Mean => trend_query!("mean_us"),
            Metric::ErrorRate => trend_query!("error_pct"),
            Metric::Throughput => trend_query!("rate"),
        };
        let rows: Vec<TrendRow> = on_pool!(self, |pool| sqlx::query_as(query)
            .bind(scenario)
            .bind(endpoint)
            .bind(to_millis(from))
            .bind(to_millis(to))
            .fetch_all(pool)
            .await?);
        // Latencies are stored in microseconds and shown in milliseconds.
        let scale = if metric.unit() == "ms" { 1000.0 } else { 1.0 };
        rows.into_iter()
            .map(|row| {
                let TrendRow { run_id, started_at, build_id, status, value } = row;
                Ok(TrendPoint {
                    run_id,
                    started_at: from_millis(started_at),
                    build_id,
                    status: status.parse().map_err(StoreError::Corrupt)?,
                    value: value / scale,
                })
            })
            .collect()
    }
}
