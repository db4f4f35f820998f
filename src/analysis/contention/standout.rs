//! Which latency regressions of a held-back night are still the build's: those that stand out from what the
//! machine did to the rest of the run. The others are marked excused.
//!
//! A busier machine or a host that steals time slows every endpoint of the run, unevenly: a wait added to
//! every request is a large factor on the fastest route and a large time on the slowest, and a CPU-bound
//! route suffers more than one that waits on I/O. What the machine did tonight is read from the endpoints
//! that did not stand out: the median change of the same percentile across them, as a factor and as time
//! added, and the spread of those changes around it (1.4826 × the median absolute deviation, a standard
//! deviation where the changes are normal and robust to the few that are not). A regression is the build's
//! when it is beyond that median by its own limit *and* by [`OUTLIER_SPREADS`] spreads, in both senses: a
//! machine that added the same wait everywhere gives the fastest route an outlying factor but an ordinary
//! added time, and the slowest route the reverse.
//!
//! Never the largest change among the others: a regression rarely touches one endpoint alone (a lost index
//! slows every query that used it), and two routes the build slowed alike would each be excused by the
//! other. The median needs half the others to move before it moves. A route found to stand out leaves the
//! yardstick, and the rest are measured again. Builds that slow every route alike are not told apart from
//! the machine this way: the night stays inconclusive for them, as it would without it. Only p50 and p95
//! can stand out (see [`central`]).
//!
//! With few others, their spread says little and the cut-off is wide (53 spreads with three). So a change
//! beyond the others' median by its limit also stands out when it is beyond what the machine's own slowdown
//! could do to it: its limit times the square of how much slower the machine's loopback echo was tonight
//! ([`MachineSlowdown`]). A request crosses the machine's scheduler at least twice (the generator's send
//! and wake-up, the target's read and answer) and its own work runs slower by the same factor; on this
//! project's VM, a night whose echo took 1.5 times as long moved every endpoint by 1.3–1.6 times, inside the
//! square (2.25). A new user's trial had a route go ×15 (1.5 ms to 22.7 ms) against three others that did not
//! move, on a machine whose echo read 1.44 times usual: excused by the spreads alone, the build's by this.

use std::collections::BTreeSet;

use super::super::relative::MIN_CONTROLS;
use super::super::shift::t_quantile;
use crate::model::{Finding, FindingOutcome, Metric, OVERALL_ENDPOINT};

/// How far past the others' median a change must be to stand out, in spreads: the outlier cut-off of
/// Iglewicz and Hoaglin's modified z-score (3.5 on 0.6745 × the deviation over the MAD, which is 3.5 of the
/// spreads used here), read as the one-sided tail of a normal it leaves (2.3 in 10,000) and widened for how
/// few the others are (see [`spreads_to_stand_out`]). Under it, a change is what ordinary ones hold now and
/// then.
const OUTLIER_SPREADS: f64 = 3.5;
/// The MAD of normal data is 0.6745 of its standard deviation; 1.4826 turns it into one.
const MAD_TO_SIGMA: f64 = 1.4826;

/// The (endpoint, metric) pairs blamed on the build.
pub(super) type Blamed = BTreeSet<(String, String)>;

/// How many times as long the machine's own loopback echo took tonight as on the baseline nights (at least 1),
/// when both were measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MachineSlowdown(pub f64);

impl MachineSlowdown {
    /// The most the machine's slowdown can multiply a request's time by: its square (see the module's text).
    fn most(self) -> f64 {
        self.0.max(1.0).powi(2)
    }
}

/// The (endpoint, metric) of every regression in `findings` that stands out from the rest of the run. A
/// route found to stand out is the build's, not evidence of what the machine did, so it leaves the others'
/// yardstick and the rest are measured again, until no more stand out.
#[must_use]
pub(super) fn standing_out(findings: &[Finding], machine: Option<MachineSlowdown>) -> Blamed {
    let mut blamed = Blamed::new();
    loop {
        let more: Vec<(String, String)> = findings
            .iter()
            .filter(|f| f.outcome == FindingOutcome::Regression && central(f))
            .filter(|f| !is_blamed(f, &blamed) && stands_out(f, findings, &blamed, machine))
            .map(|f| (f.endpoint.clone(), f.metric.clone()))
            .collect();
        if more.is_empty() {
            return blamed;
        }
        blamed.extend(more);
    }
}

/// p50 and p95 can stand out; p99 rests on the slowest hundredth of the requests, the part a held-back
/// machine distorts most and most unevenly (a saturated machine multiplied one route's p99 by 7 and the
/// others' by 2–3, while their p95s moved alike), and on too few requests to compare on most routes.
fn central(f: &Finding) -> bool {
    matches!(f.metric.parse(), Ok(Metric::P50 | Metric::P95))
}

fn is_blamed(f: &Finding, blamed: &Blamed) -> bool {
    blamed.contains(&(f.endpoint.clone(), f.metric.clone()))
}

/// What the machine did tonight to the other endpoints not `blamed` on the build, in `f`'s metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct MachineShift {
    /// The median change as a factor (1.2: 20 % slower).
    pub factor: f64,
    /// The spread of the changes' logarithms around the median's (0.05: about ±5 %).
    pub factor_spread: f64,
    /// The median change as time added, in the metric's unit (negative when most got faster).
    pub added: f64,
    /// The spread of the added times around their median, in the metric's unit.
    pub added_spread: f64,
    /// How many spreads past the median a change must be to stand out, given how many others there were.
    pub spreads: f64,
}

/// The others' median change and its spread, when enough of them were judged to say (the ratio test's
/// minimum of controls). Both as a factor and as time added, because a held-back machine slows by both.
/// A speed-up of most others is not credited to the endpoint: the median counts as no change at most, and
/// the endpoint's own limit is the least it must clear.
#[must_use]
pub(super) fn machine_shift(f: &Finding, findings: &[Finding], blamed: &Blamed) -> Option<MachineShift> {
    let others: Vec<(f64, f64)> = findings
        .iter()
        .filter(|o| o.metric == f.metric && o.endpoint != f.endpoint && !is_blamed(o, blamed))
        .filter_map(change)
        .collect();
    if others.len() < MIN_CONTROLS {
        return None;
    }
    let logs: Vec<f64> = others.iter().map(|(base, tonight)| (tonight / base).ln()).collect();
    let added: Vec<f64> = others.iter().map(|(base, tonight)| tonight - base).collect();
    let (log_median, log_spread) = median_and_spread(&logs);
    let (added_median, added_spread) = median_and_spread(&added);
    Some(MachineShift {
        factor: log_median.max(0.0).exp(),
        factor_spread: log_spread,
        added: added_median.max(0.0),
        added_spread,
        spreads: spreads_to_stand_out(others.len()),
    })
}

fn stands_out(f: &Finding, findings: &[Finding], blamed: &Blamed, machine: Option<MachineSlowdown>) -> bool {
    let (Some((base, tonight)), Some(limit)) = (change(f), f.limit) else { return false };
    let Some(shift) = machine_shift(f, findings, blamed) else { return false };
    let beyond_factor = (tonight / base).ln() - shift.factor.ln();
    let beyond_added = tonight - base - shift.added;
    let beyond_median = limit > base && beyond_factor >= (limit / base).ln() && beyond_added >= limit - base;
    let beyond_spreads =
        beyond_factor >= shift.spreads * shift.factor_spread && beyond_added >= shift.spreads * shift.added_spread;
    let beyond_machine = machine.is_some_and(|m| tonight >= m.most() * limit);
    beyond_median && (beyond_spreads || beyond_machine)
}

/// How many spreads a change must be past the median of `others` changes to stand out: [`OUTLIER_SPREADS`]
/// as a one-sided tail, read on Student's t with `others − 1` degrees of freedom and widened by
/// √(1 + 1/others), as a prediction interval for one more value is when the spread is estimated from a few:
/// 5.7 spreads with ten others, 13 with four, 53 with three (two others' spread says almost nothing).
fn spreads_to_stand_out(others: usize) -> f64 {
    let n = others as f64;
    let tail = statrs::function::erf::erfc(OUTLIER_SPREADS / std::f64::consts::SQRT_2) / 2.0;
    t_quantile(1.0 - tail, n - 1.0) * (1.0 + 1.0 / n).sqrt()
}

/// The median of `values` (not empty) and 1.4826 × their median absolute deviation from it.
fn median_and_spread(values: &[f64]) -> (f64, f64) {
    let middle = median(values.to_vec());
    let deviations: Vec<f64> = values.iter().map(|v| (v - middle).abs()).collect();
    (middle, MAD_TO_SIGMA * median(deviations))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let half = values.len() / 2;
    if values.len() % 2 == 1 { values[half] } else { f64::midpoint(values[half - 1], values[half]) }
}

/// Marks every latency regression not in `blamed` as excused, its reason saying why, and counts them. The
/// `(all)` row holds every endpoint, so it stays a regression with a blamed endpoint in the same percentile.
pub(super) fn excuse_the_rest(
    findings: Vec<Finding>,
    blamed: &Blamed,
    on: &str,
    machine: Option<MachineSlowdown>,
) -> (Vec<Finding>, usize) {
    let snapshot = findings.clone();
    let mut excused = 0;
    let findings = findings
        .into_iter()
        .map(|mut f| {
            let kept =
                blamed.iter().any(|(e, m)| *m == f.metric && (*e == f.endpoint || f.endpoint == OVERALL_ENDPOINT));
            if f.outcome == FindingOutcome::Regression && !kept {
                let machine = machine.map_or_else(String::new, |m| {
                    format!(", nor past {:.2} times its limit, what a machine {:.2} times slower can do", m.most(), m.0)
                });
                let others = match machine_shift(&f, &snapshot, blamed) {
                    Some(s) => format!(
                        " (the other endpoints moved {} and +{} at the median, spread ±{:.1} % and ±{}, and \
                         this one not beyond that by both its limit and {:.1} spreads{machine})",
                        crate::model::Change::from_pct(100.0 * (s.factor - 1.0)),
                        crate::model::format_ms(s.added),
                        100.0 * s.factor_spread.exp_m1(),
                        crate::model::format_ms(s.added_spread),
                        s.spreads
                    ),
                    None => String::new(),
                };
                f.reason = format!("not blamed on the build: measured {on}{others}; judged alone it was {}", f.reason);
                FindingOutcome::Excused.clone_into(&mut f.outcome);
                excused += 1;
            }
            f
        })
        .collect();
    (findings, excused)
}

/// (baseline, tonight) of a named endpoint's figure that was judged against its history.
fn change(f: &Finding) -> Option<(f64, f64)> {
    let judged =
        [FindingOutcome::Regression, FindingOutcome::NoChange, FindingOutcome::Improvement].contains(&f.outcome);
    let base = f.baseline_value.filter(|b| b.is_finite() && *b > 0.0)?;
    let usable = judged && f.endpoint != OVERALL_ENDPOINT && f.candidate_value.is_finite() && f.candidate_value > 0.0;
    usable.then_some((base, f.candidate_value))
}

#[cfg(test)]
mod tests {
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
                let by =
                    if slowed.contains(&name.as_str()) { machine[i as usize] * factor } else { machine[i as usize] };
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
    fn too_few_other_endpoints_say_nothing() {
        let run = [p95("GET /a", 1.0, 9.0, 1.2), p95("GET /b", 1.0, 1.0, 1.2), p95("GET /c", 1.0, 1.0, 1.2)];
        assert!(standing_out(&run, None).is_empty(), "two others are fewer than the ratio test's controls");
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
        let shift = machine_shift(&run[0], &run, &Blamed::new()).unwrap();
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
        assert!(reason.contains("nor past 2.07 times its limit, what a machine 1.44 times slower can do"), "{reason}");
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
}
