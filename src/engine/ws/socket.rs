//! A session's WebSocket: the upgrade over the engine's own connection ([`super::super::client`]), sends, and
//! reads that sort every message: the one an await is waiting for ends it, every other one is counted on its
//! `[[ws.push]]` class, never dropped unseen. Server pings are answered by the codec while it reads; with
//! `[ws] ping_every`, the socket's own pings are sent and their pongs timed while it reads ([`Keepalive`]).
//!
//! Memory per socket is bounded whatever the server sends: a 4 KiB read buffer, messages and frames capped at
//! `[ws] max_message` (64 KiB by default; a longer one is a `protocol` error and ends the socket), and every
//! message dropped as soon as it is sorted.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::super::client::{Failure, Stream};
use super::super::failure::classify_io;
use super::super::recorder::{Recorder, Sample};
use super::fanout::Fanouts;
use super::keepalive::Keepalive;
use crate::metrics::ErrorClass;
use crate::scenario::ws_plan::{WsMatch, WsSettings};

/// Bytes the codec reads at once: small, since a socket mostly idles and thousands may be open.
const READ_BUFFER: usize = 4 * 1024;

/// An open socket, and its keepalive pings if `[ws] ping_every` asks for them.
pub(super) struct Socket {
    ws: WebSocketStream<Box<dyn Stream>>,
    keepalive: Option<Keepalive>,
}

impl Socket {
    /// `ws`, opened at `opened`, with the run's keepalive; a pong may take up to `timeout`.
    pub(super) fn new(ws: WebSocketStream<Box<dyn Stream>>, settings: &WsSettings, timeout: Duration) -> Self {
        let keepalive = settings.keepalive.map(|k| Keepalive::new(k, timeout, Instant::now()));
        Self { ws, keepalive }
    }
}

/// The codec's settings for a run: small buffers, messages capped.
pub(super) fn config(settings: &WsSettings) -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        // Each message is written out at once: nothing is batched, so nothing waits in a buffer.
        .write_buffer_size(0)
        .max_write_buffer_size(settings.max_message.saturating_mul(2).max(READ_BUFFER))
        .max_message_size(Some(settings.max_message))
        .max_frame_size(Some(settings.max_message))
}

/// Where messages nobody awaits are counted.
pub(super) struct PushCounter<'a> {
    pub recorder: &'a Recorder,
    pub settings: &'a WsSettings,
    /// Whether the session counts in the results.
    pub measured: bool,
    /// Recent correlated sends, and this session's number, for fan-out latency.
    pub fanouts: &'a Fanouts,
    pub session: u64,
}

impl PushCounter<'_> {
    /// Counts a message on the first class it matches, else on `WS push: (other)`: counted, not timed. One
    /// carrying the correlation id of another session's send also times that send's fan-out.
    fn count(&self, message: &[u8], json: Option<&Value>, arrived: Instant) {
        let class = self.settings.pushes.iter().find(|p| p.matcher.matches(message, json));
        if let Some(fanout) = class.and_then(|c| c.fanout.as_ref())
            && let Some(origin) =
                json.and_then(|json| fanout.id(json)).and_then(|id| self.fanouts.seen(&id, self.session))
        {
            // Counted in flight for the moment, as every timed sample is.
            self.recorder.dispatching(origin.endpoint, origin.measured);
            self.recorder.record(Sample {
                endpoint: origin.endpoint,
                intended: origin.intended,
                dispatched: Some(origin.sent),
                sent: Some(origin.sent),
                end: arrived,
                failure: None,
                measured: origin.measured,
            });
        }
        let endpoint = class.map_or(self.settings.other_pushes, |p| p.endpoint);
        let now = Instant::now();
        self.recorder.record(Sample {
            endpoint,
            intended: now,
            dispatched: None,
            sent: None,
            end: now,
            failure: None,
            measured: self.measured,
        });
    }

    fn needs_json(&self, wanted: Option<&WsMatch>) -> bool {
        wanted.is_some_and(WsMatch::needs_json)
            || self.settings.pushes.iter().any(|p| p.matcher.needs_json() || p.fanout.is_some())
    }
}

/// A message an await matched, and when it was read.
pub(super) struct Matched {
    pub json: Option<Value>,
    pub arrived: Instant,
}

/// Reads until a message matching `wanted` arrives (`Some`), or until `until` (`None`, also when `wanted` is
/// `None`: the wait between steps), counting every other message on its push class.
pub(super) async fn read_until(
    socket: &mut Socket,
    wanted: Option<&WsMatch>,
    until: Instant,
    pushes: &PushCounter<'_>,
) -> Result<Option<Matched>, Failure> {
    let needs_json = pushes.needs_json(wanted);
    if let Some(keepalive) = &mut socket.keepalive {
        keepalive.resume(Instant::now());
    }
    loop {
        let wake = socket.keepalive.as_ref().map_or(until, |k| k.wake().min(until));
        let Ok(next) = tokio::time::timeout_at(wake.into(), socket.ws.next()).await else {
            if Instant::now() >= until {
                return Ok(None);
            }
            keep_alive(socket, until, pushes).await?;
            continue;
        };
        let arrived = Instant::now();
        let message = match next {
            None => return Err(closed_without_frame()),
            Some(Err(e)) => return Err(read_failure(e)),
            Some(Ok(message)) => message,
        };
        let bytes: &[u8] = match &message {
            Message::Text(text) => text.as_bytes(),
            Message::Binary(bytes) => bytes,
            Message::Close(frame) => return Err(closed_by_server(frame.as_ref())),
            Message::Pong(payload) => {
                if let Some(keepalive) = &mut socket.keepalive {
                    keepalive.pong(payload, arrived, pushes.recorder, pushes.measured);
                }
                continue;
            }
            // Pings are answered by the codec; raw frames carry no message.
            Message::Ping(_) | Message::Frame(_) => continue,
        };
        let json = if needs_json { serde_json::from_slice::<Value>(bytes).ok() } else { None };
        if let Some(wanted) = wanted
            && wanted.matches(bytes, json.as_ref())
        {
            // Read as JSON for the step's extractions, if matching did not already.
            let json = json.or_else(|| serde_json::from_slice(bytes).ok());
            return Ok(Some(Matched { json, arrived }));
        }
        pushes.count(bytes, json.as_ref(), arrived);
    }
}

/// The keepalive's turn: a ping timed out, or one to send (a send that cannot go out by `until` waits for the
/// next read).
async fn keep_alive(socket: &mut Socket, until: Instant, pushes: &PushCounter<'_>) -> Result<(), Failure> {
    let Some(keepalive) = &mut socket.keepalive else { return Ok(()) };
    let Some(ping) = keepalive.due(Instant::now(), pushes.recorder, pushes.measured) else { return Ok(()) };
    match tokio::time::timeout_at(until.into(), socket.ws.send(ping)).await {
        Ok(sent) => sent.map_err(read_failure),
        Err(_) => Ok(()),
    }
}

/// Sends one message.
pub(super) async fn send(socket: &mut Socket, message: Message) -> Result<(), Failure> {
    socket.ws.send(message).await.map_err(read_failure)
}

/// Closes with 1000, waiting at most until `until` for the server's close; what it sends meanwhile is counted.
pub(super) async fn close(mut socket: Socket, until: Instant, pushes: &PushCounter<'_>) {
    // No ping after the close frame: the socket is ending, and a ping's round trip would wait on it.
    socket.keepalive = None;
    let normal = CloseFrame { code: 1000.into(), reason: "".into() };
    if socket.ws.send(Message::Close(Some(normal))).await.is_err() {
        return;
    }
    // The server's close frame ends the read as an error; anything before it is a push.
    let _ = read_until(&mut socket, None, until, pushes).await;
}

fn closed_without_frame() -> Failure {
    Failure::new(ErrorClass::Reset, "the connection closed without a close frame (1006)")
}

/// The server closed the socket while the session still used it.
fn closed_by_server(frame: Option<&CloseFrame>) -> Failure {
    let message = match frame {
        Some(f) if f.reason.is_empty() => format!("the server closed the socket with {}", u16::from(f.code)),
        Some(f) => format!(
            "the server closed the socket with {}: {}",
            u16::from(f.code),
            crate::outside_text::printable(&f.reason.chars().take(120).collect::<String>())
        ),
        None => "the server closed the socket without a code (1005)".to_owned(),
    };
    Failure::new(ErrorClass::Reset, message)
}

/// A failed read or write, in the engine's classes.
pub(super) fn read_failure(error: WsError) -> Failure {
    match error {
        WsError::Io(e) => classify_io(&e, "WebSocket"),
        // The connection ended under the codec without a close frame: the server went away (1006), which is an
        // unexpected close like any other, not a malformed frame.
        WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => closed_without_frame(),
        WsError::ConnectionClosed | WsError::AlreadyClosed => {
            Failure::new(ErrorClass::Reset, "the socket was already closed")
        }
        WsError::Capacity(e) => Failure::new(ErrorClass::Protocol, format!("{e} ([ws] max_message)")),
        other => Failure::new(ErrorClass::Protocol, format!("WebSocket protocol error: {other}")),
    }
}
