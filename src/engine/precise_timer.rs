//! Waiting on the runtime for an instant to within tens of microseconds, without spinning and without a
//! thread of its own: the open-model pacer's clock, and the demo API's slowdown.
//!
//! tokio's timer rounds up to whole milliseconds, and a millisecond of schedule lag at every arrival would be
//! the generator's own noise. The pacer used to approach each arrival by spinning on `yield_now` for its last
//! 2 ms, which at 5,000 arrivals/s never stopped (a whole core, ~200 µs of CPU per request); then on a
//! thread of its own that slept until each arrival and handed the session to the runtime, which cost three
//! context switches per request (~40 µs of CPU on a 2-core VM, where one sleep and wake-up alone costs 8 µs).
//! On Linux a timerfd wakes the runtime's own event loop at the instant, so an arrival costs one wake-up
//! of the thread that sends its request. Elsewhere, or if the kernel refuses a timerfd, tokio's timer is
//! used and arrivals are up to a millisecond late (the run's schedule lag says so).

use std::time::Instant;

/// A one-shot timer that can be set again and again.
pub(crate) struct PreciseTimer {
    #[cfg(target_os = "linux")]
    timerfd: Option<tokio::io::unix::AsyncFd<rustix::fd::OwnedFd>>,
}

impl PreciseTimer {
    /// A timer on this runtime's event loop; must be called inside the runtime.
    pub(crate) fn new() -> Self {
        #[cfg(target_os = "linux")]
        {
            use rustix::time::{TimerfdClockId, TimerfdFlags, timerfd_create};
            let timerfd = timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC)
                .map_err(std::io::Error::from)
                .and_then(|fd| super::reactor::register(fd, tokio::io::Interest::READABLE));
            Self { timerfd: timerfd.ok() }
        }
        #[cfg(not(target_os = "linux"))]
        Self {}
    }

    /// Waits until `at`; never returns before it. Cancel-safe: dropping the wait leaves the timer to be set
    /// again by the next one.
    pub(crate) async fn sleep_until(&mut self, at: Instant) {
        loop {
            let now = Instant::now();
            if now >= at {
                return;
            }
            #[cfg(target_os = "linux")]
            if let Some(timerfd) = &self.timerfd
                && wait_timerfd(timerfd, at - now).await.is_ok()
            {
                continue;
            }
            tokio::time::sleep_until(at.into()).await;
        }
    }
}

/// Sets the timerfd to ring once after `after` and waits for it.
#[cfg(target_os = "linux")]
async fn wait_timerfd(
    timerfd: &tokio::io::unix::AsyncFd<rustix::fd::OwnedFd>,
    after: std::time::Duration,
) -> std::io::Result<()> {
    use rustix::time::{Itimerspec, TimerfdTimerFlags, Timespec, timerfd_settime};
    let zero = Timespec { tv_sec: 0, tv_nsec: 0 };
    let it_value = Timespec::try_from(after).map_err(|_| std::io::ErrorKind::InvalidInput)?;
    // A zero value would disarm the timer instead of ringing at once.
    let it_value = if it_value == zero { Timespec { tv_sec: 0, tv_nsec: 1 } } else { it_value };
    timerfd_settime(timerfd.get_ref(), TimerfdTimerFlags::empty(), &Itimerspec { it_interval: zero, it_value })?;
    loop {
        let mut ready = timerfd.readable().await?;
        // Reading the expiry count clears it; nothing to read means the readiness was stale (a timer set
        // again before it rang): wait on.
        if let Ok(read) = ready.try_io(|fd| Ok(rustix::io::read(fd.get_ref(), &mut [0_u8; 8])?)) {
            // The timer rings once per setting: it cannot be readable again before the next one, so the
            // next wait need not find that out with a read that fails.
            ready.clear_ready();
            return read.map(|_| ());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn never_wakes_before_the_instant() {
        // How soon after it wakes is the engine benchmark's to show (schedule lag), not a test's.
        let mut timer = PreciseTimer::new();
        for micros in [0, 1, 50, 300, 1_500] {
            let at = Instant::now() + Duration::from_micros(micros);
            timer.sleep_until(at).await;
            assert!(Instant::now() >= at, "{micros} µs");
        }
    }

    #[tokio::test]
    async fn a_wait_dropped_midway_does_not_ring_the_next_one_early() {
        let mut timer = PreciseTimer::new();
        let far = Instant::now() + Duration::from_millis(5);
        let _ = tokio::time::timeout(Duration::from_millis(1), timer.sleep_until(far)).await;
        let at = Instant::now() + Duration::from_millis(20);
        timer.sleep_until(at).await;
        assert!(Instant::now() >= at);
    }
}
