//! Trend charts, drawn as SVG here rather than by charts-rs, because every point must be a way in: each run
//! is a dot with a tooltip (`<title>`: run, build, time, value with its unit, verdict) and a link to its run,
//! regressed runs carry a pin in the one alarm colour, a bucket of many runs shows its spread as a whisker,
//! and build changes are labelled ticks on the time axis. Points are spaced one slot per point, not by
//! time, so ten runs within an hour stay ten dots. Text and axes use the page's colour and font, so the
//! chart reads the same as the page in light and dark mode.

use std::fmt::Write as _;

use chrono::{Datelike, Timelike};

use super::svg::{Px, format_value, log_ticks, nice_ticks, push_integer, push_px, tick_label};
use super::trend_time_axis::time_axis;
use crate::model::RunStatus;
use crate::outside_text::{push_xml_escaped, xml_escape};
use crate::store::ChartPoint;

/// The colour of anything that means "regressed", on every chart and page.
pub const ALARM: &str = "#d92d20";
/// The colour of each figure, the same on every chart: trends, run timelines, comparisons.
pub mod colour {
    /// The median.
    pub const P50: &str = "#8fb3e8";
    /// The 95th percentile, the figure a trend chart's dots, band and pins sit on.
    pub const P95: &str = "#2f6fd0";
    /// The 99th percentile.
    pub const P99: &str = "#7a4fc0";
    /// Errors.
    pub const ERRORS: &str = "#b9770e";
    /// Requests per second.
    pub const THROUGHPUT: &str = "#4a8f6a";
}

/// Fonts named on the chart: the page's own stack, ending in fonts that exist on a bare Linux box.
pub const FONTS: &str = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Noto Sans', 'DejaVu Sans', sans-serif";
pub(super) const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 290.0;
pub(super) const LEFT: f64 = 62.0;
pub(super) const RIGHT: f64 = 14.0;
const TOP: f64 = 52.0;
/// The plot's bottom edge; below it, date labels and then build labels.
pub(super) const BOTTOM: f64 = 236.0;

/// Past this many points a chart's dots overlap (a slot is under 5.4 px wide): they are drawn smaller, and only
/// on an endpoint's main chart.
pub const DENSE: usize = 120;

/// The value axis: linear from zero, or logarithmic (`?scale=log`), where a big jump does not flatten the
/// normal range into the axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// From zero up.
    Linear,
    /// Powers of ten, around the values.
    Log,
}

/// A bucket's spread on a chart's first line: its lowest and highest value.
pub type Spread = fn(&ChartPoint) -> (f64, f64);

/// What a line shows over a bucket of several runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverBuckets {
    /// The mean of the runs (the first line also shows their spread as a whisker).
    Mean,
    /// The worst run: a tail or an error spike of one night is never averaged away.
    Worst,
}

/// One line of a chart.
pub struct Line {
    /// Legend text, also used in tooltips: `p95`.
    pub name: &'static str,
    /// What the line shows over a bucket, said in its tooltip.
    pub over_buckets: OverBuckets,
    /// Stroke colour.
    pub colour: &'static str,
    /// The figure of a point it draws.
    pub value: fn(&ChartPoint) -> f64,
}

/// A chart of one endpoint's figures across runs.
pub struct TrendChart<'a> {
    /// Above the plot.
    pub title: String,
    /// Of every line's values: `ms`, `%`, `req/s`.
    pub unit: &'static str,
    /// The lines, drawn in order; the first carries dots, links, pins, whiskers and the band.
    pub lines: &'a [Line],
    /// A bucket's spread on the first line (lowest, highest), drawn as a whisker.
    pub spread: Option<Spread>,
    /// The range a normal night falls in on the first line, shaded.
    pub band: Option<(f64, f64)>,
    /// The absolute gates of `[scenario.gates]` on this chart, as (figure, limit): each is a dashed line with
    /// a faint red zone above it (where two overlap, the zone above both is the deeper red).
    pub limits: Vec<(&'static str, f64)>,
    /// The value axis.
    pub scale: Scale,
    /// The endpoint's main chart: regressed runs get the alarm pin here (not on every chart of an endpoint),
    /// and when its points are too dense to tell apart (more than [`DENSE`]) only it draws them as linked dots
    /// with tooltips; the other charts draw their lines alone, which halves a year-long page.
    pub main: bool,
    /// The page's link keeping its scale and series (`?range=all&scale=log`): a bucket's dot adds its dates to
    /// it, so a click zooms in on the bucket's runs. None: buckets link nowhere.
    pub zoom: Option<String>,
}

/// Where values land on the plot.
struct Axis {
    low: f64,
    high: f64,
    scale: Scale,
}

impl Axis {
    fn y(&self, value: f64) -> f64 {
        let (v, low, high) = match self.scale {
            Scale::Linear => (value, self.low, self.high),
            Scale::Log => (value.max(self.low).ln(), self.low.ln(), self.high.ln()),
        };
        BOTTOM - (v - low) / (high - low) * (BOTTOM - TOP)
    }
}

/// The centre of point `index` of `count`, one slot each.
pub(super) fn slot_x(index: usize, count: usize) -> f64 {
    LEFT + (WIDTH - LEFT - RIGHT) * (index as f64 + 0.5) / count as f64
}

/// Where a bucket's dot leads: the page zoomed from the bucket's first day to the day the next bucket starts
/// (both included, so a run near the edge is never lost), or to today for the last bucket.
fn bucket_zoom(page: &str, bucket: &ChartPoint, next: Option<&ChartPoint>) -> String {
    let mut link = format!("{page}&from=");
    push_date(&mut link, bucket);
    if let Some(next) = next {
        link.push_str("&to=");
        push_date(&mut link, next);
    }
    link
}

impl TrendChart<'_> {
    /// The chart as inline SVG; empty when there are no points.
    #[must_use]
    pub fn render(&self, points: &[&ChartPoint]) -> String {
        if points.is_empty() || self.lines.is_empty() {
            return String::new();
        }
        let (axis, ticks) = self.axis(points);
        let mut svg = format!(
            "<svg class=\"trend\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
             width=\"{WIDTH}\" height=\"{HEIGHT}\" role=\"img\" aria-label=\"{title}\" font-family=\"{FONTS}\" \
             font-size=\"12\" fill=\"currentColor\"><text class=\"title\" x=\"{LEFT}\" y=\"16\" \
             font-size=\"14\" font-weight=\"600\">{title}</text>",
            title = xml_escape(&self.title)
        );
        self.legend(&mut svg);
        self.grid(&mut svg, &axis, &ticks);
        self.zones(&mut svg, &axis);
        self.draw_lines(&mut svg, &axis, points);
        time_axis(&mut svg, points);
        if self.main || points.len() <= DENSE {
            self.dots(&mut svg, &axis, points);
        }
        svg.push_str("</svg>");
        svg
    }

    /// The value axis covering every value, the band and the limit, and its tick values.
    fn axis(&self, points: &[&ChartPoint]) -> (Axis, Vec<f64>) {
        let mut values: Vec<f64> =
            self.lines.iter().flat_map(|line| points.iter().map(move |p| (line.value)(p))).collect();
        if let Some(spread) = self.spread {
            values.extend(points.iter().map(|p| spread(p).1));
        }
        values.extend(self.band.iter().flat_map(|(low, high)| [*low, *high]));
        values.extend(self.limits.iter().map(|(_, limit)| *limit));
        values.retain(|v| v.is_finite());
        let max = values.iter().copied().fold(0.0_f64, f64::max);
        match self.scale {
            Scale::Linear => {
                let ticks = nice_ticks(0.0, if max > 0.0 { max * 1.05 } else { 1.0 });
                let high = ticks.last().copied().unwrap_or(1.0);
                (Axis { low: 0.0, high, scale: self.scale }, ticks)
            }
            Scale::Log => {
                let min = values.iter().copied().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
                let (low, high) = if min.is_finite() { (min / 1.25, max * 1.25) } else { (0.1, 1.0) };
                let ticks = log_ticks(low, high);
                (Axis { low, high, scale: self.scale }, ticks)
            }
        }
    }

    /// The legend, on its own row under the title, so a long endpoint name never runs into it; spaced for
    /// text up to 1.5 times its size (narrow screens enlarge chart text).
    fn legend(&self, svg: &mut String) {
        let mut x = LEFT;
        for line in self.lines {
            let _ = write!(
                svg,
                "<rect x=\"{x}\" y=\"26\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"35\">{}</text>",
                line.colour,
                x + 14.0,
                line.name
            );
            x += 30.0 + 11.0 * line.name.len() as f64;
        }
    }

    fn grid(&self, svg: &mut String, axis: &Axis, ticks: &[f64]) {
        for tick in ticks {
            let y = axis.y(*tick);
            let _ = write!(
                svg,
                "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"currentColor\" \
                 stroke-opacity=\"0.15\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                WIDTH - RIGHT,
                LEFT - 6.0,
                y + 4.0,
                tick_label(*tick)
            );
        }
        // The unit sits on the legend's row, left of it: just above the top tick it ran into that tick's label
        // where a narrow screen enlarges chart text.
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"35\" text-anchor=\"end\" font-weight=\"600\">{}</text>",
            LEFT - 6.0,
            self.unit
        );
    }

    /// The usual range (shaded in the first line's colour) and the gates' red zones.
    fn zones(&self, svg: &mut String, axis: &Axis) {
        let width = WIDTH - LEFT - RIGHT;
        let first = &self.lines[0];
        if let Some((low, high)) = self.band {
            let (top, bottom) = (axis.y(high), axis.y(low));
            let _ = write!(
                svg,
                "<rect class=\"band\" x=\"{LEFT}\" y=\"{top:.1}\" width=\"{width}\" height=\"{:.1}\" fill=\"{}\" \
                 fill-opacity=\"0.14\"><title>no change for the detector: {} from {} to {}</title></rect>",
                (bottom - top).max(1.0),
                first.colour,
                first.name,
                format_value(low, self.unit),
                format_value(high, self.unit)
            );
        }
        for (figure, limit) in &self.limits {
            let y = axis.y(*limit);
            let _ = write!(
                svg,
                "<rect class=\"gate-zone\" x=\"{LEFT}\" y=\"{TOP}\" width=\"{width}\" height=\"{:.1}\" fill=\"{ALARM}\" \
                 fill-opacity=\"0.07\"/><line class=\"gate\" x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" \
                 stroke=\"{ALARM}\" stroke-dasharray=\"6 4\"><title>gate: {} at most {}</title></line>",
                (y - TOP).max(0.0),
                WIDTH - RIGHT,
                figure,
                format_value(*limit, self.unit)
            );
        }
    }

    fn draw_lines(&self, svg: &mut String, axis: &Axis, points: &[&ChartPoint]) {
        let count = points.len();
        if let Some(spread) = self.spread {
            for (i, point) in points.iter().enumerate().filter(|(_, p)| p.runs > 1) {
                let (low, high) = spread(point);
                let x = slot_x(i, count);
                let _ = write!(
                    svg,
                    "<line class=\"whisker\" x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"{}\" \
                     stroke-opacity=\"0.55\" stroke-width=\"2\"/>",
                    axis.y(high),
                    axis.y(low),
                    self.lines[0].colour
                );
            }
        }
        for line in self.lines.iter().rev() {
            let _ = write!(svg, "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\" points=\"", line.colour);
            for (i, p) in points.iter().enumerate() {
                if i > 0 {
                    svg.push(' ');
                }
                push_px(svg, slot_x(i, count));
                svg.push(',');
                push_px(svg, axis.y((line.value)(p)));
            }
            svg.push_str("\"/>");
        }
    }

    /// A dot per point of the first line, in a link to its run (or its bucket's days) that carries the
    /// tooltip once for every mark of the point: pins on regressed runs, rings on unconfirmed ones, crosses
    /// under invalid ones.
    fn dots(&self, svg: &mut String, axis: &Axis, points: &[&ChartPoint]) {
        let count = points.len();
        let radius = if count > DENSE { 2.5 } else { 4.0 };
        let first = &self.lines[0];
        // One buffer for every tooltip: a long range draws thousands of them.
        let mut tooltip = String::new();
        for (i, point) in points.iter().enumerate() {
            let (x, y) = (slot_x(i, count), axis.y((first.value)(point)));
            let (px, py) = (Px(x), Px(y));
            let close = match (point.run_id, &self.zoom) {
                (Some(id), _) => {
                    svg.push_str("<a href=\"/runs/");
                    push_integer(svg, id.unsigned_abs());
                    svg.push_str("\">");
                    "</a>"
                }
                (None, Some(zoom)) => {
                    svg.push_str("<a href=\"");
                    push_xml_escaped(svg, &bucket_zoom(zoom, point, points.get(i + 1).copied()));
                    svg.push_str("\">");
                    "</a>"
                }
                (None, None) => {
                    svg.push_str("<g>");
                    "</g>"
                }
            };
            tooltip.clear();
            self.tooltip(&mut tooltip, point);
            svg.push_str("<title>");
            push_xml_escaped(svg, &tooltip);
            svg.push_str("</title>");
            let regressed = self.main && point.regressed > 0;
            let (fill, r) = if regressed { (ALARM, radius + 1.5) } else { (first.colour, radius) };
            svg.push_str("<circle class=\"point\" cx=\"");
            push_px(svg, x);
            svg.push_str("\" cy=\"");
            push_px(svg, y);
            svg.push_str("\" r=\"");
            push_px(svg, r);
            svg.push_str("\" fill=\"");
            svg.push_str(fill);
            svg.push_str("\"/>");
            if regressed {
                let _ = write!(
                    svg,
                    "<path class=\"pin\" d=\"M {px} {} l -5 -9 h 10 z\" fill=\"{ALARM}\"/>",
                    Px(y - r - 2.0)
                );
            }
            if matches!(point.status, Some(RunStatus::Unconfirmed | RunStatus::Confirming)) {
                let _ = write!(
                    svg,
                    "<circle class=\"unconfirmed\" cx=\"{px}\" cy=\"{py}\" r=\"{}\" fill=\"none\" stroke=\"#b9770e\" \
                     stroke-width=\"1.5\"/>",
                    r + 3.0
                );
            }
            if point.invalid > 0 {
                let _ = write!(
                    svg,
                    "<text class=\"invalid-run\" x=\"{px}\" y=\"{}\" text-anchor=\"middle\" font-size=\"14\" \
                     fill=\"#8a8f98\">×</text>",
                    BOTTOM - 4.0
                );
            }
            svg.push_str(close);
        }
    }

    /// What hovering a point says, written onto `text`: the run (or the bucket), its build and time, the
    /// values with their unit, and the verdict.
    fn tooltip(&self, text: &mut String, point: &ChartPoint) {
        match point.run_id {
            Some(id) => {
                let _ = write!(text, "run #{id}, ");
            }
            None => {
                let _ = write!(text, "{} runs from ", point.runs);
            }
        }
        let time = point.started_at.naive_utc();
        push_date(text, point);
        let _ = write!(text, " {:02}:{:02} UTC", time.hour(), time.minute());
        if let Some(build) = &point.build_id {
            let _ = write!(text, ", build {build}");
        }
        for (k, line) in self.lines.iter().enumerate() {
            let over = match (point.runs > 1, line.over_buckets) {
                (false, _) => "",
                (true, OverBuckets::Mean) => " mean",
                (true, OverBuckets::Worst) => " worst",
            };
            let separator = if k == 0 { ": " } else { ", " };
            let _ = write!(text, "{separator}{}{over} {}", line.name, format_value((line.value)(point), self.unit));
        }
        if let (Some(spread), true) = (self.spread, point.runs > 1) {
            let (low, high) = spread(point);
            let _ = write!(
                text,
                " ({} {} to {})",
                self.lines[0].name,
                format_value(low, self.unit),
                format_value(high, self.unit)
            );
        }
        if let Some(status) = point.status {
            let _ = write!(text, "; {status}");
        }
        match (point.regressed, point.runs) {
            (0, _) => {}
            (_, 1) => text.push_str("; this endpoint regressed"),
            (n, _) => {
                let _ = write!(text, "; this endpoint regressed in {n} of them");
            }
        }
        if point.run_id.is_none() && self.zoom.is_some() {
            text.push_str("; click to zoom in");
        }
    }
}

/// The point's UTC day as `2026-11-30`, written without chrono's format parser (thousands per page).
fn push_date(text: &mut String, point: &ChartPoint) {
    let day = point.started_at.date_naive();
    let _ = write!(text, "{}-{:02}-{:02}", day.year(), day.month(), day.day());
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn point(hour: u32, p95: f64, build: &str) -> ChartPoint {
        ChartPoint {
            endpoint: "GET /x".into(),
            started_at: chrono::Utc.with_ymd_and_hms(2026, 11, 30, hour, 0, 0).unwrap(),
            runs: 1,
            run_id: Some(i64::from(hour) + 1),
            status: Some(RunStatus::Passed),
            p50_ms: p95 / 2.0,
            p95_ms: p95,
            p99_ms: p95 * 1.5,
            error_pct: 0.0,
            rate: 10.0,
            p95_range_ms: (p95, p95),
            p99_max_ms: p95 * 1.5,
            error_pct_max: 0.0,
            regressed: 0,
            invalid: 0,
            build_id: Some(build.to_owned()),
        }
    }

    const P95: [Line; 1] =
        [Line { name: "p95", over_buckets: OverBuckets::Mean, colour: "#1e8449", value: |p| p.p95_ms }];

    fn chart(scale: Scale) -> TrendChart<'static> {
        TrendChart {
            title: "GET /x <p95>".into(),
            unit: "ms",
            lines: &P95,
            spread: None,
            band: None,
            limits: Vec::new(),
            scale,
            main: true,
            zoom: None,
        }
    }

    #[test]
    fn every_run_is_a_linked_dot_with_its_numbers() {
        let mut points: Vec<ChartPoint> = (0..10).map(|h| point(h, 5.0, "1.0.0")).collect();
        points[9].p95_ms = 32.0;
        points[9].regressed = 1;
        points[9].status = Some(RunStatus::Regressed);
        points[9].build_id = Some("1.1.0".into());
        let refs: Vec<&ChartPoint> = points.iter().collect();
        let svg = chart(Scale::Linear).render(&refs);
        assert_eq!(svg.matches("<circle class=\"point\"").count(), 10, "ten runs in one day are ten dots");
        assert_eq!(svg.matches("<a href=\"/runs/").count(), 10);
        assert!(
            svg.contains("run #10, 2026-11-30 09:00 UTC, build 1.1.0: p95 32.0 ms; regressed; this endpoint regressed"),
            "{svg}"
        );
        assert_eq!(svg.matches("class=\"pin\"").count(), 1);
        assert!(svg.contains(&format!("fill=\"{ALARM}\"")));
        assert_eq!(svg.matches("class=\"build-change\"").count(), 1, "a tick only where the build changed");
        assert!(svg.contains("build 1.0.0 → 1.1.0"));
        assert!(svg.contains("GET /x &lt;p95&gt;"), "titles are escaped");
    }

    #[test]
    fn a_bucket_shows_its_worst_tail_and_zooms_in_on_its_days() {
        const TAIL: [Line; 2] = [
            Line { name: "p95", over_buckets: OverBuckets::Mean, colour: "#1e8449", value: |p| p.p95_ms },
            Line { name: "p99", over_buckets: OverBuckets::Worst, colour: "#7d3c98", value: |p| p.p99_max_ms },
        ];
        let buckets: Vec<ChartPoint> = [1, 12, 23]
            .into_iter()
            .map(|day| ChartPoint {
                started_at: chrono::Utc.with_ymd_and_hms(2026, 10, day, 2, 0, 0).unwrap(),
                runs: 11,
                run_id: None,
                status: None,
                p95_range_ms: (4.0, 9.0),
                p99_max_ms: 80.0,
                regressed: i64::from(day == 12),
                ..point(0, 5.0, "1.0.0")
            })
            .collect();
        let refs: Vec<&ChartPoint> = buckets.iter().collect();
        let zoomed = TrendChart {
            lines: &TAIL,
            spread: Some(|p| p.p95_range_ms),
            zoom: Some("?range=all&scale=log".into()),
            ..chart(Scale::Linear)
        };
        let svg = zoomed.render(&refs);
        assert!(svg.contains("<a href=\"?range=all&amp;scale=log&amp;from=2026-10-12&amp;to=2026-10-23\">"), "{svg}");
        assert!(svg.contains("<a href=\"?range=all&amp;scale=log&amp;from=2026-10-23\">"), "the last runs to today");
        assert!(
            svg.contains(
                "11 runs from 2026-10-12 02:00 UTC, build 1.0.0: p95 mean 5.00 ms, p99 worst 80.0 ms (p95 4.00 ms \
                 to 9.00 ms); this endpoint regressed in 1 of them; click to zoom in"
            ),
            "{svg}"
        );
        assert_eq!(svg.matches("class=\"pin\"").count(), 1);
        assert!(!chart(Scale::Linear).render(&refs).contains("<a href"), "without a page to zoom, no link");
    }

    #[test]
    fn every_configured_gate_is_a_line_with_its_zone() {
        let points: Vec<ChartPoint> = (0..6).map(|h| point(h, 5.0, "1")).collect();
        let refs: Vec<&ChartPoint> = points.iter().collect();
        let gated = TrendChart { limits: vec![("p95", 20.0), ("p99", 60.0)], ..chart(Scale::Linear) };
        let svg = gated.render(&refs);
        assert_eq!(svg.matches("class=\"gate-zone\"").count(), 2, "{svg}");
        assert!(svg.contains("<title>gate: p95 at most 20.0 ms</title>"), "{svg}");
        assert!(svg.contains("<title>gate: p99 at most 60.0 ms</title>"), "{svg}");
        assert!(gated.axis(&refs).0.high >= 60.0, "the axis reaches the highest gate");
        assert!(!chart(Scale::Linear).render(&refs).contains("gate-zone"), "no gate, no zone");
    }

    #[test]
    fn a_log_axis_keeps_the_normal_range_readable() {
        let mut points: Vec<ChartPoint> = (0..6).map(|h| point(h, 1.0 + f64::from(h) * 0.1, "1")).collect();
        points[5].p95_ms = 80.0;
        let refs: Vec<&ChartPoint> = points.iter().collect();
        let linear = chart(Scale::Linear).axis(&refs).0;
        let log = chart(Scale::Log).axis(&refs).0;
        let spread = |axis: &Axis| axis.y(1.0) - axis.y(1.4);
        assert!(spread(&log) > 10.0 * spread(&linear), "log {} vs linear {}", spread(&log), spread(&linear));
    }
}
