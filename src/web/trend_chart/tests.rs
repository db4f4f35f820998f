//! The trend chart's drawing: linked dots with their numbers, buckets, gates, scales and invalid runs.

use chrono::TimeZone;

use super::*;
use crate::model::RunStatus;

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

const P95: [Line; 1] = [Line { name: "p95", over_buckets: OverBuckets::Mean, colour: "#1e8449", value: |p| p.p95_ms }];

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
    let gated = TrendChart {
        limits: vec![GateLine::at_most("p95", 20.0), GateLine::at_most("p99", 60.0)],
        ..chart(Scale::Linear)
    };
    let svg = gated.render(&refs);
    assert_eq!(svg.matches("class=\"gate-zone\"").count(), 2, "{svg}");
    assert!(svg.contains("<title>gate: p95 at most 20.0 ms</title>"), "{svg}");
    assert!(svg.contains("<title>gate: p99 at most 60.0 ms</title>"), "{svg}");
    assert!(gated.axis(&refs).0.high >= 60.0, "the axis reaches the highest gate");
    assert!(!chart(Scale::Linear).render(&refs).contains("gate-zone"), "no gate, no zone");
}

#[test]
fn an_invalid_run_is_marked_apart_off_the_line_and_outside_the_scale() {
    let mut points: Vec<ChartPoint> = (0..7).map(|h| point(h, 60.0, "1.0.0")).collect();
    for (i, p95) in [(2, 370.0), (4, 40.0)] {
        points[i].p95_ms = p95;
        points[i].status = Some(RunStatus::Invalid);
        points[i].invalid = 1;
    }
    let refs: Vec<&ChartPoint> = points.iter().collect();
    let chart = chart(Scale::Linear);
    let (axis, _) = chart.axis(&refs);
    assert!(axis.high < 100.0, "370 ms of a saturated generator does not set the scale: {}", axis.high);
    let svg = chart.render(&refs);
    let line = svg.split("<polyline").nth(1).unwrap().split("points=\"").nth(1).unwrap().split('"').next().unwrap();
    assert_eq!(line.split(' ').count(), 5, "the line joins the five valid runs only: {line}");
    assert_eq!(svg.matches("<circle class=\"point\"").count(), 5, "{svg}");
    assert_eq!(svg.matches("class=\"invalid-run\"").count(), 2, "both invalid runs are marked: {svg}");
    assert_eq!(svg.matches("class=\"off-scale\"").count(), 1, "only the one above the scale gets an arrow");
    assert!(
        svg.contains(
            "<a href=\"/runs/3\"><title>run #3, 2026-11-30 02:00 UTC, build 1.0.0: p95 370 ms; invalid: never \
             judged, drawn apart from the line, above the chart&apos;s scale</title><path class=\"invalid-run\""
        ),
        "its value in its tooltip, its link kept: {svg}"
    );
    assert!(svg.contains("p95 40.0 ms; invalid: never judged, drawn apart from the line</title>"), "{svg}");
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
