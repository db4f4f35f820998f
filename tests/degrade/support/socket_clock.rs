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

/// A stub connection's bytes, their HTTP/2 frames followed both ways.
pub struct SocketClock<T> {
    io: T,
    /// The client's frames; starts past nothing: the preface is skipped first.
    reads: Frames,
    preface_left: usize,
    /// The stub's frames.
    writes: Frames,
    /// Streams whose request came, not answered yet: when their HEADERS were read.
    open: HashMap<u32, Instant>,
    /// Each answered stream's time at the socket, µs.
    times: Held,
}

impl<T> SocketClock<T> {
    /// Follows `io`, a connection whose first bytes read are the client's preface, adding each stream's time
    /// to `times`.
    pub fn new(io: T, times: Held) -> Self {
        let (reads, writes) = (Frames::default(), Frames::default());
        Self { io, reads, preface_left: PREFACE, writes, open: HashMap::new(), times }
    }

    fn on_read(&mut self, mut bytes: &[u8]) {
        let skip = self.preface_left.min(bytes.len());
        self.preface_left -= skip;
        bytes = &bytes[skip..];
        let now = Instant::now();
        let open = &mut self.open;
        self.reads.follow(bytes, |header, _| {
            if header.kind == HEADERS {
                // A request's first HEADERS, not its trailers.
                open.entry(header.stream).or_insert(now);
            }
        });
    }

    fn on_written(&mut self, bytes: &[u8]) {
        let now = Instant::now();
        let (open, times) = (&mut self.open, &self.times);
        self.writes.follow(bytes, |header, complete| {
            let ends = matches!(header.kind, DATA | HEADERS) && header.flags & END_STREAM != 0;
            if ends
                && complete
                && let Some(read) = open.remove(&header.stream)
            {
                times.lock().unwrap().push(i64::try_from(now.duration_since(read).as_micros()).unwrap_or(i64::MAX));
            }
        });
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
            let mut clock = SocketClock::new((), Held::default());
            read.chunks(split).for_each(|piece| clock.on_read(piece));
            assert_eq!(clock.open.len(), 1, "reads of {split} bytes");
            let (answer, end) = written.split_at(written.len() - 1);
            answer.chunks(split).for_each(|piece| clock.on_written(piece));
            assert!(clock.times.lock().unwrap().is_empty(), "not ended before DATA's last byte ({split})");
            clock.on_written(end);
            assert_eq!(clock.times.lock().unwrap().len(), 1, "writes of {split} bytes");
            assert!(clock.open.is_empty());
        }
    }
}
