//! `--sample N`: a reproducible sample of a log, stratified by route so rare routes survive.
//!
//! The import counts each route's requests in a first pass; each route then gets its share of `N`, but at
//! least [`MIN_PER_ROUTE`] requests (all of them if it has fewer; fewer when the routes are so many that
//! the minimums would take more than half of `N`), so a route seen 30 times in 2 million lines is still
//! replayed. In the second pass each route keeps exactly its quota, chosen uniformly along
//! the log by selection sampling (Knuth's algorithm S) from a seeded generator: memory per route, not per
//! line, and the same seed picks the same lines.

use std::collections::{BTreeMap, HashMap};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The fewest requests a route keeps in a sample (all of them if it has fewer).
pub const MIN_PER_ROUTE: u64 = 5;

/// Which lines a sample keeps, route by route.
#[derive(Debug)]
pub struct StratifiedSample {
    /// Per route: requests still to keep, and requests still to come.
    left: HashMap<String, (u64, u64)>,
    rng: SmallRng,
}

impl StratifiedSample {
    /// Quotas for a sample of about `size` requests from routes seen `counts` times.
    #[must_use]
    pub fn plan(counts: &BTreeMap<String, u64>, size: u64, seed: u64) -> Self {
        let total: u64 = counts.values().sum();
        // The minimum may take at most half the sample: with more routes than that allows, it shrinks (to
        // none), so a sample never grows far past the size asked for.
        let minimum = MIN_PER_ROUTE.min(size / 2 / (counts.len() as u64).max(1));
        let left = counts
            .iter()
            .map(|(route, &count)| {
                let share = (size as f64 * count as f64 / total.max(1) as f64).round() as u64;
                (route.clone(), (share.max(minimum).min(count), count))
            })
            .collect();
        Self { left, rng: SmallRng::seed_from_u64(seed) }
    }

    /// The requests the sample will hold.
    #[must_use]
    pub fn planned(&self) -> u64 {
        self.left.values().map(|(quota, _)| quota).sum()
    }

    /// Whether the next request of `route` is kept.
    pub fn keep(&mut self, route: &str) -> bool {
        let Some((quota, remaining)) = self.left.get_mut(route) else { return false };
        if *remaining == 0 {
            return false;
        }
        let keep = self.rng.random_range(0..*remaining) < *quota;
        *remaining -= 1;
        if keep {
            *quota -= 1;
        }
        keep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_route_keeps_its_quota_and_rare_routes_survive() {
        let counts: BTreeMap<String, u64> =
            [("hot".to_owned(), 10_000), ("warm".to_owned(), 1_000), ("rare".to_owned(), 3)].into_iter().collect();
        let mut sample = StratifiedSample::plan(&counts, 1_100, 5);
        assert_eq!(sample.planned(), 1_000 + 100 + 3);
        let mut kept: BTreeMap<&str, u64> = BTreeMap::new();
        for i in 0..11_003_u64 {
            let route = match i % 11 {
                _ if i >= 11_000 => "rare",
                0 => "warm",
                _ => "hot",
            };
            if sample.keep(route) {
                *kept.entry(route).or_default() += 1;
            }
        }
        assert_eq!(kept, [("hot", 1_000), ("rare", 3), ("warm", 100)].into_iter().collect());
        // Thousands of routes and a small sample: the minimum gives way, the sample keeps its size.
        let many: BTreeMap<String, u64> = (0..5_000).map(|i| (format!("r{i}"), 10)).collect();
        assert!(StratifiedSample::plan(&many, 1_000, 1).planned() <= 1_000);
    }

    #[test]
    fn the_same_seed_keeps_the_same_lines() {
        let counts: BTreeMap<String, u64> = [("r".to_owned(), 1_000)].into_iter().collect();
        let lines = |seed| {
            let mut sample = StratifiedSample::plan(&counts, 50, seed);
            (0..1_000_u32).filter(|_| sample.keep("r")).collect::<Vec<_>>()
        };
        assert_eq!(lines(1).len(), 50);
        assert_eq!(lines(1), lines(1));
        assert_ne!(lines(1), lines(2));
    }
}
