//! The time axis under a trend chart: dates under evenly spaced points (runs are slots, not times), and a
//! labelled tick wherever the build changed, never a line per night.

use std::fmt::Write as _;

use super::trend_chart::{BOTTOM, LEFT, RIGHT, WIDTH, slot_x};
use crate::outside_text::xml_escape;
use crate::store::ChartPoint;

/// Date labels on the time axis, at most.
const DATE_LABELS: usize = 6;
/// Past this many build changes a chart draws no build ticks: about one every 10 px of plot, a tick per night.
const MAX_BUILD_TICKS: usize = 60;
/// Build labels closer than this to the previous one are left to their tick's tooltip.
const BUILD_LABEL_GAP: f64 = 64.0;

/// Dates under evenly spaced points, and a labelled tick wherever the build changed.
pub(super) fn time_axis(svg: &mut String, points: &[&ChartPoint]) {
    let count = points.len();
    let _ = write!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{BOTTOM}\" x2=\"{}\" y2=\"{BOTTOM}\" stroke=\"currentColor\" stroke-opacity=\"0.5\"/>",
        WIDTH - RIGHT
    );
    let labels = DATE_LABELS.min(count);
    let same_day =
        points.first().map(|p| p.started_at.date_naive()) == points.last().map(|p| p.started_at.date_naive());
    // A range of about a year or more names the year: month and day alone repeat across years.
    let long = match (points.first(), points.last()) {
        (Some(first), Some(last)) => last.started_at - first.started_at > chrono::Duration::days(300),
        _ => false,
    };
    let format = match (same_day, long) {
        (true, _) => "%H:%M",
        (false, true) => "%Y-%m",
        (false, false) => "%m-%d",
    };
    for k in 0..labels {
        let index = if labels == 1 { 0 } else { k * (count - 1) / (labels - 1) };
        // A last label near the plot's edge ends there rather than centring on its point, so enlarged text on a
        // narrow screen is not cut off by the chart's border.
        let x = slot_x(index, count);
        let (x, anchor) =
            if k + 1 == labels && x > WIDTH - RIGHT - 40.0 { (WIDTH - RIGHT, "end") } else { (x, "middle") };
        let _ = write!(
            svg,
            "<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"{anchor}\" fill-opacity=\"0.8\">{}</text>",
            BOTTOM + 16.0,
            points[index].started_at.format(format)
        );
    }
    build_ticks(svg, points);
}

/// A labelled tick wherever the build changed; none where it changes at nearly every point (a nightly build
/// on a year-long range): ticks would be a line per night, and each point's tooltip names its build.
fn build_ticks(svg: &mut String, points: &[&ChartPoint]) {
    let changes: Vec<(usize, &str, &str)> = points
        .windows(2)
        .enumerate()
        .scan(None::<&str>, |previous, (i, pair)| {
            *previous = pair[0].build_id.as_deref().or(*previous);
            let change = match (*previous, pair[1].build_id.as_deref()) {
                (Some(before), Some(now)) if before != now => Some((i + 1, before, now)),
                _ => None,
            };
            Some(change)
        })
        .flatten()
        .collect();
    if changes.len() > MAX_BUILD_TICKS {
        return;
    }
    let count = points.len();
    let mut last_label = f64::NEG_INFINITY;
    for (i, before, now) in changes {
        let x = slot_x(i, count);
        let change = xml_escape(&format!("build {before} → {now}"));
        let _ = write!(
            svg,
            "<line class=\"build-change\" x1=\"{x:.1}\" y1=\"{}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"currentColor\" \
             stroke-width=\"2\"><title>{change}</title></line>",
            BOTTOM - 5.0,
            BOTTOM + 5.0
        );
        if x - last_label >= BUILD_LABEL_GAP {
            let label: String = now.chars().take(10).collect();
            let _ = write!(
                svg,
                "<text class=\"build-label\" x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\">{}<title>{change}</title></text>",
                BOTTOM + 36.0,
                xml_escape(&label)
            );
            last_label = x;
        }
    }
}
