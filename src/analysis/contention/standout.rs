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
//! yardstick, and the rest are measured again. For a p50 or p95 the spread of the added times is read as
//! shares of each other's own level and scaled to the route judged, since a figure's night noise grows with
//! its level: a bench night excused a 0.37 ms route's +37 % (11 spreads out as a factor) because routes ten
//! times slower set an added-time spread of ±0.05 ms that the route's +0.14 ms was only twice. Builds that
//! slow every route alike are not told apart from
//! the machine this way: the night stays inconclusive for them, as it would without it. p50 and p95 stand
//! out by these rules; a p99 only by the machine's own bound below (see [`Tail`]).
//!
//! With few others, their spread says little and the cut-off is wide (53 spreads with three). So a change
//! beyond the others' median by its limit also stands out when it is beyond what the machine's own slowdown
//! could do to it: its limit times the square of how much slower the machine's loopback echo was tonight
//! ([`MachineSlowdown`]). With fewer others than a spread can be read from (an API of two or three routes),
//! that bound is the only rule, past the others' median where there are any: a route ×9 beside two that did
//! not move, on a machine 1.4 times slower, had been excused because two others "say nothing". A request crosses the machine's scheduler at least twice (the generator's send
//! and wake-up, the target's read and answer) and its own work runs slower by the same factor; on this
//! project's VM, a night whose echo took 1.5 times as long moved every endpoint by 1.3–1.6 times, inside the
//! square (2.25). A new user's trial had a route go ×15 (1.5 ms to 22.7 ms) against three others that did not
//! move, on a machine whose echo read 1.44 times usual: excused by the spreads alone, the build's by this.
//!
//! A p99 rests on the slowest hundredth of the requests, the part a held-back machine distorts most and most
//! unevenly (a saturated machine multiplied one route's p99 by 7 and the others' by 2–3, while their p95s
//! moved alike), so the others' spread of factors says little about it. But a tail the build made (2 % of a
//! route's requests 50 ms slower) must not hide behind a machine that was only a little slower: CI once
//! excused a route's p99 going from 2.1 ms to 52.5 ms (×25) on a machine whose echo read 1.39 times usual.
//! A p99 stands out when it is beyond the others' median by its limit, past what the machine's own slowdown
//! can do, *and* past the time the machine added to the others' p99s by the spreads: a held-back machine
//! adds waits (a scheduler's slice) to a tail, time rather than a factor, so the time is what it must clear.

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
            .filter(|f| f.outcome == FindingOutcome::Regression && Tail::of(f).is_some())
            .filter(|f| !is_blamed(f, &blamed) && stands_out(f, findings, &blamed, machine))
            .map(|f| (f.endpoint.clone(), f.metric.clone()))
            .collect();
        if more.is_empty() {
            return blamed;
        }
        blamed.extend(more);
    }
}

/// Which rule a percentile stands out by (see the module's text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tail {
    /// p50 and p95: beyond the others by the spreads or by the machine's bound.
    Central,
    /// p99: by the machine's bound, and by the spreads of time added.
    Slowest,
}

impl Tail {
    fn of(f: &Finding) -> Option<Self> {
        match f.metric.parse() {
            Ok(Metric::P50 | Metric::P95) => Some(Self::Central),
            Ok(Metric::P99) => Some(Self::Slowest),
            _ => None,
        }
    }
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
    /// The spread of the added times around their median, in the metric's unit, at `f`'s level: for a p50
    /// or p95, each other's difference from the median added time is read as a share of its own level and
    /// the spread of those shares is scaled to `f`'s baseline, because a figure's night noise grows with its
    /// level; a p99's is the spread of the added times themselves (see the module's text).
    pub added_spread: f64,
    /// How many spreads past the median a change must be to stand out, given how many others there were;
    /// `None` when they are too few to read a spread from (the machine's bound alone decides).
    pub spreads: Option<f64>,
    /// How many others the median was read from.
    pub others: usize,
}

/// The others' median change, and its spread when enough of them were judged to say (the ratio test's
/// minimum of controls). Both as a factor and as time added, because a held-back machine slows by both.
/// A speed-up of most others is not credited to the endpoint: the median counts as no change at most, and
/// the endpoint's own limit is the least it must clear. With no others, no change.
#[must_use]
pub(super) fn machine_shift(f: &Finding, findings: &[Finding], blamed: &Blamed) -> MachineShift {
    let others: Vec<(f64, f64)> = findings
        .iter()
        .filter(|o| o.metric == f.metric && o.endpoint != f.endpoint && !is_blamed(o, blamed))
        .filter_map(change)
        .collect();
    if others.is_empty() {
        let none = 0.0;
        return MachineShift {
            factor: 1.0,
            factor_spread: none,
            added: none,
            added_spread: none,
            spreads: None,
            others: 0,
        };
    }
    let logs: Vec<f64> = others.iter().map(|(base, tonight)| (tonight / base).ln()).collect();
    let added: Vec<f64> = others.iter().map(|(base, tonight)| tonight - base).collect();
    let (log_median, log_spread) = median_and_spread(&logs);
    let (added_median, absolute_spread) = median_and_spread(&added);
    let added_spread = match (Tail::of(f), change(f)) {
        (Some(Tail::Central), Some((base, _))) => {
            // Around the median added time itself, the point `f` is measured from.
            let shares: Vec<f64> = others.iter().map(|(b, t)| ((t - b - added_median) / b).abs()).collect();
            MAD_TO_SIGMA * median(shares) * base
        }
        _ => absolute_spread,
    };
    MachineShift {
        factor: log_median.max(0.0).exp(),
        factor_spread: log_spread,
        added: added_median.max(0.0),
        added_spread,
        spreads: (others.len() >= MIN_CONTROLS).then(|| spreads_to_stand_out(others.len())),
        others: others.len(),
    }
}

fn stands_out(f: &Finding, findings: &[Finding], blamed: &Blamed, machine: Option<MachineSlowdown>) -> bool {
    let (Some((base, tonight)), Some(limit)) = (change(f), f.limit) else { return false };
    let shift = machine_shift(f, findings, blamed);
    let beyond_factor = (tonight / base).ln() - shift.factor.ln();
    let beyond_added = tonight - base - shift.added;
    let beyond_median = limit > base && beyond_factor >= (limit / base).ln() && beyond_added >= limit - base;
    let added_beyond_spreads = shift.spreads.is_some_and(|k| beyond_added >= k * shift.added_spread);
    let beyond_spreads =
        shift.spreads.is_some_and(|k| beyond_factor >= k * shift.factor_spread) && added_beyond_spreads;
    // With no other endpoint to read the machine from, its echo is all there is, and only an echo that read the
    // machine slower says how far it could have gone: a busier machine whose echo did not move bounds nothing.
    let beyond_machine =
        machine.is_some_and(|m| tonight >= m.most() * limit && (shift.others > 0 || m.0 >= super::echo::SLOWER_FACTOR));
    match Tail::of(f) {
        Some(Tail::Central) => beyond_median && (beyond_spreads || beyond_machine),
        // Too few others to read the time the machine added to their tails: its own bound is all there is.
        Some(Tail::Slowest) => beyond_median && beyond_machine && (added_beyond_spreads || shift.spreads.is_none()),
        None => false,
    }
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
                let others = compared_with(&f, &machine_shift(&f, &snapshot, blamed), machine);
                f.reason = format!("not blamed on the build: measured {on}{others}; judged alone it was {}", f.reason);
                FindingOutcome::Excused.clone_into(&mut f.outcome);
                excused += 1;
            }
            f
        })
        .collect();
    (findings, excused)
}

/// What an excused finding was compared with, in words: the others' median change and spread, and the
/// machine's bound.
fn compared_with(f: &Finding, s: &MachineShift, machine: Option<MachineSlowdown>) -> String {
    let bound =
        |m: MachineSlowdown| format!("{:.2} times its limit, what a machine {:.2} times slower can do", m.most(), m.0);
    let moved = format!(
        "moved {} and +{} at the median",
        crate::model::Change::from_pct(100.0 * (s.factor - 1.0)),
        crate::model::format_ms(s.added)
    );
    let Some(spreads) = s.spreads else {
        let others = match s.others {
            0 => "no other endpoint to compare it with".to_owned(),
            1 => format!("the other endpoint {moved}, too few to read a spread from"),
            n => format!("the other {n} endpoints {moved}, too few to read a spread from"),
        };
        let measured = machine.filter(|m| s.others > 0 || m.0 >= super::echo::SLOWER_FACTOR);
        let needed = measured.map_or_else(
            || "the machine's own slowdown was not measured by its echo".to_owned(),
            |m| {
                format!(
                    "this one needed to be past {}{}",
                    bound(m),
                    if s.others > 0 { " and beyond their median by its limit" } else { "" }
                )
            },
        );
        return format!(" ({others}; {needed})");
    };
    // What standing out takes, as `stands_out` decides it: a trial read "not beyond that by both its limit and
    // 53.5 spreads, nor past 1.82 times its limit" as a contradiction.
    let needed = match (Tail::of(f), machine) {
        (Some(Tail::Slowest), Some(m)) => {
            format!("by its limit and by {spreads:.1} spreads of the time added, and past {}", bound(m))
        }
        (Some(Tail::Slowest), None) => format!(
            "by its limit and by {spreads:.1} spreads of the time added, and past what the machine's slowdown can \
             do, which its echo did not measure"
        ),
        (_, Some(m)) => format!("by its limit and by {spreads:.1} spreads (or by its limit and past {})", bound(m)),
        (_, None) => format!("by its limit and by {spreads:.1} spreads"),
    };
    format!(
        " (the other endpoints {moved}, spread ±{:.1} % and ±{}{}; to stand out, this one had to be beyond that \
         {needed}, and was not)",
        100.0 * s.factor_spread.exp_m1(),
        format_spread_ms(s.added_spread),
        if Tail::of(f) == Some(Tail::Central) { " at this one's level" } else { "" },
    )
}

/// A spread of added time: in µs under a tenth of a millisecond, where ms to two places would read ±0.00.
fn format_spread_ms(ms: f64) -> String {
    if ms < 0.1 { format!("{:.0} µs", 1000.0 * ms) } else { crate::model::format_ms(ms) }
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
#[path = "standout_tests.rs"]
mod tests;
