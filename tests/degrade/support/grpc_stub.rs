//! A gRPC server on 127.0.0.1 for the tests: h2c (`h2`'s own server) speaking gRPC's wire format by hand
//! (one `application/grpc` content type and `te: trailers` asked of each call, else 415; length-prefixed messages, `grpc-status` in trailers, or in the headers of a trailers-only answer), its
//! messages encoded and decoded through the descriptors of `tests/fixtures/grpc/stub.proto`, compiled by
//! protox when the stub starts, so no `protoc` is needed. Service `stub.Stub`:
//!
//! - `Echo`: waits `delay_ms`, then answers `text` back, `tags` and `big` too; answers status `code` instead
//!   when it is not 0 (with `grpc-message` "asked for").
//! - `Stall`: answers at once, except from 1.5 s after its first call for 1 s, when every answer waits for
//!   the stall's end.
//! - `Huge`: one message of [`HUGE_TEXT`] bytes.
//! - `POST /raw` (plain HTTP/2, not gRPC): the request's body back as it came, as `application/x-protobuf`.
//! - `Ticks`: a server stream of `count` messages `delay_ms` apart, or without end when `count` is 0: sent as
//!   the client's flow-control window allows, so the stub's memory is bounded too.
//!
//! Service `stub.Catalog` (`catalog.proto`) is only there to be described by the stub's reflection service
//! (`support::grpc_reflection`).
//!
//! [`GrpcStub::start_with`] serves it over TLS with ALPN `h2` instead (the committed test CA's certificate for
//! `localhost`, as `h2_stub` does), or without a stream limit.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, Value};
use tokio::net::TcpListener;

use super::h2_stub::Held;
use super::socket_clock::SocketClock;

/// The length of `Huge`'s text: past the 1 MB `max_body` the tests set.
pub const HUGE_TEXT: usize = 8_000_000;

/// The stub's `.proto` file's folder.
pub fn proto_folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/grpc")
}

/// How a stub serves.
#[derive(Debug, Clone, Copy)]
pub struct StubOptions {
    /// TLS with ALPN `h2`; plain h2c when false.
    pub tls: bool,
    /// The SETTINGS_MAX_CONCURRENT_STREAMS it advertises (`None`: none, no limit).
    pub max_streams: Option<u32>,
}

impl Default for StubOptions {
    /// h2c, a stream limit of 100, as many gRPC servers set.
    fn default() -> Self {
        Self { tls: false, max_streams: Some(100) }
    }
}

/// A running stub: stopped when dropped.
pub struct GrpcStub {
    pub address: std::net::SocketAddr,
    tls: bool,
    /// Messages `Ticks` has sent, all calls together.
    pub ticks_sent: Arc<AtomicU64>,
    /// How long `Echo` held each call it was asked to delay, by the stub's own clock (see `h2_stub::Held`).
    #[allow(dead_code, reason = "read by the latency tests of tests/nights")]
    pub held: Held,
    /// How long it held each stream at its socket (see `h2_stub::H2Stub::at_socket`).
    #[allow(dead_code, reason = "read by the latency tests of tests/nights")]
    pub at_socket: Held,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for GrpcStub {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// What every call of a stub shares.
struct Shared {
    pool: DescriptorPool,
    first_stall: OnceLock<Instant>,
    ticks_sent: Arc<AtomicU64>,
    held: Held,
    at_socket: Held,
    max_streams: Option<u32>,
}

impl GrpcStub {
    pub async fn start() -> Self {
        Self::start_with(StubOptions::default()).await
    }

    pub async fn start_with(options: StubOptions) -> Self {
        let pool = protox::Compiler::new([proto_folder()])
            .unwrap()
            .open_files(["stub.proto", "catalog.proto", "reflection.proto"].map(|f| proto_folder().join(f)))
            .unwrap()
            .descriptor_pool();
        let ticks_sent = Arc::new(AtomicU64::new(0));
        let ticks = Arc::clone(&ticks_sent);
        let (held, at_socket) = (Held::default(), Held::default());
        let shared = Arc::new(Shared {
            pool,
            first_stall: OnceLock::new(),
            ticks_sent: ticks,
            held: Arc::clone(&held),
            at_socket: Arc::clone(&at_socket),
            max_streams: options.max_streams,
        });
        let acceptor = options.tls.then(|| super::h2_stub::acceptor(&[b"h2"]));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((tcp, _)) => {
                        // As gRPC servers do (tonic's default): no answer waits for the client's delayed ACK.
                        let _ = tcp.set_nodelay(true);
                        drop(tokio::spawn(tls_or_not(tcp, acceptor.clone(), Arc::clone(&shared))));
                    }
                    // A failed accept (out of descriptors, say) is said, and the stub goes on accepting.
                    Err(e) => eprintln!("grpc stub: accept failed: {e}"),
                }
            }
        });
        Self { address, tls: options.tls, ticks_sent, held, at_socket, server }
    }

    /// `https://localhost:port` over TLS (the certificate's name), `http://127.0.0.1:port` else.
    pub fn url(&self) -> String {
        if self.tls { format!("https://localhost:{}", self.address.port()) } else { format!("http://{}", self.address) }
    }
}

/// A connection after its TLS handshake, when the stub speaks TLS.
async fn tls_or_not(tcp: tokio::net::TcpStream, acceptor: Option<tokio_rustls::TlsAcceptor>, shared: Arc<Shared>) {
    let times = Arc::clone(&shared.at_socket);
    match acceptor {
        None => connection(SocketClock::http2(tcp, times), shared).await,
        Some(acceptor) => match acceptor.accept(tcp).await {
            Ok(tls) => connection(SocketClock::http2(tls, times), shared).await,
            Err(e) => eprintln!("grpc stub: a TLS handshake failed: {e}"),
        },
    }
}

async fn connection<T: super::h2_stub::Io + 'static>(io: T, shared: Arc<Shared>) {
    // The stream limit the options ask for, 100 by default, as many gRPC servers set. Open question (noted for
    // the engine's HTTP/2): with no limit and the stub's first accept loop (which ended a connection silently on
    // an error), the stall test lost about 1 run in 4 a few dozen of its ~200 streams opened during the stall
    // (`timeout`, never answered), once with a new connection whose SETTINGS never came. Measured again on a
    // 2-core machine at load 9, this loop printing why a connection ends: with the limit of 100, 2 runs of 12
    // lost 2-3 streams to `timeout` (never answered in 10 s; one printed "the connection ended: broken pipe");
    // without a limit, no stream was lost in 20 runs (one counted 799 of its 800 requests, none failed). So lost
    // streams go with the limit (the streams h2's client queues past it), not with its absence; their cause was
    // not found in the engine (hyper issue 3559 reports a like hang of h2 behind a server's stream limit).
    let mut builder = h2::server::Builder::new();
    if let Some(limit) = shared.max_streams {
        builder.max_concurrent_streams(limit);
    }
    let mut connection = match builder.handshake(io).await {
        Ok(connection) => connection,
        Err(e) => return eprintln!("grpc stub: a connection's handshake failed: {e}"),
    };
    let mut calls = tokio::task::JoinSet::new();
    while let Some(accepted) = connection.accept().await {
        match accepted {
            Ok((request, respond)) => {
                calls.spawn(call(request, respond, Arc::clone(&shared)));
            }
            // Said, so a test that sees its connection go knows why.
            Err(e) => {
                eprintln!("grpc stub: the connection ended: {e}");
                break;
            }
        }
        // Finished calls are let go as the connection goes on, not held until it ends.
        while calls.try_join_next().is_some() {}
    }
    calls.abort_all();
}

/// One call: its request read whole, then answered by its method.
async fn call(
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    shared: Arc<Shared>,
) {
    let path = request.uri().path().to_owned();
    let method = path.trim_start_matches("/stub.Stub/").to_owned();
    // As gRPC's servers do: one content type, gRPC's, or 415; and `te: trailers`.
    let types: Vec<_> = request.headers().get_all("content-type").iter().collect();
    let grpc = matches!(types.as_slice(), [one] if one.as_bytes().starts_with(b"application/grpc"));
    let te = request.headers().get("te").is_some_and(|te| te == "trailers");
    if method != "/raw" && !(grpc && te) {
        let _ = respond.send_response(http::Response::builder().status(415).body(()).unwrap(), true);
        return;
    }
    let mut body = request.into_body();
    let mut bytes = Vec::new();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    if path == super::grpc_reflection::PATH {
        let answers = super::grpc_reflection::answers(&shared.pool, &bytes);
        return answer(&mut respond, &answers).await;
    }
    if path.starts_with("/grpc.reflection.") {
        return status_only(&mut respond, 12, "unknown service");
    }
    if method == "/raw" {
        // Plain HTTP/2, not gRPC: the body back as it came, as Protobuf.
        let response = http::Response::builder().status(200).header("content-type", "application/x-protobuf");
        if let Ok(mut stream) = respond.send_response(response.body(()).unwrap(), false) {
            let _ = send(&mut stream, bytes.into()).await;
            let _ = stream.send_data(Bytes::new(), true);
        }
        return;
    }
    let input = shared.pool.get_message_by_name("stub.CallRequest").unwrap();
    let Some(message) = bytes.get(5..).and_then(|m| DynamicMessage::decode(input, m).ok()) else {
        return status_only(&mut respond, 13, "no request message");
    };
    let field = |name: &str| message.get_field_by_name(name).map(std::borrow::Cow::into_owned);
    let number = |name: &str| field(name).and_then(|v| v.as_u32()).unwrap_or(0);
    let text = field("text").and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    match method.as_str() {
        "Echo" => {
            if number("delay_ms") > 0 {
                let start = Instant::now();
                tokio::time::sleep(Duration::from_millis(number("delay_ms").into())).await;
                let held = i64::try_from(start.elapsed().as_micros()).unwrap_or(i64::MAX);
                shared.held.lock().unwrap().push(held);
            }
            if number("code") != 0 {
                return status_only(&mut respond, number("code"), "asked for");
            }
            let mut reply = shared.reply(&text);
            reply.set_field_by_name("tags", field("tags").unwrap_or(Value::List(Vec::new())));
            reply.set_field_by_name("big", field("big").unwrap_or(Value::I64(0)));
            answer(&mut respond, &[reply]).await;
        }
        "Stall" => {
            let first = *shared.first_stall.get_or_init(Instant::now);
            let (from, to) = (first + Duration::from_millis(1500), first + Duration::from_millis(2500));
            if (from..to).contains(&Instant::now()) {
                tokio::time::sleep_until(to.into()).await;
            }
            answer(&mut respond, &[shared.reply(&text)]).await;
        }
        "Huge" => answer(&mut respond, &[shared.reply(&"x".repeat(HUGE_TEXT))]).await,
        "Ticks" => ticks(&mut respond, &shared, number("count"), number("delay_ms")).await,
        _ => status_only(&mut respond, 12, "no such method"),
    }
}

impl Shared {
    fn reply(&self, text: &str) -> DynamicMessage {
        let mut reply = DynamicMessage::new(self.pool.get_message_by_name("stub.CallReply").unwrap());
        reply.set_field_by_name("text", Value::String(text.to_owned()));
        reply.set_field_by_name("number", Value::U32(7));
        reply
    }
}

/// A trailers-only answer: status 200 and the gRPC status in its headers, no body.
fn status_only(respond: &mut h2::server::SendResponse<Bytes>, code: u32, message: &str) {
    let response = http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .header("grpc-status", code.to_string())
        .header("grpc-message", message.replace(' ', "%20"))
        .body(())
        .unwrap();
    let _ = respond.send_response(response, true);
}

fn framed(message: &DynamicMessage) -> Bytes {
    let encoded = message.encode_to_vec();
    let mut bytes = Vec::with_capacity(encoded.len() + 5);
    bytes.push(0);
    bytes.extend_from_slice(&(encoded.len() as u32).to_be_bytes());
    bytes.extend_from_slice(&encoded);
    bytes.into()
}

fn ok_trailers() -> http::HeaderMap {
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
    trailers
}

/// Answers `messages`, then status OK, each sent as the client's window allows.
async fn answer(respond: &mut h2::server::SendResponse<Bytes>, messages: &[DynamicMessage]) {
    let Some(mut stream) = start(respond) else { return };
    for message in messages {
        if send(&mut stream, framed(message)).await.is_err() {
            return;
        }
    }
    let _ = stream.send_trailers(ok_trailers());
}

fn start(respond: &mut h2::server::SendResponse<Bytes>) -> Option<h2::SendStream<Bytes>> {
    let response = http::Response::builder().status(200).header("content-type", "application/grpc").body(()).unwrap();
    respond.send_response(response, false).ok()
}

/// Sends `data` within the stream's flow-control window, waiting for the client to make room.
async fn send(stream: &mut h2::SendStream<Bytes>, mut data: Bytes) -> Result<(), h2::Error> {
    while !data.is_empty() {
        stream.reserve_capacity(data.len());
        let room = std::future::poll_fn(|cx| stream.poll_capacity(cx))
            .await
            .ok_or_else(|| h2::Error::from(h2::Reason::CANCEL))??;
        let chunk = data.split_to(room.min(data.len()));
        stream.send_data(chunk, false)?;
    }
    Ok(())
}

/// `Ticks`: `count` messages (0: until the client goes, at most 10 minutes), `delay_ms` apart.
async fn ticks(respond: &mut h2::server::SendResponse<Bytes>, shared: &Shared, count: u32, delay_ms: u32) {
    let Some(mut stream) = start(respond) else { return };
    let until = Instant::now() + Duration::from_mins(10);
    let mut sent = 0;
    while (count == 0 || sent < count) && Instant::now() < until {
        if send(&mut stream, framed(&shared.reply(&format!("tick {sent}")))).await.is_err() {
            return;
        }
        sent += 1;
        shared.ticks_sent.fetch_add(1, Ordering::Relaxed);
        if delay_ms == 0 {
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(Duration::from_millis(delay_ms.into())).await;
        }
    }
    let _ = stream.send_trailers(ok_trailers());
}
