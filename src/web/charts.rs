//! Per-second timelines within a run, and two runs overlaid, as inline SVG drawn by charts-rs. Timelines are
//! merged here into at most [`MAX_POINTS`], so a two-hour run's chart costs about what a minute's does.
//! (Trends across runs are drawn by [`super::trend_chart`], where every point links to its run.)

use charts_rs::LineChart;

use super::WebError;
use super::trend_chart::colour;
use crate::model::TimelinePoint;

/// Lines with more points than this are drawn without a dot on each point.
const SYMBOLS_UP_TO: usize = 31;

/// The most time labels under a chart: on a phone, where its text is drawn larger, more ran together
/// (`10s11s12s13s`).
const MOST_LABELS: usize = 8;

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

/// One count per second of a [`counts_svg`] chart: legend, colour, the count of a second, and how a bucket of
/// seconds merges (the mean for a rate, the maximum for errors, whose spikes must stay visible).
pub struct CountLine {
    pub colour: &'static str,
    pub name: String,
    pub count: Box<dyn Fn(&TimelinePoint) -> f64>,
    pub merge: Merge,
}

/// A chart of counts over every second from `first_s` to `last_s` of a run, a second without a point being a
/// count of 0 (a rate of 0 is drawn, not closed up). The seconds are merged into at most [`MAX_POINTS`]
/// buckets as they are read, so the chart costs its buckets and `points`, however long the run.
pub fn counts_svg(
    title: &str,
    points: &[&TimelinePoint],
    seconds: (i64, i64),
    lines: &[CountLine],
) -> Result<String, WebError> {
    let Some(buckets) = Buckets::over(seconds) else { return Ok(String::new()) };
    if points.is_empty() {
        return Ok(String::new());
    }
    let series: Vec<Series> = lines
        .iter()
        .map(|line| Series {
            colour: line.colour,
            name: line.name.clone(),
            values: buckets.counts(points, line),
            merge: Merge::Mean,
        })
        .collect();
    line_svg(title, buckets.labels(), &series, 1)
}

/// The seconds from `first` to `last` of a run, `size` seconds a bucket, at most [`MAX_POINTS`] buckets.
struct Buckets {
    first: i64,
    span: u64,
    size: u64,
}

impl Buckets {
    fn over((first, last): (i64, i64)) -> Option<Self> {
        let span = u64::try_from(last.checked_sub(first)?).ok()?.checked_add(1)?;
        Some(Self { first, span, size: span.div_ceil(MAX_POINTS as u64) })
    }

    fn count(&self) -> usize {
        self.span.div_ceil(self.size) as usize
    }

    /// `line`'s count of each bucket: the mean of its seconds (those without a point are 0), or the worst.
    fn counts(&self, points: &[&TimelinePoint], line: &CountLine) -> Vec<f64> {
        let mut values = vec![0.0_f64; self.count()];
        for p in points {
            let Some(at) = p.elapsed_s.checked_sub(self.first).and_then(|d| u64::try_from(d).ok()) else { continue };
            let Some(value) = values.get_mut((at / self.size) as usize) else { continue };
            let count = (line.count)(p);
            *value = if matches!(line.merge, Merge::Max) { value.max(count) } else { *value + count };
        }
        if !matches!(line.merge, Merge::Max) {
            for (i, value) in values.iter_mut().enumerate() {
                *value /= self.size.min(self.span - i as u64 * self.size) as f64;
            }
        }
        values
    }

    /// Each bucket's first second: `0s`, `5s`, ….
    fn labels(&self) -> Vec<String> {
        (0..self.count() as u64).map(|i| format!("{}s", self.first.saturating_add((i * self.size) as i64))).collect()
    }
}

/// Renders `series` (full resolution) merged into buckets of `bucket` values, one label per bucket.
fn line_svg(title: &str, labels: Vec<String>, series: &[Series], bucket: usize) -> Result<String, WebError> {
    line_chart(title, labels, series, bucket).svg().map_err(|e| WebError::Render(format!("chart `{title}`: {e:?}")))
}

/// The chart of `series` (full resolution) merged into buckets of `bucket` values, one label per bucket.
fn line_chart(title: &str, labels: Vec<String>, lines: &[Series], bucket: usize) -> LineChart {
    let labels = thinned(labels);
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
    // From the left edge: a title centred for its own size ran off the right edge where CSS draws it larger.
    chart.title.align = charts_rs::Align::Left;
    if points > SYMBOLS_UP_TO {
        // A dot per point only clutters a long line, and doubles the SVG's size.
        chart.series.symbol = Some(charts_rs::Symbol::None);
    }
    chart.width = 720.0;
    chart.height = 260.0;
    chart
}

/// Every `k`-th label kept, the rest blank, so that at most [`MOST_LABELS`] are written.
fn thinned(labels: Vec<String>) -> Vec<String> {
    let every = labels.len().div_ceil(MOST_LABELS).max(1);
    labels.into_iter().enumerate().map(|(i, label)| if i % every == 0 { label } else { String::new() }).collect()
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

#[cfg(test)]
#[allow(clippy::float_cmp, reason = "counts of whole requests are exact")]
mod tests {
    use super::*;

    fn second(elapsed_s: i64, requests: i64) -> TimelinePoint {
        TimelinePoint { elapsed_s, requests, ..TimelinePoint::default() }
    }

    fn rate() -> CountLine {
        CountLine {
            colour: "#000",
            name: "requests/s".into(),
            count: Box::new(|p| p.requests as f64),
            merge: Merge::Mean,
        }
    }

    #[test]
    fn a_second_without_a_point_counts_zero_and_a_long_run_stays_in_its_buckets() {
        // Requests in seconds 1, 2 and 4 of a run of seconds 0 to 5: seconds 0, 3 and 5 are drawn at 0.
        let points = [second(1, 3), second(2, 1), second(4, 2)];
        let refs: Vec<&TimelinePoint> = points.iter().collect();
        let buckets = Buckets::over((0, 5)).unwrap();
        assert_eq!(buckets.counts(&refs, &rate()), [0.0, 3.0, 1.0, 0.0, 2.0, 0.0]);
        assert_eq!(buckets.labels(), ["0s", "1s", "2s", "3s", "4s", "5s"]);
        // A week of seconds with two busy ones: at most MAX_POINTS buckets, their means over all their seconds.
        let week = Buckets::over((0, 7 * 86_400 - 1)).unwrap();
        let counts = week.counts(&[&second(0, 5_040), &second(604_799, 7)], &rate());
        assert!(counts.len() <= MAX_POINTS, "{}", counts.len());
        assert!((counts[0] - 1.0).abs() < 1e-9, "5,040 requests over its bucket of 5,040 s: {}", counts[0]);
        let worst = CountLine { merge: Merge::Max, ..rate() };
        assert_eq!(week.counts(&[&second(3, 9), &second(4, 2)], &worst)[0], 9.0, "errors keep their worst second");
        assert!(Buckets::over((5, 4)).is_none(), "no seconds");
    }

    #[test]
    fn at_most_eight_time_labels_are_written() {
        let labels: Vec<String> = (0..18).map(|s| format!("{s}s")).collect();
        let shown: Vec<String> = thinned(labels).into_iter().filter(|l| !l.is_empty()).collect();
        assert_eq!(shown, ["0s", "3s", "6s", "9s", "12s", "15s"]);
        assert_eq!(thinned(vec!["0s".into(), "1s".into()]), ["0s", "1s"]);
    }
}
