//! The server's side of a scenario night over night, for its trend page: each telemetry series' summary in
//! every run of one workload series in a range. A night's telemetry is a few rows per run, so the newest
//! [`MAX_RUN_POINTS`] runs of the range are read one by one, however long the range is; older ones are left
//! off, and the page says so.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::trend_rows::failing_outcomes;
use super::trends::{MAX_RUN_POINTS, TrendSpan};
use super::{Store, StoreError, from_millis, on_pool, to_millis};
use crate::model::{RunId, RunStatus, SeriesKind, SeriesSummary, Worse};

/// Whether the run was judged regressed with a failing finding on this series (a telemetry finding's endpoint
/// is its source, its metric starts with the series' name), as 0 or 1.
macro_rules! regressed_series {
    () => {
        concat!(
            "cast(case when runs.status = 'regressed' and exists (select 1 from findings f \
    where f.verdict_id = (select max(v.id) from verdicts v where v.run_id = runs.id) \
    and f.endpoint = s.source and substr(f.metric, 1, length(s.series) + 1) = s.series || ' ' \
    and f.outcome in ",
            failing_outcomes!(),
            ") then 1 else 0 end as bigint)"
        )
    };
}

/// The summaries of every series kept in the newest `$5` measured runs of series `$4` in `[$2, $3)` (ms), by
/// source and series in their configured order, then time. A series with no values that night (its source
/// did not answer) has no summary and is left out: there is nothing to draw.
const NIGHTS: &str = concat!(
    "select runs.id as run_id, runs.started_at, runs.status, runs.build_id, s.source, s.series, \
    s.unit, s.count_unit, s.kind, s.worse, s.mean, s.max, s.per_1000_requests, ",
    regressed_series!(),
    " as regressed from telemetry_series s join runs on runs.id = s.run_id \
    where s.mean is not null and s.max is not null and runs.id in (select runs.id from runs \
        join scenarios on scenarios.id = runs.scenario_id \
        where scenarios.name = $1 and runs.started_at >= $2 and runs.started_at < $3 and runs.scenario_hash = $4 \
        and runs.status not in ('failed', 'aborted') order by runs.started_at desc, runs.id desc limit $5) \
    order by s.position, s.source, s.series, runs.started_at, runs.id"
);

/// How many measured runs of the span have telemetry at all, counted up to one past the runs read.
const COUNT_NIGHTS: &str = "select count(*) from (select 1 from runs join scenarios on scenarios.id = runs.scenario_id \
    where scenarios.name = $1 and runs.started_at >= $2 and runs.started_at < $3 and runs.scenario_hash = $4 \
    and runs.status not in ('failed', 'aborted') \
    and exists (select 1 from telemetry_series s where s.run_id = runs.id) limit $5) counted";

#[derive(sqlx_macros::FromRow)]
struct NightRow {
    run_id: i64,
    started_at: i64,
    status: String,
    build_id: Option<String>,
    source: String,
    series: String,
    unit: String,
    count_unit: Option<String>,
    kind: String,
    worse: String,
    mean: f64,
    max: f64,
    per_1000_requests: Option<f64>,
    regressed: i64,
}

/// One series' summary in one run.
#[allow(missing_docs, reason = "the field names say what they hold, as on `SeriesTelemetry`")]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TelemetryNight {
    pub run_id: RunId,
    pub started_at: DateTime<Utc>,
    pub status: RunStatus,
    pub build_id: Option<String>,
    pub source: String,
    pub series: String,
    pub unit: String,
    pub count_unit: Option<String>,
    pub kind: SeriesKind,
    pub worse: Worse,
    pub summary: SeriesSummary,
    /// The run was judged regressed on this series (a change or a breached limit).
    pub regressed: bool,
}

/// The telemetry of a span's runs: by source and series, then time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TelemetryTrend {
    /// Every series' summary per run.
    pub nights: Vec<TelemetryNight>,
    /// Runs of the range with telemetry that are older than the newest [`MAX_RUN_POINTS`] and left off.
    pub left_off: bool,
}

impl Store {
    /// The telemetry summaries of the span's newest [`MAX_RUN_POINTS`] measured runs (failed and aborted runs
    /// measured no build). The span's bucket count is not used: every run is its own point.
    pub async fn telemetry_trend(&self, span: TrendSpan<'_>) -> Result<TelemetryTrend, StoreError> {
        let (scenario, series) = (span.scenario, span.series);
        let (from, to) = (to_millis(span.from), to_millis(span.to));
        let rows: Vec<NightRow> = on_pool!(self, |pool| sqlx::query_as(NIGHTS)
            .bind(scenario)
            .bind(from)
            .bind(to)
            .bind(series)
            .bind(MAX_RUN_POINTS)
            .fetch_all(pool)
            .await?);
        let counted: i64 = on_pool!(self, |pool| sqlx::query_scalar(COUNT_NIGHTS)
            .bind(scenario)
            .bind(from)
            .bind(to)
            .bind(series)
            .bind(MAX_RUN_POINTS + 1)
            .fetch_one(pool)
            .await?);
        let nights = rows.into_iter().map(NightRow::into_night).collect::<Result<_, _>>()?;
        Ok(TelemetryTrend { nights, left_off: counted > MAX_RUN_POINTS })
    }
}

impl NightRow {
    fn into_night(self) -> Result<TelemetryNight, StoreError> {
        let corrupt = StoreError::Corrupt;
        Ok(TelemetryNight {
            run_id: self.run_id,
            started_at: from_millis(self.started_at),
            status: self.status.parse().map_err(corrupt)?,
            build_id: self.build_id,
            source: self.source,
            series: self.series,
            unit: self.unit,
            count_unit: self.count_unit,
            kind: self.kind.parse().map_err(corrupt)?,
            worse: self.worse.parse().map_err(corrupt)?,
            summary: SeriesSummary { mean: self.mean, max: self.max, per_1000_requests: self.per_1000_requests },
            regressed: self.regressed > 0,
        })
    }
}
