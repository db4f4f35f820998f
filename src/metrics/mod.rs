//! What a run's numbers mean, as pure functions: error classes, histogram summaries, run validity.
//!
//! No clock and no I/O here: the engine records, this module turns records into the figures that are stored
//! and judged, so every rule is unit-tested with plain data.

pub mod health;
pub mod interval;
pub mod segments;
mod summary;
mod grpc_code;
mod validity;

pub use grpc_code::GrpcCode;
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
    /// gRPC: the call ended with status `CANCELLED`, which the step did not expect.
    GrpcCancelled,
    /// gRPC: the call ended with status `UNKNOWN`, which the step did not expect.
    GrpcUnknown,
    /// gRPC: the call ended with status `INVALID_ARGUMENT`, which the step did not expect.
    GrpcInvalidArgument,
    /// gRPC: the call ended with status `DEADLINE_EXCEEDED`, which the step did not expect.
    GrpcDeadlineExceeded,
    /// gRPC: the call ended with status `NOT_FOUND`, which the step did not expect.
    GrpcNotFound,
    /// gRPC: the call ended with status `ALREADY_EXISTS`, which the step did not expect.
    GrpcAlreadyExists,
    /// gRPC: the call ended with status `PERMISSION_DENIED`, which the step did not expect.
    GrpcPermissionDenied,
    /// gRPC: the call ended with status `RESOURCE_EXHAUSTED`, which the step did not expect.
    GrpcResourceExhausted,
    /// gRPC: the call ended with status `FAILED_PRECONDITION`, which the step did not expect.
    GrpcFailedPrecondition,
    /// gRPC: the call ended with status `ABORTED`, which the step did not expect.
    GrpcAborted,
    /// gRPC: the call ended with status `OUT_OF_RANGE`, which the step did not expect.
    GrpcOutOfRange,
    /// gRPC: the call ended with status `UNIMPLEMENTED`, which the step did not expect.
    GrpcUnimplemented,
    /// gRPC: the call ended with status `INTERNAL`, which the step did not expect.
    GrpcInternal,
    /// gRPC: the call ended with status `UNAVAILABLE`, which the step did not expect.
    GrpcUnavailable,
    /// gRPC: the call ended with status `DATA_LOSS`, which the step did not expect.
    GrpcDataLoss,
    /// gRPC: the call ended with status `UNAUTHENTICATED`, which the step did not expect.
    GrpcUnauthenticated,
    /// gRPC: a server stream sent more messages than a step decodes (its bytes within `max_body`).
    GrpcTooManyMessages,
    /// An open-model arrival over the in-flight cap: never sent.
    Dropped,
    /// Still in flight when the run ended, and cut off.
    AbortedAtEnd,
    /// Never the target's: this machine ran out of file descriptors or local ports, so the generator could
    /// not open the connection or read on it. A run with any is invalid (`validity`).
    LocalLimit,
}

impl ErrorClass {
    /// Every class, in the order reports list them.
    pub const ALL: [Self; 31] = [
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
        Self::GrpcCancelled,
        Self::GrpcUnknown,
        Self::GrpcInvalidArgument,
        Self::GrpcDeadlineExceeded,
        Self::GrpcNotFound,
        Self::GrpcAlreadyExists,
        Self::GrpcPermissionDenied,
        Self::GrpcResourceExhausted,
        Self::GrpcFailedPrecondition,
        Self::GrpcAborted,
        Self::GrpcOutOfRange,
        Self::GrpcUnimplemented,
        Self::GrpcInternal,
        Self::GrpcUnavailable,
        Self::GrpcDataLoss,
        Self::GrpcUnauthenticated,
        Self::GrpcTooManyMessages,
        Self::Dropped,
        Self::AbortedAtEnd,
        Self::LocalLimit,
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
            Self::GrpcCancelled => "grpc_cancelled",
            Self::GrpcUnknown => "grpc_unknown",
            Self::GrpcInvalidArgument => "grpc_invalid_argument",
            Self::GrpcDeadlineExceeded => "grpc_deadline_exceeded",
            Self::GrpcNotFound => "grpc_not_found",
            Self::GrpcAlreadyExists => "grpc_already_exists",
            Self::GrpcPermissionDenied => "grpc_permission_denied",
            Self::GrpcResourceExhausted => "grpc_resource_exhausted",
            Self::GrpcFailedPrecondition => "grpc_failed_precondition",
            Self::GrpcAborted => "grpc_aborted",
            Self::GrpcOutOfRange => "grpc_out_of_range",
            Self::GrpcUnimplemented => "grpc_unimplemented",
            Self::GrpcInternal => "grpc_internal",
            Self::GrpcUnavailable => "grpc_unavailable",
            Self::GrpcDataLoss => "grpc_data_loss",
            Self::GrpcUnauthenticated => "grpc_unauthenticated",
            Self::GrpcTooManyMessages => "grpc_too_many_messages",
            Self::Dropped => "dropped",
            Self::AbortedAtEnd => "aborted_at_end",
            Self::LocalLimit => "local_limit",
        }
    }

    /// The class of a gRPC call that ended with `code`; `None` for `OK`, which is no failure.
    #[must_use]
    pub fn grpc(code: GrpcCode) -> Option<Self> {
        Some(match code {
            GrpcCode::Ok => return None,
            GrpcCode::Cancelled => Self::GrpcCancelled,
            GrpcCode::Unknown => Self::GrpcUnknown,
            GrpcCode::InvalidArgument => Self::GrpcInvalidArgument,
            GrpcCode::DeadlineExceeded => Self::GrpcDeadlineExceeded,
            GrpcCode::NotFound => Self::GrpcNotFound,
            GrpcCode::AlreadyExists => Self::GrpcAlreadyExists,
            GrpcCode::PermissionDenied => Self::GrpcPermissionDenied,
            GrpcCode::ResourceExhausted => Self::GrpcResourceExhausted,
            GrpcCode::FailedPrecondition => Self::GrpcFailedPrecondition,
            GrpcCode::Aborted => Self::GrpcAborted,
            GrpcCode::OutOfRange => Self::GrpcOutOfRange,
            GrpcCode::Unimplemented => Self::GrpcUnimplemented,
            GrpcCode::Internal => Self::GrpcInternal,
            GrpcCode::Unavailable => Self::GrpcUnavailable,
            GrpcCode::DataLoss => Self::GrpcDataLoss,
            GrpcCode::Unauthenticated => Self::GrpcUnauthenticated,
        })
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
