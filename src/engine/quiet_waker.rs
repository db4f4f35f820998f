//! Wakers for a request and the connection that carries it, polled together by one task: their wake-ups
//! of each other do not reschedule the task, and each is polled only when something woke it.
//!
//! hyper's connection API hands a request from the sender to the connection over a channel, and the
//! response back over another. Driven from the same task with the task's own waker, every hand-off wakes
//! the task while it is still being polled, the runtime polls it once more for nothing, and every poll
//! polls the connection whether or not it has anything to do: measured here, 2.3 task polls and about four
//! connection polls per request. With these wakers, a wake-up during the poll only asks for another round,
//! one from outside (the socket became readable) wakes the task as usual, and each round polls only the
//! side that was woken.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// Rounds of one poll at most, so a connection that is always ready cannot starve the other tasks.
const MAX_ROUNDS: usize = 16;

/// Which side a wake-up is for, as bits of [`WakeState::woken`].
const CONNECTION: u8 = 1;
const REQUEST: u8 = 2;

/// The wakers of one connection, kept with it (it moves between tasks through the pool).
pub(super) struct QuietWakers {
    shared: Arc<WakeState>,
    connection: Waker,
    request: Waker,
}

struct WakeState {
    /// The waker of the task that polled last.
    task: Mutex<Option<Waker>>,
    polling: AtomicBool,
    /// Sides woken since their last poll.
    woken: AtomicU8,
}

/// One side's waker.
struct Side {
    shared: Arc<WakeState>,
    bit: u8,
}

/// What one round may poll: the sides that were woken, each with its own context. A side offered but not
/// taken stays woken for the next round (or the next request on this connection).
pub(super) struct Round<'a> {
    wakers: &'a QuietWakers,
    woken: u8,
}

impl Round<'_> {
    /// The connection's context, if it was woken.
    pub(super) fn connection(&mut self) -> Option<Context<'_>> {
        self.take(CONNECTION).then(|| Context::from_waker(&self.wakers.connection))
    }

    /// The request's context, if it was woken.
    pub(super) fn request(&mut self) -> Option<Context<'_>> {
        self.take(REQUEST).then(|| Context::from_waker(&self.wakers.request))
    }

    /// The request's context whether or not it was woken: for when the connection ended, which resolves
    /// the request without waking it.
    pub(super) fn request_anyway(&mut self) -> Context<'_> {
        self.take(REQUEST);
        Context::from_waker(&self.wakers.request)
    }

    /// Whether `side` was woken before this round or since it began, clearing both: the poll that follows
    /// sees whatever the wake-up announced. (Left set, a wake-up from earlier in the same round, such as the
    /// request being handed to the connection, cost one more poll of the connection for nothing.)
    fn take(&mut self, side: u8) -> bool {
        let since = self.wakers.shared.woken.fetch_and(!side, Ordering::SeqCst);
        let woken = (self.woken | since) & side != 0;
        self.woken &= !side;
        woken
    }
}

impl QuietWakers {
    pub(super) fn new() -> Self {
        // A new connection has never been polled: it counts as woken.
        let woken = AtomicU8::new(CONNECTION);
        let shared = Arc::new(WakeState { task: Mutex::new(None), polling: AtomicBool::new(false), woken });
        let side = |bit| Waker::from(Arc::new(Side { shared: Arc::clone(&shared), bit }));
        Self { connection: side(CONNECTION), request: side(REQUEST), shared }
    }

    /// Calls `poll` in rounds until it is ready or nothing woke either side during the last round. The first
    /// round always offers the request side (a new request has not been polled yet); later rounds offer
    /// only the sides that were woken.
    pub(super) fn poll<T>(&self, cx: &mut Context<'_>, mut poll: impl FnMut(&mut Round<'_>) -> Poll<T>) -> Poll<T> {
        let shared = &*self.shared;
        {
            let mut task = shared.task.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if !task.as_ref().is_some_and(|t| t.will_wake(cx.waker())) {
                *task = Some(cx.waker().clone());
            }
        }
        let mut first = REQUEST;
        for _ in 0..MAX_ROUNDS {
            // Sequentially consistent with `Side::wake_by_ref`: either the waker sees `polling` cleared and
            // wakes the task, or this loop sees its bit and goes round again. Never neither.
            shared.polling.store(true, Ordering::SeqCst);
            let mut round = Round { wakers: self, woken: first | shared.woken.swap(0, Ordering::SeqCst) };
            first = 0;
            let polled = poll(&mut round);
            if round.woken != 0 {
                shared.woken.fetch_or(round.woken, Ordering::SeqCst);
            }
            shared.polling.store(false, Ordering::SeqCst);
            if polled.is_ready() || shared.woken.load(Ordering::SeqCst) == 0 {
                return polled;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl Wake for Side {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.shared.woken.fetch_or(self.bit, Ordering::SeqCst);
        if !self.shared.polling.load(Ordering::SeqCst)
            && let Some(task) = &*self.shared.task.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
        {
            task.wake_by_ref();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use super::*;

    /// Counts the polls of the task it runs in.
    async fn counting_polls<F: Future>(polls: &AtomicUsize, future: F) -> F::Output {
        let mut future = std::pin::pin!(future);
        poll_fn(|cx| {
            polls.fetch_add(1, Ordering::Relaxed);
            future.as_mut().poll(cx)
        })
        .await
    }

    /// Which sides a round offered: (connection, request).
    fn offered(round: &mut Round<'_>) -> (Option<Waker>, Option<Waker>) {
        let connection = round.connection().map(|cx| cx.waker().clone());
        (connection, round.request().map(|cx| cx.waker().clone()))
    }

    #[tokio::test]
    async fn hand_offs_between_the_sides_are_rounds_of_one_task_poll() {
        let wakers = QuietWakers::new();
        let polls = AtomicUsize::new(0);
        let mut rounds = Vec::new();
        let mut sides: Option<(Waker, Waker)> = None;
        counting_polls(
            &polls,
            poll_fn(|cx| {
                wakers.poll(cx, |round| {
                    let (connection, request) = offered(round);
                    rounds.push((connection.is_some(), request.is_some()));
                    if let (Some(c), Some(r)) = (connection, request) {
                        sides = Some((c, r));
                    }
                    let (connection, request) = sides.clone().expect("a new connection offers both sides at first");
                    match rounds.len() {
                        // The request goes to the connection, whose answer comes back a round later.
                        1 => connection.wake(),
                        2 => request.wake(),
                        _ => return Poll::Ready(()),
                    }
                    Poll::Pending
                })
            }),
        )
        .await;
        assert_eq!(rounds, [(true, true), (true, false), (false, true)]);
        assert_eq!(polls.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn a_side_offered_but_not_polled_stays_woken() {
        let wakers = QuietWakers::new();
        let mut rounds = Vec::new();
        poll_fn(|cx| {
            wakers.poll(cx, |round| {
                // The first round polls only the request, although the new connection is woken too.
                let connection = if rounds.is_empty() { false } else { round.connection().is_some() };
                rounds.push(connection);
                if rounds.len() == 1 { Poll::Pending } else { Poll::Ready(()) }
            })
        })
        .await;
        assert_eq!(rounds, [false, true]);
    }

    #[tokio::test]
    async fn a_side_woken_and_then_polled_in_the_same_round_needs_no_round_of_its_own() {
        let wakers = QuietWakers::new();
        let connection = wakers.connection.clone();
        let mut rounds = Vec::new();
        let polled = poll_fn(|cx| {
            Poll::Ready(wakers.poll(cx, |round| {
                // The request hands itself to the connection, which is polled next in this round and takes it.
                let request = round.request().is_some();
                connection.wake_by_ref();
                rounds.push((request, round.connection().is_some()));
                Poll::<()>::Pending
            }))
        })
        .await;
        assert!(polled.is_pending());
        assert_eq!(rounds, [(true, true)]);
    }

    #[tokio::test]
    async fn a_wake_up_from_elsewhere_wakes_the_task() {
        let wakers = QuietWakers::new();
        let (send, mut receive) = tokio::sync::oneshot::channel::<()>();
        let sender = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            send.send(()).unwrap();
        });
        let received = tokio::time::timeout(
            Duration::from_secs(5),
            poll_fn(|cx| {
                wakers.poll(cx, |round| match round.request() {
                    Some(mut cx) => std::pin::Pin::new(&mut receive).poll(&mut cx),
                    None => Poll::Pending,
                })
            }),
        )
        .await;
        assert!(matches!(received, Ok(Ok(()))), "the task was never woken");
        sender.await.unwrap();
    }

    #[tokio::test]
    async fn a_side_that_is_always_woken_lets_other_tasks_run() {
        let wakers = QuietWakers::new();
        let polls = AtomicUsize::new(0);
        let mut rounds = 0;
        counting_polls(
            &polls,
            poll_fn(|cx| {
                wakers.poll(cx, |round| {
                    rounds += 1;
                    if let Some(cx) = round.connection() {
                        cx.waker().wake_by_ref();
                    }
                    if rounds > MAX_ROUNDS { Poll::Ready(()) } else { Poll::Pending }
                })
            }),
        )
        .await;
        assert_eq!(polls.load(Ordering::Relaxed), 2);
    }
}
