//! The unit tests of `level`.

#![allow(clippy::float_cmp)]

use super::*;

#[test]
fn a_lone_spike_is_not_a_segment() {
    let y = [1.0, 1.02, 0.98, 1.01, 3.0, 0.99, 1.0, 1.01, 0.98, 1.02];
    let e = estimate(&y, &[0.0; 20][..y.len()], 0.02, None);
    assert_eq!(e.segments, 1);
    assert!((e.level - 1.0).abs() < 0.01, "{e:?}");
    assert!(e.sigma < 0.05, "the spike must not inflate the noise: {e:?}");
}

#[test]
fn a_step_that_held_is_the_current_level() {
    let y = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.5, 1.49, 1.51, 1.5, 1.52];
    let e = estimate(&y, &[0.0; 20][..y.len()], 0.02, None);
    assert_eq!(e.segments, 2);
    assert!((e.level - 1.5).abs() < 0.02, "{e:?}");
    assert!(e.sigma < 0.05, "the step is not noise: {e:?}");
}

#[test]
fn a_step_that_did_not_hold_is_not_the_level() {
    // Eight usual nights, then slow, usual, slow (a regression, its fix, the regression again): one
    // segment with an outlier to the segmentation, but the usual night says the step did not hold.
    let mut y = vec![0.0, 0.01, -0.01, 0.005, -0.005, 0.0, 0.01, -0.01];
    y.extend([0.38, 0.0, 0.38]);
    let e = estimate(&y, &[0.0; 11], 0.02, None);
    assert!(e.level.abs() < 0.02, "{e:?}");
    assert_eq!(e.tail, None, "one slow night since the return is no new level: {e:?}");
    // Two slow nights since it are an unsettled new level; three, the level.
    y.push(0.38);
    assert!(estimate(&y, &[0.0; 12], 0.02, None).tail.is_some_and(|(m, n)| (m - 0.38).abs() < 1e-9 && n == 2));
    y.push(0.38);
    assert!((estimate(&y, &[0.0; 13], 0.02, None).level - 0.38).abs() < 0.02);
}

#[test]
fn a_strong_drift_is_one_line_read_where_it_stands_tonight() {
    // 4 % a night for 20 nights with ±1 % wobble: as levels alone, a staircase of short steps.
    let wobble = [0.01, -0.01, 0.005, -0.005, 0.0, 0.01, -0.01, 0.008, -0.004, 0.002];
    let y: Vec<f64> = (0..20).map(|i| 0.04 * i as f64 + wobble[i % 10]).collect();
    let e = estimate(&y, &[0.0; 20], 0.02, None);
    assert_eq!(e.segments, 1, "{e:?}");
    assert!((e.drift - 0.04).abs() < 0.003, "{e:?}");
    assert!((e.level - 0.04 * 20.0).abs() < 0.02, "tonight's expected value is on the line: {e:?}");
    assert!(e.level_weight < e.level_nights as f64 / 2.0, "an extrapolation is paid for: {e:?}");
}

#[test]
fn two_new_nights_are_an_unsettled_tail() {
    let y = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.01, 1.6, 1.62];
    let e = estimate(&y, &[0.0; 20][..y.len()], 0.02, None);
    assert!((e.level - 1.0).abs() < 0.02, "{e:?}");
    assert_eq!(e.tail.map(|(_, n)| n), Some(2));
}

#[test]
fn two_new_nights_after_nights_wandering_in_pairs_are_an_unsettled_tail() {
    // A busy machine: usual nights that move in pairs, so no level holds three nights; then a step.
    let mut y = vec![0.06, 0.17, 0.32, 0.34, 0.0, 0.06, 3.5, 3.52];
    let e = estimate(&y, &[0.0; 8], 0.02, None);
    assert_eq!(e.segments, 4, "{e:?}");
    assert!(e.tail.is_some_and(|(m, n)| (m - 3.51).abs() < 1e-9 && n == 2), "{e:?}");
    assert!(e.level < 0.35 && e.level_nights == 6, "{e:?}");
    // A last pair that wandered a little further than the pairs before it, no step: no new level.
    let wandering = [0.06, 0.17, 0.32, 0.34, 0.0, 0.06, 0.5, 0.52];
    assert_eq!(estimate(&wandering, &[0.0; 8], 0.02, None).tail, None);
    // A third night there is the level.
    y.push(3.5);
    let e = estimate(&y, &[0.0; 9], 0.02, None);
    assert!((e.level - 3.5).abs() < 0.02 && e.tail.is_none(), "{e:?}");
}

#[test]
fn one_odd_nights_sampling_is_not_every_nights() {
    // Sixteen nights measured to ±3 %, one of them bimodal (its p50's interval from 1 to 41 ms, ±170 %).
    let y: Vec<f64> = (0..16).map(|i| (0.8_f64 + 0.02 * f64::from(i % 4)).ln()).collect();
    let mut sampling = vec![0.03_f64.powi(2); 16];
    sampling[0] = 1.7_f64.powi(2);
    let e = estimate(&y, &sampling, 0.02, None);
    assert!(e.sampling_var < 0.05_f64.powi(2), "{e:?}");
    // Tonight +54 %, measured to ±2 %: far beyond the level (a trial's gate read it as 1.7 sigma).
    let tonight = super::super::shift::shift(&e, (1.343_f64).ln(), 0.02_f64.powi(2));
    assert!(tonight.z > 5.0, "{tonight:?}");
}

#[test]
fn medians() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
}
