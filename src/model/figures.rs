//! The figures of a run: per-endpoint results, their intervals, the per-second timeline, and the metrics that
//! can be followed from night to night.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{RunId, RunStatus};

/// A figure's 95 % interval, in the figure's unit. `hi` is `None` when the sample cannot bound it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Interval {
    /// The lower end.
    pub lo: f64,
    /// The upper end, when the sample bounds it.
    pub hi: Option<f64>,
}

/// One endpoint's figures for a whole run (or the whole run's, under [`OVERALL_ENDPOINT`](super::OVERALL_ENDPOINT)).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EndpointResult {
    /// Step name (route template by default).
    pub endpoint: String,
    /// Requests attempted, failures included.
    pub requests: i64,
    /// Failed requests, all classes.
    pub errors: i64,
    /// Achieved requests per second.
    pub rate: f64,
    /// Response-time percentiles and maximum, microseconds.
    pub p50_us: i64,
    /// 75th percentile, microseconds.
    pub p75_us: i64,
    /// 90th percentile, microseconds.
    pub p90_us: i64,
    /// 95th percentile, microseconds.
    pub p95_us: i64,
    /// 99th percentile, microseconds.
    pub p99_us: i64,
    /// 99.9th percentile, microseconds.
    pub p999_us: i64,
    /// Slowest response, microseconds.
    pub max_us: i64,
    /// Mean response time, microseconds.
    pub mean_us: f64,
    /// Failures per class (`timeout`, `http_5xx`, …).
    pub errors_by_class: BTreeMap<String, i64>,
    /// A few sample messages per class.
    pub error_samples: BTreeMap<String, Vec<String>>,
    /// How sure tonight's p50, p95, p99 and error rate are.
    pub intervals: Intervals,
    /// The response-time HdrHistogram, V2-serialized.
    #[serde(skip)]
    pub histogram: Vec<u8>,
}

/// The 95 % intervals of an endpoint's judged figures (see `metrics::interval`). A percentile whose
/// interval has no upper end rests on too few requests to be judged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Intervals {
    /// The median, µs.
    pub p50_us: Option<Interval>,
    /// The 95th percentile, µs.
    pub p95_us: Option<Interval>,
    /// The 99th percentile, µs.
    pub p99_us: Option<Interval>,
    /// The error rate, percent.
    pub error_pct: Option<Interval>,
}

impl EndpointResult {
    /// Whether the endpoint's requests were counted without a response time: WebSocket pushes and sends
    /// without an await (or arrivals that were never sent). Every timed request records at least 1 µs, so
    /// requests with every percentile and the maximum at 0 had none.
    #[must_use]
    pub fn is_counted_only(&self) -> bool {
        let figures = [self.p50_us, self.p75_us, self.p90_us, self.p95_us, self.p99_us, self.p999_us, self.max_us];
        self.requests > 0 && figures.iter().all(|&us| us == 0)
    }

    /// Failed requests as a percentage of all requests.
    #[must_use]
    pub fn error_pct(&self) -> f64 {
        if self.requests == 0 { 0.0 } else { self.errors as f64 * 100.0 / self.requests as f64 }
    }
}

/// One second of one endpoint, for the run's timeline.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct TimelinePoint {
    pub endpoint: String,
    /// Seconds since the run started.
    pub elapsed_s: i64,
    /// Requests completed in this second.
    pub requests: i64,
    /// Of which failed.
    pub errors: i64,
    /// Median response time, microseconds.
    pub p50_us: i64,
    /// 99th percentile response time, microseconds.
    pub p99_us: i64,
    /// Slowest response, microseconds.
    pub max_us: i64,
    /// Failures per class.
    pub errors_by_class: BTreeMap<String, i64>,
}

/// A figure that can be followed across runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Median response time, ms.
    P50,
    /// 75th percentile, ms.
    P75,
    /// 90th percentile, ms.
    P90,
    /// 95th percentile, ms.
    P95,
    /// 99th percentile, ms.
    P99,
    /// 99.9th percentile, ms.
    P999,
    /// Slowest response, ms.
    Max,
    /// Mean response time, ms.
    Mean,
    /// Failed requests, percent.
    ErrorRate,
    /// Achieved requests per second.
    Throughput,
}

impl Metric {
    /// Every metric.
    pub const ALL: [Self; 10] = [
        Self::P50,
        Self::P75,
        Self::P90,
        Self::P95,
        Self::P99,
        Self::P999,
        Self::Max,
        Self::Mean,
        Self::ErrorRate,
        Self::Throughput,
    ];

    /// The metrics a verdict judges against the baseline, and the keys of `metric_min_effect_pct`.
    pub const JUDGED: [Self; 5] = [Self::P50, Self::P95, Self::P99, Self::ErrorRate, Self::Throughput];

    /// The name users type and see.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::P50 => "p50",
            Self::P75 => "p75",
            Self::P90 => "p90",
            Self::P95 => "p95",
            Self::P99 => "p99",
            Self::P999 => "p999",
            Self::Max => "max",
            Self::Mean => "mean",
            Self::ErrorRate => "error_rate",
            Self::Throughput => "throughput",
        }
    }

    /// The unit of its display values, as the JSON API names it: `ms`, `percent` or `req/s`.
    #[must_use]
    pub fn unit(self) -> &'static str {
        match self {
            Self::P50 | Self::P75 | Self::P90 | Self::P95 | Self::P99 | Self::P999 | Self::Max | Self::Mean => "ms",
            Self::ErrorRate => "percent",
            Self::Throughput => "req/s",
        }
    }

    /// This metric's value in `result`, in its display unit (ms, percent or requests per second).
    #[must_use]
    pub fn value_of(self, result: &EndpointResult) -> f64 {
        let ms = |us: i64| us as f64 / 1000.0;
        match self {
            Self::P50 => ms(result.p50_us),
            Self::P75 => ms(result.p75_us),
            Self::P90 => ms(result.p90_us),
            Self::P95 => ms(result.p95_us),
            Self::P99 => ms(result.p99_us),
            Self::P999 => ms(result.p999_us),
            Self::Max => ms(result.max_us),
            Self::Mean => result.mean_us / 1000.0,
            Self::ErrorRate => result.error_pct(),
            Self::Throughput => result.rate,
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Metric {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|m| m.as_str() == s).ok_or_else(|| {
            let names: Vec<_> = Self::ALL.iter().map(|m| m.as_str()).collect();
            format!("unknown metric `{s}`; use one of {}", names.join(", "))
        })
    }
}

/// One run's value of one endpoint metric, for trend charts and baselines.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrendPoint {
    pub run_id: RunId,
    pub started_at: DateTime<Utc>,
    /// The build it tested.
    pub build_id: Option<String>,
    /// Its status (invalid and regressed runs are marked on charts).
    pub status: RunStatus,
    /// The metric's value, in its display unit.
    pub value: f64,
}

/// A whole number with its thousands grouped: `540000` as `540,000`, `-1234.6` as `-1,235`; `n/a` for a value
/// that is no number.
#[must_use]
pub fn thousands(value: f64) -> String {
    if !value.is_finite() {
        return "n/a".to_owned();
    }
    let grouped = grouped(&format!("{:.0}", value.abs()));
    if value < 0.0 && grouped != "0" { format!("-{grouped}") } else { grouped }
}

/// A count with its noun: `1 step`, `3 steps`, `12,000 requests`.
#[must_use]
pub fn counted(count: usize, one: &str, many: &str) -> String {
    format!("{} {}", thousands(count as f64), if count == 1 { one } else { many })
}

/// `digits` (ASCII digits) with a comma between each group of three from the right.
fn grouped(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A count of bytes, exact: `4,194,305 bytes` (grouped from its integer, so exact whatever its size).
#[must_use]
pub fn exact_bytes(bytes: u64) -> String {
    format!("{} bytes", grouped(&bytes.to_string()))
}

/// A size in bytes as people read it, exact and rounded: `4,194,304 bytes (4 MiB)`, `4,000,000 bytes (4 MB)`,
/// `812 bytes`. Binary units where the size is a whole number of KiB (as `512KiB` was likely written), decimal
/// ones otherwise; the unit is the largest the rounded figure is at least one of (999,999 bytes is `1 MB`).
#[must_use]
pub fn bytes_text(bytes: u64) -> String {
    let exact = exact_bytes(bytes);
    let units: [(u64, &str); 3] = if bytes.is_multiple_of(1 << 10) {
        [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
    } else {
        [(1_000_000_000, "GB"), (1_000_000, "MB"), (1_000, "kB")]
    };
    let rounded = |unit: u64| (bytes as f64 / unit as f64 * 10.0).round() / 10.0;
    let Some(at) = units.iter().position(|&(unit, _)| bytes >= unit) else { return exact };
    // A figure that rounds up to a whole unit more is written in that unit.
    let at = if at > 0 && rounded(units[at].0) >= (units[at - 1].0 / units[at].0) as f64 { at - 1 } else { at };
    let (unit, name) = units[at];
    format!("{exact} ({} {name})", format!("{:.1}", rounded(unit)).trim_end_matches(".0"))
}

/// Milliseconds with a precision that fits their size: `0.42 ms`, `8.3 ms`, `1250 ms`.
#[must_use]
pub(crate) fn format_ms(ms: f64) -> String {
    match ms.abs() {
        x if x < 10.0 => format!("{ms:.2} ms"),
        x if x < 100.0 => format!("{ms:.1} ms"),
        _ => format!("{ms:.0} ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_sizes_read_as_people_write_them() {
        assert_eq!(thousands(540_000.0), "540,000");
        assert_eq!(thousands(-1234.6), "-1,235");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(bytes_text(812), "812 bytes");
        assert_eq!(bytes_text(4 << 20), "4,194,304 bytes (4 MiB)");
        assert_eq!(bytes_text(4_000_000), "4,000,000 bytes (4 MB)");
        assert_eq!(bytes_text(4_194_305), "4,194,305 bytes (4.2 MB)");
        assert_eq!(bytes_text(999_999), "999,999 bytes (1 MB)", "the unit after rounding");
        assert_eq!(bytes_text(999), "999 bytes");
        assert_eq!(bytes_text((1 << 30) - 1024), "1,073,740,800 bytes (1 GiB)");
        assert_eq!(exact_bytes(u64::MAX), "18,446,744,073,709,551,615 bytes", "exact past f64's integers");
        assert_eq!(thousands(f64::NAN), "n/a");
        assert_eq!(bytes_text(512 << 10), "524,288 bytes (512 KiB)");
    }
}
