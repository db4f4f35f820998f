use rand::SeedableRng;
use statrs::distribution::{ChiSquared, ContinuousCDF};

use super::*;

fn draws(draw: &Draw, count: usize, seed: u64) -> Vec<i64> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..count).map(|_| draw.sample(&mut rng, 0).as_i64().unwrap()).collect()
}

fn zipf(low: i64, high: i64, s: f64, scramble: bool) -> Draw {
    let keys = (high - low + 1) as u64;
    Draw::Zipf { low, keys, s, scramble: scramble.then(|| Feistel::new(keys, 42)) }
}

#[test]
fn the_same_seed_draws_the_same_keys() {
    let draw = zipf(1, 500_000, 0.99, true);
    assert_eq!(draws(&draw, 1000, 7), draws(&draw, 1000, 7));
    assert_ne!(draws(&draw, 1000, 7), draws(&draw, 1000, 8));
}

#[test]
fn zipf_fits_its_weights_by_chi_square() {
    let n = 200_000;
    let mut counts = [0u64; 100];
    for key in draws(&zipf(1, 100, 0.99, false), n, 1) {
        counts[(key - 1) as usize] += 1;
    }
    let weights: Vec<f64> = (1..=100).map(|k| f64::from(k).powf(-0.99)).collect();
    let total: f64 = weights.iter().sum();
    let statistic: f64 = counts
        .iter()
        .zip(&weights)
        .map(|(&observed, w)| {
            let expected = n as f64 * w / total;
            (observed as f64 - expected).powi(2) / expected
        })
        .sum();
    // 99 degrees of freedom; a fit this bad or worse has a chance of one in a million.
    let limit = ChiSquared::new(99.0).unwrap().inverse_cdf(1.0 - 1e-6);
    assert!(statistic < limit, "chi-square {statistic:.1} against {limit:.1}");
    assert!(counts[0] > counts[1] && counts[1] > counts[9], "key 1 is the hottest: {counts:?}");
}

#[test]
fn the_scramble_is_a_bijection_that_keeps_the_skew() {
    for domain in [1, 2, 7, 1000, 65_537] {
        let feistel = Feistel::new(domain, 3);
        let mut seen: Vec<u64> = (0..domain).map(|i| feistel.permute(i)).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..domain).collect::<Vec<_>>(), "domain {domain}");
    }
    let n = 200_000;
    let (plain, scrambled) = (draws(&zipf(0, 9_999, 0.99, false), n, 5), draws(&zipf(0, 9_999, 0.99, true), n, 5));
    let hottest = |keys: &[i64]| {
        let mut counts = std::collections::HashMap::new();
        for key in keys {
            *counts.entry(*key).or_insert(0u64) += 1;
        }
        counts.into_iter().max_by_key(|(_, c)| *c).unwrap()
    };
    let ((plain_key, plain_count), (hot_key, hot_count)) = (hottest(&plain), hottest(&scrambled));
    assert_eq!(plain_key, 0);
    assert_eq!(plain_count, hot_count, "the same draws, each rank moved to one key");
    assert_ne!(hot_key, 0, "the hottest key is spread into the range");
}

#[test]
fn hotspot_puts_its_share_on_the_hot_keys() {
    let draw = Draw::Hotspot { low: 1, keys: 1000, hot_keys: 100, hot_draws: 0.9 };
    let keys = draws(&draw, 200_000, 2);
    let hot = keys.iter().filter(|&&k| k <= 100).count() as f64 / keys.len() as f64;
    assert!((hot - 0.9).abs() < 0.005, "{hot}");
    assert!(keys.iter().all(|k| (1..=1000).contains(k)));
}

#[test]
fn weighted_draws_in_proportion() {
    let pairs = vec![(Value::from("view"), 70.0), (Value::from("edit"), 25.0), (Value::from("delete"), 5.0)];
    let draw = Draw::Weighted(Weighted::new(pairs).unwrap());
    let mut rng = SmallRng::seed_from_u64(4);
    let n = 200_000;
    let picks: Vec<Value> = (0..n).map(|_| draw.sample(&mut rng, 0)).collect();
    for (value, share) in [("view", 0.70), ("edit", 0.25), ("delete", 0.05)] {
        let seen = picks.iter().filter(|v| v.as_str() == Some(value)).count() as f64 / f64::from(n);
        assert!((seen - share).abs() < 0.01, "{value}: {seen}");
    }
    assert!(Weighted::new(vec![(Value::from(1), -1.0)]).unwrap_err().contains("at least 0"));
    assert!(Weighted::new(vec![(Value::from(1), 0.0)]).unwrap_err().contains("above 0"));
}

#[test]
fn latest_prefers_the_newest_numbers() {
    let mut rng = SmallRng::seed_from_u64(9);
    let draw = Draw::Latest { s: 0.99 };
    let picks: Vec<i64> = (0..10_000).map(|_| draw.sample(&mut rng, 1000).as_i64().unwrap()).collect();
    assert!(picks.iter().all(|p| (1..=1000).contains(p)));
    let newest = picks.iter().filter(|&&p| p == 1000).count();
    let oldest = picks.iter().filter(|&&p| p == 1).count();
    assert!(newest > 10 * oldest.max(1), "newest {newest}, oldest {oldest}");
    assert_eq!(draw.sample(&mut rng, 0), Value::from(1), "before any seq() the newest is 1");
}

#[test]
fn sizes_keep_their_median_and_floor() {
    let mut rng = SmallRng::seed_from_u64(11);
    let lognormal = Draw::LogNormal { median: 2000.0, sigma: 1.0, integer: true };
    let mut sizes: Vec<i64> = (0..20_001).map(|_| lognormal.sample(&mut rng, 0).as_i64().unwrap()).collect();
    sizes.sort_unstable();
    let median = sizes[10_000] as f64;
    assert!((median / 2000.0 - 1.0).abs() < 0.05, "{median}");
    let pareto = Draw::Pareto { min: 10.0, shape: 1.5, integer: false };
    assert!((0..1000).all(|_| pareto.sample(&mut rng, 0).as_f64().unwrap() >= 10.0));
}
