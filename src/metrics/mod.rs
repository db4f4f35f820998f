//! What a run's numbers mean, as pure functions: error classes, histogram summaries, run validity.
//!
//! No clock and no I/O here: the engine records, this module turns records into the figures that are stored
//! and judged, so every rule is unit-tested with plain data.

pub mod health;
pub mod interval;
pub mod segments;
mod summary;
mod validity;

pub use health::{target_failure, target_went_away};
pub use summary::{EndpointRecord, SecondRecord, endpoint_result, intervals, new_histogram, timeline_point};
pub use validity::{Limits, LoadFacts, validity_reasons};

use std::fmt;

/// Why a request failed. Every failure lands in exactly one class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorClass {
    /// The TCP or TLS connection could not be made (refused, unreachable, DNS).
    Connect,
    /// No complete response within the target's timeout.
    Timeout,
    /// The connection was reset or closed part-way.
    Reset,
    /// The answer was not valid HTTP.
    Protocol,
    /// A 4xx status the step did not expect.
    Http4xx,
    /// A 5xx status the step did not expect.
    Http5xx,
    /// Another status the step did not expect, or a JSON assertion that did not hold.
    Assertion,
    /// An `extract` found nothing to take.
    Extraction,
    /// HTTP/2: the server reset the request's stream (RST_STREAM) instead of answering it.
    StreamReset,
    /// HTTP/2: the server closed the connection with GOAWAY before answering the request's stream.
    GoAway,
    /// The body passed the target's `max_body`: the rest was not read and the connection was dropped.
    BodyTooLarge,
    /// An open-model arrival over the in-flight cap: never sent.
    Dropped,
    /// Still in flight when the run ended, and cut off.
    AbortedAtEnd,
}

impl ErrorClass {
    /// Every class, in the order reports list them.
    pub const ALL: [Self; 13] = [
        Self::Connect,
        Self::Timeout,
        Self::Reset,
        Self::Protocol,
        Self::Http4xx,
        Self::Http5xx,
        Self::Assertion,
        Self::Extraction,
        Self::StreamReset,
        Self::GoAway,
        Self::BodyTooLarge,
        Self::Dropped,
        Self::AbortedAtEnd,
    ];

    /// The stored and displayed name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Connect => "connect",
            Self::Timeout => "timeout",
            Self::Reset => "reset",
            Self::Protocol => "protocol",
            Self::Http4xx => "http_4xx",
            Self::Http5xx => "http_5xx",
            Self::Assertion => "assertion",
            Self::Extraction => "extraction",
            Self::StreamReset => "stream_reset",
            Self::GoAway => "goaway",
            Self::BodyTooLarge => "body_too_large",
            Self::Dropped => "dropped",
            Self::AbortedAtEnd => "aborted_at_end",
        }
    }

    /// Position in [`Self::ALL`], for per-class counters kept in arrays.
    #[must_use]
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
