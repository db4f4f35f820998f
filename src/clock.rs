//! The wall clock that stamps runs, verdicts, episodes, leases and deliveries, and that the scheduler's and
//! the courier's decisions read. Passed in rather than read from `Utc::now()` so the demo can tell a week of
//! nights in minutes (a shifted clock) and tests can move time on instead of sleeping (a manual clock).
//!
//! Durations inside a run are measured on the monotonic clock (`Instant`) whatever this says, and leases
//! (and the watch for runs a crashed degrade left `running`) always use the system's clock: they bound real
//! time between processes, which a clock of one process's own cannot.

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

    /// How far this clock reads from the system's clock now (zero for the system's): what moves a time the
    /// system's clock stamped (the engine's) onto this one.
    #[must_use]
    pub fn shift(&self) -> TimeDelta {
        match &*self.kind {
            Kind::System => TimeDelta::zero(),
            Kind::Shifted(shift) => *shift.lock().unwrap_or_else(PoisonError::into_inner),
            Kind::Manual(at) => *at.lock().unwrap_or_else(PoisonError::into_inner) - Utc::now(),
        }
    }

    /// Moves a shifted or manual clock so that it reads `at` now (a shifted one goes on from there). The
    /// system's clock is never moved (debug builds stop on the attempt).
    pub fn set(&self, at: DateTime<Utc>) {
        // Moving the system's clock is a mistake in the caller (a test or the demo given the wrong clock).
        debug_assert!(!matches!(*self.kind, Kind::System), "the system's clock cannot be moved");
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
    fn the_shift_moves_system_stamps_onto_the_clock() {
        assert_eq!(Clock::system().shift(), TimeDelta::zero());
        let shifted = Clock::shifted(TimeDelta::days(-3));
        assert_eq!(shifted.shift(), TimeDelta::days(-3));
        let manual = Clock::manual(Utc::now() - TimeDelta::days(1));
        let stamped = Utc::now() + manual.shift();
        assert!((stamped - manual.now()).abs() < TimeDelta::seconds(5), "{stamped} against {}", manual.now());
    }
}
