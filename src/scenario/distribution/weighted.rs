//! `weighted("view", 70, "edit", 25, "delete", 5)`: one of several values, in proportion to its weight.

use rand::Rng;
use rand::rngs::SmallRng;
use serde_json::Value;

/// Values with their weights, ready to draw from.
#[derive(Debug, Clone, PartialEq)]
pub struct Weighted {
    values: Vec<Value>,
    /// The running total of the weights up to each value.
    cumulative: Vec<f64>,
    /// Each value's place when the values are sorted by weight, the heaviest first (ties in written order).
    ranks: Vec<u64>,
}

impl Weighted {
    /// From (value, weight) pairs; every weight finite and at least 0, their sum above 0.
    pub fn new(pairs: Vec<(Value, f64)>) -> Result<Self, String> {
        if pairs.is_empty() {
            return Err("weighted() needs at least one value and its weight".to_owned());
        }
        let mut total = 0.0;
        let mut cumulative = Vec::with_capacity(pairs.len());
        let mut values = Vec::with_capacity(pairs.len());
        for (value, weight) in pairs {
            if !weight.is_finite() || weight < 0.0 {
                return Err(format!("the weight of {value} must be a number of at least 0, not {weight}"));
            }
            total += weight;
            cumulative.push(total);
            values.push(value);
        }
        if total <= 0.0 {
            return Err("weighted() needs a weight above 0".to_owned());
        }
        let ranks = ranks_by_weight(&cumulative);
        Ok(Self { values, cumulative, ranks })
    }

    /// One value, by weight.
    pub fn pick(&self, rng: &mut SmallRng) -> &Value {
        self.pick_ranked(rng).0
    }

    /// One value, by weight, with its place among the values sorted by weight (0: the heaviest).
    pub fn pick_ranked(&self, rng: &mut SmallRng) -> (&Value, u64) {
        let total = self.cumulative.last().copied().unwrap_or(0.0);
        let point = rng.random_range(0.0..total);
        let index = self.cumulative.partition_point(|&c| c <= point).min(self.values.len() - 1);
        (&self.values[index], self.ranks[index])
    }

    /// The place by weight of the value written `index`-th.
    #[must_use]
    pub fn rank_of(&self, index: usize) -> Option<u64> {
        self.ranks.get(index).copied()
    }

    /// Each value with its share of the draws.
    pub fn shares(&self) -> impl Iterator<Item = (&Value, f64)> {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let before = std::iter::once(0.0).chain(self.cumulative.iter().copied());
        self.values.iter().zip(self.cumulative.iter().zip(before)).map(move |(v, (c, b))| (v, (c - b) / total))
    }
}

/// Each value's place by weight, read off the running totals.
fn ranks_by_weight(cumulative: &[f64]) -> Vec<u64> {
    let weights: Vec<f64> = cumulative.iter().scan(0.0, |before, &c| Some(c - std::mem::replace(before, c))).collect();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]).then(a.cmp(&b)));
    let mut ranks = vec![0; weights.len()];
    for (rank, index) in order.into_iter().enumerate() {
        ranks[index] = rank as u64;
    }
    ranks
}
