//! The server's side of a run, drawn under its response times on one time axis: a panel of the run's p50 and
//! p99 per second, then one panel per telemetry series, every panel spanning the same seconds, so the second
//! iowait spiked is the second p99 jumped. Hand-drawn SVG like the trend charts (charts-rs spaces points by
//! category, not by time, and telemetry is sampled every few seconds at its own offsets); text and axes take
//! the page's colour, so it reads the same in light and dark mode. Each value is a dot with its tooltip.

use std::fmt::Write as _;

use super::svg::{Px, nice_ticks, tick_label};
use super::trend_chart::{FONTS, colour};
use crate::model::{SHARE_UNIT, TelemetryPoint, TimelinePoint};
use crate::outside_text::{clipped, xml_escape};
use crate::telemetry::shown;

const WIDTH: f64 = 720.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 14.0;
/// A panel: its label row, then its plot.
const LABEL_ROW: f64 = 26.0;
const PLOT: f64 = 78.0;
const GAP: f64 = 14.0;
/// Below the last panel: the seconds.
const AXIS_ROW: f64 = 26.0;

/// The colour of telemetry lines: no figure of the client's uses it.
const TELEMETRY: &str = "#0e8a7e";

/// Past this many points a line is drawn without a dot (and tooltip) on each.
const DOTS_UP_TO: usize = 300;

/// One line of a panel: its legend, colour and points as (seconds since the run started, value).
pub struct Line {
    /// Legend text.
    pub name: String,
    /// Stroke colour.
    pub colour: &'static str,
    /// Its points, oldest first.
    pub points: Vec<(f64, f64)>,
}

/// One panel: a series, or the run's response times.
pub struct Panel {
    /// Above the plot: `api-host · CPU busy`.
    pub title: String,
    /// The unit of its values: `ms`, `bytes`, [`SHARE_UNIT`].
    pub unit: String,
    /// Its lines; none when it has no values.
    pub lines: Vec<Line>,
    /// Why it has no values, when it has none.
    pub missing: Option<String>,
    /// The series' absolute limits, drawn as zones.
    pub zones: Vec<Zone>,
}

/// An absolute limit on a series (`limits` in `degrade.toml`, as the verdict held it): the side past it is
/// shaded, the way a Grafana threshold marks a board's red zone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zone {
    /// The limit, in the panel's unit.
    pub bound: f64,
    /// A ceiling (`max`: above is out) or a floor (`min`: below is out).
    pub ceiling: bool,
}

/// The run's response times per second: the slowest endpoint's p99 and p50 each second (one endpoint's own
/// figures when it has one), at the middle of the second they were measured in.
#[must_use]
pub fn latency_panel(timeline: &[TimelinePoint]) -> Panel {
    let mut seconds: std::collections::BTreeMap<i64, (f64, f64)> = std::collections::BTreeMap::new();
    for p in timeline.iter().filter(|p| p.requests > 0) {
        let second = seconds.entry(p.elapsed_s).or_insert((0.0, 0.0));
        second.0 = second.0.max(p.p50_us as f64 / 1000.0);
        second.1 = second.1.max(p.p99_us as f64 / 1000.0);
    }
    let line = |name: &str, colour, pick: fn(&(f64, f64)) -> f64| Line {
        name: name.to_owned(),
        colour,
        points: seconds.iter().map(|(s, v)| (*s as f64 + 0.5, pick(v))).collect(),
    };
    Panel {
        title: "response time per second".to_owned(),
        unit: "ms".to_owned(),
        lines: vec![line("p99", colour::P99, |v| v.1), line("p50", colour::P50, |v| v.0)],
        missing: seconds.is_empty().then(|| "no request was answered".to_owned()),
        zones: Vec::new(),
    }
}

/// A telemetry series' panel, with its limits as `zones`.
#[must_use]
pub fn series_panel(
    title: String,
    unit: &str,
    points: &[TelemetryPoint],
    missing: Option<&str>,
    zones: Vec<Zone>,
) -> Panel {
    let points: Vec<(f64, f64)> = points.iter().map(|p| (p.elapsed_ms as f64 / 1000.0, p.value)).collect();
    let lines =
        if points.is_empty() { Vec::new() } else { vec![Line { name: String::new(), colour: TELEMETRY, points }] };
    Panel { title, unit: unit.to_owned(), lines, missing: missing.map(str::to_owned), zones }
}

/// The figure: `panels` stacked over one axis of seconds, from 0 to `span_secs`.
#[must_use]
pub fn server_side_svg(panels: &[Panel], span_secs: f64) -> String {
    let span = span_secs.max(1.0);
    let height = panels.len() as f64 * (LABEL_ROW + PLOT + GAP) + AXIS_ROW;
    let x = |secs: f64| LEFT + secs.clamp(0.0, span) / span * (WIDTH - LEFT - RIGHT);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"server-side-chart\" viewBox=\"0 0 {WIDTH} {}\" \
         width=\"{WIDTH}\" height=\"{}\" font-family=\"{FONTS}\" font-size=\"12\" role=\"img\" \
         aria-label=\"Response times and telemetry on one time axis\">",
        Px(height),
        Px(height)
    );
    let ticks: Vec<f64> = nice_ticks(0.0, span).into_iter().filter(|t| *t <= span).collect();
    // The seconds' grid runs through every panel, so a moment reads straight down.
    for tick in &ticks {
        let _ = write!(
            out,
            "<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" stroke=\"currentColor\" stroke-opacity=\"0.12\"/>",
            Px(x(*tick)),
            Px(LABEL_ROW),
            Px(height - AXIS_ROW)
        );
    }
    for (index, panel) in panels.iter().enumerate() {
        let top = index as f64 * (LABEL_ROW + PLOT + GAP);
        draw_panel(&mut out, panel, top, &x);
    }
    let axis_y = height - AXIS_ROW + 16.0;
    for tick in &ticks {
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"currentColor\">{} s</text>",
            Px(x(*tick)),
            Px(axis_y),
            tick_label(*tick)
        );
    }
    out.push_str("</svg>");
    out
}

fn draw_panel(out: &mut String, panel: &Panel, top: f64, x: &impl Fn(f64) -> f64) {
    let plot_top = top + LABEL_ROW;
    let bottom = plot_top + PLOT;
    let _ = write!(
        out,
        "<text class=\"title\" x=\"{}\" y=\"{}\" fill=\"currentColor\" font-weight=\"600\">{}",
        Px(4.0),
        Px(top + 17.0),
        xml_escape(&panel.title)
    );
    for line in panel.lines.iter().filter(|l| !l.name.is_empty()) {
        let _ = write!(out, "<tspan fill=\"{}\" dx=\"10\">— {}</tspan>", line.colour, xml_escape(&line.name));
    }
    out.push_str("</text>");
    let _ = write!(
        out,
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"currentColor\" stroke-opacity=\"0.4\"/>",
        Px(LEFT),
        Px(WIDTH - RIGHT),
        Px(bottom)
    );
    if panel.lines.iter().all(|l| l.points.is_empty()) {
        let why = panel.missing.as_deref().unwrap_or("no values");
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" fill=\"currentColor\" fill-opacity=\"0.7\">no values: {}<title>{}</title></text>",
            Px(LEFT + 6.0),
            Px(plot_top + PLOT / 2.0),
            xml_escape(&clipped(why, 48)),
            xml_escape(why)
        );
        return;
    }
    let (first, last) = draw_value_axis(out, panel, bottom);
    let y = |value: f64| bottom - (value - first) / (last - first) * PLOT;
    for zone in &panel.zones {
        draw_zone(out, zone, &panel.unit, (plot_top, bottom), &y);
    }
    for line in &panel.lines {
        draw_line(out, line, &panel.unit, x, &y);
    }
    for zone in &panel.zones {
        draw_zone_label(out, zone, &panel.unit, (plot_top, bottom), &y);
    }
}

/// The colour of the side past a limit: the alarm colour the verdict uses for a breached gate.
const OUT_OF_LIMITS: &str = "#d93f0b";

/// A limit: the side past it shaded up to the plot's edge, and a dashed line at it.
fn draw_zone(out: &mut String, zone: &Zone, unit: &str, (plot_top, bottom): (f64, f64), y: &impl Fn(f64) -> f64) {
    let at = y(zone.bound).clamp(plot_top, bottom);
    let (from, to) = if zone.ceiling { (plot_top, at) } else { (at, bottom) };
    let side = if zone.ceiling { "over" } else { "under" };
    let _ = write!(
        out,
        "<rect class=\"zone\" x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" fill=\"{OUT_OF_LIMITS}\" \
         fill-opacity=\"0.1\"><title>{side} the limit of {6}</title></rect>\
         <line x1=\"{0}\" x2=\"{4}\" y1=\"{5}\" y2=\"{5}\" stroke=\"{OUT_OF_LIMITS}\" stroke-dasharray=\"5 4\" \
         stroke-width=\"1.4\"/>",
        Px(LEFT),
        Px(from),
        Px(WIDTH - RIGHT - LEFT),
        Px((to - from).max(0.0)),
        Px(WIDTH - RIGHT - 2.0),
        Px(at),
        xml_escape(&shown_value(zone.bound, unit))
    );
}

/// A limit's value by its line, at the plot's right end, where the series' last points may run: drawn over
/// the series, with a halo of the page's background from its style (`text.limit-label`), so a line under it
/// does not cross its digits out.
fn draw_zone_label(out: &mut String, zone: &Zone, unit: &str, (plot_top, bottom): (f64, f64), y: &impl Fn(f64) -> f64) {
    let at = y(zone.bound).clamp(plot_top, bottom);
    let _ = write!(
        out,
        "<text class=\"limit-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"{OUT_OF_LIMITS}\" \
         font-size=\"11\">limit {}</text>",
        Px(WIDTH - RIGHT - 2.0),
        Px(if zone.ceiling { at - 4.0 } else { at + 12.0 }),
        xml_escape(&shown_value(zone.bound, unit))
    );
}

/// The value axis of a panel whose plot ends at `bottom`: a grid line per round tick, the two ends labelled;
/// returns the axis' lowest and highest value.
fn draw_value_axis(out: &mut String, panel: &Panel, bottom: f64) -> (f64, f64) {
    let (low, high) = panel
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        // A limit is always on the scale, so a line far under its ceiling is seen to be far under it.
        .chain(panel.zones.iter().map(|z| z.bound))
        .fold((0.0, 0.0), |(lo, hi), v| (f64::min(lo, v), f64::max(hi, v)));
    let ticks = value_ticks(low, high, &panel.unit);
    let (first, last) = (ticks[0], ticks[ticks.len() - 1]);
    let y = |value: f64| bottom - (value - first) / (last - first) * PLOT;
    for tick in &ticks {
        let _ = write!(
            out,
            "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"currentColor\" stroke-opacity=\"0.1\"/>",
            Px(LEFT),
            Px(WIDTH - RIGHT),
            Px(y(*tick))
        );
    }
    // Only the axis' ends are labelled, inside the plot's height, so a phone's larger text never runs into the
    // panel's title; the grid lines between them keep the scale readable. Where a limit's dashed line runs
    // through the top label's place, the top label is left out and the limit's own label gives the scale: 13
    // below its grid line, a CPU axis' "100 %" read as the label of a 90 % limit, with 99 % values above it.
    // The label's glyphs span about 2 to 16 under the grid line: a limit drawn there crosses it.
    let crowded = panel.zones.iter().any(|z| (y(last) + 2.0..y(last) + 16.0).contains(&y(z.bound)));
    let ends = if crowded { vec![(first, -3.0)] } else { vec![(first, -3.0), (last, 13.0)] };
    for (tick, nudge) in ends {
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"currentColor\">{}</text>",
            Px(LEFT - 6.0),
            Px(y(tick) + nudge),
            xml_escape(&tick_text(tick, &panel.unit))
        );
    }
    (first, last)
}

/// A line, broken where values are missing (a gap longer than twice its usual spacing), with a dot and a
/// tooltip on each value while they are few enough to tell apart.
fn draw_line(out: &mut String, line: &Line, unit: &str, x: &impl Fn(f64) -> f64, y: &impl Fn(f64) -> f64) {
    let mut spacings: Vec<f64> = line.points.windows(2).map(|w| w[1].0 - w[0].0).collect();
    spacings.sort_by(f64::total_cmp);
    let usual = spacings.get(spacings.len() / 2).copied().unwrap_or(f64::INFINITY);
    let mut path = String::new();
    let mut previous: Option<f64> = None;
    for &(secs, value) in &line.points {
        let command = match previous {
            Some(before) if secs - before <= usual * 2.0 => 'L',
            _ => 'M',
        };
        let _ = write!(path, "{command}{} {}", Px(x(secs)), Px(y(value)));
        previous = Some(secs);
    }
    let _ = write!(out, "<path d=\"{path}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\"/>", line.colour);
    if line.points.len() <= DOTS_UP_TO {
        for &(secs, value) in &line.points {
            let _ = write!(
                out,
                "<circle cx=\"{}\" cy=\"{}\" r=\"2.6\" fill=\"{}\"><title>{} s: {}</title></circle>",
                Px(x(secs)),
                Px(y(value)),
                line.colour,
                tick_label((secs * 10.0).round() / 10.0),
                xml_escape(&shown_value(value, unit))
            );
        }
    }
}

fn shown_value(value: f64, unit: &str) -> String {
    if unit == "ms" { format!("{value:.1} ms") } else { shown::value(value, unit) }
}

/// Round ticks covering `low..=high`: a share never past 100 % when it is not, bytes in whole binary units.
fn value_ticks(low: f64, high: f64, unit: &str) -> Vec<f64> {
    let high = if unit == SHARE_UNIT && high <= 1.0 + 1e-9 { high.min(1.0) } else { high };
    let high = if high > low { high } else { low + 1.0 };
    if unit == "bytes" {
        let scale = binary_scale(high.max(-low));
        return nice_ticks(low / scale, high / scale).into_iter().map(|t| t * scale).collect();
    }
    nice_ticks(low, high)
}

/// The binary unit a size is told in: the largest power of 1,024 at most `bytes`.
fn binary_scale(bytes: f64) -> f64 {
    [1u64 << 40, 1 << 30, 1 << 20, 1 << 10].into_iter().map(|s| s as f64).find(|s| bytes >= *s).unwrap_or(1.0)
}

/// A value-axis label: short, its unit given by the title where it is long.
fn tick_text(value: f64, unit: &str) -> String {
    match unit {
        SHARE_UNIT => format!("{} %", tick_label(value * 100.0)),
        "bytes" => {
            let scale = binary_scale(value.abs());
            let name = match scale as u64 {
                s if s == 1 << 40 => "TiB",
                s if s == 1 << 30 => "GiB",
                s if s == 1 << 20 => "MiB",
                s if s == 1 << 10 => "KiB",
                _ => "B",
            };
            format!("{} {name}", tick_label(value / scale))
        }
        "ms" => format!("{} ms", tick_label(value)),
        _ => tick_label(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_is_a_shaded_zone_on_the_scale_even_far_above_the_line() {
        let points =
            [TelemetryPoint { elapsed_ms: 1_000, value: 0.2 }, TelemetryPoint { elapsed_ms: 2_000, value: 0.25 }];
        let ceiling = Zone { bound: 0.6, ceiling: true };
        let svg =
            server_side_svg(&[series_panel("host · CPU busy".into(), SHARE_UNIT, &points, None, vec![ceiling])], 3.0);
        assert_eq!(svg.matches("class=\"zone\"").count(), 1, "{svg}");
        assert!(
            svg.contains("<title>over the limit of 60.0 %</title>") && svg.contains(">limit 60.0 %</text>"),
            "{svg}"
        );
        // Its label is drawn over the series (a line's last points run where it sits), not under it.
        let label = svg.find("class=\"limit-label\"").expect("labelled");
        assert!(svg.find("<path d=").is_some_and(|line| line < label), "{svg}");
        // The axis reaches the limit although the values stay under half of it.
        assert!(svg.contains(">60 %</text>") || svg.contains(">80 %</text>") || svg.contains(">100 %</text>"), "{svg}");
        let floor = Zone { bound: 0.9, ceiling: false };
        let svg =
            server_side_svg(&[series_panel("db · hit ratio".into(), SHARE_UNIT, &points, None, vec![floor])], 3.0);
        assert!(svg.contains("<title>under the limit of 90.0 %</title>"), "{svg}");
    }

    #[test]
    fn the_top_label_is_never_taken_for_a_limit_line_under_it() {
        // Values near 100 % with a 90 % ceiling: the "100 %" label would sit 13 below its grid line, on the 90 %
        // limit's dashed line; it is left out, and the limit's label tells the scale.
        let points =
            [TelemetryPoint { elapsed_ms: 1_000, value: 0.99 }, TelemetryPoint { elapsed_ms: 2_000, value: 0.992 }];
        let svg =
            |zones| server_side_svg(&[series_panel("host · CPU busy".into(), SHARE_UNIT, &points, None, zones)], 3.0);
        assert!(svg(Vec::new()).contains(">100 %</text>"));
        let crowded = svg(vec![Zone { bound: 0.9, ceiling: true }]);
        assert!(!crowded.contains(">100 %</text>") && crowded.contains(">limit 90.0 %</text>"), "{crowded}");
        assert!(crowded.contains(">0 %</text>"), "the axis' other end is still labelled: {crowded}");
    }
}
