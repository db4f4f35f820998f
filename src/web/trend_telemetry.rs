//! The trend page's server side: one chart per telemetry series, a dot per run, drawn by the same
//! [`TrendChart`] as the endpoints' (tooltips, links to the run, build ticks, invalid runs apart). A night's
//! figure is the one that stays comparable when the load changes: for a counter its growth per 1,000
//! requests (CPU seconds, transactions, blocks read), for a gauge its mean over the measured stages, with its
//! highest value beside it. A series' limits hold its mean, so they are drawn as zones on a chart of the mean:
//! a gauge's own, and, for a counter held to a limit (CPU busy at most 60 %), a second chart beside its cost.

use super::trend_chart::{Bound, GateLine, Line, OverBuckets, Scale, TrendChart};
use crate::analysis::TelemetryLimit;
use crate::model::{RunStatus, SHARE_UNIT, SeriesKind, Worse};
use crate::store::{ChartPoint, TelemetryNight};
use crate::telemetry::shown;

/// The colour of telemetry lines, as on the run page: no figure of the client's uses it.
const TELEMETRY: &str = "#0e8a7e";
/// A gauge's highest value, lighter beside its mean.
const TELEMETRY_MAX: &str = "#7cc4bb";

/// One series' chart and what it reads.
pub struct SeriesTrend {
    /// `db · transactions`.
    pub title: String,
    /// What a dot is: `per 1,000 requests, in transactions`.
    pub reads: String,
    /// The chart.
    pub svg: String,
}

// A chart point carries the night's figure as its p95 (the line with dots, links and pins) and a gauge's
// highest value as its worst p99.
const COUNTER: [Line; 1] =
    [Line { name: "per 1,000 requests", over_buckets: OverBuckets::Mean, colour: TELEMETRY, value: |p| p.p95_ms }];
const RATE: [Line; 1] =
    [Line { name: "mean", over_buckets: OverBuckets::Mean, colour: TELEMETRY, value: |p| p.p95_ms }];
const GAUGE: [Line; 2] = [
    Line { name: "mean", over_buckets: OverBuckets::Mean, colour: TELEMETRY, value: |p| p.p95_ms },
    Line { name: "max", over_buckets: OverBuckets::Worst, colour: TELEMETRY_MAX, value: |p| p.p99_max_ms },
];

/// A chart per series of `nights` (by series, then time, as the store reads them), in the order the series
/// first appear; a counter held to a limit gets a second chart, of the mean the limit holds.
#[must_use]
pub fn series_trends(
    nights: &[TelemetryNight],
    limits: &[TelemetryLimit],
    scale: Scale,
    zoom: &str,
) -> Vec<SeriesTrend> {
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for night in nights {
        let key = (night.source.as_str(), night.series.as_str());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let mut charts = Vec::new();
    for (source, series) in keys {
        let mine: Vec<&TelemetryNight> = nights.iter().filter(|n| n.source == source && n.series == series).collect();
        let limit = limits.iter().find(|l| l.source == source && l.series == series);
        let Some(newest) = mine.last() else { continue };
        // In the unit of its newest night: a series whose definition changed is drawn in its current one, and
        // nights in another unit or kind are left out rather than drawn on the wrong scale.
        let same = |n: &&&TelemetryNight| n.unit == newest.unit && n.kind == newest.kind;
        let mine: Vec<&TelemetryNight> = mine.iter().filter(same).copied().collect();
        let figures = match newest.kind {
            SeriesKind::Counter if limit.is_some() => &[Figure::PerThousand, Figure::Mean][..],
            SeriesKind::Counter => &[Figure::PerThousand],
            SeriesKind::Gauge => &[Figure::Mean],
        };
        charts.extend(figures.iter().filter_map(|figure| series_trend(&mine, *figure, limit, scale, zoom)));
    }
    charts
}

/// What a series' chart draws night by night.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Figure {
    /// A counter's growth per 1,000 requests: its cost, comparable when the load changes (what is judged).
    PerThousand,
    /// The mean over the measured stages (a gauge's, with its highest value; a counter's rate): what a limit
    /// holds, so its limits are drawn here as zones.
    Mean,
}

/// One chart of one series' nights, all in the same unit and kind.
fn series_trend(
    nights: &[&TelemetryNight],
    figure: Figure,
    limit: Option<&TelemetryLimit>,
    scale: Scale,
    zoom: &str,
) -> Option<SeriesTrend> {
    let newest = nights.last()?;
    let (lines, unit): (&'static [Line], &str) = match (figure, newest.kind) {
        (Figure::PerThousand, _) => (&COUNTER, newest.count_unit.as_deref().unwrap_or(&newest.unit)),
        (Figure::Mean, SeriesKind::Gauge) => (&GAUGE, &newest.unit),
        (Figure::Mean, SeriesKind::Counter) => (&RATE, &newest.unit),
    };
    let value = |n: &TelemetryNight| match figure {
        Figure::PerThousand => n.summary.per_1000_requests,
        Figure::Mean => Some(n.summary.mean),
    };
    let drawn: Vec<(&TelemetryNight, f64)> = nights.iter().filter_map(|n| Some((*n, value(n)?))).collect();
    let bounds = limit.filter(|_| figure == Figure::Mean).map(|l| (l.max, l.min)).unwrap_or_default();
    let peak = drawn.iter().map(|(n, v)| v.max(n.summary.max)).fold(bounds.0.unwrap_or(0.0), f64::max);
    let (factor, shown_unit) = chart_unit(unit, peak);
    let points: Vec<ChartPoint> = drawn.iter().map(|(n, v)| point(n, v * factor, n.summary.max * factor)).collect();
    let points: Vec<&ChartPoint> = points.iter().collect();
    let gates = [bounds.0.map(|max| (max, Bound::AtMost)), bounds.1.map(|min| (min, Bound::AtLeast))];
    let gates =
        gates.into_iter().flatten().map(|(limit, bound)| GateLine { figure: "mean", limit: limit * factor, bound });
    let title = match (figure, newest.kind) {
        (Figure::Mean, SeriesKind::Counter) => format!("{} · {}: mean", newest.source, newest.series),
        _ => format!("{} · {}", newest.source, newest.series),
    };
    let chart = TrendChart {
        title: title.clone(),
        unit: &shown_unit,
        lines,
        spread: None,
        band: None,
        limits: gates.collect(),
        scale,
        main: true,
        zoom: Some(zoom.to_owned()),
    };
    Some(SeriesTrend { svg: chart.render(&points), title, reads: reads(newest, figure, unit, limit) })
}

/// What a dot of the chart is, in words, with the limits a mean is held to.
fn reads(newest: &TelemetryNight, figure: Figure, unit: &str, limit: Option<&TelemetryLimit>) -> String {
    let worse = match newest.worse {
        Worse::Higher => "higher is worse",
        Worse::Lower => "lower is worse",
    };
    let mut reads = match (figure, newest.kind) {
        (Figure::PerThousand, _) => format!("growth per 1,000 requests, in {unit}; {worse}"),
        (Figure::Mean, SeriesKind::Gauge) => format!("mean and highest value over the measured stages; {worse}"),
        (Figure::Mean, SeriesKind::Counter) => format!("mean over the measured stages; {worse}"),
    };
    // The limits are drawn on the chart of the mean, and said under it.
    if let Some(limit) = limit.filter(|_| figure == Figure::Mean) {
        let bound = |word: &str, value: Option<f64>| value.map(|v| format!("{word} {}", shown::value(v, &newest.unit)));
        let bounds: Vec<String> =
            [bound("at most", limit.max), bound("at least", limit.min)].into_iter().flatten().collect();
        reads.push_str(&format!("; its mean is held to {}", bounds.join(" and ")));
    }
    reads
}

/// The factor and unit a chart shows a series' values in: a share as a percentage, bytes in the binary unit
/// that keeps the highest value readable (as `telemetry::shown` writes them), anything else as it is.
fn chart_unit(unit: &str, peak: f64) -> (f64, String) {
    if unit == SHARE_UNIT {
        return (100.0, "%".to_owned());
    }
    if unit == "bytes" {
        let binary = [(1u64 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
        if let Some((size, name)) = binary.into_iter().find(|(size, _)| peak >= *size as f64) {
            return (1.0 / size as f64, name.to_owned());
        }
    }
    (1.0, unit.to_owned())
}

/// One night of a series as a chart point of one run.
fn point(night: &TelemetryNight, figure: f64, max: f64) -> ChartPoint {
    ChartPoint {
        endpoint: night.series.clone(),
        started_at: night.started_at,
        runs: 1,
        run_id: Some(night.run_id),
        status: Some(night.status),
        p50_ms: figure,
        p95_ms: figure,
        p99_ms: max,
        error_pct: 0.0,
        rate: 0.0,
        p95_range_ms: (figure, figure),
        p99_max_ms: max,
        error_pct_max: 0.0,
        regressed: i64::from(night.regressed),
        invalid: i64::from(night.status == RunStatus::Invalid),
        build_id: night.build_id.clone(),
    }
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, Utc};

    use super::*;
    use crate::model::SeriesSummary;

    fn night(run_id: i64, kind: SeriesKind, mean: f64, per_1000: Option<f64>) -> TelemetryNight {
        TelemetryNight {
            run_id,
            started_at: Utc::now() - Duration::days(10 - run_id),
            status: RunStatus::Passed,
            build_id: Some(format!("1.0.{run_id}")),
            source: "api".into(),
            series: if kind == SeriesKind::Counter { "CPU".into() } else { "memory".into() },
            unit: if kind == SeriesKind::Counter { "CPU s/s".into() } else { "bytes".into() },
            count_unit: (kind == SeriesKind::Counter).then(|| "CPU s".into()),
            kind,
            worse: Worse::Higher,
            summary: SeriesSummary { mean, max: mean * 1.5, per_1000_requests: per_1000 },
            regressed: false,
        }
    }

    #[test]
    fn a_counter_is_drawn_per_1000_requests_and_a_gauge_by_mean_and_max() {
        let nights = [
            night(1, SeriesKind::Counter, 0.4, Some(0.41)),
            night(2, SeriesKind::Counter, 0.5, Some(0.56)),
            night(1, SeriesKind::Gauge, 300.0 * 1_048_576.0, None),
            night(2, SeriesKind::Gauge, 310.0 * 1_048_576.0, None),
        ];
        let charts = series_trends(&nights, &[], Scale::Linear, "?range=30d");
        assert_eq!(charts.len(), 2);
        let (cpu, memory) = (&charts[0], &charts[1]);
        assert_eq!(cpu.title, "api · CPU");
        assert!(cpu.reads.contains("per 1,000 requests, in CPU s"), "{}", cpu.reads);
        assert!(cpu.svg.contains("per 1,000 requests 0.56 CPU s"), "the tooltip reads the cost: {}", cpu.svg);
        assert!(cpu.svg.contains("href=\"/runs/2\""));
        assert!(memory.svg.contains("mean 310 MiB, max 465 MiB"), "bytes read in MiB: {}", memory.svg);
    }

    #[test]
    fn a_regressed_night_is_pinned_and_a_gauges_ceiling_is_a_zone() {
        let mut regressed = night(2, SeriesKind::Gauge, 310.0 * 1_048_576.0, None);
        regressed.regressed = true;
        let nights = [night(1, SeriesKind::Gauge, 300.0 * 1_048_576.0, None), regressed];
        let limit =
            TelemetryLimit { source: "api".into(), series: "memory".into(), max: Some(400.0 * 1_048_576.0), min: None };
        let chart = &series_trends(&nights, &[limit], Scale::Linear, "?")[0];
        assert!(chart.svg.contains("gate: mean at most 400 MiB"), "{}", chart.svg);
        assert_eq!(chart.svg.matches("class=\"pin\"").count(), 1, "the regressed night's pin: {}", chart.svg);
        assert!(chart.reads.ends_with("its mean is held to at most 400 MiB"), "{}", chart.reads);
    }

    #[test]
    fn a_counter_held_to_limits_gets_a_chart_of_its_mean_with_both_zones() {
        let nights = [night(1, SeriesKind::Counter, 0.4, Some(0.41)), night(2, SeriesKind::Counter, 0.5, Some(0.56))];
        let limit = TelemetryLimit { source: "api".into(), series: "CPU".into(), max: Some(0.6), min: Some(0.1) };
        let charts = series_trends(&nights, &[limit], Scale::Linear, "?");
        let titles: Vec<&str> = charts.iter().map(|c| c.title.as_str()).collect();
        assert_eq!(titles, ["api · CPU", "api · CPU: mean"]);
        assert!(!charts[0].svg.contains("class=\"gate\""), "the cost per 1,000 requests is not what a limit holds");
        let mean = &charts[1];
        assert!(mean.svg.contains("gate: mean at most 0.60 CPU s/s"), "{}", mean.svg);
        assert!(mean.svg.contains("gate: mean at least 0.10 CPU s/s"), "{}", mean.svg);
        assert!(mean.reads.ends_with("at most 0.600 CPU s/s and at least 0.1000 CPU s/s"), "{}", mean.reads);
    }

    #[test]
    fn nights_without_a_figure_or_in_another_unit_are_left_out() {
        let mut other_unit = night(3, SeriesKind::Counter, 9.0, Some(9.0));
        other_unit.unit = "queries/s".into();
        let nights = [
            night(1, SeriesKind::Counter, 0.4, None),
            night(2, SeriesKind::Counter, 0.4, Some(0.4)),
            other_unit,
            night(4, SeriesKind::Counter, 0.4, Some(0.45)),
        ];
        let chart = &series_trends(&nights, &[], Scale::Linear, "?")[0];
        assert!(!chart.svg.contains("/runs/1\"") && !chart.svg.contains("/runs/3\""), "{}", chart.svg);
        assert!(chart.svg.contains("/runs/2\"") && chart.svg.contains("/runs/4\""));
    }
}
