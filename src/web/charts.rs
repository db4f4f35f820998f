//! Per-second timelines within a run, and two runs overlaid, as inline SVG drawn by charts-rs. Timelines are
//! merged here into at most [`MAX_POINTS`], so a two-hour run's chart costs about what a minute's does.
//! (Trends across runs are drawn by [`super::trend_chart`], where every point links to its run.)

use charts_rs::LineChart;

use super::WebError;
use super::trend_chart::colour;
use crate::model::TimelinePoint;

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

/// One line of a chart: legend, colour, values at full resolution, and how buckets merge them.
pub struct Series {
    /// Stroke colour (see [`super::trend_chart::colour`], so p99 is the same colour on every chart).
    pub colour: &'static str,
    /// Legend text.
    pub name: String,
    /// One value per run or per second.
    pub values: Vec<f64>,
    /// How buckets of values become points.
    pub merge: Merge,
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
fn line_chart(title: &str, labels: Vec<String>, lines: &[Series], bucket: usize) -> LineChart {
    let series: Vec<charts_rs::Series> = lines
        .iter()
        .map(|s| {
            let merged: Vec<f32> = s.values.chunks(bucket).map(|c| s.merge.apply(c) as f32).collect();
            (s.name.as_str(), merged).into()
        })
        .collect();
    let colours = lines.iter().map(|s| charts_rs::Color::from(s.colour)).collect();
    let points = series.first().map_or(0, |s| s.data.len());
    let mut chart = LineChart::new(series, labels);
    chart.series.colors = colours;
    // The page's fonts, with fallbacks that exist everywhere (charts-rs names one font, which renders in a
    // serif face where it is missing).
    super::trend_chart::FONTS.clone_into(&mut chart.font_family);
    chart.compact = true;
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
    let line = |(name, points): (&str, &[&TimelinePoint]), colour| Series {
        colour,
        name: name.to_owned(),
        values: points.iter().map(|p| value(p)).collect(),
        merge: Merge::Max,
    };
    // A in the median's pale blue, B (usually the newer run) in the p95 colour.
    let series = [line(a, colour::P50), line(b, colour::P95)];
    line_svg(title, labels, &series, bucket)
}
