//! Charts as inline SVG (charts-rs): trends across runs and per-second timelines within a run. Trends arrive
//! merged from the database into as many buckets as their range allows, timelines are merged here into at
//! most [`MAX_POINTS`], so a chart costs about the same for three weeks as for three years.

use charts_rs::LineChart;

use super::WebError;
use crate::store::{TimelinePoint, TrendBucket};

/// Lines with more points than this are drawn without a dot on each point.
const SYMBOLS_UP_TO: usize = 31;

/// The most points one line of a per-second timeline holds.
const MAX_POINTS: usize = 120;

/// How a bucket of values becomes one point.
#[derive(Debug, Clone, Copy)]
pub enum Merge {
    /// The median: for levels (a trend across nights, a median latency).
    Median,
    /// The maximum: for spikes that must stay visible (p99, errors).
    Max,
    /// The mean: for rates.
    Mean,
}

impl Merge {
    fn apply(self, values: &[f64]) -> f64 {
        match self {
            Self::Median => crate::analysis::level::median(values),
            Self::Max => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            Self::Mean => values.iter().sum::<f64>() / values.len() as f64,
        }
    }
}

/// One line of a chart: legend, values at full resolution, and how buckets merge them.
pub struct Series {
    /// Legend text.
    pub name: String,
    /// One value per run or per second.
    pub values: Vec<f64>,
    /// How buckets of values become points.
    pub merge: Merge,
}

/// One line of a trend chart: its legend and which figure of a bucket it draws.
pub type TrendLine = (&'static str, fn(&TrendBucket) -> f64);

/// What a trend chart marks on its line `on`: a shaded band (the baseline's usual range) and points
/// (regressed runs).
#[derive(Debug, Clone, Default)]
pub struct Marks {
    /// The index of the line that carries the marks.
    pub on: usize,
    /// `(low, high)` of the shaded band.
    pub band: Option<(f64, f64)>,
    /// Indices of the points to mark.
    pub points: Vec<usize>,
}

/// A line chart of one endpoint across runs: `(legend, value of a bucket)` per line. The buckets come
/// merged from the database (see `Store::trend_buckets`), as many as the range allows.
pub fn trend_svg(
    title: &str,
    buckets: &[&TrendBucket],
    lines: &[TrendLine],
    marks: &Marks,
) -> Result<String, WebError> {
    if buckets.is_empty() {
        return Ok(String::new());
    }
    let labels = buckets.iter().map(|b| b.started_at.format("%Y-%m-%d").to_string()).collect();
    let series: Vec<Series> = lines
        .iter()
        .map(|(name, value)| Series {
            name: (*name).to_owned(),
            values: buckets.iter().map(|b| value(b)).collect(),
            merge: Merge::Median,
        })
        .collect();
    let mut chart = line_chart(title, labels, &series, 1);
    if let Some(line) = chart.series_list.get_mut(marks.on) {
        if let Some((low, high)) = marks.band {
            line.mark_areas.push(charts_rs::MarkArea {
                from: charts_rs::MarkLineCategory::Value(low as f32),
                to: charts_rs::MarkLineCategory::Value(high as f32),
                ..charts_rs::MarkArea::default()
            });
        }
        line.mark_points.extend(
            marks.points.iter().map(|i| charts_rs::MarkPoint { category: charts_rs::MarkPointCategory::Index(*i) }),
        );
    }
    chart.svg().map_err(|e| WebError::Render(format!("chart `{title}`: {e:?}")))
}

/// A line chart of one endpoint's seconds within a run: `(legend, value per second)` per line.
pub fn timeline_svg(title: &str, points: &[&TimelinePoint], series: &[Series]) -> Result<String, WebError> {
    if points.is_empty() {
        return Ok(String::new());
    }
    let bucket = points.len().div_ceil(MAX_POINTS);
    let labels = points.chunks(bucket).map(|c| format!("{}s", c[0].elapsed_s)).collect();
    line_svg(title, labels, series, bucket)
}

/// Renders `series` (full resolution) merged into buckets of `bucket` values, one label per bucket.
fn line_svg(title: &str, labels: Vec<String>, series: &[Series], bucket: usize) -> Result<String, WebError> {
    line_chart(title, labels, series, bucket).svg().map_err(|e| WebError::Render(format!("chart `{title}`: {e:?}")))
}

/// The chart of `series` (full resolution) merged into buckets of `bucket` values, one label per bucket.
fn line_chart(title: &str, labels: Vec<String>, series: &[Series], bucket: usize) -> LineChart {
    let series: Vec<charts_rs::Series> = series
        .iter()
        .map(|s| {
            let merged: Vec<f32> = s.values.chunks(bucket).map(|c| s.merge.apply(c) as f32).collect();
            (s.name.as_str(), merged).into()
        })
        .collect();
    let points = series.first().map_or(0, |s| s.data.len());
    let mut chart = LineChart::new(series, labels);
    title.clone_into(&mut chart.title.text);
    if points > SYMBOLS_UP_TO {
        // A dot per point only clutters a long line, and doubles the SVG's size.
        chart.series.symbol = Some(charts_rs::Symbol::None);
    }
    chart.width = 720.0;
    chart.height = 260.0;
    chart
}

/// Two runs' timelines of one endpoint on one chart: `value` of each second (bucket maxima), A against B.
pub fn overlay_svg(
    title: &str,
    a: (&'static str, &[&TimelinePoint]),
    b: (&'static str, &[&TimelinePoint]),
    value: fn(&TimelinePoint) -> f64,
) -> Result<String, WebError> {
    let longest = a.1.len().max(b.1.len());
    if longest == 0 {
        return Ok(String::new());
    }
    let bucket = longest.div_ceil(MAX_POINTS);
    let labels = (0..longest).step_by(bucket).map(|s| format!("{s}s")).collect();
    let line = |(name, points): (&str, &[&TimelinePoint])| Series {
        name: name.to_owned(),
        values: points.iter().map(|p| value(p)).collect(),
        merge: Merge::Max,
    };
    let series = [line(a), line(b)];
    line_svg(title, labels, &series, bucket)
}

/// A sparkline: a tiny inline SVG polyline of `values` (oldest first), no axes, for the overview.
#[must_use]
pub fn sparkline_svg(values: &[f64]) -> String {
    const WIDTH: f64 = 120.0;
    const HEIGHT: f64 = 24.0;
    if values.len() < 2 {
        return String::new();
    }
    // The axis starts at zero, so night-to-night noise looks as small as it is and a +30 % step stands out.
    let (low, high) = values.iter().fold((0.0_f64, f64::NEG_INFINITY), |(l, h), v| (l.min(*v), h.max(*v)));
    let span = if high > low { high - low } else { 1.0 };
    let step = WIDTH / (values.len() - 1) as f64;
    let points: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{:.1},{:.1}", i as f64 * step, HEIGHT - 2.0 - (v - low) / span * (HEIGHT - 4.0)))
        .collect();
    format!(
        "<svg class=\"spark\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\">\
         <polyline fill=\"none\" stroke=\"#3b6fd8\" stroke-width=\"1.5\" points=\"{}\"/></svg>",
        points.join(" ")
    )
}
