//! The HTTP client of the request hot loop: keep-alive HTTP/1.1 connections ([`super::http1`]) to one target,
//! over plain TCP or rustls, reused across requests, or HTTP/2 connections ([`super::http2`]) when the target
//! asks for them. What can go wrong is classified in [`super::failure`].
//!
//! Each connection is driven by the task that uses it, and idle connections wait in a plain stack: no task
//! hand-off and no keyed pool lookup per request. (reqwest, measured here, costs about 1.5x the CPU per
//! request of hyper's own pooled client; hyper's connection driven in the session's task cost less, and
//! [`super::http1`] costs less again.)

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio_rustls::TlsConnector;

pub use super::failure::Failure;
pub(crate) use super::failure::chain;
pub(super) use super::http1::Stream;
use super::http1::{Answer, Connection, Outgoing};
use super::http2::Http2Pool;
use super::ticks::Ticks;
use super::tls::{connect_failure, secured, tls_connector};
pub(crate) use super::tls::{tls_config, tls_config_for};
use crate::metrics::ErrorClass;
use crate::model::{ConnectionReport, WireProtocol};
use crate::scenario::plan::{Protocol, Target};

/// Where and how to connect.
struct Address {
    host: String,
    port: u16,
    tls: Option<TlsConnector>,
}

/// Connections to one target, reused across requests as a browser or a service's client pool would.
#[derive(Clone)]
pub struct HttpClient {
    address: Arc<Address>,
    connect_timeout: Duration,
    pool: Arc<Mutex<Pool>>,
    /// The origin of the target, for the `Host` header.
    host_header: Arc<str>,
    /// The base URL's path (without a trailing slash), put before every step's path.
    prefix: Arc<str>,
    /// Most body bytes read per response (`[target] max_body`).
    max_body: u64,
    /// The open-model pacer's wake-ups, on which answers expected soon are read.
    ticks: Option<Arc<Ticks>>,
    /// What a request goes over when its step does not say (`[target] protocol`).
    protocol: Protocol,
    /// HTTP/2 connections, when the target or a step asks for `"http2"`.
    http2: Option<Arc<Http2Pool>>,
    /// HTTP/2 connections that may fall back to HTTP/1.1, when the target or a step asks for `"auto"` of an
    /// `https://` target.
    auto: Option<Arc<Http2Pool>>,
    /// HTTP/1.1 connections opened, for the run's connection report where `"auto"` ended on HTTP/1.1.
    http1_opened: Arc<std::sync::atomic::AtomicU64>,
}

/// Connects under way at once, at most. Enough to open a closed model's connections quickly, few enough
/// that a backlog cannot turn into a storm of connects.
const MAX_CONNECTING: usize = 16;

/// Idle connections, and the requests waiting for one, oldest first.
#[derive(Default)]
struct Pool {
    idle: Vec<Connection>,
    /// Requests waiting for a connection or a connect slot: served in arrival order, so after a stall the
    /// oldest overdue requests go first instead of being overtaken by new arrivals.
    waiting: VecDeque<oneshot::Sender<Grant>>,
    /// Connects under way.
    connecting: usize,
}

/// What a waiting request is handed.
enum Grant {
    /// A connection someone just finished with.
    Connection(Connection),
    /// A connect slot someone just freed.
    Connect,
}

/// What [`HttpClient::checkout`] found.
enum Checkout {
    /// A kept-alive connection.
    Idle(Connection),
    /// A connect slot: open a new connection.
    Connect,
}

impl HttpClient {
    /// A client for `base_url` (`http(s)://host[:port][/prefix]`) that reads at most `max_body` bytes of
    /// each answer.
    pub fn new(base_url: &str, connect_timeout: Duration, max_body: u64) -> Result<Self, String> {
        // Messages show the URL redacted: a version or health URL may carry credentials.
        let shown = crate::secret::redact_url(base_url);
        let uri: http::Uri = base_url.parse().map_err(|e| format!("`{shown}` is not a URL: {e}"))?;
        let tls = match uri.scheme_str() {
            Some("http") => None,
            Some("https") => Some(tls_connector()),
            _ => return Err(format!("`{shown}` is not an http:// or https:// URL")),
        };
        let authority = uri.authority().ok_or_else(|| format!("`{shown}` has no host"))?;
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
        let after_scheme = base_url.split_once("://").map_or("", |(_, rest)| rest);
        let port = crate::config::url_port(after_scheme)
            .map_err(|e| format!("`{shown}` {e}"))?
            .unwrap_or(if tls.is_some() { 443 } else { 80 });
        // Userinfo (`user:password@`) never goes into the Host header.
        let host_header = authority.as_str().rsplit('@').next().unwrap_or_default();
        if host_header.is_empty() || !host_header.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!("`{shown}` has an invalid host"));
        }
        Ok(Self {
            address: Arc::new(Address { host, port, tls }),
            connect_timeout,
            host_header: host_header.into(),
            prefix: uri.path().trim_end_matches('/').into(),
            pool: Arc::default(),
            max_body,
            ticks: None,
            protocol: Protocol::Http1,
            http2: None,
            auto: None,
            http1_opened: Arc::default(),
        })
    }

    /// A client for a scenario's target: its URL, limits, trusted certificates and protocol, and the
    /// connections the protocols of `steps` (those that set their own) need.
    pub(super) fn for_target(target: &Target, steps: &[Protocol]) -> Result<Self, String> {
        let mut client = Self::new(&target.base_url, target.connect_timeout, target.max_body)?;
        let https = client.address.tls.is_some();
        let roots = &target.extra_roots;
        if https && !roots.is_empty() {
            Arc::get_mut(&mut client.address).expect("not shared yet").tls =
                Some(TlsConnector::from(Arc::new(tls_config_for(&[b"http/1.1"], roots))));
        }
        client.protocol = target.protocol;
        let wanted = |p: Protocol| target.protocol == p || steps.contains(&p);
        let pool = |alpn: &[&[u8]], auto: bool| {
            let tls = https.then(|| TlsConnector::from(Arc::new(tls_config_for(alpn, roots))));
            Some(Arc::new(Http2Pool::new(target.http2_connections, tls, auto, target.max_body)))
        };
        if wanted(Protocol::Http2) {
            client.http2 = pool(&[b"h2"], false);
        }
        // HTTP/2 is negotiated over TLS only: "auto" on a plain-text target is HTTP/1.1.
        if wanted(Protocol::Auto) && https {
            client.auto = pool(&[b"h2", b"http/1.1"], true);
        }
        Ok(client)
    }

    /// What the run's HTTP/2 connections negotiated, when the target or a step (gRPC, a step's `protocol`)
    /// asked for HTTP/2; `None` for HTTP/1.1 by choice.
    pub(super) fn connection_report(&self) -> Option<ConnectionReport> {
        // The target's protocol's first, then a step's. Nothing connected (the target was down): nothing was
        // negotiated, and saying HTTP/1.1 would be wrong.
        let first = if self.protocol == Protocol::Auto { [&self.auto, &self.http2] } else { [&self.http2, &self.auto] };
        let http1_opened = self.http1_opened.load(std::sync::atomic::Ordering::Relaxed);
        let report = match first.into_iter().flatten().find_map(|pool| pool.report()) {
            // "auto" fell back: its requests went over the HTTP/1.1 connections.
            Some(report) if report.negotiated == WireProtocol::Http1 => {
                Some(ConnectionReport { connections_opened: http1_opened, ..report })
            }
            Some(report) => Some(report),
            // "auto" of an http:// target is HTTP/1.1 (HTTP/2 is negotiated over TLS only): said as much.
            None if self.protocol == Protocol::Auto && http1_opened > 0 => Some(ConnectionReport {
                negotiated: WireProtocol::Http1,
                connections_opened: http1_opened,
                max_concurrent_streams: None,
                steps_only: false,
            }),
            None => None,
        };
        if self.protocol != Protocol::Http1 {
            return report;
        }
        // A target of HTTP/1.1 with a pool at all: the pool was made for the steps that asked for HTTP/2. Where
        // they fell back to HTTP/1.1 ("auto" on a server without h2), nothing went over HTTP/2: nothing to say.
        // Where nothing else was sent (every step gRPC), the run's requests all went over the pool.
        report
            .filter(|r| r.negotiated != WireProtocol::Http1)
            .map(|r| ConnectionReport { steps_only: http1_opened > 0, ..r })
    }

    /// This client's connections read answers expected before the open-model pacer's next arrival when it
    /// wakes for it, instead of having the kernel wake the generator for each ([`super::ticks`]).
    pub(super) fn paced_by(self, ticks: Arc<Ticks>) -> Self {
        Self { ticks: Some(ticks), ..self }
    }

    /// The value of the `Host` header for requests to this target.
    #[must_use]
    pub fn host_header(&self) -> &str {
        &self.host_header
    }

    /// The base URL's path, put before every step's path.
    #[must_use]
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Sends `request` over the target's protocol and reads the whole response.
    pub async fn send(&self, request: &Outgoing) -> Result<Answer, Failure> {
        self.send_over(request, self.protocol).await
    }

    /// Sends `request` over `protocol` (a step's own) and reads the whole response.
    pub(super) async fn send_over(&self, request: &Outgoing, protocol: Protocol) -> Result<Answer, Failure> {
        let pool = match protocol {
            Protocol::Http1 => None,
            Protocol::Http2 => self.http2.as_ref(),
            Protocol::Auto => self.auto.as_ref(),
        };
        if let Some(pool) = pool
            && !pool.fell_back()
            && let Some(answered) = pool.send(self, request).await
        {
            return answered;
        }
        let mut connection = match self.checkout().await {
            Checkout::Idle(mut connection) => {
                if connection.closed_while_idle() {
                    // Closed by the server while idle: the request goes out on a new connection instead.
                    self.open().await?
                } else {
                    connection
                }
            }
            Checkout::Connect => self.connect().await?,
        };
        let (answer, reusable) = connection.exchange(request, self.max_body).await?;
        if reusable {
            self.keep(connection);
        }
        Ok(answer)
    }

    /// An idle connection, or a connect slot. When [`MAX_CONNECTING`] connects are already under way, waits
    /// (in arrival order) for whichever comes first: a connection coming back, or a connect finishing. So
    /// after a stall the overdue requests reuse connections as they free up instead of opening hundreds at
    /// once, which would slow the generator and the target further.
    async fn checkout(&self) -> Checkout {
        let mut waiting = {
            let mut pool = self.lock();
            if let Some(connection) = pool.idle.pop() {
                return Checkout::Idle(connection);
            }
            if pool.connecting < MAX_CONNECTING {
                pool.connecting += 1;
                return Checkout::Connect;
            }
            let (grant, waiting) = oneshot::channel();
            pool.waiting.push_back(grant);
            Waiter { client: self, receiver: waiting }
        };
        match (&mut waiting.receiver).await {
            Ok(Grant::Connection(connection)) => Checkout::Idle(connection),
            // The pool lives as long as this client, so the sender is only dropped with it: connect anyway.
            Ok(Grant::Connect) | Err(_) => Checkout::Connect,
        }
    }

    /// Takes back what a request that gave up had been handed.
    fn give_back(&self, grant: Grant) {
        match grant {
            Grant::Connection(connection) => self.keep(connection),
            Grant::Connect => self.release_connect_slot(),
        }
    }

    /// Gives a connect slot to the oldest waiting request, or frees it.
    fn release_connect_slot(&self) {
        let mut pool = self.lock();
        if Self::hand_over(&mut pool, Grant::Connect).is_some() {
            pool.connecting -= 1;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Hands `grant` to the oldest request still waiting; gives it back if none is.
    fn hand_over(pool: &mut Pool, mut grant: Grant) -> Option<Grant> {
        while let Some(waiter) = pool.waiting.pop_front() {
            match waiter.send(grant) {
                Ok(()) => return None,
                // That request gave up (its run ended); try the next.
                Err(back) => grant = back,
            }
        }
        Some(grant)
    }

    /// Hands a connection that can take another request to the oldest waiting request, or to the idle stack.
    fn keep(&self, connection: Connection) {
        let mut pool = self.lock();
        if let Some(Grant::Connection(connection)) = Self::hand_over(&mut pool, Grant::Connection(connection)) {
            pool.idle.push(connection);
        }
    }

    /// Opens a connection in a connect slot, then hands the slot to the oldest waiting request (or frees it).
    async fn connect(&self) -> Result<Connection, Failure> {
        // Given back however the connect ends: also when its request timed out and dropped it midway, which
        // used to keep the slot forever; with all of them kept, no lost connection was ever replaced.
        let _slot = ConnectSlot(self);
        self.open().await
    }

    async fn open(&self) -> Result<Connection, Failure> {
        let connection = self.open_stream(true).await.map(Connection::new)?;
        self.http1_opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(connection)
    }

    /// A new connection to the target (TCP, then TLS for `https://`), kernel-stamped in the open model when
    /// `stamped`: a WebSocket is not, since a stamped socket reads only on the pacer's wake-ups, which suit an
    /// answer expected soon, not pushes that may come at any time.
    pub(super) async fn open_stream(&self, stamped: bool) -> Result<Box<dyn Stream>, Failure> {
        self.open_stream_over(stamped, self.address.tls.as_ref()).await
    }

    /// [`Self::open_stream`] with `tls` instead of the target's HTTP/1.1 TLS (HTTP/2's ALPN offer).
    pub(super) async fn open_stream_over(
        &self,
        stamped: bool,
        tls: Option<&TlsConnector>,
    ) -> Result<Box<dyn Stream>, Failure> {
        let Address { host, port, .. } = &*self.address;
        let connecting = async {
            let tcp = TcpStream::connect((host.as_str(), *port)).await?;
            tcp.set_nodelay(true)?;
            match &self.ticks {
                // The open model's answers are stamped by the kernel and read on the pacer's wake-ups. The
                // closed model never sleeps between them, and its CPU per request is what the stamps would
                // cost (ci/bench-engine.sh: 1.25x wrk's with them, 0.99x without).
                #[cfg(target_os = "linux")]
                Some(ticks) if stamped => match super::timed_tcp::TimedTcp::new(tcp, Arc::clone(ticks)) {
                    Ok(timed) => secured(tls, host, timed?).await,
                    Err(unstamped) => secured(tls, host, unstamped).await,
                },
                _ => secured(tls, host, tcp).await,
            }
        };
        let limit = humantime::format_duration(self.connect_timeout);
        tokio::time::timeout(self.connect_timeout, connecting)
            .await
            .map_err(|_| Failure::new(ErrorClass::Connect, format!("cannot connect within {limit}")))?
            .map_err(|e| connect_failure(&e, tls))
    }

    /// Whether the target is `https://`.
    pub(super) fn is_tls(&self) -> bool {
        self.address.tls.is_some()
    }

    /// GETs `url` and returns its body as text: for the `version_url` of a build, not for load. An answer
    /// longer than [`MAX_TEXT_BODY`] is an error: a build id or a health answer is a few bytes.
    pub async fn get_text(url: &str, timeout: Duration) -> Result<String, String> {
        let client = Self::new(url, timeout, MAX_TEXT_BODY)?;
        let uri: http::Uri = url.parse().map_err(|e| format!("bad URL: {e}"))?;
        let target = uri.path_and_query().map_or("/", http::uri::PathAndQuery::as_str);
        let request = super::request::get(target, client.host_header())?;
        let answer = tokio::time::timeout(timeout, client.send(&request))
            .await
            .map_err(|_| format!("no answer within {}", humantime::format_duration(timeout)))?
            .map_err(|f| match f.class {
                ErrorClass::BodyTooLarge => format!(
                    "the answer is longer than {MAX_TEXT_BODY} bytes, too long to be a build id or a health answer"
                ),
                _ => f.message,
            })?;
        if !(200..300).contains(&answer.status) {
            let status =
                http::StatusCode::from_u16(answer.status).map_or_else(|_| answer.status.to_string(), |s| s.to_string());
            return Err(format!("answered {status}"));
        }
        String::from_utf8(answer.body.to_vec()).map_err(|_| "the answer is not UTF-8 text".to_owned())
    }
}

impl super::http2::Dial for HttpClient {
    fn host_header(&self) -> &str {
        &self.host_header
    }

    fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    fn open(&self, tls: Option<&TlsConnector>) -> impl Future<Output = Result<Box<dyn Stream>, Failure>> + Send {
        self.open_stream_over(true, tls)
    }

    /// Keeps the stream as an idle HTTP/1.1 connection. It was opened outside a connect slot, so no slot is
    /// freed.
    fn keep_http1(&self, stream: Box<dyn Stream>) {
        self.http1_opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.keep(Connection::new(stream));
    }
}

/// A connect slot in use: given back when dropped.
struct ConnectSlot<'a>(&'a HttpClient);

impl Drop for ConnectSlot<'_> {
    fn drop(&mut self) {
        self.0.release_connect_slot();
    }
}

/// A request waiting for a connection or a connect slot. If it gives up (its request timed out) after one
/// was handed to it, what it was handed goes back to the pool instead of being lost with it.
struct Waiter<'a> {
    client: &'a HttpClient,
    receiver: oneshot::Receiver<Grant>,
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        self.receiver.close();
        if let Ok(grant) = self.receiver.try_recv() {
            self.client.give_back(grant);
        }
    }
}

/// Most bytes of a version or health answer read.
pub const MAX_TEXT_BODY: u64 = 64 * 1024;

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
