//! `/`: every scenario with its latest run, what its latest verdict found, open alerts, and a sparkline per
//! endpoint on one shared relative scale (so 1.5 ms of jitter on a fast route never looks like a regression on
//! a slow one): its p95, or the figure the verdict found changed, with the verdict's own change beside it.

use std::collections::BTreeMap;

use askama::Template;
use axum::extract::State;
use axum::response::Html;
use chrono::Utc;

use super::changes::{ChangeRow, Changes};
use super::sparkline::{Sparkline, for_endpoint};
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
        let mut found: BTreeMap<&str, Vec<&ChangeRow>> = BTreeMap::new();
        for row in changes.iter().flat_map(|c| c.rows.iter()) {
            found.entry(row.endpoint.as_str()).or_default().push(row);
        }
        let series = state.store.workload_series(&summary.name).await?;
        let mut sparklines = Vec::new();
        if let Some(shown) = crate::store::WorkloadSeries::default_of(&series) {
            let from = now - chrono::Duration::days(SPARKLINE_DAYS);
            let span = TrendSpan { scenario: &summary.name, series: &shown.hash, from, to: now, buckets: 60 };
            let trend = state.store.trend_points(span).await?;
            for endpoint in endpoint_names(&trend.points) {
                let points: Vec<&ChartPoint> = trend.points.iter().filter(|p| p.endpoint == endpoint).collect();
                sparklines.push(for_endpoint(endpoint, &points, found.get(endpoint).map_or(&[], Vec::as_slice)));
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
            Some(next) if s.run_by == crate::config::RunBy::Elsewhere => {
                format!("{}, run elsewhere", next.format("%Y-%m-%d %H:%M %Z"))
            }
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
