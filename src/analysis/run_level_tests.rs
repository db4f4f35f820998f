//! Whole-run tests of the judge on simulated nights with real HDR histograms: what a percentile of few
//! requests may say, that an outlier night keeps the noise wide, and the run-level false-alarm rate.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};

use super::judge::{Comparison, Judgement, judge};
use super::level::estimate;
use crate::analysis::Gates;
use crate::metrics::ErrorClass;
use crate::metrics::{EndpointRecord, endpoint_result};
use crate::model::{EndpointResult, Finding, FindingOutcome, LoadModel, VerdictOutcome};

/// Seconds of measured load per simulated night.
const NIGHT_SECS: f64 = 60.0;

/// One simulated endpoint: its median, how heavy its tail is, and how many requests a night it gets.
#[derive(Clone, Copy)]
struct Route {
    median_ms: f64,
    /// σ of ln(response time) within a night: 0.5 puts p99 at ~3.2× the median.
    spread: f64,
    requests: u64,
    error_rate: f64,
}

/// One night of `route`: `requests` response times from a lognormal whose median is shifted by `night`
/// (ln units), each request slower by `tail_factor` when it falls in the slowest `tail_share`.
fn night(name: &str, route: Route, night: f64, tail: (f64, f64), rng: &mut StdRng) -> EndpointResult {
    let (tail_share, tail_factor) = tail;
    let z = Normal::new(0.0, 1.0).expect("unit normal");
    let cutoff = 1.0 - tail_share;
    let mut record = EndpointRecord::default();
    for _ in 0..route.requests {
        let u: f64 = z.sample(rng);
        let slow = tail_share > 0.0 && normal_cdf(u) > cutoff;
        let ms = route.median_ms * (night + route.spread * u).exp() * if slow { tail_factor } else { 1.0 };
        let us = (ms * 1000.0).max(1.0) as u64;
        let error = rng.random::<f64>() < route.error_rate;
        record.record(Some(us), Some(us), error.then_some((ErrorClass::Http5xx, "503")));
    }
    endpoint_result(name, &record, NIGHT_SECS)
}

/// Φ(u), close enough to order simulated requests into "in the tail" or not.
fn normal_cdf(u: f64) -> f64 {
    0.5 * (1.0 + statrs::function::erf::erf(u / std::f64::consts::SQRT_2))
}

/// `count` nights of each route, with night-to-night wobble of `wobble` (σ, ln units), shared by all routes of
/// a night for half of it; the last night is tonight, with `tonight` applied to the first route.
fn nights(
    routes: &[Route],
    count: usize,
    wobble: f64,
    tonight: (f64, f64),
    rng: &mut StdRng,
) -> Vec<Vec<EndpointResult>> {
    let z = Normal::new(0.0, wobble / std::f64::consts::SQRT_2).expect("positive wobble");
    (0..count)
        .map(|n| {
            let shared = z.sample(rng);
            routes
                .iter()
                .enumerate()
                .map(|(i, route)| {
                    let tail = if n + 1 == count && i == 0 { tonight } else { (0.0, 1.0) };
                    night(&format!("GET /r{i}"), *route, shared + z.sample(rng), tail, rng)
                })
                .collect()
        })
        .collect()
}

fn judge_last(all: &[Vec<EndpointResult>], model: LoadModel) -> Judgement {
    let (tonight, history) = all.split_last().expect("at least one night");
    judge(tonight, history, &Gates::default(), Comparison::Nightly, model)
}

fn finding_of<'a>(judgement: &'a Judgement, endpoint: &str, metric: &str) -> &'a Finding {
    judgement.findings.iter().find(|f| f.endpoint == endpoint && f.metric == metric).expect("the finding exists")
}

const FEW: Route = Route { median_ms: 20.0, spread: 0.4, requests: 50, error_rate: 0.0 };
const MANY: Route = Route { median_ms: 20.0, spread: 0.4, requests: 50_000, error_rate: 0.0 };

#[test]
fn a_30_percent_p99_swing_of_50_requests_is_too_few_to_judge_but_of_50_000_a_regression() {
    // The slowest 2 % of tonight's requests 30 % slower: p99 +30 %, the median untouched.
    let swing = (0.02, 1.3);
    let few = nights(&[FEW], 8, 0.02, swing, &mut StdRng::seed_from_u64(1));
    let judgement = judge_last(&few, LoadModel::Open);
    assert_ne!(judgement.outcome, VerdictOutcome::Regressed, "{}", judgement.summary);
    let p99 = finding_of(&judgement, "GET /r0", "p99");
    assert_eq!(p99.outcome, FindingOutcome::TooFew, "{p99:?}");
    assert!(p99.reason.starts_with("p99 of 50 requests: too few to judge"), "{}", p99.reason);
    assert!(judgement.summary.contains("too few requests to judge"), "{}", judgement.summary);

    let many = nights(&[MANY], 8, 0.02, swing, &mut StdRng::seed_from_u64(1));
    let judgement = judge_last(&many, LoadModel::Open);
    assert_eq!(judgement.outcome, VerdictOutcome::Regressed, "{}", judgement.summary);
    assert_eq!(finding_of(&judgement, "GET /r0", "p99").outcome, FindingOutcome::Regression);
    assert_eq!(finding_of(&judgement, "GET /r0", "p50").outcome, FindingOutcome::NoChange);
}

#[test]
fn a_tail_only_regression_on_a_well_sampled_endpoint_is_caught_and_named() {
    // p99 doubles (the slowest 3 % twice as slow); p50 and the other routes unchanged.
    let routes = [Route { requests: 20_000, ..MANY }, Route { median_ms: 5.0, requests: 8_000, ..MANY }];
    let all = nights(&routes, 8, 0.03, (0.03, 2.0), &mut StdRng::seed_from_u64(2));
    let judgement = judge_last(&all, LoadModel::Open);
    assert_eq!(judgement.outcome, VerdictOutcome::Regressed, "{}", judgement.summary);
    let regressions: Vec<(&str, &str)> = judgement
        .findings
        .iter()
        .filter(|f| f.outcome == FindingOutcome::Regression)
        .map(|f| (f.endpoint.as_str(), f.metric.as_str()))
        .collect();
    assert!(regressions.contains(&("GET /r0", "p99")), "{regressions:?}");
    assert!(regressions.iter().all(|(endpoint, metric)| *endpoint == "GET /r0" && *metric != "p50"), "{regressions:?}");
    let p99 = finding_of(&judgement, "GET /r0", "p99");
    let interval = p99.interval.expect("a well-sampled p99 has an interval");
    assert!(interval.lo <= p99.candidate_value && interval.hi.is_some_and(|hi| hi >= p99.candidate_value));
}

#[test]
fn an_outlier_night_widens_the_noise_rather_than_being_forgotten() {
    // The issue's p99 series of a real API: 57.7 ms once among ~30 ms nights.
    let quiet = [29.4, 31.3, 28.6, 30.3_f64];
    let wild = [29.4, 31.3, 57.7, 28.6, 30.3_f64];
    let ln = |ms: &[f64]| ms.iter().map(|v| v.ln()).collect::<Vec<f64>>();
    let sampling = |n: usize| vec![0.0; n];
    let without = estimate(&ln(&quiet), &sampling(4), 0.0, None);
    let with = estimate(&ln(&wild), &sampling(5), 0.0, None);
    assert!(with.sigma >= without.sigma, "outlier night: σ {} vs {} without it", with.sigma, without.sigma);
    assert!(with.level_nights >= 4, "one wild night is no level shift: {} nights", with.level_nights);
}

#[test]
fn twenty_unchanged_endpoints_stay_quiet_across_many_seeded_nights() {
    // 20 endpoints × p50, p95, p99, errors and throughput (closed model), request counts from 60 to 3,000 a
    // night, heavy tails, an environment-wide wobble. The run-level rate is 1 %: 100 runs expect one false
    // alarm, and more than 3 would happen by chance 2 % of the time (the judge before this wave: ~44).
    let mut rng = StdRng::seed_from_u64(3);
    let mut regressed = Vec::new();
    for run in 0..100 {
        let routes: Vec<Route> = (0..20)
            .map(|_| Route {
                median_ms: 2.0 * 100f64.powf(rng.random::<f64>()),
                spread: 0.3 + 0.5 * rng.random::<f64>(),
                requests: (60.0 * 50f64.powf(rng.random::<f64>())) as u64,
                error_rate: if rng.random::<f64>() < 0.3 { 0.002 } else { 0.0 },
            })
            .collect();
        let all = nights(&routes, 8, 0.04, (0.0, 1.0), &mut rng);
        let judgement = judge_last(&all, LoadModel::Closed);
        if judgement.outcome == VerdictOutcome::Regressed {
            regressed.push((run, judgement.summary));
        }
    }
    assert!(regressed.len() <= 3, "{} of 100 unchanged runs regressed: {regressed:?}", regressed.len());
}

#[test]
fn unchanged_runs_on_a_machine_whose_speed_varies_stay_quiet_on_a_short_history() {
    // Five baseline nights, the fewest a verdict needs, on a machine ±12 % from night to night (each route
    // ±2 % on its own), 2,000 requests per route: tonight's p95 is often the minimum effect above its level,
    // and many more of tonight's requests then lie past it than on the five nights. As in the test above, 100
    // runs expect one false alarm and more than 3 happen by chance 2 % of the time. The slow-share test read
    // the share as moving by an amount and regardless of the level's night noise: 7 of these 100 regressed.
    let mut rng = StdRng::seed_from_u64(11);
    let (shared, own) = (Normal::new(0.0, 0.12).expect("spread"), Normal::new(0.0, 0.02).expect("spread"));
    let mut regressed = Vec::new();
    for run in 0..100 {
        let routes: Vec<Route> = (0..6)
            .map(|_| Route {
                median_ms: 1.0 + 50.0 * rng.random::<f64>(),
                spread: 0.3 + 0.2 * rng.random::<f64>(),
                requests: 2_000,
                error_rate: 0.0,
            })
            .collect();
        let all: Vec<Vec<EndpointResult>> = (0..6)
            .map(|_| {
                let speed = shared.sample(&mut rng);
                let named = routes.iter().enumerate().map(|(i, route)| (format!("GET /r{i}"), *route));
                named
                    .map(|(name, route)| night(&name, route, speed + own.sample(&mut rng), (0.0, 1.0), &mut rng))
                    .collect()
            })
            .collect();
        let judgement = judge_last(&all, LoadModel::Open);
        if judgement.outcome == VerdictOutcome::Regressed {
            regressed.push((run, judgement.summary));
        }
    }
    assert!(regressed.len() <= 3, "{} of 100 unchanged runs regressed: {regressed:?}", regressed.len());
}

/// `count` nights of each route: every night shifts all routes by a shared factor (σ `shared`, ln units) and
/// each by its own (σ `own`); tonight the shared factor is `tonight_shared` and the first route is also
/// slower by `tonight_first`.
fn shared_nights(
    routes: &[Route],
    count: usize,
    (shared, own): (f64, f64),
    tonight: (f64, f64),
) -> Vec<Vec<EndpointResult>> {
    let mut rng = StdRng::seed_from_u64(7);
    let shared_z = Normal::new(0.0, shared).expect("positive spread");
    let own_z = Normal::new(0.0, own).expect("positive spread");
    (0..count)
        .map(|n| {
            let last = n + 1 == count;
            let factor = if last { tonight.0 } else { shared_z.sample(&mut rng) };
            routes
                .iter()
                .enumerate()
                .map(|(i, route)| {
                    let extra = if last && i == 0 { tonight.1 } else { 0.0 };
                    let shift = factor + own_z.sample(&mut rng) + extra;
                    night(&format!("GET /r{i}"), *route, shift, (0.0, 1.0), &mut rng)
                })
                .collect()
        })
        .collect()
}

/// Six sub-millisecond routes on a machine whose speed varies ±12 % from night to night, each route on its
/// own by ±2 %: the shared part hides a 30 % slower route from its own history, not from the other routes.
const SHARED_MACHINE: (f64, f64) = (0.12, 0.02);
const SUB_MS: Route = Route { median_ms: 0.5, spread: 0.4, requests: 5_000, error_rate: 0.0 };

#[test]
fn one_route_slower_than_the_rest_of_its_run_is_caught_against_them() {
    let all = shared_nights(&[SUB_MS; 6], 12, SHARED_MACHINE, (0.0, 1.3f64.ln()));
    let judgement = judge_last(&all, LoadModel::Open);
    assert_eq!(judgement.outcome, VerdictOutcome::Regressed, "{}", judgement.summary);
    let p50 = finding_of(&judgement, "GET /r0", "p50");
    assert_eq!(p50.outcome, FindingOutcome::Regression, "{p50:?}");
    assert!(p50.reason.contains("against the run's 5 other endpoints"), "{}", p50.reason);
    let named: Vec<&str> = judgement
        .findings
        .iter()
        .filter(|f| f.outcome == FindingOutcome::Regression)
        .map(|f| f.endpoint.as_str())
        .collect();
    assert!(named.iter().all(|e| *e == "GET /r0"), "only the slowed route is named: {named:?}");
}

#[test]
fn a_night_when_every_route_is_slower_is_not_pinned_on_one_of_them() {
    // Everything 25 % slower: every ratio stays where it was, and ±12 % nights make 25 % no regression.
    let all = shared_nights(&[SUB_MS; 6], 12, SHARED_MACHINE, (0.25f64.ln_1p(), 0.0));
    let judgement = judge_last(&all, LoadModel::Open);
    assert_ne!(judgement.outcome, VerdictOutcome::Regressed, "{}", judgement.summary);
    assert!(judgement.findings.iter().all(|f| !f.reason.contains("other endpoints")), "{:?}", judgement.findings);
}

#[test]
fn a_route_that_stayed_put_while_the_rest_sped_up_is_no_regression() {
    // The others 25 % faster, the first route 30 % slower than they are: about where it always was.
    let all = shared_nights(&[SUB_MS; 6], 12, SHARED_MACHINE, (-(0.25f64.ln_1p()), 1.3f64.ln()));
    let judgement = judge_last(&all, LoadModel::Open);
    let p50 = finding_of(&judgement, "GET /r0", "p50");
    assert_ne!(p50.outcome, FindingOutcome::Regression, "{p50:?}");
}

#[test]
fn a_slower_route_on_a_quicker_night_is_caught_against_the_rest() {
    // The machine quicker than on its usual night (within its ±12 %), the first route 15 % slower than the
    // rest: against its own history it reads under the minimum effect, against the others' +15 %.
    let all = shared_nights(&[SUB_MS; 6], 12, SHARED_MACHINE, (-(0.12f64.ln_1p()), 1.15f64.ln()));
    let judgement = judge_last(&all, LoadModel::Open);
    let p50 = finding_of(&judgement, "GET /r0", "p50");
    assert_eq!(p50.outcome, FindingOutcome::Regression, "{p50:?}");
    assert!(p50.reason.contains("against the run's 5 other endpoints"), "{}", p50.reason);
}

#[test]
fn three_routes_are_too_few_to_be_each_other_s_control() {
    let all = shared_nights(&[SUB_MS; 3], 12, SHARED_MACHINE, (0.0, 1.3f64.ln()));
    let judgement = judge_last(&all, LoadModel::Open);
    assert!(judgement.findings.iter().all(|f| !f.reason.contains("other endpoints")), "{:?}", judgement.findings);
}

#[test]
fn an_unchanged_night_after_two_steps_is_judged_against_the_level_it_stepped_to() {
    // Builds at 1 ms, then 20 ms, then four nights at 80 ms; tonight 5 % slower than those four. Against
    // the older nights nearly all of tonight's requests are slow, but it is the 80 ms level that matters.
    let route = Route { median_ms: 1.0, spread: 0.1, requests: 2_000, error_rate: 0.0 };
    let mut rng = StdRng::seed_from_u64(7);
    let levels = [1.0, 1.0, 1.0, 20.0, 20.0, 20.0, 80.0, 80.0, 80.0, 80.0, 84.0_f64];
    let all: Vec<Vec<EndpointResult>> =
        levels.iter().map(|ms| vec![night("GET /items", route, ms.ln(), (0.0, 1.0), &mut rng)]).collect();
    let judgement = judge_last(&all, LoadModel::Open);
    assert_ne!(judgement.outcome, VerdictOutcome::Regressed, "{}: {:?}", judgement.summary, judgement.findings);
    for metric in ["p95", "p99"] {
        let finding = finding_of(&judgement, "GET /items", metric);
        assert_ne!(finding.outcome, FindingOutcome::Regression, "{finding:?}");
    }
    // The same night a full minimum effect above the 80 ms level is caught.
    let mut slower = all.clone();
    slower[levels.len() - 1] = vec![night("GET /items", route, 100.0_f64.ln(), (0.0, 1.0), &mut rng)];
    let judgement = judge_last(&slower, LoadModel::Open);
    assert_eq!(judgement.outcome, VerdictOutcome::Regressed, "{}", judgement.summary);
}

/// Six routes on a machine whose speed varies ±4 % from night to night, each on its own by ±1 %: nearly all of
/// a route's noise is the night's common factor.
const STEADY_MACHINE: (f64, f64) = (0.04, 0.01);

#[test]
fn a_whole_night_in_the_common_factor_s_tail_is_pinned_on_no_route_where_one_route_s_move_is() {
    // Tonight every route is 20 % slower, five of the factor's sigmas: a night in its heavy tail, which a
    // normal would put at 1 in 3.5 million. No route's level test calls that a regression of the route.
    let slow_night = 0.2f64.ln_1p();
    let all = shared_nights(&[SUB_MS; 6], 20, STEADY_MACHINE, (slow_night, 0.0));
    let judgement = judge_last(&all, LoadModel::Open);
    let routes = judgement.findings.iter().filter(|f| f.endpoint.starts_with("GET /r"));
    let named: Vec<&Finding> = routes.filter(|f| f.outcome == FindingOutcome::Regression).collect();
    assert!(named.is_empty(), "{named:?}");
    // The same 20 % on one route alone, on an ordinary night, is that route's.
    let all = shared_nights(&[SUB_MS; 6], 20, STEADY_MACHINE, (0.0, slow_night));
    let judgement = judge_last(&all, LoadModel::Open);
    assert_eq!(finding_of(&judgement, "GET /r0", "p50").outcome, FindingOutcome::Regression, "{}", judgement.summary);
}

#[test]
fn an_endpoints_own_bursts_excuse_a_repeat_of_them_not_a_rise() {
    // Ten routes of 1,200 requests a night that never fail, but GET /r0 failed six requests on one night of 32
    // and two on another (dev-r00796): read as its rate's wobble as well as bursts, they excused 20 failures.
    let mut rng = StdRng::seed_from_u64(11);
    let route = Route { median_ms: 20.0, spread: 0.4, requests: 1_200, error_rate: 0.0 };
    let mut all = nights(&[route; 10], 33, 0.02, (0.0, 1.0), &mut rng);
    let fail = |all: &mut [Vec<EndpointResult>], night: usize, errors: i64| all[night][0].errors = errors;
    fail(&mut all, 27, 6);
    fail(&mut all, 28, 2);
    for (tonight, regressed) in [(20, true), (6, false)] {
        fail(&mut all, 32, tonight);
        let judgement = judge_last(&all, LoadModel::Open);
        let errors = finding_of(&judgement, "GET /r0", "error_rate");
        assert_eq!(errors.outcome == FindingOutcome::Regression, regressed, "{tonight} failures: {}", errors.reason);
    }
}
