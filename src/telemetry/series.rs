//! From a source's scrapes to its kept series: a gauge's value per scrape; a counter's rate between two
//! scrapes in a row of the same measured window (stamped at the second); a share when the series has a
//! divisor; and each series' summary over the measured stages. Pure: scrapes in, telemetry out.

use super::scrape::{Reading, Scraped};
use crate::config::{Reads, SeriesSpec, TelemetrySource};
use crate::model::{SeriesKind, SeriesSummary, SeriesTelemetry, SourceTelemetry, TelemetryPoint, TelemetryStatus};

/// One scrape as it happened.
#[derive(Debug, Clone, PartialEq)]
pub struct ScrapeOutcome {
    /// When it started, in milliseconds since the run started.
    pub elapsed_ms: i64,
    /// The measured window it fell in: a counter's rate is taken only between scrapes of one window.
    pub window: usize,
    /// What it read, or why it could not.
    pub result: Result<Scraped, String>,
}

/// The requests the run completed over its measured stages, and how long those lasted: the denominator of
/// a counter's cost per 1,000 requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Completed {
    /// Requests completed in the measured stages.
    pub requests: u64,
    /// Seconds the measured stages lasted.
    pub measured_secs: f64,
}

/// The telemetry `outcomes` give `source`.
#[must_use]
pub fn source_telemetry(source: &TelemetrySource, outcomes: &[ScrapeOutcome], completed: Completed) -> SourceTelemetry {
    let failures: Vec<&str> = outcomes.iter().filter_map(|o| o.result.as_ref().err().map(String::as_str)).collect();
    let scrapes = outcomes.len() as u32;
    let failed_scrapes = failures.len() as u32;
    let reason = match (failures.first(), scrapes) {
        (_, 0) => Some("no scrape was made: the run ended before its measured stages began".to_owned()),
        (Some(first), _) if failed_scrapes == scrapes => Some(if scrapes == 1 {
            (*first).to_owned()
        } else {
            format!("all {scrapes} scrapes failed; the first: {first}")
        }),
        (Some(first), _) => Some(format!("{failed_scrapes} of {scrapes} scrapes failed; the first: {first}")),
        (None, _) => None,
    };
    let status = status_of(failed_scrapes, scrapes);
    let series = source
        .series
        .iter()
        .enumerate()
        .map(|(index, spec)| series_telemetry(spec, index, outcomes, completed, status, reason.as_deref()))
        .collect();
    SourceTelemetry { name: source.name.clone(), status, reason, scrapes, failed_scrapes, series }
}

fn status_of(failed: u32, tried: u32) -> TelemetryStatus {
    match (failed, tried) {
        (_, 0) => TelemetryStatus::Missing,
        (0, _) => TelemetryStatus::Complete,
        (failed, tried) if failed == tried => TelemetryStatus::Missing,
        _ => TelemetryStatus::Partial,
    }
}

/// One series of the source; `source_status` and `source_reason` say what the scrapes did.
fn series_telemetry(
    spec: &SeriesSpec,
    index: usize,
    outcomes: &[ScrapeOutcome],
    completed: Completed,
    source_status: TelemetryStatus,
    source_reason: Option<&str>,
) -> SeriesTelemetry {
    // The scrapes that were read, with this series' reading in each.
    let read: Vec<Read> = outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().ok().map(|s| (o.elapsed_ms, o.window, s.readings[index])))
        .collect();
    series_from_readings(spec, &read, completed, source_status, source_reason)
}

/// One reading of a series: when (milliseconds since the run started), in which measured window, and what.
pub type Read = (i64, usize, Reading);

/// A series from its readings, in time order: a scrape's, or a Prometheus server's at each step of its query.
/// `source_status` and `source_reason` say what the source's reads did as a whole.
#[must_use]
pub fn series_from_readings(
    spec: &SeriesSpec,
    read: &[Read],
    completed: Completed,
    source_status: TelemetryStatus,
    source_reason: Option<&str>,
) -> SeriesTelemetry {
    let (points, totals) = match spec.kind {
        SeriesKind::Gauge => (gauge_points(read), None),
        SeriesKind::Counter => {
            let (points, totals) = counter_points(read);
            (points, Some(totals))
        }
    };
    let own_reason = own_reason(spec, read, points.is_empty());
    let status = match (points.is_empty(), source_status, &own_reason) {
        (true, _, _) => TelemetryStatus::Missing,
        (false, TelemetryStatus::Complete, None) => TelemetryStatus::Complete,
        (false, _, _) => TelemetryStatus::Partial,
    };
    let reason = [source_reason.map(str::to_owned), own_reason].into_iter().flatten().collect::<Vec<_>>();
    let summary = summary(&points, totals, spec, completed);
    SeriesTelemetry {
        name: spec.name.clone(),
        unit: spec.value_unit(),
        count_unit: spec.count_unit(),
        kind: spec.kind,
        worse: spec.worse,
        status,
        reason: (!reason.is_empty()).then(|| reason.join("; ")),
        points,
        summary,
    }
}

/// Why the series itself lacks values where its scrapes were read: a selector that matched nothing (a query
/// that gave no value), a counter with too few scrapes or reset throughout, a divisor at zero. `None` when no
/// scrape was read (the source's reason says it all) or nothing is wrong.
fn own_reason(spec: &SeriesSpec, read: &[Read], no_values: bool) -> Option<String> {
    let unmatched = read.iter().filter(|(_, _, r)| r.matched == 0).count();
    let (nothing, read_one, reads) = match &spec.reads {
        Reads::Samples { metric, .. } => (format!("no sample matched `{metric}`"), "scrape", "scrapes"),
        Reads::Query(_) => ("the query gave no value".to_owned(), "step", "steps"),
    };
    match (unmatched, read.len(), no_values, spec.kind) {
        (_, 0, _, _) => None,
        (n, all, _, _) if n == all && all > 0 => Some(format!("{nothing} in any {read_one}")),
        (n, all, _, _) if n > 0 => Some(format!("{nothing} in {n} of {all} {reads}")),
        (_, 1, true, SeriesKind::Counter) => {
            Some(format!("a counter's rate needs two {reads} in a row, and fewer were read"))
        }
        (_, _, true, _) if spec.divide_by().is_some() => Some(format!(
            "its divisor `{}` stayed at zero",
            spec.divide_by().map(ToString::to_string).unwrap_or_default()
        )),
        (_, _, true, SeriesKind::Counter) => {
            Some(format!("the counter went down (it was reset) between every two {reads}"))
        }
        _ => None,
    }
}

/// A gauge's value at each scrape where it was found (and its divisor was not zero).
fn gauge_points(read: &[Read]) -> Vec<TelemetryPoint> {
    read.iter()
        .filter(|(_, _, r)| r.matched > 0)
        .filter_map(|(elapsed_ms, _, r)| {
            let value = match r.divisor {
                Some(divisor) if divisor != 0.0 => r.value / divisor,
                Some(_) => return None,
                None => r.value,
            };
            value.is_finite().then_some(TelemetryPoint { elapsed_ms: *elapsed_ms, value })
        })
        .collect()
}

/// A counter's whole increase over the pairs of scrapes it was measured on: of itself, of its divisor, and
/// the seconds they spanned.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Totals {
    increase: f64,
    divisor_increase: f64,
    secs: f64,
}

/// A counter's rate (or share) between each two scrapes in a row of one window, and its totals. A pair where
/// it went down (a restart reset it) or its divisor did not grow gives no value.
fn counter_points(read: &[Read]) -> (Vec<TelemetryPoint>, Totals) {
    let mut points = Vec::new();
    let mut totals = Totals::default();
    for pair in read.windows(2) {
        let [(t0, w0, r0), (t1, w1, r1)] = pair else { continue };
        if w0 != w1 || r0.matched == 0 || r1.matched == 0 || t1 <= t0 {
            continue;
        }
        let secs = (t1 - t0) as f64 / 1000.0;
        let increase = r1.value - r0.value;
        if increase < 0.0 || !increase.is_finite() {
            continue;
        }
        let value = match (r0.divisor, r1.divisor) {
            (Some(d0), Some(d1)) if d1 - d0 > 0.0 => {
                totals.divisor_increase += d1 - d0;
                increase / (d1 - d0)
            }
            (Some(_), Some(_)) => continue,
            _ => increase / secs,
        };
        if value.is_finite() {
            totals.increase += increase;
            totals.secs += secs;
            points.push(TelemetryPoint { elapsed_ms: *t1, value });
        }
    }
    (points, totals)
}

fn summary(
    points: &[TelemetryPoint],
    totals: Option<Totals>,
    spec: &SeriesSpec,
    completed: Completed,
) -> Option<SeriesSummary> {
    if points.is_empty() {
        return None;
    }
    let max = points.iter().map(|p| p.value).fold(f64::NEG_INFINITY, f64::max);
    let Some(totals) = totals else {
        let mean = points.iter().map(|p| p.value).sum::<f64>() / points.len() as f64;
        return Some(SeriesSummary { mean, max, per_1000_requests: None });
    };
    let mean = if spec.divide_by().is_some() {
        totals.increase / totals.divisor_increase
    } else {
        totals.increase / totals.secs
    };
    // Its growth per second over the requests completed per second: time scraped and time measured differ by
    // up to one interval, and rates compare them fairly.
    let request_rate = completed.requests as f64 / completed.measured_secs;
    let per_1000_requests =
        (request_rate > 0.0 && request_rate.is_finite()).then(|| totals.increase / totals.secs / request_rate * 1000.0);
    Some(SeriesSummary { mean, max, per_1000_requests: per_1000_requests.filter(|v| v.is_finite()) })
}

#[cfg(test)]
#[path = "series_tests.rs"]
mod tests;
