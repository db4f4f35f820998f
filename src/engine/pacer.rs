//! What feeds the request loop: planned arrivals (open model) or a number of looping users (closed model).
//!
//! Open-model arrivals are planned by [`Schedule`] (a segment of a split night walks the whole schedule and
//! keeps its own arrivals; a closed-model segment runs the users it owns). The pacer waits for each arrival on
//! a [`PreciseTimer`]: tokio's own timer rounds up to whole milliseconds.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinSet;

use super::alarm::Alarm;
use super::cpu::timed;
use super::precise_timer::PreciseTimer;
use super::schedule::Schedule;
use super::session::{RunShared, SessionEnd, Slot, record_dropped, run_flow};
use crate::scenario::StageShape;

/// Why the pacer stopped before its plan ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Interruption {
    /// Ctrl-C or a shutdown.
    Stopped,
    /// A `when_exhausted = "stop"` feeder ran out.
    OutOfData,
}

/// Waits until `at`, precisely; returns `false` if `stop` was set first.
async fn wait_until(at: Instant, stop: &mut watch::Receiver<bool>, timer: &mut PreciseTimer) -> bool {
    loop {
        if *stop.borrow() {
            return false;
        }
        tokio::select! {
            () = timer.sleep_until(at) => return true,
            changed = stop.changed() => if changed.is_err() {
                // Whoever could stop the run is gone, so nothing will: wait for the arrival only.
                timer.sleep_until(at).await;
                return true;
            },
        }
    }
}

/// Starts sessions at the planned arrival times; returns the sessions still running and why it stopped
/// early, if it did. Each wake-up for an arrival is also when parked readers look for their answers
/// ([`super::ticks`]). A stage's end is a deadline, whatever its rate: arrivals the generator has not sent
/// by then are never sent (the run then falls short of its planned rate and is invalid), so a rate past what
/// this machine can plan cannot make a night last longer than its schedule says.
pub(super) async fn open(
    shared: Arc<RunShared>,
    start: Instant,
    mut stop: watch::Receiver<bool>,
) -> (JoinSet<SessionEnd>, Option<Interruption>) {
    let plan = &shared.plan;
    let mut timer = PreciseTimer::new();
    let mut sessions = JoinSet::new();
    let mut arrivals = Schedule::new(&plan.load, plan.seed, plan.segment).peekable();
    // The stage whose end passed before its arrivals were all sent: the rest of them are skipped.
    let mut late_stage = None;
    let mut interruption = None;
    while let Some(arrival) = arrivals.next() {
        if late_stage == Some(arrival.stage) {
            continue;
        }
        let at = start + arrival.at;
        if !wait_until(at, &mut stop, &mut timer).await {
            interruption = Some(Interruption::Stopped);
            break;
        }
        let dispatching = Instant::now();
        if dispatching >= start + arrival.stage_end {
            // Not a warning on the terminal: the run's validity (its rate fell short) and a capacity step's own
            // words say it where the night's figures are read, with which run and step it was.
            tracing::debug!("the generator fell behind its plan past the stage's end; its other arrivals are not sent");
            late_stage = Some(arrival.stage);
            continue;
        }
        if ended_out_of_data(&mut sessions) {
            interruption = Some(Interruption::OutOfData);
            break;
        }
        if sessions.len() >= plan.load.max_in_flight {
            record_dropped(&shared, arrival.number, at, arrival.measure);
        } else {
            sessions.spawn(open_session(Arc::clone(&shared), arrival.number, at, arrival.measure));
        }
        if let Some(ticks) = &shared.ticks {
            ticks.tick(arrivals.peek().map(|next| start + next.at));
        }
        shared.busy.add(dispatching.elapsed());
    }
    if let Some(ticks) = &shared.ticks {
        // No wake-up to wait for any more: readers go back to the kernel's.
        ticks.tick(None);
    }
    (sessions, interruption)
}

/// Collects the sessions that ended; true when one found its `stop` feeder out of data.
fn ended_out_of_data(sessions: &mut JoinSet<SessionEnd>) -> bool {
    while let Some(ended) = sessions.try_join_next() {
        if matches!(ended, Ok(SessionEnd::OutOfData)) {
            return true;
        }
    }
    false
}

/// One open-model session. Under `[target] max_connections` it first waits for its connection slot as a
/// small task, and only then allocates the running session (about 3 KB: the largest state of its request
/// loop). A stall of the target or of the generator's machine leaves thousands of overdue arrivals waiting
/// at once, and their memory stayed with the process after the backlog cleared: a 150 ms pause of the
/// generator at 20,000 arrivals/s added 35 MB to its peak RSS, so longer runs, which meet more stalls, ended
/// bigger than short ones.
async fn open_session(shared: Arc<RunShared>, number: u64, at: Instant, measured: bool) -> SessionEnd {
    let waiting_since = Instant::now();
    let first_slot = match &shared.connections {
        Some(slots) => {
            Some(Slot { permit: slots.acquire().await.expect("the semaphore is never closed"), waiting_since })
        }
        None => None,
    };
    let mut alarm = Alarm::new(at + shared.plan.target.timeout);
    let session = timed(&shared.busy, run_session(&shared, number, at, measured, &mut alarm, first_slot));
    Box::pin(session).await
}

/// Runs each stage's number of users, each starting one session after another; returns the user tasks
/// and why it stopped early, if it did.
pub(super) async fn closed(
    shared: Arc<RunShared>,
    start: Instant,
    mut stop: watch::Receiver<bool>,
) -> (JoinSet<SessionEnd>, Option<Interruption>) {
    let active = Arc::new(AtomicU32::new(0));
    let measured = Arc::new(AtomicBool::new(true));
    let mut users = JoinSet::new();
    let mut timer = PreciseTimer::new();
    let mut spawned = 0_u32;
    let mut stage_end = start;
    for stage in &shared.plan.load.stages {
        let StageShape::Users(count) = stage.shape else { continue };
        active.store(count, Ordering::Relaxed);
        measured.store(stage.measure, Ordering::Relaxed);
        // A segment of a split night runs the users whose global index it owns (`Segment::owns`).
        for index in (spawned..count).filter(|&j| shared.plan.segment.is_none_or(|s| s.owns(u64::from(j)))) {
            let (shared, active, measured) = (Arc::clone(&shared), Arc::clone(&active), Arc::clone(&measured));
            users.spawn(async move { timed(&shared.busy, user(&shared, index, &active, &measured)).await });
        }
        spawned = spawned.max(count);
        stage_end += stage.duration;
        let out_of_data = async {
            while let Some(ended) = users.join_next().await {
                if matches!(ended, Ok(SessionEnd::OutOfData)) {
                    return;
                }
            }
            std::future::pending::<()>().await;
        };
        let interruption = tokio::select! {
            completed = wait_until(stage_end, &mut stop, &mut timer) => (!completed).then_some(Interruption::Stopped),
            () = out_of_data => Some(Interruption::OutOfData),
        };
        if interruption.is_some() {
            return (users, interruption);
        }
    }
    (users, None)
}

/// One closed-model user: sessions back to back (with the flow's think times) while its index is within
/// the current stage's user count.
async fn user(shared: &RunShared, index: u32, active: &AtomicU32, measured: &AtomicBool) -> SessionEnd {
    let mut next = Instant::now();
    let mut alarm = Alarm::new(next + shared.plan.target.timeout);
    let mut count = 0_u64;
    while next < shared.deadline && !shared.stopping.load(Ordering::Relaxed) {
        if index >= active.load(Ordering::Relaxed) {
            // Parked until a later stage needs this user again.
            tokio::time::sleep(Duration::from_millis(50)).await;
            next = Instant::now();
            continue;
        }
        let number = (u64::from(index) << 40) | count;
        match run_session(shared, number, next, measured.load(Ordering::Relaxed), &mut alarm, None).await {
            SessionEnd::Next(at) => next = at.max(Instant::now()),
            SessionEnd::OutOfData => return SessionEnd::OutOfData,
        }
        count += 1;
    }
    SessionEnd::Next(next)
}

/// Runs session `number`: the tape's next requests when the plan replays one, else one of its flows.
async fn run_session(
    shared: &RunShared,
    number: u64,
    start: Instant,
    measured: bool,
    alarm: &mut Alarm,
    first_slot: Option<Slot<'_>>,
) -> SessionEnd {
    match &shared.tape {
        Some(tape) => super::replay::run_replay(shared, tape, start, measured, alarm, first_slot).await,
        None => run_flow(shared, number, start, measured, alarm, first_slot).await,
    }
}
