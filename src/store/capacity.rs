//! A capacity night's search: its result and every step, written in one transaction after the run's own
//! results ([`Store::save_capacity`]) and read back for the judge and the pages ([`Store::capacity`],
//! [`Store::capacities`], and night over night [`Store::capacity_trend`]).

use chrono::{DateTime, Utc};

use super::retry::retry_busy;
use super::trends::MAX_RUN_POINTS;
use super::{Store, StoreError, TrendSpan, ensure_finite, from_millis, in_transaction, on_pool, to_millis};
use crate::model::{CapacityResult, CapacityStep, RunId, ZoneBreach};

/// The capacity nights of a span's series, newest first, at most [`MAX_RUN_POINTS`].
const TREND: &str = "select c.run_id, c.capacity, c.first_out, c.ended, c.breach_gate, c.breach_endpoint, \
                     c.breach_value, c.breach_limit, c.search_secs, c.zone, r.started_at, r.build_id, \
                     cast(case when exists (select 1 from findings f where f.verdict_id = \
                     (select max(v.id) from verdicts v where v.run_id = r.id) \
                     and f.metric = 'capacity' and f.outcome = 'regression') then 1 else 0 end as bigint) as fell \
                     from capacity_results c join runs r on r.id = c.run_id \
                     join scenarios s on s.id = r.scenario_id \
                     where s.name = $1 and r.started_at >= $2 and r.started_at < $3 and r.scenario_hash = $4 \
                     order by r.started_at desc, r.id desc limit $5";

/// One night's capacity, for the scenario page.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacityNight {
    /// The run.
    pub run_id: RunId,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// The build it measured.
    pub build_id: Option<String>,
    /// What its search found (without its steps).
    pub result: CapacityResult,
    /// Whether its latest verdict judged the capacity fallen (a capacity regression).
    pub fell: bool,
}

#[derive(sqlx_macros::FromRow)]
struct NightRow {
    #[sqlx(flatten)]
    result: ResultRow,
    started_at: i64,
    build_id: Option<String>,
    fell: i64,
}
use crate::outside_text::storable;

#[derive(sqlx_macros::FromRow)]
struct ResultRow {
    run_id: i64,
    capacity: Option<f64>,
    first_out: Option<f64>,
    ended: String,
    breach_gate: Option<String>,
    breach_endpoint: Option<String>,
    breach_value: Option<f64>,
    breach_limit: Option<f64>,
    search_secs: f64,
    zone: Option<String>,
}

#[derive(sqlx_macros::FromRow)]
struct StepRow {
    rate: f64,
    achieved_rate: f64,
    holds: i64,
    verdict: String,
    requests: i64,
    errors: i64,
    p75_ms: Option<f64>,
    p95_ms: Option<f64>,
    p99_ms: Option<f64>,
    breach_gate: Option<String>,
    breach_endpoint: Option<String>,
    breach_value: Option<f64>,
    breach_limit: Option<f64>,
    reason: String,
}

/// A breach as its four columns.
type BreachColumns = (Option<&'static str>, Option<String>, Option<f64>, Option<f64>);

fn breach_columns(breach: Option<&ZoneBreach>) -> BreachColumns {
    match breach {
        Some(b) => (Some(b.gate.as_str()), Some(storable(&b.endpoint).into_owned()), Some(b.value), Some(b.limit)),
        None => (None, None, None, None),
    }
}

fn breach_from(
    gate: Option<String>,
    endpoint: Option<String>,
    value: Option<f64>,
    limit: Option<f64>,
) -> Result<Option<ZoneBreach>, StoreError> {
    let (Some(gate), Some(endpoint), Some(value), Some(limit)) = (gate, endpoint, value, limit) else {
        return Ok(None);
    };
    Ok(Some(ZoneBreach { gate: gate.parse().map_err(StoreError::Corrupt)?, endpoint, value, limit }))
}

impl Store {
    /// Stores a run's capacity search, its result and steps in one transaction.
    pub async fn save_capacity(&self, run_id: RunId, result: &CapacityResult) -> Result<(), StoreError> {
        let breaches = result.breach.iter().chain(result.steps.iter().filter_map(|s| s.breach.as_ref()));
        let figures = result.steps.iter().flat_map(|s| {
            let optional = [s.p75_ms, s.p95_ms, s.p99_ms].into_iter().flatten();
            [s.rate, s.achieved_rate].into_iter().chain(optional).map(|v| ("capacity step".to_owned(), v))
        });
        let bounds = [result.capacity, result.first_out].into_iter().flatten().chain([result.search_secs]);
        ensure_finite(
            breaches.flat_map(|b| [b.value, b.limit]).chain(bounds).map(|v| ("capacity".to_owned(), v)).chain(figures),
        )?;
        retry_busy(|| self.save_capacity_once(run_id, result)).await
    }

    async fn save_capacity_once(&self, run_id: RunId, result: &CapacityResult) -> Result<(), StoreError> {
        let insert_result = "insert into capacity_results (run_id, capacity, first_out, ended, breach_gate, \
                             breach_endpoint, breach_value, breach_limit, search_secs, zone) \
                             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
        let insert_step = "insert into capacity_steps (run_id, position, rate, achieved_rate, holds, verdict, \
                           requests, errors, p75_ms, p95_ms, p99_ms, breach_gate, breach_endpoint, breach_value, \
                           breach_limit, reason) \
                           values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)";
        // Stored again after a dropped connection whose transaction had committed: replaced, never doubled.
        in_transaction!(self, |tx| {
            sqlx::query("delete from capacity_steps where run_id = $1").bind(run_id).execute(&mut *tx).await?;
            sqlx::query("delete from capacity_results where run_id = $1").bind(run_id).execute(&mut *tx).await?;
            let (gate, endpoint, value, limit) = breach_columns(result.breach.as_ref());
            sqlx::query(insert_result)
                .bind(run_id)
                .bind(result.capacity)
                .bind(result.first_out)
                .bind(result.ended.as_str())
                .bind(gate)
                .bind(endpoint)
                .bind(value)
                .bind(limit)
                .bind(result.search_secs)
                .bind(result.zone.as_deref())
                .execute(&mut *tx)
                .await?;
            for (position, step) in result.steps.iter().enumerate() {
                let (gate, endpoint, value, limit) = breach_columns(step.breach.as_ref());
                sqlx::query(insert_step)
                    .bind(run_id)
                    .bind(position as i64)
                    .bind(step.rate)
                    .bind(step.achieved_rate)
                    .bind(i64::from(step.holds))
                    .bind(step.verdict.as_str())
                    .bind(step.requests)
                    .bind(step.errors)
                    .bind(step.p75_ms)
                    .bind(step.p95_ms)
                    .bind(step.p99_ms)
                    .bind(gate)
                    .bind(endpoint)
                    .bind(value)
                    .bind(limit)
                    .bind(storable(&step.reason).into_owned())
                    .execute(&mut *tx)
                    .await?;
            }
        });
        Ok(())
    }

    /// A run's capacity search with its steps; `None` when the run had none.
    pub async fn capacity(&self, run_id: RunId) -> Result<Option<CapacityResult>, StoreError> {
        let head = "select run_id, capacity, first_out, ended, breach_gate, breach_endpoint, breach_value, \
                    breach_limit, search_secs, zone from capacity_results where run_id = $1";
        let steps = "select rate, achieved_rate, holds, verdict, requests, errors, p75_ms, p95_ms, p99_ms, \
                     breach_gate, breach_endpoint, breach_value, breach_limit, reason from capacity_steps \
                     where run_id = $1 order by position";
        let (head, steps): (Option<ResultRow>, Vec<StepRow>) = on_pool!(self, |pool| (
            sqlx::query_as(head).bind(run_id).fetch_optional(pool).await?,
            sqlx::query_as(steps).bind(run_id).fetch_all(pool).await?,
        ));
        let Some(head) = head else { return Ok(None) };
        let mut result = head.into_result()?.1;
        result.steps = steps.into_iter().map(StepRow::into_step).collect::<Result<_, _>>()?;
        Ok(Some(result))
    }

    /// The capacity results of `runs` (without their steps), in the order given; runs without one are left out.
    pub async fn capacities(&self, runs: &[RunId]) -> Result<Vec<(RunId, CapacityResult)>, StoreError> {
        let head = "select run_id, capacity, first_out, ended, breach_gate, breach_endpoint, breach_value, \
                    breach_limit, search_secs, zone from capacity_results where run_id = $1";
        let mut found = Vec::with_capacity(runs.len());
        for &run in runs {
            let row: Option<ResultRow> =
                on_pool!(self, |pool| sqlx::query_as(head).bind(run).fetch_optional(pool).await?);
            if let Some(row) = row {
                found.push(row.into_result()?);
            }
        }
        Ok(found)
    }
}

impl Store {
    /// The capacity of the span's newest [`MAX_RUN_POINTS`] nights that ran a search, oldest first.
    pub async fn capacity_trend(&self, span: TrendSpan<'_>) -> Result<Vec<CapacityNight>, StoreError> {
        let rows: Vec<NightRow> = on_pool!(self, |pool| sqlx::query_as(TREND)
            .bind(span.scenario)
            .bind(to_millis(span.from))
            .bind(to_millis(span.to))
            .bind(span.series)
            .bind(MAX_RUN_POINTS)
            .fetch_all(pool)
            .await?);
        let mut nights = Vec::with_capacity(rows.len());
        for NightRow { result, started_at, build_id, fell } in rows.into_iter().rev() {
            let (run_id, result) = result.into_result()?;
            let started_at = from_millis(started_at);
            nights.push(CapacityNight { run_id, started_at, build_id, result, fell: fell != 0 });
        }
        Ok(nights)
    }
}

impl ResultRow {
    fn into_result(self) -> Result<(RunId, CapacityResult), StoreError> {
        let Self {
            run_id,
            capacity,
            first_out,
            ended,
            breach_gate,
            breach_endpoint,
            breach_value,
            breach_limit,
            search_secs,
            zone,
        } = self;
        let result = CapacityResult {
            capacity,
            first_out,
            breach: breach_from(breach_gate, breach_endpoint, breach_value, breach_limit)?,
            ended: ended.parse().map_err(StoreError::Corrupt)?,
            search_secs,
            steps: Vec::new(),
            zone,
        };
        Ok((run_id, result))
    }
}

impl StepRow {
    fn into_step(self) -> Result<CapacityStep, StoreError> {
        Ok(CapacityStep {
            rate: self.rate,
            achieved_rate: self.achieved_rate,
            holds: u32::try_from(self.holds).unwrap_or(u32::MAX),
            verdict: self.verdict.parse().map_err(StoreError::Corrupt)?,
            requests: self.requests,
            errors: self.errors,
            p75_ms: self.p75_ms,
            p95_ms: self.p95_ms,
            p99_ms: self.p99_ms,
            breach: breach_from(self.breach_gate, self.breach_endpoint, self.breach_value, self.breach_limit)?,
            reason: self.reason,
        })
    }
}
