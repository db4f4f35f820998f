//! The stand-out rule on nights measured here and on the nights that shaped it.

use super::*;

/// A p95 finding: `base` ms on the baseline nights, `tonight` ms, a regression from `limit` ms.
fn p95(endpoint: &str, base: f64, tonight: f64, limit: f64) -> Finding {
    Finding {
        endpoint: endpoint.into(),
        metric: "p95".into(),
        outcome: if tonight >= limit { FindingOutcome::Regression } else { FindingOutcome::NoChange },
        baseline_value: Some(base),
        candidate_value: tonight,
        delta_pct: Some(100.0 * (tonight / base - 1.0)),
        limit: Some(limit),
        interval: None,
        p_value: None,
        reason: String::new(),
    }
}

fn blamed(run: &[Finding]) -> Vec<String> {
    standing_out(run, None).into_iter().map(|(endpoint, _)| endpoint).collect()
}

#[test]
fn a_route_slowed_far_beyond_what_the_others_went_through_stands_out() {
    // The demo's 80 ms on a 0.7 ms route, on a night when the host slowed the others by up to 30 %.
    let run = [
        p95("GET /cards", 0.7, 82.0, 0.8),
        p95("GET /boards", 1.2, 1.56, 1.4),
        p95("GET /search", 1.3, 1.4, 1.5),
        p95("PATCH /cards", 2.2, 2.3, 2.5),
        p95(OVERALL_ENDPOINT, 2.0, 82.0, 2.3),
    ];
    assert_eq!(blamed(&run), ["GET /cards"]);
}

/// Eleven routes on a machine that read 15 % slower, as the lost-index night of a JSON storage service
/// did: every route moved by the machine's 10–20 %, and `slowed` by `factor` on top.
fn lost_index_night(slowed: &[&str], factor: f64) -> Vec<Finding> {
    let machine = [1.12, 1.18, 1.15, 1.10, 1.20, 1.14, 1.17, 1.13, 1.16, 1.19, 1.11];
    (0..11)
        .map(|i| {
            let name = format!("GET /r{i}");
            let base = 8.0 + f64::from(i);
            let by = if slowed.contains(&name.as_str()) { machine[i as usize] * factor } else { machine[i as usize] };
            p95(&name, base, base * by, base * 1.1)
        })
        .collect()
}

#[test]
fn two_routes_the_build_slowed_alike_do_not_excuse_each_other() {
    // Each was ×3: with the worst other change as the yardstick, each was excused by the other.
    assert_eq!(blamed(&lost_index_night(&["GET /r3", "GET /r7"], 3.0)), ["GET /r3", "GET /r7"]);
    // Three of eleven alike, and a lesser ×1.6 on two.
    assert_eq!(blamed(&lost_index_night(&["GET /r1", "GET /r2", "GET /r9"], 3.0)).len(), 3);
    assert_eq!(blamed(&lost_index_night(&["GET /r0", "GET /r5"], 1.6)), ["GET /r0", "GET /r5"]);
}

#[test]
fn a_whole_machine_slowdown_stands_out_nowhere() {
    // Every route 10–20 % slower, by the machine alone.
    assert!(blamed(&lost_index_night(&[], 1.0)).is_empty());
    // A constant 0.4 ms wait on every request: a large factor on the fast routes, a like time on all.
    let run: Vec<Finding> = [0.3, 0.5, 1.0, 4.0, 12.0, 30.0]
        .iter()
        .enumerate()
        .map(|(i, &base)| p95(&format!("GET /w{i}"), base, base + 0.4 + 0.02 * i as f64, base * 1.1))
        .collect();
    assert!(blamed(&run).is_empty());
}

#[test]
fn a_slowdown_within_the_others_spread_does_not() {
    // 60 % slower, on a night when the others moved from 0 to 40 %: within what the machine did.
    let run = [
        p95("GET /a", 1.0, 1.6, 1.2),
        p95("GET /b", 1.0, 1.4, 1.2),
        p95("GET /c", 1.0, 1.1, 1.2),
        p95("GET /d", 1.0, 1.0, 1.2),
    ];
    assert!(standing_out(&run, None).is_empty());
}

#[test]
fn among_too_few_others_the_machine_s_own_bound_decides() {
    let run = [p95("GET /a", 1.0, 9.0, 1.2), p95("GET /b", 1.0, 1.0, 1.2), p95("GET /c", 1.0, 1.0, 1.2)];
    assert!(standing_out(&run, None).is_empty(), "two others' spread says nothing, and no echo was measured");
    // ×9 beside two routes that did not move, on a machine 1.4 times slower (at most ×1.96): the build's.
    let slower = Some(MachineSlowdown(1.4));
    assert_eq!(blamed_on(&run, slower), ["GET /a"]);
    // ×2.2 is within what such a machine can do (1.96 × its limit of 1.2 is 2.35): excused, saying why.
    let within = [p95("GET /a", 1.0, 2.2, 1.2), p95("GET /b", 1.0, 1.0, 1.2), p95("GET /c", 1.0, 1.02, 1.2)];
    assert!(standing_out(&within, slower).is_empty());
    let (findings, _) = excuse_the_rest(within.to_vec(), &Blamed::new(), "on a slower machine", slower);
    assert!(
        findings[0].reason.starts_with(
            "not blamed on the build: measured on a slower machine (the other 2 endpoints moved +1.0 % and +0.01 ms \
             at the median, too few to read a spread from; this one needed to be past 1.96 times its limit, what a \
             machine 1.40 times slower can do and beyond their median by its limit)"
        ),
        "{}",
        findings[0].reason
    );
    // Two routes the build slowed alike among three are not each other's excuse either: each is past the
    // machine's bound, and the median of two others is halfway to the other slowed one.
    let two = [p95("GET /a", 1.0, 9.0, 1.2), p95("GET /b", 1.0, 8.0, 1.2), p95("GET /c", 1.0, 1.0, 1.2)];
    assert_eq!(blamed_on(&two, slower), ["GET /a", "GET /b"]);
    // A one-route API: the machine's bound alone, and its own p99 too.
    assert_eq!(blamed_on(&[p99("GET /only", 2.0, 30.0, 2.6)], slower), ["GET /only"]);
    assert!(blamed_on(&[p99("GET /only", 2.0, 4.0, 2.6)], slower).is_empty());
    // A busier machine whose echo did not move bounds nothing: alone, a route past its limit stays excused.
    assert!(blamed_on(&[p95("GET /only", 10.0, 13.0, 12.0)], Some(MachineSlowdown(1.0))).is_empty());
}

fn blamed_on(run: &[Finding], machine: Option<MachineSlowdown>) -> Vec<String> {
    standing_out(run, machine).into_iter().map(|(endpoint, _)| endpoint).collect()
}

#[test]
fn others_that_sped_up_lend_no_credit() {
    // Everything else 30 % faster: the route must still clear its own limit, and 15 % does not.
    let mut run = [
        p95("GET /a", 1.0, 1.15, 1.2),
        p95("GET /b", 1.0, 0.7, 1.2),
        p95("GET /c", 1.0, 0.7, 1.2),
        p95("GET /d", 1.0, 0.7, 1.2),
    ];
    run[0].outcome = FindingOutcome::Regression;
    assert!(standing_out(&run, None).is_empty());
    let shift = machine_shift(&run[0], &run, &Blamed::new());
    assert_eq!((shift.factor, shift.added), (1.0, 0.0));
    assert!((spreads_to_stand_out(10) - 5.7).abs() < 0.1, "{}", spreads_to_stand_out(10));
}

#[test]
fn a_second_slowed_route_is_not_excused_by_the_first() {
    // The build adds 80 ms to one route and doubles another; the host slowed the rest by up to 25 %.
    let run = [
        p95("GET /a", 0.5, 80.0, 0.6),
        p95("GET /b", 2.0, 4.0, 2.3),
        p95("GET /c", 1.0, 1.25, 1.2),
        p95("GET /d", 1.0, 1.1, 1.2),
        p95("GET /e", 1.0, 1.0, 1.2),
        p95("GET /f", 1.0, 1.05, 1.2),
        p95("GET /g", 1.0, 1.15, 1.2),
        p95("GET /h", 1.0, 1.08, 1.2),
        p95("GET /i", 1.0, 1.12, 1.2),
        p95("GET /j", 1.0, 1.02, 1.2),
    ];
    assert_eq!(blamed(&run), ["GET /a", "GET /b"]);
}

/// A new user's trial: three routes moved by their noise (+25 %, −10 %, +15 %), one ×15, on a machine whose
/// echo read 1.44 times usual.
fn the_trial(slowed: f64) -> Vec<Finding> {
    let mut run = vec![p95("GET /boards", 1.0, 1.25, 1.3), p95("GET /cards", 2.0, 1.8, 2.5)];
    run.push(p95("GET /search", 4.0, 4.6, 4.8));
    run.push(p95("GET /boards/{board_id}", 1.5, 1.5 * slowed, 1.9));
    run
}

#[test]
fn a_slowdown_past_what_the_slower_machine_can_do_stands_out_among_few_others() {
    let trial = the_trial(15.1);
    let slower = Some(MachineSlowdown(1.44));
    assert!(standing_out(&trial, None).is_empty(), "three others' spread alone asks for 53 spreads");
    assert_eq!(
        standing_out(&trial, slower).into_iter().map(|(e, _)| e).collect::<Vec<_>>(),
        ["GET /boards/{board_id}"]
    );
    // Within the square of the machine's slowdown (×2.07 here), the machine may have done it.
    assert!(standing_out(&the_trial(1.9), slower).is_empty());
    let (findings, excused) = excuse_the_rest(the_trial(1.9), &Blamed::new(), "on a slower machine", slower);
    assert_eq!(excused, 1);
    let reason = &findings[3].reason;
    assert!(reason.contains("; to stand out, this one had to be beyond that by its limit and by "), "{reason}");
    assert!(
        reason.contains(
            "(or by its limit and past 2.07 times its limit, what a machine 1.44 times slower can do), and \
                         was not)"
        ),
        "{reason}"
    );
}

/// A p99 finding, as [`p95`] makes one.
fn p99(endpoint: &str, base: f64, tonight: f64, limit: f64) -> Finding {
    Finding { metric: "p99".into(), ..p95(endpoint, base, tonight, limit) }
}

#[test]
fn a_tail_the_build_made_stands_out_on_a_slightly_slower_machine() {
    // CI's night: 2 % of one route's requests 50 ms slower, a machine whose echo read 1.39 times usual.
    let run = [
        p99("GET /boards/{board_id}/cards", 2.1, 52.5, 3.4),
        p99("GET /boards", 1.6, 2.2, 2.4),
        p99("GET /cards/{card_id}", 1.8, 2.4, 2.6),
        p99("GET /search", 2.4, 2.9, 3.4),
    ];
    let slower = Some(MachineSlowdown(1.39));
    assert_eq!(
        standing_out(&run, slower).into_iter().map(|(e, _)| e).collect::<Vec<_>>(),
        ["GET /boards/{board_id}/cards"]
    );
    // Without the machine's echo a p99 never stands out: the others' spread of factors says little of a tail.
    assert!(standing_out(&run, None).is_empty());
}

#[test]
fn a_tail_a_saturated_machine_blew_up_does_not() {
    // One route's p99 ×7 and the others' ×2–3, on a machine whose echo read 2.5 times usual.
    let run = [
        p99("GET /a", 2.0, 14.0, 2.6),
        p99("GET /b", 2.0, 4.0, 2.6),
        p99("GET /c", 3.0, 9.0, 3.9),
        p99("GET /d", 1.0, 2.5, 1.3),
    ];
    assert!(standing_out(&run, Some(MachineSlowdown(2.5))).is_empty());
    // And a tail whose added time is within what the machine added to the others' does not either.
    let waits = [
        p99("GET /a", 0.5, 6.5, 0.7),
        p99("GET /b", 2.0, 6.0, 2.6),
        p99("GET /c", 3.0, 9.0, 3.9),
        p99("GET /d", 1.0, 4.0, 1.3),
    ];
    assert!(standing_out(&waits, Some(MachineSlowdown(1.2))).is_empty());
}

#[test]
fn a_whole_machine_one_and_a_half_times_slower_stands_out_nowhere_by_its_echo() {
    // The VM's night whose echo took 1.5 times as long: every endpoint 1.3–1.6 times slower.
    let run: Vec<Finding> = [1.3, 1.45, 1.6, 1.35, 1.5]
        .iter()
        .enumerate()
        .map(|(i, factor)| p95(&format!("GET /r{i}"), 2.0, 2.0 * factor, 2.3))
        .collect();
    assert!(standing_out(&run, Some(MachineSlowdown(1.5))).is_empty());
}

/// The bench's +25 % night: a wait added to one 0.37 ms route's p50, on a machine whose echo read 1.25 times
/// usual and that moved the others, from 0.3 to 5 ms, by 1–9 % at the median.
fn a_fast_route_slowed_among_slower_ones(slowed: f64) -> Vec<Finding> {
    let others = [(0.3, 1.04), (0.45, 1.07), (0.8, 1.05), (1.1, 1.02), (1.6, 1.09), (2.4, 1.03), (3.1, 1.06)];
    let mut run: Vec<Finding> = others
        .iter()
        .chain([(4.2, 1.01), (5.0, 1.08), (0.6, 1.05)].iter())
        .enumerate()
        .map(|(i, &(base, by))| p50(&format!("GET /r{i}"), base, base * by, base * 1.12))
        .collect();
    run.push(p50("GET /slowed", 0.371, 0.371 * slowed, 0.42));
    run
}

/// A p50 finding, as [`p95`] makes one.
fn p50(endpoint: &str, base: f64, tonight: f64, limit: f64) -> Finding {
    Finding { metric: "p50".into(), ..p95(endpoint, base, tonight, limit) }
}

#[test]
fn a_fast_route_s_change_is_measured_against_the_others_noise_at_its_own_level() {
    let slower = Some(MachineSlowdown(1.25));
    let blamed: Vec<String> =
        standing_out(&a_fast_route_slowed_among_slower_ones(1.37), slower).into_iter().map(|(e, _)| e).collect();
    assert_eq!(blamed, ["GET /slowed"]);
    // +25 % clears its limit and the others' spread of factors, but not their added time's at its level.
    assert!(standing_out(&a_fast_route_slowed_among_slower_ones(1.25), slower).is_empty());
}
