//! What a skewed draw will do, said before the first night: the hottest key's share of the draws and the top
//! 1 % of keys' share, exact for the shapes over keys (Zipf, hotspot, weighted values).

use super::Draw;

/// A draw's predicted shape over its keys.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    /// How many keys (or values) it draws from.
    pub keys: u64,
    /// The share of draws on the hottest key.
    pub hottest: f64,
    /// The share of draws on the hottest 1 % of keys (at least one key).
    pub top_percent: f64,
}

/// Past this many keys, a Zipf normaliser's sum goes on as an integral (Euler–Maclaurin, to a relative error
/// far below the shares' printed digits).
const SUMMED_TERMS: u64 = 1_000_000;

impl Draw {
    /// The shape over keys, for draws of keys; `None` for sizes and for `latest` (its keys grow as it runs).
    #[must_use]
    pub fn shape(&self) -> Option<Shape> {
        match self {
            Self::Zipf { keys, s, .. } => {
                let whole = harmonic(*keys, *s);
                let top = top_keys(*keys);
                Some(Shape { keys: *keys, hottest: 1.0 / whole, top_percent: harmonic(top, *s) / whole })
            }
            Self::Hotspot { keys: count, hot_keys, hot_draws, .. } => {
                let (keys, hot) = (*count as f64, *hot_keys as f64);
                let (hot_each, cold_each) =
                    if hot >= keys { (1.0 / keys, 0.0) } else { (hot_draws / hot, (1.0 - hot_draws) / (keys - hot)) };
                let top = top_keys(*count) as f64;
                let top_percent = if top <= hot { top * hot_each } else { hot * hot_each + (top - hot) * cold_each };
                Some(Shape { keys: *count, hottest: hot_each.max(cold_each), top_percent })
            }
            Self::Weighted(weighted) => {
                let mut shares: Vec<f64> = weighted.shares().map(|(_, share)| share).collect();
                shares.sort_by(|a, b| b.total_cmp(a));
                let top = top_keys(shares.len() as u64) as usize;
                Some(Shape {
                    keys: shares.len() as u64,
                    hottest: shares.first().copied().unwrap_or(1.0),
                    top_percent: shares[..top].iter().sum(),
                })
            }
            Self::Latest { .. } | Self::LogNormal { .. } | Self::Pareto { .. } => None,
        }
    }
}

/// The hottest 1 % of `keys`, at least one.
fn top_keys(keys: u64) -> u64 {
    keys.div_ceil(100).max(1)
}

/// The sum of k^-s for k from 1 to n.
fn harmonic(n: u64, s: f64) -> f64 {
    let summed = n.min(SUMMED_TERMS);
    let mut total: f64 = (1..=summed).map(|k| (k as f64).powf(-s)).sum();
    if n > summed {
        let (a, b) = (summed as f64, n as f64);
        let integral =
            if (s - 1.0).abs() < 1e-12 { (b / a).ln() } else { (b.powf(1.0 - s) - a.powf(1.0 - s)) / (1.0 - s) };
        total += integral + (b.powf(-s) - a.powf(-s)) / 2.0;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_shares_are_its_normalised_weights() {
        let shape = Draw::Zipf { low: 1, keys: 100, s: 1.0, scramble: None }.shape().unwrap();
        let h100: f64 = (1..=100).map(|k| 1.0 / f64::from(k)).sum();
        assert!((shape.hottest - 1.0 / h100).abs() < 1e-12);
        assert!((shape.top_percent - shape.hottest).abs() < 1e-12, "1 % of 100 keys is the hottest one");
    }

    #[test]
    fn the_integral_tail_agrees_with_the_sum() {
        let exact: f64 = (1..=3_000_000u64).map(|k| (k as f64).powf(-0.99)).sum();
        assert!((harmonic(3_000_000, 0.99) / exact - 1.0).abs() < 1e-9);
    }

    #[test]
    fn hotspot_shares_split_hot_and_cold_keys() {
        let shape = Draw::Hotspot { low: 0, keys: 1000, hot_keys: 200, hot_draws: 0.8 }.shape().unwrap();
        assert!((shape.hottest - 0.8 / 200.0).abs() < 1e-12);
        assert!((shape.top_percent - 10.0 * 0.8 / 200.0).abs() < 1e-12);
    }
}
