//! The byte stream under one HTTP/2 connection, watched for what the connection's own task reads: when the
//! last bytes arrived (the kernel's stamp, [`super::super::timed_tcp`]), whether the server's first bytes
//! were HTTP/2 frames at all (an HTTP/1.1-only server asked for h2c answers `HTTP/1.1 400` or hangs up), and
//! whether it sent GOAWAY, with which code.
//!
//! Why read frame headers here: a server that sends GOAWAY and closes the connection leaves the streams it
//! had not answered with h2's "connection closed" error, which says nothing of the GOAWAY before it. The
//! frames are read after TLS, so this sees them over both; it follows frame lengths, a few instructions a
//! frame, and copies no payload but GOAWAY's first 8 bytes.
//!
//! HTTP/2 multiplexes: the connection's task reads every stream's frames and hands each to its request, so the
//! request cannot ask the stream when its answer arrived. It asks this watch, once its answer is complete:
//! the last read's stamp is then that answer's last frame's, or a later frame's when more arrived in the same
//! moment, which is never earlier than the truth.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::task::{Context, Poll, ready};

use bytes::{Buf, BytesMut};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::super::http1::Stream;

/// What a connection's reads showed, shared with the requests on it.
#[derive(Debug)]
pub(super) struct Watch {
    /// When the bytes of the last read arrived, by the kernel's stamp.
    arrival: Mutex<Option<Instant>>,
    /// Whether anything was read yet.
    read_any: AtomicBool,
    /// Whether the first bytes read were `HTTP/`: the server answered the preface in HTTP/1.
    spoke_http1: AtomicBool,
    /// Whether a whole frame header was read and the first was SETTINGS: the server speaks HTTP/2.
    framed: AtomicBool,
    /// Whether the first frame header read was not SETTINGS, which a server's HTTP/2 starts with (RFC 9113
    /// section 3.4): what came was something else (an HTTP/0.9 error page, a banner), not HTTP/2.
    foreign: AtomicBool,
    /// The error code of the server's GOAWAY, once one came (`u32::MAX` before: no code is that large in use).
    goaway: AtomicU32,
    /// h2c: HTTP/2 on plain TCP, which the server was not asked to agree to.
    plain: bool,
}

/// No GOAWAY yet.
const NO_GOAWAY: u32 = u32::MAX;

/// HTTP/2's frame type of GOAWAY (RFC 9113 section 6.8).
const GOAWAY: u8 = 0x7;
/// HTTP/2's frame type of SETTINGS (RFC 9113 section 6.5), the first frame of a server's connection preface.
const SETTINGS: u8 = 0x4;

impl Watch {
    /// When the bytes last read reached this machine, where the kernel stamped them.
    pub(super) fn arrival(&self) -> Option<Instant> {
        *self.arrival.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the server answered in HTTP/1.
    pub(super) fn spoke_http1(&self) -> bool {
        self.spoke_http1.load(Ordering::Relaxed)
    }

    /// A watch of a new connection, h2c when `plain`.
    pub(super) fn new(plain: bool) -> Self {
        Self { plain, ..Self::default() }
    }

    /// Whether the connection is h2c: the server was not asked to agree to HTTP/2.
    pub(super) fn plain(&self) -> bool {
        self.plain
    }

    /// Whether the server sent an HTTP/2 frame.
    pub(super) fn framed(&self) -> bool {
        self.framed.load(Ordering::Relaxed)
    }

    /// Whether the server's first bytes were no HTTP/2 SETTINGS frame (HTTP/1's status line among them).
    pub(super) fn foreign(&self) -> bool {
        self.foreign.load(Ordering::Relaxed)
    }

    /// The error code of the server's GOAWAY, if it sent one.
    pub(super) fn goaway(&self) -> Option<h2::Reason> {
        let code = self.goaway.load(Ordering::Relaxed);
        (code != NO_GOAWAY).then(|| h2::Reason::from(code))
    }
}

impl Default for Watch {
    fn default() -> Self {
        Self {
            arrival: Mutex::default(),
            read_any: AtomicBool::default(),
            spoke_http1: AtomicBool::default(),
            framed: AtomicBool::default(),
            foreign: AtomicBool::default(),
            goaway: AtomicU32::new(NO_GOAWAY),
            plain: false,
        }
    }
}

/// Where the reader is in the server's frames: the bytes of a frame header, or of a payload, still to come.
#[derive(Debug, Default)]
struct Frames {
    /// Bytes of the current header read so far (a header is 9 bytes).
    header: [u8; 9],
    header_read: usize,
    /// Payload bytes of the current frame still to skip.
    payload_left: usize,
    /// Of a GOAWAY's payload: its first 8 bytes (last stream id, error code), and how many are in.
    goaway: Option<([u8; 8], usize)>,
}

impl Frames {
    /// Follows `bytes`, the next ones the server sent, noting frames and GOAWAY in `watch`.
    fn follow(&mut self, mut bytes: &[u8], watch: &Watch) {
        while !bytes.is_empty() && !watch.foreign() {
            if self.payload_left > 0 {
                let take = self.payload_left.min(bytes.len());
                if let Some((code, have)) = &mut self.goaway {
                    let copy = (8 - *have).min(take);
                    code[*have..*have + copy].copy_from_slice(&bytes[..copy]);
                    *have += copy;
                    if *have == 8 {
                        let reason = u32::from_be_bytes([code[4], code[5], code[6], code[7]]);
                        watch.goaway.store(reason.min(NO_GOAWAY - 1), Ordering::Relaxed);
                        self.goaway = None;
                    }
                }
                self.payload_left -= take;
                bytes = &bytes[take..];
                continue;
            }
            let take = (9 - self.header_read).min(bytes.len());
            self.header[self.header_read..self.header_read + take].copy_from_slice(&bytes[..take]);
            self.header_read += take;
            bytes = &bytes[take..];
            if self.header_read == 9 {
                self.header_read = 0;
                if !watch.framed() && self.header[3] != SETTINGS {
                    watch.foreign.store(true, Ordering::Relaxed);
                    return;
                }
                watch.framed.store(true, Ordering::Relaxed);
                self.payload_left =
                    usize::from(self.header[0]) << 16 | usize::from(self.header[1]) << 8 | usize::from(self.header[2]);
                self.goaway = (self.header[3] == GOAWAY && self.payload_left >= 8).then_some(([0; 8], 0));
            }
        }
    }
}

/// Most bytes held for one write: a burst of requests' frames; a larger write goes out as it is.
const MOST_HELD: usize = 64 * 1024;

/// A stream whose reads are reported to a [`Watch`], and whose writes are gathered for a moment.
///
/// Why gather: h2's connection task runs right after each request wakes it, and would write each request's
/// frames on its own, a system call a request (ci/bench-h2.sh measured 114,480 `writev` for 117,040
/// requests, a quarter of the run's CPU). Its first flush of a burst yields once instead, so every request
/// ready to go (answers just read, arrivals due) queues its frames first, and they leave in one write, as
/// the HTTP/1.1 client's sessions let each other go first ([`super::super::session::wait_until_due`]).
pub(super) struct Watched {
    stream: Box<dyn Stream>,
    watch: Arc<Watch>,
    frames: Frames,
    /// Written by h2, not yet sent.
    held: BytesMut,
    /// Whether this flush already yielded once.
    yielded: bool,
}

impl Watched {
    pub(super) fn new(stream: Box<dyn Stream>, watch: Arc<Watch>) -> Self {
        Self { stream, watch, frames: Frames::default(), held: BytesMut::new(), yielded: false }
    }

    /// Sends everything held.
    fn send_held(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.held.is_empty() {
            let sent = ready!(Pin::new(&mut self.stream).poll_write(cx, &self.held))?;
            if sent == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.held.advance(sent);
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for Watched {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        let read = &buf.filled()[before..];
        if matches!(polled, Poll::Ready(Ok(()))) && !read.is_empty() {
            if !this.watch.read_any.swap(true, Ordering::Relaxed) && read.starts_with(b"HTTP/") {
                this.watch.spoke_http1.store(true, Ordering::Relaxed);
            }
            this.frames.follow(read, &this.watch);
            if let Some(arrival) = this.stream.arrival() {
                *this.watch.arrival.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(arrival);
            }
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.held.len() + data.len() > MOST_HELD {
            ready!(this.send_held(cx))?;
            if data.len() > MOST_HELD {
                return Pin::new(&mut this.stream).poll_write(cx, data);
            }
        }
        this.held.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.held.is_empty() && !this.yielded {
            // Woken at once, behind the tasks already due: they queue their frames, then all leave together.
            this.yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        ready!(this.send_held(cx))?;
        this.yielded = false;
        Pin::new(&mut this.stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.send_held(cx))?;
        Pin::new(&mut this.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_goaway_is_found_among_frames_however_the_reads_split_them() {
        // A SETTINGS frame of 6 bytes, then GOAWAY (last stream 5, ENHANCE_YOUR_CALM = 0xb) with debug data.
        let mut bytes = vec![0, 0, 6, 0x4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100];
        bytes.extend([0, 0, 10, GOAWAY, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0xb, b'b', b'y']);
        for split in 1..bytes.len() {
            let (watch, mut frames) = (Watch::default(), Frames::default());
            for piece in bytes.chunks(split) {
                frames.follow(piece, &watch);
            }
            assert!(watch.framed());
            assert_eq!(watch.goaway(), Some(h2::Reason::ENHANCE_YOUR_CALM), "reads of {split} bytes");
        }
        let watch = Watch::default();
        Frames::default().follow(&bytes[..15], &watch);
        assert_eq!(watch.goaway(), None);
    }

    #[test]
    fn a_server_whose_first_bytes_are_no_settings_frame_does_not_speak_http2() {
        // Python's http.server answers HTTP/2's preface with an HTTP/0.9 error page: no status line at all.
        let watch = Watch::default();
        Frames::default().follow(b"<!DOCTYPE HTML>\n<html lang=\"en\">", &watch);
        assert!(watch.foreign() && !watch.framed());
        assert_eq!(watch.goaway(), None);
    }

    #[tokio::test]
    async fn writes_wait_for_one_yield_then_leave_together() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        let mut watched = Watched::new(Box::new(client), Arc::default());
        let mut cx = Context::from_waker(std::task::Waker::noop());
        for frame in [&b"first "[..], b"second"] {
            assert!(matches!(Pin::new(&mut watched).poll_write(&mut cx, frame), Poll::Ready(Ok(6))));
        }
        assert!(Pin::new(&mut watched).poll_flush(&mut cx).is_pending(), "the first flush yields");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let mut buf = [0_u8; 64];
        assert!(server.try_read(&mut buf).is_err(), "nothing sent before the flush goes on");
        assert!(matches!(Pin::new(&mut watched).poll_flush(&mut cx), Poll::Ready(Ok(()))));
        server.readable().await.unwrap();
        let read = server.try_read(&mut buf).unwrap();
        assert_eq!(&buf[..read], b"first second");
    }
}
