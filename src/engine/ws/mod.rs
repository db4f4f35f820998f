//! WebSocket steps of a session ([`crate::scenario::ws_plan`]): the session owns at most one socket
//! ([`WsSession`]), opened by a `connect` step and kept until `close` or the session's end.
//!
//! Measured like HTTP, without coordinated omission: the connect (TCP, TLS, the upgrade to 101) is an endpoint
//! timed from the step's intended start; an await is timed from its send's *intended* start (the previous
//! step's end plus think time) to the matching message's arrival, so a server that stalled still shows its
//! whole stall. A send without an await is counted, not timed. Messages nobody awaited, between steps too, are
//! counted per `[[ws.push]]` class ([`socket`]). Keepalive pings of degrade's own are timed like awaits, on
//! `WS ping` ([`keepalive`]).

mod connect;
mod fanout;
mod keepalive;
mod socket;

pub(super) use fanout::Fanouts;

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

use super::client::Failure;
use super::client::HttpClient;
use super::recorder::Recorder;
use super::recorder::Sample;
use super::step_context::StepContext;
use crate::metrics::ErrorClass;
use crate::scenario::Plan;
use crate::scenario::plan::{ExtractFrom, Step};
use crate::scenario::template::RenderContext;
use crate::scenario::ws_plan::{Fanout, WsAction, WsAwait, WsMatch, WsPayload};
use fanout::Origin;
use socket::{Matched, PushCounter, Socket};

/// What WebSocket steps use of the run.
pub(super) struct WsRun<'a> {
    pub plan: &'a Plan,
    pub client: &'a HttpClient,
    pub recorder: &'a Recorder,
    pub fanouts: &'a Fanouts,
}

/// A session's socket, if open, and why it broke if the server ended it between steps.
pub(super) struct WsSession {
    socket: Option<Socket>,
    /// What ended the socket while the session was between steps: the next WebSocket step fails with it.
    broken: Option<Failure>,
    /// The endpoint of the connect that opened the socket: a break no later step reports is counted there.
    connected: Option<usize>,
    /// The session's number: its own copies of a correlated send are not fan-out.
    session: u64,
    measured: bool,
}

/// How a WebSocket step ended.
pub(super) struct WsDone {
    /// When the session had its outcome: the next step is intended from here.
    pub in_hand: Instant,
    /// Whether it failed (the session then stops, as after a failed request).
    pub failed: bool,
}

impl WsSession {
    /// Session `session`'s, with no socket yet.
    pub(super) fn new(session: u64, measured: bool) -> Self {
        Self { socket: None, broken: None, connected: None, session, measured }
    }

    /// Where this session counts what nobody awaited.
    fn pushes<'a>(&self, shared: &WsRun<'a>) -> PushCounter<'a> {
        let settings = shared.plan.ws.as_ref().expect("a plan with WebSocket steps has [ws] settings");
        let (recorder, fanouts, measured, session) = (&shared.recorder, &shared.fanouts, self.measured, self.session);
        PushCounter { recorder, settings, measured, fanouts, session }
    }

    /// Whether the session holds an open socket.
    pub(super) fn is_open(&self) -> bool {
        self.socket.is_some()
    }

    /// Whether [`Self::end`] has something to do: a socket to close, or a break to count.
    pub(super) fn has_end(&self) -> bool {
        self.socket.is_some() || self.broken.is_some()
    }

    /// Waits until `until`, reading the open socket meanwhile so pushes are counted and pings answered.
    pub(super) async fn wait_until(&mut self, shared: &WsRun<'_>, until: Instant) {
        let pushes = self.pushes(shared);
        let Some(socket) = self.socket.as_mut() else { return };
        if let Err(failure) = socket::read_until(socket, None, until, &pushes).await {
            self.socket = None;
            self.broken = Some(failure);
        }
    }

    /// Runs one WebSocket step intended at `intended`.
    pub(super) async fn run(
        &mut self,
        shared: &WsRun<'_>,
        step: &Step,
        action: &WsAction,
        intended: Instant,
        cx: &mut StepContext<'_, '_>,
    ) -> WsDone {
        let pushes = self.pushes(shared);
        match action {
            WsAction::Connect { subprotocols } => self.connect(shared, step, subprotocols, intended, cx).await,
            WsAction::Send { payload, wait, fanout } => {
                let message = render(payload, &mut cx.render()).map(|m| {
                    let correlated = fanout.as_ref().and_then(|f| correlation(f, m.as_ref()?, intended, self));
                    Outgoing { message: m, correlated }
                });
                self.send(shared, step, message, wait.as_ref(), intended, cx, &pushes).await
            }
            WsAction::Await(wait) => {
                let nothing = Ok(Outgoing { message: None, correlated: None });
                self.send(shared, step, nothing, Some(wait), intended, cx, &pushes).await
            }
            WsAction::Close => {
                if let Some(socket) = self.socket.take() {
                    socket::close(socket, Instant::now() + shared.plan.target.timeout, &pushes).await;
                }
                WsDone { in_hand: Instant::now(), failed: false }
            }
        }
    }

    async fn connect(
        &mut self,
        shared: &WsRun<'_>,
        step: &Step,
        subprotocols: &[String],
        intended: Instant,
        cx: &mut StepContext<'_, '_>,
    ) -> WsDone {
        let dispatched = Instant::now();
        shared.recorder.dispatching(step.endpoint, cx.measured);
        let settings = shared.plan.ws.as_ref().expect("a plan with WebSocket steps has [ws] settings");
        let opened = connect::open(shared, step, subprotocols, socket::config(settings), &mut cx.render()).await;
        let (end, failure) = match opened {
            Ok((socket, arrived)) => {
                self.socket = Some(socket);
                self.broken = None;
                self.connected = Some(step.endpoint);
                (arrived, None)
            }
            Err((failure, end)) => (end, Some(failure)),
        };
        record(shared, step.endpoint, cx.measured, [intended, dispatched, dispatched, end], failure)
    }

    /// Sends `message` (if any), then awaits `wait` (if any): an await is timed from `intended`, a send alone
    /// is counted.
    #[allow(clippy::too_many_arguments, reason = "one step's parts, passed through once")]
    async fn send(
        &mut self,
        shared: &WsRun<'_>,
        step: &Step,
        message: Result<Outgoing, Failure>,
        wait: Option<&WsAwait>,
        intended: Instant,
        cx: &mut StepContext<'_, '_>,
        pushes: &PushCounter<'_>,
    ) -> WsDone {
        let dispatched = Instant::now();
        if wait.is_some() {
            shared.recorder.dispatching(step.endpoint, cx.measured);
        }
        // The await's templated values rendered for this send: it waits for the answer to this message.
        let matcher = wait.map(|w| w.render(&mut cx.render()));
        let expecting = wait.zip(matcher.as_deref()).map(|(w, matcher)| (matcher, w.timeout));
        let outcome = self.exchange(shared, step, message, expecting, pushes).await;
        let (end, failure) = match outcome.and_then(|matched| extract(step, matched, cx.variables)) {
            Ok(end) => (end, None),
            Err((failure, end)) => (end, Some(failure)),
        };
        if wait.is_none() {
            // Counted, not timed: without an answer there is no latency to claim.
            let now = Instant::now();
            let failed = failure.is_some();
            let failure = failure.map(|f| (f.class, f.message));
            let sample = Sample {
                endpoint: step.endpoint,
                intended: now,
                dispatched: None,
                sent: None,
                end: now,
                failure,
                measured: cx.measured,
            };
            shared.recorder.record(sample);
            return WsDone { in_hand: now, failed };
        }
        record(shared, step.endpoint, cx.measured, [intended, dispatched, dispatched, end], failure)
    }

    /// The send and the await; the matched message, or the failure and when it was decided.
    async fn exchange(
        &mut self,
        shared: &WsRun<'_>,
        step: &Step,
        message: Result<Outgoing, Failure>,
        wait: Option<(&WsMatch, Option<Duration>)>,
        pushes: &PushCounter<'_>,
    ) -> Result<Option<Matched>, (Failure, Instant)> {
        let failed = |f| (f, Instant::now());
        let Outgoing { message, correlated } = message.map_err(failed)?;
        let Some(socket) = &mut self.socket else {
            let why = self.broken.take().unwrap_or_else(|| {
                Failure::new(ErrorClass::Reset, format!("{}: no socket is open", shared.plan.endpoints[step.endpoint]))
            });
            return Err(failed(why));
        };
        let sent = Instant::now();
        let timeout = wait.and_then(|(_, timeout)| timeout).unwrap_or(shared.plan.target.timeout);
        let deadline = sent + timeout;
        let result = async {
            if let Some(message) = message {
                tokio::time::timeout_at(deadline.into(), socket::send(socket, message))
                    .await
                    .unwrap_or_else(|_| Err(Failure::new(ErrorClass::Timeout, "the send did not go out in time")))?;
            }
            if let Some((id, mut origin)) = correlated {
                origin.sent = sent;
                shared.fanouts.sent(id, origin, shared.plan.target.timeout);
            }
            let Some((matcher, _)) = wait else { return Ok(None) };
            match socket::read_until(socket, Some(matcher), deadline, pushes).await? {
                Some(matched) => Ok(Some(matched)),
                None => Err(Failure::new(
                    ErrorClass::Timeout,
                    format!("no matching message within {}", humantime::format_duration(timeout)),
                )),
            }
        }
        .await;
        result.map_err(|failure| {
            // A timed-out await keeps its socket (the answer may still come, as a push); anything else ends it.
            if failure.class != ErrorClass::Timeout {
                self.socket = None;
            }
            let end = if failure.class == ErrorClass::Timeout { deadline } else { Instant::now() };
            (failure, end)
        })
    }

    /// Closes the socket at the session's end, giving the server a moment to answer the close.
    pub(super) async fn end(mut self, shared: &WsRun<'_>) {
        if let (Some(failure), Some(endpoint)) = (self.broken.take(), self.connected) {
            // The server ended the socket after the session's last WebSocket step: counted on its connect, so
            // no unexpected close goes unseen.
            let now = Instant::now();
            let failure = Some((failure.class, failure.message));
            let measured = self.measured;
            let sample = Sample { endpoint, intended: now, dispatched: None, sent: None, end: now, failure, measured };
            shared.recorder.record(sample);
        }
        if let Some(socket) = self.socket.take() {
            let pushes = self.pushes(shared);
            let until = Instant::now() + shared.plan.target.timeout.min(std::time::Duration::from_secs(1));
            socket::close(socket, until, &pushes).await;
        }
    }
}

/// A message to send, and the correlation id it carries for fan-out.
struct Outgoing {
    message: Option<Message>,
    correlated: Option<(String, Origin)>,
}

/// The correlation id of a message sent with `fanout`, and its origin (its send time set when it goes out).
fn correlation(fanout: &Fanout, message: &Message, intended: Instant, session: &WsSession) -> Option<(String, Origin)> {
    let Message::Text(text) = message else { return None };
    let json: Value = serde_json::from_str(text.as_str()).ok()?;
    let origin = Origin {
        endpoint: fanout.endpoint,
        intended,
        sent: intended,
        session: session.session,
        measured: session.measured,
    };
    Some((fanout.id(&json)?, origin))
}

/// Records a timed step: `times` are intended, dispatched, sent and end.
fn record(
    shared: &WsRun<'_>,
    endpoint: usize,
    measured: bool,
    times: [Instant; 4],
    failure: Option<Failure>,
) -> WsDone {
    let [intended, dispatched, sent, end] = times;
    let failed = failure.is_some();
    let failure = failure.map(|f| (f.class, f.message));
    shared.recorder.record(Sample {
        endpoint,
        intended,
        dispatched: Some(dispatched),
        sent: Some(sent),
        end,
        failure,
        measured,
    });
    WsDone { in_hand: Instant::now().max(end), failed }
}

/// The message a send renders now.
fn render(payload: &WsPayload, cx: &mut RenderContext<'_>) -> Result<Option<Message>, Failure> {
    use crate::scenario::ws_plan::Encoding;
    let binary = |text: String, encoding: Encoding| {
        encoding
            .decode(&text)
            .map(|bytes| Some(Message::Binary(bytes.into())))
            .map_err(|e| Failure::new(ErrorClass::Protocol, format!("the rendered message: {e}")))
    };
    match payload {
        WsPayload::Text(t) => Ok(Some(Message::text(t.render(cx)))),
        WsPayload::Json(t) => Ok(Some(Message::text(t.render(cx).to_string()))),
        WsPayload::Hex(t) => binary(t.render(cx), Encoding::Hex),
        WsPayload::Base64(t) => binary(t.render(cx), Encoding::Base64),
    }
}

/// Takes the step's extractions from the matched message; when it arrived.
fn extract(
    step: &Step,
    matched: Option<Matched>,
    variables: &mut [Option<Value>],
) -> Result<Instant, (Failure, Instant)> {
    let Some(Matched { json, arrived }) = matched else { return Ok(Instant::now()) };
    if step.extract.is_empty() {
        return Ok(arrived);
    }
    let fail = |message: String| (Failure::new(ErrorClass::Extraction, message), arrived);
    let json = json.ok_or_else(|| fail("the message is not JSON".to_owned()))?;
    for extraction in &step.extract {
        if let ExtractFrom::Json(path, text) = &extraction.from {
            let value = path.query(&json).first().cloned().ok_or_else(|| fail(format!("{text} selects nothing")))?;
            variables[extraction.variable] = Some(value);
        }
    }
    Ok(arrived)
}
