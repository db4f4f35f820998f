//! gRPC's status codes (the `grpc-status` trailer of every call): `OK` is a call's success, and each other
//! code is an error class of its own ([`super::ErrorClass::grpc`]), as a load-tester of gRPC services reads
//! them (`UNAVAILABLE` is the server gone, `DEADLINE_EXCEEDED` the call too slow, `RESOURCE_EXHAUSTED` shed).

use std::fmt;

/// One of the seventeen codes gRPC defines, numbered as on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(missing_docs, reason = "gRPC's own names, documented with gRPC")]
pub enum GrpcCode {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

impl GrpcCode {
    /// Every code, by number.
    pub const ALL: [Self; 17] = [
        Self::Ok,
        Self::Cancelled,
        Self::Unknown,
        Self::InvalidArgument,
        Self::DeadlineExceeded,
        Self::NotFound,
        Self::AlreadyExists,
        Self::PermissionDenied,
        Self::ResourceExhausted,
        Self::FailedPrecondition,
        Self::Aborted,
        Self::OutOfRange,
        Self::Unimplemented,
        Self::Internal,
        Self::Unavailable,
        Self::DataLoss,
        Self::Unauthenticated,
    ];

    /// The code numbered `number` on the wire; `None` past 16 (gRPC maps such a code to `UNKNOWN`).
    #[must_use]
    pub fn from_number(number: u32) -> Option<Self> {
        Self::ALL.get(number as usize).copied()
    }

    /// gRPC's name, as written in scenarios (`expect = { grpc_status = "NOT_FOUND" }`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Ok => "OK",
            Self::Cancelled => "CANCELLED",
            Self::Unknown => "UNKNOWN",
            Self::InvalidArgument => "INVALID_ARGUMENT",
            Self::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Self::NotFound => "NOT_FOUND",
            Self::AlreadyExists => "ALREADY_EXISTS",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Self::FailedPrecondition => "FAILED_PRECONDITION",
            Self::Aborted => "ABORTED",
            Self::OutOfRange => "OUT_OF_RANGE",
            Self::Unimplemented => "UNIMPLEMENTED",
            Self::Internal => "INTERNAL",
            Self::Unavailable => "UNAVAILABLE",
            Self::DataLoss => "DATA_LOSS",
            Self::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    /// The code named `name` (gRPC's upper-case name).
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|code| code.name() == name)
    }
}

impl fmt::Display for GrpcCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_numbered_and_named_as_grpc_does() {
        for (number, code) in GrpcCode::ALL.into_iter().enumerate() {
            assert_eq!(code as usize, number);
            assert_eq!(GrpcCode::from_number(number as u32), Some(code));
            assert_eq!(GrpcCode::parse(code.name()), Some(code));
        }
        assert_eq!(GrpcCode::from_number(17), None);
        assert_eq!(GrpcCode::parse("ok"), None);
    }
}
