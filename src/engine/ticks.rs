//! The open-model pacer's wake-ups, lent to the sessions waiting for answers.
//!
//! Why: on a virtual machine, a thread that sleeps and is woken costs more CPU than anything else a request
//! takes (ci/bench-engine.sh: 20–30 µs of a 2-core VM's time per wake-up, against ~9 µs for a whole request
//! of the closed model, which never sleeps). At 5,000 arrivals a second the generator used to wake twice per
//! request: at the arrival, to send it, and at the answer, to read it. The pacer wakes for every arrival
//! anyway, so an answer expected before the next one is read then instead: a connection waiting for it asks
//! the kernel not to wake the generator ([`super::timed_tcp`]), parks its reader here, and is looked at on
//! the pacer's next wake-up. Its response time is still the kernel's (the instant the answer reached the
//! machine), so reading it later changes no response time; only a flow's next step goes out up to that much
//! later, as a client's would while it acts on an answer.
//!
//! A reader parks only when the next arrival is near ([`HORIZON`]) and only once per answer: an answer not
//! there by then is slow, and is waited for as usual, so slow answers are not looked at on every arrival.

use std::sync::Mutex;
use std::task::Waker;
use std::time::{Duration, Instant};

/// How far off the next arrival may be for a reader to wait for it: longer would delay a flow's next step
/// by more than a client takes to act on an answer.
pub(super) const HORIZON: Duration = Duration::from_millis(1);

/// The pacer's next wake-up and the readers parked until it.
#[derive(Default)]
pub(super) struct Ticks {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The next arrival; `None` before the first and once the last has gone out.
    next: Option<Instant>,
    parked: Vec<Waker>,
}

impl Ticks {
    /// The pacer woke: wakes every parked reader (its task is queued on the runtime, which is awake); the next
    /// wake-up is at `next` (`None` when there is none, which sends every later reader to the kernel).
    pub(super) fn tick(&self, next: Option<Instant>) {
        let parked = {
            let mut state = self.lock();
            state.next = next;
            std::mem::take(&mut state.parked)
        };
        for waker in parked {
            waker.wake();
        }
    }

    /// Parks `waker` until the pacer's next wake-up when it is within [`HORIZON`]; false when it is not,
    /// and the reader must wait for the kernel to wake it.
    pub(super) fn park(&self, waker: &Waker) -> bool {
        let mut state = self.lock();
        let near = is_near(state.next);
        if near {
            state.parked.push(waker.clone());
        }
        near
    }

    /// Whether the pacer's next wake-up is within [`HORIZON`].
    pub(super) fn near(&self) -> bool {
        is_near(self.lock().next)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn is_near(next: Option<Instant>) -> bool {
    next.is_some_and(|next| next.saturating_duration_since(Instant::now()) <= HORIZON)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    use super::*;

    struct Counter(AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn readers_park_only_when_the_next_arrival_is_near_and_wake_on_it() {
        let ticks = Ticks::default();
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&counter));
        assert!(!ticks.park(&waker), "no arrival planned yet");
        ticks.tick(Some(Instant::now() + Duration::from_secs(1)));
        assert!(!ticks.park(&waker), "the next arrival is a second away");
        ticks.tick(Some(Instant::now() + Duration::from_micros(200)));
        assert!(ticks.near() && ticks.park(&waker) && ticks.park(&waker));
        assert_eq!(counter.0.load(Ordering::Relaxed), 0);
        ticks.tick(None);
        assert_eq!(counter.0.load(Ordering::Relaxed), 2, "both parked readers woke");
        assert!(!ticks.park(&waker), "the last arrival went out");
        ticks.tick(None);
        assert_eq!(counter.0.load(Ordering::Relaxed), 2, "a reader is woken once per park");
    }
}
