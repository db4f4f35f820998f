//! The wall clock that stamps runs, verdicts, episodes, leases and deliveries, and that the scheduler's and
//! the courier's decisions read. Passed in rather than read from `Utc::now()` so the demo can tell a week of
//! nights in minutes (a shifted clock) and tests can move time on instead of sleeping (a manual clock).
//!
//! Durations inside a run are measured on the monotonic clock (`Instant`) whatever this says: only the
//! timestamps that are stored or compared with stored ones come from here.

use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, TimeDelta, Utc};

/// A wall clock; cloning it shares it, so moving one clone moves them all.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    kind: Arc<Kind>,
}

#[derive(Debug, Default)]
enum Kind {
    /// The system's time.
    #[default]
    System,
    /// The system's time moved by a shift that can be changed: time flows, from another starting point.
    Shifted(Mutex<TimeDelta>),
    /// Stands still until moved.
    Manual(Mutex<DateTime<Utc>>),
}

impl Clock {
    /// The system's clock: what every command uses.
    #[must_use]
    pub fn system() -> Self {
        Self::default()
    }

    /// The system's clock, shifted by `shift` (negative: in the past) until [`Clock::set`] or
    /// [`Clock::advance`] moves it.
    #[must_use]
    pub fn shifted(shift: TimeDelta) -> Self {
        Self { kind: Arc::new(Kind::Shifted(Mutex::new(shift))) }
    }

    /// A clock that reads `at` until it is moved.
    #[must_use]
    pub fn manual(at: DateTime<Utc>) -> Self {
        Self { kind: Arc::new(Kind::Manual(Mutex::new(at))) }
    }

    /// The time now, on this clock.
    #[must_use]
    pub fn now(&self) -> DateTime<Utc> {
        match &*self.kind {
            Kind::System => Utc::now(),
            Kind::Shifted(shift) => Utc::now() + *shift.lock().unwrap_or_else(PoisonError::into_inner),
            Kind::Manual(at) => *at.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// Moves a shifted or manual clock so that it reads `at` now (a shifted one goes on from there). The
    /// system's clock is never moved: it is the one clock degrade does not own.
    pub fn set(&self, at: DateTime<Utc>) {
        match &*self.kind {
            Kind::System => {}
            Kind::Shifted(shift) => *shift.lock().unwrap_or_else(PoisonError::into_inner) = at - Utc::now(),
            Kind::Manual(now) => *now.lock().unwrap_or_else(PoisonError::into_inner) = at,
        }
    }

    /// Moves a shifted or manual clock on by `by` (the system's clock, never).
    pub fn advance(&self, by: TimeDelta) {
        self.set(self.now() + by);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_stands_still_until_moved_and_clones_move_together() {
        let start = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let clock = Clock::manual(start);
        let shared = clock.clone();
        assert_eq!(clock.now(), start);
        shared.advance(TimeDelta::seconds(90));
        assert_eq!(clock.now(), start + TimeDelta::seconds(90));
    }

    #[test]
    fn a_shifted_clock_flows_from_where_it_was_set() {
        let clock = Clock::shifted(TimeDelta::days(-7));
        let behind = Utc::now() - clock.now();
        assert!((behind - TimeDelta::days(7)).abs() < TimeDelta::seconds(5), "{behind}");
        let at = Utc::now() - TimeDelta::days(2);
        clock.set(at);
        let read = clock.now();
        assert!(read >= at && read - at < TimeDelta::seconds(5), "{read} against {at}");
    }

    #[test]
    fn the_system_clock_cannot_be_moved() {
        let clock = Clock::system();
        clock.advance(TimeDelta::days(1));
        assert!((clock.now() - Utc::now()).abs() < TimeDelta::seconds(5));
    }
}
