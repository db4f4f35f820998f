//! The median as the judge reads it: together with the p75, the body of the distribution.
//!
//! A change to the body of an endpoint (a slower query, a bigger payload) moves its p50 and its p75 alike, and
//! the two are read from different requests: the sampling error of the pair's mix is smaller than the p50's
//! own, so the same change stands further out of the noise. The weights are the least-variance mix for a
//! common shift of both (generalised least squares with the order statistics' covariance, Cov(q_a, q_b) =
//! a(1 − b) / (n f(q_a) f(q_b)) for a < b) on a log-normal body: 0.598 on the p50, 0.402 on the p75; the mix's
//! sampling variance is then 85 % of the p50's. Its sampling variance is computed from the night's own
//! intervals of both, with their correlation √(a(1 − b) / (b(1 − a))) = √(1/3), which holds for any
//! distribution: a weight off the optimum for another shape only costs some of the gain, never calibration.
//!
//! Measured on `dev-runs.jsonl` (DESIGN.md 6.8, fifteenth step): recall 67.1 → 68.2 % at the same false
//! alarms. What is shown stays the p50: the finding's figures, its change and its limit are the p50's own
//! (`ValueEvidence::shown`); the test, its minimum effect and its reason read the mix.

use super::level::{Estimate, median};
use super::sample::{Percentile, Sample};
use crate::metrics::interval::quantile_levels;

/// The p50's weight in the mix; the p75 has the rest.
const MEDIAN_WEIGHT: f64 = 0.6;
/// The correlation of a sample's p50 and p75, whatever the distribution (see the module's header).
const P50_P75_CORRELATION: f64 = 0.577_350_269_189_625_8;

/// The quantile level the body stands for.
pub(super) const MEDIAN: f64 = 0.5;
const P75: f64 = 0.75;

/// How one endpoint's median is read across its nights. One figure throughout: the body sits above the median
/// by about 0.4 × ln(p75 / p50), so a series that read one night one way and the next the other would jump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MedianReading {
    /// As the body: every night that bounds the median bounds the p75 too.
    Body,
    /// As the median alone: some night of a few requests (4 to 11) bounds the median and not the p75, and the
    /// body would leave a median it can judge unjudged.
    Alone,
}

impl MedianReading {
    /// The reading for an endpoint measured on `nights` (its baseline nights and tonight).
    pub fn of<'a>(nights: impl IntoIterator<Item = &'a Sample>) -> Self {
        let bounds = |s: &Sample, p: f64| quantile_levels(s.timed(), p).bounded;
        let median_only = nights.into_iter().any(|s| bounds(s, MEDIAN) && !bounds(s, P75));
        if median_only { Self::Alone } else { Self::Body }
    }
}

/// The p50's own level and tonight's value, on the judging scale, beside the body that is tested: what a
/// finding shows.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shown {
    /// Where the p50 stands.
    pub level: f64,
    /// Tonight's p50.
    pub tonight: f64,
}

impl Shown {
    /// The p50 at which the body reaches `body_limit` with tonight's p75 as it is, never under the p50's level
    /// raised by the minimum effect: tonight's p50 lies past it exactly when the body lies past its own limit
    /// and the p50 moved by the minimum effect, which is when the level test calls it.
    pub fn limit(&self, body_tonight: f64, body_limit: f64, min_effect: f64) -> f64 {
        (self.tonight + (body_limit - body_tonight) / MEDIAN_WEIGHT).max(self.level + min_effect.ln_1p())
    }
}

/// The p50's figures beside the body's `estimate` over the bounded `history` nights (oldest first): its level is
/// the body's less the usual gap between the two (0.4 × ln(p75 / p50)) on the nights the body's level was read
/// from, so the shown baseline comes from the same nights as the reason's.
pub(super) fn shown_median(tonight: &Sample, history: &[&Sample], estimate: &Estimate) -> Shown {
    let from = history.len().saturating_sub(estimate.level_nights.max(1));
    let gaps: Vec<f64> = history[from..].iter().map(|s| s.body().value - s.percentile(MEDIAN).value).collect();
    let gap = if gaps.is_empty() { 0.0 } else { median(&gaps) };
    Shown { level: estimate.level - gap, tonight: tonight.percentile(MEDIAN).value }
}

impl Sample {
    /// Percentile `p` as the judge tests it: the median read with the p75 ([`Sample::body`]) where `reading`
    /// says so, any other as it is.
    #[must_use]
    pub(super) fn judged_percentile(&self, p: f64, reading: MedianReading) -> Percentile {
        if p == MEDIAN && reading == MedianReading::Body { self.body() } else { self.percentile(p) }
    }

    /// The mix of the p50 and the p75 (ln ms), with its interval and sampling spread; bounded only where both
    /// are.
    #[must_use]
    pub fn body(&self) -> Percentile {
        let (median, p75) = (self.percentile(MEDIAN), self.percentile(P75));
        let mix = |a: f64, b: f64| MEDIAN_WEIGHT * a + (1.0 - MEDIAN_WEIGHT) * b;
        let spread = |a: f64, b: f64| {
            let (wa, wb) = (MEDIAN_WEIGHT * a, (1.0 - MEDIAN_WEIGHT) * b);
            (wa * wa + wb * wb + 2.0 * P50_P75_CORRELATION * wa * wb).sqrt()
        };
        Percentile {
            value: mix(median.value, p75.value),
            lo: mix(median.lo, p75.lo),
            hi: median.hi.zip(p75.hi).map(|(a, b)| mix(a, b)),
            sampling_sd: spread(median.sampling_sd, p75.sampling_sd),
            sampling_sd_down: spread(median.sampling_sd_down, p75.sampling_sd_down),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EndpointResult;

    /// A stored ladder of `GET /a`: `requests` requests, its p50 and p75 as given, its tail above the p75.
    fn ladder(requests: i64, p50_ms: f64, p75_ms: f64) -> EndpointResult {
        let us = |ms: f64| (ms * 1000.0) as i64;
        EndpointResult {
            endpoint: "GET /a".into(),
            requests,
            p50_us: us(p50_ms),
            p75_us: us(p75_ms),
            p90_us: us(p75_ms * 1.3),
            p95_us: us(p75_ms * 1.5),
            p99_us: us(p75_ms * 2.0),
            p999_us: us(p75_ms * 3.0),
            max_us: us(p75_ms * 4.0),
            ..EndpointResult::default()
        }
    }

    fn night(requests: i64, p50_ms: f64, p75_ms: f64) -> Sample {
        Sample::from_result(&ladder(requests, p50_ms, p75_ms))
    }

    #[test]
    fn the_body_is_the_median_and_the_p75_mixed_and_less_noisy_than_the_median() {
        let sample = night(2_000, 10.0, 14.0);
        let (body, median) = (sample.body(), sample.percentile(MEDIAN));
        let expected = 0.6 * 10f64.ln() + 0.4 * 14f64.ln();
        assert!((body.value - expected).abs() < 1e-3, "{body:?}");
        assert!(body.sampling_sd < median.sampling_sd, "{body:?} {median:?}");
        assert!(body.hi.is_some());
        let as_is = sample.judged_percentile(0.95, MedianReading::Body).value - sample.percentile(0.95).value;
        assert!(as_is.abs() < 1e-12);
    }

    #[test]
    fn an_endpoint_with_a_night_of_a_few_requests_is_read_by_its_median_alone() {
        let (busy, thin) = (night(2_000, 10.0, 14.0), night(8, 10.0, 14.0));
        assert_eq!(MedianReading::of([&busy, &busy]), MedianReading::Body);
        assert_eq!(MedianReading::of([&busy, &thin]), MedianReading::Alone);
        assert!(thin.percentile(MEDIAN).hi.is_some() && thin.body().hi.is_none(), "8 requests bound a p50, not a p75");
        let alone = thin.judged_percentile(MEDIAN, MedianReading::Alone).value - thin.percentile(MEDIAN).value;
        assert!(alone.abs() < 1e-12);
    }

    /// Eight nights of `GET /a` at p50 10 ms and p75 14 ms (±2 %), then tonight's p50 and p75 as given: the
    /// run judged, and its p50 finding.
    fn judged_p50(p50_ms: f64, p75_ms: f64) -> crate::model::Finding {
        use crate::analysis::Gates;
        use crate::analysis::judge::{Comparison, judge};
        let wobble = [1.0, 1.02, 0.98, 1.01, 0.99, 1.02, 0.985, 1.005];
        let result = |p50: f64, p75: f64| ladder(2_000, p50, p75);
        let history: Vec<Vec<EndpointResult>> = wobble.iter().map(|w| vec![result(10.0 * w, 14.0 * w)]).collect();
        let judgement = judge(
            &[result(p50_ms, p75_ms)],
            &history,
            &Gates::default(),
            Comparison::Nightly,
            crate::model::LoadModel::Open,
        );
        judgement.findings.into_iter().find(|f| f.metric == "p50").expect("a p50 finding")
    }

    #[test]
    fn a_p50_finding_shows_the_p50_and_its_limit_agrees_with_its_outcome() {
        // The body decides; what is shown is the p50, and tonight's p50 lies past its limit exactly when the
        // finding is a regression, whichever way the p75 went.
        let mut outcomes = Vec::new();
        for (p50, p75) in [(11.2, 18.9), (12.5, 13.3), (13.0, 18.2), (10.2, 14.1), (11.5, 14.0)] {
            let f = judged_p50(p50, p75);
            assert!((f.candidate_value - p50).abs() < 0.01, "tonight's p50 is shown: {f:?}");
            let base = f.baseline_value.unwrap();
            assert!((base - 10.0).abs() < 0.3, "the p50's own level: {f:?}");
            let limit = f.limit.unwrap();
            let regressed = f.outcome == crate::model::FindingOutcome::Regression;
            assert_eq!(regressed, f.candidate_value > limit, "p50 {p50}, p75 {p75}: {f:?}");
            assert!(f.reason.contains("read with the p75"), "{}", f.reason);
            outcomes.push(regressed);
        }
        assert!(outcomes.contains(&true) && outcomes.contains(&false), "both sides of the limit: {outcomes:?}");
    }

    #[test]
    fn a_body_that_moved_while_the_p50_moved_under_the_minimum_effect_is_no_regression() {
        // p50 +8 %, p75 +30 %: the mix moved +16 %, far past its noise; the p50 shown did not move 10 %.
        let f = judged_p50(10.8, 18.2);
        assert_ne!(f.outcome, crate::model::FindingOutcome::Regression, "{f:?}");
        assert!(f.delta_pct.unwrap() < 10.0, "{f:?}");
    }

    #[test]
    fn the_correlation_is_the_order_statistics() {
        let (a, b) = (MEDIAN, P75);
        assert!((P50_P75_CORRELATION - (a * (1.0 - b) / (b * (1.0 - a))).sqrt()).abs() < 1e-12);
    }
}
