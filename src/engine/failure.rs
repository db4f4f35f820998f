//! How an exchange with the target failed: the [`Failure`] recorded for it, and the classification of
//! hyper's and the socket's errors into an [`ErrorClass`].

use crate::metrics::ErrorClass;

/// A failed exchange: its class and a message for the samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Which class it counts in.
    pub class: ErrorClass,
    /// What happened, without the URL (which may carry tokens).
    pub message: String,
}

impl Failure {
    pub(crate) fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        Self { class, message: message.into() }
    }
}

/// Classifies by the most specific cause in the chain: an I/O reset, or hyper's view of the exchange.
pub(super) fn classify(error: &hyper::Error, doing: &str) -> Failure {
    let message = format!("{doing}: {}", chain(error));
    if error.is_incomplete_message() {
        return Failure::new(ErrorClass::Reset, message);
    }
    if error.is_parse() || error.is_parse_status() {
        return Failure::new(ErrorClass::Protocol, message);
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
            if matches!(io.kind(), ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof) {
                return Failure::new(ErrorClass::Reset, message);
            }
        }
        cause = e.source();
    }
    Failure::new(ErrorClass::Protocol, message)
}

/// The error and its causes on one line, without repeats.
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = String::new();
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        let text = e.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
        cause = e.source();
    }
    out
}
