//! The request timeout of one session (or one closed-model user): a single timer re-armed lazily.
//!
//! A fresh `tokio::time::timeout` per request inserts an entry into the timer wheel and removes it again
//! microseconds later, which was a measurable share of the generator's CPU per request. Deadlines only move
//! forward within a session, so the timer is left where it is and, when it rings, either the current request
//! is due (it timed out) or it is moved to the current deadline: one re-arm per timeout period, not per
//! request.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use tokio::time::Sleep;

/// A timer for the deadline of the request in flight.
pub(super) struct Alarm {
    timer: Pin<Box<Sleep>>,
    due: Instant,
}

impl Alarm {
    /// An alarm for requests due at `due` or later.
    pub(super) fn new(due: Instant) -> Self {
        Self { timer: Box::pin(tokio::time::sleep_until(due.into())), due }
    }

    /// Sets the deadline of the next request.
    pub(super) fn set(&mut self, due: Instant) {
        self.due = due;
        if self.timer.deadline() > due.into() {
            self.timer.as_mut().reset(due.into());
        }
    }

    /// Ready once the deadline has passed.
    pub(super) fn poll_rang(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            ready!(self.timer.as_mut().poll(cx));
            if self.timer.deadline() >= self.due.into() {
                return Poll::Ready(());
            }
            // It rang for an earlier request's deadline: move it to this one's.
            self.timer.as_mut().reset(self.due.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;
    use std::time::Duration;

    use super::*;

    /// Now on tokio's clock, which these tests pause and advance.
    fn now() -> Instant {
        tokio::time::Instant::now().into_std()
    }

    #[tokio::test(start_paused = true)]
    async fn rings_at_the_latest_deadline_not_an_earlier_one() {
        let start = now();
        let mut alarm = Alarm::new(start + Duration::from_secs(1));
        alarm.set(start + Duration::from_secs(3));
        poll_fn(|cx| alarm.poll_rang(cx)).await;
        assert!((now() - start) >= Duration::from_secs(3), "rang after {:?}", (now() - start));
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_deadline_moves_the_timer_forward() {
        let start = now();
        let mut alarm = Alarm::new(start + Duration::from_secs(30));
        alarm.set(start + Duration::from_secs(2));
        poll_fn(|cx| alarm.poll_rang(cx)).await;
        let rang = now() - start;
        assert!(rang >= Duration::from_secs(2) && rang < Duration::from_secs(3), "rang after {rang:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_rung_alarm_rings_again_for_a_later_deadline() {
        let start = now();
        let mut alarm = Alarm::new(start + Duration::from_secs(1));
        poll_fn(|cx| alarm.poll_rang(cx)).await;
        alarm.set(now() + Duration::from_secs(5));
        poll_fn(|cx| alarm.poll_rang(cx)).await;
        assert!((now() - start) >= Duration::from_secs(6), "rang after {:?}", (now() - start));
    }
}
