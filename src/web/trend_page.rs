//! `/scenarios/{name}`: what the latest verdict found, then per endpoint p50/p95/p99, the error rate (when
//! there were errors) and throughput over time, for one workload series.
//!
//! Query (`trend_view`): `range=7d|30d|90d|1y|all`, or a zoom `from=YYYY-MM-DD&to=YYYY-MM-DD` or
//! `from_run=ID&to_run=ID`; `scale=log`; `series=HASH` (a prefix is enough; by default the newest series that
//! runs the scenario as written, not a smoke run's). The p95
//! line carries the detector's band (between the values it would call an improvement and a regression, from the
//! nights the newest was judged against, else the nights before it), each `[scenario.gates]` limit (p75, p95, p99; the error rate on its chart) as a red
//! zone, and a pin on each run where this endpoint regressed, listed in words under its charts; build changes and
//! invalid runs are listed once, above every endpoint's charts. Under the endpoints, the server's side: a chart
//! per telemetry series, night over night (`trend_telemetry`), and the capacity of the nights that ran a
//! capacity search (`capacity_chart`).

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::Html;
use chrono::Utc;

use super::changes::Changes;
use super::grid::{GRID_NIGHTS, Grid};
use super::overview_page::endpoint_names;
use super::range::Range;
use super::route_name::chart_title;
use super::trend_chart::{GateLine, Line, OverBuckets, Scale, TrendChart, colour};
use super::trend_telemetry::{SeriesTrend, series_trends};
use super::trend_view::{TrendQuery, View, Zoom};
use super::{AppState, WebError, ensure_scenario};
use crate::analysis::Gates;
use crate::analysis::detector::{self, Direction, Question, SeriesKind};
use crate::model::{Metric, OVERALL_ENDPOINT, Run, RunId};
use crate::store::{ChartPoint, TrendSpan, WorkloadSeries};

/// One endpoint's charts and the runs in which it regressed.
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
    /// Each range's link (keeping scale and series) and whether it is the one shown.
    ranges: Vec<(&'static str, String, bool)>,
    /// The other scale's link and name.
    other_scale: (String, &'static str),
    /// The dates shown, when zoomed by dates.
    zoom_dates: Option<(String, String)>,
    /// The runs shown, when zoomed by runs.
    zoom_runs: Option<(i64, i64)>,
    /// The chart scale is logarithmic (the zoom form keeps it).
    log_scale: bool,
    changes: Option<Changes>,
    /// Endpoints × the series' last nights.
    grid: Option<Grid>,
    endpoints: Vec<EndpointTrend>,
    /// Build changes and invalid runs in the range, said once for every endpoint.
    run_notes: Vec<String>,
    /// The server's side: a chart per telemetry series.
    telemetry: Vec<SeriesTrend>,
    /// Runs with telemetry older than the newest ones drawn were left off.
    telemetry_left_off: bool,
    /// The capacity night over night, when nights ran a capacity search.
    capacity_svg: String,
    runs: Vec<Run>,
    /// Its workload series, newest first, and the one the charts show.
    series: Vec<WorkloadSeries>,
    shown_series: Option<String>,
    /// The range is read from period sums, which hold every series.
    every_series: bool,
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
    ensure_scenario(&state, &name).await?;
    let view = View::parse(&query, Utc::now(), &state.store, &name).await?;
    let series = state.store.workload_series(&name).await?;
    let shown = super::chosen_series(&series, &name, query.series.as_deref())?;
    let shown_series = shown.map(|s| s.hash.clone());
    let keep = shown_series.as_deref().filter(|_| query.series.is_some());
    let charts = match &shown_series {
        Some(hash) => series_charts(&state, &name, hash, &view, keep).await?,
        None => SeriesCharts::default(),
    };
    let ranges = Range::ALL
        .iter()
        .map(|r| (r.as_str(), View::link(r.as_str(), view.scale, keep), *r == view.range && view.zoom.is_none()))
        .collect();
    let other = if view.scale == Scale::Log { Scale::Linear } else { Scale::Log };
    // The scale toggle keeps a zoom; the range links leave it.
    let mut toggle = View::link(view.range.as_str(), other, keep);
    if let Some(zoom) = &view.zoom {
        toggle.push_str(&zoom.query());
    }
    let other_scale = (toggle, if other == Scale::Log { "log" } else { "linear" });
    let page = ScenarioPage {
        changes: Changes::latest(&state.store, &name).await?,
        runs: state.store.last_runs(&name, 20).await?,
        name,
        ranges,
        other_scale,
        log_scale: view.scale == Scale::Log,
        zoom_dates: match &view.zoom {
            Some(Zoom::Dates(from, to)) => Some((from.clone(), to.clone())),
            _ => None,
        },
        zoom_runs: match view.zoom {
            Some(Zoom::Runs(from, to)) => Some((from, to)),
            _ => None,
        },
        grid: charts.grid,
        endpoints: charts.endpoints,
        run_notes: charts.notes,
        telemetry: charts.telemetry,
        telemetry_left_off: charts.telemetry_left_off,
        capacity_svg: charts.capacity_svg,
        series,
        shown_series,
        every_series: charts.every_series,
    };
    Ok(Html(page.render()?))
}

/// What the page draws of one workload series (see [`ScenarioPage`]'s fields of the same names).
#[derive(Default)]
struct SeriesCharts {
    grid: Option<Grid>,
    endpoints: Vec<EndpointTrend>,
    notes: Vec<String>,
    telemetry: Vec<SeriesTrend>,
    telemetry_left_off: bool,
    capacity_svg: String,
    every_series: bool,
}

/// The grid, the endpoints' charts, the server's side and the capacity of series `hash` over the view.
async fn series_charts(
    state: &AppState,
    name: &str,
    hash: &str,
    view: &View,
    keep: Option<&str>,
) -> Result<SeriesCharts, WebError> {
    let gates = state.config.scenario(name).map(|s| s.gates.clone()).unwrap_or_default();
    let nights = state.store.regression_grid(name, hash, GRID_NIGHTS).await?;
    let (from, to) = view.window;
    let span = TrendSpan { scenario: name, series: hash, from, to, buckets: view.range.points() };
    let trend = state.store.trend_points(span).await?;
    let zoom = View::link(view.range.as_str(), view.scale, keep);
    // Every run has the whole-run row, so its points carry every run's build and validity.
    let whole: Vec<&ChartPoint> = trend.points.iter().filter(|p| p.endpoint == OVERALL_ENDPOINT).collect();
    let judged = judged_against(state, &whole).await?;
    let endpoints = endpoint_names(&trend.points)
        .into_iter()
        .map(|endpoint| {
            let points: Vec<&ChartPoint> = trend.points.iter().filter(|p| p.endpoint == endpoint).collect();
            endpoint_trend(endpoint, (&points, judged.as_ref()), &gates, view.scale, &zoom)
        })
        .collect();
    let server_side = state.store.telemetry_trend(span).await?;
    Ok(SeriesCharts {
        grid: Some(Grid::new(&nights)).filter(|g| !g.rows.is_empty()),
        endpoints,
        notes: run_notes(&whole),
        telemetry: series_trends(&server_side.nights, &gates.telemetry_limits, view.scale, &zoom),
        telemetry_left_off: server_side.left_off,
        capacity_svg: super::capacity_chart::trend_svg(&state.store.capacity_trend(span).await?),
        every_series: trend.every_series,
    })
}

// Over a bucket p95 is the mean with its spread as a whisker, p99 and the error rate the worst run's (a single
// run's figures are both at once).
const LATENCY: [Line; 3] = [
    Line { name: "p95", over_buckets: OverBuckets::Mean, colour: colour::P95, value: |p| p.p95_ms },
    Line { name: "p50", over_buckets: OverBuckets::Mean, colour: colour::P50, value: |p| p.p50_ms },
    Line { name: "p99", over_buckets: OverBuckets::Worst, colour: colour::P99, value: |p| p.p99_max_ms },
];
const ERRORS: [Line; 1] =
    [Line { name: "errors", over_buckets: OverBuckets::Worst, colour: colour::ERRORS, value: |p| p.error_pct_max }];
const THROUGHPUT: [Line; 1] =
    [Line { name: "throughput", over_buckets: OverBuckets::Mean, colour: colour::THROUGHPUT, value: |p| p.rate }];

/// One endpoint's charts; `zoom` is the page's link, to which a bucket's dot adds its dates.
fn endpoint_trend(
    endpoint: &str,
    (points, judged): (&[&ChartPoint], Option<&JudgedAgainst>),
    gates: &Gates,
    scale: Scale,
    zoom: &str,
) -> EndpointTrend {
    let absolute = &gates.absolute;
    let chart = |title: &str, unit: &'static str, lines: &'static [Line]| TrendChart {
        title: chart_title(endpoint, title),
        unit,
        lines,
        spread: None,
        band: None,
        limits: Vec::new(),
        scale,
        main: false,
        zoom: Some(zoom.to_owned()),
    };
    let latency = TrendChart {
        spread: Some(|p| p.p95_range_ms),
        band: detector_band(points, judged, gates),
        limits: [("p75", absolute.max_p75_ms), ("p95", absolute.max_p95_ms), ("p99", absolute.max_p99_ms)]
            .into_iter()
            .filter_map(|(figure, limit)| Some(GateLine::at_most(figure, limit?)))
            .collect(),
        main: true,
        ..chart("response time", "ms", &LATENCY)
    };
    // An endpoint that never failed in the range gets no all-zero error chart.
    let had_errors = points.iter().any(|p| p.error_pct_max > 0.0);
    let errors = TrendChart {
        limits: absolute.max_error_rate_pct.map(|limit| GateLine::at_most("error rate", limit)).into_iter().collect(),
        ..chart("error rate", "%", &ERRORS)
    };
    EndpointTrend {
        latency_svg: latency.render(points),
        error_svg: if had_errors { errors.render(points) } else { String::new() },
        rate_svg: chart("throughput", "req/s", &THROUGHPUT).render(points),
        notes: regression_notes(points),
        name: endpoint.to_owned(),
    }
}

/// The band is read from at most this many points before the newest: a month of nightly runs says where the
/// series stands, and the change-point search costs the cube of the points it reads.
const BAND_POINTS: usize = 30;

/// The newest run on the chart and the runs its verdict was judged against.
struct JudgedAgainst {
    run: RunId,
    baseline: Vec<RunId>,
}

/// What the newest run drawn (`whole`, the whole-run points) was judged against, when it has a verdict.
async fn judged_against(state: &AppState, whole: &[&ChartPoint]) -> Result<Option<JudgedAgainst>, WebError> {
    let Some(run) = whole.last().and_then(|p| p.run_id) else { return Ok(None) };
    // The runner's verdict, not a later `check` against another baseline (`--baseline run:3`).
    let verdict = state.store.first_verdict(run).await?;
    Ok(verdict.map(|v| JudgedAgainst { run, baseline: v.baseline_run_ids }))
}

/// The p95 band the single-series detector would call "no change" for the newest point, judged against the
/// runs its verdict was (where it has one and they are drawn), else the (at most 30) points before it: between
/// its improvement and regression lines (`detector::band`, from the same function as `degrade detect`'s
/// decision), with the scenario's minimum effect and minimum history. The nights a verdict leaves out (a
/// regression's, judged against the nights before it) left the band at the regressed level beside a recovered
/// night the verdict called unchanged (found by a new-user trial).
fn detector_band(points: &[&ChartPoint], judged: Option<&JudgedAgainst>, gates: &Gates) -> Option<(f64, f64)> {
    // Invalid runs were never judged: the detector reads the valid ones only, as the judge does.
    let valid: Vec<&ChartPoint> = points.iter().copied().filter(|p| !p.never_judged()).collect();
    let mut earlier = valid[..valid.len().saturating_sub(1)].to_vec();
    if let Some(judged) = judged.filter(|j| valid.last().is_some_and(|p| p.run_id == Some(j.run))) {
        let baseline: Vec<&ChartPoint> =
            earlier.iter().copied().filter(|p| p.run_id.is_some_and(|id| judged.baseline.contains(&id))).collect();
        if !baseline.is_empty() {
            earlier = baseline;
        }
    }
    let history: Vec<f64> = earlier[earlier.len().saturating_sub(BAND_POINTS)..].iter().map(|p| p.p95_ms).collect();
    let band = detector::band(&Question {
        history: &history,
        candidate: 0.0,
        direction: Direction::HigherIsWorse,
        kind: SeriesKind::Latency,
        min_effect_pct: gates.min_effect_pct_of(Metric::P95),
        min_runs: gates.min_runs as usize,
    })?;
    Some((band.improvement_at.unwrap_or(band.level), band.regression_at))
}

/// Build changes listed one by one up to this many; past it (nightly builds change every night) only counted.
const LISTED_BUILD_CHANGES: usize = 8;

/// The runs in which this endpoint regressed, in words, oldest first.
fn regression_notes(points: &[&ChartPoint]) -> Vec<String> {
    points
        .iter()
        .filter(|p| p.regressed > 0)
        .map(|p| {
            let build = p.build_id.as_deref().map(|b| format!(", build {b}")).unwrap_or_default();
            format!("{}: regressed here ({}{build})", p.started_at.format("%Y-%m-%d %H:%M"), run_words(p))
        })
        .collect()
}

/// What holds for every endpoint, said once above the charts: invalid runs and build changes, oldest first.
fn run_notes(points: &[&ChartPoint]) -> Vec<String> {
    let mut notes = Vec::new();
    let mut builds = Vec::new();
    let mut previous_build: Option<&str> = None;
    for point in points {
        let when = point.started_at.format("%Y-%m-%d %H:%M");
        let build = point.build_id.as_deref();
        if let (Some(before), Some(now)) = (previous_build, build)
            && before != now
        {
            builds.push(format!("{when}: build {before} → {now}"));
        }
        if point.invalid > 0 {
            notes.push(format!("{when}: invalid ({}), not used as a baseline", run_words(point)));
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

/// `run #12`, or `7 runs` for a time bucket.
fn run_words(point: &ChartPoint) -> String {
    point.run_id.map_or_else(|| format!("{} runs", point.runs), |id| format!("run #{id}"))
}
