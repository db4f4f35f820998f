//! Trend charts as inline SVG (charts-rs), and the downsampling that keeps a chart's cost flat however long
//! the history: past [`MAX_POINTS`] runs, consecutive runs are merged into buckets holding their median.

use charts_rs::{LineChart, Series};

use super::WebError;
use crate::store::TrendPoint;

/// The most points one line of a chart holds. A nightly series reaches it after about four months.
pub const MAX_POINTS: usize = 120;

/// One line of a chart: its name and its points, already downsampled to the chart's x axis.
pub struct Line {
    /// Legend text.
    pub name: &'static str,
    /// One trend point per run, oldest first.
    pub points: Vec<TrendPoint>,
}

/// An SVG line chart of `lines`, which share one x axis (runs of the same scenario and endpoint).
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
    let series: Vec<Series> = lines
        .iter()
        .map(|line| {
            let values: Vec<f32> = line.points.chunks(bucket).map(|c| median(c) as f32).collect();
            (line.name, values).into()
        })
        .collect();
    let mut chart = LineChart::new(series, labels);
    title.clone_into(&mut chart.title.text);
    chart.width = 720.0;
    chart.height = 260.0;
    chart.svg().map_err(|e| WebError::Render(format!("chart `{title}`: {e:?}")))
}

fn median(points: &[TrendPoint]) -> f64 {
    let values: Vec<f64> = points.iter().map(|p| p.value).collect();
    crate::analysis::level::median(&values)
}
