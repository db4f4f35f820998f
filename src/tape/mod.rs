//! Request tapes: real traffic, recorded once, replayed every night.
//!
//! `degrade tape import` turns an access log, a JSON Lines log or a HAR recording into a tape ([`format`]):
//! sources are read as streams ([`sources`]), filtered, scrubbed of secrets and personal data ([`scrub`]),
//! grouped into routes ([`route`]: method, path template and query parameter names, counted within the caps of
//! [`route_tally`]) and optionally sampled ([`sample`]) by [`import`]. A scenario's `[[tape]]`
//! replays it; [`survey`] reads a tape once when the scenario is loaded, for its routes, its content hash
//! and the realism report (how often the planned run repeats each distinct request). [`flows`] turns a HAR
//! recording into an editable scenario of flows instead, with values from earlier answers correlated.

pub mod distinct;
pub mod flows;
pub mod fnv;
pub mod format;
pub mod grpc_body;
mod id_segments;
pub mod import;
pub mod lines;
mod placeholders;
mod private_values;
pub mod query_shape;
pub mod route;
mod route_pattern;
pub mod route_tally;
pub mod sample;
pub mod scrub;
pub mod sources;
pub mod survey;
mod value_shapes;
mod within;
pub mod writer;

pub use format::{TapeReader, TapeRequest};

/// The longest JSON text read into a tree (`serde_json::Value`), which takes up to ~35 times its text (32
/// bytes for each `0,` of `[0,0,…]`): a longer answer is not read for values to correlate.
pub const MAX_JSON_TREE_BYTES: usize = 1 << 20;
pub use route::Router;
pub use writer::TapeWriter;
