//! HTTP/2 to the target (`[target] protocol = "http2"` or `"auto"`), on hyper's own `h2` crate over the engine's
//! connections (opened by the client through [`Dial`]: TCP, kernel-stamped in the open model, then rustls),
//! so a request is timed exactly as over HTTP/1.1: from its intended start to its answer's arrival.
//!
//! A run keeps `[target] http2_connections` connections (1 by default, as a browser or a gRPC channel does)
//! and spreads requests over them in turn. Each connection is driven by a task of its own, as HTTP/2 must be:
//! its streams' frames arrive interleaved. Before a connection takes requests, a PING's answer confirms the
//! server's SETTINGS were read, so its `MAX_CONCURRENT_STREAMS` holds from the first request: requests beyond
//! it wait in h2's queue (oldest first) for a stream, and that wait is part of their response time.
//!
//! A connection the server closed, or left with GOAWAY, is replaced by the next request that finds it so;
//! a request that had not gone out on it goes out on the new one. The streams a GOAWAY left unanswered count
//! as `goaway`, a stream the server reset as `stream_reset`, each with the server's error code.
//!
//! Over TLS, ALPN offers `h2` (and `http/1.1` too for `"auto"`, which then falls back to the HTTP/1.1 client
//! when the server chooses it). Over plain TCP, `"http2"` is h2c with prior knowledge (RFC 9113 section
//! 3.3). What was negotiated is reported with the run ([`Http2Pool::report`]).

mod exchange;
mod watched;

use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use tokio_rustls::TlsConnector;

use super::answer::Answer;
use super::failure::Failure;
use super::http1::{MAX_HEAD, Outgoing, Stream};
use crate::metrics::ErrorClass;
use crate::model::{ConnectionReport, WireProtocol};
use watched::{Watch, Watched};

/// What HTTP/2 needs of the engine's client: its connections, and a home for an `"auto"` connection on which
/// the server chose HTTP/1.1. (A trait, so this module does not depend on the client that holds it.)
pub(super) trait Dial: Sync {
    /// The target's origin, for `:authority` when a request names no `Host`.
    fn host_header(&self) -> &str;
    /// The longest a connect may take.
    fn connect_timeout(&self) -> Duration;
    /// A new stamped stream to the target, over `tls` when it is `https://`.
    fn open(&self, tls: Option<&TlsConnector>) -> impl Future<Output = Result<Box<dyn Stream>, Failure>> + Send;
    /// Keeps `stream` (the server chose HTTP/1.1 in ALPN) as an HTTP/1.1 connection.
    fn keep_http1(&self, stream: Box<dyn Stream>);
}

/// Streams a connection may open before the server's SETTINGS say how many: none are opened before them
/// (the PING), so this only matters for a server that never sends its limit, RFC 9113's recommended least.
const INITIAL_STREAMS: usize = 100;

/// Each stream's receive window, and the connection's: large enough that a body of a few megabytes is not
/// held back by window updates, as browsers set them (h2's default of 64 KiB halves a large body's rate).
/// The connection's is also the most a connection holds of DATA its requests have not read yet.
const STREAM_WINDOW: u32 = 4 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 16 * 1024 * 1024;

/// One live connection.
#[derive(Clone)]
struct Live {
    sender: SendRequest<Bytes>,
    watch: Arc<Watch>,
    /// Which connection this is, so only the one that failed is discarded.
    id: u64,
}

/// One of the run's connections: the live one, if any, and the gate that lets one request at a time open it.
#[derive(Default)]
struct Slot {
    live: Mutex<Option<Live>>,
    connecting: tokio::sync::Mutex<()>,
}

/// A new connection: HTTP/2, or HTTP/1.1 when `"auto"`'s ALPN chose it.
enum Connected {
    Http2(Live),
    Http1(Box<dyn Stream>),
}

/// The run's HTTP/2 connections to its target.
pub(super) struct Http2Pool {
    slots: Vec<Slot>,
    next: AtomicUsize,
    /// `https` or `http`, for the `:scheme` of each request.
    scheme: &'static str,
    /// TLS with the ALPN protocols offered, for an `https://` target.
    tls: Option<TlsConnector>,
    /// `"auto"`: the server's ALPN choice of HTTP/1.1 is followed, not refused.
    auto: bool,
    /// Whether `"auto"` fell back to HTTP/1.1.
    fell_back: AtomicBool,
    max_body: u64,
    opened: AtomicU64,
    /// What was negotiated and the server's stream limit, for the run's summary.
    report: Mutex<Option<ConnectionReport>>,
}

impl Http2Pool {
    /// `connections` connections to a target (`tls` set for `https://`, with its ALPN offer), `auto` when it
    /// may answer in HTTP/1.1.
    pub(super) fn new(connections: usize, tls: Option<TlsConnector>, auto: bool, max_body: u64) -> Self {
        Self {
            slots: (0..connections.max(1)).map(|_| Slot::default()).collect(),
            next: AtomicUsize::new(0),
            scheme: if tls.is_some() { "https" } else { "http" },
            tls,
            auto,
            fell_back: AtomicBool::new(false),
            max_body,
            opened: AtomicU64::new(0),
            report: Mutex::new(None),
        }
    }

    /// Whether requests go over HTTP/1.1 instead (`"auto"`, and the server chose it).
    pub(super) fn fell_back(&self) -> bool {
        self.fell_back.load(Ordering::Relaxed)
    }

    /// What the run's connections negotiated, once one was made.
    pub(super) fn report(&self) -> Option<ConnectionReport> {
        let mut report = (*lock(&self.report))?;
        report.connections_opened = self.opened.load(Ordering::Relaxed);
        Some(report)
    }

    /// Sends `request` over HTTP/2 and reads its answer; `None` when the target fell back to HTTP/1.1, for
    /// the caller to send it that way.
    pub(super) async fn send(&self, client: &impl Dial, request: &Outgoing) -> Option<Result<Answer, Failure>> {
        let parts = match exchange::to_http2(request, self.scheme, client.host_header()) {
            Ok(parts) => parts,
            Err(failure) => return Some(Err(failure)),
        };
        let slot = &self.slots[self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len()];
        // A connection found closed (GOAWAY, the server hung up) before the request went out is replaced once.
        let mut retried = false;
        let (mut sender, watch) = loop {
            let live = match self.live(slot, client).await {
                Ok(Some(live)) => live,
                Ok(None) => return None,
                Err(failure) => return Some(Err(failure)),
            };
            let mut sender = live.sender.clone();
            match poll_fn(|cx| sender.poll_ready(cx)).await {
                Ok(()) => break (sender, live.watch),
                Err(error) => {
                    discard(slot, live.id);
                    if retried {
                        return Some(Err(exchange::classify(&error, &live.watch, "opening a stream")));
                    }
                    retried = true;
                }
            }
        };
        Some(exchange::exchange(&mut sender, parts, self.max_body, &watch).await)
    }

    /// The slot's live connection, opened now if it has none; `None` when `"auto"` fell back to HTTP/1.1.
    async fn live(&self, slot: &Slot, client: &impl Dial) -> Result<Option<Live>, Failure> {
        if let Some(live) = lock(&slot.live).clone() {
            return Ok(Some(live));
        }
        let _gate = slot.connecting.lock().await;
        // Another request may have opened it while this one waited at the gate.
        if let Some(live) = lock(&slot.live).clone() {
            return Ok(Some(live));
        }
        if self.fell_back() {
            return Ok(None);
        }
        match self.connect(client).await? {
            Connected::Http2(live) => {
                *lock(&slot.live) = Some(live.clone());
                Ok(Some(live))
            }
            Connected::Http1(stream) => {
                self.fell_back.store(true, Ordering::Relaxed);
                self.negotiated(WireProtocol::Http1, None);
                client.keep_http1(stream);
                Ok(None)
            }
        }
    }

    /// Opens a connection: TCP, TLS with ALPN, then HTTP/2's preface and SETTINGS, all within the target's
    /// `connect_timeout`.
    async fn connect(&self, client: &impl Dial) -> Result<Connected, Failure> {
        let stream = client.open(self.tls.as_ref()).await?;
        if self.tls.is_some() && stream.alpn() != Some(b"h2") {
            if self.auto {
                return Ok(Connected::Http1(stream));
            }
            let chose = stream.alpn().map_or_else(|| "none".to_owned(), |p| String::from_utf8_lossy(p).into_owned());
            let message = format!(
                "the server did not agree to HTTP/2 in TLS's ALPN (it chose {chose}); protocol = \"auto\" would fall \
                 back to HTTP/1.1"
            );
            return Err(Failure::new(ErrorClass::Protocol, message));
        }
        let limit = humantime::format_duration(client.connect_timeout());
        tokio::time::timeout(client.connect_timeout(), self.handshake(stream))
            .await
            .map_err(|_| Failure::new(ErrorClass::Connect, format!("no HTTP/2 SETTINGS within {limit}")))?
    }

    /// HTTP/2's start on `stream`; the connection's task spawned; a PING's answer awaited, which comes after
    /// the server's SETTINGS.
    async fn handshake(&self, stream: Box<dyn Stream>) -> Result<Connected, Failure> {
        let watch = Arc::new(Watch::new(self.tls.is_none()));
        let (sender, mut connection) = h2::client::Builder::new()
            .initial_max_send_streams(INITIAL_STREAMS)
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            // Memory stays bounded whatever the server sends: a header block (or trailers) of at most HTTP/1.1's
            // head limit, no pushed streams, and unread DATA within the windows above.
            .max_header_list_size(MAX_HEAD as u32)
            .enable_push(false)
            .handshake::<_, Bytes>(Watched::new(stream, Arc::clone(&watch)))
            .await
            .map_err(|e| exchange::classify(&e, &watch, "starting HTTP/2"))?;
        let mut ping = connection.ping_pong().expect("a new connection's pings are there to take");
        // Ends when the connection does; its streams learn why from their own futures.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        ping.ping(h2::Ping::opaque()).await.map_err(|e| exchange::classify(&e, &watch, "starting HTTP/2"))?;
        let id = self.opened.fetch_add(1, Ordering::Relaxed);
        let streams = sender.current_max_send_streams();
        let wire = if self.tls.is_some() { WireProtocol::H2 } else { WireProtocol::H2c };
        self.negotiated(wire, (streams != usize::MAX).then_some(streams as u64));
        Ok(Connected::Http2(Live { sender, watch, id }))
    }

    /// Notes what a new connection negotiated: the first one's protocol, and the lowest stream limit seen.
    fn negotiated(&self, wire: WireProtocol, max_streams: Option<u64>) {
        let mut report = lock(&self.report);
        let report = report.get_or_insert(ConnectionReport {
            negotiated: wire,
            connections_opened: 0,
            max_concurrent_streams: max_streams,
            steps_only: false,
        });
        report.max_concurrent_streams = match (report.max_concurrent_streams, max_streams) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

/// Forgets the slot's connection `id` (a new one is opened by the next request), unless it was replaced already.
fn discard(slot: &Slot, id: u64) {
    let mut live = lock(&slot.live);
    if live.as_ref().is_some_and(|l| l.id == id) {
        *live = None;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
