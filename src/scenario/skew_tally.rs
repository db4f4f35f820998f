//! What a run drew from each skewed feeder and draw, counted as it goes: how many draws fell on the predicted
//! hottest key and on the predicted top 1 % of keys. Three counters a site, whatever the number of keys, so
//! a draw over half a million boards costs no memory; the run stores the shares beside `validate`'s
//! prediction ([`crate::model::SkewObserved`]).

use std::sync::atomic::{AtomicU64, Ordering};

use super::distribution::{Draw, Shape};
use crate::model::SkewObserved;

/// The counters of one skewed feeder or draw.
#[derive(Debug)]
pub struct SkewTally {
    site: String,
    draw: &'static str,
    shape: Shape,
    /// Ranks below this are the top 1 %.
    top_ranks: u64,
    draws: AtomicU64,
    hottest: AtomicU64,
    top: AtomicU64,
}

impl SkewTally {
    /// Counters for `draw` at `site`; `None` for draws without a shape over keys (`latest`, sizes).
    #[must_use]
    pub fn new(site: String, draw: &Draw) -> Option<Self> {
        let shape = draw.shape()?;
        Some(Self {
            site,
            draw: draw.name(),
            top_ranks: shape.keys.div_ceil(100).max(1),
            shape,
            draws: AtomicU64::new(0),
            hottest: AtomicU64::new(0),
            top: AtomicU64::new(0),
        })
    }

    /// Counts one draw of popularity `rank` (0: the hottest).
    pub fn record(&self, rank: u64) {
        self.draws.fetch_add(1, Ordering::Relaxed);
        if rank == 0 {
            self.hottest.fetch_add(1, Ordering::Relaxed);
        }
        if rank < self.top_ranks {
            self.top.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The predicted shares beside the counted ones so far.
    #[must_use]
    pub fn observed(&self) -> SkewObserved {
        let draws = self.draws.load(Ordering::Relaxed);
        let share =
            |count: &AtomicU64| if draws == 0 { 0.0 } else { count.load(Ordering::Relaxed) as f64 / draws as f64 };
        SkewObserved {
            site: self.site.clone(),
            draw: self.draw.to_owned(),
            keys: self.shape.keys,
            predicted_hottest: self.shape.hottest,
            predicted_top_percent: self.shape.top_percent,
            draws,
            observed_hottest: share(&self.hottest),
            observed_top_percent: share(&self.top),
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    use super::*;

    #[test]
    fn counted_shares_meet_the_predicted_ones() {
        let draw = super::super::distribution::compile("zipf", &[1.into(), 1000.into(), 0.99.into()]).unwrap();
        let tally = SkewTally::new("boards".into(), &draw).unwrap();
        let mut rng = SmallRng::seed_from_u64(7);
        for _ in 0..100_000 {
            let (_, rank) = draw.sample_ranked(&mut rng, 0);
            tally.record(rank.unwrap());
        }
        let seen = tally.observed();
        assert_eq!(seen.draws, 100_000);
        // Binomial standard errors at 100k draws: ~0.1 % for 13 %, ~0.15 % for 38 %; five of them is margin.
        assert!((seen.observed_hottest - seen.predicted_hottest).abs() < 0.005, "{seen:?}");
        assert!((seen.observed_top_percent - seen.predicted_top_percent).abs() < 0.008, "{seen:?}");
    }

    #[test]
    fn weighted_values_count_by_weight_not_by_place() {
        let args = ["view".into(), 5.into(), "edit".into(), 70.into(), "delete".into(), 25.into()];
        let draw = super::super::distribution::compile("weighted", &args).unwrap();
        let tally = SkewTally::new("op".into(), &draw).unwrap();
        let mut rng = SmallRng::seed_from_u64(3);
        for _ in 0..20_000 {
            let (value, rank) = draw.sample_ranked(&mut rng, 0);
            assert_eq!(rank == Some(0), value == "edit", "the heaviest value is ranked first");
            tally.record(rank.unwrap());
        }
        let seen = tally.observed();
        assert!((seen.predicted_hottest - 0.70).abs() < 1e-12);
        assert!((seen.observed_hottest - 0.70).abs() < 0.02, "{seen:?}");
    }

    #[test]
    fn sizes_and_latest_have_no_tally() {
        let draw = super::super::distribution::compile("lognormal", &[100.into(), 0.5.into()]).unwrap();
        assert!(SkewTally::new("size".into(), &draw).is_none());
    }
}
