//! How sure a night's figure is: distribution-free confidence intervals for percentiles (from the order
//! statistics of the sample) and for error rates (Wilson's binomial interval).
//!
//! A percentile of n requests is one of them: the p-th of the sorted sample. Its 95 % interval runs between
//! the requests at ranks n·p ± z·√(n·p·(1−p)), whatever the shape of the distribution. When the upper rank
//! falls past the slowest request, the sample says nothing about how much higher the percentile could be:
//! the percentile rests on too few requests to be judged (a p99 of 59 requests is the slowest one).

use hdrhistogram::Histogram;

use crate::model::Interval;

/// The normal quantile of the intervals shown and used to bound a percentile: 95 %, two-sided.
pub const CONFIDENCE_Z: f64 = 1.959_963_984_540_054;

/// Where a percentile's interval lies, as quantile levels of the sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantileLevels {
    /// The quantile level of the interval's lower end.
    pub lo: f64,
    /// The quantile level of its upper end (may exceed 1 when unbounded).
    pub hi: f64,
    /// Whether the upper end lies within the sample.
    pub bounded: bool,
}

/// The levels of the 95 % interval of the `p` quantile of `n` values.
#[must_use]
pub fn quantile_levels(n: u64, p: f64) -> QuantileLevels {
    if n == 0 {
        return QuantileLevels { lo: p, hi: p, bounded: false };
    }
    let spread = CONFIDENCE_Z * (p * (1.0 - p) / n as f64).sqrt();
    let (lo, hi) = (p - spread, p + spread);
    // The upper end is the value at rank ⌈n·hi⌉; past rank n there is no such request.
    let bounded = (n as f64 * hi - 1e-9).ceil() <= n as f64;
    QuantileLevels { lo: lo.max(0.0), hi, bounded }
}

/// The fewest requests whose `p` quantile has a bounded 95 % interval.
#[must_use]
pub fn requests_needed(p: f64) -> u64 {
    (1..=1_000_000).find(|&n| quantile_levels(n, p).bounded).unwrap_or(1_000_000)
}

/// The 95 % interval of the `p` quantile of the response times in `histogram`, in µs.
#[must_use]
pub fn percentile_interval(histogram: &Histogram<u64>, p: f64) -> Option<Interval> {
    if histogram.is_empty() {
        return None;
    }
    let levels = quantile_levels(histogram.len(), p);
    let at = |q: f64| histogram.value_at_quantile(q.clamp(0.0, 1.0)) as f64;
    Some(Interval { lo: at(levels.lo), hi: levels.bounded.then(|| at(levels.hi)) })
}

/// Wilson's 95 % interval of an error rate of `errors` in `requests`, in percent.
#[must_use]
pub fn error_rate_interval(errors: u64, requests: u64) -> Option<Interval> {
    if requests == 0 {
        return None;
    }
    let (n, z) = (requests as f64, CONFIDENCE_Z);
    let share = errors as f64 / n;
    let center = (share + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (share * (1.0 - share) / n + z * z / (4.0 * n * n)).sqrt();
    Some(Interval { lo: 100.0 * (center - half).max(0.0), hi: Some(100.0 * (center + half).min(1.0)) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::new_histogram;

    #[test]
    fn a_p99_needs_a_few_hundred_requests_to_be_bounded() {
        assert!(!quantile_levels(59, 0.99).bounded, "a p99 of 59 requests is the slowest one");
        assert!(quantile_levels(1_000, 0.99).bounded);
        let needed = requests_needed(0.99);
        assert!((370..=390).contains(&needed), "{needed}");
        assert!((60..=80).contains(&requests_needed(0.95)), "{}", requests_needed(0.95));
        assert!(requests_needed(0.5) <= 5);
    }

    #[test]
    fn a_percentile_interval_brackets_the_percentile() {
        let mut histogram = new_histogram();
        for us in 1..=10_000 {
            histogram.record(us).unwrap();
        }
        let p95 = percentile_interval(&histogram, 0.95).unwrap();
        assert!(p95.lo < 9_500.0 && p95.hi.unwrap() > 9_500.0, "{p95:?}");
        assert!(p95.hi.unwrap() - p95.lo < 200.0, "10,000 requests pin a p95 down: {p95:?}");
        let mut few = new_histogram();
        for us in 1..=59 {
            few.record(us * 100).unwrap();
        }
        assert_eq!(percentile_interval(&few, 0.99).unwrap().hi, None);
    }

    #[test]
    fn wilson_intervals_never_leave_zero_to_a_hundred() {
        let none = error_rate_interval(0, 1_000).unwrap();
        assert!(none.lo.abs() < 1e-12 && none.hi.unwrap() > 0.1 && none.hi.unwrap() < 0.5, "{none:?}");
        let all = error_rate_interval(50, 50).unwrap();
        assert!(all.hi.unwrap() <= 100.0 && all.lo > 90.0, "{all:?}");
        assert_eq!(error_rate_interval(0, 0), None);
    }
}
