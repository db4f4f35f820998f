//! Telemetry: the server's side of a night, read from Prometheus exporters while the run's measured stages
//! went on, kept with the run beside what the client measured. A series is one line on the run page: its
//! values on the latency timeline's clock (seconds since the run started), and its summary over the
//! measured stages. A source that could not be read leaves its series empty with the reason, never the run.

use serde::Serialize;

/// How a series' samples become values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesKind {
    /// A level read as it is (connections open, memory used).
    Gauge,
    /// A running total: its rate between two scrapes is the value (transactions per second).
    Counter,
}

/// Which way a series moves when things get worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Worse {
    /// More is worse: CPU, connections, blocks read.
    Higher,
    /// Less is worse: a cache hit ratio, free memory.
    Lower,
}

/// How much of a source's or series' telemetry the night has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TelemetryStatus {
    /// Every scrape was read.
    Complete,
    /// Some scrapes failed: the values are there with gaps, and the reason says why.
    Partial,
    /// Nothing could be read: no values, and the reason says why.
    Missing,
}

/// The unit of a series that is one total's share of another (CPU busy seconds over all CPU seconds): its
/// values are fractions from 0 to 1, shown as percentages.
pub const SHARE_UNIT: &str = "share";

macro_rules! names {
    ($type:ty { $($variant:ident = $name:literal),+ $(,)? }) => {
        impl $type {
            /// The stored and configured name.
            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $name),+ }
            }
        }

        impl std::str::FromStr for $type {
            type Err = String;

            fn from_str(text: &str) -> Result<Self, String> {
                match text {
                    $($name => Ok(Self::$variant),)+
                    other => Err(format!(
                        "`{}` is not one of {}",
                        other.chars().take(40).collect::<String>(),
                        [$(concat!("`", $name, "`")),+].join(", ")
                    )),
                }
            }
        }

        impl std::fmt::Display for $type {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

names!(SeriesKind { Gauge = "gauge", Counter = "counter" });
names!(Worse { Higher = "higher", Lower = "lower" });
names!(TelemetryStatus { Complete = "complete", Partial = "partial", Missing = "missing" });

/// One value of a series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TelemetryPoint {
    /// Milliseconds since the run started: the latency timeline's clock. A counter's rate is stamped at the
    /// end of the interval it was measured over.
    pub elapsed_ms: i64,
    /// The value, in the series' unit.
    pub value: f64,
}

/// A series' figures over the run's measured stages.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SeriesSummary {
    /// The mean: for a counter, its whole increase over the time scraped (so a late scrape weighs what its
    /// interval lasted).
    pub mean: f64,
    /// The highest value.
    pub max: f64,
    /// For a counter: how much it grew per 1,000 requests the run completed, in [`SeriesTelemetry::count_unit`]:
    /// the cost that stays comparable when the load changes. `None` for gauges, or when no request completed.
    pub per_1000_requests: Option<f64>,
}

/// One kept series of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesTelemetry {
    /// Its name, unique within its source: `CPU busy`.
    pub name: String,
    /// The unit of its values, mean and max: `bytes`, `transactions/s`, or [`SHARE_UNIT`].
    pub unit: String,
    /// For a counter, the unit of what it counts (`transactions`, `CPU s`), that of its per-1,000-requests figure.
    pub count_unit: Option<String>,
    /// Gauge or counter.
    pub kind: SeriesKind,
    /// Which way is worse.
    pub worse: Worse,
    /// How much of it the night has.
    pub status: TelemetryStatus,
    /// Why values are missing, when some are.
    pub reason: Option<String>,
    /// Its values, oldest first.
    pub points: Vec<TelemetryPoint>,
    /// Its figures over the measured stages, when it has values.
    pub summary: Option<SeriesSummary>,
}

/// What one source gave a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceTelemetry {
    /// The source's name in the configuration: `api-host`.
    pub name: String,
    /// How much of it the night has.
    pub status: TelemetryStatus,
    /// Why scrapes failed, when some did: the first failure's words, and how many failed.
    pub reason: Option<String>,
    /// Scrapes tried during the measured stages; for a `prometheus` source, the series' queries asked (each
    /// over every measured window) once the run was over.
    pub scrapes: u32,
    /// Of which failed (gave nothing).
    pub failed_scrapes: u32,
    /// Its kept series, in the configuration's order.
    pub series: Vec<SeriesTelemetry>,
}

/// Every source's telemetry of one run, in the configuration's order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunTelemetry {
    /// The sources.
    pub sources: Vec<SourceTelemetry>,
}
