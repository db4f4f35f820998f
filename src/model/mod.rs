//! The project's vocabulary: runs, their figures, metrics, baselines, verdicts and findings, and the server's
//! telemetry kept beside them.
//!
//! Every layer speaks these types — the engine produces them, the store keeps them, the analysis judges
//! them, the reports and the dashboard show them — so they live below all of those and import none of them.

mod baseline;
mod figures;
mod runs;
mod telemetry;
mod verdict;

pub use baseline::BaselineSpec;
pub use figures::*;
pub use runs::*;
pub use telemetry::*;
pub use verdict::*;
