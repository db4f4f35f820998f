//! The capacity charts: the steps with the zone, the knee and what took a step out; the nights over time.

use super::*;
use crate::model::SearchEnd;

fn step(rate: f64, p75: f64, verdict: StepVerdict) -> CapacityStep {
    CapacityStep {
        rate,
        achieved_rate: rate,
        holds: 1,
        verdict,
        requests: 100,
        errors: 0,
        p75_ms: Some(p75),
        p95_ms: Some(p75 * 1.2),
        p99_ms: Some(p75 * 1.5),
        breach: None,
        reason: format!("<{rate}> & why"),
    }
}

#[test]
fn the_steps_show_the_zone_the_knee_and_each_reason_escaped() {
    let result = CapacityResult {
        capacity: Some(390.0),
        first_out: Some(405.0),
        breach: Some(ZoneBreach { gate: ZoneGate::P75, endpoint: "GET /work".into(), value: 52.0, limit: 25.0 }),
        ended: SearchEnd::Found,
        search_secs: 17.0,
        steps: vec![
            step(60.0, 11.0, StepVerdict::Held),
            step(390.0, 11.5, StepVerdict::Held),
            step(405.0, 52.0, StepVerdict::Left),
        ],
        zone: None,
    };
    let svg = steps_svg(&result);
    assert!(svg.contains("zone: p75 ≤ 25 ms") && svg.contains("capacity 390 req/s"), "{svg}");
    assert!(svg.contains("&lt;405&gt; &amp; why") && !svg.contains("<405>"), "{svg}");
    assert_eq!(svg.matches(&format!("fill=\"{LEFT_ZONE}\"/>")).count(), 1, "{svg}");
    assert!(!svg.contains("class=\"breach\"") && !svg.contains('✕'), "no step carries its breach here: {svg}");
    let rows = view(&result).rows;
    assert_eq!((rows[2].rate.as_str(), rows[2].verdict), ("405", "left the zone"));
}

#[test]
fn a_step_that_left_on_one_endpoint_shows_that_endpoints_figure_past_the_line() {
    // All the step's requests at a p75 of 25.7 ms, under the zone's 30 ms; GET /search's own 39.4 ms past it.
    let breach = ZoneBreach { gate: ZoneGate::P75, endpoint: "GET /search".into(), value: 39.4, limit: 30.0 };
    let left = CapacityStep { breach: Some(breach.clone()), ..step(350.0, 25.7, StepVerdict::Left) };
    let result = CapacityResult {
        capacity: Some(300.0),
        first_out: Some(350.0),
        breach: Some(breach),
        ended: SearchEnd::Found,
        search_secs: 20.0,
        steps: vec![step(300.0, 14.0, StepVerdict::Held), left],
        zone: None,
    };
    let svg = steps_svg(&result);
    let cross = svg.split("class=\"breach\" d=\"M").nth(1).expect("the breach is drawn");
    let cross_y: f64 = cross.split(['L', ' ']).nth(1).unwrap().parse::<f64>().unwrap() + 5.0;
    let line_y: f64 = svg
        .split("stroke-dasharray")
        .next()
        .unwrap()
        .rsplit("y1=\"")
        .next()
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(cross_y < line_y, "the cross stands above the zone's line (smaller y): {cross_y} {line_y}");
    assert!(svg.contains("<title>p75 of GET /search 39.4 ms against 30 ms"), "its tooltip says why: {svg}");
    assert!(svg.contains("✕ the endpoint's figure that left the zone"), "{svg}");
}

#[test]
fn the_trend_draws_a_dot_per_night_linking_its_run_and_nothing_without_nights() {
    assert!(trend_svg(&[]).is_empty());
    let night = |run_id, capacity, ended| CapacityNight {
        run_id,
        started_at: chrono::DateTime::default(),
        build_id: Some("1.0".into()),
        result: CapacityResult {
            capacity: Some(capacity),
            first_out: None,
            breach: None,
            ended,
            search_secs: 1.0,
            steps: Vec::new(),
            zone: None,
        },
        fell: false,
    };
    let svg = trend_svg(&[night(1, 400.0, SearchEnd::Found), night(2, 300.0, SearchEnd::GeneratorLimit)]);
    assert!(svg.contains("href=\"/runs/1\"") && svg.contains("href=\"/runs/2\""), "{svg}");
    // Two searches in one minute (a new user's tries) are told apart by their seconds.
    let later = CapacityNight {
        started_at: chrono::DateTime::default() + chrono::Duration::seconds(40),
        ..night(2, 300.0, SearchEnd::Found)
    };
    let tries = trend_svg(&[night(1, 400.0, SearchEnd::Found), later]);
    assert!(tries.contains(">00:00:00</text>") && tries.contains(">00:00:40</text>"), "{tries}");
    assert!(svg.contains("capacity at least 300 req/s") && svg.contains("fill=\"none\""), "{svg}");
    assert!(!svg.contains(LEFT_ZONE) && !svg.contains("judged a capacity regression"), "{svg}");
    let fell = CapacityNight { fell: true, ..night(3, 200.0, SearchEnd::Found) };
    let svg = trend_svg(&[night(1, 400.0, SearchEnd::Found), fell]);
    assert!(svg.contains(&format!("fill=\"{LEFT_ZONE}\"")) && svg.contains("(judged a capacity regression)"), "{svg}");
}

#[test]
fn the_trend_marks_where_the_build_changed_as_the_other_trends_do() {
    let night = |run_id: i64, build: &str| CapacityNight {
        run_id,
        started_at: chrono::DateTime::default() + chrono::Duration::days(run_id),
        build_id: Some(build.into()),
        result: CapacityResult {
            capacity: Some(150.0),
            first_out: None,
            breach: None,
            ended: SearchEnd::Found,
            search_secs: 1.0,
            steps: Vec::new(),
            zone: None,
        },
        fell: false,
    };
    let svg = trend_svg(&[night(1, "1.1.0"), night(2, "1.1.0"), night(3, "1.2.0")]);
    assert_eq!(svg.matches("class=\"build-change\"").count(), 1, "{svg}");
    assert!(svg.contains("<title>build 1.1.0 → 1.2.0</title>") && svg.contains(">1.2.0<title>"), "{svg}");
    let same = trend_svg(&[night(1, "1.1.0"), night(2, "1.1.0")]);
    assert!(!same.contains("build-change"), "{same}");
}

#[test]
fn a_night_under_its_start_rate_or_with_nothing_measured_is_no_dot_at_zero_and_a_new_zone_is_marked() {
    let night = |run_id: i64, result: CapacityResult| CapacityNight {
        run_id,
        started_at: chrono::DateTime::default() + chrono::Duration::days(run_id),
        build_id: Some("1.0".into()),
        result,
        fell: false,
    };
    let found = |capacity, zone: &str| CapacityResult {
        capacity: Some(capacity),
        first_out: None,
        breach: None,
        ended: SearchEnd::Found,
        search_secs: 1.0,
        steps: Vec::new(),
        zone: Some(zone.into()),
    };
    let under = CapacityResult {
        capacity: None,
        first_out: Some(20.0),
        ended: SearchEnd::LeftAtStart,
        ..found(0.0, "p75 ≤ 60 ms")
    };
    let unread = CapacityResult { capacity: None, ended: SearchEnd::ZoneUnread, ..found(0.0, "p75 ≤ 60 ms") };
    let svg = trend_svg(&[
        night(1, found(160.0, "p75 ≤ 60 ms")),
        night(2, under),
        night(3, unread),
        night(4, found(120.0, "app CPU ≤ 0.1")),
    ]);
    // A trial read run 7's filled green dot at 0 as a capacity of nothing.
    assert_eq!(svg.matches("<circle").count(), 2, "the two capacities only: {svg}");
    assert!(svg.contains("no capacity: the start rate already left the zone") && svg.contains("Z\" fill=\"none\""));
    assert!(svg.contains("no capacity measured") && svg.contains(&format!("stroke=\"{INVALID}\"")), "{svg}");
    assert_eq!(svg.matches("class=\"zone-change\"").count(), 1, "{svg}");
    assert!(svg.contains("<title>the zone changed: p75 ≤ 60 ms → app CPU ≤ 0.1</title>"), "{svg}");
}
