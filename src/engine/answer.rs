//! A response read whole, whichever protocol carried it: its status, its header fields (as HTTP/1.1 sent
//! them, or as HTTP/2 decoded them), its body, its trailers (HTTP/2: where gRPC puts its status), and when it
//! reached the machine.
//!
//! HTTP/1.1 keeps the head as received and parses a header again only when a step extracts it
//! ([`super::http1`] says why); HTTP/2's fields arrive decoded from HPACK, so they are kept as decoded.

use std::time::Instant;

use bytes::Bytes;
use http::HeaderMap;

/// Most header fields in one HTTP/1.1 response head.
pub(super) const MAX_HEADERS: usize = 100;

/// A response read whole.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The header fields, as their protocol delivered them.
    fields: Fields,
    /// The body, decoded from its chunks if it was chunked.
    pub body: Bytes,
    /// When its last byte reached this machine, by the kernel's stamp, where known: it may have been read
    /// later (the generator's delay, not the target's).
    pub arrived: Option<Instant>,
    /// HTTP/2: when the body's first bytes reached this machine (a gRPC server stream's first message), by
    /// the kernel's stamp where known, else when they were read; `None` for an answer without a body.
    pub first_data: Option<Instant>,
    /// HTTP/2: when the request's stream opened. Past the server's `MAX_CONCURRENT_STREAMS` a request waits in
    /// h2's queue for a free stream: that wait is part of its response time, not of the server's service time.
    /// `None` for HTTP/1.1, whose request goes out when it is sent.
    pub stream_opened: Option<Instant>,
}

/// Where a response's header fields are.
#[derive(Debug, Clone)]
enum Fields {
    /// The HTTP/1.1 head as received: parsed again only when a header is asked for.
    Http1(Bytes),
    /// HTTP/2's decoded headers, and the trailers that ended the stream, if any.
    Http2 { headers: HeaderMap, trailers: Option<HeaderMap> },
}

impl Answer {
    /// An HTTP/1.1 answer whose head (status line and headers, parsed once already) is `head`.
    pub(super) fn http1(status: u16, head: Bytes, body: Bytes, arrived: Option<Instant>) -> Self {
        Self { status, fields: Fields::Http1(head), body, arrived, first_data: None, stream_opened: None }
    }

    /// An HTTP/2 answer.
    pub(super) fn http2(
        status: u16,
        headers: HeaderMap,
        body: Bytes,
        trailers: Option<HeaderMap>,
        (first_data, arrived): (Option<Instant>, Option<Instant>),
    ) -> Self {
        let fields = Fields::Http2 { headers, trailers };
        Self { status, fields, body, arrived, first_data, stream_opened: None }
    }

    /// The first value of header `name` (any case), when there is one: as text, or `Err` when it is not UTF-8.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<Result<&str, std::str::Utf8Error>> {
        match &self.fields {
            Fields::Http1(head) => {
                let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut response = httparse::Response::new(&mut headers);
                // The head parsed completely once already, so it does again.
                response.parse(head).ok()?;
                let value = response.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name))?.value;
                Some(std::str::from_utf8(value))
            }
            Fields::Http2 { headers, .. } => field(headers, name),
        }
    }

    /// The first value of trailer `name` (any case): HTTP/2 trailers only (gRPC's `grpc-status` is one); an
    /// HTTP/1.1 answer's chunked trailers are skipped as they are read.
    #[must_use]
    pub fn trailer(&self, name: &str) -> Option<Result<&str, std::str::Utf8Error>> {
        match &self.fields {
            Fields::Http2 { trailers: Some(trailers), .. } => field(trailers, name),
            _ => None,
        }
    }
}

/// The first value of `name` in `map` as text.
fn field<'a>(map: &'a HeaderMap, name: &str) -> Option<Result<&'a str, std::str::Utf8Error>> {
    map.get(name).map(|value| std::str::from_utf8(value.as_bytes()))
}
