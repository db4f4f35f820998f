//! `/scenarios/{name}?range=…`: per endpoint, p50/p95/p99, the error rate and throughput over time.
//!
//! The p95 line carries the baseline band (the level the detector sees, ± 2 sigma of night-to-night noise)
//! and a marker on each regressed run; under the charts, regressed and invalid runs and build changes are
//! listed in words. Long ranges show time buckets averaged by the database, where markers are not kept.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::Html;
use chrono::Utc;
use serde::Deserialize;

use super::charts::{Marks, TrendLine, trend_svg};
use super::overview_page::endpoint_names;
use super::range::Range;
use super::{AppState, WebError, ensure_scenario};
use crate::analysis::detector::{LOG_PRIOR, LOG_SIGMA_FLOOR};
use crate::analysis::level::estimate;
use crate::store::{Run, TrendBucket, WorkloadSeries};

/// `?range=` of the trend page.
#[derive(Deserialize)]
pub(super) struct TrendQuery {
    range: Option<String>,
}

/// One endpoint's charts and notes.
struct EndpointTrend {
    name: String,
    latency_svg: String,
    error_svg: String,
    rate_svg: String,
    notes: Vec<String>,
}

#[derive(Template)]
#[template(path = "scenario.html")]
struct ScenarioPage {
    name: String,
    ranges: Vec<(&'static str, bool)>,
    endpoints: Vec<EndpointTrend>,
    runs: Vec<Run>,
    /// Its workload series, newest first: the first is the one new runs join unless reshaped.
    series: Vec<WorkloadSeries>,
}

impl ScenarioPage {
    /// The short hash of a run's series, for the runs table.
    fn series_of(run: &Run) -> &str {
        run.scenario_hash.get(..8).unwrap_or(&run.scenario_hash)
    }
}

pub(super) async fn page(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(query): Query<TrendQuery>,
) -> Result<Html<String>, WebError> {
    let range = Range::parse(query.range.as_deref())?;
    ensure_scenario(&state, &name).await?;
    let (from, to) = range.window(Utc::now());
    let buckets = state.store.trend_buckets(&name, from, to, range.points()).await?;
    let mut endpoints = Vec::new();
    for endpoint in endpoint_names(&buckets) {
        let series: Vec<&TrendBucket> = buckets.iter().filter(|b| b.endpoint == endpoint).collect();
        endpoints.push(endpoint_trend(endpoint, &series)?);
    }
    let runs = state.store.last_runs(&name, 20).await?;
    let series = state.store.workload_series(&name).await?;
    let ranges = Range::ALL.iter().map(|r| (r.as_str(), *r == range)).collect();
    Ok(Html(ScenarioPage { name, ranges, endpoints, runs, series }.render()?))
}

fn endpoint_trend(endpoint: &str, series: &[&TrendBucket]) -> Result<EndpointTrend, WebError> {
    let latency: [TrendLine; 3] = [("p50 ms", |b| b.p50_ms), ("p95 ms", |b| b.p95_ms), ("p99 ms", |b| b.p99_ms)];
    let regressed: Vec<usize> = series.iter().enumerate().filter(|(_, b)| b.regressed > 0).map(|(i, _)| i).collect();
    let invalid: Vec<usize> = series.iter().enumerate().filter(|(_, b)| b.invalid > 0).map(|(i, _)| i).collect();
    let builds = build_changes(series);
    let p95_marks = Marks { on: 1, band: baseline_band(series), points: regressed, builds: builds.clone(), invalid };
    let plain = Marks { builds, ..Marks::default() };
    Ok(EndpointTrend {
        latency_svg: trend_svg(&format!("{endpoint}: response time"), series, &latency, &p95_marks)?,
        error_svg: trend_svg(&format!("{endpoint}: error rate"), series, &[("errors %", |b| b.error_pct)], &plain)?,
        rate_svg: trend_svg(&format!("{endpoint}: throughput"), series, &[("requests/s", |b| b.rate)], &plain)?,
        notes: notes(series),
        name: endpoint.to_owned(),
    })
}

/// The points where the build differs from the one before, with `before → now`.
fn build_changes(series: &[&TrendBucket]) -> Vec<(usize, String)> {
    let mut changes = Vec::new();
    let mut previous: Option<&str> = None;
    for (index, bucket) in series.iter().enumerate() {
        let build = bucket.build_id.as_deref();
        if let (Some(before), Some(now)) = (previous, build)
            && before != now
        {
            changes.push((index, format!("{before} → {now}")));
        }
        previous = build.or(previous);
    }
    changes
}

/// The p95 band a normal night falls in: the current level of all points but the newest (as the detector
/// finds it, on the log scale), ± 2 sigma of noise. None with fewer than five earlier points.
fn baseline_band(series: &[&TrendBucket]) -> Option<(f64, f64)> {
    let earlier = &series[..series.len().saturating_sub(1)];
    if earlier.len() < 5 || earlier.iter().any(|b| b.p95_ms <= 0.0) {
        return None;
    }
    let logs: Vec<f64> = earlier.iter().map(|b| b.p95_ms.ln()).collect();
    let level = estimate(&logs, &vec![0.0; logs.len()], LOG_SIGMA_FLOOR, Some(LOG_PRIOR));
    Some(((level.level - 2.0 * level.sigma).exp(), (level.level + 2.0 * level.sigma).exp()))
}

/// Build changes listed one by one up to this many; past it (nightly builds change every night) only counted.
const LISTED_BUILD_CHANGES: usize = 8;

/// Regressed and invalid runs and build changes, in words, oldest first.
fn notes(series: &[&TrendBucket]) -> Vec<String> {
    let mut notes = Vec::new();
    let mut builds = Vec::new();
    let mut previous_build: Option<&str> = None;
    for bucket in series {
        let day = bucket.started_at.format("%Y-%m-%d");
        let build = bucket.build_id.as_deref();
        if let (Some(before), Some(now)) = (previous_build, build)
            && before != now
        {
            builds.push(format!("{day}: build {before} → {now}"));
        }
        if bucket.regressed > 0 {
            let build = build.map(|b| format!(" (build {b})")).unwrap_or_default();
            notes.push(format!("{day}: judged worse here; the run regressed{build}"));
        }
        if bucket.invalid > 0 {
            notes.push(format!("{day}: invalid run, not used as a baseline"));
        }
        previous_build = build.or(previous_build);
    }
    if builds.len() > LISTED_BUILD_CHANGES {
        notes.push(format!("{} build changes in this range", builds.len()));
    } else {
        notes.extend(builds);
    }
    notes
}
