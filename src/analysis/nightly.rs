//! The nightly judgement of a whole run: every endpoint × metric of tonight against the same figure on the
//! baseline nights, as one family of tests whose false-alarm rate is controlled for the run as a whole.
//!
//! A run is not one test but dozens (every endpoint, and the whole run, × p50, p95, p99, the share of slow
//! requests behind p95 and p99, the share of requests past the baseline's p95 and p99 where histograms are
//! stored, and the error rate). Tested one by one at 1 % each, an unchanged night would
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
use super::evidence::{Draft, ErrorEvidence, Evidence, PERCENTILES, RelativeEvidence, ValueEvidence, endpoint_drafts};
use super::failure_bursts;
use super::level::{Prior, median};
use super::reasons::{
    decided_by_the_share, decided_by_the_tail, relative_reason, tail_figures, tail_only_reason, too_few_reason,
    value_reason,
};
use super::relative::{MIN_CONTROLS, Nights, Table};
use super::shift::{p_worse_by_night_noise, shift, shift_with_common_factor};
use super::tail::TailShare;
use super::telemetry::{SeriesDraft, Tested, p_worse, series_finding};
use crate::analysis::Gates;
use crate::metrics::interval::error_rate_interval;
use crate::model::{EndpointResult, Finding, FindingOutcome, Metric, OVERALL_ENDPOINT};

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
    /// The share of requests past the baseline's tail percentile (`tail`).
    Tail,
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
    failure_bursts::apply(&mut drafts, baseline);
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
            // Where the ratio measures the night's common factor, the level test reads that part of its noise
            // on the factor's heavy tail: whole nights slower than usual were both false alarms left on the
            // development set (DESIGN.md 6.8).
            if let Some(common_var) = v.relative.as_deref().map(|r| r.common_var(v)) {
                v.shift = Some(shift_with_common_factor(&v.estimate, v.tonight, v.tonight_var, common_var));
                set_night_p(v, common_var);
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
    set_night_p(v, 0.0);
}

/// Sets each slow-share test's chance by the night noise alone, `common_var` of it the night's common factor.
fn set_night_p(v: &mut ValueEvidence, common_var: f64) {
    for slow in &mut v.slow_shares.tests {
        slow.night_p = Some(p_worse_by_night_noise(&v.estimate, v.sign * slow.threshold_ms.ln(), common_var));
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
                if let Some((_, p)) = v.slow_shares.loudest() {
                    tests.push(test(i, TestKind::SlowShare, p));
                }
            }
            Evidence::Errors(e) => tests.push(test(i, TestKind::Errors, e.p)),
            Evidence::ShortHistory { .. } | Evidence::TooFew { .. } => {}
        }
        if let Some(t) = &d.tail {
            tests.push(test(i, TestKind::Tail, t.p));
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
            if let Some((tail, test)) = d.tail.as_ref().zip(tests.iter().find(|t| t.kind == TestKind::Tail)) {
                tail_only_finding(&mut f, d, tail, test, *needed, family)
            } else {
                f.reason = too_few_reason(d, all, *requests, *needed);
                FindingOutcome::TooFew
            }
        }
        Evidence::Value(v) => value_finding(&mut f, d, v, all, tests, family),
        Evidence::Errors(e) => error_finding(&mut f, d, e, tests, family),
    };
    f.outcome = outcome;
    f
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
    // The figure's own numbers, where the test read more than the figure (the p50 as the body).
    let shown = v.shown();
    let base = v.raw(shown.level);
    f.candidate_value = v.raw(shown.tonight);
    f.baseline_value = Some(base);
    f.delta_pct = Some(100.0 * (f.candidate_value - base) / base);
    f.interval = v.interval;
    let alpha = level_test.map_or(RUN_FALSE_ALARM_RATE / family.max(1) as f64, |t| t.alpha);
    let k = shift.threshold(alpha);
    f.limit = Some(v.raw(v.shown_limit(value_limit(d, v, k, relative), d.min_effect)));
    let level_says = level_test.is_some_and(|t| t.rejected) && v.own_worse_by() >= d.min_effect;
    // Every test must also matter: the minimum effect above the level, and above an unsettled new one.
    let slow_says = slow_test.is_some_and(|t| t.rejected) && v.own_worse_by() >= d.min_effect;
    let relative_says = relative.is_some_and(|(r, t)| ratio_says(d, v, r, t));
    let improved = shift.p_better <= RUN_FALSE_ALARM_RATE / family.max(1) as f64
        && v.own_better_by() >= d.min_effect
        && !(d.metric != Metric::Throughput && errors_rose(all, &d.endpoint));
    // The share's figures are said once: first when it alone decided, after the level when both did.
    f.reason = value_reason(d, v, alpha, family, slow_says && level_says);
    if let (true, false, Some((slow, _)), Some(t)) = (slow_says, level_says, v.slow_shares.loudest(), slow_test) {
        // The test that called it comes first, so the reason reads true from its first words. Its threshold is
        // tonight's own value, no bar to pass, and the level test's limit was not passed: none is given (it
        // had read "32.8 ms, limit 176.8 ms", regressed).
        f.reason = format!("{}; the level alone: {}", decided_by_the_share(slow, t.p, t.alpha), f.reason);
        if !relative_says {
            f.limit = None;
        }
    }
    if let (Some((r, t)), true) = (relative, relative_says) {
        f.reason += &relative_reason(r, t.alpha);
    }
    let tail_says = with_tail(f, d, tests, level_says || slow_says || relative_says);
    if level_says || slow_says || relative_says || tail_says {
        FindingOutcome::Regression
    } else if improved {
        FindingOutcome::Improvement
    } else {
        FindingOutcome::NoChange
    }
}

/// Whether the ratio test calls a value draft regressed: slower than the other endpoints by the minimum effect,
/// and slower than its own baseline. By the minimum effect too when the others were faster than usual: a night
/// when everything else sped up (a build that made the other routes faster) does not make an unchanged endpoint
/// a regression. On a night whose others are within their usual wobble, the ratio is the better measure of the
/// route, since the shared part of the noise is out of it: on bench-verdicts a +25 % route read +8 % on a night
/// 5 % quicker.
fn ratio_says(d: &Draft, v: &ValueEvidence, r: &RelativeEvidence, t: &Test) -> bool {
    let own_bar = if r.others_faster(d.min_effect) { d.min_effect } else { 0.0 };
    t.rejected && r.value.worse_by() >= d.min_effect && v.own_worse_by() > own_bar
}

/// The value (on the judging scale) at which tonight becomes a regression: where the level test fires, or the
/// ratio test given tonight's common factor when that is lower, and never under the minimum effect.
fn value_limit(d: &Draft, v: &ValueEvidence, k: f64, relative: Option<(&RelativeEvidence, &Test)>) -> f64 {
    let shift = v.shift.as_ref().expect("value drafts are tested");
    let effect_bound = v.estimate.level + d.min_effect.ln_1p();
    let mut limit = (shift.forecast + k * shift.se).max(effect_bound);
    if let Some((r, t)) = relative {
        limit = limit.min(relative_limit(r, t.alpha, d.min_effect).max(effect_bound));
    }
    limit
}

/// Whether the tail test of a value draft found a regression; its figures join the reason: first when it alone
/// decided, after the others' when they did too.
fn with_tail(f: &mut Finding, d: &Draft, tests: &[Test], others_said: bool) -> bool {
    let Some((tail, test)) = d.tail.as_ref().zip(tests.iter().find(|t| t.kind == TestKind::Tail)) else {
        return false;
    };
    let says = test.rejected && tail.is_effect();
    if says && others_said {
        f.reason = format!("{}; and {}", f.reason, tail_figures(tail, d.min_effect));
    } else if says {
        f.reason = format!("{}; the level alone: {}", decided_by_the_tail(tail, d.min_effect, test.alpha), f.reason);
        // The bar it passed is its threshold, as for a tail judged by the tail test alone (`tail_only_finding`),
        // not the level test's limit, which tonight did not pass.
        f.limit = Some(tail.threshold_ms);
    }
    says
}

/// A tail percentile of too few requests for a value test, judged by the share of requests past the baseline's.
fn tail_only_finding(
    f: &mut Finding,
    d: &Draft,
    tail: &TailShare,
    test: &Test,
    needed: u64,
    family: usize,
) -> FindingOutcome {
    f.baseline_value = Some(tail.baseline_ms);
    f.delta_pct = Some(100.0 * (f.candidate_value - tail.baseline_ms) / tail.baseline_ms);
    f.limit = Some(tail.threshold_ms);
    if test.rejected && tail.is_effect() {
        f.reason = decided_by_the_tail(tail, d.min_effect, test.alpha);
        FindingOutcome::Regression
    } else {
        f.reason = tail_only_reason(d, tail, needed, test.alpha, family);
        FindingOutcome::NoChange
    }
}

/// The log value tonight's ratio test needs, given tonight's common factor.
fn relative_limit(r: &RelativeEvidence, alpha: f64, min_effect: f64) -> f64 {
    let shift = r.value.shift.as_ref().expect("ratios are tested");
    let needed = (shift.forecast + shift.threshold(alpha) * shift.se).max(r.value.estimate.level + min_effect.ln_1p());
    needed + r.common
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
    // Never 0: the prior alone makes the rate wobble. Of nights without a failure, that is the prior's, and
    // "varies ×1.5" of 0 % on every night read as a measured wobble.
    let wobble = if e.history.hits > 0.0 {
        format!("the nightly rate varies ×{:.1}", e.history.log_wobble_var.sqrt().exp())
    } else {
        format!("no night failed; a rate is allowed to vary ×{:.1}", e.history.log_wobble_var.sqrt().exp())
    };
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
