//! How fast the generator's machine itself was during a run: a loopback echo no build can change.
//!
//! Why: a host that gives its virtual machine less (other guests on the same cores, a lower clock, a busy
//! hyperthread sibling) slows every request of a run and of its confirmation rerun alike, and it does not
//! always show as time stolen (`machine_load`). The run's own figures cannot tell that from a build that got
//! slower everywhere. A control that no build touches can: two threads of this process bounce one byte over
//! a loopback TCP connection a hundred times a second, and the round trips are kept. Each one is what every
//! request also pays on this machine: a write, a wake-up of a sleeping thread, a read, and back. The judge
//! compares tonight's with the baseline nights' (`analysis::contention`).
//!
//! Blocking threads rather than tasks: the probe measures the machine, not the generator's runtime, and must
//! not queue behind the sessions on it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

/// A round trip every this long: enough samples for a tight figure, too few to cost the machine anything
/// (two wake-ups every 10 ms).
const EVERY: Duration = Duration::from_millis(10);
/// A round trip longer than this is cut here: the machine stalled, and the figure says so already.
const LONGEST: Duration = Duration::from_secs(1);

/// The probe's figures over a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EchoFigures {
    /// The median round trip, µs.
    pub p50_us: f64,
    /// The 90th percentile round trip, µs.
    pub p90_us: f64,
    /// How many round trips were measured.
    pub count: u64,
}

/// A running probe; [`EchoProbe::finish`] stops it and reads its figures.
pub struct EchoProbe {
    stop: Arc<AtomicBool>,
    prober: JoinHandle<Histogram<u64>>,
    echo: JoinHandle<()>,
}

impl EchoProbe {
    /// Starts the echo and the prober on 127.0.0.1; `None` when the machine will not let it (no loopback,
    /// no threads): the run then simply has no such figure.
    #[must_use]
    pub fn start() -> Option<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).ok()?;
        let address = listener.local_addr().ok()?;
        let client = TcpStream::connect(address).ok()?;
        let (server, _) = listener.accept().ok()?;
        for stream in [&client, &server] {
            stream.set_nodelay(true).ok()?;
            // Neither side may wait forever: a stopped probe or a stalled peer ends the thread.
            stream.set_read_timeout(Some(LONGEST)).ok()?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let echo = std::thread::Builder::new().name("echo-probe".into()).spawn(move || echo(server)).ok()?;
        let stopping = Arc::clone(&stop);
        let prober =
            std::thread::Builder::new().name("echo-prober".into()).spawn(move || probe(client, &stopping)).ok()?;
        Some(Self { stop, prober, echo })
    }

    /// Stops the probe and returns its figures; `None` when it measured nothing.
    #[must_use]
    pub fn finish(self) -> Option<EchoFigures> {
        self.stop.store(true, Ordering::Relaxed);
        let histogram = self.prober.join().ok()?;
        // The prober dropped its end, so the echo reads end-of-file and returns.
        let _ = self.echo.join();
        (!histogram.is_empty()).then(|| EchoFigures {
            p50_us: histogram.value_at_quantile(0.5) as f64,
            p90_us: histogram.value_at_quantile(0.9) as f64,
            count: histogram.len(),
        })
    }
}

/// Sends back every byte until the other end closes (or stays silent past [`LONGEST`] after a stop).
fn echo(mut stream: TcpStream) {
    let mut byte = [0_u8; 1];
    loop {
        match stream.read(&mut byte) {
            Ok(1) if stream.write_all(&byte).is_ok() => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {}
            _ => return,
        }
    }
}

/// One round trip every [`EVERY`] until `stop`, each into the histogram (µs, at most [`LONGEST`]).
fn probe(mut stream: TcpStream, stop: &AtomicBool) -> Histogram<u64> {
    let longest = LONGEST.as_micros() as u64;
    let mut histogram = Histogram::new_with_bounds(1, longest, 2).expect("valid bounds");
    let mut byte = [0_u8; 1];
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let sent = Instant::now();
        if stream.write_all(&byte).is_err() || stream.read_exact(&mut byte).is_err() {
            break;
        }
        let micros = (sent.elapsed().as_micros() as u64).clamp(1, longest);
        histogram.record(micros).expect("clamped into the bounds");
        // On a schedule, not back to back: a slow round trip does not thin out the samples after it.
        next += EVERY;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
    histogram
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_round_trips_on_this_machine() {
        let probe = EchoProbe::start().expect("127.0.0.1 is there");
        std::thread::sleep(Duration::from_millis(120));
        let figures = probe.finish().expect("some round trips");
        assert!(figures.count >= 3, "{figures:?}");
        assert!(figures.p50_us >= 1.0 && figures.p50_us <= figures.p90_us, "{figures:?}");
        assert!(figures.p90_us <= LONGEST.as_micros() as f64, "{figures:?}");
    }
}
