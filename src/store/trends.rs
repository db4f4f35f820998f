//! Trend pages in one query: every endpoint of a scenario over a time range, merged in the database into at
//! most a fixed number of time buckets. Ranges over 120 days read `weekly_results` (kept up to date by
//! `finish_run`), so a page over three years reads about as few rows as one over three months.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::{Store, StoreError, from_millis, on_pool, to_millis};

/// The runs of one endpoint that started within one time bucket, averaged. Latencies are in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrendBucket {
    /// Step name, or `(all)`.
    pub endpoint: String,
    /// When the bucket's first run started.
    pub started_at: DateTime<Utc>,
    /// How many runs the bucket holds (one, for ranges shorter than the bucket count in nights).
    pub runs: i64,
    /// Mean of the runs' p50, ms.
    pub p50_ms: f64,
    /// Mean of the runs' p95, ms.
    pub p95_ms: f64,
    /// Mean of the runs' p99, ms.
    pub p99_ms: f64,
    /// Mean of the runs' error rates, percent.
    pub error_pct: f64,
    /// Mean of the runs' throughput, requests per second.
    pub rate: f64,
    /// Runs in the bucket judged `regressed` with a finding on this endpoint (per-run ranges only; 0 over
    /// weekly sums): a regression on one route does not mark every route's chart.
    pub regressed: i64,
    /// Runs in the bucket marked `invalid` (per-run ranges only; 0 over weekly sums).
    pub invalid: i64,
    /// The newest build in the bucket (per-run ranges only).
    pub build_id: Option<String>,
}

/// Ranges longer than this read the weekly sums instead of every run.
const WEEKLY_FROM: Duration = Duration::days(120);

/// Every run's figures in the range, averaged per bucket.
const PER_RUN: &str = "select r.endpoint, min(runs.started_at) as started_at, count(*) as runs, \
    cast(avg(r.p50_us) as double precision) as p50_us, cast(avg(r.p95_us) as double precision) as p95_us, \
    cast(avg(r.p99_us) as double precision) as p99_us, cast(avg(r.error_pct) as double precision) as error_pct, \
    cast(avg(r.rate) as double precision) as rate, \
    sum(case when runs.status = 'regressed' and exists (select 1 from findings f \
        where f.verdict_id = (select max(v.id) from verdicts v where v.run_id = runs.id) \
        and f.endpoint = r.endpoint and f.outcome in ('regression', 'gate_breached')) then 1 else 0 end) as regressed, \
    sum(case when runs.status = 'invalid' then 1 else 0 end) as invalid, max(runs.build_id) as build_id \
    from endpoint_results r join runs on runs.id = r.run_id join scenarios on scenarios.id = runs.scenario_id \
    where scenarios.name = $1 and runs.started_at >= $2 and runs.started_at < $3 \
    group by r.endpoint, (runs.started_at - $2) / $4 order by r.endpoint, started_at";

/// The weekly sums in the range, merged per bucket (weighted by their run counts).
const WEEKLY: &str = "select w.endpoint, min(w.first_started_at) as started_at, cast(sum(w.runs) as bigint) as runs, \
    cast(sum(w.sum_p50_us) / sum(w.runs) as double precision) as p50_us, \
    cast(sum(w.sum_p95_us) / sum(w.runs) as double precision) as p95_us, \
    cast(sum(w.sum_p99_us) / sum(w.runs) as double precision) as p99_us, \
    cast(sum(w.sum_error_pct) / sum(w.runs) as double precision) as error_pct, \
    cast(sum(w.sum_rate) / sum(w.runs) as double precision) as rate, \
    cast(0 as bigint) as regressed, cast(0 as bigint) as invalid, cast(null as text) as build_id \
    from weekly_results w join scenarios on scenarios.id = w.scenario_id \
    where scenarios.name = $1 and w.first_started_at >= $2 and w.first_started_at < $3 \
    group by w.endpoint, (w.first_started_at - $2) / $4 order by w.endpoint, started_at";

#[derive(sqlx::FromRow)]
struct BucketRow {
    endpoint: String,
    started_at: i64,
    runs: i64,
    p50_us: f64,
    p95_us: f64,
    p99_us: f64,
    error_pct: f64,
    rate: f64,
    regressed: i64,
    invalid: i64,
    build_id: Option<String>,
}

impl Store {
    /// Every endpoint of `scenario` in `[from, to)`, in at most `buckets` equal time buckets per endpoint,
    /// by endpoint then time. Runs of every status that stored results are included.
    pub async fn trend_buckets(
        &self,
        scenario: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        buckets: u32,
    ) -> Result<Vec<TrendBucket>, StoreError> {
        let first = "select min(runs.started_at) from runs join scenarios on scenarios.id = runs.scenario_id \
                     where scenarios.name = $1";
        let first: Option<i64> =
            on_pool!(self, |pool| sqlx::query_scalar(first).bind(scenario).fetch_one(pool).await?);
        let Some(first) = first else { return Ok(Vec::new()) };
        // The range starts no earlier than the first run, so "all" is split over the real history.
        let from = to_millis(from).max(first);
        let to = to_millis(to);
        let width = ((to - from) / i64::from(buckets.max(1))).max(Duration::minutes(1).num_milliseconds());
        let query = if to - from > WEEKLY_FROM.num_milliseconds() { WEEKLY } else { PER_RUN };
        let rows: Vec<BucketRow> = on_pool!(self, |pool| sqlx::query_as(query)
            .bind(scenario)
            .bind(from)
            .bind(to)
            .bind(width)
            .fetch_all(pool)
            .await?);
        Ok(rows
            .into_iter()
            .map(|row| {
                let BucketRow {
                    endpoint,
                    started_at,
                    runs,
                    p50_us,
                    p95_us,
                    p99_us,
                    error_pct,
                    rate,
                    regressed,
                    invalid,
                    build_id,
                } = row;
                TrendBucket {
                    endpoint,
                    started_at: from_millis(started_at),
                    runs,
                    p50_ms: p50_us / 1000.0,
                    p95_ms: p95_us / 1000.0,
                    p99_ms: p99_us / 1000.0,
                    error_pct,
                    rate,
                    regressed,
                    invalid,
                    build_id,
                }
            })
            .collect())
    }
}
