//! How an exchange with the target failed: the [`Failure`] recorded for it, and the classification of
//! the connection's errors and of unexpected statuses into an [`ErrorClass`].

use super::answer::Answer;
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

/// Classifies a failed read or write: the peer resetting or closing the connection is `reset`, this machine
/// out of descriptors or ports is `local_limit`, anything else the stream reports (a TLS alert, a certificate
/// the peer changed) is `protocol`.
pub(super) fn classify_io(error: &std::io::Error, doing: &str) -> Failure {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    let message = format!("{doing}: {}", chain(error));
    if is_local_limit(error) {
        return local_limit(&message);
    }
    match error.kind() {
        ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => Failure::new(ErrorClass::Reset, message),
        _ => Failure::new(ErrorClass::Protocol, message),
    }
}

/// Whether `error`, or an error it was caused by, is this machine running out of what a connection takes:
/// file descriptors (the process's `ulimit -n`, or the system's), local ports, socket buffers. Such a request
/// failed inside the generator, never at the target (a trial's container at `--ulimit nofile=1024` filed 1,696
/// of them as the target's `protocol` errors, in a run called valid).
pub(crate) fn is_local_limit(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        let io = e.downcast_ref::<std::io::Error>();
        if io.and_then(std::io::Error::raw_os_error).is_some_and(is_local_code) {
            return true;
        }
        // An `io::Error` wrapping another error gives that error's source, not the error itself.
        cause = io.and_then(|io| io.get_ref()).map(|inner| inner as &(dyn std::error::Error + 'static)).or(e.source());
    }
    false
}

#[cfg(target_os = "linux")]
fn is_local_code(code: i32) -> bool {
    use rustix::io::Errno;
    [Errno::MFILE, Errno::NFILE, Errno::ADDRNOTAVAIL, Errno::NOBUFS].iter().any(|e| e.raw_os_error() == code)
}

#[cfg(not(target_os = "linux"))]
fn is_local_code(_: i32) -> bool {
    false
}

/// A request the generator could not make for want of descriptors or ports, `message` saying where.
pub(super) fn local_limit(message: &str) -> Failure {
    Failure::new(ErrorClass::LocalLimit, format!("{message} (this machine's limit, not the target's failure)"))
}

/// The connection ended before the whole response arrived: the server hung up on the request.
pub(super) fn incomplete() -> Failure {
    Failure::new(ErrorClass::Reset, "the connection closed before the response was complete")
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

/// The failure of an answer whose status was not expected: its class by status, with the body's start.
pub(super) fn unexpected_status(response: &Answer) -> Failure {
    let status = response.status;
    match body_excerpt(&response.body) {
        Some(body) => Failure::new(class_of_status(status), format!("status {status}: {body}")),
        None => Failure::new(class_of_status(status), format!("status {status} (an empty body)")),
    }
}

/// The class an unexpected status counts in.
pub(super) fn class_of_status(status: u16) -> ErrorClass {
    match status {
        400..=499 => ErrorClass::Http4xx,
        500..=599 => ErrorClass::Http5xx,
        _ => ErrorClass::Assertion,
    }
}

/// A body's start as one line of text, for a sample: from its first byte that is not whitespace (templated
/// HTML often opens with a lot), 120 bytes at most, its line breaks spaces (a page's would read as degrade's
/// own lines under the run table); `None` for a body of whitespace only.
pub(super) fn body_excerpt(body: &[u8]) -> Option<String> {
    let first = body.iter().position(|b| !b.is_ascii_whitespace())?;
    let start = &body[first..];
    let text = String::from_utf8_lossy(&start[..start.len().min(120)]).into_owned();
    Some(crate::outside_text::printable(&text.split_whitespace().collect::<Vec<_>>().join(" ")))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[test]
    fn an_unexpected_status_quotes_its_body_or_says_it_had_none() {
        let answer = |body: String| Answer::http1(404, Bytes::new(), Bytes::from(body), None);
        assert_eq!(unexpected_status(&answer("no such card\n".into())).message, "status 404: no such card");
        assert_eq!(unexpected_status(&answer("  \n".into())).message, "status 404 (an empty body)");
        let late = format!("{}<p>gone</p>", " ".repeat(200));
        assert_eq!(unexpected_status(&answer(late)).message, "status 404: <p>gone</p>", "quoted from its text");
        let page = "500 Internal Server Error\n\nServer got itself in trouble".to_owned();
        assert_eq!(
            unexpected_status(&answer(page)).message,
            "status 404: 500 Internal Server Error Server got itself in trouble",
            "on one line"
        );
    }
}
