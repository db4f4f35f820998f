//! `/compare?a=ID&b=ID`: two runs side by side per endpoint with deltas, and their p99 timelines overlaid.

use askama::Template;
use axum::extract::{Query, State};
use axum::response::Html;
use serde::Deserialize;

use super::charts::overlay_svg;
use super::{AppState, WebError};
use crate::store::{EndpointResult, Metric, Run, RunDetail, TimelinePoint};

#[derive(Deserialize)]
pub(super) struct CompareQuery {
    a: Option<String>,
    b: Option<String>,
}

/// One metric of one endpoint in both runs.
struct Cell {
    metric: &'static str,
    a: String,
    b: String,
    delta: String,
}

/// One endpoint's row, and its overlaid timeline.
struct EndpointComparison {
    endpoint: String,
    cells: Vec<Cell>,
    timeline_svg: String,
}

#[derive(Template)]
#[template(path = "compare.html")]
struct ComparePage {
    a: Run,
    b: Run,
    endpoints: Vec<EndpointComparison>,
}

const COMPARED: [(Metric, &str); 5] = [
    (Metric::P50, "p50 ms"),
    (Metric::P95, "p95 ms"),
    (Metric::P99, "p99 ms"),
    (Metric::ErrorRate, "errors %"),
    (Metric::Throughput, "req/s"),
];

pub(super) async fn page(
    State(state): State<AppState>,
    Query(query): Query<CompareQuery>,
) -> Result<Html<String>, WebError> {
    let a = load(&state, query.a.as_deref(), "a").await?;
    let b = load(&state, query.b.as_deref(), "b").await?;
    let (timeline_a, timeline_b) = (state.store.timeline(a.run.id).await?, state.store.timeline(b.run.id).await?);
    let mut endpoints = Vec::new();
    for ea in &a.endpoints {
        let Some(eb) = b.endpoints.iter().find(|e| e.endpoint == ea.endpoint) else { continue };
        let (sa, sb) = (seconds_of(&timeline_a, &ea.endpoint), seconds_of(&timeline_b, &ea.endpoint));
        let title = format!("{}: p99 ms per second", ea.endpoint);
        let timeline_svg = overlay_svg(&title, ("run A", &sa), ("run B", &sb), |p| p.p99_us as f64 / 1000.0)?;
        endpoints.push(EndpointComparison { endpoint: ea.endpoint.clone(), cells: cells(ea, eb), timeline_svg });
    }
    Ok(Html(ComparePage { a: a.run, b: b.run, endpoints }.render()?))
}

fn seconds_of<'a>(timeline: &'a [TimelinePoint], endpoint: &str) -> Vec<&'a TimelinePoint> {
    timeline.iter().filter(|p| p.endpoint == endpoint).collect()
}

fn cells(a: &EndpointResult, b: &EndpointResult) -> Vec<Cell> {
    COMPARED
        .iter()
        .map(|(metric, name)| {
            let (va, vb) = (metric.value_of(a), metric.value_of(b));
            let delta = if va.abs() > 0.0 { format!("{:+.1} %", 100.0 * (vb - va) / va) } else { String::new() };
            Cell { metric: name, a: format!("{va:.2}"), b: format!("{vb:.2}"), delta }
        })
        .collect()
}

async fn load(state: &AppState, id: Option<&str>, which: &str) -> Result<RunDetail, WebError> {
    let text = id.ok_or_else(|| WebError::BadRequest(format!("`{which}` is missing: use /compare?a=RUN&b=RUN")))?;
    let id: i64 = text.parse().map_err(|_| WebError::BadRequest(format!("`{which}={text}` is not a run id")))?;
    state.store.run_detail(id).await?.ok_or_else(|| WebError::NotFound(format!("There is no run #{id}.")))
}
