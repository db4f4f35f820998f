//! Trend charts, drawn as SVG here rather than by charts-rs, because every point must be a way in: each run
//! is a dot with a tooltip (`<title>`: run, build, time, value with its unit, verdict) and a link to its run,
//! regressed runs carry a pin in the one alarm colour, a bucket of many runs shows its spread as a whisker,
//! and build changes are labelled ticks on the time axis; an invalid run, never judged, is marked apart from
//! the line and outside its scale (`trend_marks`). Points are spaced one slot per point, not by time, so ten
//! runs within an hour stay ten dots. Text and axes use the page's colour and font, so the
//! chart reads the same as the page in light and dark mode.

use std::fmt::Write as _;

use chrono::Datelike;

use super::svg::{format_value, log_ticks, nice_ticks, push_px, tick_label};
use super::trend_geometry::{BOTTOM, HEIGHT, LEFT, RIGHT, TOP, WIDTH, slot_x};
use super::trend_time_axis::time_axis;
use crate::outside_text::xml_escape;
use crate::store::ChartPoint;

/// An absolute gate drawn on a chart: the figure it holds, its limit, and which side of it fails.
#[derive(Debug, Clone, Copy)]
pub struct GateLine {
    /// The figure held, as a tooltip names it: `p95`, `mean`.
    pub figure: &'static str,
    /// The limit, in the chart's unit.
    pub limit: f64,
    /// Whether the figure must stay at most or at least the limit.
    pub bound: Bound,
}

/// Which side of a limit a figure must stay on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// A ceiling (p95 at most 300 ms, CPU busy at most 60 %): the zone above fails.
    AtMost,
    /// A floor (a cache hit ratio at least 90 %): the zone below fails.
    AtLeast,
}

impl GateLine {
    /// A ceiling on `figure`.
    #[must_use]
    pub fn at_most(figure: &'static str, limit: f64) -> Self {
        Self { figure, limit, bound: Bound::AtMost }
    }
}

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
    /// Of every line's values: `ms`, `%`, `req/s`, or a telemetry series' own unit.
    pub unit: &'a str,
    /// The lines, drawn in order; the first carries dots, links, pins, whiskers and the band.
    pub lines: &'a [Line],
    /// A bucket's spread on the first line (lowest, highest), drawn as a whisker.
    pub spread: Option<Spread>,
    /// The range a normal night falls in on the first line, shaded.
    pub band: Option<(f64, f64)>,
    /// The absolute gates on this chart (`[scenario.gates]`, a telemetry series' limits): each is a dashed line
    /// with a faint red zone on its failing side (where two overlap, the zone past both is the deeper red).
    pub limits: Vec<GateLine>,
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

/// Whether a unit fits the left margin beside the value axis where narrow screens enlarge chart text:
/// `req/s` does, `CPU s` does not (capitals are about 1.4 lower-case letters wide).
fn fits_the_margin(unit: &str) -> bool {
    let width: f64 = unit.chars().map(|c| if c.is_uppercase() { 1.4 } else { 1.0 }).sum();
    width <= 5.5
}

/// Where values land on the plot.
pub(super) struct Axis {
    low: f64,
    high: f64,
    scale: Scale,
}

/// Where a value lies against the value axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OnScale {
    /// On the plot.
    Within,
    /// Above its top edge.
    Above,
    /// Below its bottom edge (a log axis starts above zero).
    Below,
}

impl Axis {
    /// Where `value` lies against the axis.
    pub(super) fn place(&self, value: f64) -> OnScale {
        if value > self.high {
            OnScale::Above
        } else if value < self.low {
            OnScale::Below
        } else {
            OnScale::Within
        }
    }

    /// The height of `value` on the plot.
    pub(super) fn y(&self, value: f64) -> f64 {
        let (v, low, high) = match self.scale {
            Scale::Linear => (value, self.low, self.high),
            Scale::Log => (value.max(self.low).ln(), self.low.ln(), self.high.ln()),
        };
        BOTTOM - (v - low) / (high - low) * (BOTTOM - TOP)
    }
}

/// Where a bucket's dot leads: the page zoomed from the bucket's first day to the day the next bucket starts
/// (both included, so a run near the edge is never lost), or to today for the last bucket.
pub(super) fn bucket_zoom(page: &str, bucket: &ChartPoint, next: Option<&ChartPoint>) -> String {
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
        let legend_end = self.legend(&mut svg);
        self.grid(&mut svg, &axis, &ticks, legend_end);
        self.zones(&mut svg, &axis);
        self.draw_lines(&mut svg, &axis, points);
        time_axis(&mut svg, points);
        if self.main || points.len() <= DENSE {
            self.marks(&mut svg, &axis, points);
        }
        svg.push_str("</svg>");
        svg
    }

    /// The value axis covering every value of the points on the line, the band and the limits, and its tick
    /// values. Points never judged (invalid runs) are left out, unless there is nothing else: their figures
    /// say nothing about the build, and one saturated night at ×5 would flatten every other night.
    fn axis(&self, points: &[&ChartPoint]) -> (Axis, Vec<f64>) {
        let on_line: Vec<&ChartPoint> = points.iter().copied().filter(|p| !p.never_judged()).collect();
        let points = if on_line.is_empty() { points } else { &on_line };
        let mut values: Vec<f64> =
            self.lines.iter().flat_map(|line| points.iter().map(move |p| (line.value)(p))).collect();
        if let Some(spread) = self.spread {
            values.extend(points.iter().map(|p| spread(p).1));
        }
        values.extend(self.band.iter().flat_map(|(low, high)| [*low, *high]));
        values.extend(self.limits.iter().map(|gate| gate.limit));
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
    /// text up to 1.5 times its size (narrow screens enlarge chart text). Returns where it ends.
    fn legend(&self, svg: &mut String) -> f64 {
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
        x
    }

    fn grid(&self, svg: &mut String, axis: &Axis, ticks: &[f64], legend_end: f64) {
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
        // where a narrow screen enlarges chart text. A unit too long for the margin (a telemetry series'
        // `transactions`) follows the legend instead, in words.
        if fits_the_margin(self.unit) {
            let _ = write!(
                svg,
                "<text x=\"{}\" y=\"35\" text-anchor=\"end\" font-weight=\"600\">{}</text>",
                LEFT - 6.0,
                xml_escape(self.unit)
            );
        } else {
            let _ = write!(
                svg,
                "<text x=\"{legend_end:.1}\" y=\"35\" font-weight=\"600\">in {}</text>",
                xml_escape(self.unit)
            );
        }
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
        for gate in &self.limits {
            let y = axis.y(gate.limit);
            let (zone_top, words) = match gate.bound {
                Bound::AtMost => (TOP, "at most"),
                Bound::AtLeast => (y, "at least"),
            };
            let zone_bottom = match gate.bound {
                Bound::AtMost => y,
                Bound::AtLeast => BOTTOM,
            };
            let _ = write!(
                svg,
                "<rect class=\"gate-zone\" x=\"{LEFT}\" y=\"{zone_top:.1}\" width=\"{width}\" height=\"{:.1}\" \
                 fill=\"{ALARM}\" fill-opacity=\"0.07\"/><line class=\"gate\" x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{}\" \
                 y2=\"{y:.1}\" stroke=\"{ALARM}\" stroke-dasharray=\"6 4\"><title>gate: {} {words} {}</title></line>",
                (zone_bottom - zone_top).max(0.0),
                WIDTH - RIGHT,
                gate.figure,
                format_value(gate.limit, self.unit)
            );
        }
    }

    /// The lines through the points on them, with each bucket's whisker. A point never judged keeps its slot
    /// but is not joined in: the line goes from the judged point before it to the one after, the series the
    /// judge reads, and the point is marked apart by [`Self::marks`].
    fn draw_lines(&self, svg: &mut String, axis: &Axis, points: &[&ChartPoint]) {
        let count = points.len();
        let on_line = || points.iter().enumerate().filter(|(_, p)| !p.never_judged());
        if let Some(spread) = self.spread {
            for (i, point) in on_line().filter(|(_, p)| p.runs > 1) {
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
            for (n, (i, p)) in on_line().enumerate() {
                if n > 0 {
                    svg.push(' ');
                }
                push_px(svg, slot_x(i, count));
                svg.push(',');
                push_px(svg, axis.y((line.value)(p)));
            }
            svg.push_str("\"/>");
        }
    }
}

/// The point's UTC day as `2026-11-30`, written without chrono's format parser (thousands per page).
pub(super) fn push_date(text: &mut String, point: &ChartPoint) {
    let day = point.started_at.date_naive();
    let _ = write!(text, "{}-{:02}-{:02}", day.year(), day.month(), day.day());
}

#[cfg(test)]
mod tests;
