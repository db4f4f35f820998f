//! Cron schedules with a timezone.
//!
//! Users write the common 5-field form (`0 2 * * *`) or the 6-field form with seconds first that
//! tokio-cron-scheduler runs (`0 0 2 * * *`); nicknames such as `@daily` work too. Either way the schedule is
//! normalised to 6 fields, parsed with the scheduler's own parser (croner), and [`Schedule::understood_as`]
//! tells the user which reading was taken, because `0 2 * * *` read as six fields would be a different
//! schedule entirely.

use std::fmt;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

/// How the user wrote the expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CronForm {
    /// `minute hour day-of-month month day-of-week`, run at second 0.
    FiveFields,
    /// `second minute hour day-of-month month day-of-week`.
    SixFields,
    /// `@daily`, `@hourly`, …
    Nickname,
}

/// Who runs a scenario's scheduled nights (`[[scenario]] run_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunBy {
    /// `degrade serve` runs them at their fire times.
    #[default]
    Serve,
    /// Something else does (a Kubernetes CronJob, a CI schedule): `serve` never runs them, only watches for
    /// them, and raises `missing_run` when one has not started within its grace (without a schedule it could
    /// not tell a night that never came from one that was never due).
    Elsewhere,
}

impl RunBy {
    /// Reads `serve` or `elsewhere`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "serve" => Ok(Self::Serve),
            "elsewhere" => Ok(Self::Elsewhere),
            other => Err(format!(
                "`{other}` is not who runs the schedule: \"serve\" (degrade serve runs it) or \"elsewhere\" (a \
                 CronJob or CI runs it; serve watches for it)"
            )),
        }
    }
}

/// A validated schedule: when a scenario runs, in which timezone.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The expression as written in the config.
    pub written: String,
    /// The expression handed to the scheduler: 6 fields (seconds first), or a nickname such as `@daily`.
    pub six_fields: String,
    /// How the written expression was read.
    pub form: CronForm,
    /// The IANA timezone the expression is evaluated in (daylight-saving changes included).
    pub timezone: Tz,
    cron: Cron,
}

impl Schedule {
    /// Parses `expression` in `timezone`; the error says what is wrong in words a user can act on.
    pub fn parse(expression: &str, timezone: Tz) -> Result<Self, String> {
        let written = expression.trim();
        let (form, six_fields) = normalise(written)?;
        out_of_range(&six_fields).map_or(Ok(()), |problem| Err(format!("`{written}`: {problem}")))?;
        let cron = CronParser::builder()
            .seconds(Seconds::Required)
            .year(Year::Disallowed)
            .build()
            .parse(&six_fields)
            .map_err(|e| format!("`{written}` is not a valid cron expression: {e}"))?;
        if cron.find_next_occurrence(&Utc::now().with_timezone(&timezone), false).is_err() {
            return Err(format!("`{written}` never fires (no such date), so the scenario would never run"));
        }
        Ok(Self { written: written.to_owned(), six_fields, form, timezone, cron })
    }

    /// The first time strictly after `after` at which the schedule fires.
    #[must_use]
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Tz>> {
        self.cron.find_next_occurrence(&after.with_timezone(&self.timezone), false).ok()
    }

    /// The last time at or before `at` at which the schedule fired.
    #[must_use]
    pub fn previous_at_or_before(&self, at: DateTime<Utc>) -> Option<DateTime<Tz>> {
        self.cron.find_previous_occurrence(&at.with_timezone(&self.timezone), true).ok()
    }

    /// One sentence for `validate`: which reading was taken and what it means.
    #[must_use]
    pub fn understood_as(&self) -> String {
        let form = match self.form {
            CronForm::FiveFields => "5-field cron (minute hour day month weekday), at second 0",
            CronForm::SixFields => "6-field cron (second minute hour day month weekday)",
            CronForm::Nickname => "cron nickname",
        };
        format!(
            "`{}` read as {form} = `{}` in {}: {}",
            self.written,
            self.six_fields,
            self.timezone.name(),
            self.cron.describe()
        )
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.written, self.timezone.name())
    }
}

fn normalise(written: &str) -> Result<(CronForm, String), String> {
    if written.starts_with('@') {
        return Ok((CronForm::Nickname, written.to_owned()));
    }
    let fields: Vec<&str> = written.split_whitespace().collect();
    match fields.len() {
        5 => Ok((CronForm::FiveFields, format!("0 {}", fields.join(" ")))),
        6 => Ok((CronForm::SixFields, fields.join(" "))),
        n => Err(format!(
            "`{written}` has {n} fields; write 5 (minute hour day month weekday, e.g. `0 2 * * *` for 02:00 \
             daily) or 6 with seconds first (e.g. `0 0 2 * * *`)"
        )),
    }
}

/// Each field of a six-field expression, its name and the numbers it takes.
const FIELDS: [(&str, u32, u32); 6] = [
    ("second", 0, 59),
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of the month", 1, 31),
    ("month", 1, 12),
    ("weekday", 0, 7),
];

/// The first number outside its field's range, in words (`the hour is 25; it goes from 0 to 23`). Steps
/// (`*/15`) are counts, not values, and names (`MON`, `JAN`) are left to the parser.
fn out_of_range(six_fields: &str) -> Option<String> {
    for (field, (name, low, high)) in six_fields.split_whitespace().zip(FIELDS) {
        for part in field.split(',') {
            let values = part.split('/').next().unwrap_or_default();
            for value in values.split('-').filter_map(|v| v.parse::<u64>().ok()) {
                if value < u64::from(low) || value > u64::from(high) {
                    return Some(format!("the {name} is {value}; it goes from {low} to {high}"));
                }
            }
        }
    }
    None
}

/// Parses an IANA timezone name such as `Europe/Berlin` or `UTC`.
pub fn parse_timezone(name: &str) -> Result<Tz, String> {
    name.parse::<Tz>().map_err(|_| {
        format!("unknown timezone `{name}`; use an IANA name such as `UTC`, `Europe/Berlin` or `America/New_York`")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_fields_mean_minute_first_at_second_zero() {
        let schedule = Schedule::parse("30 2 * * *", Tz::UTC).unwrap();
        assert_eq!(schedule.form, CronForm::FiveFields);
        assert_eq!(schedule.six_fields, "0 30 2 * * *");
        let next = schedule.next_after("2026-01-01T00:00:00Z".parse().unwrap()).unwrap();
        assert_eq!(next.to_rfc3339(), "2026-01-01T02:30:00+00:00");
    }

    #[test]
    fn six_fields_have_seconds_first() {
        let schedule = Schedule::parse("15 30 2 * * *", Tz::UTC).unwrap();
        assert_eq!(schedule.form, CronForm::SixFields);
        let next = schedule.next_after("2026-01-01T00:00:00Z".parse().unwrap()).unwrap();
        assert_eq!(next.to_rfc3339(), "2026-01-01T02:30:15+00:00");
    }

    #[test]
    fn follows_daylight_saving_time() {
        let berlin: Tz = "Europe/Berlin".parse().unwrap();
        let schedule = Schedule::parse("0 2 * * *", berlin).unwrap();
        let winter = schedule.next_after("2026-01-10T12:00:00Z".parse().unwrap()).unwrap();
        let summer = schedule.next_after("2026-07-10T12:00:00Z".parse().unwrap()).unwrap();
        assert_eq!(winter.with_timezone(&Utc).to_rfc3339(), "2026-01-11T01:00:00+00:00");
        assert_eq!(summer.with_timezone(&Utc).to_rfc3339(), "2026-07-11T00:00:00+00:00");
    }

    #[test]
    fn rejects_what_it_cannot_read() {
        assert!(Schedule::parse("0 2 * *", Tz::UTC).unwrap_err().contains("has 4 fields"));
        assert_eq!(
            Schedule::parse("61 2 * * *", Tz::UTC).unwrap_err(),
            "`61 2 * * *`: the minute is 61; it goes from 0 to 59"
        );
        assert!(Schedule::parse("0 25 * * *", Tz::UTC).unwrap_err().contains("the hour is 25; it goes from 0 to 23"));
        assert!(Schedule::parse("0 2 1-32 * *", Tz::UTC).unwrap_err().contains("the day of the month is 32"));
        assert!(Schedule::parse("*/15 2 * * MON-FRI", Tz::UTC).is_ok());
        assert!(Schedule::parse("0 2 * * BLAH", Tz::UTC).unwrap_err().contains("not a valid cron"));
        assert!(Schedule::parse("0 0 30 2 *", Tz::UTC).unwrap_err().contains("never fires"));
        assert!(parse_timezone("Mars/Olympus").unwrap_err().contains("unknown timezone `Mars/Olympus`"));
    }
}
