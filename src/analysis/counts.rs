//! Did more requests fail (or take longer than a threshold) tonight than the nights before make likely?
//! A test on counts, for error rates and for the share of slow requests behind a tail percentile.
//!
//! Each night's count is binomial given that night's rate, and the rate itself varies from night to night by
//! a factor (a log-normal wobble). The history gives the rate (with Jeffreys' half a count, so a clean history
//! still has a rate) and the size of that wobble (the spread of the nightly rates beyond what counting alone
//! explains, weighed with a prior). Tonight's chance of at least its count is a negative binomial (the rate's
//! uncertainty from the history's total) averaged over the wobble. For failures, the bursts a clean endpoint's
//! nights have besides that rate are added on top (see `bursts`), and an endpoint clean but for bursts has its
//! wobble read from its nights without failures, its failures being bursts (`CountHistory::add_bursts`).
//!
//! Both things counted vary by a factor, not by an amount:
//! - failures come in bursts: a flaky dependency fails three times as often on some nights;
//! - the share of requests slower than a threshold far in the tail moves with the night's speed, and steeply:
//!   where a p99 sits, a night 5 % slower than usual makes the share beyond it about 1.5 times as large and a
//!   night 12 % slower 2.5–3 times (a log-normal body of spread 0.3). An additive wobble, measured on the
//!   few nights at the current level, made such nights look impossible: on simulated unchanged nights of a
//!   machine whose speed varies by ±12 %, five baseline nights of 2,000 requests, the share behind p95 fell
//!   below 2·10⁻⁴ (where a run's first test is held) on 4.8 % of nights, 240 times as often as it should;
//!   by a factor, on 0.2 %, still ten times too often: so the slow-share test also asks the level's night
//!   noise (`slow_share::SlowShare`).

use statrs::distribution::{DiscreteCDF, NegativeBinomial};

mod bursts;

pub use bursts::Bursts;

/// A prior on how much a counted rate wobbles from night to night: by a factor of about 2 either way (the
/// log-scale standard deviation ln 2), believed as much as two nights of evidence. A few nights cannot show
/// how flaky an endpoint is, nor how much its far tail moves with the machine's speed; without the prior,
/// five similar nights would make one burst, or one slower night, look impossible.
pub(super) const WOBBLE_PRIOR: (f64, f64) = (std::f64::consts::LN_2, 2.0);
/// Points of the normal quadrature over the night-to-night wobble, spanning ±6 standard deviations.
const QUADRATURE_POINTS: usize = 61;

/// One night's count of `hits` (failed or slow requests) out of `trials` requests.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Count {
    /// Requests that failed (or took longer than the threshold).
    pub hits: f64,
    pub trials: f64,
}

/// What the history says about a count's rate.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CountHistory {
    /// Hits over all nights.
    pub hits: f64,
    /// Requests over all nights.
    pub trials: f64,
    /// Variance of the log of the nightly rate factor, the prior's included.
    pub log_wobble_var: f64,
    pub nights: usize,
    /// For failures: the bursts a clean endpoint's night may have besides its rate (see `bursts`).
    pub bursts: Option<Bursts>,
}

impl CountHistory {
    /// Summarises `nights` (each with at least one request).
    #[must_use]
    pub fn new(nights: &[Count]) -> Self {
        let hits: f64 = nights.iter().map(|n| n.hits).sum();
        let trials: f64 = nights.iter().map(|n| n.trials).sum();
        let rate = (hits + 0.5) / trials.max(1.0);
        let rates: Vec<f64> = nights.iter().map(|n| n.hits / n.trials).collect();
        let counting_var = nights.iter().map(|n| rate / n.trials).sum::<f64>() / nights.len().max(1) as f64;
        let observed_var = sample_variance(&rates);
        let excess = (observed_var - counting_var).max(0.0);
        let own = if excess > 0.0 { (excess / (rate * rate)).ln_1p() } else { 0.0 };
        let (sd, weight) = WOBBLE_PRIOR;
        let dof = nights.len().saturating_sub(1) as f64;
        let log_wobble_var = (dof * own + weight * sd * sd) / (dof + weight);
        Self { hits, trials, log_wobble_var, nights: nights.len(), bursts: None }
    }

    /// The pooled rate, as a share of requests (no pseudo-count).
    #[must_use]
    pub fn rate(&self) -> f64 {
        if self.trials > 0.0 { self.hits / self.trials } else { 0.0 }
    }

    /// The chance, by the history's rate and wobble (and its bursts, when set), of at least `hits` in `trials`
    /// tonight.
    #[must_use]
    pub fn p_at_least(&self, hits: u64, trials: f64) -> f64 {
        match &self.bursts {
            Some(bursts) => bursts.p_at_least(self, hits, trials),
            None => self.p_rate_at_least(hits, trials),
        }
    }

    /// The chance, by the history's rate and wobble alone, of at least `hits` in `trials` tonight.
    #[must_use]
    pub fn p_rate_at_least(&self, hits: u64, trials: f64) -> f64 {
        if hits == 0 || self.trials <= 0.0 {
            return 1.0;
        }
        let shape = self.hits + 0.5;
        let mean = trials * shape / self.trials;
        let sd = self.log_wobble_var.sqrt();
        let (mut p, mut weights) = (0.0, 0.0);
        for i in 0..QUADRATURE_POINTS {
            let x = -6.0 + 12.0 * i as f64 / (QUADRATURE_POINTS - 1) as f64;
            let weight = (-0.5 * x * x).exp();
            let night_mean = mean * (sd * x - 0.5 * self.log_wobble_var).exp();
            let nb = NegativeBinomial::new(shape, shape / (shape + night_mean)).expect("a positive shape and mean");
            p += weight * nb.sf(hits - 1);
            weights += weight;
        }
        (p / weights).clamp(0.0, 1.0)
    }

    /// The fewest hits in `trials` whose chance is at most `alpha`, if any.
    #[must_use]
    pub fn hits_needed(&self, trials: u64, alpha: f64) -> Option<u64> {
        if self.p_at_least(trials, trials as f64) > alpha {
            return None;
        }
        let (mut low, mut high) = (1u64, trials);
        while low < high {
            let mid = low + (high - low) / 2;
            if self.p_at_least(mid, trials as f64) <= alpha { high = mid } else { low = mid + 1 }
        }
        Some(low)
    }
}

fn sample_variance(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (values.len() - 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nights(counts: &[(f64, f64)]) -> CountHistory {
        let counts: Vec<Count> = counts.iter().map(|&(hits, trials)| Count { hits, trials }).collect();
        CountHistory::new(&counts)
    }

    #[test]
    fn a_clean_history_makes_a_few_failures_unlikely() {
        let clean = nights(&[(0.0, 1000.0); 10]);
        assert!(clean.p_at_least(5, 1000.0) < 1e-5);
        assert!(clean.p_at_least(1, 1000.0) > 0.02, "one failure after 10,000 clean requests is no proof");
    }

    #[test]
    fn a_flaky_history_excuses_a_bad_night() {
        let month: Vec<(f64, f64)> = (0..30).map(|n| (f64::from(9 + n % 3), 1000.0)).collect();
        let steady = nights(&month);
        let five = nights(&month[..5]);
        let flaky = nights(&[(2.0, 1000.0), (30.0, 1000.0), (5.0, 1000.0), (12.0, 1000.0), (1.0, 1000.0)]);
        assert!(steady.log_wobble_var < 0.05, "a month of steady nights outweighs the prior: {steady:?}");
        assert!(steady.p_at_least(40, 1000.0) < 1e-6, "four times the steady rate is far past any run-level threshold");
        assert!(
            five.p_at_least(40, 1000.0) > 100.0 * steady.p_at_least(40, 1000.0),
            "five nights prove less: {five:?}"
        );
        assert!(flaky.p_at_least(40, 1000.0) > 1e-3, "{flaky:?}");
        let needed = steady.hits_needed(1000, 1e-4).unwrap();
        assert!((20..40).contains(&needed), "{needed}");
    }
}
