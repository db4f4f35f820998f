//! Whether one step of a capacity search stayed inside the zone (the scenario's absolute gates), judged on
//! that step's requests only, every hold of it pooled.
//!
//! A figure leaves the zone only when its 95 % interval lies wholly past the limit; a figure past its limit
//! whose interval still reaches under it, or one resting on too few requests to be bounded, asks for one more
//! hold, and the last hold's point estimate decides. A step whose generator fell behind its schedule (late
//! sends, a saturated generator, arrivals not sent) measured the generator, not the target: it is invalid.
//! Arrivals dropped at the in-flight cap are the target's doing (it held that many requests), so they leave
//! the zone: with coordinated omission corrected, a target that falls behind is over capacity, not slow.

use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;

use crate::analysis::AbsoluteGates;
use crate::metrics::interval::{error_rate_interval, percentile_interval};
use crate::metrics::{Limits, LoadFacts, validity_reasons};
use crate::model::{Interval, LoadModel, OVERALL_ENDPOINT, RunResults, RunStatus, StepVerdict, ZoneBreach, ZoneGate};

/// One endpoint of a step: its response times and counts over the step's holds.
#[derive(Debug, Clone)]
struct EndpointSample {
    name: String,
    histogram: Option<Histogram<u64>>,
    requests: u64,
    errors: u64,
}

/// A step's requests over its holds, and how well the generator delivered them.
#[derive(Debug, Clone, Default)]
pub struct StepSample {
    endpoints: Vec<EndpointSample>,
    holds: u32,
    measured_secs: f64,
    planned: f64,
    started: f64,
    dropped: u64,
    schedule_lag_p99_us: i64,
    generator_cpu_pct: f64,
    cores: u32,
    target_failed: bool,
    /// Requests this machine failed for want of descriptors or ports (`local_limit`).
    local_limit: u64,
}

impl StepSample {
    /// Adds one hold's results.
    pub fn add(&mut self, results: &RunResults) {
        let load = &results.load_summary;
        self.holds += 1;
        self.measured_secs += load.measured_secs;
        self.planned += load.target_rate * load.measured_secs;
        self.started += load.achieved_rate * load.measured_secs;
        self.dropped += load.dropped.max(0) as u64;
        self.schedule_lag_p99_us = self.schedule_lag_p99_us.max(load.schedule_lag_p99_us);
        self.generator_cpu_pct = self.generator_cpu_pct.max(load.generator_cpu_pct);
        self.cores = load.machine_cores.unwrap_or(1).max(1);
        self.target_failed |= results.status == RunStatus::Failed;
        for result in &results.endpoints {
            if result.endpoint == OVERALL_ENDPOINT {
                let local = result.errors_by_class.get(crate::metrics::ErrorClass::LocalLimit.as_str());
                self.local_limit += local.copied().unwrap_or(0).max(0) as u64;
            }
            let histogram = Deserializer::new().deserialize::<u64, _>(&mut result.histogram.as_slice()).ok();
            if !self.endpoints.iter().any(|e| e.name == result.endpoint) {
                let name = result.endpoint.clone();
                self.endpoints.push(EndpointSample { name, histogram: None, requests: 0, errors: 0 });
            }
            let pooled = self.endpoints.iter_mut().find(|e| e.name == result.endpoint).expect("just added");
            pooled.requests += result.requests.max(0) as u64;
            pooled.errors += result.errors.max(0) as u64;
            pooled.histogram = match (pooled.histogram.take(), histogram) {
                (Some(mut mine), Some(theirs)) => {
                    // Both come from the engine's one histogram shape; a refusal keeps the first hold's times.
                    let _ = mine.add(&theirs);
                    Some(mine)
                }
                (mine, theirs) => mine.or(theirs),
            };
        }
    }

    /// Holds pooled so far.
    #[must_use]
    pub fn holds(&self) -> u32 {
        self.holds
    }

    /// Sessions started per second over the holds.
    #[must_use]
    pub fn achieved_rate(&self) -> f64 {
        if self.measured_secs > 0.0 { self.started / self.measured_secs } else { 0.0 }
    }

    /// The whole step's `(all)` figures: requests, errors, and p75, p95, p99 in ms.
    #[must_use]
    pub fn overall(&self) -> (i64, i64, [Option<f64>; 3]) {
        let Some(all) = self.endpoints.iter().find(|e| e.name == OVERALL_ENDPOINT) else { return (0, 0, [None; 3]) };
        let at = |p: f64| all.histogram.as_ref().filter(|h| !h.is_empty()).map(|h| h.value_at_quantile(p) as f64 / 1e3);
        (all.requests as i64, all.errors as i64, [at(0.75), at(0.95), at(0.99)])
    }

    /// Why the generator, not the target, shaped the step; empty when it delivered the step.
    fn generator_faults(&self) -> Vec<String> {
        let secs = self.measured_secs.max(f64::MIN_POSITIVE);
        let facts = LoadFacts {
            model: LoadModel::Open,
            target_rate: self.planned / secs,
            // Dropped arrivals were the target's doing: counted as sent here, judged as the zone's below.
            achieved_rate: (self.started + self.dropped as f64) / secs,
            planned_arrivals: self.planned,
            dropped: 0,
            schedule_lag_p99_us: self.schedule_lag_p99_us.max(0) as u64,
            cpu_pct: self.generator_cpu_pct,
            cores: self.cores as usize,
            stopped_early: None,
            local_limit_failures: self.local_limit,
            open_files_limit: None,
        };
        validity_reasons(&facts, &Limits::default())
    }
}

/// What the zone made of a step so far: `None` asks for one more hold.
#[derive(Debug, Clone, PartialEq)]
pub struct StepJudgement {
    /// Held, left, invalid or target failed; `None` when one more hold must decide.
    pub verdict: Option<StepVerdict>,
    /// The figure that left the zone (the farthest past its limit).
    pub breach: Option<ZoneBreach>,
    /// In words.
    pub reason: String,
}

/// How one figure stands against its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Standing {
    Inside,
    Unsure,
    Out,
}

/// Whether the zone limits any figure of the requests (a response time or the error rate).
fn figures_limited(gates: &AbsoluteGates) -> bool {
    [gates.max_p75_ms, gates.max_p95_ms, gates.max_p99_ms, gates.max_error_rate_pct].iter().any(Option::is_some)
}

/// Judges a step against the zone's `gates`; `last_hold` lets the point estimates decide what the intervals
/// could not.
#[must_use]
pub fn judge_step(sample: &StepSample, gates: &AbsoluteGates, last_hold: bool) -> StepJudgement {
    if sample.target_failed {
        let reason = "the target was not there (every request failed to connect or answer)".to_owned();
        return StepJudgement { verdict: Some(StepVerdict::TargetFailed), breach: None, reason };
    }
    let faults = sample.generator_faults();
    if !faults.is_empty() {
        let reason = format!("the generator could not send this step: {}", faults.join("; "));
        return StepJudgement { verdict: Some(StepVerdict::Invalid), breach: None, reason };
    }
    let mut figures = figures(sample, gates);
    figures.sort_by(|a, b| (a.0, a.1.value / a.1.limit).partial_cmp(&(b.0, b.1.value / b.1.limit)).expect("finite"));
    let worst = figures.pop();
    let verdict = match worst.as_ref().map(|w| w.0) {
        Some(Standing::Out) => Some(StepVerdict::Left),
        Some(Standing::Unsure) if last_hold => {
            Some(if over(worst.as_ref()) { StepVerdict::Left } else { StepVerdict::Held })
        }
        Some(Standing::Unsure) => None,
        Some(Standing::Inside) | None => Some(StepVerdict::Held),
    };
    let reason = match (&verdict, &worst) {
        // A zone of telemetry limits alone: its requests have nothing to keep, and its telemetry decides.
        (_, None) if figures_limited(gates) => "no response to judge".to_owned(),
        (_, None) => "inside the zone on its requests: the zone limits only the server's telemetry".to_owned(),
        (None, Some((_, figure))) => format!("not decided yet: {}", figure.describe()),
        (Some(StepVerdict::Left), Some((Standing::Out, figure))) => format!("left the zone: {}", figure.describe()),
        (Some(StepVerdict::Left), Some((_, figure))) => format!(
            "left the zone: {} (its interval still reached under the limit after {} holds)",
            figure.describe(),
            sample.holds
        ),
        (Some(_), Some((_, figure))) => format!("inside the zone; closest: {}", figure.describe()),
    };
    let breach = (verdict == Some(StepVerdict::Left)).then(|| worst.map(|w| w.1)).flatten();
    StepJudgement { verdict, breach, reason }
}

fn over(figure: Option<&(Standing, ZoneBreach)>) -> bool {
    figure.is_some_and(|(_, f)| f.value > f.limit)
}

/// Every gated figure of every endpoint, with how it stands.
fn figures(sample: &StepSample, gates: &AbsoluteGates) -> Vec<(Standing, ZoneBreach)> {
    let percentiles = [
        (ZoneGate::P75, 0.75, gates.max_p75_ms),
        (ZoneGate::P95, 0.95, gates.max_p95_ms),
        (ZoneGate::P99, 0.99, gates.max_p99_ms),
    ];
    let mut figures = Vec::new();
    for endpoint in &sample.endpoints {
        let breach = |gate, value, limit| ZoneBreach { gate, endpoint: endpoint.name.clone(), value, limit };
        if let Some(h) = endpoint.histogram.as_ref().filter(|h| !h.is_empty()) {
            for (gate, p, limit) in percentiles {
                let Some(limit) = limit else { continue };
                let value = h.value_at_quantile(p) as f64 / 1e3;
                let interval =
                    percentile_interval(h, p).map(|i| Interval { lo: i.lo / 1e3, hi: i.hi.map(|hi| hi / 1e3) });
                figures.push((standing(value, interval, limit), breach(gate, value, limit)));
            }
        }
        if let Some(limit) = gates.max_error_rate_pct
            && endpoint.requests > 0
        {
            let value = endpoint.errors as f64 * 100.0 / endpoint.requests as f64;
            let interval = error_rate_interval(endpoint.errors, endpoint.requests);
            figures.push((standing(value, interval, limit), breach(ZoneGate::ErrorRate, value, limit)));
        }
    }
    let limit = Limits::default().max_dropped_share * 100.0;
    if sample.planned > 0.0 && sample.dropped as f64 * 100.0 / sample.planned > limit {
        let value = sample.dropped as f64 * 100.0 / sample.planned;
        let endpoint = OVERALL_ENDPOINT.to_owned();
        figures.push((Standing::Out, ZoneBreach { gate: ZoneGate::InFlight, endpoint, value, limit }));
    }
    figures
}

/// Out only when the interval lies wholly past the limit; inside when the figure is within it and bounded.
fn standing(value: f64, interval: Option<Interval>, limit: f64) -> Standing {
    let Some(interval) = interval else { return Standing::Unsure };
    if interval.lo > limit {
        Standing::Out
    } else if value > limit || interval.hi.is_none() {
        Standing::Unsure
    } else {
        Standing::Inside
    }
}

#[cfg(test)]
mod tests {
    use hdrhistogram::serialization::{Serializer, V2Serializer};

    use super::*;
    use crate::metrics::new_histogram;
    use crate::model::{EndpointResult, LoadSummary};

    /// One hold at 100 req/s for 10 s whose requests took `ms` each (a tenth of them `slow_ms`), `errors` failed.
    fn hold(ms: &[(u64, u64)], errors: i64) -> RunResults {
        let mut h = new_histogram();
        for &(value, count) in ms {
            h.record_n(value * 1000, count).unwrap();
        }
        let mut bytes = Vec::new();
        V2Serializer::new().serialize(&h, &mut bytes).unwrap();
        let requests = h.len() as i64;
        let endpoint = |name: &str| EndpointResult {
            endpoint: name.to_owned(),
            requests,
            errors,
            histogram: bytes.clone(),
            ..EndpointResult::default()
        };
        RunResults {
            status: RunStatus::Finished,
            finished_at: chrono::DateTime::default(),
            validity_reasons: Vec::new(),
            load_summary: LoadSummary {
                model: "open".into(),
                target_rate: 100.0,
                achieved_rate: 100.0,
                schedule_lag_p99_us: 500,
                generator_cpu_pct: 10.0,
                machine_cores: Some(2),
                measured_secs: 10.0,
                ..LoadSummary::default()
            },
            endpoints: vec![endpoint(OVERALL_ENDPOINT), endpoint("GET /work")],
            timeline: Vec::new(),
        }
    }

    fn zone() -> AbsoluteGates {
        AbsoluteGates { max_p75_ms: Some(50.0), max_error_rate_pct: Some(1.0), ..AbsoluteGates::default() }
    }

    fn judged(holds: &[RunResults], last: bool) -> StepJudgement {
        let mut sample = StepSample::default();
        for h in holds {
            sample.add(h);
        }
        judge_step(&sample, &zone(), last)
    }

    #[test]
    fn a_step_well_inside_or_well_past_the_limit_is_decided_at_once() {
        let inside = judged(&[hold(&[(10, 1000)], 0)], false);
        assert_eq!(inside.verdict, Some(StepVerdict::Held), "{}", inside.reason);
        let out = judged(&[hold(&[(200, 1000)], 0)], false);
        assert_eq!(out.verdict, Some(StepVerdict::Left), "{}", out.reason);
        let breach = out.breach.unwrap();
        assert_eq!((breach.gate, breach.limit), (ZoneGate::P75, 50.0));
        assert!(out.reason.starts_with("left the zone: p75 of "), "{}", out.reason);
        let failing = judged(&[hold(&[(10, 1000)], 100)], false);
        assert_eq!(failing.breach.map(|b| b.gate), Some(ZoneGate::ErrorRate), "{}", failing.reason);
    }

    #[test]
    fn a_figure_past_its_limit_whose_interval_reaches_under_it_is_held_again_then_decided() {
        // p75 of 20 requests sits on the edge between 40 ms and 60 ms: past 50 ms, its interval reaching under.
        let edge = hold(&[(40, 14), (60, 6)], 0);
        let first = judged(std::slice::from_ref(&edge), false);
        assert_eq!(first.verdict, None, "{}", first.reason);
        let last = judged(&[edge.clone(), edge], true);
        assert_eq!(last.verdict, Some(StepVerdict::Left), "{}", last.reason);
        assert!(last.reason.contains("its interval still reached under the limit after 2 holds"), "{}", last.reason);
    }

    #[test]
    fn a_late_generator_is_invalid_and_dropped_arrivals_leave_the_zone() {
        let mut late = hold(&[(10, 1000)], 0);
        late.load_summary.schedule_lag_p99_us = 40_000;
        let judged_late = judged(&[late], false);
        assert_eq!(judged_late.verdict, Some(StepVerdict::Invalid), "{}", judged_late.reason);
        assert!(judged_late.reason.contains("schedule lag"), "{}", judged_late.reason);
        let mut dropping = hold(&[(10, 1000)], 0);
        dropping.load_summary.achieved_rate = 90.0;
        dropping.load_summary.dropped = 100;
        let judged_dropping = judged(&[dropping], false);
        assert_eq!(judged_dropping.breach.map(|b| b.gate), Some(ZoneGate::InFlight), "{}", judged_dropping.reason);
        let mut gone = hold(&[], 0);
        gone.status = RunStatus::Failed;
        assert_eq!(judged(&[gone], false).verdict, Some(StepVerdict::TargetFailed));
    }
}
