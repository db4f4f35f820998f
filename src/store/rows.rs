//! Rows as the database returns them, and their conversion into the model types.
//!
//! Kept apart from the queries so each conversion (JSON columns, status names, millisecond times) is
//! written once for both backends.

use std::collections::BTreeMap;

use hdrhistogram::serialization::Deserializer;
use serde::de::DeserializeOwned;

use super::{StoreError, from_millis};
use crate::model::{EndpointResult, Finding, Interval, Intervals, Run, RunStatus, TimelinePoint};

pub(super) fn json<T: DeserializeOwned>(column: &str, text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{column}: {e}")))
}

pub(super) fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("maps, lists and plain structs always serialize")
}

/// `select <run columns> from runs join scenarios`, as a literal so `concat!` can complete each query.
macro_rules! select_runs {
    () => {
        "select runs.id, scenarios.name as scenario, runs.build_id, runs.status, runs.started_at, \
         runs.finished_at, runs.scenario_hash, runs.seed, runs.validity_reasons, runs.load_summary, \
         runs.failure_reason, runs.segments from runs join scenarios on scenarios.id = runs.scenario_id "
    };
}

pub(super) use select_runs;

#[derive(sqlx_macros::FromRow)]
pub(super) struct RunRow {
    id: i64,
    scenario: String,
    build_id: Option<String>,
    status: String,
    started_at: i64,
    finished_at: Option<i64>,
    scenario_hash: String,
    seed: i64,
    validity_reasons: String,
    load_summary: Option<String>,
    failure_reason: Option<String>,
    segments: i64,
}

impl TryFrom<RunRow> for Run {
    type Error = StoreError;

    fn try_from(row: RunRow) -> Result<Self, StoreError> {
        let RunRow {
            id,
            scenario,
            build_id,
            status,
            started_at,
            finished_at,
            scenario_hash,
            seed,
            validity_reasons,
            load_summary,
            failure_reason,
            segments,
        } = row;
        Ok(Run {
            id,
            scenario,
            build_id,
            status: status.parse::<RunStatus>().map_err(StoreError::Corrupt)?,
            started_at: from_millis(started_at),
            finished_at: finished_at.map(from_millis),
            scenario_hash,
            seed,
            validity_reasons: json("runs.validity_reasons", &validity_reasons)?,
            load_summary: load_summary.map(|s| json("runs.load_summary", &s)).transpose()?,
            failure_reason,
            segments: u32::try_from(segments).map_err(|_| StoreError::Corrupt(format!("runs.segments: {segments}")))?,
        })
    }
}

#[derive(sqlx_macros::FromRow)]
pub(super) struct EndpointRow {
    endpoint: String,
    requests: i64,
    errors: i64,
    rate: f64,
    p50_us: i64,
    p75_us: i64,
    p90_us: i64,
    p95_us: i64,
    p99_us: i64,
    p999_us: i64,
    max_us: i64,
    mean_us: f64,
    errors_by_class: String,
    error_samples: String,
    histogram: Vec<u8>,
    p50_lo_us: Option<i64>,
    p50_hi_us: Option<i64>,
    p95_lo_us: Option<i64>,
    p95_hi_us: Option<i64>,
    p99_lo_us: Option<i64>,
    p99_hi_us: Option<i64>,
    error_pct_lo: Option<f64>,
    error_pct_hi: Option<f64>,
}

impl EndpointRow {
    /// The stored intervals; rows stored before they were kept get them from their histogram.
    fn intervals(&self) -> Intervals {
        let us = |lo: Option<i64>, hi: Option<i64>| lo.map(|lo| Interval { lo: lo as f64, hi: hi.map(|hi| hi as f64) });
        if self.p50_lo_us.is_none() && self.error_pct_lo.is_none() {
            let histogram = Deserializer::new().deserialize::<u64, _>(&mut self.histogram.as_slice()).ok();
            let histogram = histogram.unwrap_or_else(crate::metrics::new_histogram);
            return crate::metrics::intervals(&histogram, self.errors.max(0) as u64, self.requests.max(0) as u64);
        }
        Intervals {
            p50_us: us(self.p50_lo_us, self.p50_hi_us),
            p95_us: us(self.p95_lo_us, self.p95_hi_us),
            p99_us: us(self.p99_lo_us, self.p99_hi_us),
            error_pct: self.error_pct_lo.map(|lo| Interval { lo, hi: self.error_pct_hi }),
        }
    }
}

impl TryFrom<EndpointRow> for EndpointResult {
    type Error = StoreError;

    fn try_from(row: EndpointRow) -> Result<Self, StoreError> {
        let intervals = row.intervals();
        let EndpointRow {
            endpoint,
            requests,
            errors,
            rate,
            p50_us,
            p75_us,
            p90_us,
            p95_us,
            p99_us,
            p999_us,
            max_us,
            mean_us,
            errors_by_class,
            error_samples,
            histogram,
            ..
        } = row;
        Ok(EndpointResult {
            endpoint,
            requests,
            errors,
            rate,
            p50_us,
            p75_us,
            p90_us,
            p95_us,
            p99_us,
            p999_us,
            max_us,
            mean_us,
            errors_by_class: json("endpoint_results.errors_by_class", &errors_by_class)?,
            error_samples: json("endpoint_results.error_samples", &error_samples)?,
            intervals,
            histogram,
        })
    }
}

/// One endpoint's timeline as `Store::timeline` reads it: a line per second, `elapsed requests errors p50 p99
/// max {errors by class}`.
#[derive(sqlx_macros::FromRow)]
pub(super) struct TimelineSeconds {
    endpoint: String,
    seconds: String,
}

impl TimelineSeconds {
    /// The endpoint's seconds, in order.
    pub(super) fn points(self) -> Result<Vec<TimelinePoint>, StoreError> {
        let Self { endpoint, seconds } = self;
        let corrupt = |line: &str| StoreError::Corrupt(format!("timeline of `{endpoint}`: unreadable second `{line}`"));
        seconds
            .split('\n')
            .map(|line| {
                let mut fields = line.splitn(7, ' ');
                let mut number = || fields.next().and_then(|f| f.parse::<i64>().ok()).ok_or_else(|| corrupt(line));
                let (elapsed_s, requests, errors) = (number()?, number()?, number()?);
                let (p50_us, p99_us, max_us) = (number()?, number()?, number()?);
                let classes = fields.next().ok_or_else(|| corrupt(line))?;
                // Most seconds have no errors: a run page reads thousands of them, so `{}` skips the parser.
                let errors_by_class: BTreeMap<String, i64> =
                    if classes == "{}" { BTreeMap::new() } else { json("timeline.errors_by_class", classes)? };
                let endpoint = endpoint.clone();
                Ok(TimelinePoint { endpoint, elapsed_s, requests, errors, p50_us, p99_us, max_us, errors_by_class })
            })
            .collect()
    }
}

#[derive(sqlx_macros::FromRow)]
pub(super) struct FindingRow {
    endpoint: String,
    metric: String,
    outcome: String,
    baseline_value: Option<f64>,
    candidate_value: f64,
    delta_pct: Option<f64>,
    limit_value: Option<f64>,
    interval_lo: Option<f64>,
    interval_hi: Option<f64>,
    p_value: Option<f64>,
    reason: String,
}

impl TryFrom<FindingRow> for Finding {
    type Error = StoreError;

    fn try_from(row: FindingRow) -> Result<Self, StoreError> {
        let FindingRow {
            endpoint,
            metric,
            outcome,
            baseline_value,
            candidate_value,
            delta_pct,
            limit_value,
            interval_lo,
            interval_hi,
            p_value,
            reason,
        } = row;
        Ok(Finding {
            endpoint,
            metric,
            outcome: outcome.parse().map_err(StoreError::Corrupt)?,
            baseline_value,
            candidate_value,
            delta_pct,
            limit: limit_value,
            interval: interval_lo.map(|lo| Interval { lo, hi: interval_hi }),
            p_value,
            reason,
        })
    }
}

/// Converts every row, stopping at the first unreadable one.
pub(super) fn convert<R, T: TryFrom<R, Error = StoreError>>(rows: Vec<R>) -> Result<Vec<T>, StoreError> {
    rows.into_iter().map(T::try_from).collect()
}
