//! The project's vocabulary: runs, their figures, metrics, baselines, verdicts and findings, how a change
//! between two figures is written, where a night not concluded stands, the server's telemetry kept beside them, and a capacity night's search.
//!
//! Every layer speaks these types — the engine produces them, the store keeps them, the analysis judges
//! them, the reports and the dashboard show them — so they live below all of those and import none of them.

mod baseline;
mod capacity;
mod change;
mod figures;
mod night;
mod runs;
mod segment;
mod segment_results;
mod telemetry;
mod telemetry_metric;
mod verdict;

pub use baseline::BaselineSpec;
pub use capacity::*;
pub use change::Change;
pub use figures::*;
pub use night::{NightRecord, NightStep};
pub use runs::*;
pub use segment::{MAX_SEGMENTS, Segment};
pub use segment_results::{SegmentEndpoint, SegmentFigures, SegmentResults};
pub use telemetry::*;
pub use telemetry_metric::*;
pub use verdict::*;
