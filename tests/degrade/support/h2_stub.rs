//! HTTP/2 stub targets on 127.0.0.1: the stub API ([`super::target::api`], plus a fixed delay and a huge body)
//! on hyper's own HTTP/2 server, in plain text (h2c) or over TLS with ALPN (the committed test CA's
//! certificate for `localhost`, `tests/fixtures/tls`), with the stream limit a test asks for; the same API on
//! hyper's HTTP/1.1-only server; and a raw `h2` server that resets streams or sends GOAWAY mid-run, which
//! hyper's server does not do on demand.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::Path;
use axum::routing::get;
use bytes::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::socket_clock::SocketClock;
use super::target::{Counters, api};

/// The length of `/huge`'s body: past the 1 MB `max_body` the tests set.
pub const HUGE_BODY: usize = 8_000_000;

/// How an HTTP/2 stub is reached and what it allows.
#[derive(Clone, Copy, Default)]
pub struct H2Options {
    /// TLS with these ALPN protocols (`None`: h2c, plain text).
    pub alpn: Option<&'static [&'static [u8]]>,
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`; hyper's default (200) when `None`.
    pub max_streams: Option<u32>,
    /// Serve `self-signed.crt` (a self-signed CA certificate, as `openssl req -x509` makes) instead of the test
    /// CA's `localhost.crt`.
    pub self_signed: bool,
}

/// A stub server: stopped when dropped.
pub struct H2Stub {
    pub address: SocketAddr,
    tls: bool,
    /// Connections accepted.
    pub connections: Arc<AtomicU64>,
    /// How long `/delay/{ms}` held each request, as the stub's own clock read it: tokio's timer rounds a sleep
    /// up to its next millisecond tick and the runtime wakes for it when it can, so a 50 ms delay is served in
    /// 50-52 ms, and that is the server's time, not the generator's.
    pub held: Held,
    /// How long it held each request (each HTTP/2 stream) at its socket ([`super::socket_clock`]): what the latency tests
    /// compare the generator's figures with, the server's time around the handler included.
    pub at_socket: Held,
    server: tokio::task::JoinHandle<()>,
}

/// Durations a stub held its delayed requests for, in µs.
pub type Held = Arc<std::sync::Mutex<Vec<i64>>>;

/// The median of what a stub `held`, µs.
#[allow(dead_code, reason = "read by the latency tests of tests/nights")]
pub fn median_held(held: &Held) -> i64 {
    let mut values = held.lock().unwrap().clone();
    assert!(!values.is_empty(), "the stub held no delayed request");
    values.sort_unstable();
    values[values.len() / 2]
}

impl Drop for H2Stub {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl H2Stub {
    /// The base URL: `https://localhost:port` over TLS (the certificate's name), `http://127.0.0.1:port` else.
    pub fn url(&self) -> String {
        if self.tls { format!("https://localhost:{}", self.address.port()) } else { format!("http://{}", self.address) }
    }

    /// The stub API on hyper's HTTP/2 server.
    pub async fn http2(options: H2Options) -> Self {
        let (held, at_socket) = (Held::default(), Held::default());
        let app = routes(&held);
        let times = Arc::clone(&at_socket);
        let certificate = if options.self_signed { "self-signed" } else { "localhost" };
        let acceptor = options.alpn.map(|alpn| acceptor_for(alpn, certificate));
        let mut stub = serve_with(acceptor, move |io| {
            let (app, times) = (app.clone(), Arc::clone(&times));
            async move {
                let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
                if let Some(max) = options.max_streams {
                    builder.max_concurrent_streams(max);
                }
                let io = TokioIo::new(SocketClock::http2(io.into_inner(), times));
                let _ = builder.serve_connection(io, TowerToHyperService::new(app)).await;
            }
        })
        .await;
        (stub.held, stub.at_socket) = (held, at_socket);
        stub
    }

    /// The stub API on hyper's HTTP/1.1 server only (TLS offering only `http/1.1` when `alpn` says so).
    pub async fn http1_only(alpn: Option<&'static [&'static [u8]]>) -> Self {
        let (held, at_socket) = (Held::default(), Held::default());
        let app = routes(&held);
        let times = Arc::clone(&at_socket);
        let mut stub = serve(alpn, move |io| {
            let (app, times) = (app.clone(), Arc::clone(&times));
            async move {
                let service = TowerToHyperService::new(app);
                let io = TokioIo::new(SocketClock::http1(io.into_inner(), times));
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
            }
        })
        .await;
        (stub.held, stub.at_socket) = (held, at_socket);
        stub
    }

    /// A raw h2c server answering `200 ok` after 20 ms that resets every `reset_every`th stream (0: none) with
    /// `INTERNAL_ERROR`, and sends GOAWAY on each connection after `goaway_after` streams (0: never), leaving
    /// those it has not answered unanswered, then closes it.
    pub async fn raw(reset_every: u64, goaway_after: u64) -> Self {
        let streams = Arc::new(AtomicU64::new(0));
        serve(None, move |io| {
            let streams = Arc::clone(&streams);
            async move { raw_connection(io, &streams, reset_every, goaway_after).await }
        })
        .await
    }
}

/// The stub API and two routes of its own: `/delay/{ms}` answers after that many milliseconds, `/huge` with
/// [`HUGE_BODY`] bytes.
fn routes(held: &Held) -> Router {
    let held = Arc::clone(held);
    let delay = move |Path(ms): Path<u64>| {
        let held = Arc::clone(&held);
        async move {
            let start = std::time::Instant::now();
            tokio::time::sleep(Duration::from_millis(ms)).await;
            held.lock().unwrap().push(i64::try_from(start.elapsed().as_micros()).unwrap_or(i64::MAX));
            "ok"
        }
    };
    let huge = || async { vec![b'x'; HUGE_BODY] };
    Router::new().route("/delay/{ms}", get(delay)).route("/huge", get(huge)).merge(api(Arc::new(Counters::default())))
}

/// Accepts connections on a free port, each (after TLS with `alpn`, when set) served by `connection`.
async fn serve<F, Fut>(alpn: Option<&'static [&'static [u8]]>, connection: F) -> H2Stub
where
    F: Fn(TokioIo<Box<dyn Io>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    serve_with(alpn.map(acceptor), connection).await
}

/// [`serve`], with TLS by `acceptor` (plain text without).
async fn serve_with<F, Fut>(acceptor: Option<TlsAcceptor>, connection: F) -> H2Stub
where
    F: Fn(TokioIo<Box<dyn Io>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let tls = acceptor.is_some();
    let connections = Arc::new(AtomicU64::new(0));
    let accepted = Arc::clone(&connections);
    let connection = Arc::new(connection);
    let server = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            accepted.fetch_add(1, Ordering::Relaxed);
            // As HTTP/2 servers in production do (tonic, nginx, Go's): without it, the answer's second TLS
            // record waits for the client's delayed ACK, and a 50 ms delay reads 80 ms on some kernels.
            let _ = tcp.set_nodelay(true);
            let (acceptor, connection) = (acceptor.clone(), Arc::clone(&connection));
            tokio::spawn(async move {
                let io: Box<dyn Io> = match acceptor {
                    Some(acceptor) => match acceptor.accept(tcp).await {
                        Ok(tls) => Box::new(tls),
                        Err(_) => return,
                    },
                    None => Box::new(tcp),
                };
                connection(TokioIo::new(io)).await;
            });
        }
    });
    H2Stub { address, tls, connections, held: Held::default(), at_socket: Held::default(), server }
}

/// A connection's bytes, plain or TLS.
pub trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> Io for T {}

/// The committed test CA's file, for `[target] ca_file`.
pub fn ca_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls/ca.crt")
}

/// TLS with the committed test CA's certificate for `localhost`, offering `alpn`.
pub fn acceptor(alpn: &[&[u8]]) -> TlsAcceptor {
    acceptor_for(alpn, "localhost")
}

/// TLS with the committed certificate `tests/fixtures/tls/{name}.crt` and its key, offering `alpn`.
pub fn acceptor_for(alpn: &[&[u8]], name: &str) -> TlsAcceptor {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(folder.join(format!("{name}.crt"))).unwrap().collect::<Result<_, _>>().unwrap();
    let key = PrivateKeyDer::from_pem_file(folder.join(format!("{name}.key"))).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    TlsAcceptor::from(Arc::new(config))
}

/// One connection of the raw server (see [`H2Stub::raw`]).
async fn raw_connection(io: TokioIo<Box<dyn Io>>, streams: &AtomicU64, reset_every: u64, goaway_after: u64) {
    let Ok(mut connection) = h2::server::handshake(io.into_inner()).await else { return };
    let mut on_this = 0;
    let mut answering = tokio::task::JoinSet::new();
    while let Some(Ok((_request, mut respond))) = connection.accept().await {
        on_this += 1;
        let number = streams.fetch_add(1, Ordering::Relaxed) + 1;
        if goaway_after > 0 && on_this > goaway_after {
            // GOAWAY now: the streams not answered yet never will be, and the connection closes.
            connection.abrupt_shutdown(h2::Reason::NO_ERROR);
            break;
        }
        if reset_every > 0 && number.is_multiple_of(reset_every) {
            respond.send_reset(h2::Reason::INTERNAL_ERROR);
            continue;
        }
        answering.spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let response = http::Response::builder().status(200).body(()).unwrap();
            if let Ok(mut body) = respond.send_response(response, false) {
                let _ = body.send_data(Bytes::from_static(b"ok"), true);
            }
        });
    }
    // Driven to its end, so the GOAWAY and the answers already given go out.
    let _ = std::future::poll_fn(|cx| connection.poll_closed(cx)).await;
    answering.abort_all();
}
