//! `[[data]] max_sessions_per_row`: at most so many sessions hold one row of a feeder at once, as a real
//! account can be logged in once, or a board edited by a handful of people. A session holds each row it drew
//! until it ends ([`RowLease`], given back when dropped, also when a session is cut short); a row already
//! held that often is drawn again, then the next free row after it is taken.

use std::sync::atomic::{AtomicU32, Ordering};

/// How many sessions hold each row of one feeder, against its cap.
#[derive(Debug)]
pub struct RowHolders {
    cap: u32,
    holders: Vec<AtomicU32>,
}

impl RowHolders {
    /// Counters for `rows` rows, each to be held by at most `cap` sessions.
    #[must_use]
    pub fn new(rows: usize, cap: u32) -> Self {
        Self { cap, holders: (0..rows).map(|_| AtomicU32::new(0)).collect() }
    }

    /// The cap.
    #[must_use]
    pub fn cap(&self) -> u32 {
        self.cap
    }

    /// Holds row `index` if fewer than the cap hold it.
    #[must_use = "the row is held only while its lease lives"]
    pub fn take(&self, index: usize) -> Option<RowLease<'_>> {
        let count = self.holders.get(index)?;
        count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.cap).then_some(n + 1)).ok()?;
        Some(RowLease { count })
    }

    /// Holds the first row after `index` (wrapping around) that has room, with its index; `None` when every
    /// row is held as often as the cap allows.
    #[must_use = "the row is held only while its lease lives"]
    pub fn take_next_free(&self, index: usize) -> Option<(usize, RowLease<'_>)> {
        let rows = self.holders.len();
        (1..=rows).map(|step| (index + step) % rows).find_map(|i| self.take(i).map(|lease| (i, lease)))
    }
}

/// One session's hold on one row: given back when dropped.
#[derive(Debug)]
pub struct RowLease<'a> {
    count: &'a AtomicU32,
}

impl Drop for RowLease<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_held_at_most_cap_times_and_given_back_when_dropped() {
        let rows = RowHolders::new(3, 2);
        let (a, b) = (rows.take(1).unwrap(), rows.take(1).unwrap());
        assert!(rows.take(1).is_none(), "two sessions already hold row 1");
        let (next, _c) = rows.take_next_free(1).unwrap();
        assert_eq!(next, 2);
        drop(a);
        assert!(rows.take(1).is_some(), "a lease given back makes room");
        drop(b);
    }

    #[test]
    fn when_every_row_is_full_nothing_is_taken() {
        let rows = RowHolders::new(2, 1);
        let _held = [rows.take(0).unwrap(), rows.take(1).unwrap()];
        assert!(rows.take_next_free(0).is_none());
        assert!(rows.take(7).is_none(), "a row past the file is never held");
    }
}
