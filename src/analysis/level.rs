//! Where a nightly series stands now, and how noisy it is: change points, the current level, the noise
//! around it and its night-to-night autocorrelation. Pure statistics on one series, used by the detector.
//!
//! The series is already on the detector's scale (log for latency and throughput, linear for error rates)
//! and oriented so that larger is worse. Each night may carry its own sampling variance (a p99 of a few
//! hundred requests is uncertain in itself); the noise is split into that sampling part and the
//! night-to-night part, and never falls below what sampling alone explains. Robustness comes from three
//! choices: the segmentation cost is clipped, so one wild night never becomes a level of its own; noise is
//! measured inside settled segments only, so a past step change is a new level rather than noise; and nights
//! far from their segment are left out of the level (the noise still never falls below the robust spread of
//! all nights). A current level whose nights follow a line (a slow drift, see `trend`) is measured where the line
//! stands tonight, with the slope's error in the level's uncertainty.

use super::trend;

/// Converts a median absolute deviation into a normal standard deviation.
const MAD_TO_SIGMA: f64 = 1.4826;
/// A night's squared standardised residual counts at most this much (3²) towards a segment's cost.
const CLIP_SQUARED: f64 = 9.0;
/// The cost of one change point. Above [`CLIP_SQUARED`], so a lone spike never pays for its own segment.
const CHANGE_POINT_PENALTY: f64 = 10.0;
/// A segment of at least this many nights is an established level.
pub const MIN_SETTLED: usize = 3;
/// At least this many nights after the last settled segment, agreeing (in one segment), form an unsettled new
/// level worth comparing with.
const TAIL_MIN: usize = 2;
/// The level is the mean of at most this many recent nights of the last settled segment.
const LEVEL_WINDOW: usize = 28;
/// Nights further than this many sigmas from their segment are outliers.
pub(super) const REJECT_SIGMAS: f64 = 5.0;
/// Cap on the lag-1 autocorrelation, so a drifting series cannot shrink the level's uncertainty to nothing.
const PHI_MAX: f64 = 0.8;

/// What [`estimate`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// The current level: mean of the recent inlier nights of the last settled segment.
    pub level: f64,
    /// How many nights the level is the mean of.
    pub level_nights: usize,
    /// How many nights' worth of evidence the level is: `level_nights`, or fewer when it is a drifting line
    /// extrapolated to tonight (the slope's own error grows with the distance).
    pub level_weight: f64,
    /// The drift of the current level per night, on the series' scale (0 when its nights follow no line).
    pub drift: f64,
    /// Night-to-night variance beyond sampling (after the prior, at least the floor squared).
    pub night_var: f64,
    /// Night-to-night variance beyond sampling, from this series alone (no prior, no floor).
    pub own_night_var: f64,
    /// A typical history night's sampling variance (their median).
    pub sampling_var: f64,
    /// The total noise of one night: √(night_var + sampling_var).
    pub sigma: f64,
    /// Degrees of freedom behind the noise (the prior's included).
    pub dof: f64,
    /// Lag-1 autocorrelation of the residuals, in `[0, PHI_MAX]`.
    pub phi: f64,
    /// The last night of the series.
    pub last: f64,
    /// The unsettled new level after the last settled segment, when some of its nights agree (see
    /// `unsettled_tail`): the median and count of its nights.
    pub tail: Option<(f64, usize)>,
    /// Where the last settled segment starts: the nights from here on are those at the current level (and
    /// any unsettled tail after it); earlier nights measured a level the series has left.
    pub current_from: usize,
    /// How many segments the series split into.
    pub segments: usize,
    /// The nights left out of the level's mean as outliers: their distance from their segment's median. They
    /// still count as evidence of a heavy tail: with one left out, the noise never falls below the robust
    /// scale of all nights (see `noise`).
    pub outliers: Vec<f64>,
    /// How many nights the noise was measured on, outliers included.
    pub noise_nights: usize,
    /// Residuals of the settled segments' nights from their segment's median, for the autocorrelation.
    residuals: Vec<Vec<f64>>,
    /// Degrees of freedom from the series' own nights.
    own_dof: f64,
}

/// A weak prior on the night-to-night noise: `sigma` with the weight of `nights` nights.
#[derive(Debug, Clone, Copy)]
pub struct Prior {
    /// The typical noise.
    pub sigma: f64,
    /// How many nights of evidence the prior is worth.
    pub nights: f64,
}

/// Estimates the current level and noise of `y` (at least 2 values), each night with its sampling variance
/// (`sampling_var`, same length, zeros when unknown). `floor` is the smallest night-to-night noise believed.
#[must_use]
pub fn estimate(y: &[f64], sampling_var: &[f64], floor: f64, prior: Option<Prior>) -> Estimate {
    let count = y.len();
    let scale = segmentation_scale(y, floor);
    let night_scale: Vec<f64> = sampling_var.iter().map(|v| scale.max(v.sqrt())).collect();
    let segments = segment(y, &night_scale);
    let (settled, tail_from) = levels(y, &night_scale, &segments);
    let (a, b) = *settled.last().expect("at least one settled segment");
    let (detrended, drift) = detrend(y, (a, b), tail_from, &night_scale);
    let y = &detrended[..];
    let medians: Vec<f64> = settled.iter().map(|&(a, b)| median(&y[a..b])).collect();
    let Noise { var: observed_var, dof, outliers } = noise(y, &settled, &medians, floor);
    let noise_nights = settled.iter().map(|(a, b)| b - a).sum();
    // A typical night's sampling, not the mean: one odd night (a bimodal p50 whose interval spans 1 to 41 ms)
    // would otherwise be every night's sampling noise, and a +54 % change read as 1.7 sigma (a trial).
    let sampling = median(sampling_var);
    let own = (observed_var - sampling).max(0.0);
    let residuals = settled.iter().zip(&medians).map(|(&(a, b), m)| y[a..b].iter().map(|v| v - m).collect()).collect();
    // The slope was measured on the same nights: one degree of freedom fewer for the noise.
    let dof = if drift == 0.0 { dof } else { (dof - 1.0).max(1.0) };
    let mut e = Estimate {
        level: 0.0,
        level_nights: 0,
        level_weight: 0.0,
        drift,
        night_var: own,
        own_night_var: own,
        sampling_var: sampling,
        sigma: 0.0,
        dof,
        phi: 0.0,
        last: y[count - 1],
        tail: tail_from.map(|t| (median(&y[t..]), count - t)),
        current_from: a,
        segments: segments.len(),
        outliers,
        noise_nights,
        residuals,
        own_dof: dof,
    };
    e.settle(prior, floor);
    let window = &y[a.max(b.saturating_sub(LEVEL_WINDOW))..b];
    let window_median = median(window);
    let mut inliers: Vec<f64> =
        window.iter().copied().filter(|v| (v - window_median).abs() <= REJECT_SIGMAS * e.sigma).collect();
    if inliers.is_empty() {
        inliers = window.to_vec();
    }
    e.level = mean(&inliers);
    e.level_nights = inliers.len();
    e.level_weight = inliers.len() as f64;
    if drift != 0.0 {
        // The level tonight is the line extrapolated from the window's middle: the slope's error, σ²/Σ(x − x̄)²
        // over the segment's nights, times the squared distance adds to the mean's σ²/n.
        let distance = count as f64 - 0.5 * (a.max(b.saturating_sub(LEVEL_WINDOW)) + b - 1) as f64;
        e.level_weight = 1.0 / (1.0 / e.level_weight + distance * distance / trend::spread_of_positions(b - a));
    }
    e
}

/// The settled levels of `segments` (at least one) and where the unsettled new level starts, if the series
/// ends in one. A new level holds only since the last night that was back at the level before it: the
/// segmentation may read slow, usual, slow as one level with an outlier (a usual night costs no more than a
/// change point), but that usual night says the step did not hold. So a last settled level with such a night
/// less than [`MIN_SETTLED`] nights before its end is not settled yet: the level before it is the current
/// one, and the nights after the return are an unsettled new level if there are [`TAIL_MIN`] of them.
fn levels(y: &[f64], scale: &[f64], segments: &[(usize, usize)]) -> (Vec<(usize, usize)>, Option<usize>) {
    let count = y.len();
    let mut settled: Vec<(usize, usize)> = segments.iter().copied().filter(|(a, b)| b - a >= MIN_SETTLED).collect();
    if settled.is_empty() {
        return unsettled_levels(y, scale, segments);
    }
    let mut tail_from = unsettled_tail(segments, settled[settled.len() - 1].1);
    if let [.., before, last] = settled[..]
        && let Some(back) = last_return(y, scale, before, last)
        && last.1 - back < MIN_SETTLED
    {
        settled.pop();
        tail_from = (count - back >= TAIL_MIN).then_some(back);
    }
    (settled, tail_from)
}

/// The levels of a series none of whose segments held [`MIN_SETTLED`] nights (nights that wander in pairs
/// on a busy machine): its nights are read as one level, except an unsettled new level after at least
/// [`MIN_SETTLED`] others (found as `unsettled_tail` finds one) whose median is a step away from theirs, beyond
/// anything their own wandering reaches (as `last_return` tells a step from a drift). Averaged in, a new level
/// two nights old was left out of the level as outliers, and its third night read as a regression against a
/// level it had left; a pair of nights that only wandered stays part of the one level.
fn unsettled_levels(y: &[f64], scale: &[f64], segments: &[(usize, usize)]) -> (Vec<(usize, usize)>, Option<usize>) {
    let count = y.len();
    let whole = (vec![(0, count)], None);
    let Some(start) = unsettled_tail(segments, MIN_SETTLED) else { return whole };
    let (before, after) = (median(&y[..start]), median(&y[start..]));
    // How far the nights before wander around their median (a robust standard deviation), at least the
    // segmentation's scale.
    let deviations: Vec<f64> = y[..start].iter().map(|v| (v - before).abs()).collect();
    let spread = (MAD_TO_SIGMA * median(&deviations)).max(scale[start..].iter().copied().fold(0.0, f64::max));
    if spread > 0.0 && ((after - before) / spread).powi(2) > 4.0 * CLIP_SQUARED {
        (vec![(0, start)], Some(start))
    } else {
        whole
    }
}

/// The night after the last of `new`'s nights that was back at level `old` (within the segmentation's clip of
/// its median) and away from `new`'s median, if one was.
fn last_return(y: &[f64], scale: &[f64], old: (usize, usize), new: (usize, usize)) -> Option<usize> {
    if old.0 >= old.1 || new.0 >= new.1 {
        return None;
    }
    let (old_median, new_median) = (median(&y[old.0..old.1]), median(&y[new.0..new.1]));
    let near = |i: usize, m: f64| ((y[i] - m) / scale[i]).powi(2) <= CLIP_SQUARED;
    // Only between levels a step apart, whose nights cannot be near both: not along a drift.
    let apart = |i: usize| ((new_median - old_median) / scale[i]).powi(2) > 4.0 * CLIP_SQUARED;
    (new.0..new.1).rev().find(|&i| apart(i) && near(i, old_median) && !near(i, new_median)).map(|i| i + 1)
}

/// Where the unsettled new level starts, if the series ends in one: at the last segment after the last settled
/// one (which ends at `settled_end`) whose nights agree with each other, at least [`TAIL_MIN`] of them in one
/// segment; a lone night after it stays in the new level, whose median it cannot move far. Nights that are each
/// a segment of their own (a spike, then a usual night) are lone nights, not a level: the median of such a pair
/// is neither's level.
fn unsettled_tail(segments: &[(usize, usize)], settled_end: usize) -> Option<usize> {
    segments
        .iter()
        .rev()
        .find(|&&(start, end)| start >= settled_end && end - start >= TAIL_MIN)
        .map(|&(start, _)| start)
}

/// `y` with the drift of its last settled segment `(a, b)` taken out, when its nights follow a line (see
/// `trend`), and the drift per night (0 without). Each night of the segment, and the nights after it up to the
/// unsettled new level starting at `tail_from` (if any), is moved to where the line stands tonight (one night
/// after the series), so the level measured on them is tonight's expected value.
fn detrend(y: &[f64], (a, b): (usize, usize), tail_from: Option<usize>, night_scale: &[f64]) -> (Vec<f64>, f64) {
    let count = y.len();
    let Some(slope) = trend::drift(&y[a..b], &night_scale[a..b], CLIP_SQUARED) else { return (y.to_vec(), 0.0) };
    let end = tail_from.unwrap_or(count);
    let moved = y
        .iter()
        .enumerate()
        .map(|(i, v)| if (a..end).contains(&i) { v + slope * (count - i) as f64 } else { *v })
        .collect();
    (moved, slope)
}

impl Estimate {
    /// The same estimate with `prior` on its night-to-night noise instead of the one it was made with.
    #[must_use]
    pub fn with_prior(&self, prior: Prior, floor: f64) -> Self {
        let mut e = self.clone();
        e.night_var = e.own_night_var;
        e.dof = self.own_dof;
        e.settle(Some(prior), floor);
        e
    }

    /// Applies the prior and the floor to the night-to-night noise, then sets sigma and the autocorrelation.
    fn settle(&mut self, prior: Option<Prior>, floor: f64) {
        if let Some(prior) = prior {
            self.night_var =
                (self.dof * self.night_var + prior.nights * prior.sigma.powi(2)) / (self.dof + prior.nights);
            self.dof += prior.nights;
        }
        self.night_var = self.night_var.max(floor * floor);
        self.sigma = (self.night_var + self.sampling_var).sqrt();
        self.phi = autocorrelation(&self.residuals, self.sigma);
    }
}

/// A noise scale that ignores level shifts: the MAD of night-to-night differences, divided by √2.
fn segmentation_scale(y: &[f64], floor: f64) -> f64 {
    let diffs: Vec<f64> = y.windows(2).map(|w| w[1] - w[0]).collect();
    if diffs.is_empty() {
        return floor;
    }
    let center = median(&diffs);
    let deviations: Vec<f64> = diffs.iter().map(|d| (d - center).abs()).collect();
    (MAD_TO_SIGMA * median(&deviations) / std::f64::consts::SQRT_2).max(floor)
}

/// Optimal partitioning of `y` into segments `[a, b)`: minimises the clipped squared residuals around each
/// segment's median, or around its least-squares line at ln n more (see `trend`), plus
/// [`CHANGE_POINT_PENALTY`] per change point (dynamic programming; ties go to the earliest start).
fn segment(y: &[f64], scale: &[f64]) -> Vec<(usize, usize)> {
    let n = y.len();
    let mut best = vec![f64::INFINITY; n + 1];
    let mut start = vec![0; n + 1];
    best[0] = 0.0;
    let mut sorted = Vec::with_capacity(n);
    for j in 1..=n {
        // Grow the segment [i, j) leftwards, keeping its values sorted so each median is a lookup.
        sorted.clear();
        let mut line = trend::LineSums::default();
        let mut costs = vec![0.0; j];
        for i in (0..j).rev() {
            let position = sorted.partition_point(|v: &f64| *v < y[i]);
            sorted.insert(position, y[i]);
            line.add(i as f64, y[i]);
            let m = median_of_sorted(&sorted);
            let flat: f64 =
                y[i..j].iter().zip(&scale[i..j]).map(|(v, s)| ((v - m) / s).powi(2).min(CLIP_SQUARED)).sum();
            // A segment may also be a line (a slow drift), at the Schwarz criterion's price for its slope.
            costs[i] = line.cost(&y[i..j], i, &scale[i..j], CLIP_SQUARED).map_or(flat, |l| l.min(flat));
        }
        for i in 0..j {
            let penalty = if i > 0 { CHANGE_POINT_PENALTY } else { 0.0 };
            let cost = best[i] + costs[i] + penalty;
            if cost < best[j] {
                best[j] = cost;
                start[j] = i;
            }
        }
    }
    let mut segments = Vec::new();
    let mut end = n;
    while end > 0 {
        segments.push((start[end], end));
        end = start[end];
    }
    segments.reverse();
    segments
}

/// The noise inside the settled segments.
struct Noise {
    /// Variance of the inlier nights around their segment's mean.
    var: f64,
    /// Its degrees of freedom.
    dof: f64,
    /// The nights left out, as distances from their segment's median.
    outliers: Vec<f64>,
}

/// Noise inside the settled segments, leaving out nights far from their segment.
fn noise(y: &[f64], settled: &[(usize, usize)], medians: &[f64], floor: f64) -> Noise {
    let deviations: Vec<f64> =
        settled.iter().zip(medians).flat_map(|(&(a, b), m)| y[a..b].iter().map(move |v| (v - m).abs())).collect();
    let first_guess = (MAD_TO_SIGMA * median(&deviations)).max(floor);
    let (mut squares, mut count) = (0.0, 0.0);
    let mut outliers = Vec::new();
    for (&(a, b), m) in settled.iter().zip(medians) {
        outliers.extend(y[a..b].iter().map(|v| v - m).filter(|d| d.abs() > REJECT_SIGMAS * first_guess));
        let mut inliers: Vec<f64> =
            y[a..b].iter().copied().filter(|v| (v - m).abs() <= REJECT_SIGMAS * first_guess).collect();
        if inliers.is_empty() {
            inliers = y[a..b].to_vec();
        }
        let mu = mean(&inliers);
        squares += inliers.iter().map(|v| (v - mu).powi(2)).sum::<f64>();
        count += inliers.len() as f64 - 1.0;
    }
    let dof = count.max(1.0);
    // With a night left out, the inliers' spread never falls below the robust scale of all nights: an
    // outlier night is left out of the mean, not out of the evidence of how far nights wander.
    let var = if outliers.is_empty() { squares / dof } else { (squares / dof).max(first_guess * first_guess) };
    Noise { var, dof, outliers }
}

/// Lag-1 autocorrelation of the (winsorised) residuals within each settled segment.
fn autocorrelation(residuals: &[Vec<f64>], sigma: f64) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for segment in residuals {
        let w: Vec<f64> = segment.iter().map(|v| v.clamp(-2.0 * sigma, 2.0 * sigma)).collect();
        num += w.windows(2).map(|p| p[0] * p[1]).sum::<f64>();
        den += w.iter().map(|v| v * v).sum::<f64>();
    }
    if den > 0.0 { (num / den).clamp(0.0, PHI_MAX) } else { 0.0 }
}

/// The median; the mean of the two middle values for an even count. `values` must not be empty.
#[must_use]
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    median_of_sorted(&sorted)
}

fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 { sorted[n / 2] } else { 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]) }
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() { 0.0 } else { values.iter().sum::<f64>() / values.len() as f64 }
}

#[cfg(test)]
#[path = "level_tests.rs"]
mod tests;
