//! Stub targets on 127.0.0.1 that the engine tests load: an axum API whose latency and errors the test
//! controls, and raw TCP servers that answer garbage or hang up.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the stub API remembers.
#[derive(Default)]
pub struct Counters {
    /// When `/stall` was first requested; the stall window is measured from it.
    first_stall_request: OnceLock<Instant>,
    next_id: AtomicU64,
    items: Mutex<HashSet<u64>>,
    /// `POST /items` calls.
    pub created: AtomicU64,
    /// `GET /items/{id}` of an id that `POST /items` created.
    pub reads_of_created: AtomicU64,
    /// `DELETE /items/{id}` of an id that existed.
    pub deletes_of_created: AtomicU64,
    /// Every `GET /echo` query string, in arrival order.
    pub echoed: Mutex<Vec<String>>,
    /// Every `GET /named/…` path as it arrived (not decoded), in arrival order.
    pub named: Mutex<Vec<String>>,
    /// Per `GET /hold?who=…`: how many of its requests are in flight now, and the most there ever were.
    pub holding: Mutex<std::collections::HashMap<String, (u32, u32)>>,
}

/// The stub API: started on a free port, stopped when dropped.
pub struct StubTarget {
    pub address: SocketAddr,
    pub counters: Arc<Counters>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for StubTarget {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// When `/stall` stalls: from 1.5 s after its first request, for 1 s.
const STALL_FROM: Duration = Duration::from_millis(1500);
const STALL_FOR: Duration = Duration::from_secs(1);

impl StubTarget {
    pub async fn start() -> Self {
        let counters = Arc::new(Counters::default());
        let app = api(Arc::clone(&counters));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { address, counters, server }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }
}

/// The stub API's routes, for any server to serve (the HTTP/2 stub serves them too).
pub fn api(counters: Arc<Counters>) -> Router {
    Router::new()
        .route("/fast", get(|| async { Json(json!({"ok": true, "items": [{"id": 1}]})) }))
        .route("/stall", get(stall))
        .route(
            "/hang",
            get(|| async {
                tokio::time::sleep(Duration::from_mins(1)).await;
                "too late"
            }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(2)).await;
                "late"
            }),
        )
        .route(
            "/status/{code}",
            get(|Path(code): Path<u16>| async move { (StatusCode::from_u16(code).unwrap(), "as asked") }),
        )
        .route("/json", get(|| async { Json(json!({"state": "broken", "count": 3})) }))
        // A header HTTP allows (obs-text) that is not UTF-8: Latin-1 "café".
        .route(
            "/latin1-header",
            get(|| async { ([("x-token", axum::http::HeaderValue::from_bytes(b"caf\xe9").unwrap())], "ok") }),
        )
        .route("/echo", get(echo))
        .route("/named/{name}", get(named))
        // A debug error page that quotes the request's Authorization header back.
        .route(
            "/echo-auth",
            get(|headers: axum::http::HeaderMap| async move {
                let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                (StatusCode::INTERNAL_SERVER_ERROR, format!("oops\nauth was: {auth}"))
            }),
        )
        .route("/hold", get(hold))
        .route("/items", post(create))
        .route("/items/{id}", get(read).delete(delete))
        .with_state(counters)
}

async fn stall(State(counters): State<Arc<Counters>>) -> &'static str {
    let now = Instant::now();
    let first = *counters.first_stall_request.get_or_init(|| now);
    let (from, until) = (first + STALL_FROM, first + STALL_FROM + STALL_FOR);
    if now >= from && now < until {
        tokio::time::sleep_until(until.into()).await;
    }
    "ok"
}

async fn echo(State(counters): State<Arc<Counters>>, uri: axum::http::Uri) -> &'static str {
    counters.echoed.lock().unwrap().push(uri.query().unwrap_or_default().to_owned());
    "ok"
}

async fn named(State(counters): State<Arc<Counters>>, uri: axum::http::Uri) -> &'static str {
    counters.named.lock().unwrap().push(uri.path().to_owned());
    "ok"
}

/// Holds each request 20 ms, counting how many requests for the same `who=…` overlap.
async fn hold(State(counters): State<Arc<Counters>>, uri: axum::http::Uri) -> &'static str {
    let who = uri.query().unwrap_or_default().to_owned();
    {
        let mut holding = counters.holding.lock().unwrap();
        let (now, most) = holding.entry(who.clone()).or_default();
        *now += 1;
        *most = (*most).max(*now);
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    counters.holding.lock().unwrap().get_mut(&who).expect("counted above").0 -= 1;
    "held"
}

async fn create(State(counters): State<Arc<Counters>>) -> impl IntoResponse {
    let id = counters.next_id.fetch_add(1, Ordering::Relaxed) + 1000;
    counters.created.fetch_add(1, Ordering::Relaxed);
    counters.items.lock().unwrap().insert(id);
    (StatusCode::CREATED, [("location", format!("/items/{id}"))], Json(json!({"id": id})))
}

async fn read(State(counters): State<Arc<Counters>>, Path(id): Path<u64>) -> impl IntoResponse {
    if counters.items.lock().unwrap().contains(&id) {
        counters.reads_of_created.fetch_add(1, Ordering::Relaxed);
        (StatusCode::OK, Json(json!({"id": id})))
    } else {
        (StatusCode::NOT_FOUND, Json(json!({"error": "no such item"})))
    }
}

async fn delete(State(counters): State<Arc<Counters>>, Path(id): Path<u64>) -> StatusCode {
    if counters.items.lock().unwrap().remove(&id) {
        counters.deletes_of_created.fetch_add(1, Ordering::Relaxed);
        StatusCode::NO_CONTENT
    } else {
        StatusCode::NOT_FOUND
    }
}

/// How a raw TCP stub misbehaves.
#[derive(Clone, Copy)]
pub enum Misbehaviour {
    /// Reads the request, answers bytes that are not HTTP.
    Garbage,
    /// Reads the request, then closes the connection without answering.
    HangUp,
    /// Answers the first request in full, then closes the connection 5 ms later, as a server does with
    /// connections that stay idle longer than its keep-alive timeout.
    AnswerThenClose,
    /// Answers 200 with a chunked body that never ends: 64 KB chunks for as long as the client reads, for
    /// at most 30 s or 4 GB.
    EndlessBody,
}

/// A raw TCP server on a free port that misbehaves on every connection; returns its base URL.
pub async fn misbehaving_server(how: Misbehaviour) -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = [0_u8; 4096];
                let _ = socket.read(&mut buffer).await;
                match how {
                    Misbehaviour::Garbage => {
                        let _ = socket.write_all(b"SURPRISE this is not HTTP\r\n\r\n").await;
                    }
                    Misbehaviour::AnswerThenClose => {
                        let _ = socket.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await;
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    }
                    Misbehaviour::HangUp => {}
                    Misbehaviour::EndlessBody => endless_body(&mut socket).await,
                }
            });
        }
    });
    (url, server)
}

async fn endless_body(socket: &mut tokio::net::TcpStream) {
    let head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
    if socket.write_all(head).await.is_err() {
        return;
    }
    let mut chunk = format!("{:x}\r\n", 65_536).into_bytes();
    chunk.extend(std::iter::repeat_n(b'x', 65_536));
    chunk.extend_from_slice(b"\r\n");
    let until = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    for _ in 0..65_536 {
        if tokio::time::Instant::now() > until || socket.write_all(&chunk).await.is_err() {
            return;
        }
    }
}

/// A base URL where nothing listens: the port was free a moment ago.
pub async fn refused_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}
