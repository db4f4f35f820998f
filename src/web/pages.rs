//! The overview and a scenario's trend page. One run's page is in `run_page`.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::Html;
use chrono::Utc;
use serde::Deserialize;

use super::charts::{MAX_POINTS, TrendLine, sparkline_svg, trend_svg};
use super::range::Range;
use super::{AppState, WebError};
use crate::store::{OVERALL_ENDPOINT, Run, ScenarioSummary, TrendBucket};

/// How many days of p95 the overview's sparklines show.
const SPARKLINE_DAYS: i64 = 30;

/// One scenario on the overview: its summary and a p95 sparkline per endpoint.
struct ScenarioCard {
    summary: ScenarioSummary,
    sparklines: Vec<(String, String, String)>,
}

/// `/`: every scenario with its latest run, and the last month's p95 of each endpoint.
#[derive(Template)]
#[template(path = "overview.html")]
struct OverviewPage {
    scenarios: Vec<ScenarioCard>,
}

pub(super) async fn overview(State(state): State<AppState>) -> Result<Html<String>, WebError> {
    let now = Utc::now();
    let mut scenarios = Vec::new();
    for summary in state.store.scenario_summaries().await? {
        let from = now - chrono::Duration::days(SPARKLINE_DAYS);
        let buckets = state.store.trend_buckets(&summary.name, from, now, SPARKLINE_DAYS as u32).await?;
        let mut sparklines = Vec::new();
        for endpoint in endpoint_names(&buckets) {
            let p95: Vec<f64> = buckets.iter().filter(|b| b.endpoint == endpoint).map(|b| b.p95_ms).collect();
            let latest = p95.last().map(|v| format!("{v:.1} ms")).unwrap_or_default();
            sparklines.push((endpoint.to_owned(), sparkline_svg(&p95), latest));
        }
        scenarios.push(ScenarioCard { summary, sparklines });
    }
    Ok(Html(OverviewPage { scenarios }.render()?))
}

/// The endpoints in `buckets` (sorted by endpoint), the whole run first.
fn endpoint_names(buckets: &[TrendBucket]) -> Vec<&str> {
    let mut names: Vec<&str> = buckets.iter().map(|b| b.endpoint.as_str()).collect();
    names.dedup();
    names.sort_by_key(|n| (*n != OVERALL_ENDPOINT, *n));
    names
}

/// `?range=` of the trend page.
#[derive(Deserialize)]
pub(super) struct TrendQuery {
    range: Option<String>,
}

/// One endpoint's charts on the trend page.
struct EndpointTrend {
    name: String,
    latency_svg: String,
    error_svg: String,
    rate_svg: String,
}

/// `/scenarios/{name}`: per endpoint, p50/p95/p99, the error rate and throughput over the chosen range;
/// long ranges show time buckets averaged by the database (weekly over a year, about nine days over three).
#[derive(Template)]
#[template(path = "scenario.html")]
struct ScenarioPage {
    name: String,
    ranges: Vec<(&'static str, bool)>,
    endpoints: Vec<EndpointTrend>,
    runs: Vec<Run>,
}

pub(super) async fn scenario(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(query): Query<TrendQuery>,
) -> Result<Html<String>, WebError> {
    let range = Range::parse(query.range.as_deref())?;
    if !state.store.scenario_exists(&name).await? {
        return Err(WebError::NotFound(format!("No scenario is called `{name}`.")));
    }
    let (from, to) = range.window(Utc::now());
    let buckets = state.store.trend_buckets(&name, from, to, MAX_POINTS).await?;
    let mut endpoints = Vec::new();
    for endpoint in endpoint_names(&buckets) {
        let series: Vec<&TrendBucket> = buckets.iter().filter(|b| b.endpoint == endpoint).collect();
        let latency: [TrendLine; 3] = [("p50 ms", |b| b.p50_ms), ("p95 ms", |b| b.p95_ms), ("p99 ms", |b| b.p99_ms)];
        endpoints.push(EndpointTrend {
            latency_svg: trend_svg(&format!("{endpoint}: response time"), &series, &latency)?,
            error_svg: trend_svg(&format!("{endpoint}: error rate"), &series, &[("errors %", |b| b.error_pct)])?,
            rate_svg: trend_svg(&format!("{endpoint}: throughput"), &series, &[("requests/s", |b| b.rate)])?,
            name: endpoint.to_owned(),
        });
    }
    let runs = state.store.last_runs(&name, 20).await?;
    let page =
        ScenarioPage { name, ranges: Range::ALL.iter().map(|r| (r.as_str(), *r == range)).collect(), endpoints, runs };
    Ok(Html(page.render()?))
}
