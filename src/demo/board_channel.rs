//! The demo API's board channel: `GET /boards/{board_id}/live`, upgraded to a WebSocket, is where a board's
//! users see each other's edits. A socket joins its board; a text message `{"op": …, "id": …}` is acknowledged
//! to its sender (`{"type": "ack", "op": …, "id": …}`) and broadcast to the board's *other* sockets
//! (`{"type": "change", "op": …, "id": …, "board": …}`): the round trip a user waits for and the fan-out the
//! others wait for, which the demo scenario measures. Anything else gets `{"type": "error", …}` on its socket.
//!
//! The upgrade is the API's own (RFC 6455's handshake on hyper's upgraded connection), so the channel runs on
//! the same codec as degrade's engine, in the server role, without a second WebSocket stack in axum. Memory is
//! bounded per socket: a 4 KiB read buffer, messages up to [`MAX_MESSAGE`], and a queue of [`QUEUE`] outgoing
//! messages; a socket too slow to take a board's changes misses them rather than growing the server.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

/// Most bytes of one message from a client: a board edit is a few hundred.
pub const MAX_MESSAGE: usize = 16 * 1024;
/// Outgoing messages a socket may have waiting.
pub const QUEUE: usize = 64;
/// Most bytes of a message's `op` and of its `id`, echoed back and broadcast.
const MAX_FIELD: usize = 200;

/// The sockets of every board, by board.
pub struct BoardChannels {
    boards: Mutex<HashMap<i64, Vec<Member>>>,
    /// Boards that exist: 1 to this.
    board_count: i64,
    next_socket: AtomicU64,
}

/// One socket on a board: its number, and the queue its writer sends from.
struct Member {
    socket: u64,
    queue: mpsc::Sender<Message>,
}

impl BoardChannels {
    /// Channels for boards 1 to `board_count`.
    #[must_use]
    pub fn new(board_count: i64) -> Arc<Self> {
        Arc::new(Self { boards: Mutex::default(), board_count, next_socket: AtomicU64::new(1) })
    }

    /// Sockets open on `board` now.
    #[must_use]
    pub fn sockets_on(&self, board: i64) -> usize {
        self.boards.lock().unwrap_or_else(PoisonError::into_inner).get(&board).map_or(0, Vec::len)
    }

    fn join(&self, board: i64, queue: mpsc::Sender<Message>) -> u64 {
        let socket = self.next_socket.fetch_add(1, Ordering::Relaxed);
        let mut boards = self.boards.lock().unwrap_or_else(PoisonError::into_inner);
        boards.entry(board).or_default().push(Member { socket, queue });
        socket
    }

    fn leave(&self, board: i64, socket: u64) {
        let mut boards = self.boards.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(members) = boards.get_mut(&board) {
            members.retain(|m| m.socket != socket);
            if members.is_empty() {
                boards.remove(&board);
            }
        }
    }

    /// Queues `change` for every socket on `board` but `from`. A full queue misses it: the socket is not
    /// keeping up, and the server's memory must not pay for that.
    fn broadcast(&self, board: i64, from: u64, change: &str) {
        let boards = self.boards.lock().unwrap_or_else(PoisonError::into_inner);
        for member in boards.get(&board).into_iter().flatten().filter(|m| m.socket != from) {
            let _ = member.queue.try_send(Message::text(change));
        }
    }
}

/// `GET /boards/{board_id}/live`: checks the upgrade, answers 101, and serves the socket once upgraded.
pub async fn live(State(channels): State<Arc<BoardChannels>>, Path(board): Path<i64>, request: Request) -> Response {
    if !(1..=channels.board_count).contains(&board) {
        return (StatusCode::NOT_FOUND, axum::Json(json!({"error": "no such board"}))).into_response();
    }
    let accept = match accept_key(request.headers()) {
        Ok(accept) => accept,
        Err(why) => return (StatusCode::BAD_REQUEST, axum::Json(json!({"error": why}))).into_response(),
    };
    let upgrade = hyper::upgrade::on(request);
    tokio::spawn(async move {
        if let Ok(upgraded) = upgrade.await {
            let config = WebSocketConfig::default()
                .read_buffer_size(4096)
                .max_message_size(Some(MAX_MESSAGE))
                .max_frame_size(Some(MAX_MESSAGE));
            let socket = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config)).await;
            serve(&channels, board, socket).await;
        }
    });
    let upgrading = [
        (header::UPGRADE, "websocket".to_owned()),
        (header::CONNECTION, "upgrade".to_owned()),
        (header::SEC_WEBSOCKET_ACCEPT, accept),
    ];
    (StatusCode::SWITCHING_PROTOCOLS, upgrading).into_response()
}

/// The `Sec-WebSocket-Accept` for a valid upgrade request (RFC 6455 4.2.1), or what is wrong with it.
fn accept_key(headers: &HeaderMap) -> Result<String, &'static str> {
    let has = |name: header::HeaderName, token: &str| {
        let values = headers.get_all(name).into_iter().filter_map(|v| v.to_str().ok());
        values.flat_map(|v| v.split(',')).any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    if !has(header::UPGRADE, "websocket") || !has(header::CONNECTION, "upgrade") {
        return Err("this route is a WebSocket: send Connection: Upgrade and Upgrade: websocket");
    }
    if headers.get(header::SEC_WEBSOCKET_VERSION).map(http::HeaderValue::as_bytes) != Some(b"13") {
        return Err("Sec-WebSocket-Version must be 13");
    }
    let key = headers.get(header::SEC_WEBSOCKET_KEY).ok_or("no Sec-WebSocket-Key")?;
    Ok(derive_accept_key(key.as_bytes()))
}

/// Serves one socket on `board` until it closes: each text message acknowledged and broadcast, pings
/// answered by the codec as it reads.
async fn serve<S>(channels: &BoardChannels, board: i64, socket: WebSocketStream<S>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, mut stream) = socket.split();
    let (queue, mut outgoing) = mpsc::channel::<Message>(QUEUE);
    let me = channels.join(board, queue.clone());
    let writer = tokio::spawn(async move {
        while let Some(message) = outgoing.recv().await {
            if sink.send(message).await.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });
    while let Some(Ok(message)) = stream.next().await {
        let reply = match message {
            Message::Text(text) => match edit(text.as_str()) {
                Ok(Edit { op, id }) => {
                    channels.broadcast(
                        board,
                        me,
                        &json!({"type": "change", "op": op, "id": id, "board": board}).to_string(),
                    );
                    json!({"type": "ack", "op": op, "id": id})
                }
                Err(why) => json!({"type": "error", "error": why}),
            },
            Message::Binary(_) => json!({"type": "error", "error": "the board channel speaks JSON text messages"}),
            Message::Close(_) => break,
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
        };
        // The sender's own answer waits for room in its queue: a client that does not read slows only itself.
        if queue.send(Message::text(reply.to_string())).await.is_err() {
            break;
        }
    }
    channels.leave(board, me);
    drop(queue);
    let _ = writer.await;
}

/// An edit a client sent: what it does and its correlation id.
#[derive(Debug)]
struct Edit {
    op: String,
    id: Value,
}

/// Reads `{"op": "<text>", "id": <text or number>}`, or says what is wrong.
fn edit(text: &str) -> Result<Edit, &'static str> {
    let message: Value = serde_json::from_str(text).map_err(|_| "a message is a JSON object with op and id")?;
    let op = message.get("op").and_then(Value::as_str).filter(|op| !op.is_empty() && op.len() <= MAX_FIELD);
    let op = op.ok_or("op: a text of 1 to 200 bytes")?.to_owned();
    let id = match message.get("id") {
        Some(Value::String(s)) if !s.is_empty() && s.len() <= MAX_FIELD => Value::String(s.clone()),
        Some(Value::Number(n)) => Value::Number(n.clone()),
        _ => return Err("id: a text of 1 to 200 bytes or a number, the edit's correlation id"),
    };
    Ok(Edit { op, id })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_needs_an_op_and_an_id_of_bounded_size() {
        let ok = edit(r#"{"op": "move", "id": "a1"}"#).unwrap();
        assert_eq!((ok.op.as_str(), ok.id), ("move", Value::from("a1")));
        assert_eq!(edit(r#"{"op": "move", "id": 7}"#).unwrap().id, Value::from(7));
        assert!(edit(r#"{"id": 7}"#).unwrap_err().starts_with("op:"));
        assert!(edit(r#"{"op": "move"}"#).unwrap_err().starts_with("id:"));
        assert!(edit(r#"{"op": "move", "id": null}"#).is_err());
        let long = "x".repeat(MAX_FIELD + 1);
        assert!(edit(&format!(r#"{{"op": "move", "id": "{long}"}}"#)).is_err());
        assert!(edit("not json").is_err());
    }

    #[test]
    fn an_upgrade_needs_its_headers_and_gets_rfc_6455_s_accept_key() {
        let mut headers = HeaderMap::new();
        assert!(accept_key(&headers).is_err());
        headers.insert(header::UPGRADE, "websocket".parse().unwrap());
        headers.insert(header::CONNECTION, "keep-alive, Upgrade".parse().unwrap());
        assert_eq!(accept_key(&headers), Err("Sec-WebSocket-Version must be 13"));
        headers.insert(header::SEC_WEBSOCKET_VERSION, "13".parse().unwrap());
        assert_eq!(accept_key(&headers), Err("no Sec-WebSocket-Key"));
        // RFC 6455 1.3's own example.
        headers.insert(header::SEC_WEBSOCKET_KEY, "dGhlIHNhbXBsZSBub25jZQ==".parse().unwrap());
        assert_eq!(accept_key(&headers).unwrap(), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }
}
