//! A session that replays a tape: the arrival's recorded request (or recorded session) sent as it was,
//! timed as flow steps are — from when it should have started, so a stalled target still counts its whole
//! wait — and judged by its status: `[[tape.expect]]` for its route, or else the recorded status class.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::alarm::Alarm;
use super::failure::unexpected_status;
use super::recorder::Sample;
use super::session::{Ended, RunShared, SessionEnd, Slot, ended, exchange, wait_until_due};
use super::tape_feed::TapeFeed;
use crate::model::LoadModel;
use crate::scenario::tape_source::accepts;

/// Replays the next arrival's work from `tape`, intended to start at `start`.
pub(super) async fn run_replay(
    shared: &RunShared,
    tape: &TapeFeed,
    start: Instant,
    measured: bool,
    alarm: &mut Alarm,
    mut first_slot: Option<Slot<'_>>,
) -> SessionEnd {
    let plan = &shared.plan;
    let Some(replay) = tape.next().await else { return SessionEnd::OutOfData };
    let expect = &plan.tape.as_ref().expect("a tape feed replays a tape").expect;
    shared.recorder.session_started(measured);
    // `due` is when each request was sent in the recording, relative to the session's start; a request
    // goes out then, or as soon as the one before it is answered, whichever is later (as the browser did).
    let (mut due, mut intended) = (start, start);
    for (index, request) in replay.requests.into_iter().enumerate() {
        due += request.pause;
        intended = intended.max(due);
        if intended >= shared.deadline || shared.stopping.load(Ordering::Relaxed) {
            break;
        }
        wait_until_due(intended, index > 0 || plan.load.model == LoadModel::Closed).await;
        let slot = first_slot.take();
        let dispatched = slot.as_ref().map_or_else(Instant::now, |s| s.waiting_since);
        shared.recorder.dispatching(request.endpoint, measured);
        let (sent, outcome) =
            exchange(shared, (request.outgoing, None), (dispatched, plan.target.timeout), alarm, slot).await;
        let Ended { end, in_hand } = ended(sent, &outcome, plan.target.timeout);
        let rule = expect.get(request.endpoint).and_then(Option::as_deref);
        let failure = match outcome {
            Ok(answer) if accepts(rule, request.recorded, answer.status) => None,
            Ok(answer) => {
                let mut failure = unexpected_status(&answer);
                failure.message = match (rule, request.recorded) {
                    (Some(_), _) => format!("{}, not a status [[tape.expect]] accepts", failure.message),
                    (None, Some(recorded)) => format!("{}, where {recorded} was recorded", failure.message),
                    (None, None) => failure.message,
                };
                Some(failure)
            }
            Err(failure) => Some(failure),
        };
        let failed = failure.is_some();
        shared.recorder.record(Sample {
            endpoint: request.endpoint,
            intended,
            dispatched: Some(dispatched),
            sent,
            end,
            failure: failure.map(|f| (f.class, f.message)),
            measured,
        });
        if failed {
            // The session's later requests usually build on this one, as a flow's steps do.
            break;
        }
        intended = in_hand;
    }
    SessionEnd::Next(intended)
}
