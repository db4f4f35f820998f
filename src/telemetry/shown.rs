//! Telemetry values in words, the same in `degrade run`, `degrade telemetry probe` and on the run page: a
//! share as a percentage, bytes in binary units, anything else with its unit and three significant digits.

use crate::model::{SeriesSummary, SeriesTelemetry};

/// `value` in `unit`: `23.4 %`, `2.31 GiB`, `412 transactions/s` (the model's one way, which the check's
/// outputs use too).
#[must_use]
pub fn value(value: f64, unit: &str) -> String {
    crate::model::value_in_unit(value, unit)
}

/// A series' summary in one line: `mean 23.4 %, max 41.0 %, 0.41 CPU s per 1,000 requests`.
#[must_use]
pub fn summary(series: &SeriesTelemetry, summary: &SeriesSummary) -> String {
    let mut text = format!("mean {}, max {}", value(summary.mean, &series.unit), value(summary.max, &series.unit));
    if let (Some(per_1000), Some(unit)) = (summary.per_1000_requests, &series.count_unit) {
        text.push_str(&format!(", {} per 1,000 requests", value(per_1000, unit)));
    }
    text
}
