//! Which latency regressions of a held-back night are still the build's: those that stand out from what the
//! rest of the run went through. The others are marked excused.
//!
//! A busier machine or a host that steals time slows every endpoint of the run, unevenly (a CPU-bound route
//! more than one that waits on I/O), so on such a night a regression of one endpoint's percentile is only
//! believed when it is beyond its own limit *after* taking out the largest slowdown any other endpoint saw
//! tonight in the same percentile. The worst of the others, not their median, is the yardstick: it asks the
//! held-back machine to have hit this endpoint harder than every other one, and by the whole of its limit,
//! before the build is blamed (a route already blamed is no longer one of "the others"). An 80 ms sleep added to a sub-millisecond route passes; a spell that slowed
//! one route's p95 by 60 % and the others' by up to 40 % does not. Builds that slow every route alike are
//! not told apart from the machine this way: the night stays inconclusive for them, as it would without it.

use std::collections::BTreeSet;

use super::super::judge::finding;
use super::super::relative::MIN_CONTROLS;
use crate::store::{Finding, OVERALL_ENDPOINT};

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
            .filter(|f| f.outcome == finding::REGRESSION && !is_blamed(f, &blamed) && stands_out(f, findings, &blamed))
            .map(|f| (f.endpoint.clone(), f.metric.clone()))
            .collect();
        if more.is_empty() {
            return blamed;
        }
        blamed.extend(more);
    }
}

fn is_blamed(f: &Finding, blamed: &Blamed) -> bool {
    blamed.contains(&(f.endpoint.clone(), f.metric.clone()))
}

/// The largest slowdown tonight in `f`'s metric of the other endpoints not `blamed` on the build, as a
/// factor (1.2: 20 % slower, 1.0 when none was slower), when enough of them were judged to say (the ratio
/// test's minimum of controls).
#[must_use]
pub(super) fn worst_other_factor(f: &Finding, findings: &[Finding], blamed: &Blamed) -> Option<f64> {
    let others: Vec<f64> = findings
        .iter()
        .filter(|o| o.metric == f.metric && o.endpoint != f.endpoint && !is_blamed(o, blamed))
        .filter_map(log_factor)
        .collect();
    // No speed-up of the others is credited to the endpoint: its own limit is the least it must clear.
    (others.len() >= MIN_CONTROLS).then(|| others.into_iter().fold(0.0, f64::max).exp())
}

fn stands_out(f: &Finding, findings: &[Finding], blamed: &Blamed) -> bool {
    let (Some(own), Some(base), Some(limit)) = (log_factor(f), f.baseline_value, f.limit) else { return false };
    let Some(worst) = worst_other_factor(f, findings, blamed) else { return false };
    limit > base && own - worst.ln() >= (limit / base).ln()
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
            if f.outcome == finding::REGRESSION && !kept {
                let others = match worst_other_factor(&f, &snapshot, blamed) {
                    Some(w) if w > 1.0 => format!(
                        " (another endpoint moved {:+.1} %, and this one not beyond that by its limit)",
                        100.0 * (w - 1.0)
                    ),
                    Some(_) => " (no other endpoint was slower, and this one not past its limit)".to_owned(),
                    None => String::new(),
                };
                f.reason = format!("not blamed on the build: measured {on}{others}; judged alone it was {}", f.reason);
                finding::EXCUSED.clone_into(&mut f.outcome);
                excused += 1;
            }
            f
        })
        .collect();
    (findings, excused)
}

/// log(tonight / baseline) of a named endpoint's figure that was judged against its history.
fn log_factor(f: &Finding) -> Option<f64> {
    let judged = [finding::REGRESSION, finding::NO_CHANGE, finding::IMPROVEMENT].contains(&f.outcome.as_str());
    let base = f.baseline_value.filter(|b| b.is_finite() && *b > 0.0)?;
    let usable = judged && f.endpoint != OVERALL_ENDPOINT && f.candidate_value.is_finite() && f.candidate_value > 0.0;
    usable.then(|| (f.candidate_value / base).ln())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A p95 finding: `base` ms on the baseline nights, `tonight` ms, a regression from `limit` ms.
    fn p95(endpoint: &str, base: f64, tonight: f64, limit: f64) -> Finding {
        Finding {
            endpoint: endpoint.into(),
            metric: "p95".into(),
            outcome: (if tonight >= limit { finding::REGRESSION } else { finding::NO_CHANGE }).into(),
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
        a.outcome = finding::REGRESSION.into();
        assert!(standing_out(&[a, run[1].clone(), run[2].clone(), run[3].clone()]).is_empty());
        assert_eq!(worst_other_factor(&run[0], &run, &Blamed::new()), Some(1.0));
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
