//! The run page's telemetry section: the figure (`telemetry_chart`), a note per source that could not be read
//! in full, and a table of each series' figures over the measured stages, with the reason when it has none.

use super::telemetry_chart::{Panel, Zone, latency_panel, series_panel, server_side_svg};
use crate::model::{
    Finding, RunTelemetry, SHARE_UNIT, SeriesTelemetry, TelemetryFigure, TelemetryMetric, TelemetryStatus,
    TimelinePoint,
};
use crate::telemetry::shown;

/// What the template shows.
pub struct TelemetryView {
    /// The figure, response times first.
    pub svg: String,
    /// A sentence per source that could not be read in full.
    pub notes: Vec<String>,
    /// A row per series.
    pub rows: Vec<SeriesRow>,
}

/// One series' figures in words.
pub struct SeriesRow {
    pub source: String,
    pub series: String,
    pub mean: String,
    pub max: String,
    pub per_1000: String,
    pub status: String,
}

/// The section for `telemetry`, drawn under `timeline`, each series with the limits its verdict's `findings`
/// held it to; `None` when the run had no telemetry source.
#[must_use]
pub fn view(telemetry: &RunTelemetry, timeline: &[TimelinePoint], findings: &[Finding]) -> Option<TelemetryView> {
    if telemetry.sources.is_empty() {
        return None;
    }
    let mut panels: Vec<Panel> = vec![latency_panel(timeline)];
    let mut notes = Vec::new();
    let mut rows = Vec::new();
    for source in &telemetry.sources {
        let read = source.scrapes - source.failed_scrapes;
        match (source.status, &source.reason) {
            (TelemetryStatus::Complete, _) | (_, None) => {}
            (TelemetryStatus::Missing, Some(reason)) => {
                notes.push(format!("{}: telemetry missing, nothing could be read: {reason}", source.name));
            }
            (TelemetryStatus::Partial, Some(reason)) => {
                notes.push(format!("{}: {read} of {} scrapes read: {reason}", source.name, source.scrapes));
            }
        }
        for series in &source.series {
            // A source that was never read says why in its note; each panel says it too, briefly.
            let missing = series.reason.as_deref();
            panels.push(series_panel(
                panel_title(&source.name, &series.name, &series.unit),
                &series.unit,
                &series.points,
                missing,
                zones(findings, &source.name, &series.name),
            ));
            rows.push(series_row(&source.name, series));
        }
    }
    let last_second = timeline.iter().map(|p| p.elapsed_s + 1).max().unwrap_or(0) as f64;
    let last_scrape = telemetry
        .sources
        .iter()
        .flat_map(|s| &s.series)
        .filter_map(|s| s.points.last())
        .map(|p| p.elapsed_ms as f64 / 1000.0)
        .fold(0.0, f64::max);
    Some(TelemetryView { svg: server_side_svg(&panels, last_second.max(last_scrape)), notes, rows })
}

/// The limits the verdict held a series to: its ceiling and floor findings.
fn zones(findings: &[Finding], source: &str, series: &str) -> Vec<Zone> {
    findings
        .iter()
        .filter(|f| f.endpoint == source)
        .filter_map(|f| {
            let metric = TelemetryMetric::parse(&f.metric).filter(|m| m.series == series)?;
            let ceiling = match metric.figure {
                TelemetryFigure::Ceiling => true,
                TelemetryFigure::Floor => false,
                TelemetryFigure::Mean | TelemetryFigure::Per1000Requests => return None,
            };
            Some(Zone { bound: f.limit?, ceiling })
        })
        .collect()
}

/// A series' figures in words, or why it has none.
fn series_row(source: &str, series: &SeriesTelemetry) -> SeriesRow {
    let (mean, max, per_1000) = match &series.summary {
        Some(s) => (
            shown::value(s.mean, &series.unit),
            shown::value(s.max, &series.unit),
            match (s.per_1000_requests, &series.count_unit) {
                (Some(v), Some(unit)) => shown::value(v, unit),
                _ => String::new(),
            },
        ),
        None => (String::new(), String::new(), String::new()),
    };
    let status = match (series.status, &series.reason) {
        (TelemetryStatus::Complete, _) => "complete".to_owned(),
        (status, Some(reason)) => format!("{status}: {reason}"),
        (status, None) => status.to_string(),
    };
    SeriesRow { source: source.to_owned(), series: series.name.clone(), mean, max, per_1000, status }
}

/// `db · transactions (transactions/s)`: the unit named where the axis' labels do not carry it (a share's and a
/// size's do).
fn panel_title(source: &str, series: &str, unit: &str) -> String {
    if unit == SHARE_UNIT || unit == "bytes" {
        format!("{source} · {series}")
    } else {
        format!("{source} · {series} ({unit})")
    }
}
