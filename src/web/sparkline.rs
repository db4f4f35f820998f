//! The overview's sparklines: an endpoint's last month of p95 as a tiny SVG, drawn relative to its own
//! level on one scale shared by every sparkline of the page (half the level at the bottom, twice it at the
//! top, the level itself on the middle line), so a glance compares routes fairly: 1.5 ms of jitter on a
//! 5 ms route and an 80 ms regression on the same route look as different as they are.

use super::svg::format_value;
use super::trend_chart::ALARM;
use crate::analysis::level::median;
use crate::outside_text::xml_escape;

const WIDTH: f64 = 120.0;
const HEIGHT: f64 = 28.0;
/// The shared scale spans this factor either way of the level, on a log scale.
const SPAN_FACTOR: f64 = 2.0;

/// One endpoint's sparkline and its latest figures.
pub struct Sparkline {
    /// Step name, or `(all)`.
    pub endpoint: String,
    /// The inline SVG, empty with fewer than two points.
    pub svg: String,
    /// The newest p95 with its unit.
    pub latest: String,
    /// The newest p95 against the level of the nights before it, signed.
    pub change: String,
    /// The metrics the latest verdict found worse on this endpoint (`p95`, `error_rate`, a gate), in its order.
    pub regressed: Vec<String>,
}

/// The sparkline of `values` (p95 in ms, oldest first) against their level: the median of every night but
/// the newest. The line is drawn in the alarm colour only when the p95 it shows is among the `regressed`
/// metrics: a route that regressed on its error rate is named so, not painted as slower.
#[must_use]
pub fn relative_to_level(endpoint: &str, values: &[f64], regressed: Vec<String>) -> Sparkline {
    let latest = values.last().map(|v| format_value(*v, "ms")).unwrap_or_default();
    let earlier = &values[..values.len().saturating_sub(1)];
    let level = if earlier.is_empty() { values.first().copied().unwrap_or(0.0) } else { median(earlier) };
    let change = match values.last() {
        Some(newest) if level > 0.0 && !earlier.is_empty() => format!("{:+.0} %", 100.0 * (newest / level - 1.0)),
        _ => String::new(),
    };
    let slower = regressed.iter().any(|metric| metric == "p95");
    let svg = if values.len() < 2 || level <= 0.0 { String::new() } else { draw(endpoint, values, level, slower) };
    Sparkline { endpoint: endpoint.to_owned(), svg, latest, change, regressed }
}

fn draw(endpoint: &str, values: &[f64], level: f64, regressed: bool) -> String {
    let span = SPAN_FACTOR.ln();
    let y = |v: f64| {
        let distance = (v.max(f64::MIN_POSITIVE) / level).ln().clamp(-span, span);
        HEIGHT / 2.0 - distance / span * (HEIGHT / 2.0 - 2.0)
    };
    let step = WIDTH / (values.len() - 1) as f64;
    let points: Vec<String> =
        values.iter().enumerate().map(|(i, v)| format!("{:.1},{:.1}", i as f64 * step, y(*v))).collect();
    let colour = if regressed { ALARM } else { "#2f6fd0" };
    format!(
        "<svg class=\"spark\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" \
         aria-label=\"p95 of {label} over the last month, relative to its level\"><title>{label}: p95 relative to its \
         level {level} (middle line); top: twice the level, bottom: half</title><line x1=\"0\" y1=\"{mid}\" \
         x2=\"{WIDTH}\" y2=\"{mid}\" stroke=\"currentColor\" stroke-opacity=\"0.25\" stroke-dasharray=\"2 2\"/>\
         <polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\" points=\"{points}\"/></svg>",
        label = xml_escape(endpoint),
        level = format_value(level, "ms"),
        mid = HEIGHT / 2.0,
        points = points.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ys(svg: &str) -> Vec<f64> {
        let points = svg.split("points=\"").nth(1).unwrap().split('"').next().unwrap();
        points.split(' ').map(|p| p.split(',').nth(1).unwrap().parse().unwrap()).collect()
    }

    #[test]
    fn jitter_looks_small_and_a_doubling_fills_the_scale_whatever_the_route() {
        let jitter = relative_to_level("GET /fast", &[5.0, 5.5, 4.8, 5.2, 6.5], Vec::new());
        let doubled = relative_to_level("GET /slow", &[80.0, 82.0, 79.0, 81.0, 170.0], vec!["p95".into()]);
        let top_of = |s: &Sparkline| ys(&s.svg).into_iter().fold(f64::INFINITY, f64::min);
        assert!(top_of(&doubled) <= 2.5, "a doubling reaches the top: {}", doubled.svg);
        assert!(top_of(&jitter) > 8.0, "jitter stays near the middle: {}", jitter.svg);
        assert_eq!(doubled.change, "+111 %");
        assert!(doubled.svg.contains(ALARM), "a regressed endpoint is drawn in the alarm colour");
        assert_eq!(jitter.latest, "6.50 ms");
        assert!(relative_to_level("GET /x", &[3.0], Vec::new()).svg.is_empty());
        let failing = relative_to_level("GET /slow", &[80.0, 82.0, 79.0, 81.0, 81.0], vec!["error_rate".into()]);
        assert!(!failing.svg.contains(ALARM), "a p95 line is red only when p95 regressed");
    }
}
