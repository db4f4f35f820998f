//! The tail test on simulated nights with real HDR histograms: what it catches, and how rarely it speaks on
//! unchanged nights of a machine whose speed varies.

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal};

use super::*;
use crate::metrics::{EndpointRecord, endpoint_result};
use crate::model::EndpointResult;

/// The run-level family's first step for a run of about 50 tests: 1 % / 50.
const FIRST_STEP: f64 = 2e-4;

/// One night of `requests` lognormal response times (median `median_ms`, σ 0.4), the whole night slower by the
/// factor e^`speed`, and a share `tail.0` of its requests (evenly spread: every 50th for 2 %) `tail.1` ms slower.
fn night(requests: u64, median_ms: f64, speed: f64, tail: (f64, f64), rng: &mut StdRng) -> Sample {
    let z = Normal::new(0.0, 0.4).expect("a positive spread");
    let mut record = EndpointRecord::default();
    for i in 0..requests {
        let mut ms = median_ms * (speed + z.sample(rng)).exp();
        if (i as f64 * tail.0).floor() < ((i + 1) as f64 * tail.0).floor() {
            ms += tail.1;
        }
        let us = (ms * 1000.0).max(1.0) as u64;
        record.record(Some(us), Some(us), None);
    }
    Sample::from_result(&endpoint_result("GET /x", &record, 60.0))
}

/// Seven baseline nights on a machine ±5 % from night to night, then tonight.
fn seven_and_tonight(requests: u64, tail: (f64, f64), seed: u64) -> (Vec<Sample>, Sample) {
    let mut rng = StdRng::seed_from_u64(seed);
    let speed = Normal::new(0.0, 0.05).expect("a positive spread");
    let history = (0..7).map(|_| night(requests, 5.0, speed.sample(&mut rng), (0.0, 0.0), &mut rng)).collect();
    let tonight = night(requests, 5.0, speed.sample(&mut rng), tail, &mut rng);
    (history, tonight)
}

#[test]
fn two_percent_of_a_thousand_requests_50_ms_slower_is_caught_on_the_p99() {
    for seed in 0..5 {
        let (history, tonight) = seven_and_tonight(1_000, (0.02, 50.0), seed);
        let p99 = tail_share(&tonight, &history, 0.1, 5).expect("histograms make a tail test");
        assert!(p99.is_effect() && p99.p < FIRST_STEP, "seed {seed}: {p99:?}");
        assert!((p99.baseline_ms - 5.0 * (2.326 * 0.4f64).exp()).abs() < 3.0, "the pooled p99: {p99:?}");
        assert!(
            (p99.threshold_ms - p99.far_ms).abs() < 0.001 && p99.far_ms > 1.1 * p99.baseline_ms,
            "past the p99.9: {p99:?}"
        );
    }
}

#[test]
fn a_few_hundred_requests_get_a_tail_verdict_at_a_larger_effect() {
    // 300 requests: the p99's own interval reaches past the slowest request; 8 % of them 50 ms slower is plain.
    for seed in 0..5 {
        let (history, tonight) = seven_and_tonight(300, (0.08, 50.0), seed);
        assert_eq!(tonight.percentile(0.99).hi, None, "too few for the p99 itself");
        let p99 = tail_share(&tonight, &history, 0.1, 5).expect("a tail test");
        assert!(p99.is_effect() && p99.p < FIRST_STEP, "seed {seed}: {p99:?}");
    }
}

#[test]
fn unchanged_nights_of_a_machine_whose_speed_varies_are_rarely_past_the_first_step() {
    // 200 unchanged nights (each against its own seven) on a machine ±5 % from night to night, 1,000 and
    // 10,000 requests: the test at the run's first step should speak about 200 × 2·10⁻⁴ = 0.04 times.
    let (mut tested, mut spoke) = (0, Vec::new());
    for seed in 0..100 {
        for requests in [1_000, 10_000] {
            let (history, tonight) = seven_and_tonight(requests, (0.0, 0.0), 1_000 + seed);
            let t = tail_share(&tonight, &history, 0.1, 5).expect("a tail test");
            tested += 1;
            if t.p <= FIRST_STEP {
                spoke.push((seed, requests, t));
            }
        }
    }
    assert_eq!(tested, 200);
    assert!(spoke.len() <= 1, "{spoke:?}");
}

#[test]
fn a_night_a_quarter_slower_throughout_is_no_tail_regression() {
    // The whole night 25 % slower (a busy machine): the share past the threshold grows, but tonight's p99 stays
    // short of the baseline's p99.9, so there is no tail effect whatever the count says.
    for seed in 0..5 {
        let mut rng = StdRng::seed_from_u64(seed);
        let history: Vec<Sample> = (0..7).map(|_| night(5_000, 5.0, 0.0, (0.0, 0.0), &mut rng)).collect();
        let tonight = night(5_000, 5.0, 1.25f64.ln(), (0.0, 0.0), &mut rng);
        let p99 = tail_share(&tonight, &history, 0.1, 5).expect("a tail test");
        assert!(!p99.is_effect(), "seed {seed}: {p99:?}");
    }
}

#[test]
fn a_ladder_has_no_tail_test_and_a_short_history_none_either() {
    let ladder =
        EndpointResult { requests: 1_000, p50_us: 5_000, p99_us: 12_000, max_us: 20_000, ..Default::default() };
    let (history, tonight) = seven_and_tonight(1_000, (0.0, 0.0), 1);
    let ladders: Vec<Sample> = (0..7).map(|_| Sample::from_result(&ladder)).collect();
    assert_eq!(tail_share(&Sample::from_result(&ladder), &history, 0.1, 5), None);
    assert_eq!(tail_share(&tonight, &ladders, 0.1, 5), None);
    assert_eq!(tail_share(&tonight, &history[..4], 0.1, 5), None, "four nights are fewer than the five needed");
    // Three nights at a new level are too few for a baseline of their own: the last five are pooled.
    let mut rng = StdRng::seed_from_u64(4);
    let mut stepped: Vec<Sample> = (0..4).map(|_| night(1_000, 5.0, 0.0, (0.0, 0.0), &mut rng)).collect();
    stepped.extend((0..3).map(|_| night(1_000, 6.0, 0.0, (0.0, 0.0), &mut rng)));
    let pooled = tail_share(&tonight, &stepped, 0.1, 5).expect("the whole baseline");
    assert_eq!(pooled.history.nights, 5);
}

#[test]
fn only_the_nights_at_the_current_level_set_the_threshold() {
    // Four nights at 5 ms, then four at 20 ms (a new build): tonight at 20 ms is no tail regression, and the
    // threshold is the 20 ms nights' p99.
    let mut rng = StdRng::seed_from_u64(9);
    let mut history: Vec<Sample> = (0..4).map(|_| night(2_000, 5.0, 0.0, (0.0, 0.0), &mut rng)).collect();
    history.extend((0..4).map(|_| night(2_000, 20.0, 0.0, (0.0, 0.0), &mut rng)));
    let tonight = night(2_000, 20.0, 0.0, (0.0, 0.0), &mut rng);
    let p99 = tail_share(&tonight, &history, 0.1, 3).expect("four nights at the level, three needed");
    assert_eq!(p99.history.nights, 4, "{p99:?}");
    assert!(p99.baseline_ms > 40.0 && p99.p > 0.01, "{p99:?}");
}

#[test]
fn a_regressed_night_among_fast_ones_does_not_set_the_threshold() {
    // Seven nights at 0.3 ms, one of them a build that made every request 30 ms (a regression, then fixed);
    // tonight that build again. Pooled whole, its night put the baseline's p99 at 30 ms and tonight read as no
    // tail change; the level leaves it out as an outlier, and so does the threshold.
    let mut rng = StdRng::seed_from_u64(11);
    let mut history: Vec<Sample> = (0..7).map(|_| night(300, 0.3, 0.0, (0.0, 0.0), &mut rng)).collect();
    history[1] = night(300, 30.0, 0.0, (0.0, 0.0), &mut rng);
    let tonight = night(300, 30.0, 0.0, (0.0, 0.0), &mut rng);
    let p99 = tail_share(&tonight, &history, 0.1, 3).expect("six nights at the level");
    assert_eq!(p99.history.nights, 6, "{p99:?}");
    assert!(p99.baseline_ms < 2.0 && p99.p < FIRST_STEP, "{p99:?}");
}

#[test]
fn a_regressed_night_stays_out_when_the_baseline_has_barely_enough_nights() {
    // Five nights, one regressed: four at the level are too few for five needed, and the last five nights
    // would bring the regressed one back. There is no tail test then, rather than one at its slow requests.
    let mut rng = StdRng::seed_from_u64(12);
    let mut history: Vec<Sample> = (0..5).map(|_| night(300, 0.3, 0.0, (0.0, 0.0), &mut rng)).collect();
    history[2] = night(300, 30.0, 0.0, (0.0, 0.0), &mut rng);
    let tonight = night(300, 30.0, 0.0, (0.0, 0.0), &mut rng);
    assert!(tail_share(&tonight, &history, 0.1, 5).is_none());
    // With a sixth usual night, five remain at the level, and the slowdown is caught.
    history.push(night(300, 0.3, 0.0, (0.0, 0.0), &mut rng));
    let p99 = tail_share(&tonight, &history, 0.1, 5).expect("five nights at the level");
    assert_eq!(p99.history.nights, 5, "{p99:?}");
    assert!(p99.baseline_ms < 2.0 && p99.p < FIRST_STEP, "{p99:?}");
}
