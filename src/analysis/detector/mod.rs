//! The regression detector: is tonight's value of one metric worse than its nightly history, by more than
//! the night-to-night noise and by at least the minimum effect? Pure: a series in, an answer out.
//!
//! Latency and throughput are judged on the log scale, where noise is proportional to the level and a 10 % change
//! is the same distance everywhere. Error rates are judged on the log scale of the rate plus the smallest rise
//! worth an alert (0.1 percentage points): a flaky endpoint's failures come in bursts and vary by a factor from
//! night to night (as `counts` finds for the run judge), so a rate of 0.2 % on one night and 0.45 % on the next
//! is its usual wobble, while the offset keeps a clean endpoint's zeros on the scale (its first 0.1 pp of
//! failures is a factor of two there, and the floor of +0.1 pp still decides what a blip is). The current
//! level and noise come from [`super::level::estimate`]. A regression must pass three tests: significance (a
//! one-sided test at 1 % false alarms, widened for the uncertainty of the level and of the noise estimate itself,
//! and for autocorrelated nights), effect size (at least `min_effect_pct` worse than tonight's forecast of the
//! level, and than an unsettled new level if the last nights moved), and for error rates an absolute floor of +0.1
//! percentage points, so 0.001 % blips never page anyone.

use serde::Deserialize;

use super::level::{Estimate, Prior, estimate};
use super::shift::{Shift, shift};

mod band;

pub use band::{Band, band};

/// The false-alarm probability of one series' test, per night.
const ALPHA: f64 = 0.01;
/// Log-scale noise below 2 % is not believed: no real service is that steady night to night.
pub(crate) const LOG_SIGMA_FLOOR: f64 = 0.02;
/// A weak prior on log-scale noise (10 %, worth one night), so three quiet nights do not make a hair trigger.
pub(crate) const LOG_PRIOR: Prior = Prior { sigma: 0.10, nights: 1.0 };
/// Error rates: the smallest rise, in percentage points, worth an alert; also the offset of their log scale.
pub(crate) const ERROR_MIN_RISE: f64 = 0.10;
/// Only the most recent nights are analysed: older ones say little about the current level, and the
/// change-point search grows with the cube of the history length.
pub const MAX_HISTORY: usize = 120;

/// Which way a metric gets worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Latency, error rate.
    HigherIsWorse,
    /// Throughput.
    LowerIsWorse,
}

/// What kind of figure a series holds; error rates follow their own rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesKind {
    /// Response times (any percentile).
    Latency,
    /// Requests per second.
    Throughput,
    /// Failed requests, in percent; mostly zero.
    ErrorRate,
}

/// One series to judge.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone)]
pub struct Question<'a> {
    /// Earlier nights, oldest first.
    pub history: &'a [f64],
    pub candidate: f64,
    /// Which way is worse.
    pub direction: Direction,
    /// What the figures are.
    pub kind: SeriesKind,
    /// The smallest change that counts, in percent.
    pub min_effect_pct: f64,
    /// Fewer history nights than this: inconclusive.
    pub min_runs: usize,
}

/// The detector's conclusion about a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Worse, significantly and by at least the minimum effect.
    Regression,
    /// Better, significantly and by at least the minimum effect.
    Improvement,
    /// Within the noise, or smaller than the minimum effect.
    NoChange,
    /// Too little history to tell.
    Inconclusive,
}

/// The answer, with the numbers behind it.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub change: Change,
    /// The current level, in the series' units.
    pub baseline: Option<f64>,
    /// Tonight's change from the level, percent.
    pub delta_pct: Option<f64>,
    /// The value tonight would have had to pass to be a regression, in the series' units.
    pub limit: Option<f64>,
    /// Why, in words.
    pub reason: String,
}

impl Answer {
    fn inconclusive(reason: String) -> Self {
        Self { change: Change::Inconclusive, baseline: None, delta_pct: None, limit: None, reason }
    }
}

/// The scale a series is judged on, `sign · ln(value + offset)`: larger is always worse there.
struct Scale {
    sign: f64,
    /// 0, or [`ERROR_MIN_RISE`] for error rates (see the module's text).
    offset: f64,
}

impl Scale {
    fn to_scale(&self, value: f64) -> f64 {
        self.sign * (value + self.offset).ln()
    }

    fn to_raw(&self, u: f64) -> f64 {
        (self.sign * u).exp() - self.offset
    }
}

/// Judges one series.
#[must_use]
pub fn detect(question: &Question<'_>) -> Answer {
    let Question { history, candidate, direction, kind, min_effect_pct, min_runs } = *question;
    let min_runs = min_runs.max(2);
    if history.len() < min_runs {
        return Answer::inconclusive(format!(
            "inconclusive: {} night{} of history, at least {min_runs} needed",
            history.len(),
            if history.len() == 1 { "" } else { "s" }
        ));
    }
    let history = &history[history.len().saturating_sub(MAX_HISTORY)..];
    if direction == Direction::LowerIsWorse && candidate <= 0.0 && history.iter().any(|v| *v > 0.0) {
        // Throughput fell to nothing: the worst regression there is, and one the log scale cannot express.
        return Answer {
            change: Change::Regression,
            baseline: Some(super::level::median(history)),
            delta_pct: Some(-100.0),
            limit: None,
            reason: "dropped to zero".to_owned(),
        };
    }
    if !history.iter().chain([&candidate]).all(|v| judgeable(*v, kind)) {
        return Answer::inconclusive(
            "inconclusive: the series holds values that are zero, negative or not numbers".into(),
        );
    }
    let (e, scale) = level_on_scale(history, direction, kind);
    decide(&e, candidate, &scale, kind, min_effect_pct / 100.0)
}

/// Whether the detector's scale holds `value`: a positive figure, or an error rate of at least zero.
fn judgeable(value: f64, kind: SeriesKind) -> bool {
    value.is_finite() && if kind == SeriesKind::ErrorRate { value >= 0.0 } else { value > 0.0 }
}

/// The level and noise of a history of valid values, on the scale the series is judged on.
fn level_on_scale(history: &[f64], direction: Direction, kind: SeriesKind) -> (Estimate, Scale) {
    let is_error_rate = kind == SeriesKind::ErrorRate;
    let sign = if direction == Direction::LowerIsWorse { -1.0 } else { 1.0 };
    let scale = Scale { sign, offset: if is_error_rate { ERROR_MIN_RISE } else { 0.0 } };
    let y: Vec<f64> = history.iter().map(|v| scale.to_scale(*v)).collect();
    // Error rates have no prior: most are a clean endpoint's zeros, whose noise is the floor.
    let prior = (!is_error_rate).then_some(LOG_PRIOR);
    (estimate(&y, &vec![0.0; y.len()], LOG_SIGMA_FLOOR, prior), scale)
}

fn decide(e: &Estimate, candidate: f64, scale: &Scale, kind: SeriesKind, min_effect: f64) -> Answer {
    let tonight = shift(e, scale.to_scale(candidate), 0.0);
    let Shift { z, forecast, se, .. } = tonight;
    let k = tonight.threshold(ALPHA);
    // Worsening relative to each baseline, in raw units: positive = worse.
    let worsening: Vec<(f64, f64)> = tonight
        .baselines
        .iter()
        .map(|&u| {
            let base = scale.to_raw(u);
            let d = scale.sign * (candidate - base);
            let rel = if base.abs() > 0.0 {
                d / base.abs()
            } else if d > 0.0 {
                f64::INFINITY
            } else {
                0.0
            };
            (rel, d)
        })
        .collect();
    let rel_worse = worsening.iter().map(|w| w.0).fold(f64::INFINITY, f64::min);
    let rel_better = worsening.iter().map(|w| -w.0).fold(f64::INFINITY, f64::min);
    let rise = worsening.iter().map(|w| w.1).fold(f64::INFINITY, f64::min);
    let is_error_rate = kind == SeriesKind::ErrorRate;
    let floor_ok = !is_error_rate || rise >= ERROR_MIN_RISE;
    let change = if z >= k && rel_worse >= min_effect && floor_ok {
        Change::Regression
    } else if z <= -k && rel_better >= min_effect && !is_error_rate {
        Change::Improvement
    } else {
        Change::NoChange
    };
    let baseline = scale.to_raw(e.level);
    let limit = regression_limit(forecast, se * k, scale, min_effect, is_error_rate);
    Answer {
        change,
        baseline: Some(baseline),
        delta_pct: (baseline.abs() > 0.0).then(|| 100.0 * (candidate - baseline) / baseline.abs()),
        limit: Some(limit),
        reason: reason(e, z, k, min_effect, scale),
    }
}

/// The raw value beyond which tonight would be a regression (ignoring an unsettled tail): past both the
/// significance bound and the minimum effect.
fn regression_limit(forecast: f64, margin: f64, scale: &Scale, min_effect: f64, error_rate: bool) -> f64 {
    let significant = scale.to_raw(forecast + margin);
    // The minimum effect is measured from what tonight was expected to be, as the test is.
    let level = scale.to_raw(forecast);
    let effect = if scale.sign > 0.0 { level * (1.0 + min_effect) } else { level * (1.0 - min_effect) };
    let mut bounds = vec![significant, effect];
    if error_rate {
        bounds.push(level + ERROR_MIN_RISE);
    }
    let worst_first = |a: &f64, b: &f64| (scale.sign * a).total_cmp(&(scale.sign * b));
    bounds.into_iter().max_by(worst_first).expect("two bounds at least")
}

/// Why, in words; `z` is on the judging scale (positive is worse), so for throughput worse is *below*.
fn reason(e: &Estimate, z: f64, k: f64, min_effect: f64, scale: &Scale) -> String {
    let error_rate = scale.offset > 0.0;
    // An error rate's noise in percentage points at its level: a factor of e^σ on the rate plus the offset.
    let noise = if error_rate {
        format!("±{:.3} pp", e.sigma * (scale.to_raw(e.level) + scale.offset))
    } else {
        format!("±{:.1} %", 100.0 * e.sigma)
    };
    let side = if (z >= 0.0) == (scale.sign > 0.0) { "above" } else { "below" };
    let mut text = format!(
        "{:.1} sigma {side} the level of {} nights (noise {noise}); a regression needs {k:.1} sigma and {:.0} %",
        z.abs(),
        e.level_nights,
        100.0 * min_effect
    );
    if error_rate {
        text += &format!(" and +{ERROR_MIN_RISE} pp");
    }
    if let Some((_, nights)) = e.tail {
        text += &format!("; the last {nights} nights moved to a new level that is not settled yet");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten nights of about 100 with ±2 % noise.
    const STEADY: [f64; 10] = [100.0, 102.0, 98.0, 101.0, 99.0, 100.5, 97.5, 101.5, 99.5, 100.0];

    fn ask(history: &[f64], candidate: f64, direction: Direction, kind: SeriesKind) -> Answer {
        detect(&Question { history, candidate, direction, kind, min_effect_pct: 10.0, min_runs: 5 })
    }

    fn latency(history: &[f64], candidate: f64) -> Change {
        ask(history, candidate, Direction::HigherIsWorse, SeriesKind::Latency).change
    }

    #[test]
    fn table() {
        let with_outlier = [100.0, 102.0, 98.0, 101.0, 250.0, 100.5, 97.5, 101.5, 99.5, 100.0];
        let step_held = [100.0, 101.0, 99.0, 100.0, 102.0, 130.0, 131.0, 129.0, 130.5, 129.5, 130.0];
        let noisy = [100.0, 125.0, 80.0, 110.0, 90.0, 120.0, 85.0, 105.0, 95.0, 115.0];
        let cases: [(&str, &[f64], f64, Change); 9] = [
            ("a clear jump", &STEADY, 130.0, Change::Regression),
            ("a normal night", &STEADY, 102.5, Change::NoChange),
            ("significant but under the minimum effect", &STEADY, 107.0, Change::NoChange),
            ("an outlier night does not hide a jump", &with_outlier, 130.0, Change::Regression),
            ("an outlier night does not make noise of a normal night", &with_outlier, 101.0, Change::NoChange),
            ("a step that held is the new level", &step_held, 131.0, Change::NoChange),
            ("a jump over the new level after a step", &step_held, 175.0, Change::Regression),
            ("a clear improvement", &STEADY, 70.0, Change::Improvement),
            ("+20 % is within 25 % noise", &noisy, 120.0, Change::NoChange),
        ];
        for (name, history, candidate, expected) in cases {
            let answer = ask(history, candidate, Direction::HigherIsWorse, SeriesKind::Latency);
            assert_eq!(answer.change, expected, "{name}: {answer:?}");
        }
    }

    #[test]
    fn error_rates_jump_from_zero_but_blips_do_not_count() {
        let zeros = [0.0; 10];
        let rate = |candidate| ask(&zeros, candidate, Direction::HigherIsWorse, SeriesKind::ErrorRate);
        assert_eq!(rate(0.5).change, Change::Regression);
        assert_eq!(rate(0.001).change, Change::NoChange);
        assert_eq!(rate(0.0).change, Change::NoChange);
        let flaky = [0.2, 0.3, 0.25, 0.2, 0.35, 0.3, 0.22, 0.28, 0.3, 0.25];
        assert_eq!(ask(&flaky, 0.31, Direction::HigherIsWorse, SeriesKind::ErrorRate).change, Change::NoChange);
    }

    #[test]
    fn a_flaky_endpoint_s_rate_wobbles_by_a_factor() {
        // Six nights between 0.14 % and 0.30 %: one of 0.46 % is the kind of night such an endpoint has (it was
        // 3.8 sigma on a linear scale), while a clean endpoint's first half point of failures still pages.
        let flaky = [0.183, 0.244, 0.249, 0.136, 0.185, 0.298];
        let rate =
            |history: &[f64], candidate| ask(history, candidate, Direction::HigherIsWorse, SeriesKind::ErrorRate);
        let wobble = rate(&flaky, 0.456);
        assert_eq!(wobble.change, Change::NoChange, "{wobble:?}");
        assert!(wobble.reason.contains("(noise ±0.0"), "the noise in points at its level: {}", wobble.reason);
        assert_eq!(rate(&flaky, 1.5).change, Change::Regression);
        assert_eq!(rate(&[0.0; 6], 0.5).change, Change::Regression);
        let negative = rate(&[0.0, 0.0, -0.1, 0.0, 0.0], 0.5);
        assert_eq!(negative.change, Change::Inconclusive, "a negative rate is no rate");
        assert_eq!(negative.reason, "inconclusive: the series holds values that are zero, negative or not numbers");
    }

    #[test]
    fn throughput_is_worse_when_lower() {
        let throughput = |candidate| ask(&STEADY, candidate, Direction::LowerIsWorse, SeriesKind::Throughput);
        let drop = throughput(70.0);
        assert_eq!(drop.change, Change::Regression);
        assert!(drop.delta_pct.unwrap() < -25.0, "{drop:?}");
        assert!(drop.limit.unwrap() < drop.baseline.unwrap(), "the limit lies below the level: {drop:?}");
        assert!(drop.reason.contains(" sigma below the level"), "a drop lies below: {}", drop.reason);
        assert_eq!(throughput(130.0).change, Change::Improvement);
        assert_eq!(throughput(0.0).change, Change::Regression);
    }

    #[test]
    fn too_few_runs_are_inconclusive_never_a_guess() {
        let answer = ask(&STEADY[..4], 300.0, Direction::HigherIsWorse, SeriesKind::Latency);
        assert_eq!(answer.change, Change::Inconclusive);
        assert!(answer.reason.contains("4 nights of history, at least 5 needed"), "{}", answer.reason);
    }

    #[test]
    fn explains_itself_with_baseline_delta_and_limit() {
        let answer = ask(&STEADY, 130.0, Direction::HigherIsWorse, SeriesKind::Latency);
        let baseline = answer.baseline.unwrap();
        assert!((baseline - 100.0).abs() < 1.0, "{answer:?}");
        assert!((answer.delta_pct.unwrap() - 30.0).abs() < 1.5, "{answer:?}");
        let limit = answer.limit.unwrap();
        assert!(limit >= baseline * 1.1 && limit < 130.0, "{answer:?}");
        assert_eq!(
            answer.reason,
            "7.3 sigma above the level of 10 nights (noise ±3.4 %); a regression needs 2.8 sigma and 10 %"
        );
        assert_eq!(latency(&STEADY, limit * 1.001), Change::Regression);
        assert_eq!(latency(&STEADY, limit * 0.999), Change::NoChange);
    }

    #[test]
    fn values_a_log_scale_cannot_hold_are_inconclusive() {
        assert_eq!(latency(&[100.0, 0.0, 98.0, 101.0, 99.0], 130.0), Change::Inconclusive);
        assert_eq!(latency(&STEADY, f64::NAN), Change::Inconclusive);
    }
}
