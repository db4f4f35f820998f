//! Charts as inline SVG (charts-rs): trends across runs and per-second timelines within a run. Long series
//! are merged into at most [`MAX_POINTS`] buckets holding their median, so a chart costs the same for three
//! weeks as for three years.

use charts_rs::{LineChart, Series};

use super::WebError;
use crate::store::{TimelinePoint, TrendPoint};

/// The most points one line of a chart holds. A nightly series reaches it after about four months.
pub const MAX_POINTS: usize = 120;

/// One line of a trend chart: its name and one point per run, oldest first.
pub struct Line {
    /// Legend text.
    pub name: &'static str,
    /// One trend point per run, oldest first.
    pub points: Vec<TrendPoint>,
}

/// A line chart of runs over time; `lines` share the x axis of the longest one.
pub fn trend_svg(title: &str, lines: &[Line]) -> Result<String, WebError> {
    let Some(longest) = lines.iter().map(|l| l.points.len()).max().filter(|n| *n > 0) else {
        return Ok(String::new());
    };
    let bucket = longest.div_ceil(MAX_POINTS);
    let labels: Vec<String> = lines
        .iter()
        .find(|l| l.points.len() == longest)
        .map(|l| l.points.chunks(bucket).map(|c| c[0].started_at.format("%Y-%m-%d").to_string()).collect())
        .unwrap_or_default();
    let series: Vec<(String, Vec<f64>)> =
        lines.iter().map(|line| (line.name.to_owned(), line.points.iter().map(|p| p.value).collect())).collect();
    line_svg(title, labels, &series, bucket)
}

/// A line chart of one endpoint's seconds within a run: `(legend, value per second)` per line.
pub fn timeline_svg(title: &str, points: &[&TimelinePoint], series: &[(String, Vec<f64>)]) -> Result<String, WebError> {
    if points.is_empty() {
        return Ok(String::new());
    }
    let bucket = points.len().div_ceil(MAX_POINTS);
    let labels = points.chunks(bucket).map(|c| format!("{}s", c[0].elapsed_s)).collect();
    line_svg(title, labels, series, bucket)
}

/// Renders `series` (full resolution) merged into buckets of `bucket` values, one label per bucket.
fn line_svg(
    title: &str,
    labels: Vec<String>,
    series: &[(String, Vec<f64>)],
    bucket: usize,
) -> Result<String, WebError> {
    let series: Vec<Series> = series
        .iter()
        .map(|(name, values)| {
            let merged: Vec<f32> = values.chunks(bucket).map(|c| crate::analysis::level::median(c) as f32).collect();
            (name.as_str(), merged).into()
        })
        .collect();
    let mut chart = LineChart::new(series, labels);
    title.clone_into(&mut chart.title.text);
    chart.width = 720.0;
    chart.height = 260.0;
    chart.svg().map_err(|e| WebError::Render(format!("chart `{title}`: {e:?}")))
}

/// Two runs' timelines of one endpoint on one chart: `value` of each second, run A against run B.
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
    let series = [
        (a.0.to_owned(), a.1.iter().map(|p| value(p)).collect()),
        (b.0.to_owned(), b.1.iter().map(|p| value(p)).collect()),
    ];
    line_svg(title, labels, &series, bucket)
}
