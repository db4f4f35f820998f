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
/// (regressed runs); and across the plot, dashed vertical lines where the build changed and a cross under
/// invalid runs.
#[derive(Debug, Clone, Default)]
pub struct Marks {
    /// The index of the line that carries the marks.
    pub on: usize,
    /// `(low, high)` of the shaded band.
    pub band: Option<(f64, f64)>,
    /// Indices of the points to mark.
    pub points: Vec<usize>,
    /// Points where a new build starts, with the change in words (`1.4.2 → 1.4.3`).
    pub builds: Vec<(usize, String)>,
    /// Points of invalid runs.
    pub invalid: Vec<usize>,
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
    let svg = chart.svg().map_err(|e| WebError::Render(format!("chart `{title}`: {e:?}")))?;
    Ok(annotate(svg, &marks.builds, &marks.invalid))
}

/// Adds build-change lines and invalid-run crosses, which charts-rs cannot draw, at the x positions of the
/// chart's first line (read back from its path). A chart whose geometry cannot be read is left as it is.
fn annotate(svg: String, builds: &[(usize, String)], invalid: &[usize]) -> String {
    if builds.is_empty() && invalid.is_empty() {
        return svg;
    }
    let Some((xs, top, bottom)) = geometry(&svg) else { return svg };
    let mut marks = String::new();
    for (index, change) in builds {
        if let Some(x) = xs.get(*index) {
            marks.push_str(&format!(
                "<line class=\"build-change\" x1=\"{x}\" y1=\"{top}\" x2=\"{x}\" y2=\"{bottom}\" stroke=\"#888\" \
                 stroke-dasharray=\"4 3\"><title>build {}</title></line>",
                escape(change)
            ));
        }
    }
    for index in invalid {
        if let Some(x) = xs.get(*index) {
            marks.push_str(&format!(
                "<text class=\"invalid-run\" x=\"{x}\" y=\"{}\" text-anchor=\"middle\" font-size=\"14\" \
                 fill=\"#b3261e\">×<title>invalid run: not used as a baseline</title></text>",
                bottom - 4.0
            ));
        }
    }
    match svg.rfind("</svg>") {
        Some(end) => format!("{}{marks}{}", &svg[..end], &svg[end..]),
        None => svg,
    }
}

/// The x of each point of the first line, and the plot's top and bottom (its outermost grid lines).
fn geometry(svg: &str) -> Option<(Vec<f64>, f64, f64)> {
    let path = svg.split("<path d=\"M ").nth(1)?.split('"').next()?;
    let xs: Vec<f64> = path.split(['M', 'L']).filter_map(|pair| pair.split_whitespace().next()?.parse().ok()).collect();
    let mut ys: Vec<f64> = Vec::new();
    for line in svg.split("<line ").skip(1) {
        let attribute =
            |name: &str| -> Option<f64> { line.split(&format!("{name}=\"")).nth(1)?.split('"').next()?.parse().ok() };
        if let (Some(x1), Some(x2), Some(y1), Some(y2)) =
            (attribute("x1"), attribute("x2"), attribute("y1"), attribute("y2"))
            && (y1 - y2).abs() < f64::EPSILON
            && x2 - x1 > 100.0
        {
            ys.push(y1);
        }
    }
    let top = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let bottom = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (top.is_finite() && bottom > top && !xs.is_empty()).then_some((xs, top, bottom))
}

/// Text safe inside SVG markup.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
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

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(day: u32, p95: f64) -> TrendBucket {
        TrendBucket {
            endpoint: "GET /x".into(),
            started_at: chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2026, 11, day, 2, 0, 0).unwrap(),
            runs: 1,
            p50_ms: p95 / 2.0,
            p95_ms: p95,
            p99_ms: p95 * 1.5,
            error_pct: 0.0,
            rate: 10.0,
            regressed: 0,
            invalid: 0,
            build_id: None,
        }
    }

    #[test]
    fn build_changes_and_invalid_runs_are_drawn_at_their_points() {
        let buckets: Vec<TrendBucket> = (1..=4).map(|d| bucket(d, 10.0 + f64::from(d))).collect();
        let refs: Vec<&TrendBucket> = buckets.iter().collect();
        let marks = Marks { builds: vec![(2, "1.0.1 → <1.0.2>".into())], invalid: vec![3], ..Marks::default() };
        let svg = trend_svg("t", &refs, &[("p95 ms", |b| b.p95_ms)], &marks).unwrap();
        let (xs, top, bottom) = geometry(&svg).unwrap();
        assert_eq!(xs.len(), 4);
        assert!(top < bottom);
        assert!(svg.contains(&format!(r#"class="build-change" x1="{}""#, xs[2])), "{svg}");
        assert!(svg.contains("<title>build 1.0.1 → &lt;1.0.2&gt;</title>"), "names are escaped: {svg}");
        assert!(svg.contains(&format!(r#"class="invalid-run" x="{}""#, xs[3])), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"));
    }
}
