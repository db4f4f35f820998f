//! When the scheduler acts, as pure functions of the schedule, the last run and the time now: whether a run
//! was missed while degrade was down (catch-up) and whether a run is overdue (missing-run alert). Fire times
//! come from [`Schedule`], which evaluates the cron expression in its IANA timezone at every step, so
//! daylight-saving changes move the run with the wall clock instead of by an offset frozen at start-up.

use chrono::{DateTime, Utc};

use crate::config::Schedule;

/// The fire time missed since `reference` (the last run's start, or when the scenario was first seen), if
/// the schedule fired after it and at or before `now`: the run to catch up on at start-up.
#[must_use]
pub fn missed_fire(schedule: &Schedule, reference: DateTime<Utc>, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let last_fire = schedule.previous_at_or_before(now)?.with_timezone(&Utc);
    (last_fire > reference).then_some(last_fire)
}

/// The fire time whose run is overdue: the first one after `reference` (the last run's start, or when the
/// scenario was first seen), once `grace` has passed since it without a run starting.
#[must_use]
pub fn overdue_fire(
    schedule: &Schedule,
    reference: DateTime<Utc>,
    grace: std::time::Duration,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let due = schedule.next_after(reference)?.with_timezone(&Utc);
    let grace = chrono::TimeDelta::from_std(grace).ok()?;
    (now >= due + grace).then_some(due)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    fn nightly_in_berlin() -> Schedule {
        Schedule::parse("0 2 * * *", "Europe/Berlin".parse().unwrap()).unwrap()
    }

    #[test]
    fn a_night_missed_while_down_is_caught_up_once() {
        let schedule = nightly_in_berlin();
        // Last run Monday 02:00 Berlin (01:00 UTC); degrade was down over Tuesday's 02:00.
        let monday = at("2026-01-12T01:00:05Z");
        assert_eq!(missed_fire(&schedule, monday, at("2026-01-13T09:00:00Z")), Some(at("2026-01-13T01:00:00Z")));
        // Started again before Tuesday's run was due: nothing to catch up on.
        assert_eq!(missed_fire(&schedule, monday, at("2026-01-13T00:30:00Z")), None);
        // The caught-up run started after the missed fire, so a second restart does not repeat it.
        assert_eq!(missed_fire(&schedule, at("2026-01-13T09:00:01Z"), at("2026-01-13T10:00:00Z")), None);
    }

    #[test]
    fn a_nightly_run_is_missing_an_hour_after_it_was_due() {
        let schedule = nightly_in_berlin();
        let last = at("2026-01-12T01:00:05Z");
        let grace = Duration::from_hours(1);
        assert_eq!(overdue_fire(&schedule, last, grace, at("2026-01-13T01:59:59Z")), None);
        assert_eq!(overdue_fire(&schedule, last, grace, at("2026-01-13T02:00:00Z")), Some(at("2026-01-13T01:00:00Z")));
    }

    #[test]
    fn weekends_without_runs_are_not_missing() {
        let weekdays = Schedule::parse("0 2 * * 1-5", chrono_tz::Tz::UTC).unwrap();
        let friday = at("2026-01-16T02:00:03Z");
        assert_eq!(overdue_fire(&weekdays, friday, Duration::from_hours(1), at("2026-01-18T23:00:00Z")), None);
        let monday_late = at("2026-01-19T03:00:00Z");
        assert_eq!(
            overdue_fire(&weekdays, friday, Duration::from_hours(1), monday_late),
            Some(at("2026-01-19T02:00:00Z"))
        );
    }

    #[test]
    fn daylight_saving_moves_the_utc_time_not_the_wall_clock_time() {
        let schedule = nightly_in_berlin();
        // Europe/Berlin springs forward on 2026-03-29: 02:00 local does not exist that night, and the
        // nights around it fire at 01:00 UTC (winter) and 00:00 UTC (summer).
        let before = schedule.next_after(at("2026-03-27T12:00:00Z")).unwrap().with_timezone(&Utc);
        let after = schedule.next_after(at("2026-03-30T12:00:00Z")).unwrap().with_timezone(&Utc);
        assert_eq!(before, at("2026-03-28T01:00:00Z"));
        assert_eq!(after, at("2026-03-31T00:00:00Z"));
        // Across the change the run still happens once a night (croner moves the missing 02:00 forward).
        let change_night = schedule.next_after(before).unwrap().with_timezone(&Utc);
        assert!(change_night > before && change_night < after, "{change_night}");
    }
}
