//! This machine's clock against the database's: the offset (database minus this machine) measured over several
//! round trips, the tightest kept (its error is at most half its round trip), and the tolerances a split night
//! holds its clocks to.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::store::{Store, StoreError};

/// Round trips per measurement: the tightest of five is rarely slowed by a scheduling hiccup on both legs.
const ROUND_TRIPS: usize = 5;

/// A clock further than this from the database's is not kept by NTP (which holds servers within a few
/// milliseconds): its machine's figures cannot be placed in time against the others', so the night is invalid.
pub const MAX_OFFSET: Duration = Duration::from_millis(500);

/// A clock whose offset moved more than this between before and after the load was stepped or drifted during
/// the night: the seconds of its timeline are not the others'.
pub const MAX_DRIFT: Duration = Duration::from_millis(50);

/// Segments whose loads started further apart than this did not run one plan: their shares of each second do
/// not add up to the plan's second (a rate ramp would be smeared by the difference).
pub const MAX_START_SPREAD: Duration = Duration::from_millis(100);

/// The test-only skew added to this machine's clock (`DEGRADE_TEST_CLOCK_SKEW_MS`, debug builds only), so a
/// test can make one segment's clock wrong.
pub const SKEW_VARIABLE: &str = "DEGRADE_TEST_CLOCK_SKEW_MS";

/// One offset measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offset {
    /// Database minus this machine, microseconds.
    pub offset_us: i64,
    /// The round trip it was measured over, microseconds.
    pub round_trip_us: i64,
}

/// This machine's clock, microseconds since 1970 (with the test-only skew, in a debug build).
#[must_use]
pub fn own_clock_us() -> i64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_micros() as i64;
    now + skew_us()
}

fn skew_us() -> i64 {
    if !cfg!(debug_assertions) {
        return 0;
    }
    std::env::var(SKEW_VARIABLE).ok().and_then(|v| v.trim().parse::<i64>().ok()).map_or(0, |ms| ms * 1_000)
}

/// Measures the offset to the database's clock, keeping the tightest of [`ROUND_TRIPS`].
pub async fn measure(store: &Store) -> Result<Offset, StoreError> {
    let mut best: Option<Offset> = None;
    for _ in 0..ROUND_TRIPS {
        let sent = own_clock_us();
        let database = store.database_clock_us().await?;
        let received = own_clock_us();
        let round_trip_us = received - sent;
        let offset = Offset { offset_us: database - i64::midpoint(sent, received), round_trip_us };
        if best.is_none_or(|b| round_trip_us < b.round_trip_us) {
            best = Some(offset);
        }
    }
    Ok(best.expect("at least one round trip"))
}

/// Why a segment's clock makes the night invalid, if it does.
#[must_use]
pub fn clock_reasons(index: u32, before: Option<i64>, after: Option<i64>) -> Vec<String> {
    let ms = |us: i64| us as f64 / 1000.0;
    let mut reasons = Vec::new();
    if let Some(offset) = before.into_iter().chain(after).max_by_key(|o| o.abs())
        && offset.unsigned_abs() > MAX_OFFSET.as_micros() as u64
    {
        reasons.push(format!(
            "segment {index}'s clock is {:.1} ms from the database's (at most {} ms): its machine keeps no synchronised \
             time",
            ms(offset),
            MAX_OFFSET.as_millis()
        ));
    }
    if let (Some(before), Some(after)) = (before, after)
        && (after - before).unsigned_abs() > MAX_DRIFT.as_micros() as u64
    {
        reasons.push(format!(
            "segment {index}'s clock moved {:.1} ms against the database's during the night ({:.1} ms before, {:.1} ms \
             after; at most {} ms)",
            ms(after - before),
            ms(before),
            ms(after),
            MAX_DRIFT.as_millis()
        ));
    }
    reasons
}

/// The spread of the segments' starts (database clock, µs), and why it makes the night invalid if it does.
#[must_use]
pub fn start_spread(starts: &[i64]) -> (Option<i64>, Option<String>) {
    let (Some(first), Some(last)) = (starts.iter().min(), starts.iter().max()) else { return (None, None) };
    let spread = last - first;
    let reason = (spread.unsigned_abs() > MAX_START_SPREAD.as_micros() as u64).then(|| {
        format!(
            "the segments' loads started {:.1} ms apart (at most {} ms): they did not run one plan",
            spread as f64 / 1000.0,
            MAX_START_SPREAD.as_millis()
        )
    });
    (Some(spread), reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_drift_and_spread_past_their_tolerance_are_named_with_their_numbers() {
        assert!(clock_reasons(1, Some(3_000), Some(4_000)).is_empty());
        let far = clock_reasons(2, Some(2_000_000), Some(2_001_000));
        assert_eq!(far.len(), 1);
        assert!(far[0].starts_with("segment 2's clock is 2001.0 ms from the database's"), "{far:?}");
        let drifted = clock_reasons(0, Some(0), Some(80_000));
        assert!(drifted[0].contains("moved 80.0 ms"), "{drifted:?}");
        assert_eq!(start_spread(&[10, 3_010, 1_000]), (Some(3_000), None));
        assert!(start_spread(&[0, 150_000]).1.unwrap().contains("150.0 ms apart"));
    }
}
