//! The one collector every session reports to: per-endpoint histograms for the results, per-second
//! histograms for the timeline, the schedule-lag histogram and the arrival counters.
//!
//! One mutex, held for a few hundred nanoseconds per request and never across an `.await`: at the rates one
//! generator machine sends, that costs less than a channel hop and keeps the code one obvious place.
//! Memory is fixed: per-second histograms are summarised into timeline rows as soon as their second is over.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::metrics::{EndpointRecord, ErrorClass, SecondRecord, new_histogram, timeline_point};
use crate::store::TimelinePoint;

/// Seconds kept open for late reports: a request that ended at 4.999 s may report at 5.001 s.
const OPEN_SECONDS: u64 = 2;

/// One finished (or never sent) request.
#[derive(Debug)]
pub(super) struct Sample {
    /// Index of its endpoint in the plan.
    pub endpoint: usize,
    /// When it should have started.
    pub intended: Instant,
    /// When the generator was ready to send it; `None` if it never was (dropped).
    pub dispatched: Option<Instant>,
    /// When it got a connection and went on the wire; later than `dispatched` only when `[target]
    /// max_connections` made it queue, `None` if it never got one.
    pub sent: Option<Instant>,
    /// When it finished, failed or was given up on.
    pub end: Instant,
    /// Why it failed, if it did.
    pub failure: Option<(ErrorClass, String)>,
    /// Whether its session started in a measured stage.
    pub measured: bool,
}

/// What the progress line shows.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Snapshot {
    /// Requests finished so far (all stages).
    pub requests: u64,
    /// Of which failed.
    pub errors: u64,
    /// Requests finished in the last complete second.
    pub last_second_rate: u64,
    /// p95 response time in the last complete second, µs.
    pub last_second_p95_us: u64,
}

/// Everything recorded, handed over when the run is done.
#[derive(Debug)]
pub(super) struct Recorded {
    pub endpoints: Vec<EndpointRecord>,
    pub timeline: Vec<TimelinePoint>,
    pub schedule_lag: Histogram<u64>,
    pub sessions_measured: u64,
    pub dropped_measured: u64,
}

pub(super) struct Recorder {
    start: Instant,
    names: Vec<String>,
    inner: Mutex<Inner>,
    /// Requests sent and not yet recorded, per endpoint, unmeasured then measured: what is cut off when
    /// the run must end before they finish.
    in_flight: Vec<[AtomicU64; 2]>,
    /// Sessions started in measured stages.
    sessions_measured: AtomicU64,
}

struct Inner {
    endpoints: Vec<EndpointRecord>,
    /// Seconds still open, oldest first: (second, one record per endpoint).
    open: VecDeque<(u64, Vec<SecondRecord>)>,
    timeline: Vec<TimelinePoint>,
    schedule_lag: Histogram<u64>,
    dropped_measured: u64,
    snapshot: Snapshot,
}

impl Recorder {
    pub(super) fn new(start: Instant, names: Vec<String>) -> Self {
        let inner = Inner {
            endpoints: vec![EndpointRecord::default(); names.len()],
            open: VecDeque::new(),
            timeline: Vec::new(),
            schedule_lag: new_histogram(),
            dropped_measured: 0,
            snapshot: Snapshot::default(),
        };
        let in_flight = names.iter().map(|_| [AtomicU64::new(0), AtomicU64::new(0)]).collect();
        Self { start, names, inner: Mutex::new(inner), in_flight, sessions_measured: AtomicU64::new(0) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while recording cannot leave the counters half-updated in a way that matters more than
        // losing the run, so a poisoned lock is used as is.
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts a session that started (measured stages only feed the achieved rate).
    pub(super) fn session_started(&self, measured: bool) {
        if measured {
            self.sessions_measured.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a request as in flight until its [`Sample`] (with `dispatched` set) is recorded.
    pub(super) fn dispatching(&self, endpoint: usize, measured: bool) {
        self.in_flight[endpoint][usize::from(measured)].fetch_add(1, Ordering::Relaxed);
    }

    /// Records every request still in flight as `aborted_at_end`: called once their sessions are cancelled.
    pub(super) fn abort_in_flight(&self) {
        let now = Instant::now();
        for (endpoint, counts) in self.in_flight.iter().enumerate() {
            for (measured, count) in [false, true].into_iter().zip(counts) {
                for _ in 0..count.swap(0, Ordering::Relaxed) {
                    self.record(Sample {
                        endpoint,
                        intended: now,
                        dispatched: None,
                        sent: None,
                        end: now,
                        failure: Some((ErrorClass::AbortedAtEnd, "still in flight when the run was stopped".into())),
                        measured,
                    });
                }
            }
        }
    }

    pub(super) fn record(&self, sample: Sample) {
        let Sample { endpoint, intended, dispatched, sent, end, failure, measured } = sample;
        let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let response = dispatched.map(|_| micros(end.saturating_duration_since(intended)));
        let service = sent.map(|s| micros(end.saturating_duration_since(s)));
        let second = end.saturating_duration_since(self.start).as_secs();
        let class = failure.as_ref().map(|(c, _)| *c);
        if dispatched.is_some() {
            self.in_flight[endpoint][usize::from(measured)].fetch_sub(1, Ordering::Relaxed);
        }
        let mut inner = self.lock();
        if measured {
            if let Some(d) = dispatched {
                inner.schedule_lag.saturating_record(micros(d.saturating_duration_since(intended)).max(1));
            }
            if class == Some(ErrorClass::Dropped) {
                inner.dropped_measured += 1;
            }
            let error = failure.as_ref().map(|(c, m)| (*c, m.as_str()));
            inner.endpoints[endpoint].record(response, service, error);
        }
        inner.snapshot.requests += 1;
        inner.snapshot.errors += u64::from(class.is_some());
        inner.second(second, self.names.len(), &self.names)[endpoint].record(response, class);
    }

    pub(super) fn snapshot(&self) -> Snapshot {
        self.lock().snapshot
    }

    /// Closes every open second and hands over what was recorded.
    pub(super) fn finish(&self) -> Recorded {
        let mut inner = self.lock();
        while let Some((second, records)) = inner.open.pop_front() {
            inner.close(second, &records, &self.names);
        }
        Recorded {
            endpoints: std::mem::take(&mut inner.endpoints),
            timeline: std::mem::take(&mut inner.timeline),
            schedule_lag: inner.schedule_lag.clone(),
            sessions_measured: self.sessions_measured.load(Ordering::Relaxed),
            dropped_measured: inner.dropped_measured,
        }
    }

    /// The plan's endpoint names, by index.
    pub(super) fn names(&self) -> &[String] {
        &self.names
    }
}

impl Inner {
    /// The records of `second`, opening it (and closing seconds now too old) as needed.
    fn second(&mut self, second: u64, endpoints: usize, names: &[String]) -> &mut Vec<SecondRecord> {
        while self.open.front().is_some_and(|(s, _)| s + OPEN_SECONDS < second) {
            let (old, records) = self.open.pop_front().expect("checked above");
            self.close(old, &records, names);
        }
        let position = match self.open.iter().position(|(s, _)| *s >= second) {
            Some(p) if self.open[p].0 == second => p,
            Some(p) => {
                self.open.insert(p, (second, vec![SecondRecord::default(); endpoints]));
                p
            }
            None => {
                self.open.push_back((second, vec![SecondRecord::default(); endpoints]));
                self.open.len() - 1
            }
        };
        &mut self.open[position].1
    }

    fn close(&mut self, second: u64, records: &[SecondRecord], names: &[String]) {
        let mut all = SecondRecord::default();
        for (name, record) in names.iter().zip(records) {
            if record.requests > 0 {
                self.timeline.push(timeline_point(name, second, record));
                all.merge(record);
            }
        }
        let p95 = if all.response.is_empty() { 0 } else { all.response.value_at_quantile(0.95) };
        self.snapshot.last_second_rate = all.requests;
        self.snapshot.last_second_p95_us = p95;
    }
}
