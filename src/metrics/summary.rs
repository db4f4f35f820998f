//! Histograms and counters per endpoint, and the figures stored from them.
//!
//! Response times are kept in HdrHistograms in microseconds, 1 µs to 1 h at 3 significant digits (0.1 %
//! error at any scale), so memory is fixed whatever the run length. Per-second histograms for the timeline
//! keep 2 digits (1 %): a fifth of the memory, plenty for a chart.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Serializer, V2Serializer};

use super::ErrorClass;
use super::interval::{error_rate_interval, percentile_interval};
use crate::model::{EndpointResult, Intervals, TimelinePoint};

/// The slowest response a histogram holds, in µs: one hour. Longer values are clamped to it.
const MAX_US: u64 = 3_600_000_000;

/// Sample messages kept per error class: enough to see what went wrong, bounded however many failed.
pub const SAMPLES_PER_CLASS: usize = 3;

/// An empty response-time histogram: µs, 1 µs … 1 h, 3 significant digits.
#[must_use]
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("constant bounds are valid")
}

fn record(histogram: &mut Histogram<u64>, us: u64) {
    histogram.saturating_record(us.clamp(1, MAX_US));
}

/// Everything recorded for one endpoint over a run (or one worker's share of it).
#[derive(Debug, Clone)]
pub struct EndpointRecord {
    /// End − intended start, failures included (a timeout at its timeout).
    pub response: Histogram<u64>,
    /// End − sent (after any wait for a connection slot): what the server alone took, blind to coordinated omission.
    pub service: Histogram<u64>,
    /// Requests attempted, failures and dropped arrivals included.
    pub requests: u64,
    /// Failures per class, indexed by [`ErrorClass::index`].
    pub errors: [u64; ErrorClass::ALL.len()],
    /// The first few messages per class.
    pub samples: BTreeMap<ErrorClass, Vec<String>>,
}

impl Default for EndpointRecord {
    fn default() -> Self {
        Self {
            response: new_histogram(),
            service: new_histogram(),
            requests: 0,
            errors: [0; ErrorClass::ALL.len()],
            samples: BTreeMap::new(),
        }
    }
}

impl EndpointRecord {
    /// Records one request. `response_us` is `None` for an arrival that was never sent.
    pub fn record(&mut self, response_us: Option<u64>, service_us: Option<u64>, error: Option<(ErrorClass, &str)>) {
        self.requests += 1;
        if let Some(us) = response_us {
            record(&mut self.response, us);
        }
        if let Some(us) = service_us {
            record(&mut self.service, us);
        }
        if let Some((class, message)) = error {
            self.errors[class.index()] += 1;
            let samples = self.samples.entry(class).or_default();
            if samples.len() < SAMPLES_PER_CLASS && !samples.iter().any(|s| s == message) {
                samples.push(message.to_owned());
            }
        }
    }

    /// Adds `other` into this record.
    pub fn merge(&mut self, other: &Self) {
        self.response.add(&other.response).expect("histograms share bounds");
        self.service.add(&other.service).expect("histograms share bounds");
        self.requests += other.requests;
        for (mine, theirs) in self.errors.iter_mut().zip(other.errors) {
            *mine += theirs;
        }
        for (class, messages) in &other.samples {
            for message in messages {
                let samples = self.samples.entry(*class).or_default();
                if samples.len() < SAMPLES_PER_CLASS && !samples.contains(message) {
                    samples.push(message.clone());
                }
            }
        }
    }

    /// Failed requests, all classes.
    #[must_use]
    pub fn error_count(&self) -> u64 {
        self.errors.iter().sum()
    }

    fn errors_by_class(&self) -> BTreeMap<String, i64> {
        by_class(&self.errors)
    }
}

fn by_class(errors: &[u64; ErrorClass::ALL.len()]) -> BTreeMap<String, i64> {
    ErrorClass::ALL
        .into_iter()
        .filter(|c| errors[c.index()] > 0)
        .map(|c| (c.as_str().to_owned(), errors[c.index()] as i64))
        .collect()
}

/// The stored figures of one endpoint, over `measured_secs` of measured load.
#[must_use]
pub fn endpoint_result(name: &str, record: &EndpointRecord, measured_secs: f64) -> EndpointResult {
    let h = &record.response;
    let at = |q: f64| if h.is_empty() { 0 } else { h.value_at_quantile(q) as i64 };
    let mut histogram = Vec::new();
    V2Serializer::new().serialize(h, &mut histogram).expect("serializing into memory cannot fail");
    EndpointResult {
        endpoint: name.to_owned(),
        requests: record.requests as i64,
        errors: record.error_count() as i64,
        rate: if measured_secs > 0.0 { record.requests as f64 / measured_secs } else { 0.0 },
        p50_us: at(0.5),
        p75_us: at(0.75),
        p90_us: at(0.9),
        p95_us: at(0.95),
        p99_us: at(0.99),
        p999_us: at(0.999),
        max_us: if h.is_empty() { 0 } else { h.max() as i64 },
        mean_us: if h.is_empty() { 0.0 } else { h.mean() },
        errors_by_class: record.errors_by_class(),
        error_samples: record.samples.iter().map(|(c, m)| (c.as_str().to_owned(), m.clone())).collect(),
        intervals: intervals(h, record.error_count(), record.requests),
        histogram,
    }
}

/// The 95 % intervals of p50, p95, p99 (from the response times in `h`) and of the error rate.
#[must_use]
pub fn intervals(h: &Histogram<u64>, errors: u64, requests: u64) -> Intervals {
    Intervals {
        p50_us: percentile_interval(h, 0.5),
        p95_us: percentile_interval(h, 0.95),
        p99_us: percentile_interval(h, 0.99),
        error_pct: error_rate_interval(errors, requests),
    }
}

/// One second of one endpoint, for the timeline.
#[derive(Debug, Clone)]
pub struct SecondRecord {
    /// Response times of requests that ended in this second (2 significant digits).
    pub response: Histogram<u64>,
    /// Requests that ended in this second.
    pub requests: u64,
    /// Failures per class.
    pub errors: [u64; ErrorClass::ALL.len()],
}

impl Default for SecondRecord {
    fn default() -> Self {
        Self {
            response: Histogram::new_with_bounds(1, MAX_US, 2).expect("constant bounds are valid"),
            requests: 0,
            errors: [0; ErrorClass::ALL.len()],
        }
    }
}

impl SecondRecord {
    /// Records one request that ended in this second.
    pub fn record(&mut self, response_us: Option<u64>, error: Option<ErrorClass>) {
        self.requests += 1;
        if let Some(us) = response_us {
            record(&mut self.response, us);
        }
        if let Some(class) = error {
            self.errors[class.index()] += 1;
        }
    }

    /// Adds `other` into this second.
    pub fn merge(&mut self, other: &Self) {
        self.response.add(&other.response).expect("histograms share bounds");
        self.requests += other.requests;
        for (mine, theirs) in self.errors.iter_mut().zip(other.errors) {
            *mine += theirs;
        }
    }
}

/// The stored timeline row of one endpoint's second.
#[must_use]
pub fn timeline_point(name: &str, elapsed_s: u64, second: &SecondRecord) -> TimelinePoint {
    let h = &second.response;
    let at = |q: f64| if h.is_empty() { 0 } else { h.value_at_quantile(q) as i64 };
    TimelinePoint {
        endpoint: name.to_owned(),
        elapsed_s: elapsed_s as i64,
        requests: second.requests as i64,
        errors: second.errors.iter().sum::<u64>() as i64,
        p50_us: at(0.5),
        p99_us: at(0.99),
        max_us: if h.is_empty() { 0 } else { h.max() as i64 },
        errors_by_class: by_class(&second.errors),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_count_in_latency_and_keep_a_few_distinct_samples() {
        let mut record = EndpointRecord::default();
        for i in 0..98 {
            record.record(Some(1_000 + i), Some(900), None);
        }
        record.record(Some(10_000_000), None, Some((ErrorClass::Timeout, "no response within 10s")));
        record.record(None, None, Some((ErrorClass::Dropped, "over the in-flight cap")));
        let result = endpoint_result("GET /x", &record, 10.0);
        assert_eq!((result.requests, result.errors), (100, 2));
        assert!((result.rate - 10.0).abs() < 1e-9);
        assert!((995..=1_100).contains(&result.p50_us));
        assert!(result.max_us >= 9_990_000, "the timeout is in the histogram: {}", result.max_us);
        assert_eq!(result.errors_by_class["timeout"], 1);
        assert_eq!(result.error_samples["dropped"], ["over the in-flight cap"]);

        let mut merged = EndpointRecord::default();
        merged.merge(&record);
        merged.merge(&record);
        assert_eq!(merged.requests, 200);
        assert_eq!(merged.samples[&ErrorClass::Timeout].len(), 1, "duplicates are not kept twice");
    }

    #[test]
    fn an_empty_endpoint_has_zero_figures() {
        let result = endpoint_result("e", &EndpointRecord::default(), 0.0);
        assert_eq!((result.p99_us, result.max_us, result.rate), (0, 0, 0.0));
    }
}
