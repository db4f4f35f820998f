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
        Ok(Self { values, cumulative })
    }

    /// One value, by weight.
    pub fn pick(&self, rng: &mut SmallRng) -> &Value {
        let total = self.cumulative.last().copied().unwrap_or(0.0);
        let point = rng.random_range(0.0..total);
        let index = self.cumulative.partition_point(|&c| c <= point).min(self.values.len() - 1);
        &self.values[index]
    }

    /// Each value with its share of the draws.
    pub fn shares(&self) -> impl Iterator<Item = (&Value, f64)> {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let before = std::iter::once(0.0).chain(self.cumulative.iter().copied());
        self.values.iter().zip(self.cumulative.iter().zip(before)).map(move |(v, (c, b))| (v, (c - b) / total))
    }
}
