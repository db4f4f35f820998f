//! A WebSocket stub target on 127.0.0.1, on the same codec degrade's engine uses, in the server role. Sockets
//! open on `/boards/{board}`; what a client sends decides what comes back:
//!
//! - `{"op": "echo", "id": …}`: `{"type": "ack", "id": …}` after the stub's delay;
//! - `{"op": "broadcast", "id": …}`: `{"type": "change", "id": …}` to the board's *other* sockets, and the ack
//!   to the sender, both after the delay;
//! - `{"op": "silent"}`: nothing; `{"op": "close", "code": 1011}`: a close frame with that code;
//! - `{"op": "drop"}`: the TCP connection ends at once, without a close frame (what a client calls 1006);
//! - `{"op": "fragments", "parts": n, "id": …}`: the ack after the delay, in n frames with a ping between the
//!   first two (control frames may come between a message's fragments);
//! - `{"op": "flood", "count": n, "id": …}`: n cursor pushes at once, then the ack;
//! - `{"op": "big", "size": n, "id": …}`: an ack padded to n bytes;
//! - a binary message starting 0x01: the same bytes with 0x81 first, after the delay.
//!
//! With `stall` set, every answer due in the stall's window is held until it ends.
//!
//! Every socket also gets a cursor push (`{"type": "cursor"}`) and a ping every `push_every`; the pongs are
//! counted. With `subprotocol` set, an upgrade not offering it is refused with 400.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};

/// How the stub behaves.
#[derive(Debug, Clone, Copy)]
pub struct WsStubConfig {
    /// Before each answer.
    pub delay: Duration,
    /// Between a socket's cursor pushes (and pings).
    pub push_every: Duration,
    /// Required in the upgrade's `Sec-WebSocket-Protocol`, and chosen.
    pub subprotocol: Option<&'static str>,
    /// A stall of every answer: from this long after the first message, for the second duration.
    pub stall: Option<(Duration, Duration)>,
}

/// What the stub counted.
#[derive(Default)]
pub struct WsCounters {
    /// Upgrades accepted.
    pub sockets: AtomicU64,
    /// Upgrades refused for their subprotocol.
    pub refused: AtomicU64,
    /// Pongs received: pings the client answered.
    pub pongs: AtomicU64,
    /// Messages received from clients.
    pub received: AtomicU64,
    /// When the first message came, which the stall is timed from.
    first_message: std::sync::OnceLock<Instant>,
}

impl WsCounters {
    /// How long an answer due now is held back by the stall.
    fn stalled(&self, config: &WsStubConfig) -> Duration {
        let (Some((from, length)), Some(first)) = (config.stall, self.first_message.get()) else {
            return Duration::ZERO;
        };
        let (start, now) = (*first + from, Instant::now());
        if now < start { Duration::ZERO } else { (start + length).saturating_duration_since(now) }
    }
}

/// Sockets per board: (socket number, its outgoing queue).
type Boards = Mutex<HashMap<String, Vec<(u64, mpsc::UnboundedSender<Message>)>>>;

/// The stub: started on a free port, stopped when dropped.
pub struct WsStub {
    pub address: SocketAddr,
    pub counters: Arc<WsCounters>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for WsStub {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl WsStub {
    pub async fn start(config: WsStubConfig) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let counters = Arc::new(WsCounters::default());
        let boards: Arc<Boards> = Arc::default();
        let shared = Arc::clone(&counters);
        let server = tokio::spawn(async move {
            let mut number = 0;
            let mut sockets = tokio::task::JoinSet::new();
            while let Ok((tcp, _)) = listener.accept().await {
                number += 1;
                sockets.spawn(serve(tcp, number, config, Arc::clone(&shared), Arc::clone(&boards)));
            }
        });
        Self { address, counters, server }
    }

    /// The base URL a scenario's `[target]` names.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }
}

/// Upgrades one connection, then answers it until it closes.
async fn serve(tcp: TcpStream, number: u64, config: WsStubConfig, counters: Arc<WsCounters>, boards: Arc<Boards>) {
    let mut board = String::new();
    // The codec's callback type: its error is the refusal response itself.
    #[allow(clippy::result_large_err, reason = "the codec's callback signature")]
    let callback = |request: &Request, mut response: Response| -> Result<Response, ErrorResponse> {
        request.uri().path().trim_start_matches("/boards/").clone_into(&mut board);
        let Some(required) = config.subprotocol else { return Ok(response) };
        let offered = request.headers().get("sec-websocket-protocol").and_then(|v| v.to_str().ok()).unwrap_or("");
        if offered.split(',').any(|p| p.trim() == required) {
            response.headers_mut().insert("sec-websocket-protocol", required.parse().unwrap());
            return Ok(response);
        }
        counters.refused.fetch_add(1, Ordering::Relaxed);
        let mut refusal = ErrorResponse::new(Some(format!("subprotocol {required} required")));
        *refusal.status_mut() = http::StatusCode::BAD_REQUEST;
        Err(refusal)
    };
    // Each answer goes out as it is written, as a real-time server's do: with Nagle's algorithm a frame written
    // behind another waits for the client's delayed ACK (40 ms on Linux).
    let _ = tcp.set_nodelay(true);
    let Ok(socket) = tokio_tungstenite::accept_hdr_async(tcp, callback).await else { return };
    counters.sockets.fetch_add(1, Ordering::Relaxed);
    let (mut sink, mut stream) = socket.split();
    let (out, mut queue) = mpsc::unbounded_channel::<Message>();
    boards.lock().unwrap().entry(board.clone()).or_default().push((number, out.clone()));
    let writer = tokio::spawn(async move {
        while let Some(message) = queue.recv().await {
            let closing = matches!(message, Message::Close(_));
            if sink.send(message).await.is_err() || closing {
                break;
            }
        }
    });
    let pusher = tokio::spawn(push(out.clone(), config.push_every));
    while let Some(Ok(message)) = stream.next().await {
        counters.received.fetch_add(1, Ordering::Relaxed);
        counters.first_message.get_or_init(Instant::now);
        let delay = config.delay + counters.stalled(&config);
        match message {
            Message::Pong(_) => {
                counters.pongs.fetch_add(1, Ordering::Relaxed);
            }
            Message::Text(text) if dropped(&text) => break,
            Message::Text(text) => answer(&text, &out, delay, &boards, &board, number),
            Message::Binary(bytes) if bytes.first() == Some(&1) => {
                let mut reply = bytes.to_vec();
                reply[0] = 0x81;
                later(&out, delay, Message::Binary(reply.into()));
            }
            Message::Close(_) => break,
            _ => {}
        }
    }
    pusher.abort();
    writer.abort();
    if let Some(sockets) = boards.lock().unwrap().get_mut(&board) {
        sockets.retain(|(n, _)| *n != number);
    }
}

/// Whether a message asks the stub to drop the connection: the loop it breaks then drops the socket's halves,
/// so the TCP connection ends with no close frame.
fn dropped(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|request| request["op"] == "drop")
}

/// `text` as a text message in `parts` frames, with a ping after the first.
fn fragments(text: &str, parts: usize) -> Vec<Message> {
    let bytes = text.as_bytes();
    let size = bytes.len().div_ceil(parts.max(1)).max(1);
    let chunks: Vec<&[u8]> = bytes.chunks(size).collect();
    let mut frames = Vec::new();
    for (n, chunk) in chunks.iter().enumerate() {
        let opcode = if n == 0 { OpCode::Data(Data::Text) } else { OpCode::Data(Data::Continue) };
        frames.push(Message::Frame(Frame::message(chunk.to_vec(), opcode, n + 1 == chunks.len())));
        if n == 0 {
            frames.push(Message::Ping(vec![9].into()));
        }
    }
    frames
}

/// A cursor push and a ping every `every`.
async fn push(out: mpsc::UnboundedSender<Message>, every: Duration) {
    let mut n = 0_u64;
    loop {
        tokio::time::sleep(every).await;
        n += 1;
        let cursor = Message::text(json!({"type": "cursor", "n": n}).to_string());
        if out.send(cursor).is_err() || out.send(Message::Ping(vec![1, 2, 3].into())).is_err() {
            return;
        }
    }
}

/// Sends `message` after `delay`.
fn later(out: &mpsc::UnboundedSender<Message>, delay: Duration, message: Message) {
    let out = out.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        let _ = out.send(message);
    });
}

/// Sends `messages` in order after `delay`.
fn later_all(out: &mpsc::UnboundedSender<Message>, delay: Duration, messages: Vec<Message>) {
    let out = out.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        for message in messages {
            let _ = out.send(message);
        }
    });
}

/// What a text message asks for.
fn answer(text: &str, out: &mpsc::UnboundedSender<Message>, delay: Duration, boards: &Boards, board: &str, me: u64) {
    let Ok(request) = serde_json::from_str::<Value>(text) else { return };
    let id = request["id"].clone();
    let ack = || Message::text(json!({"type": "ack", "id": id}).to_string());
    match request["op"].as_str().unwrap_or_default() {
        "echo" => later(out, delay, ack()),
        "broadcast" => {
            let change = Message::text(json!({"type": "change", "id": id}).to_string());
            for (n, other) in boards.lock().unwrap().get(board).into_iter().flatten() {
                if *n != me {
                    later(other, delay, change.clone());
                }
            }
            later(out, delay, ack());
        }
        "close" => {
            let code = u16::try_from(request["code"].as_u64().unwrap_or(1011)).unwrap_or(1011);
            let _ = out.send(Message::Close(Some(CloseFrame { code: code.into(), reason: "stub closes".into() })));
        }
        "flood" => {
            for n in 0..request["count"].as_u64().unwrap_or(0) {
                let _ = out.send(Message::text(json!({"type": "cursor", "flood": n}).to_string()));
            }
            let _ = out.send(ack());
        }
        "fragments" => {
            let parts = usize::try_from(request["parts"].as_u64().unwrap_or(2)).unwrap_or(2);
            let text = json!({"type": "ack", "id": id, "fragmented": true}).to_string();
            later_all(out, delay, fragments(&text, parts));
        }
        "big" => {
            let size = usize::try_from(request["size"].as_u64().unwrap_or(0)).unwrap_or(0);
            let padded = json!({"type": "ack", "id": id, "pad": "x".repeat(size)});
            let _ = out.send(Message::text(padded.to_string()));
        }
        _ => {}
    }
}
