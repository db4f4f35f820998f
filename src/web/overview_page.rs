//! `/`: every scenario with its latest run, open alerts, and a p95 sparkline per endpoint.

use askama::Template;
use axum::extract::State;
use axum::response::Html;
use chrono::Utc;

use super::charts::sparkline_svg;
use super::{AppState, WebError};
use crate::store::{OVERALL_ENDPOINT, ScenarioSummary, TrendBucket};

/// How many days of p95 the overview's sparklines show.
const SPARKLINE_DAYS: i64 = 30;

/// One scenario on the overview: its summary and a p95 sparkline per endpoint.
struct ScenarioCard {
    summary: ScenarioSummary,
    sparklines: Vec<(String, String, String)>,
    /// When the scheduler runs it next, in its own timezone, or why it does not.
    next_run: String,
}

/// `/`: every scenario with its latest run, and the last month's p95 of each endpoint.
#[derive(Template)]
#[template(path = "overview.html")]
struct OverviewPage {
    scenarios: Vec<ScenarioCard>,
}

pub(super) async fn page(State(state): State<AppState>) -> Result<Html<String>, WebError> {
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
        let next_run = next_run(&state, &summary.name, now);
        scenarios.push(ScenarioCard { summary, sparklines, next_run });
    }
    Ok(Html(OverviewPage { scenarios }.render()?))
}

/// The scenario's next scheduled run as its timezone's wall clock, e.g. `2026-12-01 02:00 CET`.
fn next_run(state: &AppState, scenario: &str, now: chrono::DateTime<Utc>) -> String {
    match state.config.scenario(scenario) {
        None => "not configured".to_owned(),
        Some(s) => match s.schedule.as_ref().and_then(|schedule| schedule.next_after(now)) {
            Some(next) => next.format("%Y-%m-%d %H:%M %Z").to_string(),
            None => "on demand".to_owned(),
        },
    }
}

/// The endpoints in `buckets` (sorted by endpoint), the whole run first.
pub(super) fn endpoint_names(buckets: &[TrendBucket]) -> Vec<&str> {
    let mut names: Vec<&str> = buckets.iter().map(|b| b.endpoint.as_str()).collect();
    names.dedup();
    names.sort_by_key(|n| (*n != OVERALL_ENDPOINT, *n));
    names
}
