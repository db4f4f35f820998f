//! A slow drift: whether the nights of one settled level move along a line rather than sit around one value,
//! and by how much a night. Used by `level`, which then measures the level where the line stands tonight.
//!
//! A slow drift (a table that grows, a cache that fills) is a change of level the history shows, not noise to
//! forgive and not a step to flag each night. Without a model of it, the level is the mean of nights that lie
//! behind the drift, and tonight is as many nights of drift above it as half the level's length: on
//! `dev-runs.jsonl`, unchanged scenarios whose history drifts up came within a factor of 5 of the run's
//! threshold ten times as often as a calibrated test allows (10.8 % of them at a Bonferroni-adjusted 5 %).
//!
//! The line is chosen, not assumed: it must describe the nights better than one value by more than the
//! Schwarz (Bayesian information) criterion charges for one more parameter, ln n, in the same clipped cost the
//! segmentation uses (a night's squared standardised residual counts at most 3², so one wild night neither
//! makes nor breaks a line). The slope is Theil and Sen's (the median of the slopes between every two nights),
//! which a few outlier nights do not tilt. Whoever extrapolates it pays for it: the level tonight is uncertain
//! by the slope's error times the distance from the nights it was measured on (see `Estimate::level_weight`).

/// A line needs at least this many nights: twice the nights of a settled level, so that what the segmentation
/// could not yet tell from two levels of three nights each is never read as a slope.
pub(super) const MIN_TREND_NIGHTS: usize = 6;

/// The slope per night of `y` (one value per night, in order), when a line describes the nights better than one
/// value by the Schwarz criterion; `None` otherwise. `scale` is each night's noise scale, `clip` the most one
/// night's squared standardised residual may count.
pub(super) fn drift(y: &[f64], scale: &[f64], clip: f64) -> Option<f64> {
    let n = y.len();
    if n < MIN_TREND_NIGHTS {
        return None;
    }
    let cost =
        |residual: &dyn Fn(usize) -> f64| -> f64 { (0..n).map(|i| (residual(i) / scale[i]).powi(2).min(clip)).sum() };
    let center = median(y.to_vec());
    let flat = cost(&|i| y[i] - center);
    let slope = median(
        (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j))).map(|(i, j)| (y[j] - y[i]) / (j - i) as f64).collect(),
    );
    let intercept = median((0..n).map(|i| y[i] - slope * i as f64).collect());
    let line = cost(&|i| y[i] - slope * i as f64 - intercept);
    (line + (n as f64).ln() < flat && slope != 0.0).then_some(slope)
}

/// Running sums of a least-squares line over a segment that grows one night at a time (the segmentation
/// reads every segment as a level and as a line, so a drift cut into short levels is seen as the one line it
/// is).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct LineSums {
    n: f64,
    sx: f64,
    sy: f64,
    sxx: f64,
    sxy: f64,
}

impl LineSums {
    /// Adds the night at position `x` with value `y`.
    pub fn add(&mut self, x: f64, y: f64) {
        self.n += 1.0;
        self.sx += x;
        self.sy += y;
        self.sxx += x * x;
        self.sxy += x * y;
    }

    /// The clipped cost of the nights `y` (at positions `first..`, the nights added) read as their
    /// least-squares line, plus the Schwarz criterion's ln n for the slope; `None` under [`MIN_TREND_NIGHTS`].
    pub fn cost(&self, y: &[f64], first: usize, scale: &[f64], clip: f64) -> Option<f64> {
        let det = self.n * self.sxx - self.sx * self.sx;
        if y.len() < MIN_TREND_NIGHTS || det <= 0.0 {
            return None;
        }
        let slope = (self.n * self.sxy - self.sx * self.sy) / det;
        let intercept = (self.sy - slope * self.sx) / self.n;
        let residual = |(i, v): (usize, &f64)| v - intercept - slope * (first + i) as f64;
        let cost: f64 = y.iter().enumerate().map(|p| (residual(p) / scale[p.0]).powi(2).min(clip)).sum();
        Some(cost + self.n.ln())
    }
}

/// Σ (x − x̄)² over the positions `0..n`: how well `n` nights pin a slope down (its variance is σ² over it).
pub(super) fn spread_of_positions(n: usize) -> f64 {
    let n = n as f64;
    n * (n * n - 1.0) / 12.0
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 { values[n / 2] } else { 0.5 * (values[n / 2 - 1] + values[n / 2]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_drift_is_a_line_and_noise_around_one_level_is_not() {
        let wobble = [0.01, -0.02, 0.015, -0.005, 0.02, -0.015, 0.0, 0.01, -0.01, 0.005, -0.02, 0.015];
        let drifting: Vec<f64> = wobble.iter().enumerate().map(|(i, w)| 0.03 * i as f64 + w).collect();
        let scale = [0.02; 12];
        let slope = drift(&drifting, &scale, 9.0).expect("3 % a night for 12 nights is a drift");
        assert!((slope - 0.03).abs() < 0.005, "{slope}");
        assert_eq!(drift(&wobble, &scale, 9.0), None);
    }

    #[test]
    fn one_wild_night_makes_no_line() {
        let mut y = [0.01, -0.02, 0.015, -0.005, 0.02, -0.015, 0.0, 0.01, -0.01, 0.005];
        y[9] = 0.6;
        assert_eq!(drift(&y, &[0.02; 10], 9.0), None);
    }

    #[test]
    fn five_nights_are_too_few_for_a_line() {
        assert_eq!(drift(&[0.0, 0.1, 0.2, 0.3, 0.4], &[0.02; 5], 9.0), None);
        assert!((spread_of_positions(3) - 2.0).abs() < 1e-12);
    }
}
