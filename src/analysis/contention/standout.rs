//! Which latency regressions of a held-back night are still the build's: those that stand out from what the
//! rest of the run went through. The others are marked excused.
//!
//! A busier machine or a host that steals time slows every endpoint of the run, unevenly: a wait added to
//! every request is a large factor on the fastest route and a large time on the slowest, and a CPU-bound
//! route suffers more than one that waits on I/O. So on such a night a regression of one endpoint's
//! percentile is only believed when it is beyond its own limit *after* taking out the largest slowdown any
//! other endpoint saw tonight in the same percentile, both as a factor and as time added. The worst of the
//! others, not their median, is the yardstick: it asks the held-back machine to have hit this endpoint
//! harder than every other one, in both senses and by the whole of its limit, before the build is blamed (a
//! route already blamed is no longer one of "the others"). The demo's 80 ms added to a sub-millisecond route
//! passes; a saturated machine that added 60 µs to a 0.1 ms route (+57 %) while the others lost up to 0.3 ms
//! does not. Builds that slow every route alike are not told apart from the machine this way: the night
//! stays inconclusive for them, as it would without it. Only p50 and p95 can stand out (see [`central`]).

use std::collections::BTreeSet;

use super::super::relative::MIN_CONTROLS;
use crate::model::{Finding, FindingOutcome, Metric, OVERALL_ENDPOINT};

/// The (endpoint, metric) pairs blamed on the build.
pub(super) type Blamed = BTreeSet<(String, String)>;

/// The (endpoint, metric) of every regression in `findings` that stands out from the rest of the run. A
/// route found to stand out is the build's, not evidence of what the machine did, so it leaves the others'
/// yardstick and the rest are measured again, until no more stand out: a second route the build slowed
/// is not excused by the first one's slowdown.
#[must_use]
pub(super) fn standing_out(findings: &[Finding]) -> Blamed {
    let mut blamed = Blamed::new();
    loop {
        let more: Vec<(String, String)> = findings
            .iter()
            .filter(|f| f.outcome == FindingOutcome::Regression && central(f))
            .filter(|f| !is_blamed(f, &blamed) && stands_out(f, findings, &blamed))
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

/// The largest slowdown tonight of the other endpoints not `blamed` on the build, in `f`'s metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Worst {
    /// As a factor (1.2: 20 % slower; 1.0 when none was slower).
    pub factor: f64,
    /// As time added, in the metric's unit (0 when none was slower).
    pub added: f64,
}

/// The other endpoints' largest slowdowns, as a factor and as time added (each its own worst), when enough of
/// them were judged to say (the ratio test's minimum of controls). Both, because a held-back machine slows
/// by both: a host that takes the CPU in slices adds about the same wait to every request, which is a large
/// factor on the fastest route and a large time on the slowest one. No speed-up of the others is credited to
/// the endpoint: its own limit is the least it must clear.
#[must_use]
pub(super) fn worst_others(f: &Finding, findings: &[Finding], blamed: &Blamed) -> Option<Worst> {
    let others: Vec<(f64, f64)> = findings
        .iter()
        .filter(|o| o.metric == f.metric && o.endpoint != f.endpoint && !is_blamed(o, blamed))
        .filter_map(change)
        .collect();
    (others.len() >= MIN_CONTROLS).then(|| Worst {
        factor: others.iter().map(|(base, tonight)| tonight / base).fold(1.0, f64::max),
        added: others.iter().map(|(base, tonight)| tonight - base).fold(0.0, f64::max),
    })
}

fn stands_out(f: &Finding, findings: &[Finding], blamed: &Blamed) -> bool {
    let (Some((base, tonight)), Some(limit)) = (change(f), f.limit) else { return false };
    let Some(worst) = worst_others(f, findings, blamed) else { return false };
    limit > base && tonight / base / worst.factor >= limit / base && tonight - base - worst.added >= limit - base
}

/// Marks every latency regression not in `blamed` as excused, its reason saying why, and counts them. The
/// `(all)` row holds every endpoint, so it stays a regression with a blamed endpoint in the same percentile.
pub(super) fn excuse_the_rest(findings: Vec<Finding>, blamed: &Blamed, on: &str) -> (Vec<Finding>, usize) {
    let snapshot = findings.clone();
    let mut excused = 0;
    let findings = findings
        .into_iter()
        .map(|mut f| {
            let kept =
                blamed.iter().any(|(e, m)| *m == f.metric && (*e == f.endpoint || f.endpoint == OVERALL_ENDPOINT));
            if f.outcome == FindingOutcome::Regression && !kept {
                let others = match worst_others(&f, &snapshot, blamed) {
                    Some(w) if w.factor > 1.0 => format!(
                        " (other endpoints moved up to {:+.1} % and +{}, and this one not beyond both by its limit)",
                        100.0 * (w.factor - 1.0),
                        crate::model::format_ms(w.added)
                    ),
                    Some(_) => " (no other endpoint was slower, and this one not past its limit)".to_owned(),
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
        let out = standing_out(&run);
        assert_eq!(out.into_iter().collect::<Vec<_>>(), [("GET /cards".to_owned(), "p95".to_owned())]);
    }

    #[test]
    fn a_slowdown_no_larger_than_the_others_by_its_limit_does_not() {
        // 60 % slower, but another endpoint was 40 % slower: 1.6 / 1.4 is below its 20 % limit.
        let run = [
            p95("GET /a", 1.0, 1.6, 1.2),
            p95("GET /b", 1.0, 1.4, 1.2),
            p95("GET /c", 1.0, 1.1, 1.2),
            p95("GET /d", 1.0, 1.0, 1.2),
        ];
        assert!(standing_out(&run).is_empty());
    }

    #[test]
    fn too_few_other_endpoints_say_nothing() {
        let run = [p95("GET /a", 1.0, 9.0, 1.2), p95("GET /b", 1.0, 1.0, 1.2), p95("GET /c", 1.0, 1.0, 1.2)];
        assert!(standing_out(&run).is_empty(), "two others are fewer than the ratio test's controls");
    }

    #[test]
    fn others_that_sped_up_lend_no_credit() {
        // Everything else 30 % faster: the route must still clear its own limit, and 15 % does not.
        let run = [
            p95("GET /a", 1.0, 1.15, 1.2),
            p95("GET /b", 1.0, 0.7, 1.2),
            p95("GET /c", 1.0, 0.7, 1.2),
            p95("GET /d", 1.0, 0.7, 1.2),
        ];
        let mut a = run[0].clone();
        a.outcome = FindingOutcome::Regression;
        assert!(standing_out(&[a, run[1].clone(), run[2].clone(), run[3].clone()]).is_empty());
        assert_eq!(worst_others(&run[0], &run, &Blamed::new()), Some(Worst { factor: 1.0, added: 0.0 }));
    }

    #[test]
    fn a_second_slowed_route_is_not_excused_by_the_first() {
        // The build adds 80 ms to one route and 60 % to another; the host slowed the rest by up to 25 %.
        let run = [
            p95("GET /a", 0.5, 80.0, 0.6),
            p95("GET /b", 2.0, 3.2, 2.3),
            p95("GET /c", 1.0, 1.25, 1.2),
            p95("GET /d", 1.0, 1.1, 1.2),
            p95("GET /e", 1.0, 1.0, 1.2),
        ];
        let blamed: Vec<String> = standing_out(&run).into_iter().map(|(e, _)| e).collect();
        assert_eq!(blamed, ["GET /a", "GET /b"], "1.6 / 1.25 is past GET /b's 15 % limit");
    }
}
