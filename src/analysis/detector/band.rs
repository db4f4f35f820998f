//! The detector's band: the values past which the night after a history would be judged a regression or an
//! improvement, from the same level, noise and limits as [`detect`]'s decision. The trend chart shades it.

use super::{ALPHA, MAX_HISTORY, Question, Scale, SeriesKind, judgeable, level_on_scale, regression_limit};
use crate::analysis::shift::shift;

/// Where the detector draws its lines for the night after `history`, in the series' units: the level, and
/// the values past which that night would be judged a regression or an improvement. The trend chart shades
/// this band, so its picture cannot drift from the detector's decision (the run's verdict is the family
/// judgement of `nightly`, whose bar is higher still: it tests every endpoint × metric of the run at once).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    /// Where the series stands (the lines are drawn from tonight's forecast of it).
    pub level: f64,
    /// Past this (above it when higher is worse) the night is a regression.
    pub regression_at: f64,
    /// Past this on the better side the night is an improvement; error rates have none.
    pub improvement_at: Option<f64>,
}

/// The detector's [`Band`] for the night after `history` (oldest first), with the same tests as [`detect`] (an
/// unsettled new level, which [`detect`] also compares with, can only move its lines outward); `None` when the
/// history is shorter than `min_runs` or holds values the detector cannot judge.
#[must_use]
pub fn band(question: &Question<'_>) -> Option<Band> {
    let Question { history, direction, kind, min_effect_pct, min_runs, .. } = *question;
    let history = &history[history.len().saturating_sub(MAX_HISTORY)..];
    let is_error_rate = kind == SeriesKind::ErrorRate;
    if history.len() < min_runs.max(2) || !history.iter().all(|v| judgeable(*v, kind)) {
        return None;
    }
    let (e, scale) = level_on_scale(history, direction, kind);
    let probe = shift(&e, e.level, 0.0);
    let margin = probe.se * probe.threshold(ALPHA);
    let min_effect = min_effect_pct / 100.0;
    Some(Band {
        level: scale.to_raw(e.level),
        regression_at: regression_limit(probe.forecast, margin, &scale, min_effect, is_error_rate),
        improvement_at: (!is_error_rate).then(|| improvement_limit(probe.forecast, margin, &scale, min_effect)),
    })
}

/// The raw value beyond which tonight would be an improvement: past both bounds on the better side.
fn improvement_limit(forecast: f64, margin: f64, scale: &Scale, min_effect: f64) -> f64 {
    let significant = scale.to_raw(forecast - margin);
    let level = scale.to_raw(forecast);
    let effect = if scale.sign > 0.0 { level * (1.0 - min_effect) } else { level * (1.0 + min_effect) };
    let best_first = |a: &f64, b: &f64| (scale.sign * b).total_cmp(&(scale.sign * a));
    [significant, effect].into_iter().max_by(best_first).expect("two bounds")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::detector::{Change, Direction, detect};

    #[test]
    fn the_band_is_where_the_decision_changes() {
        let history = [100.0, 104.0, 97.0, 102.0, 99.0, 101.0, 98.0, 103.0, 100.0, 99.5];
        for (direction, kind) in [
            (Direction::HigherIsWorse, SeriesKind::Latency),
            (Direction::LowerIsWorse, SeriesKind::Throughput),
            (Direction::HigherIsWorse, SeriesKind::ErrorRate),
        ] {
            let question = |candidate| Question {
                history: &history,
                candidate,
                direction,
                kind,
                min_effect_pct: 10.0,
                min_runs: 5,
            };
            let band = band(&question(0.0)).unwrap();
            let worse = if direction == Direction::HigherIsWorse { 1.0 } else { -1.0 };
            let near = |value: f64, towards: f64| value + towards * 1e-6 * value.abs().max(1.0);
            assert_eq!(detect(&question(near(band.regression_at, worse))).change, Change::Regression, "{kind:?}");
            assert_eq!(detect(&question(near(band.regression_at, -worse))).change, Change::NoChange, "{kind:?}");
            if let Some(improvement) = band.improvement_at {
                assert_eq!(detect(&question(near(improvement, -worse))).change, Change::Improvement, "{kind:?}");
                assert_eq!(detect(&question(near(improvement, worse))).change, Change::NoChange, "{kind:?}");
            }
        }
        let short = Question {
            history: &history[..3],
            candidate: 1.0,
            direction: Direction::HigherIsWorse,
            kind: SeriesKind::Latency,
            min_effect_pct: 10.0,
            min_runs: 5,
        };
        assert_eq!(band(&short), None);
    }
}
