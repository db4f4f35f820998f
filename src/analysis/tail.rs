//! The tail of an endpoint judged from the whole stored distribution rather than from one percentile: did more
//! of tonight's requests take longer than a threshold far in the baseline's tail than on the baseline nights,
//! and enough of them that tonight's p99 lies past it?
//!
//! A p99 read as a value needs a few hundred requests before its interval is bounded at all (see
//! `metrics::interval`), and even then it moves by the sampling of a handful of requests. A tail-only change (2 %
//! of requests 50 ms slower) hardly moves the p95 and moves the p99 of 1,000 requests by what its wide interval
//! forgives. Counting requests past a fixed threshold uses every request of every night instead:
//! - the threshold is set from the pooled baseline (every baseline night's histogram added together): the farther
//!   of its p99 raised by the minimum effect and its p99.9. Tonight's p99 lies past it exactly when at least 1 %
//!   of tonight's requests do: that is the effect that must be there, read without tonight's p99 itself, and it
//!   is at least the minimum effect. As far out as p99.9 because a tail-only change moves requests far, and the
//!   fewer baseline requests lie past the threshold the fewer a change needs to stand out: past the p99 + 10 %
//!   of a log-normal of spread 0.4 lie 0.5 % of requests, so 2 % of 1,000 moved there are 25 against 5, ×5, which
//!   the wobble's prior (below) forgives at the run's first step (p ≈ 8·10⁻⁴ with seven nights); past its p99.9,
//!   21 against 1 (p ≈ 2·10⁻⁷). Not farther: one request in a thousand still leaves each baseline night of
//!   1,000 a count whose wobble shows;
//! - the baseline nights' counts past it give the usual share and how much it wobbles from night to night, with
//!   the same negative-binomial-with-wobble test as failures (`counts`), its prior's ×2 a floor rather than two
//!   nights of evidence: on the stored bench nights of this VM, steady baseline nights talked the wobble down to
//!   ×1.3–1.4, and then a busy night's stalls (a far tail ten times as full on every route) made p ≤ 0.1 % on 2
//!   of 90 unchanged tests and p ≈ 2·10⁻⁴ on one, a run's first step (DESIGN.md 6.3);
//! - only the nights at the series' current level count (read from the median, which every night bounds): nights
//!   before a step measured another build. When fewer than a baseline needs are at that level, the last nights a
//!   baseline needs do: on a shared machine the median drifts as often as a build steps it.
//!
//! Nights read from a percentile ladder (`degrade detect --runs`) have no histogram and get no tail test.

use hdrhistogram::Histogram;

use super::counts::{Count, CountHistory, WOBBLE_PRIOR};
use super::detector::{LOG_PRIOR, LOG_SIGMA_FLOOR};
use super::level::{REJECT_SIGMAS, estimate, median};
use super::sample::Sample;
use crate::metrics::interval::quantile_levels;

/// The percentile the tail test reports on: tonight's lies past the threshold when this share of requests does.
pub const TAIL_QUANTILE: f64 = 0.99;
/// The farthest the threshold goes: the pooled baseline's p99.9.
const FAR_QUANTILE: f64 = 0.999;

/// The tail test of one endpoint, reported on its p99.
#[derive(Debug, Clone, PartialEq)]
pub struct TailShare {
    /// The pooled baseline's p99, ms.
    pub baseline_ms: f64,
    /// The pooled baseline's p99.9, ms.
    pub far_ms: f64,
    /// The threshold: the farther of `baseline_ms` raised by the minimum effect and `far_ms`, ms.
    pub threshold_ms: f64,
    /// Tonight's requests at or past the threshold.
    pub hits: u64,
    /// Tonight's requests with a response time.
    pub timed: u64,
    /// The baseline nights' counts past the threshold: their share and its night-to-night wobble.
    pub history: CountHistory,
    /// The chance of at least `hits` by the baseline's share and wobble alone.
    pub p: f64,
}

impl TailShare {
    /// Tonight's share of requests at or past the threshold.
    #[must_use]
    pub fn tonight(&self) -> f64 {
        self.hits as f64 / self.timed.max(1) as f64
    }

    /// Whether tonight's p99 reached the threshold: at least 1 % of tonight's requests lie past it, so tonight's
    /// p99 is at least the minimum effect above the baseline's.
    #[must_use]
    pub fn is_effect(&self) -> bool {
        self.hits > 0 && self.tonight() >= 1.0 - TAIL_QUANTILE - 1e-12
    }
}

/// The tail test of `tonight` against the `history` nights (oldest first), when tonight and at least `needed`
/// nights at the current level have histograms and those nights bound the pooled p99.
#[must_use]
pub fn tail_share(tonight: &Sample, history: &[Sample], min_effect: f64, needed: usize) -> Option<TailShare> {
    let tonight_h = tonight.histogram()?;
    let (current, outliers) = current_nights(history);
    let mut nights: Vec<&Histogram<u64>> = current.into_iter().filter_map(Sample::histogram).collect();
    if nights.len() < needed {
        // Too few nights at the median's current level (on a shared machine the median drifts as often as a
        // build steps it): the last nights a baseline needs, the nearest to tonight's level. Not all of them: a
        // baseline of builds at 1, 20 and 80 ms pooled whole puts the threshold among the 80 ms nights' usual
        // tail, and an unchanged night at that level past it (`run_level_tests`). Nor an outlier of the level,
        // which would set the threshold at its slow requests here as well.
        let with: Vec<&Histogram<u64>> = history
            .iter()
            .enumerate()
            .filter(|(i, _)| !outliers.contains(i))
            .filter_map(|(_, s)| s.histogram())
            .collect();
        nights = with[with.len().saturating_sub(needed)..].to_vec();
    }
    if nights.len() < needed || tonight_h.is_empty() {
        return None;
    }
    let mut pooled = nights[0].clone();
    for h in &nights[1..] {
        pooled.add(*h).ok()?;
    }
    if !quantile_levels(pooled.len(), TAIL_QUANTILE).bounded {
        return None;
    }
    let baseline_us = pooled.value_at_quantile(TAIL_QUANTILE).max(1) as f64;
    // The far quantile is a place to put the threshold, not an estimate: unbounded, it is merely farther out.
    let far_us = pooled.value_at_quantile(FAR_QUANTILE).max(1) as f64;
    let threshold_us = (baseline_us * (1.0 + min_effect)).max(far_us).ceil() as u64;
    let counts: Vec<Count> =
        nights.iter().map(|h| Count { hits: past(h, threshold_us) as f64, trials: h.len() as f64 }).collect();
    let mut history = CountHistory::new(&counts);
    history.log_wobble_var = history.log_wobble_var.max(WOBBLE_PRIOR.0 * WOBBLE_PRIOR.0);
    let hits = past(tonight_h, threshold_us);
    Some(TailShare {
        baseline_ms: baseline_us / 1000.0,
        far_ms: far_us / 1000.0,
        threshold_ms: threshold_us as f64 / 1000.0,
        hits,
        timed: tonight_h.len(),
        p: history.p_at_least(hits, tonight_h.len() as f64),
        history,
    })
}

/// Requests of `h` at or past `threshold_us` (HdrHistogram's buckets: values equivalent to the threshold count).
fn past(h: &Histogram<u64>, threshold_us: u64) -> u64 {
    if h.max() < threshold_us { 0 } else { h.count_between(threshold_us, h.max()) }
}

/// The nights at the median's current level: only they say how many requests are usually slow. The median is
/// the percentile every night bounds; a step in it is a new build's level, and a new level not settled yet
/// is where the series stands (its nights alone, possibly too few for a test). A night more than the level's
/// outlier distance (`REJECT_SIGMAS`) from the current nights' median is left out, and returned apart (by its
/// index in `history`): one regressed night among fast ones (a build that slowed a route ×100, then fixed) is
/// one wild night to the level, but pooled whole it puts the baseline's p99 at its slow requests, and a route
/// slowed the same way again reads as no tail change (found by a new-user trial).
fn current_nights(history: &[Sample]) -> (Vec<&Sample>, Vec<usize>) {
    let judged: Vec<(usize, &Sample, f64, f64)> = history
        .iter()
        .enumerate()
        .map(|(i, s)| (i, s, s.percentile(0.5)))
        .filter(|(_, _, p)| p.hi.is_some())
        .map(|(i, s, p)| (i, s, p.value, p.sampling_sd.powi(2)))
        .collect();
    if judged.len() < 2 {
        return (judged.into_iter().map(|(_, s, ..)| s).collect(), Vec::new());
    }
    let values: Vec<f64> = judged.iter().map(|j| j.2).collect();
    let variances: Vec<f64> = judged.iter().map(|j| j.3).collect();
    let e = estimate(&values, &variances, LOG_SIGMA_FLOOR, Some(LOG_PRIOR));
    let from = match e.tail {
        Some((_, nights)) => judged.len().saturating_sub(nights),
        None => e.current_from.min(judged.len()),
    };
    let level = median(&values[from..]);
    let (usual, outliers): (Vec<&(usize, &Sample, f64, f64)>, Vec<_>) =
        judged[from..].iter().partition(|(_, _, value, _)| (value - level).abs() <= REJECT_SIGMAS * e.sigma);
    (usual.into_iter().map(|(_, s, ..)| *s).collect(), outliers.into_iter().map(|(i, ..)| *i).collect())
}

#[cfg(test)]
#[path = "tail_tests.rs"]
mod tests;
