//! The overview and a scenario's trend page. One run's page is in `run_page`.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::Html;
use chrono::Utc;
use serde::Deserialize;

use super::charts::{Line, trend_svg};
use super::range::Range;
use super::{AppState, WebError};
use crate::store::{Metric, OVERALL_ENDPOINT, Run, ScenarioSummary};

/// `/`: every scenario with its latest run.
#[derive(Template)]
#[template(path = "overview.html")]
struct OverviewPage {
    scenarios: Vec<ScenarioSummary>,
}

pub(super) async fn overview(State(state): State<AppState>) -> Result<Html<String>, WebError> {
    let scenarios = state.store.scenario_summaries().await?;
    Ok(Html(OverviewPage { scenarios }.render()?))
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
}

/// `/scenarios/{name}`: per endpoint, p50/p95/p99 and the error rate over the chosen range.
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
    let mut endpoints = Vec::new();
    let mut names = vec![OVERALL_ENDPOINT.to_owned()];
    names.extend(state.store.latest_endpoints(&name).await?);
    for endpoint in names {
        let trend = |metric| state.store.trend(&name, &endpoint, metric, from, to);
        let latency = [
            Line { name: "p50 ms", points: trend(Metric::P50).await? },
            Line { name: "p95 ms", points: trend(Metric::P95).await? },
            Line { name: "p99 ms", points: trend(Metric::P99).await? },
        ];
        let errors = [Line { name: "errors %", points: trend(Metric::ErrorRate).await? }];
        endpoints.push(EndpointTrend {
            latency_svg: trend_svg(&format!("{endpoint}: response time"), &latency)?,
            error_svg: trend_svg(&format!("{endpoint}: error rate"), &errors)?,
            name: endpoint,
        });
    }
    let runs = state.store.last_runs(&name, 20).await?;
    let page =
        ScenarioPage { name, ranges: Range::ALL.iter().map(|r| (r.as_str(), *r == range)).collect(), endpoints, runs };
    Ok(Html(page.render()?))
}
