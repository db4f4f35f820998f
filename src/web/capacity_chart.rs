//! A capacity night on the run page: its steps drawn as rate against p75 and p95 of all their requests (a log
//! axis: past the knee a queue multiplies the response time), the zone's limit as a dashed line, each step
//! coloured by what the zone made of it, the figure that took a step out of the zone (one endpoint's, which all
//! the requests' p75 may not show) as a cross, and the knee (the capacity found) marked; then the steps as a
//! table. On the scenario page, the
//! capacity night over night ([`trend_svg`]).

use std::fmt::Write as _;

use super::svg::{Px, log_ticks, nice_ticks, tick_label};
use super::trend_chart::{FONTS, colour};
use super::trend_time_axis::{DateFormat, build_ticks};
use crate::model::{CapacityResult, CapacityStep, SearchEnd, StepVerdict, ZoneBreach, ZoneGate};
use crate::outside_text::xml_escape;
use crate::store::CapacityNight;

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 300.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 40.0;
/// Held, left and invalid steps: the dashboard's green, its alarm red, and grey.
const HELD: &str = "#2e7d32";
const LEFT_ZONE: &str = super::trend_chart::ALARM;
const INVALID: &str = "#8a8a8a";

/// What the run page shows of a capacity night.
pub(super) struct CapacityView {
    /// `capacity 390 req/s; 405 req/s left the zone on p75 of GET /work …`.
    pub summary: String,
    pub svg: String,
    pub rows: Vec<StepRow>,
}

/// One step, as the table shows it.
pub(super) struct StepRow {
    pub rate: String,
    pub achieved: String,
    pub holds: u32,
    pub verdict: &'static str,
    pub requests: i64,
    pub errors: String,
    pub p75: String,
    pub p95: String,
    pub p99: String,
    pub reason: String,
}

pub(super) fn view(result: &CapacityResult) -> CapacityView {
    let ms = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v:.1}"));
    let rows = result
        .steps
        .iter()
        .map(|s| StepRow {
            rate: format!("{:.0}", s.rate),
            achieved: format!("{:.1}", s.achieved_rate),
            holds: s.holds,
            verdict: verdict_words(s.verdict),
            requests: s.requests,
            errors: if s.requests > 0 {
                format!("{:.3}", s.errors as f64 * 100.0 / s.requests as f64)
            } else {
                String::new()
            },
            p75: ms(s.p75_ms),
            p95: ms(s.p95_ms),
            p99: ms(s.p99_ms),
            reason: s.reason.clone(),
        })
        .collect();
    CapacityView {
        summary: format!("{}, in {:.0} s", result.describe(), result.search_secs),
        svg: steps_svg(result),
        rows,
    }
}

fn verdict_words(verdict: StepVerdict) -> &'static str {
    match verdict {
        StepVerdict::Held => "held",
        StepVerdict::Left => "left the zone",
        StepVerdict::Invalid => "invalid: generator",
        StepVerdict::TargetFailed => "target failed",
        StepVerdict::Unread => "zone unread",
    }
}

/// The steps' figure; empty when no step has a response time.
fn steps_svg(result: &CapacityResult) -> String {
    let timed: Vec<&CapacityStep> = result.steps.iter().filter(|s| s.p75_ms.is_some()).collect();
    let limit = result.breach.as_ref().filter(|b| is_latency(b));
    let breaches = timed.iter().filter_map(|s| latency_breach(s)).map(|b| b.value);
    let values =
        timed.iter().flat_map(|s| [s.p75_ms, s.p95_ms]).flatten().chain(limit.map(|b| b.limit)).chain(breaches);
    let (low, high) = values.fold((f64::INFINITY, 0.0_f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if timed.is_empty() || !(low > 0.0 && high.is_finite()) {
        return String::new();
    }
    let (low, high) = (low / 1.3, high * 1.3);
    let top_rate = timed.iter().map(|s| s.rate).fold(0.0, f64::max) * 1.05;
    let x = |rate: f64| LEFT + rate / top_rate * (WIDTH - LEFT - RIGHT);
    let y = |ms: f64| TOP + (high.ln() - ms.clamp(low, high).ln()) / (high.ln() - low.ln()) * (HEIGHT - TOP - BOTTOM);
    // The cross is named only where one is drawn.
    let crosses = if timed.iter().any(|s| latency_breach(s).is_some()) {
        ", ✕ the endpoint's figure that left the zone"
    } else {
        ""
    };
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" \
         height=\"{HEIGHT}\" font-family=\"{FONTS}\" font-size=\"12\" role=\"img\" aria-label=\"Capacity search: \
         each step's rate against the p75 and p95 of its requests{crosses}\"><text class=\"title\" x=\"{LEFT}\" \
         y=\"16\" font-weight=\"600\">Capacity search: p75 (filled) and p95 (ring) of each step's requests{crosses}, \
         ms (log)</text>"
    );
    axes(&mut out, &x, &y, (low, high), top_rate);
    if let Some(limit) = limit {
        let _ = write!(
            out,
            "<line x1=\"{LEFT}\" x2=\"{0}\" y1=\"{1}\" y2=\"{1}\" stroke=\"{LEFT_ZONE}\" stroke-dasharray=\"6 4\"/>\
             <text x=\"{2}\" y=\"{3}\" text-anchor=\"end\" fill=\"{LEFT_ZONE}\">zone: {4} ≤ {5} ms</text>",
            Px(WIDTH - RIGHT),
            Px(y(limit.limit)),
            Px(WIDTH - RIGHT),
            Px(y(limit.limit) - 4.0),
            limit.gate.figure(),
            tick_label(limit.limit)
        );
    }
    if let Some(capacity) = result.capacity {
        let _ = write!(
            out,
            "<line x1=\"{0}\" x2=\"{0}\" y1=\"{TOP}\" y2=\"{1}\" stroke=\"{HELD}\" stroke-width=\"2\"/>\
             <text x=\"{2}\" y=\"{3}\" fill=\"{HELD}\">capacity {capacity:.0} req/s</text>",
            Px(x(capacity)),
            Px(HEIGHT - BOTTOM),
            Px(x(capacity) + 4.0),
            Px(TOP + 12.0)
        );
    }
    for step in timed {
        dot(&mut out, step, x(step.rate), &y);
    }
    out.push_str("</svg>");
    out
}

fn is_latency(breach: &ZoneBreach) -> bool {
    matches!(breach.gate, ZoneGate::P75 | ZoneGate::P95 | ZoneGate::P99)
}

/// The response time that took `step` out of the zone, when one did: an endpoint's p75, p95 or p99.
fn latency_breach(step: &CapacityStep) -> Option<&ZoneBreach> {
    // A response time past a limit is positive; anything else has no place on the log axis.
    step.breach.as_ref().filter(|b| is_latency(b) && b.value.is_finite() && b.value > 0.0)
}

/// A value's grid line across the plot at height `at`, labelled on the left.
fn grid_line(out: &mut String, at: f64, value: f64) {
    let _ = write!(
        out,
        "<line x1=\"{LEFT}\" x2=\"{0}\" y1=\"{1}\" y2=\"{1}\" stroke=\"currentColor\" stroke-opacity=\"0.12\"/>\
         <text x=\"{2}\" y=\"{3}\" text-anchor=\"end\">{4}</text>",
        Px(WIDTH - RIGHT),
        Px(at),
        Px(LEFT - 6.0),
        Px(at + 4.0),
        tick_label(value)
    );
}

fn axes(out: &mut String, x: &dyn Fn(f64) -> f64, y: &dyn Fn(f64) -> f64, (low, high): (f64, f64), top_rate: f64) {
    for tick in log_ticks(low, high) {
        grid_line(out, y(tick), tick);
    }
    for tick in nice_ticks(0.0, top_rate).into_iter().filter(|t| *t <= top_rate) {
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            Px(x(tick)),
            Px(HEIGHT - BOTTOM + 16.0),
            tick_label(tick)
        );
    }
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">arrivals per second</text>",
        Px(f64::midpoint(LEFT, WIDTH - RIGHT)),
        Px(HEIGHT - 6.0)
    );
}

/// A step's p75 (filled) and p95 (ring), coloured by its verdict, with its reason as the tooltip.
fn dot(out: &mut String, step: &CapacityStep, x: f64, y: &dyn Fn(f64) -> f64) {
    let fill = match step.verdict {
        StepVerdict::Held => HELD,
        StepVerdict::Left => LEFT_ZONE,
        StepVerdict::Invalid | StepVerdict::TargetFailed | StepVerdict::Unread => INVALID,
    };
    let tip = xml_escape(&format!("{:.0} req/s: {}", step.rate, step.reason));
    let _ = write!(out, "<g><title>{tip}</title>");
    if let Some(p95) = step.p95_ms {
        let _ = write!(
            out,
            "<circle cx=\"{}\" cy=\"{}\" r=\"6\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>",
            Px(x),
            Px(y(p95)),
            colour::P95
        );
    }
    if let Some(p75) = step.p75_ms {
        let _ = write!(out, "<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{fill}\"/>", Px(x), Px(y(p75)));
    }
    // The zone is judged endpoint by endpoint: a step can leave it on one endpoint's p75 while all its
    // requests' p75 stays under the line (a trial's 39.4 ms of GET /search against 30, its step's p75 25.7).
    if let Some(breach) = latency_breach(step) {
        let (cx, cy) = (x, y(breach.value));
        let _ = write!(
            out,
            "<path class=\"breach\" d=\"M{} {}L{} {}M{} {}L{} {}\" stroke=\"{LEFT_ZONE}\" stroke-width=\"2.5\">\
             <title>{}</title></path>",
            Px(cx - 5.0),
            Px(cy - 5.0),
            Px(cx + 5.0),
            Px(cy + 5.0),
            Px(cx - 5.0),
            Px(cy + 5.0),
            Px(cx + 5.0),
            Px(cy - 5.0),
            xml_escape(&breach.describe())
        );
    }
    out.push_str("</g>");
}

/// The scenario page's capacity, night over night: one dot per night that ran a search (filled where the
/// search found the target's capacity, a ring where it found only a lower bound), the reason it left the zone
/// in its tooltip, each a link to its run, and a labelled tick where the build changed, as the other trends
/// have; empty without such a night.
pub(super) fn trend_svg(nights: &[CapacityNight]) -> String {
    let high = nights.iter().filter_map(|n| plotted(&n.result)).fold(0.0, f64::max);
    if nights.is_empty() || high <= 0.0 {
        return String::new();
    }
    let ticks = nice_ticks(0.0, high * 1.1);
    let top = ticks.last().copied().unwrap_or(high).max(f64::MIN_POSITIVE);
    let step = (WIDTH - LEFT - RIGHT) / nights.len() as f64;
    let x = |index: usize| LEFT + step * (index as f64 + 0.5);
    let y = |rate: f64| TOP + (1.0 - rate / top) * (HEIGHT - TOP - BOTTOM);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" \
         height=\"{HEIGHT}\" font-family=\"{FONTS}\" font-size=\"12\" role=\"img\" aria-label=\"Capacity night \
         over night\"><text class=\"title\" x=\"{LEFT}\" y=\"16\" font-weight=\"600\">Capacity: the highest rate \
         held inside the zone, req/s</text>"
    );
    for tick in ticks {
        grid_line(&mut out, y(tick), tick);
    }
    let (first, last) = (nights[0].started_at, nights[nights.len() - 1].started_at);
    let format = DateFormat::spanning(first, last).telling_apart(&[first, last]);
    let edges = if nights.len() == 1 { vec![0] } else { vec![0, nights.len() - 1] };
    for index in edges {
        let anchor = if index == 0 { "start" } else { "end" };
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\">{}</text>",
            Px(x(index)),
            Px(HEIGHT - BOTTOM + 16.0),
            nights[index].started_at.format(format.pattern)
        );
    }
    let builds: Vec<Option<&str>> = nights.iter().map(|n| n.build_id.as_deref()).collect();
    build_ticks(&mut out, &builds, x, HEIGHT - BOTTOM);
    zone_changes(&mut out, nights, |index| x(index) - step / 2.0);
    for (index, night) in nights.iter().enumerate() {
        trend_mark(&mut out, night, x(index), y);
    }
    out.push_str("</svg>");
    out
}

/// The rate a night's mark stands at: its capacity, or the start rate it was under; `None` when the search
/// measured none (the target failed, a limit of the zone could not be read at the first step).
fn plotted(result: &CapacityResult) -> Option<f64> {
    match (result.capacity, result.ended, result.first_out) {
        (Some(capacity), _, _) => Some(capacity),
        (None, SearchEnd::LeftAtStart, Some(first_out)) => Some(first_out),
        _ => None,
    }
}

/// One night's mark, a link to its run: a dot at its capacity (filled when it is the target's, hollow for a
/// lower bound), a hollow triangle pointing down at the start rate it was under, or a grey cross on the axis
/// when nothing was measured (a dot at 0 read as a capacity of nothing, green).
fn trend_mark(out: &mut String, night: &CapacityNight, cx: f64, y: impl Fn(f64) -> f64) {
    let build = night.build_id.as_deref().map(|b| format!(", build {b}")).unwrap_or_default();
    let fell = if night.fell { " (judged a capacity regression)" } else { "" };
    let tip = xml_escape(&format!(
        "run #{}{build}, {}: {}{fell}",
        night.run_id,
        night.started_at.format("%Y-%m-%d"),
        night.result.describe()
    ));
    // A night whose capacity was judged fallen is red, as the regression grid and the pins are.
    let colour = if night.fell { LEFT_ZONE } else { colour::THROUGHPUT };
    let (x, id) = (Px(cx), night.run_id);
    let mark = match (plotted(&night.result), night.result.capacity) {
        (Some(rate), Some(_)) => {
            let fill = if night.result.ended.measured_the_target() { colour } else { "none" };
            let cy = Px(y(rate));
            format!("<circle cx=\"{x}\" cy=\"{cy}\" r=\"5\" fill=\"{fill}\" stroke=\"{colour}\" stroke-width=\"2\"/>")
        }
        (Some(under), None) => {
            let (cy, left, right) = (y(under), Px(cx - 6.0), Px(cx + 6.0));
            let (top, tip_y) = (Px(cy - 4.0), Px(cy + 6.0));
            format!(
                "<path d=\"M{left} {top}H{right}L{x} {tip_y}Z\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"/>"
            )
        }
        (None, _) => {
            let cy = y(0.0) - 6.0;
            let (left, right, top, bottom) = (Px(cx - 4.0), Px(cx + 4.0), Px(cy - 4.0), Px(cy + 4.0));
            format!(
                "<path d=\"M{left} {top}L{right} {bottom}M{left} {bottom}L{right} {top}\" stroke=\"{INVALID}\" \
                 stroke-width=\"2\"/>"
            )
        }
    };
    let _ = write!(out, "<a href=\"/runs/{id}\"><title>{tip}</title>{mark}</a>");
}

/// A dashed line between two nights searched in different zones, labelled: their capacities measured
/// different things, and a step between them is no change of the build's.
fn zone_changes(out: &mut String, nights: &[CapacityNight], between: impl Fn(usize) -> f64) {
    for index in 1..nights.len() {
        let (before, now) = (&nights[index - 1].result.zone, &nights[index].result.zone);
        let (Some(before), Some(now)) = (before, now) else { continue };
        if before == now {
            continue;
        }
        let (x, tip) = (Px(between(index)), xml_escape(&format!("the zone changed: {before} → {now}")));
        let _ = write!(
            out,
            "<g class=\"zone-change\"><title>{tip}</title><line x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\" \
             stroke=\"currentColor\" stroke-opacity=\"0.5\" stroke-dasharray=\"4 3\"/>\
             <text x=\"{x}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\">zone changed</text></g>",
            Px(TOP + 12.0),
            Px(HEIGHT - BOTTOM),
            Px(TOP + 8.0),
        );
    }
}

#[cfg(test)]
#[path = "capacity_chart_tests.rs"]
mod tests;
