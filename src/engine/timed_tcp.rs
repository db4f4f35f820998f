//! An open-model TCP connection to the target that knows when each answer reached the machine, and that does
//! not have the kernel wake the generator for an answer the pacer will look for anyway.
//!
//! The time: `SO_TIMESTAMPNS` has the kernel stamp each segment as it arrives, and a read returns the stamp
//! of the last segment it took, so a response's last read tells when its last byte arrived, however late this
//! process got to it. A response time taken when the read ran also held the generator's own wake-up: tens of
//! microseconds on a virtual machine, and as noisy as its host.
//!
//! The wake-up ([`super::ticks`]): the socket is registered with the event loop for writability only, so an
//! answer arriving does not end the loop's wait. A reader that finds nothing parks until the pacer's next
//! wake-up when that is near, once per answer; otherwise (low rates, slow answers) a duplicate of the socket
//! is registered for readability and kept for as long as readers wait that way.

use std::io::{self, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant, SystemTime};

use nix::errno::Errno;
use nix::sys::socket::{ControlMessageOwned, MsgFlags, recv, recvmsg, setsockopt, sockopt};
use nix::sys::time::TimeSpec;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

use super::reactor::register;
use super::ticks::Ticks;

/// Most bytes one read asks for: the buffer handed to the kernel is zeroed first (safe code cannot hand it
/// uninitialised memory), so a large body's room is not zeroed whole on every read.
const MOST_PER_READ: usize = 16 * 1024;

/// A plain TCP connection whose reads are stamped with their arrival time.
pub(super) struct TimedTcp {
    /// Registered for writability only.
    socket: AsyncFd<TcpStream>,
    /// A duplicate registered for readability while readers wait for the kernel to wake them.
    readable: Option<AsyncFd<TcpStream>>,
    /// The open-model pacer's wake-ups.
    ticks: Arc<Ticks>,
    /// Whether a reader may still park on the ticks for the answer awaited now: once per answer.
    may_park: bool,
    /// Room for the timestamp's control message.
    control: Vec<u8>,
    /// When the bytes of the last read arrived.
    arrival: Option<Instant>,
}

impl TimedTcp {
    /// Takes over a connected stream of a run whose pacer lends its wake-ups as `ticks`; gives it back when
    /// the kernel will not stamp its reads (a sandbox's emulated network), for the caller to use as it is.
    pub(super) fn new(
        stream: tokio::net::TcpStream,
        ticks: Arc<Ticks>,
    ) -> Result<io::Result<Self>, tokio::net::TcpStream> {
        if setsockopt(&stream, sockopt::ReceiveTimestampns, &true).is_err() {
            return Err(stream);
        }
        Ok(Self::stamped(stream, ticks))
    }

    fn stamped(stream: tokio::net::TcpStream, ticks: Arc<Ticks>) -> io::Result<Self> {
        let stream = stream.into_std()?;
        Ok(Self {
            socket: register(stream, Interest::WRITABLE)?,
            readable: None,
            ticks,
            may_park: true,
            control: nix::cmsg_space!(TimeSpec),
            arrival: None,
        })
    }

    /// When the bytes last read reached this machine.
    pub(super) fn arrival(&self) -> Option<Instant> {
        self.arrival
    }

    /// Whether the peer closed the connection or sent something unasked; no system call when the socket
    /// is registered for readability and nothing arrived.
    pub(super) fn closed_while_idle(&mut self) -> bool {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let ready = match &self.readable {
            Some(readable) => match readable.poll_read_ready(&mut cx) {
                Poll::Pending => return false,
                Poll::Ready(ready) => ready.ok(),
            },
            None => None,
        };
        let mut probe = [0_u8; 1];
        let flags = MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT;
        let quiet = matches!(recv(self.socket.get_ref().as_raw_fd(), &mut probe, flags), Err(Errno::EAGAIN));
        if quiet && let Some(mut ready) = ready {
            // Known idle from here on: the next look costs no system call.
            ready.clear_ready();
        }
        !quiet
    }

    /// A request goes out: its answer may be waited for on the pacer's ticks again, and when the next one is
    /// near, the kernel need no longer wake this process for this socket.
    fn expect_answer(&mut self) {
        self.may_park = true;
        if self.readable.is_some() && self.ticks.near() {
            self.readable = None;
        }
    }
}

/// Reads what has arrived without waiting, and the arrival time of its last segment; how many bytes, `None`
/// when nothing has arrived. A read without a stamp leaves no arrival (the caller times it when read): the
/// kernel turns stamping on for the machine a moment after its first socket asks, so the first answers of a
/// run on a machine where nothing else uses stamps may come without one.
fn receive(
    socket: &TcpStream,
    control: &mut [u8],
    arrival: &mut Option<Instant>,
    buf: &mut ReadBuf<'_>,
) -> io::Result<Option<usize>> {
    let room = buf.remaining().min(MOST_PER_READ);
    let target = buf.initialize_unfilled_to(room);
    let (read, stamp) = loop {
        let mut slices = [io::IoSliceMut::new(target)];
        match recvmsg::<()>(socket.as_raw_fd(), &mut slices, Some(control), MsgFlags::MSG_DONTWAIT) {
            Ok(message) => {
                let stamp = message.cmsgs().ok().into_iter().flatten().find_map(|c| match c {
                    ControlMessageOwned::ScmTimestampns(stamp) => Some(stamp),
                    _ => None,
                });
                break (message.bytes, stamp);
            }
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
    };
    buf.advance(read);
    if read > 0 {
        *arrival = stamp.and_then(on_monotonic_clock);
    }
    Ok(Some(read))
}

/// A kernel stamp (wall-clock time) as an instant, by how long ago it was; `None` when it lies ahead (the
/// wall clock was set back since).
fn on_monotonic_clock(stamp: TimeSpec) -> Option<Instant> {
    let (now, wall) = (Instant::now(), SystemTime::now());
    let seconds = u64::try_from(stamp.tv_sec()).ok()?;
    let nanos = u32::try_from(stamp.tv_nsec()).ok()?;
    let stamped = SystemTime::UNIX_EPOCH.checked_add(Duration::new(seconds, nanos))?;
    now.checked_sub(wall.duration_since(stamped).ok()?)
}

impl AsyncRead for TimedTcp {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if let Some(readable) = &this.readable {
                let mut ready = ready!(readable.poll_read_ready(cx))?;
                if receive(this.socket.get_ref(), &mut this.control, &mut this.arrival, buf)?.is_some() {
                    return Poll::Ready(Ok(()));
                }
                ready.clear_ready();
                continue;
            }
            if let Some(read) = receive(this.socket.get_ref(), &mut this.control, &mut this.arrival, buf)? {
                // Progress: the rest may be waited for on a tick again (TLS reads on after each record).
                this.may_park |= read > 0;
                return Poll::Ready(Ok(()));
            }
            if this.may_park && this.ticks.park(cx.waker()) {
                this.may_park = false;
                return Poll::Pending;
            }
            this.readable = Some(register(this.socket.get_ref().try_clone()?, Interest::READABLE)?);
        }
    }
}

impl AsyncWrite for TimedTcp {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.expect_answer();
        loop {
            match this.socket.get_ref().write(data) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                written => return Poll::Ready(written),
            }
            // Full: wait until it is not, then write again (a readiness that came meanwhile is not lost,
            // the write after clearing it finds the room).
            ready!(this.socket.poll_write_ready(cx))?.clear_ready();
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.socket.get_ref().shutdown(Shutdown::Write))
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    async fn pair(ticks: Arc<Ticks>) -> (TimedTcp, tokio::net::TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (TimedTcp::new(client, ticks).unwrap().unwrap(), server)
    }

    /// Exchanges pings until an answer comes stamped: when this is the machine's first socket to ask for
    /// stamps, the kernel turns stamping on a moment later (deferred work), and answers before then have none.
    async fn until_stamped(client: &mut TimedTcp, server: &mut tokio::net::TcpStream) {
        for _ in 0..100 {
            client.write_all(b"ping").await.unwrap();
            let mut buf = [0_u8; 4];
            server.read_exact(&mut buf).await.unwrap();
            server.write_all(b"pong").await.unwrap();
            client.read_exact(&mut buf).await.unwrap();
            if client.arrival().is_some() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no answer stamped in 100 tries");
    }

    #[tokio::test]
    async fn an_answer_read_late_is_timed_when_it_arrived() {
        // No arrival planned: the reader waits for the kernel to wake it.
        let (mut client, mut server) = pair(Arc::default()).await;
        until_stamped(&mut client, &mut server).await;
        client.write_all(b"ping").await.unwrap();
        let mut asked = [0_u8; 4];
        server.read_exact(&mut asked).await.unwrap();
        server.write_all(b"pong").await.unwrap();
        // On loopback the answer is in the client's socket once the server's write returns.
        let written = Instant::now();
        std::thread::sleep(Duration::from_millis(100));
        let mut answer = [0_u8; 4];
        client.read_exact(&mut answer).await.unwrap();
        let read = Instant::now();
        assert_eq!(&answer, b"pong");
        let arrival = client.arrival().expect("the kernel stamps arrivals");
        // Converting between clocks may be off by microseconds: the read ran 100 ms after the arrival.
        assert!(arrival <= written + Duration::from_millis(20), "stamped {:?} after the write", arrival - written);
        assert!(read - arrival >= Duration::from_millis(80), "stamped {:?} before the read", read - arrival);
    }

    #[tokio::test]
    async fn a_reader_parked_on_the_pacer_reads_on_its_next_tick_or_waits_for_the_kernel() {
        let ticks = Arc::new(Ticks::default());
        ticks.tick(Some(Instant::now() + Duration::from_micros(500)));
        let (mut client, mut server) = pair(Arc::clone(&ticks)).await;
        client.write_all(b"ping").await.unwrap();
        let mut buf = [0_u8; 4];
        let mut reading = std::pin::pin!(client.read(&mut buf));
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(reading.as_mut().poll(&mut cx).is_pending(), "parked: nothing arrived yet");
        server.write_all(b"pong").await.unwrap();
        ticks.tick(Some(Instant::now() + Duration::from_secs(10)));
        assert!(matches!(reading.as_mut().poll(&mut cx), Poll::Ready(Ok(4))), "read on the tick");
        // The next answer comes after a tick that is far off: the kernel wakes the reader.
        client.write_all(b"ping").await.unwrap();
        let answering = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            server.write_all(b"pong").await.unwrap();
            server
        });
        let read = tokio::time::timeout(Duration::from_secs(10), client.read(&mut buf)).await;
        assert!(matches!(read, Ok(Ok(4))), "{read:?}");
        assert!(!client.closed_while_idle(), "open and quiet");
        drop(answering.await.unwrap());
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(client.closed_while_idle(), "the server hung up");
    }
}
