//! The tape's requests, read ahead of the sessions by a thread of their own.
//!
//! The thread streams the tape file (pass after pass), encodes each request once into the bytes sent, and
//! hands them over in batches through a bounded channel: the tape is never held in memory, and a session
//! takes its next request without touching the file. Orders: as recorded; shuffled through a seeded window
//! of [`SHUFFLE_WINDOW`] requests; or by recorded session (consecutive requests with the same `s=`).
//! `preserve = "mix"` skips evenly through a tape longer than the run, so the run replays all of its
//! hours, not the first.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::Mutex;
use tokio::sync::mpsc::{Receiver, Sender, channel};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::http1::Outgoing;
use crate::scenario::template::DrawTallies;
use crate::scenario::template::RenderContext;
use crate::scenario::{Plan, TapeOrder, TapeReplay};
use crate::tape::TapeReader;

/// Requests shuffled together by `order = "shuffle"`.
pub const SHUFFLE_WINDOW: usize = 65_536;

/// Arrivals handed over at once, and batches read ahead: ~4,000 requests, a fifth of a second at 20,000/s.
/// Small batches keep each of the reader's bursts short (~0.1 ms): on a machine with one free core, the
/// reader and the sessions share it, and a long burst would delay arrivals (measured: schedule-lag p99 0.35–0.98
/// ms at 20,000/s with batches of 256).
const BATCH: usize = 64;
const BATCHES_AHEAD: usize = 64;

/// The longest recorded pause replayed between two requests of a session.
const LONGEST_PAUSE: Duration = Duration::from_secs(30);

/// The most requests one recorded session replays as one arrival: a log whose every line names the same
/// session (`"anonymous"`) must not become one endless session held in memory.
const LONGEST_SESSION: usize = 1000;

/// One arrival's work: a request, or a recorded session's requests in order.
pub(super) struct Replay {
    pub requests: Vec<ReplayRequest>,
}

/// One request, ready to send.
pub(super) struct ReplayRequest {
    /// Index into the plan's endpoints (its route).
    pub endpoint: usize,
    pub outgoing: Outgoing,
    /// What the recorded server answered.
    pub recorded: Option<u16>,
    /// The recorded pause before it, after the session's previous request (zero for the first).
    pub pause: Duration,
}

/// Hands out the tape's requests during a run.
pub(super) struct TapeFeed {
    state: Mutex<(std::vec::IntoIter<Replay>, Receiver<Vec<Replay>>)>,
}

impl TapeFeed {
    /// Starts reading `plan`'s tape; requests go to `host_header`, below the base URL's `prefix`.
    pub(super) fn start(plan: &std::sync::Arc<Plan>, host_header: &str, prefix: &str) -> Self {
        let (sender, batches) = channel(BATCHES_AHEAD);
        let plan = std::sync::Arc::clone(plan);
        let (host_header, prefix) = (host_header.to_owned(), prefix.to_owned());
        let spawned = std::thread::Builder::new()
            .name("degrade-tape".to_owned())
            .spawn(move || Reader::new(&plan, &host_header, &prefix, sender).run());
        if let Err(e) = spawned {
            tracing::error!("cannot start the tape reader: {e}");
        }
        Self { state: Mutex::new((Vec::new().into_iter(), batches)) }
    }

    /// The next arrival's work; `None` once the tape cannot be read any more (the run then ends early).
    /// Waits (without holding a thread) only when the reader has fallen behind, which shows as schedule lag.
    pub(super) async fn next(&self) -> Option<Replay> {
        let mut state = self.state.lock().await;
        loop {
            if let Some(replay) = state.0.next() {
                return Some(replay);
            }
            let batch = state.1.recv().await?;
            state.0 = batch.into_iter();
        }
    }

    /// The next arrival's work if it is ready now, for an arrival that is dropped rather than sent.
    pub(super) fn try_next(&self) -> Option<Replay> {
        let mut state = self.state.try_lock().ok()?;
        if let Some(replay) = state.0.next() {
            return Some(replay);
        }
        let batch = state.1.try_recv().ok()?;
        state.0 = batch.into_iter();
        state.0.next()
    }
}

/// A recorded session being gathered: its id, its last request's time, its requests so far.
#[derive(Default)]
struct SessionDraft {
    id: Option<String>,
    last_time: Option<DateTime<Utc>>,
    requests: Vec<ReplayRequest>,
}

/// The reading thread's state.
struct Reader<'a> {
    plan: &'a Plan,
    tape: &'a TapeReplay,
    host_header: &'a str,
    prefix: &'a str,
    sender: Sender<Vec<Replay>>,
    batch: Vec<Replay>,
    shuffled: Vec<Replay>,
    rng: SmallRng,
    /// Take one arrival's work of every `stride` (`preserve = "mix"`).
    stride: u64,
}

impl<'a> Reader<'a> {
    fn new(plan: &'a Plan, host_header: &'a str, prefix: &'a str, sender: Sender<Vec<Replay>>) -> Self {
        let tape = plan.tape.as_ref().expect("a tape feed starts for a tape");
        let units = if tape.order == TapeOrder::Session { tape.survey.sessions } else { tape.survey.requests };
        let arrivals: f64 = plan.load.stages.iter().map(crate::scenario::Stage::planned_arrivals).sum();
        let stride =
            if tape.preserve_mix && arrivals >= 1.0 { (units as f64 / arrivals).floor().max(1.0) as u64 } else { 1 };
        Self {
            plan,
            tape,
            host_header,
            prefix,
            sender,
            batch: Vec::with_capacity(BATCH),
            shuffled: Vec::new(),
            rng: SmallRng::seed_from_u64(plan.seed ^ 0x7a9e_7a9e),
            stride,
        }
    }

    /// Reads pass after pass until the run no longer listens or the tape cannot be read.
    fn run(mut self) {
        loop {
            match self.pass() {
                Ok(true) => {}
                Ok(false) => return,
                Err(message) => {
                    tracing::error!("the tape cannot be replayed further: {message}");
                    return;
                }
            }
        }
    }

    /// One pass through the tape; `Ok(false)` when the run stopped listening.
    fn pass(&mut self) -> Result<bool, String> {
        let mut reader = TapeReader::open(&self.tape.file).map_err(|e| e.to_string())?;
        let seq = std::sync::atomic::AtomicU64::new(0);
        let grouped = self.tape.order == TapeOrder::Session;
        let mut session = SessionDraft::default();
        let (mut unit, mut sent_any) = (0_u64, false);
        while let Some(next) = reader.next_request() {
            let (_, request) = next.map_err(|e| e.to_string())?;
            let ends_session =
                request.session.is_none() || request.session != session.id || session.requests.len() >= LONGEST_SESSION;
            if grouped && !session.requests.is_empty() && ends_session {
                let whole = std::mem::take(&mut session.requests);
                if !self.take(&mut unit, whole, &mut sent_any) {
                    return Ok(false);
                }
            }
            let pause = match (session.requests.is_empty(), session.last_time, request.time) {
                (false, Some(a), Some(b)) => (b - a).to_std().unwrap_or_default().min(LONGEST_PAUSE),
                _ => Duration::ZERO,
            };
            let mut cx = RenderContext {
                rows: &[],
                variables: &[],
                rng: &mut self.rng,
                seq: &seq,
                tallies: &DrawTallies::default(),
            };
            let outgoing = super::request::replayed(self.plan, &request, self.host_header, self.prefix, &mut cx)
                .map_err(|e| format!("{}: {e}", request.target))?;
            let routed = self.tape.router.route(request.method.as_str(), &request.target);
            let replay =
                ReplayRequest { endpoint: self.tape.endpoint(&routed.key), outgoing, recorded: request.status, pause };
            if grouped {
                session.requests.push(replay);
                session.id = request.session;
                session.last_time = request.time;
            } else if !self.take(&mut unit, vec![replay], &mut sent_any) {
                return Ok(false);
            }
        }
        if !session.requests.is_empty() && !self.take(&mut unit, session.requests, &mut sent_any) {
            return Ok(false);
        }
        // A tape that fits the shuffle window is shuffled whole, pass by pass: every request once per pass.
        // A longer one keeps its window full from one pass into the next, so no pass starts with a wait.
        if self.tape.survey.requests <= SHUFFLE_WINDOW as u64 {
            while !self.shuffled.is_empty() {
                let pick = self.rng.random_range(0..self.shuffled.len());
                let replay = self.shuffled.swap_remove(pick);
                if !self.push(replay) {
                    return Ok(false);
                }
            }
        }
        if !sent_any {
            return Err("a whole pass found no request to replay".to_owned());
        }
        Ok(true)
    }

    /// Takes the `unit`-th arrival's work if the stride keeps it; `false` when the run stopped listening.
    fn take(&mut self, unit: &mut u64, requests: Vec<ReplayRequest>, sent_any: &mut bool) -> bool {
        let kept = unit.is_multiple_of(self.stride);
        *unit += 1;
        if !kept {
            return true;
        }
        *sent_any = true;
        let replay = Replay { requests };
        if self.tape.order != TapeOrder::Shuffle {
            return self.push(replay);
        }
        if self.shuffled.len() < SHUFFLE_WINDOW {
            self.shuffled.push(replay);
            return true;
        }
        let pick = self.rng.random_range(0..self.shuffled.len());
        let out = std::mem::replace(&mut self.shuffled[pick], replay);
        self.push(out)
    }

    /// Queues one arrival's work, sending the batch when full; `false` when the run stopped listening.
    fn push(&mut self, replay: Replay) -> bool {
        self.batch.push(replay);
        if self.batch.len() < BATCH {
            return true;
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        self.sender.blocking_send(batch).is_ok()
    }
}
