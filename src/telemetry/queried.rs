//! A `prometheus` source's telemetry of a run: each series' query asked over each measured window after the
//! run, one value a step (the source's `every`), the step's instants put on the latency timeline's clock; then
//! the same series as a scrape gives (a counter's rate between steps, its cost per 1,000 requests). A query
//! Prometheus refuses leaves its series missing with Prometheus' reason; a server that cannot be asked leaves
//! the whole source missing, asked once, not once a series.

use std::time::Duration;

use super::query::{MAX_STEPS, Prometheus, QueryError, Sample};
use super::scrape::Reading;
use super::series::{Completed, Read, series_from_readings};
use crate::config::{Reads, SeriesSpec, TelemetrySource};
use crate::model::{SourceTelemetry, TelemetryStatus};

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
    let windows: Vec<Window> = windows
        .iter()
        .filter(|(from, _)| *from <= clock.lasted)
        .map(|(from, to)| (*from, (*to).min(clock.lasted)))
        .collect();
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
    for (window, (from, to)) in windows.iter().enumerate() {
        let steps = ((to.as_secs_f64() - from.as_secs_f64()) / step).floor() as usize + 1;
        // Prometheus refuses more than 11,000 points in one answer: a long window is asked in pieces.
        for first in (0..steps).step_by(MAX_STEPS) {
            let last = (first + MAX_STEPS).min(steps) - 1;
            let at = |k: usize| clock.zero_unix + from.as_secs_f64() + k as f64 * step;
            let samples = prometheus.range(source, query, (at(first), at(last)), source.every).await?;
            read.extend(on_steps(&samples, (first..=last).map(at), clock.zero_unix, window));
        }
    }
    Ok(read)
}

/// A reading at each of `steps`: the sample Prometheus gave at that instant (it answers exactly on the steps
/// asked for), or none found.
fn on_steps(samples: &[Sample], steps: impl Iterator<Item = f64>, zero_unix: f64, window: usize) -> Vec<Read> {
    let mut given = samples.iter().peekable();
    steps
        .map(|at| {
            // Timestamps come back in milliseconds: within half of one of the instant asked for.
            while given.next_if(|(t, _)| *t < at - 0.0005).is_some() {}
            let found = given.next_if(|(t, _)| (*t - at).abs() <= 0.0005);
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
    fn samples_land_on_their_steps_and_gaps_stay_gaps() {
        let zero = 1_700_000_000.0;
        let steps = [zero + 1.0, zero + 2.0, zero + 3.0, zero + 4.0];
        // Prometheus left out the step at 3 s (no sample in its lookback), and wrote the others to the millisecond.
        let samples = [(zero + 1.0, 0.5), (zero + 2.0004, 0.25), (zero + 4.0, f64::NAN)];
        let read = on_steps(&samples, steps.into_iter(), zero, 0);
        let shown: Vec<(i64, usize)> = read.iter().map(|(t, _, r)| (*t, r.matched)).collect();
        assert_eq!(shown, [(1000, 1), (2000, 1), (3000, 0), (4000, 1)]);
        assert!((read[1].2.value - 0.25).abs() < f64::EPSILON);
        assert!(read[3].2.value.is_nan());
    }
}
