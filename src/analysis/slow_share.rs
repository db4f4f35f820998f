//! The share-of-slow-requests tests of a tail percentile (p95, p99): did more of tonight's requests take at
//! least a threshold than the nights at the current level allow? They read tonight's sampling by counting
//! requests, where the level test reads it from the percentile's interval, which is what they are for: a tail
//! percentile of a few hundred requests, and a percentile the ladder cannot place.
//!
//! The threshold is tonight's percentile value, against the baseline nights' share at or above it. Without a
//! histogram (`degrade detect --runs` reads a ladder of percentiles) a second threshold is tried where
//! tonight's percentile reaches into a ladder gap: a slow mode of about 5 % of the requests puts the p95
//! anywhere between the p90 and the p99, so its interval spans the gap and the level test reads it as
//! ±60 %, while the ladder still says that at least 10 % of tonight's requests took the p90's time or longer.
//! A p95 under that time would leave at most 5 % there, whatever the night: a binomial chance of tonight's
//! count, no baseline share needed (which the ladder bounds only between its steps). On the development set a
//! p95 of 33,268 requests went from 82 to 703 ms with its p90 at 226 ms: the level test read 3.6 sigma, this
//! one 10. Both thresholds' tests are valid alone; on a ladder the family counts the louder times two.

use super::counts::{Count, CountHistory};
use super::level::Estimate;
use super::sample::{Sample, Side};

/// Did more of tonight's requests take at least `threshold_ms` than on the baseline nights at the current level
/// (or, at a step below a gap, than a percentile under the step allows)?
///
/// Counting requests knows tonight's sampling exactly, but not how far an ordinary night moves the percentile:
/// that is the level's night-to-night noise. A far-tail share moves steeply with the night's speed (×2.5–3
/// for a night 12 % slower, see `counts`), so a night that is merely slow makes the share look rare. The test
/// therefore rejects only where the night noise alone, with no sampling at all, also leaves tonight's value
/// unlikely (`shift::p_worse_by_night_noise`): its p-value is the larger of the two. Both must reject, and it
/// differs from the level test only in how tonight's sampling is read, which is what it is for (a tail
/// percentile of a few hundred requests).
#[derive(Debug, Clone, Copy)]
pub(super) struct SlowShare {
    /// The threshold, ms: tonight's percentile value, or the ladder step below a gap it reaches into.
    pub threshold_ms: f64,
    /// The share of tonight's requests at or above it (at the least).
    pub tonight: f64,
    /// The share on the nights at the current level (at the most), pooled.
    pub baseline: f64,
    /// At a step below a gap: the share a percentile under the step leaves at most (1 − p), which tonight's
    /// share is read against instead of the baseline's.
    pub at_most: Option<f64>,
    /// How many nights that is.
    pub nights: usize,
    /// The chance of tonight's share by the baseline's alone (at a step, by the binomial at `at_most`); 1 when
    /// the threshold is not the minimum effect above the level.
    pub share_p: f64,
    /// The chance of a value at the threshold by the night-to-night noise alone, once the pooled prior has set
    /// it.
    pub night_p: Option<f64>,
}

impl SlowShare {
    /// The test's p-value: the larger of the two chances (1 until the night noise is known).
    pub fn p(&self) -> f64 {
        self.share_p.max(self.night_p.unwrap_or(1.0))
    }
}

/// The slow-share tests of one percentile, and how many thresholds a night of its kind tries: two on a
/// percentile ladder (tonight's value, and the step below a gap when its interval reaches into one), one with
/// a histogram, which has no gap. The count is fixed by the kind of data, never by tonight's values, so the
/// run's family does not depend on them.
#[derive(Debug, Clone, Default)]
pub(super) struct SlowShares {
    /// The tests made tonight.
    pub tests: Vec<SlowShare>,
    /// The thresholds a night of this kind tries.
    pub thresholds: usize,
}

impl SlowShares {
    /// The test that speaks loudest and its p-value in the run's family: the smallest, times the thresholds
    /// tried (each alone is a valid test; Bonferroni keeps their union one).
    pub fn loudest(&self) -> Option<(&SlowShare, f64)> {
        let loudest = self.tests.iter().min_by(|a, b| a.p().total_cmp(&b.p()))?;
        Some((loudest, (loudest.p() * self.thresholds as f64).min(1.0)))
    }
}

/// The slow-share tests of tonight's `p` percentile against the `judged` baseline nights: at tonight's value,
/// and at the ladder step below a gap its interval reaches into (see the module's text).
pub(super) fn slow_shares(
    tonight: &Sample,
    judged: &[&Sample],
    estimate: &Estimate,
    p: f64,
    needed: usize,
    min_effect: f64,
) -> SlowShares {
    let (current, level) = current_level(judged, estimate);
    let at_value = slow_share(tonight, current, needed, tonight.quantile(p), level, min_effect);
    let at_step = tonight.step_below_gap(p).map(|step| {
        let mut test = slow_share(tonight, current, needed, step, level, min_effect);
        test.at_most = Some(1.0 - p);
        test.share_p = 1.0;
        let n = tonight.timed();
        if n > 0 && worth_counting(current.len(), needed, step, level, min_effect) {
            // At least `hits` of tonight's requests reached the step; a percentile under it leaves each request
            // a chance of at most 1 − p to.
            let hits = (test.tonight * n as f64 - 1e-9).ceil().max(1.0) as u64;
            let under_the_step = statrs::distribution::Binomial::new(1.0 - p, n).expect("a share and a count");
            test.share_p = statrs::distribution::DiscreteCDF::sf(&under_the_step, hits - 1);
        }
        test
    });
    let thresholds = if tonight.histogram().is_some() { 1 } else { 2 };
    SlowShares { tests: std::iter::once(at_value).chain(at_step).collect(), thresholds }
}

/// Whether a threshold is worth counting at: the minimum effect above `level`, on the `needed` nights a
/// baseline needs at that level.
fn worth_counting(nights: usize, needed: usize, threshold: f64, level: f64, min_effect: f64) -> bool {
    nights >= needed && threshold >= level + min_effect.ln_1p()
}

/// The nights at the series' current level, and that level: only they say how many requests are usually that
/// slow. Nights before a step measured another build, and a slower level held for a few nights would make
/// tonight's unchanged tail look rare against a pool of older, quicker ones. When the last nights moved to a
/// new level that has not settled, that is where the series stands: its nights, and the higher of the two
/// levels (tonight must be worse than both).
fn current_level<'a>(judged: &'a [&'a Sample], estimate: &Estimate) -> (&'a [&'a Sample], f64) {
    match estimate.tail {
        Some((tail, nights)) => (&judged[judged.len().saturating_sub(nights)..], tail.max(estimate.level)),
        None => (&judged[estimate.current_from.min(judged.len())..], estimate.level),
    }
}

/// The slow-share test at tonight's percentile value `value`, when it lies the minimum effect above `level`
/// and the series has held that level for the `needed` nights a baseline needs: the share's night-to-night
/// wobble is measured on those nights alone (with the prior of `counts`), and fewer would say little of it.
fn slow_share(
    tonight: &Sample,
    history: &[&Sample],
    needed: usize,
    value: f64,
    level: f64,
    min_effect: f64,
) -> SlowShare {
    let share_tonight = tonight.share_at_or_above(value, Side::Low);
    let counts: Vec<Count> = history
        .iter()
        .map(|s| Count { hits: s.share_at_or_above(value, Side::High) * s.timed() as f64, trials: s.timed() as f64 })
        .collect();
    let nights = CountHistory::new(&counts);
    let share_p = if worth_counting(history.len(), needed, value, level, min_effect) {
        let hits = (share_tonight * tonight.timed() as f64 - 1e-9).ceil().max(0.0) as u64;
        nights.p_at_least(hits, tonight.timed() as f64)
    } else {
        1.0
    };
    SlowShare {
        threshold_ms: value.exp(),
        tonight: share_tonight,
        baseline: nights.rate(),
        at_most: None,
        nights: history.len(),
        share_p,
        night_p: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::level::estimate;
    use crate::analysis::sample::ladder_result;
    use crate::model::EndpointResult;

    #[test]
    fn the_slow_share_pools_only_the_nights_at_the_current_level() {
        let night = Sample::from_result(&EndpointResult::default());
        let judged: Vec<&Sample> = vec![&night; 8];
        let at = |pool: &[&Sample]| judged.len() - pool.len();
        // A step settled for four nights: those four, at their level.
        let stepped = [1.0, 1.0, 1.0, 1.0, 4.0, 4.0, 4.0, 4.0];
        let (pool, level) = current_level(&judged, &estimate(&stepped, &[0.0; 8], 0.01, None));
        assert_eq!((at(pool), level), (4, 4.0));
        // Two nights moved and have not settled: those two, at the higher level.
        let moving = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 4.0, 4.0];
        let (pool, level) = current_level(&judged, &estimate(&moving, &[0.0; 8], 0.01, None));
        assert_eq!((at(pool), level), (6, 4.0));
        // One level throughout: every night.
        let flat = [1.0, 1.01, 0.99, 1.0, 1.0, 1.02, 0.98, 1.0];
        let (pool, _) = current_level(&judged, &estimate(&flat, &[0.0; 8], 0.01, None));
        assert_eq!(at(pool), 0);
    }

    /// One night of 33,268 requests as a percentile ladder (p50, p75, p90, p95, p99, p99.9, max in ms).
    fn ladder(ms: [f64; 7]) -> Sample {
        Sample::from_result(&ladder_result(33_268, ms))
    }

    /// The p95's share tests of `tonight` after twelve nights whose p95 was about 75 ms.
    fn p95_tests(tonight: &Sample) -> Vec<SlowShare> {
        let nights: Vec<Sample> = (0..12)
            .map(|i| {
                let p95 = 72.0 + f64::from(i % 4) * 2.0;
                ladder([33.0, 46.0, 62.0, p95, 500.0 + f64::from(i) * 20.0, 1900.0, 6000.0])
            })
            .collect();
        let judged: Vec<&Sample> = nights.iter().collect();
        let values: Vec<f64> = judged.iter().map(|s| s.quantile(0.95)).collect();
        let estimate = estimate(&values, &vec![0.0; values.len()], 0.02, None);
        let shares = slow_shares(tonight, &judged, &estimate, 0.95, 5, 0.1);
        assert_eq!(shares.thresholds, 2, "a ladder tries two thresholds, gap or none");
        shares.tests
    }

    #[test]
    fn a_slow_mode_that_moved_the_p95_across_a_ladder_gap_is_counted_at_the_step_below_it() {
        // dev-r00505: a slow mode past 5 % of the requests; the p95 could be anywhere from 226 to 703 ms.
        let tests = p95_tests(&ladder([37.0, 55.0, 226.0, 703.0, 1680.0, 3410.0, 5910.0]));
        let [at_value, at_step] = tests.as_slice() else { panic!("{tests:?}") };
        assert_eq!((at_value.threshold_ms.round(), at_value.at_most), (703.0, None));
        assert!((at_step.threshold_ms - 226.0).abs() < 0.01, "{at_step:?}");
        assert!(at_step.at_most.is_some_and(|share| (share - 0.05).abs() < 1e-9), "{at_step:?}");
        assert!((at_step.tonight - 0.1).abs() < 1e-9, "{at_step:?}");
        assert!(at_step.share_p < 1e-50, "twice the share a p95 under 226 ms allows, of 33,268: {at_step:?}");
    }

    #[test]
    fn a_p95_in_a_gap_whose_step_below_did_not_move_is_not_counted_there() {
        // The slow mode a little past 5 % on an ordinary night: the p90 where it always is.
        let tests = p95_tests(&ladder([33.0, 46.0, 63.0, 222.0, 1190.0, 2720.0, 8110.0]));
        let [_, at_step] = tests.as_slice() else { panic!("{tests:?}") };
        assert_eq!((at_step.threshold_ms.round(), at_step.share_p), (63.0, 1.0));
        // Without a gap there is no step to count at.
        assert_eq!(p95_tests(&ladder([33.0, 46.0, 62.0, 80.0, 600.0, 1900.0, 6000.0])).len(), 1);
    }
}
