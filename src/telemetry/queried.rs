//! A `prometheus` source's telemetry of a run: each series' query asked over each measured window after the
//! run, one value a step (the source's `every`), the step's instants put on the latency timeline's clock; then
//! the same series as a scrape gives (a counter's rate between steps, its cost per 1,000 requests). A query
//! Prometheus refuses leaves its series missing with Prometheus' reason; a server that cannot be asked leaves
//! the whole source missing, asked once, not once a series.
//!
//! Each instant is asked half a step late. Prometheus answers an instant with the last sample scraped at or
//! before it, up to one scrape interval old: readings asked on the window's own instants lean back by half an
//! interval on average, and the first one into what ran before the window (a 30 s capacity hold read every
//! 15 s would count a quarter of the hold before it, or of the pause between holds). So the instants start
//! half a step inside the window and end half a step before its end, each asked half a step late: with
//! `every` the server's scrape interval (as the reference asks), each reading is a sample taken inside the
//! window, centred on average on the instant it is stamped with.

use std::time::Duration;

use super::query::{MAX_STEPS, Prometheus, QueryError, Sample};
use super::scrape::Reading;
use super::series::{Completed, Read, series_from_readings};
use crate::config::{Reads, SeriesSpec, TelemetrySource};
use crate::model::{SourceTelemetry, TelemetryStatus};

/// Seconds a scrape may take to be stored and answered once its instant has passed.
const STORED_WITHIN: f64 = 0.5;

/// Seconds a run may end before its last window does and still be a run that ran it to the end: its stage
/// timers end it within milliseconds of the plan, never a quarter of a second early.
const RUN_END_JITTER: f64 = 0.25;

/// A measured window, from its start to its end as offsets from the run's start (`watch::Window`).
type Window = (Duration, Duration);

/// The run's clock for a query: the Unix time of the latency timeline's zero, and how long the run lasted
/// (a window is asked only up to there: a stopped run's later stages never ran).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunClock {
    /// Seconds since the Unix epoch at the timeline's zero.
    pub zero_unix: f64,
    /// How long after it the run ended.
    pub lasted: Duration,
}

/// Asks `source`'s server for each series over `windows`.
pub async fn query_source(
    prometheus: &Prometheus,
    source: &TelemetrySource,
    windows: &[Window],
    clock: RunClock,
    completed: Completed,
) -> SourceTelemetry {
    let windows: Vec<Window> = windows.iter().filter(|(from, _)| *from <= clock.lasted).copied().collect();
    until_scraped(&windows, clock, source.every).await;
    let mut server_down: Option<String> = None;
    let mut failures: Vec<String> = Vec::new();
    let mut series = Vec::new();
    for spec in &source.series {
        let Reads::Query(query) = &spec.reads else { continue };
        let result = match &server_down {
            Some(why) => Err(QueryError::Server(why.clone())),
            None => read_series(prometheus, source, query, &windows, clock).await,
        };
        series.push(match result {
            Ok(read) => series_from_readings(spec, &read, completed, TelemetryStatus::Complete, None),
            Err(error) => {
                if let QueryError::Server(why) = &error {
                    server_down.get_or_insert_with(|| why.clone());
                }
                failures.push(error.reason().to_owned());
                missing(spec, error.reason(), completed)
            }
        });
    }
    let asked = series.len() as u32;
    let failed = failures.len() as u32;
    let reason = match (failures.first(), windows.is_empty()) {
        (_, true) => Some("no query was made: the run ended before its measured stages began".to_owned()),
        (Some(first), _) if failed == asked && (server_down.is_some() || asked == 1) => Some(first.clone()),
        (Some(first), _) => Some(format!("{failed} of {asked} queries gave nothing; the first: {first}")),
        (None, _) => None,
    };
    let status = match (failed, windows.is_empty()) {
        (_, true) => TelemetryStatus::Missing,
        (0, _) => TelemetryStatus::Complete,
        (failed, _) if failed == asked => TelemetryStatus::Missing,
        _ => TelemetryStatus::Partial,
    };
    if windows.is_empty() {
        return not_asked(source, reason.as_deref().unwrap_or_default(), completed);
    }
    SourceTelemetry { name: source.name.clone(), status, reason, scrapes: asked, failed_scrapes: failed, series }
}

/// A source none of whose queries was asked, and why.
pub fn not_asked(source: &TelemetrySource, why: &str, completed: Completed) -> SourceTelemetry {
    let series = source.series.iter().map(|spec| missing(spec, why, completed)).collect();
    SourceTelemetry {
        name: source.name.clone(),
        status: TelemetryStatus::Missing,
        reason: Some(why.to_owned()),
        scrapes: 0,
        failed_scrapes: 0,
        series,
    }
}

fn missing(spec: &SeriesSpec, reason: &str, completed: Completed) -> crate::model::SeriesTelemetry {
    series_from_readings(spec, &[], completed, TelemetryStatus::Missing, Some(reason))
}

/// One series' readings over every window: a reading at each step of each, found or not.
async fn read_series(
    prometheus: &Prometheus,
    source: &TelemetrySource,
    query: &str,
    windows: &[Window],
    clock: RunClock,
) -> Result<Vec<Read>, QueryError> {
    let step = source.every.as_secs_f64();
    let mut read = Vec::new();
    for (window, &(from, to)) in windows.iter().enumerate() {
        let (first_at, steps) = instants(from.as_secs_f64(), to.as_secs_f64(), step, clock.lasted.as_secs_f64());
        // Prometheus refuses more than 11,000 points in one answer: a long window is asked in pieces.
        for first in (0..steps).step_by(MAX_STEPS) {
            let last = (first + MAX_STEPS).min(steps) - 1;
            let at = |k: usize| clock.zero_unix + first_at + k as f64 * step;
            let late = |k: usize| at(k) + step / 2.0;
            let samples = prometheus.range(source, query, (late(first), late(last)), source.every).await?;
            let asked = (first..=last).map(|k| (at(k), late(k)));
            read.extend(on_steps(&samples, asked, clock.zero_unix, window));
        }
    }
    Ok(read)
}

/// A window's first instant and how many there are, one a `step` (seconds, as `from` and `to`, offsets from
/// the run's start): half a step inside it, each asked half a step late (see the module's header), those of a
/// run that ended at `lasted` only up to its end. The count is the window's, not its end's read to the
/// microsecond: a run that ended a hair before its last window did (29.99 s of a window to 30 s) keeps its last
/// step, which the count from the run's end lost on most nights (a trial's readings stopped at 22.5 s of 30).
fn instants(from: f64, to: f64, step: f64, lasted: f64) -> (f64, usize) {
    let (first_at, last_at) = if to - from >= step {
        (from + step / 2.0, to - step / 2.0)
    } else {
        (f64::midpoint(from, to), f64::midpoint(from, to))
    };
    let steps = ((last_at - first_at) / step + 1e-9).floor() as usize + 1;
    // A stopped run: only the instants asked for before it ended (give or take its timers' jitter).
    let last_asked = lasted + RUN_END_JITTER - step / 2.0;
    if last_asked < first_at {
        // Stopped before the first instant: the middle of what it ran, asked by its end's half step.
        return (f64::midpoint(from, lasted.clamp(from, to)), 1);
    }
    let reached = ((last_asked - first_at) / step + 1e-9).floor() as usize + 1;
    (first_at, steps.min(reached))
}

/// Waits until the server can have scraped and stored the last instant `windows` ask for: half a step after
/// the last one inside the run, at most a window's end ([`read_series`] asks nothing past it), and
/// [`STORED_WITHIN`].
async fn until_scraped(windows: &[Window], clock: RunClock, every: Duration) {
    let Some(end) = windows.iter().map(|(_, to)| *to).max() else { return };
    let end = end.min(clock.lasted + every / 2);
    let ready = clock.zero_unix + end.as_secs_f64() + STORED_WITHIN;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs_f64();
    if ready > now {
        tokio::time::sleep(Duration::from_secs_f64(ready - now)).await;
    }
}

/// A reading at each of `steps`, `(instant, asked at)`: the sample Prometheus gave at the instant it was asked
/// for (it answers exactly on the steps asked for), or none found, stamped with its instant on the run's clock.
fn on_steps(samples: &[Sample], steps: impl Iterator<Item = (f64, f64)>, zero_unix: f64, window: usize) -> Vec<Read> {
    let mut given = samples.iter().peekable();
    steps
        .map(|(at, asked)| {
            // Timestamps come back in milliseconds: within half of one of the instant asked for.
            while given.next_if(|(t, _)| *t < asked - 0.0005).is_some() {}
            let found = given.next_if(|(t, _)| (*t - asked).abs() <= 0.0005);
            let reading = match found {
                Some((_, value)) => Reading { value: *value, matched: 1, ..Reading::default() },
                None => Reading::default(),
            };
            (((at - zero_unix) * 1000.0).round() as i64, window, reading)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_has_its_steps_whenever_the_run_ended_within_its_last() {
        // 5 to 30 s read every 5 s: 7.5, 12.5, 17.5, 22.5, 27.5, whether the run lasted 30 s or 29.99.
        assert_eq!(instants(5.0, 30.0, 5.0, 30.0), (7.5, 5));
        assert_eq!(instants(5.0, 30.0, 5.0, 29.99), (7.5, 5));
        // Stopped at 14 s: the instants asked for before it ended (12.5 would be asked at 15 s).
        assert_eq!(instants(5.0, 30.0, 5.0, 14.0), (7.5, 1));
        assert_eq!(instants(5.0, 30.0, 5.0, 15.1), (7.5, 2));
        // Stopped before the first instant: the middle of what ran.
        assert_eq!(instants(5.0, 30.0, 5.0, 6.0), (5.5, 1));
        // A window shorter than a step: its middle.
        assert_eq!(instants(5.0, 8.0, 5.0, 30.0), (6.5, 1));
    }

    #[test]
    fn samples_land_on_their_steps_and_gaps_stay_gaps() {
        let zero = 1_700_000_000.0;
        let steps = [zero + 1.0, zero + 2.0, zero + 3.0, zero + 4.0].map(|at| (at, at));
        // Prometheus left out the step at 3 s (no sample in its lookback), and wrote the others to the millisecond.
        let samples = [(zero + 1.0, 0.5), (zero + 2.0004, 0.25), (zero + 4.0, f64::NAN)];
        let read = on_steps(&samples, steps.into_iter(), zero, 0);
        let shown: Vec<(i64, usize)> = read.iter().map(|(t, _, r)| (*t, r.matched)).collect();
        assert_eq!(shown, [(1000, 1), (2000, 1), (3000, 0), (4000, 1)]);
        assert!((read[1].2.value - 0.25).abs() < f64::EPSILON);
        assert!(read[3].2.value.is_nan());
    }
}
