//! Runs a capacity search (`[scenario.capacity]`) after a night's stages: each step is the scenario's requests
//! in the open model at one rate, run by the engine on its own runtime like a night, judged against the zone on
//! its own requests (`analysis::capacity`), held again while its intervals cannot decide. The scenario's
//! telemetry sources are scraped through each hold as through a night, and a step whose series' mean passes
//! one of their `limits` (CPU at most 60 %) leaves the zone on it. The search never
//! starts a step that could end past its maximum time, and stops at once when degrade is stopped or the target
//! is not there. A hold the generator sent late is discarded and held afresh; when [`INVALID_TRIES`] in a row
//! were late, the step is invalid and the search ends there (the rates above it cannot be sent from here).

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;

use crate::analysis::AbsoluteGates;
use crate::analysis::capacity::{
    CapacitySearch, Next, Search, StepSample, judge_step, telemetry_breach, telemetry_unread, with_telemetry,
};
use crate::config::TelemetrySource;
use crate::engine;
use crate::model::{CapacityResult, CapacityStep, OVERALL_ENDPOINT, RunStatus, RunTelemetry, SearchEnd, StepVerdict};
use crate::scenario::Plan;
use crate::telemetry::{Completed, Watch, measured_windows};

/// Holds of one rate the generator may send late before the step is invalid and the search ends there.
const INVALID_TRIES: u32 = 3;

/// What a step came to: judged, or cut short.
enum Stepped {
    Judged(CapacityStep),
    Ended(SearchEnd),
}

/// The zone: the scenario's absolute gates, and its telemetry sources (their `limits`).
#[derive(Clone, Copy)]
pub struct Zone<'a> {
    /// `[scenario.gates]`' absolute limits.
    pub gates: &'a AbsoluteGates,
    /// `[[scenario.telemetry]]`, scraped through each hold.
    pub sources: &'a [TelemetrySource],
}

impl Zone<'_> {
    /// Every limit of the zone, in words and in a fixed order (`p75 ≤ 60 ms; errors ≤ 0.01 %; api CPU ≤ 0.12`):
    /// stored with each search, so a capacity is compared only with nights searched in the same zone.
    #[must_use]
    pub fn words(&self) -> String {
        let g = self.gates;
        let mut limits: Vec<String> = [("p75", g.max_p75_ms), ("p95", g.max_p95_ms), ("p99", g.max_p99_ms)]
            .into_iter()
            .filter_map(|(name, limit)| limit.map(|ms| format!("{name} ≤ {ms} ms")))
            .chain(g.max_error_rate_pct.map(|pct| format!("errors ≤ {pct} %")))
            .collect();
        let mut telemetry: Vec<String> = self
            .sources
            .iter()
            .flat_map(|s| &s.limits)
            .flat_map(|l| {
                let named = format!("{} {}", l.source, l.series);
                [l.min.map(|min| format!("{named} ≥ {min}")), l.max.map(|max| format!("{named} ≤ {max}"))]
            })
            .flatten()
            .collect();
        telemetry.sort();
        limits.extend(telemetry);
        if limits.is_empty() { "no limits".to_owned() } else { limits.join("; ") }
    }
}

/// Searches for the highest rate `plan`'s requests hold inside `zone`.
pub async fn search(
    plan: &Plan,
    config: &CapacitySearch,
    zone: Zone<'_>,
    stop: &watch::Receiver<bool>,
) -> CapacityResult {
    let started = Instant::now();
    let mut search = Search::new(config.clone());
    let mut steps = Vec::new();
    let end = loop {
        let rate = match search.next() {
            Next::Step(rate) => rate,
            Next::Done(end) => break end,
        };
        match step(plan, config, zone, rate, stop, started).await {
            Stepped::Judged(step) => {
                tracing::info!("capacity step {rate:.0} req/s: {}", step.reason);
                search.record(rate, step.verdict, step.breach.clone());
                steps.push(step);
            }
            Stepped::Ended(why) => search.end(why),
        }
    };
    let left = search.left().cloned();
    CapacityResult {
        capacity: search.held(),
        first_out: left.as_ref().map(|l| l.0),
        breach: left.map(|l| l.1),
        ended: end,
        search_secs: started.elapsed().as_secs_f64(),
        steps,
        zone: Some(zone.words()),
    }
}

/// Holds `rate` until the zone decides, or the search must end.
async fn step(
    plan: &Plan,
    config: &CapacitySearch,
    zone: Zone<'_>,
    rate: f64,
    stop: &watch::Receiver<bool>,
    started: Instant,
) -> Stepped {
    let mut sample = StepSample::default();
    let mut telemetry: Vec<RunTelemetry> = Vec::new();
    let limits: Vec<_> = zone.sources.iter().flat_map(|s| s.limits.iter().cloned()).collect();
    let step_plan = Arc::new(plan.at_rate(rate, config.hold));
    let windows = measured_windows(&step_plan);
    let mut discarded = 0;
    loop {
        if *stop.borrow() {
            return Stepped::Ended(SearchEnd::Stopped);
        }
        if started.elapsed() + config.hold > config.max_time {
            return Stepped::Ended(SearchEnd::OutOfTime);
        }
        // Scraped on this runtime while the engine runs on its own, as through a night's stages.
        let watch = Watch::start(zone.sources, &windows, std::time::Instant::now());
        let measurement = engine::run_apart(Arc::clone(&step_plan), stop.clone(), |_| {}).await;
        if let Some(watch) = watch {
            telemetry.push(watch.finish(completed(&measurement.results)).await);
        }
        if measurement.results.status == RunStatus::Aborted {
            return Stepped::Ended(SearchEnd::Stopped);
        }
        sample.add(&measurement.results);
        let judgement = judge_step(&sample, zone.gates, sample.holds() >= config.max_holds);
        let read = (telemetry_breach(&telemetry, &limits), telemetry_unread(&telemetry, &limits));
        let mut judgement = with_telemetry(judgement, read.0, read.1);
        if judgement.verdict == Some(StepVerdict::Invalid) && discarded < INVALID_TRIES - 1 {
            // A neighbour's burst on a shared machine makes one hold late; the generator's limit repeats.
            tracing::info!("capacity step {rate:.0} req/s: hold discarded, {}", judgement.reason);
            discarded += 1;
            sample = StepSample::default();
            telemetry.clear();
            continue;
        }
        if discarded > 0 {
            let holds = crate::model::counted(discarded as usize, "hold", "holds");
            judgement.reason += &format!(" ({holds} the generator sent late discarded first)");
        }
        let Some(verdict) = judgement.verdict else { continue };
        let (requests, errors, [p75_ms, p95_ms, p99_ms]) = sample.overall();
        return Stepped::Judged(CapacityStep {
            rate,
            achieved_rate: sample.achieved_rate(),
            holds: sample.holds(),
            verdict,
            requests,
            errors,
            p75_ms,
            p95_ms,
            p99_ms,
            breach: judgement.breach.filter(|_| verdict == StepVerdict::Left),
            reason: judgement.reason,
        });
    }
}

/// What a hold completed: the denominator of a counter's cost per 1,000 requests.
fn completed(results: &crate::model::RunResults) -> Completed {
    let requests = results.endpoints.iter().find(|e| e.endpoint == OVERALL_ENDPOINT).map_or(0, |e| e.requests);
    Completed { requests: u64::try_from(requests).unwrap_or(0), measured_secs: results.load_summary.measured_secs }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zone_reads_as_its_limits_in_a_fixed_order() {
        let text = "[[scenario]]\nname = \"checkout\"\nfile = \"checkout.toml\"\ntarget = \"http://127.0.0.1:1\"\n\
                    [scenario.gates]\nmax_p75_ms = 60\nmax_error_rate_pct = 0.5\n\
                    [[scenario.telemetry]]\nname = \"api-host\"\nkind = \"scrape\"\nurl = \"http://127.0.0.1:9/m\"\n\
                    exporter = \"node_exporter\"\nlimits = { iowait = { max = 0.2 }, \"CPU busy\" = { max = 0.6 } }\n";
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("checkout.toml"), "[[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"/\"\n")
            .unwrap();
        let config = crate::config::Config::parse_with_env(&dir.path().join("degrade.toml"), text, &|_| None);
        let scenario = config.unwrap().scenarios.remove(0);
        let zone = Zone { gates: &scenario.gates.absolute, sources: &scenario.telemetry };
        assert_eq!(zone.words(), "p75 ≤ 60 ms; errors ≤ 0.5 %; api-host CPU busy ≤ 0.6; api-host iowait ≤ 0.2");
        let none = crate::analysis::AbsoluteGates::default();
        assert_eq!(Zone { gates: &none, sources: &[] }.words(), "no limits");
    }
}
