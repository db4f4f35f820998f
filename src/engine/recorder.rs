//! The one collector every session reports to: per-endpoint histograms for the results, per-second
//! histograms for the timeline, the schedule-lag histogram and the arrival counters.
//!
//! One mutex, held for a few hundred nanoseconds per request and never across an `.await`: at the rates one
//! generator machine sends, that costs less than a channel hop and keeps the code one obvious place.
//! Memory is fixed: per-second histograms are summarised into timeline rows as soon as their second is over.
//! A report for a second already summarised (after a stall, the backlog of dropped arrivals is recorded at
//! the times they were due) is kept aside and merged into that second's row at the end: every second is
//! written once, in the second it belongs to.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::metrics::{EndpointRecord, ErrorClass, SecondRecord, new_histogram, timeline_point};
use crate::model::TimelinePoint;

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
    /// Every second before this one is closed: its rows are in `timeline`.
    closed_before: u64,
    /// Reports that came after their second was closed, by (second, endpoint), merged in by `finish`.
    late: BTreeMap<(u64, usize), SecondRecord>,
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
            closed_before: 0,
            late: BTreeMap::new(),
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
        let class = failure.as_ref().map(|(c, _)| *c);
        // A request that was dispatched but never went out (it could not be built) has no response time: its
        // near-zero "latency" pulled every percentile of its night towards nothing. Nor has one this machine
        // failed for want of descriptors or ports: it never reached the target (a trial's p50 read 0.4 ms).
        let sent = sent.filter(|_| class != Some(ErrorClass::LocalLimit));
        let response = dispatched.and(sent).map(|_| micros(end.saturating_duration_since(intended)));
        let service = sent.map(|s| micros(end.saturating_duration_since(s)));
        let second = end.saturating_duration_since(self.start).as_secs();
        if dispatched.is_some() {
            self.in_flight[endpoint][usize::from(measured)].fetch_sub(1, Ordering::Relaxed);
        }
        let mut guard = self.lock();
        let inner = &mut *guard;
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
        let record = if second < inner.closed_before {
            inner.late.entry((second, endpoint)).or_default()
        } else {
            &mut inner.second(second, self.names.len(), &self.names)[endpoint]
        };
        record.record(response, class);
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
        inner.merge_late(&self.names);
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

    /// Adds the late reports to their seconds' rows (or writes the row, if the second had none for that
    /// endpoint), then puts the timeline back in time order. A late request's response time only raises the
    /// row's maximum: the percentiles of a closed second are summaries that cannot be reopened.
    fn merge_late(&mut self, names: &[String]) {
        if self.late.is_empty() {
            return;
        }
        let rows: HashMap<(i64, String), usize> =
            self.timeline.iter().enumerate().map(|(i, p)| ((p.elapsed_s, p.endpoint.clone()), i)).collect();
        for ((second, endpoint), record) in std::mem::take(&mut self.late) {
            let point = timeline_point(&names[endpoint], second, &record);
            match rows.get(&(point.elapsed_s, point.endpoint.clone())) {
                Some(&row) => {
                    let row = &mut self.timeline[row];
                    row.requests += point.requests;
                    row.errors += point.errors;
                    row.max_us = row.max_us.max(point.max_us);
                    for (class, count) in point.errors_by_class {
                        *row.errors_by_class.entry(class).or_default() += count;
                    }
                }
                None => self.timeline.push(point),
            }
        }
        self.timeline.sort_by(|a, b| (a.elapsed_s, &a.endpoint).cmp(&(b.elapsed_s, &b.endpoint)));
    }

    fn close(&mut self, second: u64, records: &[SecondRecord], names: &[String]) {
        self.closed_before = self.closed_before.max(second + 1);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(start: Instant, at_s: u64) -> Sample {
        let end = start + Duration::from_secs(at_s);
        let sent = start + Duration::from_secs(at_s - 1) + Duration::from_millis(997);
        Sample {
            endpoint: 0,
            intended: sent,
            dispatched: Some(sent),
            sent: Some(sent),
            end,
            failure: None,
            measured: true,
        }
    }

    fn dropped(start: Instant, due_s: u64) -> Sample {
        let at = start + Duration::from_secs(due_s);
        let failure = Some((ErrorClass::Dropped, "over the in-flight cap".to_owned()));
        Sample { endpoint: 0, intended: at, dispatched: None, sent: None, end: at, failure, measured: true }
    }

    /// After a stall the backlog of dropped arrivals is recorded at the seconds they were due, which are
    /// closed by then: each lands in its own second, and no second is written twice.
    #[test]
    fn a_stalls_backlog_lands_in_its_seconds_and_no_second_is_written_twice() {
        let start = Instant::now();
        let recorder = Recorder::new(start, vec!["GET /a".to_owned()]);
        for at_s in [1, 5, 10] {
            recorder.dispatching(0, true);
            recorder.record(answered(start, at_s));
        }
        // Seconds 1 and 5 are closed now (10 is more than two seconds on); these were due in 1, 5 and 6.
        for due_s in [1, 5, 5, 6] {
            recorder.record(dropped(start, due_s));
        }
        let recorded = recorder.finish();
        let seconds: Vec<(i64, i64, i64)> =
            recorded.timeline.iter().map(|p| (p.elapsed_s, p.requests, p.errors)).collect();
        assert_eq!(seconds, [(1, 2, 1), (5, 3, 2), (6, 1, 1), (10, 1, 0)]);
        assert_eq!(recorded.timeline[1].errors_by_class["dropped"], 2);
        assert_eq!(recorded.dropped_measured, 4);
        assert_eq!(recorded.endpoints[0].requests, 7);
    }
}
