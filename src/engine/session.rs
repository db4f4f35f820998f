//! The one request loop: a session runs its flow's steps in order, timing each from when it *should* have
//! started, and reports every request to the recorder. The open and closed models differ only in who starts
//! sessions and when ([`super::pacer`]).
//!
//! Timing (ARCHITECTURE.md, "coordinated-omission-correct"): the first step is intended at the session's scheduled
//! start; each later step at the previous step's end plus its think time. Response time = end − intended, so
//! requests the generator could not send on time (because the target stalled) still count their whole wait: no
//! coordinated omission.

use std::future::poll_fn;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use serde_json::Value;
use tokio::sync::SemaphorePermit;

use super::alarm::Alarm;
use super::client::{Failure, HttpClient};
use super::http1::{Answer, Outgoing};
use super::recorder::{Recorder, Sample};
use super::request::StepRequest;
use super::step_context::StepContext;
use crate::metrics::ErrorClass;
use crate::model::LoadModel;
use crate::scenario::feeder::{Cursor, Drawn};
use crate::scenario::plan::{Flow, Protocol};
use crate::scenario::row_cap::RowLease;
use crate::scenario::template::RenderContext;
use crate::scenario::{Plan, Think};

/// How long a closed-model user whose rows were all held waits before its next session: `validate` refuses
/// more users than rows × cap, so this is a moment's wait for a lease given back, never a loop.
const NO_FREE_ROW_PAUSE: Duration = Duration::from_millis(50);

/// What every session of a run shares.
pub(super) struct RunShared {
    pub plan: Arc<Plan>,
    pub client: HttpClient,
    /// The open-model pacer's wake-ups, lent to readers of answers ([`super::ticks`]).
    pub ticks: Option<Arc<super::ticks::Ticks>>,
    pub recorder: Recorder,
    pub cursors: Vec<Cursor>,
    /// Per flow, the feeders its templates read (target headers' feeders included).
    pub flow_feeders: Vec<Vec<usize>>,
    /// Per flow and step, how its requests are encoded.
    pub requests: Vec<Vec<StepRequest>>,
    /// The tape's requests, when the plan replays one instead of flows.
    pub tape: Option<super::tape_feed::TapeFeed>,
    pub seq: AtomicU64,
    /// What the plan's skewed template draws drew.
    pub draw_tallies: crate::scenario::template::DrawTallies,
    /// Connection slots when `[target] max_connections` is set: requests beyond it queue in the generator,
    /// and that wait counts in their response time but not their service time.
    pub connections: Option<tokio::sync::Semaphore>,
    /// Time spent polling sessions and dispatching arrivals: the generator's own load.
    pub busy: super::cpu::BusyClock,
    /// No step starts at or after this instant.
    pub deadline: Instant,
    /// Set on Ctrl-C: sessions start no further steps.
    pub stopping: AtomicBool,
    /// Recent WebSocket sends with a correlation id, for fan-out latency.
    pub fanouts: super::ws::Fanouts,
}

/// How a session ended.
pub(super) enum SessionEnd {
    /// Ran (or stopped after a failure); the next session of this user is intended at this instant.
    Next(Instant),
    /// A `stop` feeder ran out: no more sessions may start.
    OutOfData,
}

/// The seeded generator of session `number`: the same seed replays the same choices.
pub(super) fn session_rng(seed: u64, number: u64) -> SmallRng {
    // SplitMix64 spreads consecutive numbers over unrelated seeds.
    let mut z = seed ^ number.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    SmallRng::seed_from_u64(z ^ (z >> 31))
}

/// Picks a flow by weight.
pub(super) fn choose_flow(flows: &[Flow], rng: &mut SmallRng) -> usize {
    let total: u32 = flows.iter().map(|f| f.weight).sum();
    let mut pick = rng.random_range(0..total);
    for (index, flow) in flows.iter().enumerate() {
        if pick < flow.weight {
            return index;
        }
        pick -= flow.weight;
    }
    flows.len() - 1
}

/// Records an open-model arrival that was never sent because too many sessions were in flight.
pub(super) fn record_dropped(shared: &RunShared, number: u64, at: Instant, measured: bool) {
    let endpoint = if let Some(tape) = &shared.tape {
        // The arrival's tape request is the one not sent (if the reader has it ready; the pacer never waits).
        tape.try_next().and_then(|replay| replay.requests.first().map(|r| r.endpoint)).unwrap_or(0)
    } else {
        let mut rng = session_rng(shared.plan.seed, number);
        shared.plan.flows[choose_flow(&shared.plan.flows, &mut rng)].steps[0].endpoint
    };
    let message = format!("{} sessions were already in flight ([load] max_in_flight)", shared.plan.load.max_in_flight);
    record_unsent(shared, endpoint, at, measured, message);
}

/// Records an arrival the generator could not send, for `why`: a dropped request, never the target's doing.
fn record_unsent(shared: &RunShared, endpoint: usize, at: Instant, measured: bool, why: String) {
    shared.recorder.record(Sample {
        endpoint,
        intended: at,
        dispatched: None,
        sent: None,
        end: at,
        failure: Some((ErrorClass::Dropped, why)),
        measured,
    });
}

/// A connection slot (`[target] max_connections`) taken for a session's first request before the session
/// started, and since when it was waited for: that wait is queueing on connections, not schedule lag.
pub(super) struct Slot<'a> {
    pub permit: SemaphorePermit<'a>,
    pub waiting_since: Instant,
}

/// Runs session `number` of a plan of flows, intended to start at `start`, timing its requests out with
/// `alarm`; its first request uses `first_slot` when one was taken for it.
pub(super) async fn run_flow(
    shared: &RunShared,
    number: u64,
    start: Instant,
    measured: bool,
    alarm: &mut Alarm,
    mut first_slot: Option<Slot<'_>>,
) -> SessionEnd {
    let plan = &shared.plan;
    let mut rng = session_rng(plan.seed, number);
    let flow_index = choose_flow(&plan.flows, &mut rng);
    let drawn = match draw_rows(shared, flow_index, &mut rng) {
        Ok(drawn) => drawn,
        Err(NoRow::OutOfData) => return SessionEnd::OutOfData,
        Err(NoRow::EveryRowHeld(message)) => {
            record_unsent(shared, plan.flows[flow_index].steps[0].endpoint, start, measured, message);
            return SessionEnd::Next(Instant::now() + NO_FREE_ROW_PAUSE);
        }
    };
    shared.recorder.session_started(measured);
    let rows = &drawn.rows;
    let mut variables = session_variables(shared, flow_index, rows, &mut rng);
    let mut socket = super::ws::WsSession::new(number, measured);
    let mut intended = start;
    let mut ended_by_failure = false;
    for (step_index, step) in plan.flows[flow_index].steps.iter().enumerate() {
        if intended >= shared.deadline || shared.stopping.load(Ordering::Relaxed) {
            break;
        }
        // An open socket is read while the session waits: pushes counted, pings answered. The WebSocket
        // futures are boxed, so an HTTP session's task stays the size of its HTTP request.
        if socket.is_open() {
            Box::pin(socket.wait_until(&ws_run(shared), intended)).await;
        } else {
            wait_until_due(intended, step_index > 0 || plan.load.model == LoadModel::Closed).await;
        }
        // The slot taken for the session's first request serves its first step, whatever it is.
        let slot = first_slot.take();
        let mut cx = StepContext {
            rows,
            variables: &mut variables,
            rng: &mut rng,
            seq: &shared.seq,
            tallies: &shared.draw_tallies,
            measured,
        };
        let done = if let Some(action) = &step.ws {
            let done = Box::pin(socket.run(&ws_run(shared), step, action, intended, &mut cx)).await;
            (done.in_hand, done.failed)
        } else {
            http_step(shared, (flow_index, step_index), intended, alarm, slot, &mut cx).await
        };
        let (in_hand, failed) = done;
        intended = in_hand + think(step.think, &mut rng);
        if failed {
            // Later steps usually depend on this one (an id it should have returned): a real user would stop,
            // and read the error first: a closed-model user's next session waits the failed step's think time
            // (`intended`), so a target failing fast is not hammered in a tight loop. An open socket is closed
            // at once rather than held through it.
            ended_by_failure = true;
            break;
        }
    }
    // A socket still open after the last step stays open through that step's think time, read and pinged as
    // between steps: the user is still connected while thinking (never past the run's end).
    if socket.is_open() && !ended_by_failure && !shared.stopping.load(Ordering::Relaxed) {
        Box::pin(socket.wait_until(&ws_run(shared), intended.min(shared.deadline))).await;
    }
    if socket.has_end() {
        Box::pin(socket.end(&ws_run(shared))).await;
    }
    SessionEnd::Next(intended)
}

/// Why a session could not draw its rows.
enum NoRow {
    /// A `stop` feeder ran out: no more sessions may start.
    OutOfData,
    /// Every row of a feeder was held to its cap; the message says which.
    EveryRowHeld(String),
}

/// A session's rows, by feeder index (`None` for feeders its flow does not use), and the leases that hold them
/// under `max_sessions_per_row` until the session ends, however it ends.
struct SessionRows<'s> {
    rows: Vec<Option<&'s [Value]>>,
    _held: Vec<RowLease<'s>>,
}

/// The rows of the feeders flow `flow_index` uses.
fn draw_rows<'s>(shared: &'s RunShared, flow_index: usize, rng: &mut SmallRng) -> Result<SessionRows<'s>, NoRow> {
    let plan = &shared.plan;
    let mut rows = vec![None; plan.feeders.len()];
    let mut held = Vec::new();
    for &f in &shared.flow_feeders[flow_index] {
        match shared.cursors[f].draw(&plan.feeders[f], rng) {
            Drawn::Row(row, lease) => {
                rows[f] = Some(row);
                held.extend(lease);
            }
            Drawn::OutOfData => return Err(NoRow::OutOfData),
            Drawn::EveryRowHeld(cap) => {
                return Err(NoRow::EveryRowHeld(format!(
                    "every row of feeder `{}` was held by {} already ([[data]] max_sessions_per_row)",
                    plan.feeders[f].name,
                    crate::model::counted(cap as usize, "session", "sessions")
                )));
            }
        }
    }
    Ok(SessionRows { rows, _held: held })
}

/// The flow's session variables (`session_vars`), rendered once as the session starts, by variable index.
fn session_variables(
    shared: &RunShared,
    flow_index: usize,
    rows: &[Option<&[Value]>],
    rng: &mut SmallRng,
) -> Vec<Option<Value>> {
    let plan = &shared.plan;
    let mut variables: Vec<Option<Value>> = vec![None; plan.variables.len()];
    for (index, template) in &plan.flows[flow_index].session_vars {
        let cx =
            &mut RenderContext { rows, variables: &variables, rng, seq: &shared.seq, tallies: &shared.draw_tallies };
        let value = template.render_value(cx);
        variables[*index] = Some(value);
    }
    variables
}

/// Sends one HTTP step's request and records it; when the answer was in hand, and whether it failed.
async fn http_step(
    shared: &RunShared,
    (flow_index, step_index): (usize, usize),
    intended: Instant,
    alarm: &mut Alarm,
    slot: Option<Slot<'_>>,
    cx: &mut StepContext<'_, '_>,
) -> (Instant, bool) {
    let measured = cx.measured;
    let plan = &shared.plan;
    let step = &plan.flows[flow_index].steps[step_index];
    let client = &shared.client;
    // Rendered now, not before the wait: a `now` template means the time the request goes out.
    let request = shared.requests[flow_index][step_index].build(
        plan,
        step,
        client.host_header(),
        client.prefix(),
        &mut cx.render(),
    );
    let dispatched = slot.as_ref().map_or_else(Instant::now, |s| s.waiting_since);
    // A gRPC call's deadline, when shorter than the target's timeout, is the longest it is waited for.
    let deadline = step.grpc.as_ref().and_then(|call| call.deadline);
    let timeout = deadline.map_or(plan.target.timeout, |d| d.min(plan.target.timeout));
    shared.recorder.dispatching(step.endpoint, measured);
    let first_message = step.grpc.as_ref().and_then(|call| call.first_message);
    if let Some(first) = first_message {
        shared.recorder.dispatching(first, measured);
    }
    let (sent, outcome) = match request {
        Ok(request) => exchange(shared, (request, step.protocol), (dispatched, timeout), alarm, slot).await,
        Err(failure) => (None, Err(failure)),
    };
    let Ended { end, in_hand } = ended(sent, &outcome, timeout);
    let outcome = outcome.map_err(|failure| super::grpc::past_deadline(step, plan.target.timeout, failure));
    let first_data = outcome.as_ref().ok().and_then(|answer| answer.first_data);
    let checked = outcome.and_then(|response| super::response_check::check_response(step, &response, cx.variables));
    let failed = checked.is_err();
    let failure = checked.err().map(|f| (f.class, f.message));
    if let Some(first) = first_message {
        // A server stream's first message, from the same intended start; a call that failed before any message
        // came fails here too.
        let (end, failure) = match first_data {
            Some(at) => (at.max(sent.unwrap_or(at)).min(end), None),
            None => (end, failure.clone()),
        };
        let sample = Sample { endpoint: first, intended, dispatched: Some(dispatched), sent, end, failure, measured };
        shared.recorder.record(sample);
    }
    shared.recorder.record(Sample {
        endpoint: step.endpoint,
        intended,
        dispatched: Some(dispatched),
        sent,
        end,
        failure,
        measured,
    });
    (in_hand, failed)
}

/// What WebSocket steps use of the run.
fn ws_run(shared: &RunShared) -> super::ws::WsRun<'_> {
    let RunShared { plan, client, recorder, fanouts, .. } = shared;
    super::ws::WsRun { plan, client, recorder, fanouts }
}

/// When a request ended, two ways.
pub(super) struct Ended {
    /// For its response time: when its answer reached the machine, by the kernel's stamp where there is one
    /// (the generator may have read it later: its own delay, not the target's), else when it was read; a
    /// timed-out request at exactly its timeout, however late the timer woke.
    pub end: Instant,
    /// When the generator had the answer in hand (or gave up): what follows in the session is intended from
    /// here.
    pub in_hand: Instant,
}

/// How far a kernel stamp may lie outside its exchange and still be believed: converting it from the wall
/// clock to the monotonic one is off by microseconds.
const STAMP_SLACK: Duration = Duration::from_millis(1);

/// When the request sent at `sent` (if it was) with `outcome` ended.
pub(super) fn ended(sent: Option<Instant>, outcome: &Result<Answer, Failure>, timeout: Duration) -> Ended {
    let read = Instant::now();
    let Some(sent) = sent else { return Ended { end: read, in_hand: read } };
    let in_hand = read.min(sent + timeout);
    // A stamp is converted from the wall clock: one that lies outside the exchange by more than the
    // conversion's microseconds was taken across a step of the wall clock, and is not believed.
    let believable = |arrived: &Instant| *arrived + STAMP_SLACK >= sent && *arrived <= read + STAMP_SLACK;
    let arrived = outcome.as_ref().ok().and_then(|answer| answer.arrived).filter(believable);
    let end = arrived.map_or(in_hand, |arrived| arrived.max(sent).min(in_hand));
    Ended { end, in_hand }
}

/// Waits until a request is due. One due already and sent right on an answer (`on_answer`: a later step, or
/// any step of the closed model) first lets the other sessions with answers in take them, so the requests
/// that follow go out together. Sent one by one between reads, each would find the server idle and wake it
/// (measured against nginx: 0.13 wake-ups of its worker per request, 0.04 this way, and 13 % more requests
/// per second from the same core). An open model's first request is sent at its arrival time, as it is.
pub(super) async fn wait_until_due(intended: Instant, on_answer: bool) {
    if intended > Instant::now() {
        tokio::time::sleep_until(intended.into()).await;
    } else if on_answer {
        tokio::task::yield_now().await;
    }
}

fn think(think: Option<Think>, rng: &mut SmallRng) -> Duration {
    match think {
        None => Duration::ZERO,
        Some(Think::Constant(d)) => d,
        Some(Think::Uniform(low, high)) => rng.random_range(low..=high),
        Some(Think::LogNormal { median, sigma }) => LogNormal::new(median.as_secs_f64().ln(), sigma)
            .map_or(median, |d| Duration::from_secs_f64(d.sample(rng).min(3600.0))),
    }
}

/// Waits for a connection slot (when `[target] max_connections` limits them and `held` is not one), then
/// sends the request over its step's protocol (the target's when `None`), giving up at `timeout`. Returns
/// when it went on the wire, if it did.
pub(super) async fn exchange(
    shared: &RunShared,
    (request, protocol): (Outgoing, Option<Protocol>),
    (dispatched, timeout): (Instant, Duration),
    alarm: &mut Alarm,
    held: Option<Slot<'_>>,
) -> (Option<Instant>, Result<Answer, Failure>) {
    let (_permit, sent) = match (held, &shared.connections) {
        (Some(slot), _) => (Some(slot.permit), Instant::now()),
        (None, Some(slots)) => (Some(slots.acquire().await.expect("the semaphore is never closed")), Instant::now()),
        (None, None) => (None, dispatched),
    };
    alarm.set(sent + timeout);
    let protocol = protocol.unwrap_or(shared.plan.target.protocol);
    let mut sending = std::pin::pin!(shared.client.send_over(&request, protocol));
    let result = poll_fn(|cx| match sending.as_mut().poll(cx) {
        Poll::Ready(result) => Poll::Ready(result),
        Poll::Pending => alarm.poll_rang(cx).map(|()| {
            let message = format!("no complete response within {}", humantime::format_duration(timeout));
            Err(Failure::new(ErrorClass::Timeout, message))
        }),
    })
    .await;
    // An HTTP/2 request held back for a free stream went out when its stream opened.
    let sent = result.as_ref().ok().and_then(|answer| answer.stream_opened).map_or(sent, |opened| opened.max(sent));
    (Some(sent), result)
}
