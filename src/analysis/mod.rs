//! Judging a run against the nights before it. Pure: data in, verdicts out, no I/O and no clock.
//!
//! `sample` reads one night of one endpoint (its histogram, or its
//! percentile ladder), `body` its median as the judge tests it (with the p75); `level` finds where a nightly series stands and how noisy it is (`trend` whether it drifts); `shift` tests how far
//! tonight lies from that level and `counts` how many more requests failed or were slow; `detector` applies
//! the level and shift to one bare series (`degrade detect`); `nightly` judges every endpoint × metric of a
//! run as one family with a controlled false-alarm rate, `relative` adding each endpoint's latency as a ratio to
//! the run's other endpoints, `tail` the share of requests past the baseline's p95 and p99 from the stored
//! histograms, and `telemetry` each kept series of the server's side; `judge` adds the absolute gates and the
//! verdict. `capacity` judges a capacity search's steps against the zone and its capacity against the nights'.

mod body;
pub mod capacity;
pub mod contention;
pub mod counts;
pub mod detector;
mod evidence;
mod failure_bursts;
mod gates;
pub mod judge;
pub mod level;
pub mod nightly;
mod reasons;
mod relative;
#[cfg(test)]
mod run_level_tests;
pub mod sample;
pub mod shift;
mod slow_share;
pub mod tail;
pub mod telemetry;
mod trend;

pub use gates::{AbsoluteGates, Gates, TelemetryLimit};
