//! One night of one endpoint as the judge sees it: how many requests, how many failed, and the shape of
//! their response times. The shape is read from the stored HdrHistogram, which answers any quantile and any
//! count exactly; without one (`degrade detect --runs` reads figures, not histograms) it is read from the
//! stored percentile ladder p50, p75, p90, p95, p99, p99.9 and max.
//!
//! A ladder does not say where the requests lie between two of its steps. Inside the body of a distribution
//! the steps are close and interpolating between them (on the log scale) is accurate; where two steps are far
//! apart (a gap: a slow mode, a heavy tail) any point of the gap is possible, so the bounds step to the
//! ladder's values instead of trusting an interpolation. All latencies here are on the log scale of
//! milliseconds, the judge's scale.

use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;

use crate::metrics::interval::{CONFIDENCE_Z, quantile_levels};
use crate::model::EndpointResult;

/// Two ladder steps further apart than this ratio leave a gap the ladder cannot see into.
const LADDER_GAP_RATIO: f64 = 1.5;

/// Which end of what is possible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The least the figure can be.
    Low,
    /// The most it can be.
    High,
}

/// Where the response times of one night lie.
#[derive(Debug, Clone)]
enum Shape {
    /// The stored histogram, µs.
    Histogram(Histogram<u64>),
    /// (quantile level, ln ms) points, ascending; the first is a mirror of p75 below the median.
    Ladder(Vec<(f64, f64)>),
}

/// One endpoint's figures on one night.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone)]
pub struct Sample {
    pub requests: u64,
    /// Of which failed.
    pub errors: u64,
    /// Requests per second.
    pub rate: f64,
    shape: Shape,
    /// Response times in the shape (a dropped arrival has none).
    timed: u64,
}

/// A percentile of one night, with how well the night's requests pin it down.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentile {
    /// ln ms.
    pub value: f64,
    /// The 95 % interval's ends, ln ms; `hi` is `None` when the sample cannot bound it.
    pub lo: f64,
    /// See `lo`.
    pub hi: Option<f64>,
    /// The sampling standard deviation, ln ms, from the interval's width.
    pub sampling_sd: f64,
    /// The same from the interval's lower half only: how far tonight's value may lie above the truth.
    pub sampling_sd_down: f64,
}

impl Sample {
    /// The sample of a stored endpoint result: its histogram, or its percentile ladder without one.
    #[must_use]
    pub fn from_result(result: &EndpointResult) -> Self {
        let requests = result.requests.max(0) as u64;
        let errors = result.errors.clamp(0, result.requests.max(0)) as u64;
        let histogram =
            Deserializer::new().deserialize::<u64, _>(&mut result.histogram.as_slice()).ok().filter(|h| !h.is_empty());
        let (shape, timed) = match histogram {
            Some(h) => {
                let timed = h.len();
                (Shape::Histogram(h), timed)
            }
            None => (Shape::Ladder(ladder(result)), requests),
        };
        Self { requests, errors, rate: result.rate, shape, timed }
    }

    /// Requests with a response time (every request but arrivals that were never sent).
    #[must_use]
    pub fn timed(&self) -> u64 {
        self.timed
    }

    /// The stored histogram (µs), when the night has one: a ladder cannot count requests past a threshold.
    #[must_use]
    pub fn histogram(&self) -> Option<&Histogram<u64>> {
        match &self.shape {
            Shape::Histogram(h) => Some(h),
            Shape::Ladder(_) => None,
        }
    }

    /// The `p` quantile, ln ms.
    #[must_use]
    pub fn quantile(&self, p: f64) -> f64 {
        match &self.shape {
            Shape::Histogram(h) => ln_ms(h.value_at_quantile(p.clamp(0.0, 1.0)) as f64),
            Shape::Ladder(points) => interpolate(points, p),
        }
    }

    /// The `p` quantile at its lowest or highest possible: exact for a histogram; across a ladder gap, the
    /// gap's end.
    #[must_use]
    pub fn quantile_bound(&self, p: f64, side: Side) -> f64 {
        let Shape::Ladder(points) = &self.shape else { return self.quantile(p) };
        match gap_around(points, p) {
            Some(((_, y0), (_, y1))) => {
                if side == Side::Low {
                    y0
                } else {
                    y1
                }
            }
            None => interpolate(points, p),
        }
    }

    /// The share of requests that took `value` (ln ms) or longer, at its lowest or highest possible: exact for a
    /// histogram; on a ladder, interpolated inside the body as its quantiles are (both ends alike), and across a
    /// gap or at a step, bounded by the steps.
    #[must_use]
    pub fn share_at_or_above(&self, value: f64, side: Side) -> f64 {
        match &self.shape {
            Shape::Histogram(h) => {
                let us = (value.exp() * 1000.0).round().max(0.0) as u64;
                h.count_between(us, h.max().max(us)) as f64 / h.len() as f64
            }
            Shape::Ladder(points) => {
                if let Some(level) = level_inside_body(points, value) {
                    return 1.0 - level;
                }
                let steps = &points[1..];
                match side {
                    // Everything above the highest step below `value` may be at or above it.
                    Side::High => 1.0 - steps.iter().filter(|(_, y)| *y < value).map(|(p, _)| *p).fold(0.0, f64::max),
                    // At least what lies at or above the lowest step at or above `value`.
                    Side::Low => 1.0 - steps.iter().filter(|(_, y)| *y >= value).map(|(p, _)| *p).fold(1.0, f64::min),
                }
            }
        }
    }

    /// Where the `p` percentile's interval reaches down into a ladder gap, the step below the gap (ln ms): the
    /// share of tonight's requests at or above that step is known from the ladder where the share at the
    /// percentile's own value is not (`slow_share` tests whether the percentile is past the step). A histogram
    /// has no gap.
    #[must_use]
    pub fn step_below_gap(&self, p: f64) -> Option<f64> {
        let Shape::Ladder(points) = &self.shape else { return None };
        let ((p0, y0), _) = gap_around(points, quantile_levels(self.timed, p).lo)?;
        (p0 >= 0.5).then_some(y0)
    }

    /// The `p` percentile with its 95 % interval from the order statistics of this night's requests.
    #[must_use]
    pub fn percentile(&self, p: f64) -> Percentile {
        let levels = quantile_levels(self.timed, p);
        let value = self.quantile(p);
        let lo = self.quantile(levels.lo);
        let hi = self.quantile(levels.hi.min(1.0));
        let low_bound = self.quantile_bound(levels.lo, Side::Low);
        Percentile {
            value,
            lo,
            hi: levels.bounded.then_some(hi),
            sampling_sd: (hi - lo) / (2.0 * CONFIDENCE_Z),
            sampling_sd_down: (value - low_bound).max(0.0) / CONFIDENCE_Z,
        }
    }
}

fn ln_ms(us: f64) -> f64 {
    (us.max(1.0) / 1000.0).ln()
}

/// The ladder of a result's stored percentiles, with a point below the median mirrored from p75 so the lower
/// half of a median's interval has something to interpolate on.
fn ladder(result: &EndpointResult) -> Vec<(f64, f64)> {
    let steps = [
        (0.5, result.p50_us),
        (0.75, result.p75_us),
        (0.9, result.p90_us),
        (0.95, result.p95_us),
        (0.99, result.p99_us),
        (0.999, result.p999_us),
        (1.0, result.max_us),
    ];
    let mut points: Vec<(f64, f64)> = steps.iter().map(|&(p, us)| (p, ln_ms(us as f64))).collect();
    // Percentiles are monotone; a hand-made or rounded ladder may not quite be.
    for i in 1..points.len() {
        points[i].1 = points[i].1.max(points[i - 1].1);
    }
    let mirrored = 2.0 * points[0].1 - points[1].1;
    points.insert(0, (0.25, mirrored));
    points
}

/// The two ladder steps around quantile level `p`, when they are a gap the ladder cannot see into.
fn gap_around(points: &[(f64, f64)], p: f64) -> Option<((f64, f64), (f64, f64))> {
    let pair = points.windows(2).find(|pair| (pair[0].0..=pair[1].0).contains(&p))?;
    (pair[1].1 - pair[0].1 > LADDER_GAP_RATIO.ln()).then_some((pair[0], pair[1]))
}

/// The quantile level of `value` (ln ms) where it lies strictly between two ladder steps of the body (no gap):
/// the inverse of [`interpolate`] there.
fn level_inside_body(points: &[(f64, f64)], value: f64) -> Option<f64> {
    let pair = points[1..].windows(2).find(|pair| pair[0].1 < value && value < pair[1].1)?;
    let ((p0, y0), (p1, y1)) = (pair[0], pair[1]);
    (y1 - y0 <= LADDER_GAP_RATIO.ln()).then(|| p0 + (value - y0) / (y1 - y0) * (p1 - p0))
}

/// Linear interpolation of ln ms in the quantile level, extrapolated below the first point.
fn interpolate(points: &[(f64, f64)], p: f64) -> f64 {
    let segment = points.windows(2).find(|pair| p <= pair[1].0).unwrap_or(&points[points.len() - 2..]);
    let ((p0, y0), (p1, y1)) = (segment[0], segment[1]);
    if p >= 1.0 {
        return points[points.len() - 1].1;
    }
    y0 + (p - p0) * (y1 - y0) / (p1 - p0)
}

/// A night of `requests` known only by its ladder (p50, p75, p90, p95, p99, p99.9, max in ms), for tests.
#[cfg(test)]
pub(super) fn ladder_result(requests: i64, ms: [f64; 7]) -> EndpointResult {
    let us = |i: usize| (ms[i] * 1000.0) as i64;
    EndpointResult {
        endpoint: "GET /x".into(),
        requests,
        p50_us: us(0),
        p75_us: us(1),
        p90_us: us(2),
        p95_us: us(3),
        p99_us: us(4),
        p999_us: us(5),
        max_us: us(6),
        ..EndpointResult::default()
    }
}

#[cfg(test)]
mod tests {
    use hdrhistogram::serialization::{Serializer, V2Serializer};

    use super::*;
    use crate::metrics::new_histogram;

    #[test]
    fn a_ladder_interpolates_inside_the_body_and_steps_across_a_gap() {
        let sample = Sample::from_result(&ladder_result(4_000, [80.0, 93.0, 105.0, 115.0, 572.0, 1870.0, 3940.0]));
        let mid = sample.quantile(0.97).exp();
        assert!(mid > 115.0 && mid < 572.0, "{mid}");
        assert!((sample.quantile_bound(0.97, Side::Low).exp() - 115.0).abs() < 0.01, "a gap: the lower end");
        assert!((sample.quantile_bound(0.97, Side::High).exp() - 572.0).abs() < 0.01, "a gap: the upper end");
        let body = sample.quantile_bound(0.6, Side::Low).exp();
        assert!(body > 80.0 && body < 93.0, "the body is interpolated: {body}");
        assert!((sample.share_at_or_above(200f64.ln(), Side::High) - 0.05).abs() < 1e-12);
        assert!((sample.share_at_or_above(200f64.ln(), Side::Low) - 0.01).abs() < 1e-12);
        // Inside the body the share is read where the interpolated quantiles put it, the inverse of `quantile`.
        let share = sample.share_at_or_above(sample.quantile(0.8), Side::High);
        assert!((share - 0.2).abs() < 1e-9, "{share}");
        assert!((share - sample.share_at_or_above(sample.quantile(0.8), Side::Low)).abs() < 1e-12, "both sides alike");
        assert!((sample.share_at_or_above(105f64.ln(), Side::High) - 0.25).abs() < 1e-12, "at a step: bounded");
    }

    #[test]
    fn a_histogram_answers_exactly() {
        let mut h = new_histogram();
        for us in 1..=10_000u64 {
            h.record(us * 10).unwrap();
        }
        let mut bytes = Vec::new();
        V2Serializer::new().serialize(&h, &mut bytes).unwrap();
        let result = EndpointResult { requests: 10_000, histogram: bytes, ..EndpointResult::default() };
        let sample = Sample::from_result(&result);
        assert!((sample.quantile(0.5).exp() - 50.0).abs() < 0.1);
        let share = sample.share_at_or_above(90f64.ln(), Side::High);
        assert!((share - 0.1).abs() < 0.002, "{share}");
        let p99 = sample.percentile(0.99);
        assert!(p99.hi.is_some() && p99.sampling_sd < 0.01, "{p99:?}");
    }

    #[test]
    fn too_few_requests_leave_a_high_percentile_unbounded() {
        let sample = Sample::from_result(&ladder_result(59, [29.0, 30.0, 31.0, 33.0, 57.0, 57.0, 57.0]));
        assert_eq!(sample.percentile(0.99).hi, None);
        assert!(sample.percentile(0.5).hi.is_some());
    }
}
