//! `/`: every scenario with its latest run, what its latest verdict found, open alerts, and a p95 sparkline
//! per endpoint on one shared relative scale (so 1.5 ms of jitter on a fast route never looks like a
//! regression on a slow one).

use std::collections::BTreeMap;

use askama::Template;
use axum::extract::State;
use axum::response::Html;
use chrono::Utc;

use super::changes::Changes;
use super::sparkline::{Sparkline, relative_to_level};
use super::{AppState, WebError};
use crate::model::{HeldBackNights, OVERALL_ENDPOINT};
use crate::store::{ChartPoint, ScenarioSummary, TrendSpan};

/// How many days of p95 the overview's sparklines show.
const SPARKLINE_DAYS: i64 = 30;

/// One scenario on the overview: its summary, its latest verdict's changes and a sparkline per endpoint.
struct ScenarioCard {
    summary: ScenarioSummary,
    changes: Option<Changes>,
    sparklines: Vec<Sparkline>,
    /// When the scheduler runs it next, in its own timezone, or why it does not.
    next_run: String,
    /// Its newest nights, newest first, held back by their machine one after another, when there were two or
    /// more: the gate has not been watching.
    held_back: Option<HeldBackNights>,
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
        let changes = Changes::latest(&state.store, &summary.name).await?;
        let mut regressed: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for row in changes.iter().flat_map(|c| c.rows.iter().filter(|r| r.worse)) {
            regressed.entry(row.endpoint.as_str()).or_default().push(row.metric.clone());
        }
        let series = state.store.workload_series(&summary.name).await?;
        let mut sparklines = Vec::new();
        if let Some(newest) = series.first() {
            let from = now - chrono::Duration::days(SPARKLINE_DAYS);
            let span = TrendSpan { scenario: &summary.name, series: &newest.hash, from, to: now, buckets: 60 };
            let trend = state.store.trend_points(span).await?;
            for endpoint in endpoint_names(&trend.points) {
                let p95: Vec<f64> = trend.points.iter().filter(|p| p.endpoint == endpoint).map(|p| p.p95_ms).collect();
                let metrics = regressed.get(endpoint).cloned().unwrap_or_default();
                sparklines.push(relative_to_level(endpoint, &p95, metrics));
            }
        }
        let next_run = next_run(&state, &summary.name, now);
        let held_back = state.store.held_back_in_a_row(&summary.name, i64::MAX).await?.told_at(None);
        scenarios.push(ScenarioCard { summary, changes, sparklines, next_run, held_back });
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

/// The endpoints in `points` (sorted by endpoint), the whole run first.
pub(super) fn endpoint_names(points: &[ChartPoint]) -> Vec<&str> {
    let mut names: Vec<&str> = points.iter().map(|p| p.endpoint.as_str()).collect();
    names.dedup();
    names.sort_by_key(|n| (*n != OVERALL_ENDPOINT, *n));
    names
}
