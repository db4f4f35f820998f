//! What one segment of a split night measured, as it is kept until the last segment merges them: enough to add
//! the segments up exactly (each endpoint's whole histogram, its counts and error classes, the per-second
//! timeline counted from the shared start), and its whole-run figures for the run page.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{LoadSummary, RunStatus, TimelinePoint};

/// One segment's measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentResults {
    /// `K` of `K/N`.
    pub index: u32,
    /// How its own run ended: `finished`, `invalid`, `failed` (the target was not there) or `aborted`.
    pub status: RunStatus,
    /// Why its own numbers cannot be trusted.
    pub validity_reasons: Vec<String>,
    /// How well it delivered its share of the load.
    pub load_summary: LoadSummary,
    /// Per endpoint, the whole run's row first.
    pub endpoints: Vec<SegmentEndpoint>,
    /// Per second per endpoint, seconds from the shared start.
    pub timeline: Vec<TimelinePoint>,
}

/// One endpoint of one segment: what adds up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentEndpoint {
    /// The metric key, or `(all)`.
    pub endpoint: String,
    /// Requests attempted, failures included.
    pub requests: i64,
    /// Failures per class.
    pub errors_by_class: BTreeMap<String, i64>,
    /// A few sample messages per class.
    pub error_samples: BTreeMap<String, Vec<String>>,
    /// The response-time HdrHistogram, V2-serialized.
    #[serde(with = "bytes_as_hex")]
    pub histogram: Vec<u8>,
}

/// A segment's row on the run page: its whole-run figures beside the others', so a sick generator shows.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SegmentFigures {
    pub index: u32,
    /// `registered`, `ready`, `done` or `failed`.
    pub state: String,
    /// Its own run's status, once it measured.
    pub status: Option<String>,
    pub requests: Option<i64>,
    pub errors: Option<i64>,
    pub p50_us: Option<i64>,
    pub p95_us: Option<i64>,
    pub p99_us: Option<i64>,
    pub schedule_lag_p99_us: Option<i64>,
    /// Its clock's offset to the database's before and after the load, microseconds.
    pub offset_before_us: Option<i64>,
    pub offset_after_us: Option<i64>,
    /// How late its load started after the earliest segment's, microseconds.
    pub start_lag_us: Option<i64>,
}

/// Histograms travel as hexadecimal text inside the segment's JSON: a few kilobytes an endpoint.
mod bytes_as_hex {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&data_encoding::HEXLOWER.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        data_encoding::HEXLOWER.decode(text.as_bytes()).map_err(serde::de::Error::custom)
    }
}
