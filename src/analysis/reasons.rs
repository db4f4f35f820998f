//! The words of a latency finding: what each test of the run's family measured, written so that the reason
//! reads true from its first words (the test that decided comes first). `nightly` decides; this only says.

use super::evidence::{Draft, Evidence, RelativeEvidence, SlowShare, ValueEvidence};
use super::level::Estimate;
use super::shift::bar_raised_by_few_nights;
use super::tail::{TAIL_QUANTILE, TailShare};
use crate::model::{Change, Metric, format_ms};

/// A p-value read as a one-sided normal deviate, so that a count test compares with the level test's sigmas.
pub(super) fn sigma(p: f64) -> f64 {
    std::f64::consts::SQRT_2 * statrs::function::erf::erfc_inv(2.0 * p.clamp(1e-300, 1.0))
}

/// Why a percentile of too few requests has no value test, and what was judged instead.
pub(super) fn too_few_reason(d: &Draft, all: &[Draft], requests: u64, needed: u64) -> String {
    if d.metric == Metric::Throughput {
        return "not judged: no requests were counted tonight or on the baseline nights".to_owned();
    }
    let judged_instead = all
        .iter()
        .filter(|o| o.endpoint == d.endpoint && matches!(o.evidence, Evidence::Value(_)))
        .map(|o| o.metric)
        .rfind(|m| matches!(m, Metric::P50 | Metric::P95) && m.as_str() < d.metric.as_str());
    let instead = judged_instead.map_or_else(|| "nothing judged instead".to_owned(), |m| format!("{m} judged instead"));
    format!(
        "{} of {requests} requests: too few to judge (its 95 % interval reaches past the slowest request; about \
         {needed} are needed); {instead}",
        d.metric
    )
}

/// The level test's figures, with the share test's when both decided.
pub(super) fn value_reason(d: &Draft, v: &ValueEvidence, alpha: f64, family: usize, slow_says: bool) -> String {
    let shift = v.shift.as_ref().expect("value drafts are tested");
    let k = shift.threshold(alpha);
    let worse = shift.z >= 0.0;
    let side = if worse == (v.sign > 0.0) { "above" } else { "below" };
    let tonight_sampling = v.tonight_var.max(v.estimate.sampling_var).sqrt();
    // The p50 is tested as the body (`body`): its sigmas and noise are the mix's, and say so.
    let read = if v.shown.is_some() { ", read with the p75" } else { "" };
    let mut text = format!(
        "{:.1} sigma {side} the level of {} nights{read} (night-to-night noise ±{:.1} %, sampling ±{:.1} %); a \
         regression needs {k:.1} sigma (1 % false alarms over the run's {family} tests) and {:.0} %",
        shift.z.abs(),
        v.estimate.level_nights,
        100.0 * v.estimate.night_var.sqrt(),
        100.0 * tonight_sampling,
        100.0 * d.min_effect
    );
    text += &few_nights_note(&v.estimate, k, alpha);
    if let (Some((slow, _)), true) = (v.slow_shares.loudest(), slow_says) {
        text += &format!("; {}", share_figures(slow));
    }
    if v.estimate.drift != 0.0 {
        text += &format!(
            "; the level drifts {:+.1} % a night, so it is read where that line stands tonight",
            100.0 * (v.sign * v.estimate.drift).exp_m1()
        );
    }
    if let Some((_, nights)) = v.estimate.tail {
        text += &format!("; the last {nights} nights moved to a new level that is not settled yet");
    }
    text
}

/// `; so few nights tell the noise only roughly, which raises the bar from 3.4 sigma`, where the few nights the
/// noise was measured on (`Estimate::dof`) more than double it (`shift::bar_raised_by_few_nights`); empty
/// otherwise. A bar of 13 sigma with no word read as a mistake.
pub(super) fn few_nights_note(e: &Estimate, k: f64, alpha: f64) -> String {
    bar_raised_by_few_nights(e, k, alpha).map_or_else(String::new, |known| {
        format!("; so few nights tell the noise only roughly, which raises the bar from {known:.1} sigma")
    })
}

/// `decided by the share of slow requests: 5.30 % of tonight's requests took 41.0 ms or longer, against 0.90 %
/// on the 7 nights at the level (6.1 sigma, 4.3 needed)`: the share test's own figures, its p-value `p` read
/// as a normal deviate against the `alpha` it had to reach.
pub(super) fn decided_by_the_share(slow: &SlowShare, p: f64, alpha: f64) -> String {
    format!(
        "decided by the share of slow requests: {} ({:.1} sigma, {:.1} needed)",
        share_figures(slow),
        sigma(p),
        sigma(alpha)
    )
}

/// What a share test counted: tonight's share at its threshold, and what it was read against.
fn share_figures(slow: &SlowShare) -> String {
    let tonight =
        format!("{:.2} % of tonight's requests took {} or longer", 100.0 * slow.tonight, format_ms(slow.threshold_ms));
    match slow.at_most {
        Some(share) => {
            let percentile = format!("p{:.0}", 100.0 * (1.0 - share));
            let night = slow.night_p.map_or_else(String::new, |p| {
                format!(
                    ", and the night-to-night noise alone puts a {percentile} that far out at {:.1} sigma",
                    sigma(p)
                )
            });
            format!(
                "{tonight} (the ladder's step below the gap tonight's {percentile} interval reaches into), where a \
                 {percentile} under it leaves at most {:.2} %{night}",
                100.0 * share
            )
        }
        None => format!("{tonight}, against {:.2} % on the {} nights at the level", 100.0 * slow.baseline, slow.nights),
    }
}

/// `2.50 % of tonight's 1000 requests took 18.9 ms or longer (the farther of the baseline's p99 13.1 ms + 10 %
/// and its p99.9 18.9 ms), against 0.10 % on 7 baseline nights (the nightly share varies ×1.6)`: the tail
/// test's figures.
pub(super) fn tail_figures(t: &TailShare, min_effect: f64) -> String {
    format!(
        "{:.2} % of tonight's {} requests took {} or longer (the farther of the baseline's p99 {} + {:.0} % and its \
         p99.9 {}), against {:.2} % on {} baseline nights (the nightly share varies ×{:.1})",
        100.0 * t.tonight(),
        t.timed,
        format_ms(t.threshold_ms),
        format_ms(t.baseline_ms),
        100.0 * min_effect,
        format_ms(t.far_ms),
        100.0 * t.history.rate(),
        t.history.nights,
        t.history.log_wobble_var.sqrt().exp()
    )
}

/// A finding the tail test decided, its figures first.
pub(super) fn decided_by_the_tail(t: &TailShare, min_effect: f64, alpha: f64) -> String {
    format!(
        "decided by the share of requests far past the baseline's p99: {} ({:.1} sigma, {:.1} needed)",
        tail_figures(t, min_effect),
        sigma(t.p),
        sigma(alpha)
    )
}

/// A percentile of too few requests judged by its tail alone.
pub(super) fn tail_only_reason(d: &Draft, t: &TailShare, needed: u64, alpha: f64, family: usize) -> String {
    format!(
        "{} judged by its tail (its own 95 % interval needs about {needed} requests): {}; chance {:.1e}, a \
         regression needs {alpha:.1e} (1 % false alarms over the run's {family} tests) and {:.0} % of requests \
         past it",
        d.metric,
        tail_figures(t, d.min_effect),
        t.p,
        100.0 * (1.0 - TAIL_QUANTILE)
    )
}

/// What the ratio test found, when it found a regression.
pub(super) fn relative_reason(r: &RelativeEvidence, alpha: f64) -> String {
    let shift = r.value.shift.as_ref().expect("ratios are tested");
    format!(
        "; against the run's {} other endpoints, which were {} off their usual values tonight, it is {:.1} \
         sigma above its usual share (noise ±{:.1} %; {:.1} needed)",
        r.controls,
        Change::from_pct(100.0 * r.common.exp_m1()),
        shift.z,
        100.0 * r.value.estimate.night_var.sqrt(),
        shift.threshold(alpha)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_the_share_decided_says_so_in_sigmas_like_the_level_s() {
        let slow = SlowShare {
            threshold_ms: 41.0,
            tonight: 0.053,
            baseline: 0.009,
            at_most: None,
            nights: 7,
            share_p: 5e-10,
            night_p: None,
        };
        assert_eq!(
            decided_by_the_share(&slow, 5.3e-10, 8.5e-6),
            "decided by the share of slow requests: 5.30 % of tonight's requests took 41.0 ms or longer, against \
             0.90 % on the 7 nights at the level (6.1 sigma, 4.3 needed)"
        );
    }

    #[test]
    fn a_share_at_a_ladder_step_says_what_it_was_read_against() {
        let slow = SlowShare {
            threshold_ms: 226.0,
            tonight: 0.1,
            baseline: 0.048,
            at_most: Some(0.05),
            nights: 20,
            share_p: 1e-40,
            night_p: Some(1e-9),
        };
        assert_eq!(
            decided_by_the_share(&slow, 1e-9, 5.9e-4),
            "decided by the share of slow requests: 10.00 % of tonight's requests took 226 ms or longer (the \
             ladder's step below the gap tonight's p95 interval reaches into), where a p95 under it leaves at most \
             5.00 %, and the night-to-night noise alone puts a p95 that far out at 6.0 sigma (6.0 sigma, 3.2 needed)"
        );
    }
}
