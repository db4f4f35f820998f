//! How busy the generator was: the time spent polling sessions and dispatching arrivals, as a share of one
//! core. A generator that is busy most of the time delays its own timestamps, so its numbers describe it,
//! not the build.
//!
//! Why not the process's CPU time: that also counts the runtime's own wake-ups and the loopback echo
//! probe; the polls of sessions and the dispatch of arrivals are the work that delays a request's
//! timestamps when the generator falls behind. (The figure was chosen when the pacer still spun on
//! `yield_now` before each arrival, which only polls could measure out.)

use std::future::{Future, poll_fn};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Total busy time, added to from every task.
#[derive(Debug, Default)]
pub(super) struct BusyClock {
    nanos: AtomicU64,
}

impl BusyClock {
    pub(super) fn add(&self, busy: Duration) {
        self.nanos.fetch_add(u64::try_from(busy.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    pub(super) fn total(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }
}

/// Runs `future`, adding the time each poll takes to `clock`.
pub(super) async fn timed<F: Future>(clock: &BusyClock, future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    poll_fn(|cx| {
        let started = Instant::now();
        let polled = future.as_mut().poll(cx);
        clock.add(started.elapsed());
        polled
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_polling_counts_not_waiting() {
        let clock = BusyClock::default();
        timed(&clock, async {
            let spin = Instant::now();
            while spin.elapsed() < Duration::from_millis(20) {
                std::hint::spin_loop();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        })
        .await;
        let busy = clock.total();
        assert!(busy >= Duration::from_millis(20) && busy < Duration::from_millis(50), "{busy:?}");
    }
}
