//! One keep-alive HTTP/1.1 connection of the load engine, on `httparse`: writes a request already encoded
//! as bytes ([`super::request`]) and reads its response whole.
//!
//! Why not hyper's client here: a load generator's request loop is its product, and hyper's generality costs
//! it. Measured with callgrind against nginx, hyper took ~12 k of the ~19 k instructions of a request, 5 k of
//! them filling a `HeaderMap` nobody reads. This keeps the response head as received and parses a header
//! again only when a step extracts it. Measured the same way (ci/bench-engine.sh's closed model, 16
//! connections, `dist`): ~7.4 k instructions per request in user space, against ~21 k before and wrk's ~4.6 k.
//!
//! What it reads (RFC 9112, section 6): a body framed by `Transfer-Encoding: chunked`, by `Content-Length`,
//! or by the end of the connection; none after a HEAD request or a 1xx, 204 or 304 status. Interim 1xx
//! answers are skipped. Memory stays bounded whatever the target sends: a head of at most [`MAX_HEAD`]
//! bytes, a body of at most the run's `max_body`.

use std::pin::Pin;
use std::task::{Context, Waker};
use std::time::Instant;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

pub use super::answer::Answer;
use super::answer::MAX_HEADERS;
use super::failure::{Failure, classify_io, incomplete};
use crate::metrics::ErrorClass;
use crate::model::{bytes_text, exact_bytes};

/// A byte stream to the target, plain or TLS.
pub(super) trait Stream: AsyncRead + AsyncWrite + Send + Unpin {
    /// When the bytes last read reached this machine, by the kernel's stamp; `None` where it is not known.
    fn arrival(&self) -> Option<Instant> {
        None
    }

    /// Whether the peer closed the stream (or wrote to it unasked) while it sat idle.
    fn closed_while_idle(&mut self) -> bool {
        let mut probe = [0_u8; 1];
        let mut probe = ReadBuf::new(&mut probe);
        // Nothing to read is the usual answer, and costs tokio's TcpStream no system call when the socket is
        // known idle (a TLS stream over a timed one looks with a read).
        let mut cx = Context::from_waker(Waker::noop());
        Pin::new(self).poll_read(&mut cx, &mut probe).is_ready()
    }

    /// The application protocol TLS's ALPN agreed on (`h2`, `http/1.1`); `None` over plain TCP, or when the
    /// server chose none.
    fn alpn(&self) -> Option<&[u8]> {
        None
    }
}

impl Stream for tokio::net::TcpStream {}

#[cfg(target_os = "linux")]
impl Stream for super::timed_tcp::TimedTcp {
    fn arrival(&self) -> Option<Instant> {
        self.arrival()
    }

    fn closed_while_idle(&mut self) -> bool {
        self.closed_while_idle()
    }
}

impl<S: Stream> Stream for tokio_rustls::client::TlsStream<S> {
    fn arrival(&self) -> Option<Instant> {
        self.get_ref().0.arrival()
    }

    fn alpn(&self) -> Option<&[u8]> {
        self.get_ref().1.alpn_protocol()
    }
}

/// Most bytes of a response head (status line and headers), as nginx's default for request heads.
pub(super) const MAX_HEAD: usize = 64 * 1024;

/// Most bytes of a chunk-size line or of the trailer fields after the last chunk.
const MAX_CHUNK_LINE: usize = 4 * 1024;

/// How much room each read asks for.
const READ_SIZE: usize = 8 * 1024;

/// A request's bytes, and whether its response carries a body (not after HEAD).
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// Request line, headers and body, ready for the wire.
    pub bytes: Bytes,
    /// False for HEAD, whose response has no body whatever its headers say.
    pub response_has_body: bool,
}

/// How a response's body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Empty,
    Length(u64),
    Chunked,
    UntilClose,
}

/// What the head says about the body and the connection.
#[derive(Debug)]
struct Head {
    status: u16,
    length: usize,
    framing: Framing,
    keep_alive: bool,
}

/// One connection: the stream and what was read from it but not yet used.
pub(super) struct Connection {
    stream: Box<dyn Stream>,
    buffer: BytesMut,
}

impl Connection {
    pub(super) fn new(stream: Box<dyn Stream>) -> Self {
        Self { stream, buffer: BytesMut::new() }
    }

    /// Whether the server closed the connection (or wrote to it unasked) while it sat idle: then a request
    /// must not go out on it. A server closes idle connections after its keep-alive timeout; finding that
    /// here, before writing, is what lets the request go out on a new connection instead of failing.
    pub(super) fn closed_while_idle(&mut self) -> bool {
        !self.buffer.is_empty() || self.stream.closed_while_idle()
    }

    /// Sends `request` and reads its response, whose body may be at most `max_body` bytes. Also returns
    /// whether the connection can take another request.
    pub(super) async fn exchange(&mut self, request: &Outgoing, max_body: u64) -> Result<(Answer, bool), Failure> {
        self.stream.write_all(&request.bytes).await.map_err(|e| classify_io(&e, "sending the request"))?;
        self.stream.flush().await.map_err(|e| classify_io(&e, "sending the request"))?;
        let head = self.read_head(request.response_has_body).await?;
        let head_bytes = self.buffer.split_to(head.length).freeze();
        let body = match head.framing {
            Framing::Empty => Bytes::new(),
            Framing::Length(length) => self.read_length(length, max_body).await?,
            Framing::Chunked => self.read_chunked(max_body).await?,
            Framing::UntilClose => self.read_until_close(max_body).await?,
        };
        // Bytes after the response were not asked for: the connection is out of step with the server.
        let reusable = head.keep_alive && head.framing != Framing::UntilClose && self.buffer.is_empty();
        let arrived = self.stream.arrival();
        Ok((Answer::http1(head.status, head_bytes, body, arrived), reusable))
    }

    /// Reads more bytes into the buffer; the end of the stream is an error, the response being incomplete.
    async fn read_more(&mut self) -> Result<(), Failure> {
        self.buffer.reserve(READ_SIZE);
        match self.stream.read_buf(&mut self.buffer).await {
            Ok(0) => Err(incomplete()),
            Ok(_) => Ok(()),
            Err(e) => Err(classify_io(&e, "reading the response")),
        }
    }

    /// Reads up to the end of the final head, skipping interim (1xx) ones; the head stays in the buffer.
    async fn read_head(&mut self, has_body: bool) -> Result<Head, Failure> {
        loop {
            if let Some(head) = parse_head(&self.buffer, has_body)? {
                if (100..200).contains(&head.status) && head.status != 101 {
                    self.buffer.advance(head.length);
                    continue;
                }
                return Ok(head);
            }
            if self.buffer.len() >= MAX_HEAD {
                let message = format!("the response head is longer than {MAX_HEAD} bytes");
                return Err(Failure::new(ErrorClass::Protocol, message));
            }
            self.read_more().await?;
        }
    }

    async fn read_length(&mut self, length: u64, max_body: u64) -> Result<Bytes, Failure> {
        if length > max_body {
            let message = format!(
                "the body passed max_body of {}: its Content-Length is {}; it was not read and the connection was \
                 dropped",
                bytes_text(max_body),
                exact_bytes(length)
            );
            return Err(Failure::new(ErrorClass::BodyTooLarge, message));
        }
        let length = usize::try_from(length).expect("max_body fits in memory");
        if self.buffer.len() >= length {
            // The usual case: the whole body came with the head, and is kept where it was read.
            return Ok(self.buffer.split_to(length).freeze());
        }
        // A body larger than what arrived goes into a buffer of its own, so the connection's stays small.
        let mut body = BytesMut::with_capacity(length);
        body.extend_from_slice(&self.buffer);
        self.buffer.clear();
        while body.len() < length {
            let left = length - body.len();
            let mut room = (&mut body).limit(left);
            match self.stream.read_buf(&mut room).await {
                Ok(0) => return Err(incomplete()),
                Ok(_) => {}
                Err(e) => return Err(classify_io(&e, "reading the body")),
            }
        }
        Ok(body.freeze())
    }

    async fn read_chunked(&mut self, max_body: u64) -> Result<Bytes, Failure> {
        let mut body = BytesMut::new();
        loop {
            let size = self.read_chunk_size().await?;
            if size == 0 {
                self.skip_trailers().await?;
                return Ok(body.freeze());
            }
            let received = (body.len() as u64).saturating_add(size);
            if received > max_body {
                return Err(too_large(max_body, received));
            }
            let mut left = size as usize;
            while left > 0 {
                if self.buffer.is_empty() {
                    self.read_more().await?;
                }
                let take = left.min(self.buffer.len());
                body.extend_from_slice(&self.buffer[..take]);
                self.buffer.advance(take);
                left -= take;
            }
            self.expect_line_end().await?;
        }
    }

    async fn read_chunk_size(&mut self) -> Result<u64, Failure> {
        loop {
            // httparse reads an empty line as size 0, which would end the body early: a size has a digit.
            if self.buffer.first().is_some_and(|b| !b.is_ascii_hexdigit()) {
                return Err(Failure::new(ErrorClass::Protocol, "reading the body: an invalid chunk size line"));
            }
            match httparse::parse_chunk_size(&self.buffer) {
                Ok(httparse::Status::Complete((used, size))) => {
                    self.buffer.advance(used);
                    return Ok(size);
                }
                Ok(httparse::Status::Partial) if self.buffer.len() < MAX_CHUNK_LINE => self.read_more().await?,
                Ok(httparse::Status::Partial) | Err(_) => {
                    return Err(Failure::new(ErrorClass::Protocol, "reading the body: an invalid chunk size line"));
                }
            }
        }
    }

    async fn expect_line_end(&mut self) -> Result<(), Failure> {
        while self.buffer.len() < 2 {
            self.read_more().await?;
        }
        if &self.buffer[..2] != b"\r\n" {
            return Err(Failure::new(
                ErrorClass::Protocol,
                "reading the body: a chunk does not end where its size says",
            ));
        }
        self.buffer.advance(2);
        Ok(())
    }

    /// Skips the trailer fields after the last chunk, up to the empty line that ends the message.
    async fn skip_trailers(&mut self) -> Result<(), Failure> {
        let mut skipped = 0;
        loop {
            if let Some(end) = self.buffer.windows(2).position(|pair| pair == b"\r\n") {
                self.buffer.advance(end + 2);
                if end == 0 {
                    return Ok(());
                }
                skipped += end + 2;
            } else {
                self.read_more().await?;
            }
            if skipped + self.buffer.len() > MAX_CHUNK_LINE + MAX_HEAD {
                return Err(Failure::new(ErrorClass::Protocol, "reading the body: the trailer fields are too long"));
            }
        }
    }

    async fn read_until_close(&mut self, max_body: u64) -> Result<Bytes, Failure> {
        let mut body = std::mem::take(&mut self.buffer);
        loop {
            if body.len() as u64 > max_body {
                return Err(too_large(max_body, body.len() as u64));
            }
            body.reserve(READ_SIZE);
            match self.stream.read_buf(&mut body).await {
                Ok(0) => return Ok(body.freeze()),
                Ok(_) => {}
                Err(e) => return Err(classify_io(&e, "reading the body")),
            }
        }
    }
}

fn too_large(max_body: u64, received: u64) -> Failure {
    let message = format!(
        "the body passed max_body of {} after {}: the rest was not read and the connection was dropped",
        bytes_text(max_body),
        exact_bytes(received)
    );
    Failure::new(ErrorClass::BodyTooLarge, message)
}

/// Parses a complete head at the start of `buffer`; `None` when more bytes are needed. `has_body` is false
/// for the answer to a HEAD request, whose framing headers describe a body that is not sent.
fn parse_head(buffer: &[u8], has_body: bool) -> Result<Option<Head>, Failure> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let length = match response.parse(buffer) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(Failure::new(ErrorClass::Protocol, format!("reading the response: {e}"))),
    };
    let status = response.code.expect("a complete head has a status");
    if status == 101 {
        return Err(Failure::new(ErrorClass::Protocol, "the server switched protocols (101), which was not asked"));
    }
    let mut lengths = Vec::new();
    let mut chunked = None;
    let (mut close, mut keep_alive) = (false, false);
    for header in response.headers.iter() {
        if header.name.eq_ignore_ascii_case("content-length") {
            lengths.push(header.value);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            // Only the last coding says how the message ends.
            chunked = Some(last_token(header.value).is_some_and(|t| t.eq_ignore_ascii_case(b"chunked")));
        } else if header.name.eq_ignore_ascii_case("connection") {
            close |= has_token(header.value, b"close");
            keep_alive |= has_token(header.value, b"keep-alive");
        }
    }
    let framing = if !has_body || matches!(status, 100..=199 | 204 | 304) {
        Framing::Empty
    } else {
        match chunked {
            Some(true) => Framing::Chunked,
            Some(false) => Framing::UntilClose,
            None if lengths.is_empty() => Framing::UntilClose,
            None => Framing::Length(content_length(&lengths)?),
        }
    };
    // HTTP/1.1 keeps a connection unless told to close it; HTTP/1.0 only when told to keep it. A message
    // with both framings may be an attempt at request smuggling: answered, but the connection is not reused.
    // Transfer-Encoding in an HTTP/1.0 answer is faulty framing (RFC 9112 section 6.1): not reused either.
    let suspect_framing = chunked.is_some() && (!lengths.is_empty() || response.version != Some(1));
    let keep_alive = !suspect_framing && if response.version == Some(1) { !close } else { keep_alive && !close };
    Ok(Some(Head { status, length, framing, keep_alive }))
}

/// The body length all `Content-Length` values agree on (a value may repeat itself: `42, 42`).
fn content_length(values: &[&[u8]]) -> Result<u64, Failure> {
    let mut agreed = None;
    for value in values.iter().flat_map(|v| v.split(|&b| b == b',')) {
        let digits = value.trim_ascii();
        let parsed = std::str::from_utf8(digits)
            .ok()
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<u64>().ok());
        match (parsed, agreed) {
            (Some(n), None) => agreed = Some(n),
            (Some(n), Some(m)) if n == m => {}
            _ => return Err(Failure::new(ErrorClass::Protocol, "reading the response: an invalid Content-Length")),
        }
    }
    agreed.ok_or_else(|| Failure::new(ErrorClass::Protocol, "reading the response: an invalid Content-Length"))
}

fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(<[u8]>::trim_ascii).filter(|t| !t.is_empty())
}

fn has_token(value: &[u8], token: &[u8]) -> bool {
    tokens(value).any(|t| t.eq_ignore_ascii_case(token))
}

fn last_token(value: &[u8]) -> Option<&[u8]> {
    tokens(value).last()
}

#[cfg(test)]
impl Stream for tokio::io::DuplexStream {}

#[cfg(test)]
mod tests;
