//! Counting distinct values of a stream in bounded memory: exactly while there are few, then estimated.
//!
//! A tape of millions of requests must be surveyed without a set of millions of hashes. Up to
//! [`EXACT_UP_TO`] values are kept in a set and counted exactly (every small tape, every test); past that
//! they fold into a HyperLogLog sketch (Flajolet, Fusy, Gandouet and Meunier, 2007) of `2^precision` one-byte
//! registers, whose count is off by about `1.04 / sqrt(2^precision)`: 0.8 % at precision 14 (16 KiB),
//! 1.6 % at 12 (4 KiB). Small counts in the sketch use linear counting, as the paper recommends.

use std::collections::HashSet;

/// Values counted exactly before the sketch takes over.
pub const EXACT_UP_TO: usize = 4096;

/// A distinct count of 64-bit hashes.
#[derive(Debug, Clone)]
pub struct DistinctCounter {
    exact: HashSet<u64>,
    registers: Vec<u8>,
    precision: u32,
}

impl DistinctCounter {
    /// A counter whose sketch, once needed, has `2^precision` registers (4 to 16).
    #[must_use]
    pub fn new(precision: u32) -> Self {
        Self { exact: HashSet::new(), registers: Vec::new(), precision: precision.clamp(4, 16) }
    }

    /// Counts `value` (any 64-bit hash; it is mixed again here, so FNV's weak high bits do not matter).
    pub fn add(&mut self, value: u64) {
        if self.registers.is_empty() {
            self.exact.insert(value);
            if self.exact.len() > EXACT_UP_TO {
                self.registers = vec![0; 1 << self.precision];
                for v in std::mem::take(&mut self.exact) {
                    self.fold(v);
                }
            }
        } else {
            self.fold(value);
        }
    }

    fn fold(&mut self, value: u64) {
        let hash = mix(value);
        let index = (hash >> (64 - self.precision)) as usize;
        // The rank of the first 1 bit in the rest; the guard bit bounds it when the rest is all zeros.
        let rest = (hash << self.precision) | (1 << (self.precision - 1));
        let rank = rest.leading_zeros() as u8 + 1;
        self.registers[index] = self.registers[index].max(rank);
    }

    /// How many distinct values were added: exact up to [`EXACT_UP_TO`], estimated beyond.
    #[must_use]
    pub fn count(&self) -> u64 {
        if self.registers.is_empty() {
            return self.exact.len() as u64;
        }
        let m = self.registers.len() as f64;
        let sum: f64 = self.registers.iter().map(|&r| (-f64::from(r)).exp2()).sum();
        let raw = 0.7213 / (1.0 + 1.079 / m) * m * m / sum;
        // Counted once per survey, over at most 64 KiB: not worth a crate.
        #[allow(clippy::naive_bytecount, reason = "counted once, over a few KiB")]
        let zeros = self.registers.iter().filter(|&&r| r == 0).count();
        let estimate = if raw <= 2.5 * m && zeros > 0 { m * (m / zeros as f64).ln() } else { raw };
        estimate.round() as u64
    }
}

/// MurmurHash3's 64-bit finalizer: every input bit reaches every output bit.
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_values_are_counted_exactly_and_many_within_the_sketch_error() {
        let mut counter = DistinctCounter::new(14);
        for i in 0..1000_u64 {
            counter.add(i % 700);
        }
        assert_eq!(counter.count(), 700);
        for n in [10_000_u64, 1_000_000] {
            let mut counter = DistinctCounter::new(14);
            for i in 0..n {
                // Each value twice, sequential numbers: the worst case for a weak hash.
                counter.add(i);
                counter.add(i);
            }
            let error = (counter.count() as f64 / n as f64 - 1.0).abs();
            assert!(error < 0.03, "{n}: counted {} ({error:.4})", counter.count());
        }
    }
}
