//! Which latency regressions of a held-back night are still the build's: those that stand out from what the
//! rest of the run went through.
//!
//! A busier machine or a host that steals time slows every endpoint of the run, unevenly (a CPU-bound route
//! more than one that waits on I/O), so on such a night a regression of one endpoint's percentile is only
//! believed when it is beyond its own limit *after* taking out the largest slowdown any other endpoint saw
//! tonight in the same percentile. The worst of the others, not their median, is the yardstick: it asks the
//! held-back machine to have hit this endpoint harder than every other one, and by the whole of its limit,
//! before the build is blamed. An 80 ms sleep added to a sub-millisecond route passes; a spell that slowed
//! one route's p95 by 60 % and the others' by up to 40 % does not. Builds that slow every route alike are
//! not told apart from the machine this way: the night stays inconclusive for them, as it would without it.

use std::collections::BTreeSet;

use super::super::judge::finding;
use super::super::relative::MIN_CONTROLS;
use crate::store::{Finding, OVERALL_ENDPOINT};

/// The (endpoint, metric) of every regression in `findings` that stands out from the rest of the run.
#[must_use]
pub(super) fn standing_out(findings: &[Finding]) -> BTreeSet<(String, String)> {
    findings
        .iter()
        .filter(|f| f.outcome == finding::REGRESSION && stands_out(f, findings))
        .map(|f| (f.endpoint.clone(), f.metric.clone()))
        .collect()
}

/// The other endpoints' largest slowdown tonight in `f`'s metric, as a factor (1.2: 20 % slower), when
/// enough of them were judged to say (the ratio test's minimum of controls).
#[must_use]
pub(super) fn worst_other_factor(f: &Finding, findings: &[Finding]) -> Option<f64> {
    let others: Vec<f64> =
        findings.iter().filter(|o| o.metric == f.metric && o.endpoint != f.endpoint).filter_map(log_factor).collect();
    // No speed-up of the others is credited to the endpoint: its own limit is the least it must clear.
    (others.len() >= MIN_CONTROLS).then(|| others.into_iter().fold(0.0, f64::max).exp())
}

fn stands_out(f: &Finding, findings: &[Finding]) -> bool {
    let (Some(own), Some(base), Some(limit)) = (log_factor(f), f.baseline_value, f.limit) else { return false };
    let Some(worst) = worst_other_factor(f, findings) else { return false };
    limit > base && own - worst.ln() >= (limit / base).ln()
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
        assert_eq!(worst_other_factor(&run[0], &run), Some(1.0));
    }
}
