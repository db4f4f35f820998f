//! Adding the segments of a split night up into one run: histograms added (never percentiles averaged, which
//! understates them), counters and error classes summed, timelines summed second by second from the shared
//! start. Pure: the segments' results in, the one run's results out.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};

use super::new_histogram;
use super::summary::intervals;
use crate::model::{
    EndpointResult, LoadSummary, RunResults, RunStatus, SegmentEndpoint, SegmentResults, TimelinePoint,
};

/// What a segment keeps of its own run for the merge.
#[must_use]
pub fn segment_results(index: u32, results: &RunResults) -> SegmentResults {
    SegmentResults {
        index,
        status: results.status,
        validity_reasons: results.validity_reasons.clone(),
        load_summary: results.load_summary.clone(),
        endpoints: results
            .endpoints
            .iter()
            .map(|e| SegmentEndpoint {
                endpoint: e.endpoint.clone(),
                requests: e.requests,
                errors_by_class: e.errors_by_class.clone(),
                error_samples: e.error_samples.clone(),
                histogram: e.histogram.clone(),
            })
            .collect(),
        timeline: results.timeline.clone(),
    }
}

/// The one run `segments` make together, ended at `finished_at`; `Err` names a segment whose histogram cannot
/// be read. The run is `failed` when a segment found the target not there, `invalid` when any segment was
/// invalid or stopped (each reason prefixed with its segment), else `finished`.
pub fn merge(
    segments: &[SegmentResults],
    count: u32,
    finished_at: chrono::DateTime<chrono::Utc>,
) -> Result<RunResults, String> {
    let measured_secs = segments.iter().map(|s| s.load_summary.measured_secs).fold(0.0, f64::max);
    let mut endpoints: Vec<(String, Merged)> = Vec::new();
    for segment in segments {
        for endpoint in &segment.endpoints {
            let position = if let Some(p) = endpoints.iter().position(|(name, _)| *name == endpoint.endpoint) {
                p
            } else {
                endpoints.push((endpoint.endpoint.clone(), Merged::default()));
                endpoints.len() - 1
            };
            endpoints[position]
                .1
                .add(endpoint)
                .map_err(|e| format!("segment {}: {}: {e}", segment.index, endpoint.endpoint))?;
        }
    }
    let (status, validity_reasons) = status_and_reasons(segments, count);
    Ok(RunResults {
        status,
        finished_at,
        validity_reasons,
        load_summary: load_summary(segments, count, measured_secs),
        endpoints: endpoints.iter().map(|(name, merged)| merged.result(name, measured_secs)).collect(),
        timeline: timeline(segments),
    })
}

/// One endpoint being added up.
#[derive(Default)]
struct Merged {
    histogram: Option<Histogram<u64>>,
    requests: i64,
    errors_by_class: BTreeMap<String, i64>,
    error_samples: BTreeMap<String, Vec<String>>,
}

impl Merged {
    fn add(&mut self, endpoint: &SegmentEndpoint) -> Result<(), String> {
        let theirs: Histogram<u64> =
            Deserializer::new().deserialize(&mut endpoint.histogram.as_slice()).map_err(|e| format!("{e:?}"))?;
        let mine = self.histogram.get_or_insert_with(new_histogram);
        mine.add(&theirs).map_err(|e| format!("{e:?}"))?;
        self.requests += endpoint.requests;
        for (class, count) in &endpoint.errors_by_class {
            *self.errors_by_class.entry(class.clone()).or_default() += count;
        }
        for (class, messages) in &endpoint.error_samples {
            let samples = self.error_samples.entry(class.clone()).or_default();
            for message in messages {
                if samples.len() < super::summary::SAMPLES_PER_CLASS && !samples.contains(message) {
                    samples.push(message.clone());
                }
            }
        }
        Ok(())
    }

    fn result(&self, name: &str, measured_secs: f64) -> EndpointResult {
        let h = self.histogram.clone().unwrap_or_else(new_histogram);
        let at = |q: f64| if h.is_empty() { 0 } else { h.value_at_quantile(q) as i64 };
        let errors: i64 = self.errors_by_class.values().sum();
        let mut histogram = Vec::new();
        V2Serializer::new().serialize(&h, &mut histogram).expect("serializing into memory cannot fail");
        EndpointResult {
            endpoint: name.to_owned(),
            requests: self.requests,
            errors,
            rate: if measured_secs > 0.0 { self.requests as f64 / measured_secs } else { 0.0 },
            p50_us: at(0.5),
            p75_us: at(0.75),
            p90_us: at(0.9),
            p95_us: at(0.95),
            p99_us: at(0.99),
            p999_us: at(0.999),
            max_us: if h.is_empty() { 0 } else { h.max() as i64 },
            mean_us: if h.is_empty() { 0.0 } else { h.mean() },
            errors_by_class: self.errors_by_class.clone(),
            error_samples: self.error_samples.clone(),
            intervals: intervals(&h, errors.max(0) as u64, self.requests.max(0) as u64),
            histogram,
        }
    }
}

/// The run's status: `failed` when any segment found the target not there, `invalid` when any segment was
/// invalid or stopped or some never reported, else `finished`; the reasons name their segment.
fn status_and_reasons(segments: &[SegmentResults], count: u32) -> (RunStatus, Vec<String>) {
    let mut reasons = Vec::new();
    let mut status = RunStatus::Finished;
    for segment in segments {
        let name = format!("segment {}/{count}", segment.index);
        match segment.status {
            RunStatus::Failed => status = RunStatus::Failed,
            RunStatus::Aborted if status != RunStatus::Failed => {
                status = RunStatus::Invalid;
                reasons.push(format!("{name} was stopped before its plan ended"));
            }
            RunStatus::Invalid if status != RunStatus::Failed => status = RunStatus::Invalid,
            _ => {}
        }
        reasons.extend(segment.validity_reasons.iter().map(|r| format!("{name}: {r}")));
    }
    let missing: Vec<String> =
        (0..count).filter(|k| !segments.iter().any(|s| s.index == *k)).map(|k| k.to_string()).collect();
    if !missing.is_empty() {
        status = RunStatus::Invalid;
        let segments = if missing.len() == 1 { "segment" } else { "segments" };
        reasons.push(format!("{segments} {} of {count} reported no results", missing.join(", ")));
    }
    (status, reasons)
}

/// Rates and drops add up; the generators' lag and CPU are the worst segment's (a sick one must show). The
/// target is the whole night's, the segments' equal shares times `count`: a night that lost a segment planned
/// it too (a trial's night of 40/s that lost one of three read "target 26.67, achieved 26.71").
fn load_summary(segments: &[SegmentResults], count: u32, measured_secs: f64) -> LoadSummary {
    let worst =
        |f: fn(&LoadSummary) -> Option<f64>| segments.iter().filter_map(|s| f(&s.load_summary)).reduce(f64::max);
    LoadSummary {
        model: segments.first().map(|s| s.load_summary.model.clone()).unwrap_or_default(),
        target_rate: segments.iter().map(|s| s.load_summary.target_rate).sum::<f64>() * f64::from(count)
            / segments.len().max(1) as f64,
        achieved_rate: segments.iter().map(|s| s.load_summary.achieved_rate).sum(),
        dropped: segments.iter().map(|s| s.load_summary.dropped).sum(),
        schedule_lag_p99_us: segments.iter().map(|s| s.load_summary.schedule_lag_p99_us).max().unwrap_or(0),
        generator_cpu_pct: worst(|l| Some(l.generator_cpu_pct)).unwrap_or(0.0),
        machine_cpu_busy_pct: worst(|l| l.machine_cpu_busy_pct),
        machine_cpu_stolen_pct: worst(|l| l.machine_cpu_stolen_pct),
        machine_cores: segments.iter().filter_map(|s| s.load_summary.machine_cores).max(),
        machine_echo_p50_us: worst(|l| l.machine_echo_p50_us),
        machine_echo_p90_us: worst(|l| l.machine_echo_p90_us),
        measured_secs,
        tape: None,
        skew: skew(segments),
        // Every segment spoke to the same target the same way: one negotiation, their connections added.
        connection: segments.iter().find_map(|s| s.load_summary.connection).map(|first| {
            crate::model::ConnectionReport {
                connections_opened: segments
                    .iter()
                    .filter_map(|s| s.load_summary.connection)
                    .map(|c| c.connections_opened)
                    .sum(),
                ..first
            }
        }),
    }
}

/// Each skewed draw's counts over every segment: draws added, the observed shares weighted by them (the
/// prediction is the same plan's in every segment).
fn skew(segments: &[SegmentResults]) -> Vec<crate::model::SkewObserved> {
    let Some(first) = segments.first() else { return Vec::new() };
    first
        .load_summary
        .skew
        .iter()
        .map(|site| {
            let parts: Vec<_> =
                segments.iter().flat_map(|s| &s.load_summary.skew).filter(|s| s.site == site.site).collect();
            let draws: u64 = parts.iter().map(|p| p.draws).sum();
            let share = |f: fn(&crate::model::SkewObserved) -> f64| {
                if draws == 0 { 0.0 } else { parts.iter().map(|p| f(p) * p.draws as f64).sum::<f64>() / draws as f64 }
            };
            crate::model::SkewObserved {
                draws,
                observed_hottest: share(|p| p.observed_hottest),
                observed_top_percent: share(|p| p.observed_top_percent),
                ..site.clone()
            }
        })
        .collect()
}

/// Each endpoint's seconds summed across segments. Counts add exactly; a second's p50 and p99 cannot be
/// recovered from the segments' percentiles, so the merged second shows the highest of them (an upper bound,
/// for the chart only: the judged figures come from the added histograms).
fn timeline(segments: &[SegmentResults]) -> Vec<TimelinePoint> {
    let mut seconds: BTreeMap<(String, i64), TimelinePoint> = BTreeMap::new();
    for point in segments.iter().flat_map(|s| &s.timeline) {
        let merged = seconds.entry((point.endpoint.clone(), point.elapsed_s)).or_insert_with(|| TimelinePoint {
            endpoint: point.endpoint.clone(),
            elapsed_s: point.elapsed_s,
            ..TimelinePoint::default()
        });
        merged.requests += point.requests;
        merged.errors += point.errors;
        merged.p50_us = merged.p50_us.max(point.p50_us);
        merged.p99_us = merged.p99_us.max(point.p99_us);
        merged.max_us = merged.max_us.max(point.max_us);
        for (class, count) in &point.errors_by_class {
            *merged.errors_by_class.entry(class.clone()).or_default() += count;
        }
    }
    seconds.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{EndpointRecord, endpoint_result};

    fn segment(index: u32, latencies: &[u64]) -> SegmentResults {
        let mut record = EndpointRecord::default();
        for &us in latencies {
            record.record(Some(us), Some(us), None);
        }
        let overall = endpoint_result("(all)", &record, 10.0);
        let results = RunResults {
            status: RunStatus::Finished,
            finished_at: chrono::DateTime::default(),
            validity_reasons: vec![],
            load_summary: LoadSummary {
                measured_secs: 10.0,
                target_rate: 5.0,
                achieved_rate: 5.0,
                ..LoadSummary::default()
            },
            endpoints: vec![overall],
            timeline: vec![TimelinePoint {
                endpoint: "(all)".into(),
                elapsed_s: 1,
                requests: latencies.len() as i64,
                ..TimelinePoint::default()
            }],
        };
        segment_results(index, &results)
    }

    #[test]
    fn histograms_add_up_to_the_single_machine_percentiles() {
        let all: Vec<u64> = (1..=3_000).map(|i| i * 37 % 10_007 + 100).collect();
        let mut single = EndpointRecord::default();
        for &us in &all {
            single.record(Some(us), Some(us), None);
        }
        let single = endpoint_result("(all)", &single, 10.0);
        let parts: Vec<SegmentResults> = (0..3)
            .map(|k| {
                segment(
                    k,
                    &all.iter().enumerate().filter(|(i, _)| i % 3 == k as usize).map(|(_, &us)| us).collect::<Vec<_>>(),
                )
            })
            .collect();
        let merged = merge(&parts, 3, chrono::DateTime::default()).unwrap();
        let overall = &merged.endpoints[0];
        assert_eq!(
            (overall.requests, overall.p50_us, overall.p95_us, overall.p99_us, overall.max_us),
            (single.requests, single.p50_us, single.p95_us, single.p99_us, single.max_us)
        );
        assert_eq!(merged.status, RunStatus::Finished);
        assert!((merged.load_summary.target_rate - 15.0).abs() < 1e-9);
        assert_eq!(merged.timeline[0].requests, 3_000);
    }

    /// The stored histogram of an endpoint result, bucket by bucket: (highest equivalent value, count).
    fn buckets(result: &EndpointResult) -> Vec<(u64, u64)> {
        let h: Histogram<u64> = Deserializer::new().deserialize(&mut result.histogram.as_slice()).unwrap();
        h.iter_recorded().map(|v| (h.highest_equivalent(v.value_iterated_to()), v.count_at_value())).collect()
    }

    /// The merge is exact, not an approximation: for random latencies (0 to past the one-hour clamp, log-uniform,
    /// so every bucket size is exercised) dealt at random to 1 to 8 segments, the merged histogram holds the same
    /// count in every bucket as one histogram fed every value, and so every percentile, the max and the mean are
    /// the single machine's to the microsecond.
    #[test]
    fn merged_histograms_equal_one_histogram_fed_every_value_bucket_by_bucket() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(46);
        for case in 0..200 {
            let n: u32 = rng.random_range(1..=8);
            let values: Vec<u64> =
                (0..rng.random_range(0..2_000)).map(|_| 10f64.powf(rng.random_range(0.0..10.0)) as u64).collect();
            let mut shares = vec![Vec::new(); n as usize];
            for &us in &values {
                shares[rng.random_range(0..n as usize)].push(us);
            }
            let mut single = EndpointRecord::default();
            for &us in &values {
                single.record(Some(us), Some(us), None);
            }
            let single = endpoint_result("(all)", &single, 10.0);
            let parts: Vec<SegmentResults> = (0..n).map(|k| segment(k, &shares[k as usize])).collect();
            let merged = merge(&parts, n, chrono::DateTime::default()).unwrap();
            let overall = &merged.endpoints[0];
            assert_eq!(buckets(overall), buckets(&single), "case {case}: {n} segments, {} values", values.len());
            let figures = |e: &EndpointResult| {
                (e.requests, e.p50_us, e.p75_us, e.p90_us, e.p95_us, e.p99_us, e.p999_us, e.max_us, e.mean_us.to_bits())
            };
            assert_eq!(figures(overall), figures(&single), "case {case}");
        }
    }

    #[test]
    fn a_missing_or_stopped_segment_makes_the_night_invalid_and_says_which() {
        let mut stopped = segment(1, &[1_000]);
        stopped.status = RunStatus::Aborted;
        let merged = merge(&[segment(0, &[1_000]), stopped], 3, chrono::DateTime::default()).unwrap();
        assert_eq!(merged.status, RunStatus::Invalid);
        assert!(merged.validity_reasons.iter().any(|r| r == "segment 1/3 was stopped before its plan ended"));
        assert!(
            merged.validity_reasons.iter().any(|r| r == "segment 2 of 3 reported no results"),
            "{:?}",
            merged.validity_reasons
        );
        // The night planned all three segments' arrivals, whoever reported.
        assert!((merged.load_summary.target_rate - 15.0).abs() < 1e-9, "{:?}", merged.load_summary);
        assert!((merged.load_summary.achieved_rate - 10.0).abs() < 1e-9, "{:?}", merged.load_summary);
    }
}
