//! Did more requests fail (or take longer than a threshold) tonight than the nights before make likely?
//! A test on counts, for error rates and for the share of slow requests behind a tail percentile.
//!
//! Each night's count is binomial given that night's rate, and the rate itself varies from night to night.
//! The history gives the rate (with Jeffreys' half a count, so a clean history still has a rate) and the size
//! of that variation (the spread of the nightly rates beyond what counting alone explains). How the rate
//! varies depends on what is counted ([`Wobble`]):
//! - failures come in bursts: a flaky dependency fails three times as often on some nights, a
//!   multiplicative, log-normal wobble. Tonight's chance of at least its count is a negative binomial (the
//!   rate's uncertainty from the history's total) averaged over the wobble;
//! - the share of requests slower than a threshold moves by small amounts with the night's speed, an additive
//!   wobble: tonight's count is beta-binomial, the beta holding both the rate's uncertainty and the wobble.

use statrs::distribution::{DiscreteCDF, NegativeBinomial};
use statrs::function::beta::ln_beta;
use statrs::function::gamma::ln_gamma;

/// A prior on how much a failure rate wobbles from night to night: by a factor of about 2 either way (the
/// log-scale standard deviation ln 2), believed as much as two nights of evidence. A few nights cannot show
/// how flaky an endpoint is; without the prior, five similar nights would make one burst look impossible.
const FAILURE_WOBBLE_PRIOR: (f64, f64) = (std::f64::consts::LN_2, 2.0);
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

/// How a count's rate varies from night to night.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wobble {
    /// By a factor: failures.
    Multiplicative,
    /// By an amount: the share of slow requests.
    Additive,
}

/// What the history says about a count's rate.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CountHistory {
    /// Hits over all nights.
    pub hits: f64,
    /// Requests over all nights.
    pub trials: f64,
    /// Variance of the log of the nightly rate factor (0: the rate held steady).
    pub log_wobble_var: f64,
    /// Variance of the nightly rate beyond counting, as a share.
    pub wobble_var: f64,
    /// How the rate varies.
    pub wobble: Wobble,
    pub nights: usize,
}

impl CountHistory {
    /// Summarises `nights` (each with at least one request).
    #[must_use]
    pub fn new(nights: &[Count], wobble: Wobble) -> Self {
        let hits: f64 = nights.iter().map(|n| n.hits).sum();
        let trials: f64 = nights.iter().map(|n| n.trials).sum();
        let rate = (hits + 0.5) / trials.max(1.0);
        let rates: Vec<f64> = nights.iter().map(|n| n.hits / n.trials).collect();
        let counting_var = nights.iter().map(|n| rate / n.trials).sum::<f64>() / nights.len().max(1) as f64;
        let observed_var = sample_variance(&rates);
        let excess = (observed_var - counting_var).max(0.0);
        let mut log_wobble_var = if excess > 0.0 { (excess / (rate * rate)).ln_1p() } else { 0.0 };
        if wobble == Wobble::Multiplicative {
            let (sd, weight) = FAILURE_WOBBLE_PRIOR;
            let dof = nights.len().saturating_sub(1) as f64;
            log_wobble_var = (dof * log_wobble_var + weight * sd * sd) / (dof + weight);
        }
        Self { hits, trials, log_wobble_var, wobble_var: excess, wobble, nights: nights.len() }
    }

    /// The pooled rate, as a share of requests (no pseudo-count).
    #[must_use]
    pub fn rate(&self) -> f64 {
        if self.trials > 0.0 { self.hits / self.trials } else { 0.0 }
    }

    /// The chance, by the history's rate and wobble alone, of at least `hits` in `trials` tonight.
    #[must_use]
    pub fn p_at_least(&self, hits: u64, trials: f64) -> f64 {
        if hits == 0 || self.trials <= 0.0 {
            return 1.0;
        }
        match self.wobble {
            Wobble::Multiplicative => self.p_multiplicative(hits, trials),
            Wobble::Additive => self.p_additive(hits, trials.round() as u64),
        }
    }

    fn p_multiplicative(&self, hits: u64, trials: f64) -> f64 {
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
            if sd == 0.0 {
                return nb.sf(hits - 1);
            }
        }
        (p / weights).clamp(0.0, 1.0)
    }

    /// Beta-binomial: the rate's beta has the history's mean and the variance of its estimate plus the wobble.
    fn p_additive(&self, hits: u64, trials: u64) -> f64 {
        if hits > trials {
            return 0.0;
        }
        let rate = (self.hits + 0.5) / (self.trials + 1.0);
        let spread = rate * (1.0 - rate) / (self.trials + 1.0) + self.wobble_var;
        let strength = (rate * (1.0 - rate) / spread - 1.0).max(1e-6);
        beta_binomial_at_least(hits, trials, rate * strength, (1.0 - rate) * strength)
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

/// P(K ≥ hits) for K beta-binomial(trials, a, b), summed over whichever side of `hits` is shorter to reach precision.
fn beta_binomial_at_least(hits: u64, trials: u64, a: f64, b: f64) -> f64 {
    let ln_choose =
        |j: u64| ln_gamma(trials as f64 + 1.0) - ln_gamma(j as f64 + 1.0) - ln_gamma((trials - j) as f64 + 1.0);
    let pmf = |j: u64| (ln_choose(j) + ln_beta(j as f64 + a, (trials - j) as f64 + b) - ln_beta(a, b)).exp();
    let mean = trials as f64 * a / (a + b);
    let (mut total, mut j) = (0.0, hits);
    if hits as f64 >= mean {
        // The upper tail: terms fall away past the mode.
        while j <= trials {
            let term = pmf(j);
            total += term;
            if term < total * 1e-16 || term == 0.0 && total > 0.0 {
                break;
            }
            j += 1;
        }
        return total.clamp(0.0, 1.0);
    }
    while j > 0 {
        j -= 1;
        let term = pmf(j);
        total += term;
        if term < total * 1e-16 {
            break;
        }
    }
    (1.0 - total).clamp(0.0, 1.0)
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
        CountHistory::new(&counts, Wobble::Multiplicative)
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

    #[test]
    fn the_beta_binomial_tail_matches_its_sum() {
        // Checked against scipy.stats.betabinom.sf(k - 1, n, a, b).
        let p = beta_binomial_at_least(30, 1000, 2.0, 198.0);
        assert!((p - 0.024_508).abs() < 1e-5, "{p}");
        assert!(beta_binomial_at_least(0, 10, 1.0, 1.0) > 0.999_999);
        let share = CountHistory::new(&[Count { hits: 10.0, trials: 1000.0 }; 10], Wobble::Additive);
        assert!(share.p_at_least(30, 1000.0) < 1e-5);
        assert!(share.p_at_least(12, 1000.0) > 0.1);
    }
}
