//! How far tonight lies from where a series stands, in units of the noise, and how likely that is by
//! chance: the one test both the single-series detector and the run judge make of a figure.
//!
//! Tonight is compared with tomorrow's forecast of the level (an AR(1) step from the last night) and, when
//! the last nights moved to a new level that has not settled yet, with that level too, taking the closer of
//! the two. The spread of the difference adds tonight's night-to-night noise, tonight's sampling noise (never
//! less than a history night's: the same workload samples the same way) and the uncertainty of the level.
//! The noise was estimated from a few nights, so the distance is read on a Student-t distribution with the
//! estimate's degrees of freedom, not on a normal one.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::level::Estimate;

/// The variance of the median of m normal values is about (π/2)·σ²/m.
const MEDIAN_VARIANCE_FACTOR: f64 = std::f64::consts::FRAC_PI_2;

/// Tonight against the series' level.
#[derive(Debug, Clone, PartialEq)]
pub struct Shift {
    /// Standardised distance above (positive) or below the level, the closer baseline's when there are two.
    pub z: f64,
    /// Degrees of freedom of the noise estimate.
    pub dof: f64,
    /// The chance of being at least this far above by noise alone.
    pub p_worse: f64,
    /// The chance of being at least this far below by noise alone.
    pub p_better: f64,
    /// Tomorrow's expected value given the last night.
    pub forecast: f64,
    /// The spread of tonight's distance from the forecast.
    pub se: f64,
    /// The levels the minimum effect is measured from: the forecast (where the settled level was expected to
    /// be tonight), and the unsettled new level when there is one.
    pub baselines: Vec<f64>,
}

impl Shift {
    /// The distance, in `se`, a value must exceed to have at most `alpha` chance of arising by noise.
    #[must_use]
    pub fn threshold(&self, alpha: f64) -> f64 {
        t_quantile(1.0 - alpha, self.dof)
    }
}

/// Where a series' few nights, not the test itself, set a bar `k` at more than twice what a known noise would
/// need at `alpha`, that bar with a known noise: the one-sided normal quantile. With 5 nights at a level
/// (Student-t of 5 degrees of freedom) a run of 30 tests asks for 8 sigma where 3.4 would do, which reads as a
/// mistake unless it is said why; at 6 nights or more the bar is under twice, and no word is needed.
#[must_use]
pub fn bar_raised_by_few_nights(e: &Estimate, k: f64, alpha: f64) -> Option<f64> {
    let known = statrs::distribution::Normal::standard().inverse_cdf((1.0 - alpha).clamp(0.5, 1.0 - 1e-15));
    let by_nights = t_quantile(1.0 - alpha, e.dof);
    (k > 2.0 * known && by_nights > 2.0 * known).then_some(known)
}

/// The night's common factor (every endpoint of a night slower or quicker together) is heavy-tailed: on the
/// development set's unchanged nights its excess kurtosis κ was 2.8 and 3.6 (odd and even ids), that of a
/// Student-t of 4 + 6/κ ≈ 6 degrees of freedom (DESIGN.md 6.8).
pub const COMMON_FACTOR_DOF: f64 = 6.0;

/// Tonight's `candidate` (sampling variance `candidate_sampling_var`) against the series described by `e`.
#[must_use]
pub fn shift(e: &Estimate, candidate: f64, candidate_sampling_var: f64) -> Shift {
    shift_with_common_factor(e, candidate, candidate_sampling_var, 0.0)
}

/// [`shift`], when `common_var` of the series' night-to-night variance is the night's common factor, which is
/// heavy-tailed ([`COMMON_FACTOR_DOF`]) where the rest is not: tonight's sampling is counted, and an
/// endpoint's own wobble is its own. The distance is read on a t whose degrees of freedom carry both
/// uncertainties: a t is a normal whose precision is uncertain by 2/d, and independent uncertainties add, the
/// factor's weighted by the square of its share w of tonight's variance (1/d = 1/dof + w²/ν). So a night that
/// moved every endpoint together must go further to count than one endpoint's move of the same size, measured
/// where the factor is a small part of the noise.
#[must_use]
pub fn shift_with_common_factor(e: &Estimate, candidate: f64, candidate_sampling_var: f64, common_var: f64) -> Shift {
    let tonight_var = e.night_var + candidate_sampling_var.max(e.sampling_var);
    let dof = dof_with_common_factor(e, tonight_var, common_var);
    let (z, forecast, se, baselines) = distance(e, candidate, tonight_var);
    let t = students_t(dof);
    Shift { z, dof, p_worse: t.sf(z), p_better: t.cdf(z), forecast, se, baselines }
}

/// The chance that the night-to-night noise alone puts `candidate` this far above the level, as if tonight
/// were measured exactly (no sampling noise at all): what a test that reads tonight's sampling exactly, the
/// share of slow requests, must also find unlikely before a merely slow night counts against the build. The
/// `common_var` part of that noise is read on the common factor's heavy tail, as the level test reads it: a
/// whole night slower than usual moves a tail's share as surely as its percentile.
#[must_use]
pub fn p_worse_by_night_noise(e: &Estimate, candidate: f64, common_var: f64) -> f64 {
    let (z, ..) = distance(e, candidate, e.night_var);
    students_t(dof_with_common_factor(e, e.night_var, common_var)).sf(z)
}

/// The degrees of freedom of a distance whose variance is `tonight_var`, `common_var` of it the common factor
/// (see [`shift_with_common_factor`]).
fn dof_with_common_factor(e: &Estimate, tonight_var: f64, common_var: f64) -> f64 {
    let share = (common_var / tonight_var).clamp(0.0, 1.0);
    1.0 / (1.0 / e.dof + share * share / COMMON_FACTOR_DOF)
}

/// Tonight's standardised distance from the level when tonight varies by `tonight_var`, with the forecast,
/// the spread and the levels it was measured from (see [`Shift`]).
fn distance(e: &Estimate, candidate: f64, tonight_var: f64) -> (f64, f64, f64, Vec<f64>) {
    let sigma = e.sigma;
    // Tomorrow's expected value given tonight's residual (AR(1)); with an unsettled tail there is no settled
    // last night to carry over.
    let residual = if e.tail.is_some() { 0.0 } else { (e.last - e.level).clamp(-2.0 * sigma, 2.0 * sigma) };
    let forecast = e.level + e.phi * residual;
    let level_var = sigma * sigma * (1.0 + e.phi) / ((1.0 - e.phi) * e.level_weight);
    let se = (tonight_var * (1.0 - e.phi * e.phi) + level_var).sqrt();
    let mut z = (candidate - forecast) / se;
    let mut baselines = vec![forecast];
    if let Some((tail_median, tail_nights)) = e.tail {
        let tail_z = (candidate - tail_median)
            / (tonight_var + sigma * sigma * MEDIAN_VARIANCE_FACTOR / tail_nights as f64).sqrt();
        z = if z >= 0.0 { z.min(tail_z) } else { z.max(tail_z) };
        baselines.push(tail_median);
    }
    (z, forecast, se, baselines)
}

/// The `q` quantile of Student's t with `dof` degrees of freedom.
#[must_use]
pub fn t_quantile(q: f64, dof: f64) -> f64 {
    students_t(dof).inverse_cdf(q.clamp(1e-15, 1.0 - 1e-15))
}

fn students_t(dof: f64) -> StudentsT {
    StudentsT::new(0.0, 1.0, dof.max(0.5)).expect("a positive scale and degrees of freedom")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::level::estimate;

    #[test]
    fn sampling_noise_widens_the_test() {
        let history = [1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 1.01, 0.99, 1.0, 1.02];
        let quiet = estimate(&history, &[0.0; 10], 0.02, None);
        let sampled = estimate(&history, &[0.05f64.powi(2); 10], 0.02, None);
        let precise = shift(&quiet, 1.2, 0.0);
        let uncertain = shift(&sampled, 1.2, 0.05f64.powi(2));
        assert!(precise.p_worse < 1e-4, "{precise:?}");
        assert!(uncertain.p_worse > precise.p_worse * 100.0, "{uncertain:?}");
        assert!((t_quantile(0.99, 1e6) - 2.326).abs() < 0.001);
    }

    #[test]
    fn the_night_noise_alone_reads_the_common_factor_on_its_heavy_tail() {
        let history: Vec<f64> = (0..30).map(|i| [1.0, 1.03, 0.97, 1.01, 0.99][i % 5]).collect();
        let e = estimate(&history, &[0.0; 30], 0.02, None);
        let far = 1.0 + 5.0 * e.sigma;
        let own = p_worse_by_night_noise(&e, far, 0.0);
        let shared = p_worse_by_night_noise(&e, far, e.night_var);
        assert!(shared > own * 5.0, "a whole night this slow is likelier than one endpoint alone: {own} {shared}");
        let level_test = shift_with_common_factor(&e, far, 0.0, e.night_var);
        assert!((shared - level_test.p_worse).abs() < shared * 0.01, "as the level test reads it: {level_test:?}");
    }

    #[test]
    fn a_spike_then_a_usual_night_are_no_new_level_to_measure_tonight_from() {
        // Twelve steady nights, ten drifting up 3 % a night, then a night twice as slow and one back on the line:
        // each of the last two is a segment of its own, and the median of the pair (+48 % over the last drifting
        // night) is neither's level. Tonight, 34 % above the line, is measured from the line (dev-s02513).
        let wobble = [0.01, -0.01, 0.005, -0.005, 0.0, 0.01, -0.01, 0.008, -0.004, 0.002];
        let mut y: Vec<f64> = (0..12).map(|i| wobble[i % 10]).collect();
        y.extend((0..10).map(|i| 0.03 * (i + 1) as f64 + wobble[(i + 3) % 10]));
        let top = y[y.len() - 1];
        y.extend([top + 2f64.ln(), top + 1.1f64.ln()]);
        let e = estimate(&y, &vec![0.0; y.len()], 0.02, None);
        assert_eq!(e.tail, None, "{e:?}");
        let tonight = shift(&e, e.level + 1.34f64.ln(), 0.0);
        assert!(tonight.z > 5.0, "{tonight:?} {e:?}");
    }
}
