//! FNV-1a, 64 bits: the hash of everything degrade stores or compares across runs (a workload's series, a
//! tape's requests). Written out because the value must not change between Rust releases, which `std`'s
//! hasher does not promise.

/// A running FNV-1a hash.
#[derive(Debug, Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// A hash started from `seed` mixed into the offset basis (a keyed hash: different keys, unrelated values).
    #[must_use]
    pub fn keyed(seed: u64) -> Self {
        Self(Self::default().0 ^ seed)
    }

    /// Adds `bytes`.
    pub fn add(&mut self, bytes: &[u8]) -> &mut Self {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self
    }

    /// The hash so far.
    #[must_use]
    pub fn value(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_test_vector() {
        assert_eq!(Fnv::default().add(b"a").value(), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(Fnv::default().value(), 0xcbf2_9ce4_8422_2325);
    }
}
