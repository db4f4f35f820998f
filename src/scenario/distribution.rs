//! Skewed draws for realistic test data: a few huge boards, many small ones, some hot. Production traffic
//! is rarely uniform over ids, and a workload that spreads users evenly warms no cache the way production does.
//! The shapes are YCSB's request distributions and two heavy-tailed sizes:
//!
//! - `zipf(low, high, s)`: the k-th key of `low..=high` drawn with weight k^-s (s = 0.99 is YCSB's); `low` is
//!   the hottest key, `low + 1` the next, and so on;
//! - `zipf_scrambled(low, high, s)`: the same skew with the hot keys spread over the range by a seeded
//!   bijection (a Feistel permutation, so no two ranks share a key: hashing ranks modulo the range would);
//! - `hotspot(low, high, hot_keys, hot_draws)`: a share `hot_draws` of the draws falls on the first share
//!   `hot_keys` of the range, uniformly; the rest on the others;
//! - `latest(s)`: skewed towards the newest number `seq()` handed out this run (what was just created is
//!   read most), with weight k^-s for the k-th newest;
//! - `weighted(value, weight, …)`: one of the values, in proportion to its weight;
//! - `lognormal(median, sigma)` and `pareto(min, shape)`: sizes and counts with a heavy tail (an integer when
//!   the median or minimum is written as one).
//!
//! Every draw comes from the session's generator, seeded from the run's seed, so the same seed replays the same
//! keys; the scrambled order is seeded by the call's own arguments, so the hot keys are the same ones every
//! night and caches are warmed alike.

use rand::Rng;
use rand::rngs::SmallRng;
use rand_distr::{Distribution, LogNormal, Pareto, Zipf};
use serde_json::Value;

mod compile;
mod shape;
mod weighted;

pub use compile::compile;
pub use shape::Shape;
pub use weighted::Weighted;

/// A compiled draw.
#[derive(Debug, Clone, PartialEq)]
pub enum Draw {
    /// The k-th key of `low..=high` with weight k^-s, optionally spread by a bijection.
    Zipf {
        /// The hottest key.
        low: i64,
        /// How many keys.
        keys: u64,
        /// The skew.
        s: f64,
        /// The seeded permutation that spreads ranks over the range, for `zipf_scrambled`.
        scramble: Option<Feistel>,
    },
    /// A share of the draws on the first share of the keys.
    Hotspot {
        /// The first key.
        low: i64,
        /// How many keys.
        keys: u64,
        /// How many of them are hot (at least 1, fewer than `keys` unless every key is).
        hot_keys: u64,
        /// The share of draws on the hot keys.
        hot_draws: f64,
    },
    /// Skewed towards the newest `seq()` number.
    Latest {
        /// The skew.
        s: f64,
    },
    /// One of several values by weight.
    Weighted(Weighted),
    /// e^N(ln median, sigma²); rounded when `integer`.
    LogNormal {
        /// Its median.
        median: f64,
        /// The standard deviation of its logarithm.
        sigma: f64,
        /// Written as an integer.
        integer: bool,
    },
    /// Pareto from `min` with tail index `shape`; rounded when `integer`.
    Pareto {
        /// The smallest value.
        min: f64,
        /// The tail index: the smaller, the heavier.
        shape: f64,
        /// Written as an integer.
        integer: bool,
    },
}

impl Draw {
    /// The template function it was written as.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Zipf { scramble: None, .. } => "zipf",
            Self::Zipf { scramble: Some(_), .. } => "zipf_scrambled",
            Self::Hotspot { .. } => "hotspot",
            Self::Latest { .. } => "latest",
            Self::Weighted(_) => "weighted",
            Self::LogNormal { .. } => "lognormal",
            Self::Pareto { .. } => "pareto",
        }
    }

    /// One draw; `seq` is the run's latest `seq()` number (for `latest`).
    pub fn sample(&self, rng: &mut SmallRng, seq: u64) -> Value {
        self.sample_ranked(rng, seq).0
    }

    /// One draw with its popularity rank for the draws of keys ([`Draw::shape`]): 0 for the hottest key, and
    /// below the top 1 %'s count for the top 1 %, in the order the predicted shape counts them, so a run can
    /// count what it drew beside what `validate` predicted. `None` for `latest` and the sizes.
    pub fn sample_ranked(&self, rng: &mut SmallRng, seq: u64) -> (Value, Option<u64>) {
        match self {
            Self::Zipf { low, keys, s, scramble } => {
                let rank = zipf_rank(*keys, *s, rng);
                let index = scramble.as_ref().map_or(rank, |f| f.permute(rank));
                (Value::from(offset(*low, index)), Some(rank))
            }
            Self::Hotspot { low, keys, hot_keys, hot_draws } => {
                let hot = *hot_keys == *keys || rng.random_bool(hot_draws.clamp(0.0, 1.0));
                let index = if hot { rng.random_range(0..*hot_keys) } else { rng.random_range(*hot_keys..*keys) };
                // The hot keys are equally hot: the first of them stands for "the hottest", as in the shape.
                (Value::from(offset(*low, index)), Some(index))
            }
            Self::Latest { s } => {
                let newest = seq.max(1);
                (Value::from(newest - zipf_rank(newest, *s, rng)), None)
            }
            Self::Weighted(weighted) => {
                let (value, rank) = weighted.pick_ranked(rng);
                (value.clone(), Some(rank))
            }
            Self::LogNormal { median, sigma, integer } => {
                let value = LogNormal::new(median.ln(), *sigma).map_or(*median, |d| d.sample(rng));
                (number(value, *integer), None)
            }
            Self::Pareto { min, shape, integer } => {
                let value = Pareto::new(*min, *shape).map_or(*min, |d| d.sample(rng));
                (number(value, *integer), None)
            }
        }
    }
}

impl Draw {
    /// The popularity rank of the key `index` places past `low`, where the draw says it: a feeder's skewed
    /// order draws row indices from 0, so a row a session ends up with (another than drawn, when its cap is
    /// full) is counted at its own rank. `None` for scrambled keys (which place holds which rank is the
    /// permutation's secret), `latest` and the sizes.
    #[must_use]
    pub fn rank_of_index(&self, index: u64) -> Option<u64> {
        match self {
            Self::Zipf { scramble: None, .. } | Self::Hotspot { .. } => Some(index),
            Self::Weighted(weighted) => weighted.rank_of(usize::try_from(index).ok()?),
            Self::Zipf { scramble: Some(_), .. }
            | Self::Latest { .. }
            | Self::LogNormal { .. }
            | Self::Pareto { .. } => None,
        }
    }
}

/// A rank from 0 (the hottest) to `keys - 1`, with weight (rank + 1)^-s.
fn zipf_rank(keys: u64, s: f64, rng: &mut SmallRng) -> u64 {
    match Zipf::new(keys as f64, s) {
        // Zipf draws 1..=keys as a float holding an integer.
        Ok(zipf) => (zipf.sample(rng) as u64).clamp(1, keys) - 1,
        Err(_) => 0,
    }
}

/// `low + index`, saturating: the range was checked to fit when the draw was compiled.
fn offset(low: i64, index: u64) -> i64 {
    low.saturating_add(i64::try_from(index).unwrap_or(i64::MAX))
}

fn number(value: f64, integer: bool) -> Value {
    if integer {
        // Beyond 2^53 a float holds no exact integer; a size that large is capped, not wrapped.
        Value::from(value.round().min(9.007_199_254_740_992e15) as i64)
    } else {
        serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
    }
}

/// A seeded permutation of `0..domain`: a balanced Feistel network on the smallest even number of bits that
/// holds the domain, walking the cycle until the value falls inside it (each step is a bijection of the
/// larger power of two, so the walk ends and the whole is a bijection of the domain).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feistel {
    domain: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Feistel {
    /// A permutation of `0..domain` (at least 1) seeded by `seed`.
    #[must_use]
    pub fn new(domain: u64, seed: u64) -> Self {
        let bits = 64 - domain.max(2).saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut state = seed;
        let keys = std::array::from_fn(|_| {
            state = splitmix(state);
            state
        });
        Self { domain: domain.max(1), half_bits, keys }
    }

    /// Where `index` (below the domain) goes.
    #[must_use]
    pub fn permute(&self, index: u64) -> u64 {
        let mut value = index;
        loop {
            value = self.round_trip(value);
            if value < self.domain {
                return value;
            }
        }
    }

    fn round_trip(&self, value: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut left, mut right) = (value >> self.half_bits, value & mask);
        for key in self.keys {
            let mixed = splitmix(right ^ key) & mask;
            (left, right) = (right, left ^ mixed);
        }
        (left << self.half_bits) | right
    }
}

/// SplitMix64's finaliser: spreads nearby inputs over unrelated outputs.
pub(super) fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests;
