//! The overview's sparklines: an endpoint's last month of one figure as a tiny SVG, drawn relative to its own
//! level on one scale shared by every sparkline of the page (half the level at the bottom, twice it at the
//! top, the level itself on the middle line), so a glance compares routes fairly: 1.5 ms of jitter on a
//! 5 ms route and an 80 ms regression on the same route look as different as they are.
//!
//! A sparkline shows what the latest verdict found, never a finding of its own. It draws the figure the
//! verdict found changed on the endpoint (the largest regression first, else the largest improvement; p95
//! when nothing changed), so "regressed: p50" sits beside a p50 line. The only change written beside it is
//! the verdict's own, against the verdict's baseline: the sparkline's level (the median of the month's
//! nights) is not what the judge compared with, and `+40 %` against it under a route the verdict called
//! unchanged read as "worse" (the month may hold an older build, a faster week, a different baseline
//! window). Invalid runs are left out: their figures say nothing about the build and were never judged.

use super::changes::ChangeRow;
use super::svg::format_value;
use super::trend_chart::ALARM;
use crate::analysis::level::median;
use crate::model::Change;
use crate::outside_text::xml_escape;
use crate::store::ChartPoint;

const WIDTH: f64 = 120.0;
const HEIGHT: f64 = 28.0;
/// The shared scale spans this factor either way of the level, on a log scale.
const SPAN_FACTOR: f64 = 2.0;
/// The colour of a figure the verdict found better (the page's green).
const IMPROVED: &str = "#1e8449";

/// The figure a sparkline draws: one a trend point holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drawn {
    /// The median.
    P50,
    /// The 95th percentile, drawn when the verdict found nothing changed.
    P95,
    /// The 99th percentile.
    P99,
    /// The error rate.
    ErrorRate,
    /// Messages per second: an endpoint counted, not timed (a WebSocket push class, a send without an
    /// await), which has no response time to draw (its p95 read "0.00 ms" in a trial).
    Rate,
}

impl Drawn {
    /// The figure behind a verdict's metric, a gate by the figure it limits (`max_p95_ms` is p95); none for a
    /// figure a trend point does not hold (p75, throughput, requests).
    #[must_use]
    pub fn of(metric: &str) -> Option<Self> {
        match metric {
            "p50" => Some(Self::P50),
            "p95" | "max_p95_ms" => Some(Self::P95),
            "p99" | "max_p99_ms" => Some(Self::P99),
            "error_rate" | "max_error_rate_pct" => Some(Self::ErrorRate),
            _ => None,
        }
    }

    /// The name beside the line.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::P50 => "p50",
            Self::P95 => "p95",
            Self::P99 => "p99",
            Self::ErrorRate => "errors",
            Self::Rate => "rate (counted, not timed)",
        }
    }

    fn value(self, point: &ChartPoint) -> f64 {
        match self {
            Self::P50 => point.p50_ms,
            Self::P95 => point.p95_ms,
            Self::P99 => point.p99_ms,
            Self::ErrorRate => point.error_pct,
            Self::Rate => point.rate,
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Self::ErrorRate => "%",
            Self::Rate => "/s",
            Self::P50 | Self::P95 | Self::P99 => "ms",
        }
    }
}

/// One endpoint's sparkline and its latest figures.
pub struct Sparkline {
    /// Step name, or `(all)`.
    pub endpoint: String,
    /// The figure drawn.
    pub drawn: Drawn,
    /// The inline SVG, empty with fewer than two points.
    pub svg: String,
    /// The newest value of the figure drawn, with its unit.
    pub latest: String,
    /// The latest verdict's change of the figure drawn against its baseline (`×93.5`), empty when the verdict
    /// found it unchanged.
    pub change: String,
    /// The same change's exact percentage, for its tooltip.
    pub exact: String,
    /// The metrics the latest verdict found worse on this endpoint (`p95`, `error_rate`, a gate), in its order.
    pub regressed: Vec<String>,
    /// The metrics it found better.
    pub improved: Vec<String>,
}

/// The sparkline of `endpoint` from its `points` (oldest first) and what the latest verdict found on it
/// (`found`: its rows of the changes summary, worse first, largest change first).
#[must_use]
pub fn for_endpoint(endpoint: &str, points: &[&ChartPoint], found: &[&ChangeRow]) -> Sparkline {
    let timed = |p: &&&ChartPoint| p.p50_ms > 0.0 || p.p95_ms > 0.0 || p.p99_ms > 0.0;
    let unchanged = if points.iter().any(|p| timed(&p)) { Drawn::P95 } else { Drawn::Rate };
    let (drawn, finding) =
        found.iter().find_map(|row| Drawn::of(&row.metric).map(|d| (d, Some(*row)))).unwrap_or((unchanged, None));
    let values: Vec<f64> = points.iter().filter(|p| !p.never_judged()).map(|p| drawn.value(p)).collect();
    let listed = |worse: bool| found.iter().filter(|r| r.worse == worse).map(|r| r.metric.clone()).collect();
    let (regressed, improved): (Vec<String>, Vec<String>) = (listed(true), listed(false));
    let colour = match finding {
        Some(row) if row.worse => ALARM,
        Some(_) => IMPROVED,
        None => "#2f6fd0",
    };
    let change = finding.and_then(|row| row.change);
    Sparkline {
        endpoint: endpoint.to_owned(),
        drawn,
        svg: draw(endpoint, drawn, &values, colour),
        latest: values.last().map(|v| format_value(*v, drawn.unit())).unwrap_or_default(),
        change: change.map(|c| c.to_string()).unwrap_or_default(),
        exact: change.map(Change::exact).unwrap_or_default(),
        regressed,
        improved,
    }
}

/// The line of `values` against their level, the median of every value but the newest; empty with fewer than
/// two values. A figure whose level is zero (an error rate that is usually nil) is drawn from zero to its
/// highest value instead, so errors that appear still show.
fn draw(endpoint: &str, drawn: Drawn, values: &[f64], colour: &str) -> String {
    if values.len() < 2 {
        return String::new();
    }
    let level = median(&values[..values.len() - 1]);
    let span = SPAN_FACTOR.ln();
    let highest = values.iter().copied().fold(0.0_f64, f64::max);
    let y = |v: f64| {
        let distance = if level > 0.0 {
            (v.max(f64::MIN_POSITIVE) / level).ln().clamp(-span, span) / span
        } else if highest > 0.0 {
            2.0 * v / highest - 1.0
        } else {
            0.0
        };
        HEIGHT / 2.0 - distance * (HEIGHT / 2.0 - 2.0)
    };
    let step = WIDTH / (values.len() - 1) as f64;
    let points: Vec<String> =
        values.iter().enumerate().map(|(i, v)| format!("{:.1},{:.1}", i as f64 * step, y(*v))).collect();
    let (label, figure) = (xml_escape(endpoint), drawn.name());
    let scale = if level > 0.0 {
        format!(
            "relative to its level {} (middle line); top: twice the level, bottom: half",
            format_value(level, drawn.unit())
        )
    } else {
        "from zero (bottom) to its highest (top)".to_owned()
    };
    format!(
        "<svg class=\"spark\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" \
         aria-label=\"{figure} of {label} over the last month\"><title>{label}: {figure} {scale}</title>\
         <line x1=\"0\" y1=\"{mid}\" x2=\"{WIDTH}\" y2=\"{mid}\" stroke=\"currentColor\" stroke-opacity=\"0.25\" \
         stroke-dasharray=\"2 2\"/><polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\" points=\"{points}\"/></svg>",
        mid = HEIGHT / 2.0,
        points = points.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RunStatus;

    fn ys(svg: &str) -> Vec<f64> {
        let points = svg.split("points=\"").nth(1).unwrap().split('"').next().unwrap();
        points.split(' ').map(|p| p.split(',').nth(1).unwrap().parse().unwrap()).collect()
    }

    /// Nights of one endpoint whose p95 is `p95` and p50 a third of it.
    fn nights(p95: &[f64]) -> Vec<ChartPoint> {
        p95.iter()
            .enumerate()
            .map(|(i, v)| ChartPoint {
                endpoint: "GET /x".into(),
                started_at: chrono::DateTime::from_timestamp(86_400 * i as i64, 0).unwrap(),
                runs: 1,
                run_id: Some(i as i64 + 1),
                status: Some(RunStatus::Passed),
                p50_ms: v / 3.0,
                p95_ms: *v,
                p99_ms: v * 2.0,
                error_pct: 0.0,
                rate: 10.0,
                p95_range_ms: (*v, *v),
                p99_max_ms: v * 2.0,
                error_pct_max: 0.0,
                regressed: 0,
                invalid: 0,
                build_id: None,
            })
            .collect()
    }

    fn row(metric: &str, worse: bool, pct: Option<f64>) -> ChangeRow {
        ChangeRow {
            endpoint: "GET /x".into(),
            metric: metric.into(),
            baseline: String::new(),
            tonight: String::new(),
            change: pct.map(Change::from_pct),
            from_none: false,
            chance: String::new(),
            worse,
            reason: String::new(),
        }
    }

    fn line(endpoint: &str, p95: &[f64], found: &[&ChangeRow]) -> Sparkline {
        let points = nights(p95);
        let refs: Vec<&ChartPoint> = points.iter().collect();
        for_endpoint(endpoint, &refs, found)
    }

    #[test]
    fn an_endpoint_counted_not_timed_shows_its_rate_not_a_p95_of_zero() {
        // A WebSocket push class: messages counted each night, no response time.
        let pushes = line("WS push: change", &[0.0, 0.0, 0.0], &[]);
        assert_eq!((pushes.drawn, pushes.latest.as_str()), (Drawn::Rate, "10.0 /s"), "not 'p95 0.00 ms'");
        assert_eq!(line("GET /x", &[5.0, 5.5], &[]).drawn, Drawn::P95);
    }

    #[test]
    fn jitter_looks_small_and_a_doubling_fills_the_scale_whatever_the_route() {
        let p95 = row("p95", true, Some(111.0));
        let jitter = line("GET /fast", &[5.0, 5.5, 4.8, 5.2, 6.5], &[]);
        let doubled = line("GET /slow", &[80.0, 82.0, 79.0, 81.0, 170.0], &[&p95]);
        let top_of = |s: &Sparkline| ys(&s.svg).into_iter().fold(f64::INFINITY, f64::min);
        assert!(top_of(&doubled) <= 2.5, "a doubling reaches the top: {}", doubled.svg);
        assert!(top_of(&jitter) > 8.0, "jitter stays near the middle: {}", jitter.svg);
        assert!(doubled.svg.contains(ALARM), "a regressed endpoint is drawn in the alarm colour");
        assert_eq!(jitter.latest, "6.50 ms");
        assert!(line("GET /x", &[3.0], &[]).svg.is_empty());
    }

    #[test]
    fn a_route_the_verdict_found_unchanged_carries_no_change_of_its_own() {
        // +30 % against the month's median, and the verdict said no change: no figure that reads as a finding.
        let calm = line("GET /calm", &[10.0, 10.0, 10.0, 13.0], &[]);
        assert_eq!((calm.change.as_str(), calm.drawn), ("", Drawn::P95));
        assert!(calm.regressed.is_empty() && !calm.svg.contains(ALARM), "{}", calm.svg);
    }

    #[test]
    fn the_line_is_the_figure_that_regressed_with_the_verdicts_change() {
        let (p50, p95) = (row("p50", true, Some(9252.7)), row("p95", true, Some(5014.5)));
        let slowed = line("GET /cards", &[3.0, 3.0, 3.0, 249.0], &[&p50, &p95]);
        assert_eq!(slowed.drawn, Drawn::P50, "the largest regression is drawn, not p95 beside `regressed: p50`");
        assert_eq!(slowed.latest, "83.0 ms", "the newest p50, not the newest p95");
        assert_eq!((slowed.change.as_str(), slowed.exact.as_str()), ("×93.5", "+9252.7 %"));
        assert_eq!(slowed.regressed, ["p50", "p95"]);
        let errors = row("error_rate", true, None);
        let failing = line("GET /slow", &[80.0, 82.0, 79.0, 81.0, 81.0], &[&errors]);
        assert_eq!(failing.drawn, Drawn::ErrorRate, "a route that regressed on errors shows its errors");
        assert!(!failing.svg.is_empty(), "a nil error rate draws from zero: {}", failing.svg);
        let faster = row("p99", false, Some(-40.0));
        let better = line("GET /quick", &[10.0, 10.0, 10.0, 6.0], &[&faster]);
        assert_eq!((better.drawn, better.change.as_str()), (Drawn::P99, "-40.0 %"));
        assert!(better.svg.contains(IMPROVED) && better.improved == ["p99"], "{}", better.svg);
    }

    #[test]
    fn invalid_runs_are_left_out_of_the_line() {
        let mut points = nights(&[10.0, 10.0, 300.0, 10.0]);
        points[2].status = Some(RunStatus::Invalid);
        points[2].invalid = 1;
        let refs: Vec<&ChartPoint> = points.iter().collect();
        let spark = for_endpoint("GET /x", &refs, &[]);
        assert_eq!(ys(&spark.svg).len(), 3, "{}", spark.svg);
        assert!(ys(&spark.svg).iter().all(|y| (*y - HEIGHT / 2.0).abs() < 0.01), "a flat line: {}", spark.svg);
    }
}
