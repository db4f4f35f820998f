//! `/api/v1`: the dashboard's data as JSON, for scripts and other tools. Errors answer as
//! `{"error": {"code": "not_found", "message": "…"}}` with the matching status code (`super::error`).

use axum::Json;
use axum::extract::{Path, Query, State};
use chrono::Utc;
use serde::Deserialize;
use serde_json::{Value, json};

use super::error::ApiError;
use super::range::Range;
use super::{AppState, WebError, ensure_scenario, parse_run_id};
use crate::model::{Metric, OVERALL_ENDPOINT, RunStatus};
use crate::store::TrendSpan;

/// The most runs one request returns.
const MAX_LIMIT: u32 = 500;

/// `GET /api/v1/scenarios`: every scenario with its latest run and open alert count.
pub(super) async fn scenarios(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!({ "scenarios": state.store.scenario_summaries().await? })))
}

#[derive(Deserialize)]
pub(super) struct RunsQuery {
    limit: Option<String>,
    status: Option<String>,
    before: Option<String>,
}

/// `GET /api/v1/scenarios/{name}/runs?limit=N&status=S&before=ID`: the scenario's runs, newest first, one
/// page at a time; `next` is the `before` value of the following page (null on the last).
pub(super) async fn runs(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(query): Query<RunsQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = match query.limit.as_deref() {
        None => 50,
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| WebError::BadRequest(format!("limit `{text}` is not a number from 1 to {MAX_LIMIT}")))?,
    };
    let status: Option<RunStatus> =
        query.status.as_deref().map(str::parse).transpose().map_err(WebError::BadRequest)?;
    ensure_scenario(&state, &name).await?;
    let before = match query.before.as_deref() {
        None => None,
        Some(text) => {
            let id: i64 = text.parse().map_err(|_| WebError::BadRequest(format!("before `{text}` is not a run id")))?;
            let run = state.store.find_run(id).await?.filter(|r| r.scenario == name);
            Some(run.ok_or_else(|| WebError::BadRequest(format!("before: run #{id} is not a run of `{name}`")))?)
        }
    };
    let runs = state.store.runs_page(&name, status, before, limit).await?;
    let next = if runs.len() == limit as usize { runs.last().map(|r| r.id) } else { None };
    Ok(Json(json!({ "scenario": name, "runs": runs, "next": next })))
}

/// `GET /api/v1/runs/{id}`: one run with its per-endpoint results, its latest verdict, its telemetry (each
/// source with its series, their values and summaries; an empty list when it had no source) and its capacity
/// search (`null` when it ran none).
pub(super) async fn run(State(state): State<AppState>, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    let id = parse_run_id(&id)?;
    let detail =
        state.store.run_detail(id).await?.ok_or_else(|| WebError::NotFound(format!("There is no run #{id}.")))?;
    let verdict = state.store.latest_verdict(id).await?;
    let telemetry = state.store.telemetry(id).await?.sources;
    let capacity = state.store.capacity(id).await?.map(|found| {
        // The search as stored, with what it found in words (`capacity 162 req/s; 169 req/s left the zone on …`).
        let mut value = json!(found);
        value["summary"] = json!(found.describe());
        value
    });
    Ok(Json(json!({
        "run": detail.run, "endpoints": detail.endpoints, "verdict": verdict, "telemetry": telemetry,
        "capacity": capacity
    })))
}

#[derive(Deserialize)]
pub(super) struct TrendQuery {
    endpoint: Option<String>,
    metric: Option<String>,
    range: Option<String>,
}

/// `GET /api/v1/scenarios/{name}/trend?endpoint=E&metric=p95&range=30d`: one metric across runs.
pub(super) async fn trend(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(query): Query<TrendQuery>,
) -> Result<Json<Value>, ApiError> {
    let metric: Metric = query.metric.as_deref().unwrap_or("p95").parse().map_err(WebError::BadRequest)?;
    let range = Range::parse(query.range.as_deref())?;
    let endpoint = query.endpoint.unwrap_or_else(|| OVERALL_ENDPOINT.to_owned());
    ensure_scenario(&state, &name).await?;
    if !state.store.endpoint_exists(&name, &endpoint).await? {
        return Err(WebError::NotFound(format!("Scenario `{name}` has no endpoint `{endpoint}`.")).into());
    }
    let (from, to) = range.window(Utc::now());
    let points = state.store.trend(&name, &endpoint, metric, from, to).await?;
    Ok(Json(json!({
        "scenario": name, "endpoint": endpoint, "metric": metric, "unit": metric.unit(), "range": range.as_str(),
        "points": points
    })))
}

#[derive(Deserialize)]
pub(super) struct CapacityQuery {
    range: Option<String>,
    series: Option<String>,
}

/// `GET /api/v1/scenarios/{name}/capacity?range=30d&series=HASH`: the capacity of each night that ran a
/// search, oldest first, in the newest workload series of the scenario as written unless `series` (a hash prefix) names another: what the
/// scenario page's capacity chart draws. A night whose search found only a lower bound says so in `ended`.
pub(super) async fn capacity(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(query): Query<CapacityQuery>,
) -> Result<Json<Value>, ApiError> {
    let range = Range::parse(query.range.as_deref())?;
    ensure_scenario(&state, &name).await?;
    let every = state.store.workload_series(&name).await?;
    let series = super::chosen_series(&every, &name, query.series.as_deref())?;
    let mut nights = Vec::new();
    if let Some(series) = series {
        let (from, to) = range.window(Utc::now());
        let span = TrendSpan { scenario: &name, series: &series.hash, from, to, buckets: range.points() };
        for night in state.store.capacity_trend(span).await? {
            let found = &night.result;
            nights.push(json!({
                "run_id": night.run_id, "started_at": night.started_at, "build_id": night.build_id,
                "capacity": found.capacity, "first_out": found.first_out, "ended": found.ended,
                "summary": found.describe(), "judged_fallen": night.fell
            }));
        }
    }
    Ok(Json(json!({
        "scenario": name, "range": range.as_str(), "series": series.map(|s| &s.hash), "nights": nights
    })))
}
