//! A run's telemetry: each source's outcome, its series with their summaries, and their values. Written in a
//! transaction of its own after the run's results ([`Store::save_telemetry`]), so telemetry that cannot be
//! stored never loses the night; read back for the run page ([`Store::telemetry`]) and, without its values,
//! for the judge ([`Store::telemetry_summaries`]).

use sqlx::QueryBuilder;

use super::retry::retry_busy;
use super::{Store, StoreError, ensure_finite, in_transaction, on_pool};
use crate::model::{RunId, RunTelemetry, SeriesSummary, SeriesTelemetry, SourceTelemetry, TelemetryPoint};
use crate::outside_text::storable;

/// Values written per statement: 5 binds each, far below both backends' bind limits.
const POINTS_PER_INSERT: usize = 200;

#[derive(sqlx_macros::FromRow)]
struct SourceRow {
    source: String,
    status: String,
    reason: Option<String>,
    scrapes: i64,
    failed_scrapes: i64,
}

#[derive(sqlx_macros::FromRow)]
struct SeriesRow {
    source: String,
    series: String,
    unit: String,
    count_unit: Option<String>,
    kind: String,
    worse: String,
    status: String,
    reason: Option<String>,
    mean: Option<f64>,
    max: Option<f64>,
    per_1000_requests: Option<f64>,
}

#[derive(sqlx_macros::FromRow)]
struct PointRow {
    source: String,
    series: String,
    elapsed_ms: i64,
    value: f64,
}

impl Store {
    /// Stores what the run's telemetry sources gave, in one transaction.
    pub async fn save_telemetry(&self, run_id: RunId, telemetry: &RunTelemetry) -> Result<(), StoreError> {
        ensure_finite(telemetry.sources.iter().flat_map(|source| {
            source.series.iter().flat_map(move |series| {
                let name = move |what: &str| format!("telemetry {} {} {what}", source.name, series.name);
                let summary = series.summary.iter().flat_map(move |s| {
                    [
                        (name("mean"), s.mean),
                        (name("max"), s.max),
                        (name("per 1,000"), s.per_1000_requests.unwrap_or(0.0)),
                    ]
                });
                series.points.iter().map(move |p| (name("value"), p.value)).chain(summary)
            })
        }))?;
        retry_busy(|| self.save_telemetry_once(run_id, telemetry)).await
    }

    async fn save_telemetry_once(&self, run_id: RunId, telemetry: &RunTelemetry) -> Result<(), StoreError> {
        let insert_source = "insert into telemetry_sources (run_id, source, position, status, reason, scrapes, \
                             failed_scrapes) values ($1, $2, $3, $4, $5, $6, $7)";
        let insert_series = "insert into telemetry_series (run_id, source, series, position, unit, count_unit, kind, \
                             worse, status, reason, mean, max, per_1000_requests) \
                             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)";
        let points_head = "insert into telemetry_points (run_id, source, series, elapsed_ms, value) ";
        // Stored again after a dropped connection whose transaction had committed: replaced, never doubled.
        in_transaction!(self, |tx| {
            sqlx::query("delete from telemetry_points where run_id = $1").bind(run_id).execute(&mut *tx).await?;
            sqlx::query("delete from telemetry_series where run_id = $1").bind(run_id).execute(&mut *tx).await?;
            sqlx::query("delete from telemetry_sources where run_id = $1").bind(run_id).execute(&mut *tx).await?;
            for (position, source) in telemetry.sources.iter().enumerate() {
                sqlx::query(insert_source)
                    .bind(run_id)
                    .bind(storable(&source.name).into_owned())
                    .bind(position as i64)
                    .bind(source.status.as_str())
                    .bind(source.reason.as_deref().map(|r| storable(r).into_owned()))
                    .bind(i64::from(source.scrapes))
                    .bind(i64::from(source.failed_scrapes))
                    .execute(&mut *tx)
                    .await?;
                for (position, series) in source.series.iter().enumerate() {
                    let summary = series.summary;
                    sqlx::query(insert_series)
                        .bind(run_id)
                        .bind(storable(&source.name).into_owned())
                        .bind(storable(&series.name).into_owned())
                        .bind(position as i64)
                        .bind(storable(&series.unit).into_owned())
                        .bind(series.count_unit.as_deref().map(|u| storable(u).into_owned()))
                        .bind(series.kind.as_str())
                        .bind(series.worse.as_str())
                        .bind(series.status.as_str())
                        .bind(series.reason.as_deref().map(|r| storable(r).into_owned()))
                        .bind(summary.map(|s| s.mean))
                        .bind(summary.map(|s| s.max))
                        .bind(summary.and_then(|s| s.per_1000_requests))
                        .execute(&mut *tx)
                        .await?;
                    for chunk in series.points.chunks(POINTS_PER_INSERT) {
                        let mut insert = QueryBuilder::new(points_head);
                        insert.push_values(chunk, |mut row, point| {
                            row.push_bind(run_id)
                                .push_bind(storable(&source.name).into_owned())
                                .push_bind(storable(&series.name).into_owned())
                                .push_bind(point.elapsed_ms)
                                .push_bind(point.value);
                        });
                        insert.build().execute(&mut *tx).await?;
                    }
                }
            }
        });
        Ok(())
    }

    /// A run's telemetry, sources and series in the configuration's order; empty when it had none.
    pub async fn telemetry(&self, run_id: RunId) -> Result<RunTelemetry, StoreError> {
        let mut telemetry = self.telemetry_summaries(run_id).await?;
        let points = "select source, series, elapsed_ms, value from telemetry_points where run_id = $1 \
                      order by source, series, elapsed_ms";
        let points: Vec<PointRow> = on_pool!(self, |pool| sqlx::query_as(points).bind(run_id).fetch_all(pool).await?);
        for PointRow { source, series, elapsed_ms, value } in points {
            let owner = telemetry.sources.iter_mut().find(|s| s.name == source);
            if let Some(kept) = owner.and_then(|s| s.series.iter_mut().find(|s| s.name == series)) {
                kept.points.push(TelemetryPoint { elapsed_ms, value });
            }
        }
        Ok(telemetry)
    }

    /// A run's telemetry without the series' values: each source's outcome and each series' summary, what the
    /// judge reads of a night.
    pub async fn telemetry_summaries(&self, run_id: RunId) -> Result<RunTelemetry, StoreError> {
        let sources = "select source, status, reason, scrapes, failed_scrapes from telemetry_sources \
                       where run_id = $1 order by position";
        let series = "select source, series, unit, count_unit, kind, worse, status, reason, mean, max, \
                      per_1000_requests from telemetry_series where run_id = $1 order by position";
        let (sources, series): (Vec<SourceRow>, Vec<SeriesRow>) = on_pool!(self, |pool| (
            sqlx::query_as(sources).bind(run_id).fetch_all(pool).await?,
            sqlx::query_as(series).bind(run_id).fetch_all(pool).await?,
        ));
        let mut telemetry =
            RunTelemetry { sources: sources.into_iter().map(SourceRow::into_source).collect::<Result<_, _>>()? };
        for row in series {
            let source = row.source.clone();
            let series = row.into_series()?;
            if let Some(owner) = telemetry.sources.iter_mut().find(|s| s.name == source) {
                owner.series.push(series);
            }
        }
        Ok(telemetry)
    }
}

impl SourceRow {
    fn into_source(self) -> Result<SourceTelemetry, StoreError> {
        let Self { source, status, reason, scrapes, failed_scrapes } = self;
        Ok(SourceTelemetry {
            name: source,
            status: status.parse().map_err(StoreError::Corrupt)?,
            reason,
            scrapes: u32::try_from(scrapes).unwrap_or(u32::MAX),
            failed_scrapes: u32::try_from(failed_scrapes).unwrap_or(u32::MAX),
            series: Vec::new(),
        })
    }
}

impl SeriesRow {
    /// The series without its values, which are read apart.
    fn into_series(self) -> Result<SeriesTelemetry, StoreError> {
        let Self { source: _, series, unit, count_unit, kind, worse, status, reason, mean, max, per_1000_requests } =
            self;
        Ok(SeriesTelemetry {
            name: series,
            unit,
            count_unit,
            kind: kind.parse().map_err(StoreError::Corrupt)?,
            worse: worse.parse().map_err(StoreError::Corrupt)?,
            status: status.parse().map_err(StoreError::Corrupt)?,
            reason,
            points: Vec::new(),
            summary: mean.zip(max).map(|(mean, max)| SeriesSummary { mean, max, per_1000_requests }),
        })
    }
}
