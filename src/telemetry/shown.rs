//! Telemetry values in words, the same in `degrade run`, `degrade telemetry probe` and on the run page: a
//! share as a percentage, bytes in binary units, anything else with its unit and three significant digits.

use crate::model::{SHARE_UNIT, SeriesSummary, SeriesTelemetry};

/// `value` in `unit`: `23.4 %`, `2.31 GiB`, `412 transactions/s`.
#[must_use]
pub fn value(value: f64, unit: &str) -> String {
    if unit == SHARE_UNIT {
        // Shares read to a tenth of a point, as a CPU graph does; below 1 % with three significant digits.
        let pct = value * 100.0;
        return if pct.abs() >= 1.0 { format!("{pct:.1} %") } else { format!("{} %", significant(pct)) };
    }
    if unit == "bytes" {
        let (scaled, prefix) = [(1u64 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
            .into_iter()
            .find(|(size, _)| value.abs() >= *size as f64)
            .map_or((value, "bytes"), |(size, prefix)| (value / size as f64, prefix));
        return format!("{} {prefix}", significant(scaled));
    }
    format!("{} {unit}", significant(value))
}

/// Three significant digits, no exponent: `0.412`, `41.2`, `4120`.
fn significant(value: f64) -> String {
    let decimals = match value.abs() {
        v if v == 0.0 || v >= 100.0 => 0,
        v if v >= 10.0 => 1,
        v if v >= 1.0 => 2,
        v => ((-v.log10()).floor() as usize + 3).min(9),
    };
    format!("{value:.decimals$}")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_in_their_units() {
        assert_eq!(value(0.2345, "share"), "23.4 %");
        assert_eq!(value(0.00012, "share"), "0.0120 %");
        assert_eq!(value(2.48e9, "bytes"), "2.31 GiB");
        assert_eq!(value(512.0, "bytes"), "512 bytes");
        assert_eq!(value(412.3, "transactions/s"), "412 transactions/s");
        assert_eq!(value(0.4123, "CPU s"), "0.412 CPU s");
        assert_eq!(value(0.0, "connections"), "0 connections");
    }
}
