//! The demo target's CPU: what it has used, in the Prometheus exposition format at `/metrics` (the
//! `process_cpu_seconds_total` every Prometheus client library exports, read from `/proc/self/stat`), and
//! the extra work a build can be made to do per request without its answers taking longer: a thread of its
//! own does it after each answer, so the cost shows on the server's side and not in the latency, the way a
//! build that needs more CPU per request reads on a night with headroom. It runs at the API's own priority: at
//! the lowest, the scheduler weighs it so little that it parks it beside a busy process on a core of its own
//! and it starves there while the other core idles, and its work is done nights late.

use std::hint::black_box;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

/// The kernel's clock ticks per second in `/proc/<pid>/stat` (`USER_HZ`): 100 on every Linux architecture
/// that exports it to user space.
const TICKS_PER_SECOND: f64 = 100.0;

/// The CPU seconds this process has used, user and system, on every thread; `None` off Linux.
#[must_use]
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name, field 2, is in parentheses and may hold spaces: count fields after its `)`.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let user: f64 = fields.next()?.parse().ok()?;
    let system: f64 = fields.next()?.parse().ok()?;
    Some((user + system) / TICKS_PER_SECOND)
}

/// `/metrics`: the process's CPU seconds and the API requests it has answered.
#[must_use]
pub fn exposition(requests: u64) -> String {
    let mut text = String::new();
    if let Some(cpu) = process_cpu_seconds() {
        text.push_str(
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n\
             # TYPE process_cpu_seconds_total counter\n",
        );
        text.push_str(&format!("process_cpu_seconds_total {cpu}\n"));
    }
    text.push_str("# HELP demo_requests_total API requests answered.\n# TYPE demo_requests_total counter\n");
    text.push_str(&format!("demo_requests_total {requests}\n"));
    text
}

/// A thread that does work handed to it after the answers: `burn(µs)` queues that much CPU time.
pub struct Burner {
    work: Sender<u64>,
}

impl Burner {
    /// Starts the thread.
    #[must_use]
    pub fn start() -> Self {
        let (work, queue) = channel();
        std::thread::Builder::new()
            .name("demo-burner".to_owned())
            .spawn(move || burn_queued(&queue, &ThreadCpu::new()))
            .expect("a thread can be started at start-up");
        Self { work }
    }

    /// Queues `us` microseconds of CPU work; nothing for zero.
    pub fn burn(&self, us: u64) {
        if us > 0 {
            // The thread ends only with the sender, so a send fails only while the target is going away.
            let _ = self.work.send(us);
        }
    }
}

/// Works through the queue until its sender is gone.
fn burn_queued(queue: &Receiver<u64>, cpu: &ThreadCpu) {
    while let Ok(us) = queue.recv() {
        cpu.spend(Duration::from_micros(us));
    }
}

/// This thread's CPU clock. A request asked for twice the microseconds then costs twice the CPU time the
/// kernel counts in `process_cpu_seconds_total`, whatever else the machine is doing: work measured by the wall
/// clock (or calibrated once at start-up) is cut short whenever another process takes the core, and a target
/// started on a busier moment would calibrate less work per microsecond than the build before it.
struct ThreadCpu {
    /// Rounds between two reads of the clock: about 20 µs of work, so the reads cost about 1 % of it.
    chunk: u64,
}

impl ThreadCpu {
    fn new() -> Self {
        Self { chunk: (rounds_per_us() * 20).max(1) }
    }

    /// Does work until this thread has spent `cpu` more CPU time.
    #[cfg(target_os = "linux")]
    fn spend(&self, cpu: Duration) {
        let start = thread_cpu_time();
        while thread_cpu_time().saturating_sub(start) < cpu {
            black_box(rounds(self.chunk));
            // Between chunks, a thread of the API's that is ready to answer runs first: the work takes idle
            // time, not a request's turn (a yield keeps the thread's full weight, so the scheduler does not
            // park it beside a busy process the way the lowest priority did).
            std::thread::yield_now();
        }
    }

    /// Off Linux, without a thread CPU clock to read: the calibrated amount of work.
    #[cfg(not(target_os = "linux"))]
    fn spend(&self, cpu: Duration) {
        let micros = u64::try_from(cpu.as_micros()).unwrap_or(u64::MAX);
        black_box(rounds(micros.saturating_mul(self.chunk / 20)));
    }
}

/// The CPU time this thread has used (`CLOCK_THREAD_CPUTIME_ID`).
#[cfg(target_os = "linux")]
fn thread_cpu_time() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(u64::try_from(now.tv_sec).unwrap_or(0), u32::try_from(now.tv_nsec).unwrap_or(0))
}

/// A fixed amount of arithmetic the compiler cannot skip.
fn rounds(count: u64) -> u64 {
    let mut x = black_box(0x9E37_79B9_7F4A_7C15_u64);
    for i in 0..count {
        x = (x ^ i).wrapping_mul(0xBF58_476D_1CE4_E5B9).rotate_left(17);
    }
    x
}

/// How many rounds one microsecond of CPU does here: the fastest of a few 2 ms trials, since a trial can
/// only be slowed (by another thread taking the core), never sped up.
fn rounds_per_us() -> u64 {
    const TRIAL: u64 = 200_000;
    let fastest = (0..5)
        .map(|_| {
            let start = Instant::now();
            black_box(rounds(TRIAL));
            start.elapsed()
        })
        .min()
        .unwrap_or(Duration::from_millis(1))
        .max(Duration::from_micros(1));
    (TRIAL as f64 / fastest.as_secs_f64() / 1e6).max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_burn_spends_the_cpu_time_asked_for() {
        let before = thread_cpu_time();
        ThreadCpu::new().spend(Duration::from_millis(30));
        // At least what was asked, whatever the machine's load: the clock counts only this thread's CPU.
        assert!(thread_cpu_time().saturating_sub(before) >= Duration::from_millis(30));
    }

    #[test]
    fn the_exposition_carries_the_process_cpu_and_the_requests() {
        let text = exposition(42);
        assert!(text.contains("\ndemo_requests_total 42\n"), "{text}");
        if cfg!(target_os = "linux") {
            let cpu = process_cpu_seconds().expect("/proc/self/stat is readable on Linux");
            assert!(cpu >= 0.0);
            assert!(text.contains("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total "), "{text}");
        }
        for line in text.lines() {
            assert!(crate::exposition::parse_line(line).is_ok(), "{line}");
        }
    }
}
