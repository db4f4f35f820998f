//! `/compare?a=ID&b=ID`: two runs side by side per endpoint with deltas, and their p99 timelines overlaid.
//! Endpoints come most-worsened first; a change of at least [`COLOURED_FROM_PCT`] is red when worse and
//! green when better (worse is higher for latency and errors, lower for throughput).

use askama::Template;
use axum::extract::{Query, State};
use axum::response::Html;
use serde::Deserialize;

use super::charts::overlay_svg;
use super::route_name::chart_title;
use super::{AppState, WebError};
use crate::model::{Change, EndpointResult, Metric, Run, RunDetail, TimelinePoint};

#[derive(Deserialize)]
pub(super) struct CompareQuery {
    a: Option<String>,
    b: Option<String>,
}

/// Changes at least this large are coloured: the default minimum effect of the gate.
const COLOURED_FROM_PCT: f64 = 10.0;

/// One metric of one endpoint in both runs.
struct Cell {
    metric: &'static str,
    a: String,
    b: String,
    /// B against A as every output writes a change (`+31.9 %`, `×316`), or `from 0`.
    delta: String,
    /// The exact percentage, for the change's tooltip.
    exact: String,
    /// `worse`, `better` or empty.
    class: &'static str,
    /// How much worse B is, in percent (negative: better).
    worsening: f64,
}

/// One endpoint's row, and its overlaid timeline.
struct EndpointComparison {
    endpoint: String,
    cells: Vec<Cell>,
    timeline_svg: String,
}

impl EndpointComparison {
    /// The largest worsening of any of its metrics, for the order of the page.
    fn worst(&self) -> f64 {
        self.cells.iter().map(|c| c.worsening).fold(f64::NEG_INFINITY, f64::max)
    }
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
        let title = chart_title(&ea.endpoint, "p99 ms per second");
        let timeline_svg = overlay_svg(&title, ("run A", &sa), ("run B", &sb), |p| p.p99_us as f64 / 1000.0)?;
        endpoints.push(EndpointComparison { endpoint: ea.endpoint.clone(), cells: cells(ea, eb), timeline_svg });
    }
    endpoints.sort_by(|x, y| y.worst().total_cmp(&x.worst()));
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
            let change = (va.abs() > 0.0).then(|| 100.0 * (vb - va) / va);
            let worsening = match change {
                Some(c) if *metric == Metric::Throughput => -c,
                Some(c) => c,
                // From nothing to something (errors appearing) is as worse as it gets.
                None if vb > 0.0 && *metric != Metric::Throughput => f64::INFINITY,
                None => 0.0,
            };
            let class = match worsening {
                w if w >= COLOURED_FROM_PCT => "worse",
                w if w <= -COLOURED_FROM_PCT => "better",
                _ => "",
            };
            let delta = match change {
                Some(c) => Change::from_pct(c).to_string(),
                None if worsening.is_infinite() => "from 0".to_owned(),
                None => String::new(),
            };
            let exact = change.map(|c| Change::from_pct(c).exact()).unwrap_or_default();
            Cell { metric: name, a: format!("{va:.2}"), b: format!("{vb:.2}"), delta, exact, class, worsening }
        })
        .collect()
}

async fn load(state: &AppState, id: Option<&str>, which: &str) -> Result<RunDetail, WebError> {
    let text = id.ok_or_else(|| WebError::BadRequest(format!("`{which}` is missing: use /compare?a=RUN&b=RUN")))?;
    let id: i64 = text.parse().map_err(|_| WebError::BadRequest(format!("`{which}={text}` is not a run id")))?;
    state.store.run_detail(id).await?.ok_or_else(|| WebError::NotFound(format!("There is no run #{id}.")))
}
