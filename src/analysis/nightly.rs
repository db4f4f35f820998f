//! The nightly judgement of a whole run: every endpoint × metric of tonight against the same figure on the
//! baseline nights, as one family of tests whose false-alarm rate is controlled for the run as a whole.
//!
//! A run is not one test but dozens (every endpoint, and the whole run, × p50, p95, p99, the share of slow
//! requests behind p95 and p99, and the error rate). Tested one by one at 1 % each, an unchanged night would
//! page someone one night in two. Here each test yields a p-value, and Holm's step-down procedure keeps the
//! chance that an unchanged run has any finding at [`RUN_FALSE_ALARM_RATE`], about one false alarm in 100
//! unchanged nights, whatever the tests' dependence. A regression must also be at least the minimum effect.
//!
//! Night-to-night noise is estimated per series from few nights; the other endpoints of the same run are
//! evidence about it too (they share the machine, the database and the network), so the median of their
//! noise enters each series as a prior worth [`POOLED_PRIOR_NIGHTS`] nights.

use std::collections::BTreeMap;

use super::counts::CountHistory;
use super::detector::{ERROR_MIN_RISE, LOG_PRIOR, LOG_SIGMA_FLOOR};
use super::evidence::{
    Draft, ErrorEvidence, Evidence, PERCENTILES, RelativeEvidence, SlowShare, ValueEvidence, endpoint_drafts,
};
use super::level::{Prior, median};
use super::relative::{MIN_CONTROLS, Nights, Table};
use super::shift::{p_worse_by_night_noise, shift};
use super::telemetry::{SeriesDraft, Tested, p_worse, series_finding};
use crate::analysis::Gates;
use crate::metrics::interval::error_rate_interval;
use crate::model::{Change, EndpointResult, Finding, FindingOutcome, Metric, OVERALL_ENDPOINT};

/// The chance, per run, that a night with no change has any regression finding.
pub const RUN_FALSE_ALARM_RATE: f64 = 0.01;
/// The other endpoints' night-to-night noise counts as this many nights of evidence about an endpoint's.
const POOLED_PRIOR_NIGHTS: f64 = 10.0;

/// Which test of a draft.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TestKind {
    /// The value against its level.
    Level,
    /// The share of slow requests behind a tail percentile.
    SlowShare,
    /// The value as a ratio to the run's other endpoints.
    Relative,
    /// The count of failed requests.
    Errors,
    /// A telemetry series against its level (`draft` indexes the telemetry drafts).
    Telemetry,
}

/// One test of the family, and what Holm's procedure made of it.
#[derive(Debug, Clone, Copy)]
struct Test {
    draft: usize,
    kind: TestKind,
    p: f64,
    /// The p-value it had to reach at its step.
    alpha: f64,
    rejected: bool,
}

/// The findings of `candidate` against the `baseline` nights (oldest first), in candidate order, then one per
/// telemetry series of `telemetry`, whose tests are part of the same family.
#[must_use]
pub(super) fn judge_nightly(
    candidate: &[EndpointResult],
    baseline: &[Vec<EndpointResult>],
    gates: &Gates,
    judge_throughput: bool,
    telemetry: &[SeriesDraft],
) -> Vec<Finding> {
    let mut drafts: Vec<Draft> = candidate
        .iter()
        .filter(|e| e.requests > 0)
        .flat_map(|e| endpoint_drafts(e, baseline, gates, judge_throughput))
        .collect();
    attach_ratios(&mut drafts, candidate, baseline, (gates.min_runs as usize).max(2));
    apply_pooled_priors(&mut drafts);
    let mut tests = tests_of(&drafts);
    tests.extend(telemetry.iter().enumerate().filter_map(|(i, d)| {
        p_worse(d).map(|p| Test {
            draft: i,
            kind: TestKind::Telemetry,
            p: p.clamp(0.0, 1.0),
            alpha: 0.0,
            rejected: false,
        })
    }));
    let tests = holm(tests);
    let family = tests.len();
    let mut findings: Vec<Finding> =
        drafts.iter().enumerate().map(|(i, d)| finding_of(d, &drafts, &tests_for(&tests, i), family)).collect();
    findings.extend(telemetry.iter().enumerate().map(|(i, d)| {
        let tested = tests
            .iter()
            .find(|t| t.kind == TestKind::Telemetry && t.draft == i)
            .map(|t| Tested { alpha: t.alpha, rejected: t.rejected });
        series_finding(d, tested, family, RUN_FALSE_ALARM_RATE / family.max(1) as f64)
    }));
    findings
}

/// Gives each latency percentile of a named endpoint its ratio to the run's other endpoints, where at least
/// [`MIN_CONTROLS`] others and `needed` baseline nights make one.
fn attach_ratios(drafts: &mut [Draft], candidate: &[EndpointResult], baseline: &[Vec<EndpointResult>], needed: usize) {
    let named = candidate.iter().filter(|e| e.endpoint != OVERALL_ENDPOINT && e.requests > 0).count();
    if named <= MIN_CONTROLS {
        return;
    }
    let nights = Nights::new(candidate, baseline);
    for (metric, p) in PERCENTILES {
        let table = Table::new(&nights, p);
        for d in drafts.iter_mut().filter(|d| d.metric == metric) {
            if let Evidence::Value(v) = &mut d.evidence {
                v.relative = table.ratio(&d.endpoint, needed).map(Box::new);
            }
        }
    }
}

/// Sets each value series' prior from the other series of the same metric (ratios from the other ratios),
/// then tests it against its level.
fn apply_pooled_priors(drafts: &mut [Draft]) {
    let absolute = pooled_priors(drafts, |v| Some(v));
    let relative = pooled_priors(drafts, |v| v.relative.as_deref().map(|r| &r.value));
    for d in drafts.iter_mut() {
        if let Evidence::Value(v) = &mut d.evidence {
            settle(v, absolute.get(d.metric.as_str()));
            if let Some(r) = v.relative.as_deref_mut() {
                settle(&mut r.value, relative.get(d.metric.as_str()));
            }
        }
    }
}

/// Per metric, the prior the series `select` picks give each other: the median of their own noise.
fn pooled_priors(drafts: &[Draft], select: fn(&ValueEvidence) -> Option<&ValueEvidence>) -> BTreeMap<String, Prior> {
    let mut own: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for d in drafts {
        if let Some(v) = match &d.evidence {
            Evidence::Value(v) => select(v),
            _ => None,
        } {
            own.entry(d.metric.as_str()).or_default().push(v.estimate.own_night_var);
        }
    }
    own.into_iter()
        .filter(|(_, vars)| vars.len() >= 2)
        .map(|(metric, vars)| {
            let sigma = median(&vars).sqrt().max(LOG_SIGMA_FLOOR);
            (metric.to_owned(), Prior { sigma, nights: POOLED_PRIOR_NIGHTS })
        })
        .collect()
}

/// Applies `prior` (the generic one without) to a series and tests tonight against its level.
fn settle(v: &mut ValueEvidence, prior: Option<&Prior>) {
    v.estimate = v.estimate.with_prior(prior.copied().unwrap_or(LOG_PRIOR), LOG_SIGMA_FLOOR);
    v.shift = Some(shift(&v.estimate, v.tonight, v.tonight_var));
    if let Some(slow) = &mut v.slow_share {
        slow.night_p = Some(p_worse_by_night_noise(&v.estimate, v.tonight));
    }
}

/// Every test the drafts make, each with its p-value; the family's size does not depend on tonight's values.
fn tests_of(drafts: &[Draft]) -> Vec<Test> {
    let test = |draft, kind, p: f64| Test { draft, kind, p: p.clamp(0.0, 1.0), alpha: 0.0, rejected: false };
    let mut tests = Vec::new();
    for (i, d) in drafts.iter().enumerate() {
        match &d.evidence {
            Evidence::Value(v) => {
                tests.push(test(i, TestKind::Level, v.shift.as_ref().map_or(1.0, |s| s.p_worse)));
                if let Some(r) = &v.relative {
                    tests.push(test(i, TestKind::Relative, r.value.shift.as_ref().map_or(1.0, |s| s.p_worse)));
                }
                if let Some(slow) = &v.slow_share {
                    tests.push(test(i, TestKind::SlowShare, slow.p()));
                }
            }
            Evidence::Errors(e) => tests.push(test(i, TestKind::Errors, e.p)),
            Evidence::ShortHistory { .. } | Evidence::TooFew { .. } => {}
        }
    }
    tests
}

/// Holm's step-down procedure at [`RUN_FALSE_ALARM_RATE`]: the smallest p-value is held to α/m, the next to
/// α/(m−1), and so on until one fails; the rest are held to the level at which it failed.
fn holm(mut tests: Vec<Test>) -> Vec<Test> {
    let m = tests.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| tests[a].p.total_cmp(&tests[b].p));
    let mut stopped_at = None;
    for (rank, &i) in order.iter().enumerate() {
        let alpha = stopped_at.unwrap_or(RUN_FALSE_ALARM_RATE / (m - rank) as f64);
        tests[i].alpha = alpha;
        tests[i].rejected = stopped_at.is_none() && tests[i].p <= alpha;
        if !tests[i].rejected && stopped_at.is_none() {
            stopped_at = Some(alpha);
        }
    }
    tests
}

/// The tests of endpoint draft `draft` (telemetry drafts are numbered apart).
fn tests_for(tests: &[Test], draft: usize) -> Vec<Test> {
    tests.iter().filter(|t| t.draft == draft && t.kind != TestKind::Telemetry).copied().collect()
}

/// The finding a draft becomes, given its tests.
fn finding_of(d: &Draft, all: &[Draft], tests: &[Test], family: usize) -> Finding {
    let mut f = Finding {
        endpoint: d.endpoint.clone(),
        metric: d.metric.as_str().to_owned(),
        outcome: FindingOutcome::NoChange,
        baseline_value: None,
        candidate_value: 0.0,
        delta_pct: None,
        limit: None,
        interval: None,
        p_value: tests.iter().map(|t| t.p).reduce(f64::min),
        reason: String::new(),
    };
    let outcome = match &d.evidence {
        Evidence::ShortHistory { nights, needed, tonight } => {
            f.candidate_value = *tonight;
            f.reason = format!(
                "inconclusive: {nights} night{} of history, at least {needed} needed",
                if *nights == 1 { "" } else { "s" }
            );
            FindingOutcome::Inconclusive
        }
        Evidence::TooFew { requests, needed, tonight } => {
            f.candidate_value = *tonight;
            f.reason = too_few_reason(d, all, *requests, *needed);
            FindingOutcome::TooFew
        }
        Evidence::Value(v) => value_finding(&mut f, d, v, all, tests, family),
        Evidence::Errors(e) => error_finding(&mut f, d, e, tests, family),
    };
    f.outcome = outcome;
    f
}

fn too_few_reason(d: &Draft, all: &[Draft], requests: u64, needed: u64) -> String {
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

/// Fills in a value draft's numbers and reason, and returns its outcome.
fn value_finding(
    f: &mut Finding,
    d: &Draft,
    v: &ValueEvidence,
    all: &[Draft],
    tests: &[Test],
    family: usize,
) -> FindingOutcome {
    let shift = v.shift.as_ref().expect("value drafts are tested");
    let level_test = tests.iter().find(|t| t.kind == TestKind::Level);
    let slow_test = tests.iter().find(|t| t.kind == TestKind::SlowShare);
    let relative = v.relative.as_deref().zip(tests.iter().find(|t| t.kind == TestKind::Relative));
    let base = v.raw(v.estimate.level);
    f.candidate_value = v.raw(v.tonight);
    f.baseline_value = Some(base);
    f.delta_pct = Some(100.0 * (f.candidate_value - base) / base);
    f.interval = v.interval;
    let alpha = level_test.map_or(RUN_FALSE_ALARM_RATE / family.max(1) as f64, |t| t.alpha);
    let k = shift.threshold(alpha);
    let effect_bound = v.estimate.level + d.min_effect.ln_1p();
    let mut limit = (shift.forecast + k * shift.se).max(effect_bound);
    if let Some((r, t)) = relative {
        // The value at which the ratio test fires tonight, given tonight's common factor: the lower of the two
        // is where tonight's value becomes a regression.
        limit = limit.min(relative_limit(r, t.alpha, d.min_effect).max(effect_bound));
    }
    f.limit = Some(v.raw(limit));
    let level_says = level_test.is_some_and(|t| t.rejected) && v.worse_by() >= d.min_effect;
    // Every test must also matter: the minimum effect above the level, and above an unsettled new one.
    let slow_says = slow_test.is_some_and(|t| t.rejected) && v.worse_by() >= d.min_effect;
    // Slower than the other endpoints by the minimum effect, and slower than its own baseline. By the minimum
    // effect too when the others were faster than usual: a night when everything else sped up (a build that
    // made the other routes faster) does not make an unchanged endpoint a regression. On a night whose
    // others are within their usual wobble, the ratio is the better measure of the route, since the shared
    // part of the noise is out of it: on bench-verdicts a +25 % route read +8 % on a night 5 % quicker.
    let relative_says = relative.is_some_and(|(r, t)| {
        let own_bar = if r.others_faster(d.min_effect) { d.min_effect } else { 0.0 };
        t.rejected && r.value.worse_by() >= d.min_effect && v.worse_by() > own_bar
    });
    let improved = shift.p_better <= RUN_FALSE_ALARM_RATE / family.max(1) as f64
        && v.better_by() >= d.min_effect
        && !(d.metric != Metric::Throughput && errors_rose(all, &d.endpoint));
    // The share's figures are said once: first when it alone decided, after the level when both did.
    f.reason = value_reason(d, v, k, family, slow_says && level_says);
    if let (true, false, Some(slow), Some(t)) = (slow_says, level_says, &v.slow_share, slow_test) {
        // The limit printed beside the value is the level test's, which did not pass: the test that called it
        // comes first, so the reason reads true from its first words.
        f.reason = format!("{}; the level alone: {}", decided_by_the_share(slow, t), f.reason);
    }
    if let (Some((r, t)), true) = (relative, relative_says) {
        f.reason += &relative_reason(r, t.alpha);
    }
    if level_says || slow_says || relative_says {
        FindingOutcome::Regression
    } else if improved {
        FindingOutcome::Improvement
    } else {
        FindingOutcome::NoChange
    }
}

fn value_reason(d: &Draft, v: &ValueEvidence, k: f64, family: usize, slow_says: bool) -> String {
    let shift = v.shift.as_ref().expect("value drafts are tested");
    let worse = shift.z >= 0.0;
    let side = if worse == (v.sign > 0.0) { "above" } else { "below" };
    let tonight_sampling = v.tonight_var.max(v.estimate.sampling_var).sqrt();
    let mut text = format!(
        "{:.1} sigma {side} the level of {} nights (night-to-night noise ±{:.1} %, sampling ±{:.1} %); a \
         regression needs {k:.1} sigma (1 % false alarms over the run's {family} tests) and {:.0} %",
        shift.z.abs(),
        v.estimate.level_nights,
        100.0 * v.estimate.night_var.sqrt(),
        100.0 * tonight_sampling,
        100.0 * d.min_effect
    );
    if let (Some(slow), true) = (v.slow_share, slow_says) {
        text += &format!(
            "; {:.2} % of tonight's requests took {} or longer, against {:.2} % on the {} nights at the level",
            100.0 * slow.tonight,
            crate::model::format_ms(slow.threshold_ms),
            100.0 * slow.baseline,
            slow.nights
        );
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

/// `decided by the share of slow requests: 5.30 % of tonight's requests took 41.0 ms or longer, against 0.90 %
/// on the 7 nights at the level (6.1 sigma, 4.3 needed)`: the share test's own figures, its p-value read as a
/// normal deviate so it compares with the level test's sigmas.
fn decided_by_the_share(slow: &SlowShare, test: &Test) -> String {
    let sigma = |p: f64| std::f64::consts::SQRT_2 * statrs::function::erf::erfc_inv(2.0 * p.clamp(1e-300, 1.0));
    format!(
        "decided by the share of slow requests: {:.2} % of tonight's requests took {} or longer, against {:.2} % on \
         the {} nights at the level ({:.1} sigma, {:.1} needed)",
        100.0 * slow.tonight,
        crate::model::format_ms(slow.threshold_ms),
        100.0 * slow.baseline,
        slow.nights,
        sigma(test.p),
        sigma(test.alpha)
    )
}

/// The log value tonight's ratio test needs, given tonight's common factor.
fn relative_limit(r: &RelativeEvidence, alpha: f64, min_effect: f64) -> f64 {
    let shift = r.value.shift.as_ref().expect("ratios are tested");
    let needed = (shift.forecast + shift.threshold(alpha) * shift.se).max(r.value.estimate.level + min_effect.ln_1p());
    needed + r.common
}

/// What the ratio test found, when it found a regression.
fn relative_reason(r: &RelativeEvidence, alpha: f64) -> String {
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

/// Whether `endpoint`'s error rate rose tonight: its latency is then shaped by failures, never an improvement.
fn errors_rose(all: &[Draft], endpoint: &str) -> bool {
    all.iter()
        .any(|d| d.endpoint == endpoint && matches!(&d.evidence, Evidence::Errors(e) if e.rise_pp() >= ERROR_MIN_RISE))
}

/// Fills in an error-rate draft's numbers and reason, and returns its outcome.
fn error_finding(f: &mut Finding, d: &Draft, e: &ErrorEvidence, tests: &[Test], family: usize) -> FindingOutcome {
    let test = tests.iter().find(|t| t.kind == TestKind::Errors);
    let alpha = test.map_or(RUN_FALSE_ALARM_RATE / family.max(1) as f64, |t| t.alpha);
    let base = 100.0 * e.history.rate();
    f.candidate_value = e.tonight_pct();
    f.baseline_value = Some(base);
    f.delta_pct = (base > 0.0).then(|| 100.0 * (f.candidate_value - base) / base);
    f.interval = e.interval.or_else(|| error_rate_interval(e.errors, e.requests));
    f.limit = Some(error_limit(&e.history, e.requests, alpha, base, d.min_effect));
    let regressed = test.is_some_and(|t| t.rejected) && e.is_effect(d.min_effect);
    // Never 0: the prior alone makes the rate wobble.
    let wobble = format!("the nightly rate varies ×{:.1}", e.history.log_wobble_var.sqrt().exp());
    f.reason = format!(
        "{} of {} requests failed against {base:.3} % over {} nights ({wobble}); chance {:.1e}, a regression needs \
         {alpha:.1e} (1 % false alarms over the run's {family} tests), +{ERROR_MIN_RISE} pp and {:.0} %",
        e.errors,
        e.requests,
        e.history.nights,
        e.p,
        100.0 * d.min_effect
    );
    if regressed { FindingOutcome::Regression } else { FindingOutcome::NoChange }
}

/// The error rate, percent, tonight would have had to reach to be a regression.
fn error_limit(history: &CountHistory, requests: u64, alpha: f64, base_pct: f64, min_effect: f64) -> f64 {
    let effect = (base_pct + ERROR_MIN_RISE).max(base_pct * (1.0 + min_effect));
    let significant = history.hits_needed(requests, alpha).map_or(100.0, |k| 100.0 * k as f64 / requests as f64);
    effect.max(significant).min(100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_the_share_decided_says_so_in_sigmas_like_the_level_s() {
        let slow =
            SlowShare { threshold_ms: 41.0, tonight: 0.053, baseline: 0.009, nights: 7, share_p: 5e-10, night_p: None };
        let test = Test { draft: 0, kind: TestKind::SlowShare, p: 5.3e-10, alpha: 8.5e-6, rejected: true };
        assert_eq!(
            decided_by_the_share(&slow, &test),
            "decided by the share of slow requests: 5.30 % of tonight's requests took 41.0 ms or longer, against \
             0.90 % on the 7 nights at the level (6.1 sigma, 4.3 needed)"
        );
    }
}
