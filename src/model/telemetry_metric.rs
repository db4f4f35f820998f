//! How a telemetry finding names what it judged: the series, which of its figures, and the unit its values
//! are in, written into the finding's `metric` text (`CPU per 1,000 requests (CPU s)`) and read back from it.
//! A finding's values carry no unit of their own, and an endpoint's metrics are a fixed set whose units every
//! output knows (`p95` in ms); a telemetry series' unit is the user's, so it travels in the name, and every
//! output (check, JSON, JUnit, Markdown, alerts, the dashboard) reads it through [`TelemetryMetric::parse`]
//! and writes the values with [`value_in_unit`]. The finding's `endpoint` is the source's name.

use super::SHARE_UNIT;

/// Which figure of a series a telemetry finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TelemetryFigure {
    /// The mean over the measured stages (a gauge's level, a counter's rate or share), judged night to night.
    Mean,
    /// A counter's growth per 1,000 requests completed: the cost that stays comparable when the load changes.
    Per1000Requests,
    /// The mean over the measured stages held to an absolute highest value (`max` in `degrade.toml`).
    Ceiling,
    /// The mean over the measured stages held to an absolute lowest value (`min`: a cache hit ratio).
    Floor,
}

impl TelemetryFigure {
    const ALL: [Self; 4] = [Self::Mean, Self::Per1000Requests, Self::Ceiling, Self::Floor];

    /// The words after the series' name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mean => "mean",
            Self::Per1000Requests => "per 1,000 requests",
            Self::Ceiling => "ceiling",
            Self::Floor => "floor",
        }
    }
}

/// A telemetry finding's `metric`: `{series} {figure} ({unit})`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelemetryMetric {
    /// The series' name: `CPU busy`.
    pub series: String,
    /// Which of its figures.
    pub figure: TelemetryFigure,
    /// The unit of the figure's values: `CPU s`, `connections`, or [`SHARE_UNIT`].
    pub unit: String,
}

impl TelemetryMetric {
    /// Reads a finding's `metric` back; `None` for an endpoint's metric (`p95`, `max_p75_ms`, …), which never
    /// ends in a parenthesised unit after one of the figures' words.
    #[must_use]
    pub fn parse(metric: &str) -> Option<Self> {
        let (head, unit) = metric.strip_suffix(')')?.rsplit_once(" (")?;
        TelemetryFigure::ALL.into_iter().find_map(|figure| {
            let series = head.strip_suffix(figure.as_str())?.strip_suffix(' ')?;
            (!series.is_empty() && !unit.is_empty()).then(|| Self {
                series: series.to_owned(),
                figure,
                unit: unit.to_owned(),
            })
        })
    }
}

impl std::fmt::Display for TelemetryMetric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} ({})", self.series, self.figure.as_str(), self.unit)
    }
}

/// `value` in `unit`: a share as a percentage (`23.4 %`), bytes in binary units (`2.31 GiB`), anything else with
/// its unit and three significant digits (`412 transactions/s`, `0.412 CPU s`).
#[must_use]
pub fn value_in_unit(value: f64, unit: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metric_reads_back_as_written() {
        for (series, figure, unit) in [
            ("CPU", TelemetryFigure::Per1000Requests, "CPU s"),
            ("CPU busy (user)", TelemetryFigure::Ceiling, "share"),
            ("hit ratio", TelemetryFigure::Floor, "share"),
            ("connections", TelemetryFigure::Mean, "connections"),
        ] {
            let metric = TelemetryMetric { series: series.into(), figure, unit: unit.into() };
            assert_eq!(TelemetryMetric::parse(&metric.to_string()), Some(metric));
        }
        assert_eq!(
            TelemetryMetric { series: "CPU".into(), figure: TelemetryFigure::Per1000Requests, unit: "CPU s".into() }
                .to_string(),
            "CPU per 1,000 requests (CPU s)"
        );
        for endpoint_metric in
            ["p95", "max_p75_ms", "error_rate", "requests", "mean (ms)", " ceiling (x)", "a floor ()"]
        {
            assert_eq!(TelemetryMetric::parse(endpoint_metric), None, "{endpoint_metric}");
        }
    }

    #[test]
    fn values_read_in_their_units() {
        assert_eq!(value_in_unit(0.2345, "share"), "23.4 %");
        assert_eq!(value_in_unit(0.00012, "share"), "0.0120 %");
        assert_eq!(value_in_unit(2.48e9, "bytes"), "2.31 GiB");
        assert_eq!(value_in_unit(512.0, "bytes"), "512 bytes");
        assert_eq!(value_in_unit(412.3, "transactions/s"), "412 transactions/s");
        assert_eq!(value_in_unit(0.4123, "CPU s"), "0.412 CPU s");
        assert_eq!(value_in_unit(0.0, "connections"), "0 connections");
    }
}
