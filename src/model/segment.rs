//! A segment of a night split across generator machines (`degrade run --segment K/N`): which share of the
//! plan this process sends.
//!
//! Every segment builds the whole plan from the same scenario and seed and keeps only its exact share, so the N
//! shares add up to the single-machine plan with nothing planned twice or lost: open-model arrival number `n`
//! belongs to segment `n mod N`, closed-model user `j` to segment `j mod N`, and a cap of `c` (connections,
//! sessions in flight) gives segment `K` the `j < c` with `j mod N = K`. Numbers are global, so a session's
//! random choices (its flow, its draws) are the ones it would have made on one machine.

use std::fmt;
use std::str::FromStr;

/// The most segments a night may be split into: far past any cluster a night needs (each segment is a
/// generator machine), small enough that a typo (`--segment 0/40000`) is refused rather than planned.
pub const MAX_SEGMENTS: u32 = 1_024;

/// Segment `index` of `count` (`K/N`, `0 <= K < N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Segment {
    index: u32,
    count: u32,
}

impl Segment {
    /// Segment `index` of `count`.
    ///
    /// # Errors
    /// When `count` is 0 or past [`MAX_SEGMENTS`], or `index` is not below `count`.
    pub fn new(index: u32, count: u32) -> Result<Self, String> {
        if count == 0 || count > MAX_SEGMENTS {
            return Err(format!("the segment count must be 1 to {MAX_SEGMENTS}, not {count}"));
        }
        if index >= count {
            return Err(format!("segment {index}/{count}: the index counts from 0 and must be below {count}"));
        }
        Ok(Self { index, count })
    }

    /// `K`, counted from 0.
    #[must_use]
    pub fn index(self) -> u32 {
        self.index
    }

    /// `N`, the number of segments.
    #[must_use]
    pub fn count(self) -> u32 {
        self.count
    }

    /// Whether arrival (or user) number `number` of the whole plan is this segment's.
    #[must_use]
    pub fn owns(self, number: u64) -> bool {
        number % u64::from(self.count) == u64::from(self.index)
    }

    /// This segment's share of `total` things numbered `0..total`: how many of them it owns.
    #[must_use]
    pub fn share(self, total: u64) -> u64 {
        let (n, k) = (u64::from(self.count), u64::from(self.index));
        (total + n - 1 - k) / n
    }

    /// This segment's share of a cap (connections, sessions in flight): at least one, so a segment whose share
    /// rounds to nothing can still send.
    #[must_use]
    pub fn share_of_cap(self, cap: usize) -> usize {
        (self.share(cap as u64) as usize).max(1)
    }
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Segment {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let usage = || format!("`{text}` is not a segment: write K/N, e.g. 0/4 for the first of four");
        let (index, count) = text.split_once('/').ok_or_else(usage)?;
        let index = index.trim().parse::<u32>().map_err(|_| usage())?;
        let count = count.trim().parse::<u32>().map_err(|_| usage())?;
        Self::new(index, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_k_of_n_and_refuses_the_rest() {
        assert_eq!("2/3".parse::<Segment>(), Segment::new(2, 3));
        assert_eq!("2/3".parse::<Segment>().unwrap().to_string(), "2/3");
        for bad in ["3/3", "1", "a/2", "0/0", "-1/2", "0/5000"] {
            assert!(bad.parse::<Segment>().is_err(), "{bad}");
        }
    }

    #[test]
    fn shares_add_up_to_the_whole() {
        for count in 1..=7 {
            for total in 0..50_u64 {
                let shares: u64 = (0..count).map(|k| Segment::new(k, count).unwrap().share(total)).sum();
                assert_eq!(shares, total, "{total} over {count}");
                for k in 0..count {
                    let segment = Segment::new(k, count).unwrap();
                    assert_eq!((0..total).filter(|&j| segment.owns(j)).count() as u64, segment.share(total));
                }
            }
        }
    }
}
