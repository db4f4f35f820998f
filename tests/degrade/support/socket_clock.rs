//! How long an HTTP/2 stub held each stream by its own clock at its socket: from the read that brought the
//! stream's request HEADERS to the write that sent its answer's END_STREAM. The latency tests compare the
//! generator's figures with this, not with the handler's own hold: everything the stub's server does around
//! the handler (hyper reading, dispatching and spawning the stream, routing, encoding and writing the answer
//! from the connection's task) is the server's time, and in the tests' unoptimised build it was 0.4-0.5 ms at
//! the median over h2c, a third of what the tests blamed on the generator (measured with stamps at each step
//! of one request: the stub's read to its handler 210 µs, the handler's end to its write 330 µs).
//!
//! The stub's read may come late after the request arrived (its own wake-up): that counts against the
//! generator, never for it. The write is stamped when it returned: on loopback the bytes are in the client's
//! socket by then. Frames are followed above TLS, so this sees them over both h2c and TLS; a frame costs a
//! few instructions and no payload is copied.
//!
//! Over HTTP/1.1 (one request at a time on a connection) a request is timed from the read that brought its
//! first bytes to the first write after it: hyper writes a short answer whole, and were it split, the time
//! would only be shorter, which counts against the generator too.

use std::collections::HashMap;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::h2_stub::Held;

/// The client's connection preface, before its first frame (RFC 9113 section 3.4).
const PREFACE: usize = 24;

/// Frame types and the END_STREAM flag (RFC 9113 section 6).
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const END_STREAM: u8 = 0x1;

/// A stub connection's bytes, its requests' times at the socket followed.
pub struct SocketClock<T> {
    io: T,
    wire: Wire,
    /// Each answered request's time at the socket, µs.
    times: Held,
}

/// What a connection speaks, and where its requests stand.
enum Wire {
    Http1 {
        /// When the request being answered came.
        open: Option<Instant>,
    },
    Http2 {
        /// The client's frames, once `preface_left` bytes of its preface are skipped.
        reads: Frames,
        preface_left: usize,
        /// The stub's frames.
        writes: Frames,
        /// Streams whose request came, not answered yet: when their HEADERS were read.
        open: HashMap<u32, Instant>,
    },
}

impl<T> SocketClock<T> {
    /// Follows `io`, an HTTP/2 connection whose first bytes read are the client's preface, adding each
    /// stream's time to `times`.
    pub fn http2(io: T, times: Held) -> Self {
        let wire = Wire::Http2 {
            reads: Frames::default(),
            preface_left: PREFACE,
            writes: Frames::default(),
            open: HashMap::new(),
        };
        Self { io, wire, times }
    }

    /// Follows `io`, an HTTP/1.1 connection, adding each request's time to `times`.
    pub fn http1(io: T, times: Held) -> Self {
        Self { io, wire: Wire::Http1 { open: None }, times }
    }

    fn on_read(&mut self, mut bytes: &[u8]) {
        let now = Instant::now();
        match &mut self.wire {
            Wire::Http1 { open } => {
                if !bytes.is_empty() {
                    open.get_or_insert(now);
                }
            }
            Wire::Http2 { reads, preface_left, open, .. } => {
                let skip = (*preface_left).min(bytes.len());
                *preface_left -= skip;
                bytes = &bytes[skip..];
                reads.follow(bytes, |header, _| {
                    if header.kind == HEADERS {
                        // A request's first HEADERS, not its trailers.
                        open.entry(header.stream).or_insert(now);
                    }
                });
            }
        }
    }

    fn on_written(&mut self, bytes: &[u8]) {
        let now = Instant::now();
        let times = &self.times;
        let answered = |read: Instant| {
            times.lock().unwrap().push(i64::try_from(now.duration_since(read).as_micros()).unwrap_or(i64::MAX));
        };
        match &mut self.wire {
            Wire::Http1 { open } => {
                if !bytes.is_empty()
                    && let Some(read) = open.take()
                {
                    answered(read);
                }
            }
            Wire::Http2 { writes, open, .. } => writes.follow(bytes, |header, complete| {
                let ends = matches!(header.kind, DATA | HEADERS) && header.flags & END_STREAM != 0;
                if ends
                    && complete
                    && let Some(read) = open.remove(&header.stream)
                {
                    answered(read);
                }
            }),
        }
    }
}

/// A frame's header, as far as the clock needs it.
#[derive(Clone, Copy, Default)]
struct Header {
    kind: u8,
    flags: u8,
    stream: u32,
}

/// Where a reader is in a sequence of frames: in a header, or in a payload with bytes still to come.
#[derive(Default)]
struct Frames {
    header: [u8; 9],
    header_read: usize,
    current: Header,
    payload_left: usize,
}

impl Frames {
    /// Follows `bytes`, calling `seen` with each frame's header once it is whole (`false`) and once its payload
    /// is whole too (`true`).
    fn follow(&mut self, mut bytes: &[u8], mut seen: impl FnMut(Header, bool)) {
        while !bytes.is_empty() {
            if self.payload_left > 0 {
                let take = self.payload_left.min(bytes.len());
                self.payload_left -= take;
                bytes = &bytes[take..];
                if self.payload_left == 0 {
                    seen(self.current, true);
                }
                continue;
            }
            let take = (9 - self.header_read).min(bytes.len());
            self.header[self.header_read..self.header_read + take].copy_from_slice(&bytes[..take]);
            self.header_read += take;
            bytes = &bytes[take..];
            if self.header_read == 9 {
                self.header_read = 0;
                let h = self.header;
                self.payload_left = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
                self.current =
                    Header { kind: h[3], flags: h[4], stream: u32::from_be_bytes([h[5] & 0x7f, h[6], h[7], h[8]]) };
                seen(self.current, false);
                if self.payload_left == 0 {
                    seen(self.current, true);
                }
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for SocketClock<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) {
            this.on_read(&buf.filled()[before..]);
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for SocketClock<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_write(cx, data);
        if let Poll::Ready(Ok(written)) = polled {
            this.on_written(&data[..written]);
        }
        polled
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(mut written)) = polled {
            // Only what the write took, slice by slice.
            for buf in bufs {
                let take = written.min(buf.len());
                this.on_written(&buf[..take]);
                written -= take;
            }
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame's bytes: its header, then `payload` bytes.
    fn frame(kind: u8, flags: u8, stream: u8, payload: usize) -> Vec<u8> {
        let mut bytes = vec![0, 0, u8::try_from(payload).unwrap(), kind, flags, 0, 0, 0, stream];
        bytes.resize(9 + payload, b'x');
        bytes
    }

    #[test]
    fn a_stream_is_timed_from_its_request_headers_to_its_answers_end_however_the_bytes_split() {
        // The preface and SETTINGS, then stream 1's request; the answer's HEADERS, then its DATA ending it.
        let mut read = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        read.extend(frame(0x4, 0, 0, 6));
        read.extend(frame(HEADERS, 0x4 | END_STREAM, 1, 12));
        let mut written = frame(HEADERS, 0x4, 1, 5);
        written.extend(frame(DATA, END_STREAM, 1, 2));
        for split in 1..written.len() {
            let mut clock = SocketClock::http2((), Held::default());
            read.chunks(split).for_each(|piece| clock.on_read(piece));
            assert!(matches!(&clock.wire, Wire::Http2 { open, .. } if open.len() == 1), "reads of {split} bytes");
            let (answer, end) = written.split_at(written.len() - 1);
            answer.chunks(split).for_each(|piece| clock.on_written(piece));
            assert!(clock.times.lock().unwrap().is_empty(), "not ended before DATA's last byte ({split})");
            clock.on_written(end);
            assert_eq!(clock.times.lock().unwrap().len(), 1, "writes of {split} bytes");
            assert!(matches!(&clock.wire, Wire::Http2 { open, .. } if open.is_empty()));
        }
    }

    #[test]
    fn an_http1_request_is_timed_from_its_first_bytes_to_the_answer() {
        let mut clock = SocketClock::http1((), Held::default());
        clock.on_written(b"HTTP/1.1 200 OK\r\n\r\n");
        assert!(clock.times.lock().unwrap().is_empty(), "nothing asked yet");
        clock.on_read(b"GET / HTTP/1.1\r\n");
        clock.on_read(b"host: x\r\n\r\n");
        clock.on_written(b"HTTP/1.1 200 OK\r\n\r\n");
        clock.on_written(b"more of the same answer");
        assert_eq!(clock.times.lock().unwrap().len(), 1);
    }
}
