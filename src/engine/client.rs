//! The HTTP client of the request hot loop: keep-alive HTTP/1.1 connections to one target, over plain TCP
//! or rustls. What can go wrong is classified in [`super::failure`].
//!
//! Each connection is driven by the task that uses it: hyper's `Connection` future is polled next to the
//! request instead of on a task of its own, and idle connections wait in a plain stack. That saves two task
//! hand-offs and a keyed pool lookup per request, which on this project's 2-core machines was the
//! difference between the generator and the server being the bottleneck. (reqwest, measured here, costs
//! about 1.5x the CPU per request of hyper's own pooled client, which in turn costs more than this.)

use std::collections::VecDeque;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio_rustls::TlsConnector;

pub use super::failure::Failure;
pub(crate) use super::failure::chain;
use super::failure::classify;
use super::quiet_waker::QuietWakers;
use crate::metrics::ErrorClass;

/// A byte stream to the target, plain or TLS.
trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

type Driver = Pin<Box<http1::Connection<TokioIo<Box<dyn Stream>>, Full<Bytes>>>>;

/// One keep-alive connection: the handle requests go through, the future that does the I/O, and the waker
/// both are polled with.
struct Connection {
    sender: http1::SendRequest<Full<Bytes>>,
    /// `None` once it ended: dropped then, so that hyper hands back a request it had not written.
    driver: Option<Driver>,
    wakers: QuietWakers,
}

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
    host_header: http::HeaderValue,
    /// The base URL's path (without a trailing slash), put before every step's path.
    prefix: Arc<str>,
    /// Most body bytes read per response (`[target] max_body`).
    max_body: u64,
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
        let host_header = http::HeaderValue::from_str(authority.as_str().rsplit('@').next().unwrap_or_default())
            .map_err(|_| format!("`{shown}` has an invalid host"))?;
        Ok(Self {
            address: Arc::new(Address { host, port, tls }),
            connect_timeout,
            host_header,
            prefix: uri.path().trim_end_matches('/').into(),
            pool: Arc::default(),
            max_body,
        })
    }

    /// The value of the `Host` header for requests to this target.
    #[must_use]
    pub fn host_header(&self) -> &http::HeaderValue {
        &self.host_header
    }

    /// The base URL's path, put before every step's path.
    #[must_use]
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Sends `request` (origin-form URI, `Host` set) and reads the whole body.
    pub async fn send(&self, mut request: Request<Full<Bytes>>) -> Result<Response<Bytes>, Failure> {
        let mut connection = match self.checkout().await {
            Checkout::Idle(mut connection) => match connection.exchange(request, self.max_body).await {
                Ok((response, reusable)) => return Ok(self.keep(connection, reusable, response)),
                // The server closed the idle connection before the request went out: safe to send again.
                Err(Attempt::NotSent(unsent)) => {
                    request = *unsent;
                    self.open().await?
                }
                Err(Attempt::Failed(failure)) => return Err(failure),
            },
            Checkout::Connect => self.connect().await?,
        };
        match connection.exchange(request, self.max_body).await {
            Ok((response, reusable)) => Ok(self.keep(connection, reusable, response)),
            Err(Attempt::NotSent(_)) => Err(Failure::new(ErrorClass::Reset, "the new connection closed at once")),
            Err(Attempt::Failed(failure)) => Err(failure),
        }
    }

    /// An idle connection, or a connect slot. When [`MAX_CONNECTING`] connects are already under way, waits
    /// (in arrival order) for whichever comes first: a connection coming back, or a connect finishing. So
    /// after a stall the overdue requests reuse connections as they free up instead of opening hundreds at
    /// once, which would slow the generator and the target further.
    async fn checkout(&self) -> Checkout {
        let waiting = {
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
            waiting
        };
        match waiting.await {
            Ok(Grant::Connection(connection)) => Checkout::Idle(connection),
            // The pool lives as long as this client, so the sender is only dropped with it: connect anyway.
            Ok(Grant::Connect) | Err(_) => Checkout::Connect,
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

    fn keep(&self, connection: Connection, reusable: bool, response: Response<Bytes>) -> Response<Bytes> {
        if reusable {
            let mut pool = self.lock();
            if let Some(Grant::Connection(connection)) = Self::hand_over(&mut pool, Grant::Connection(connection)) {
                pool.idle.push(connection);
            }
        }
        response
    }

    /// Opens a connection in a connect slot, then hands the slot to the oldest waiting request (or frees it).
    async fn connect(&self) -> Result<Connection, Failure> {
        let connected = self.open().await;
        let mut pool = self.lock();
        if Self::hand_over(&mut pool, Grant::Connect).is_some() {
            pool.connecting -= 1;
        }
        connected
    }

    async fn open(&self) -> Result<Connection, Failure> {
        let Address { host, port, tls } = &*self.address;
        let connecting = async {
            let tcp = TcpStream::connect((host.as_str(), *port)).await?;
            tcp.set_nodelay(true)?;
            let stream: Box<dyn Stream> = match tls {
                None => Box::new(tcp),
                Some(tls) => {
                    let name = rustls::pki_types::ServerName::try_from(host.clone())
                        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
                    Box::new(tls.connect(name, tcp).await?)
                }
            };
            Ok::<_, std::io::Error>(stream)
        };
        let limit = humantime::format_duration(self.connect_timeout);
        let stream = tokio::time::timeout(self.connect_timeout, connecting)
            .await
            .map_err(|_| Failure::new(ErrorClass::Connect, format!("cannot connect within {limit}")))?
            .map_err(|e| Failure::new(ErrorClass::Connect, format!("cannot connect: {e}")))?;
        // Requests are small: copying the head and body into one buffer and writing it costs less than
        // hyper's default queue of buffers for a vectored write (measured: ~5 % more requests per second).
        let (sender, driver) = http1::Builder::new()
            .writev(false)
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| Failure::new(ErrorClass::Connect, format!("cannot start HTTP on the connection: {e}")))?;
        Ok(Connection { sender, driver: Some(Box::pin(driver)), wakers: QuietWakers::new() })
    }

    /// GETs `url` and returns its body as text: for the `version_url` of a build, not for load. An answer
    /// longer than [`MAX_TEXT_BODY`] is an error: a build id or a health answer is a few bytes.
    pub async fn get_text(url: &str, timeout: Duration) -> Result<String, String> {
        let client = Self::new(url, timeout, MAX_TEXT_BODY)?;
        let uri: http::Uri = url.parse().map_err(|e| format!("bad URL: {e}"))?;
        let target = uri.path_and_query().map_or("/", http::uri::PathAndQuery::as_str);
        let request = Request::get(target)
            .header(http::header::HOST, client.host_header().clone())
            .body(Full::default())
            .map_err(|e| format!("bad URL: {e}"))?;
        let response = tokio::time::timeout(timeout, client.send(request))
            .await
            .map_err(|_| format!("no answer within {}", humantime::format_duration(timeout)))?
            .map_err(|f| match f.class {
                ErrorClass::BodyTooLarge => format!(
                    "the answer is longer than {MAX_TEXT_BODY} bytes, too long to be a build id or a health answer"
                ),
                _ => f.message,
            })?;
        if !response.status().is_success() {
            return Err(format!("answered {}", response.status()));
        }
        String::from_utf8(response.into_body().to_vec()).map_err(|_| "the answer is not UTF-8 text".to_owned())
    }
}

/// Most bytes of a version or health answer read.
pub const MAX_TEXT_BODY: u64 = 64 * 1024;

/// How one attempt on one connection went wrong.
enum Attempt {
    /// The connection was closed before the request was written; here it is back, to send elsewhere.
    NotSent(Box<Request<Full<Bytes>>>),
    /// The request was (or may have been) sent and failed.
    Failed(Failure),
}

impl Connection {
    /// Sends one request and reads its body, driving the connection meanwhile. Returns the response and
    /// whether the connection can take another request.
    ///
    /// The request and the connection are polled together with the connection's [`QuietWakers`], so a
    /// request costs one poll of the session's task rather than one per hand-off between them, and the
    /// connection is polled only when it has something to do.
    async fn exchange(
        &mut self,
        request: Request<Full<Bytes>>,
        max_body: u64,
    ) -> Result<(Response<Bytes>, bool), Attempt> {
        let Self { sender, driver, wakers } = self;
        let ready = poll_fn(|cx| {
            wakers.poll(cx, |round| {
                // The sender is usually ready at once: the connection asked for the next request as it finished
                // the last. The connection is then left to the exchange, which polls it once with the request
                // in it; polled here too, it was one more poll of hyper's connection per request, for nothing.
                // A connection the server closed while idle is found there, before the request is written.
                if let Some(mut cx) = round.request()
                    && let Poll::Ready(ready) = sender.poll_ready(&mut cx)
                {
                    return Poll::Ready(ready.is_ok());
                }
                if let Some(mut cx) = round.connection()
                    && driver.as_mut().is_none_or(|driver| driver.as_mut().poll(&mut cx).is_ready())
                {
                    return Poll::Ready(false);
                }
                Poll::Pending
            })
        })
        .await;
        if !ready {
            return Err(Attempt::NotSent(Box::new(request)));
        }
        let outcome = {
            let mut exchange = std::pin::pin!(async {
                let response = sender.try_send_request(request).await.map_err(|mut e| match e.take_message() {
                    Some(request) => Attempt::NotSent(Box::new(request)),
                    None => Attempt::Failed(classify(e.error(), "sending the request")),
                })?;
                let (parts, mut body) = response.into_parts();
                Ok((parts, read_body(&mut body, max_body).await?))
            });
            poll_fn(|cx| {
                wakers.poll(cx, |round| {
                    if let Some(mut cx) = round.request()
                        && let Poll::Ready(outcome) = exchange.as_mut().poll(&mut cx)
                    {
                        return Poll::Ready(outcome);
                    }
                    // Once the connection is done (closed, or failed), dropping it resolves the exchange: with the
                    // request handed back if it was not written, with the connection's error if it was.
                    if let Some(mut cx) = round.connection()
                        && driver.as_mut().is_some_and(|driver| driver.as_mut().poll(&mut cx).is_ready())
                    {
                        *driver = None;
                        return exchange.as_mut().poll(&mut round.request_anyway());
                    }
                    Poll::Pending
                })
            })
            .await
        };
        let (parts, body) = outcome?;
        Ok((Response::from_parts(parts, body), driver.is_some() && !sender.is_closed()))
    }
}

/// Reads the whole body, up to `max_body` bytes. Most arrive in one frame, which is kept as it is rather
/// than copied. Past the limit the body is not read further: the caller drops the connection with it, so an
/// endless or huge answer costs at most `max_body` of memory.
async fn read_body(body: &mut hyper::body::Incoming, max_body: u64) -> Result<Bytes, Attempt> {
    let mut first: Option<Bytes> = None;
    let mut joined = BytesMut::new();
    let mut received: u64 = 0;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| Attempt::Failed(classify(&e, "reading the body")))?;
        let Ok(data) = frame.into_data() else { continue };
        received = received.saturating_add(data.len() as u64);
        if received > max_body {
            let message = format!(
                "the body passed max_body ({max_body} bytes) after {received} bytes: the rest was not read and \
                 the connection was dropped"
            );
            return Err(Attempt::Failed(Failure::new(ErrorClass::BodyTooLarge, message)));
        }
        match first.take() {
            None if joined.is_empty() => first = Some(data),
            earlier => {
                joined.extend_from_slice(&earlier.unwrap_or_default());
                joined.extend_from_slice(&data);
            }
        }
    }
    Ok(first.unwrap_or_else(|| joined.freeze()))
}

fn tls_connector() -> TlsConnector {
    TlsConnector::from(Arc::new(tls_config()))
}

/// TLS for HTTP/1.1 on ring with the Mozilla roots from webpki-roots: the same trust wherever degrade runs,
/// whatever the machine's certificate store holds. Webhook delivery uses it too.
pub(crate) fn tls_config() -> rustls::ClientConfig {
    let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}
