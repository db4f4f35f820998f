//! The exporters degrade knows, and the series naming one keeps, so that `exporter = "node_exporter"` is enough
//! to start: a few series an SRE reads first on the host's and the database's board, each checked against the
//! exporters Debian ships (node_exporter 1.5, postgres_exporter 0.11).

use super::telemetry_series::{Reads, SeriesSpec};
use crate::exposition::Selector;
use crate::model::{SeriesKind, Worse};

/// A known exporter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exporter {
    /// Prometheus' host exporter (`prometheus-node-exporter`, port 9100).
    Node,
    /// The PostgreSQL exporter (`prometheus-postgres-exporter`, port 9187).
    Postgres,
}

impl Exporter {
    /// Its name in the file.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Node => "node_exporter",
            Self::Postgres => "postgres_exporter",
        }
    }

    /// The series naming it keeps.
    #[must_use]
    pub fn series(self) -> Vec<SeriesSpec> {
        match self {
            // Busy and iowait as shares of all CPU time (every core's seconds, whatever the number of cores),
            // so 0.6 means the same on a 2-core and a 64-core box; per 1,000 requests, the CPU seconds spent.
            Self::Node => vec![
                spec("CPU busy", SeriesKind::Counter, "CPU s", r#"node_cpu_seconds_total{mode!="idle"}"#)
                    .divided_by("node_cpu_seconds_total"),
                spec("iowait", SeriesKind::Counter, "CPU s", r#"node_cpu_seconds_total{mode="iowait"}"#)
                    .divided_by("node_cpu_seconds_total"),
                spec("memory used", SeriesKind::Gauge, "bytes", "node_memory_MemTotal_bytes")
                    .minus("node_memory_MemAvailable_bytes"),
            ],
            Self::Postgres => vec![
                spec("connections", SeriesKind::Gauge, "connections", "pg_stat_activity_count"),
                spec(
                    "transactions",
                    SeriesKind::Counter,
                    "transactions",
                    r#"{__name__=~"pg_stat_database_xact_(commit|rollback)"}"#,
                ),
                spec("blocks read", SeriesKind::Counter, "blocks", "pg_stat_database_blks_read"),
            ],
        }
    }
}

impl std::str::FromStr for Exporter {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "node_exporter" => Ok(Self::Node),
            "postgres_exporter" => Ok(Self::Postgres),
            other => Err(format!(
                "`{}` is not an exporter degrade knows (node_exporter, postgres_exporter); for another, leave \
                 `exporter` out and list the series it keeps as [[scenario.telemetry.series]]",
                crate::outside_text::clipped(other, 40)
            )),
        }
    }
}

/// A default series; its selectors are constants that parse (a unit test reads each).
fn spec(name: &str, kind: SeriesKind, unit: &str, metric: &str) -> SeriesSpec {
    SeriesSpec {
        name: name.to_owned(),
        reads: Reads::Samples { metric: selector(metric), minus: None, divide_by: None },
        kind,
        unit: unit.to_owned(),
        // Every default costs more as it grows.
        worse: Worse::Higher,
    }
}

fn selector(text: &str) -> Selector {
    Selector::parse(text).unwrap_or_else(|e| panic!("a built-in selector parses: {e}"))
}

impl SeriesSpec {
    fn divided_by(mut self, divisor: &str) -> Self {
        if let Reads::Samples { divide_by, .. } = &mut self.reads {
            *divide_by = Some(selector(divisor));
        }
        self
    }

    fn minus(mut self, subtracted: &str) -> Self {
        if let Reads::Samples { minus, .. } = &mut self.reads {
            *minus = Some(selector(subtracted));
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_exporter_keeps_its_series_and_says_how_each_is_computed() {
        let formulas: Vec<(String, String, String)> = [Exporter::Node, Exporter::Postgres]
            .into_iter()
            .flat_map(Exporter::series)
            .map(|s| (s.name.clone(), s.value_unit(), s.formula()))
            .collect();
        let shown: Vec<(&str, &str, &str)> =
            formulas.iter().map(|(n, u, f)| (n.as_str(), u.as_str(), f.as_str())).collect();
        assert_eq!(
            shown,
            [
                (
                    "CPU busy",
                    "share",
                    r#"rate(sum(node_cpu_seconds_total{mode!="idle"})) / rate(sum(node_cpu_seconds_total))"#
                ),
                (
                    "iowait",
                    "share",
                    r#"rate(sum(node_cpu_seconds_total{mode="iowait"})) / rate(sum(node_cpu_seconds_total))"#
                ),
                ("memory used", "bytes", "sum(node_memory_MemTotal_bytes) - sum(node_memory_MemAvailable_bytes)"),
                ("connections", "connections", "sum(pg_stat_activity_count)"),
                (
                    "transactions",
                    "transactions/s",
                    r#"rate(sum({__name__=~"pg_stat_database_xact_(commit|rollback)"}))"#
                ),
                ("blocks read", "blocks/s", "rate(sum(pg_stat_database_blks_read))"),
            ]
        );
    }
}
