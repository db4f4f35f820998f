//! Turns what the recorder holds into the stored results: per-endpoint figures, the overall row, the
//! timeline, the load summary and the run's validity.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::pacer::Interruption;
use super::recorder::{Recorded, Recorder};
use crate::metrics::{
    EndpointRecord, ErrorClass, Limits, LoadFacts, endpoint_result, target_failure, target_went_away, validity_reasons,
};
use crate::model::{EndpointResult, LoadSummary, OVERALL_ENDPOINT, RunResults, RunStatus, TimelinePoint};
use crate::scenario::Plan;

/// A finished run's numbers, ready to store.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// When the run started.
    pub started_at: DateTime<Utc>,
    /// Everything to store; `status` is `Finished`, `Invalid`, `Failed` (the target was not there) or `Aborted`.
    pub results: RunResults,
    /// Service times per endpoint (the overall row first): shown next to response times, never judged.
    pub service: Vec<ServiceTimes>,
}

/// Service-time figures of one endpoint: what the server alone took, blind to coordinated omission.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ServiceTimes {
    /// Step name or `(all)`.
    pub endpoint: String,
    /// Median, µs.
    pub p50_us: u64,
    /// 99th percentile, µs.
    pub p99_us: u64,
}

/// What the generator's CPU, and the machine's, did during the run.
#[derive(Debug, Clone, Copy)]
pub(super) struct GeneratorCpu {
    /// Time spent polling sessions and dispatching arrivals.
    pub busy: Duration,
    /// How the whole machine's CPU time was spent (Linux only).
    pub machine: Option<super::machine_load::MachineUse>,
    /// The loopback echo's round trips: how fast the machine itself was.
    pub echo: Option<super::echo_probe::EchoFigures>,
    /// What the target's HTTP/2 connections negotiated (not CPU, but measured beside the requests as it is).
    pub connection: Option<crate::model::ConnectionReport>,
}

/// Seconds of measured stages within the first `ran` of the run.
fn measured_secs(plan: &Plan, ran: Duration) -> f64 {
    let mut start = Duration::ZERO;
    let mut secs = 0.0;
    for stage in &plan.load.stages {
        let end = start + stage.duration;
        if stage.measure {
            secs += (end.min(ran).saturating_sub(start)).as_secs_f64();
        }
        start = end;
    }
    secs
}

/// The run's status and every reason it cannot be trusted: aborted when stopped, failed when the target was
/// not there (that reason first), invalid when the generator shaped the numbers, else finished.
fn status_and_reasons(
    facts: &LoadFacts,
    overall: &EndpointResult,
    timeline: &[TimelinePoint],
    paced_for: Duration,
    interruption: Option<&Interruption>,
) -> (RunStatus, Vec<String>) {
    let mut reasons = validity_reasons(facts, &Limits::default());
    // A stopped run is aborted whatever it met; its cut-off requests say nothing about the target.
    let stopped = matches!(interruption, Some(Interruption::Stopped));
    let target_failed = if stopped {
        None
    } else {
        target_failure(overall).or_else(|| target_went_away(timeline, paced_for.as_secs_f64()))
    };
    let status = match (stopped, &target_failed) {
        (true, _) => RunStatus::Aborted,
        (_, Some(_)) => RunStatus::Failed,
        _ if reasons.is_empty() => RunStatus::Finished,
        _ => RunStatus::Invalid,
    };
    // A down target is the reason that matters; the generator's own figures follow it.
    reasons.splice(0..0, target_failed);
    (status, reasons)
}

pub(super) fn measure(
    plan: &Plan,
    recorder: &Recorder,
    started_at: DateTime<Utc>,
    paced_for: Duration,
    wall: Duration,
    cpu: &GeneratorCpu,
    interruption: Option<&Interruption>,
) -> Measurement {
    let recorded = recorder.finish();
    let measured = measured_secs(plan, paced_for);
    let (endpoints, service) = endpoint_rows(plan, recorder.names(), &recorded.endpoints, measured);
    let facts = load_facts(plan, &recorded, measured, paced_for, wall, cpu, interruption);
    let (status, validity_reasons) =
        status_and_reasons(&facts, &endpoints[0], &recorded.timeline, paced_for, interruption);
    let results = RunResults {
        status,
        finished_at: started_at + wall,
        validity_reasons,
        load_summary: load_summary(plan, &facts, cpu, measured),
        endpoints,
        timeline: recorded.timeline,
    };
    Measurement { started_at, results, service }
}

/// Each endpoint that served requests, after the whole run's row (`(all)`), with its service times.
fn endpoint_rows(
    plan: &Plan,
    names: &[String],
    records: &[EndpointRecord],
    measured: f64,
) -> (Vec<EndpointResult>, Vec<ServiceTimes>) {
    let mut overall = EndpointRecord::default();
    let (mut endpoints, mut service) = (Vec::new(), Vec::new());
    // Pushes are the server's messages, not requests: counted on their own rows, left out of the whole run's.
    let pushes: Vec<usize> =
        plan.ws.iter().flat_map(|ws| ws.pushes.iter().map(|p| p.endpoint).chain([ws.other_pushes])).collect();
    for (index, (name, record)) in names.iter().zip(records).enumerate() {
        if record.requests > 0 {
            if !pushes.contains(&index) {
                overall.merge(record);
            }
            let mut result = endpoint_result(name, record, measured);
            hide_env_values(&mut result, &plan.env_values);
            endpoints.push(result);
            service.push(service_times(name, record));
        }
    }
    let mut whole_run = endpoint_result(OVERALL_ENDPOINT, &overall, measured);
    hide_env_values(&mut whole_run, &plan.env_values);
    endpoints.insert(0, whole_run);
    service.insert(0, service_times(OVERALL_ENDPOINT, &overall));
    (endpoints, service)
}

/// Hides in `result`'s error samples what the scenario read with `env("…")`: a server's debug page that
/// echoes the request's `Authorization` would otherwise store the token, show it on the run page and print it.
fn hide_env_values(result: &mut EndpointResult, hidden: &crate::secret::Hidden) {
    for samples in result.error_samples.values_mut() {
        for sample in samples.iter_mut() {
            *sample = hidden.hide(sample);
        }
    }
}

/// What the generator did against its plan, as the validity rules read it.
fn load_facts(
    plan: &Plan,
    recorded: &Recorded,
    measured: f64,
    paced_for: Duration,
    wall: Duration,
    cpu: &GeneratorCpu,
    interruption: Option<&Interruption>,
) -> LoadFacts {
    let lag = &recorded.schedule_lag;
    // A segment of a split night plans its share of the arrivals (within one of rate × time / N a stage).
    let share = plan.segment.map_or(1.0, |s| 1.0 / f64::from(s.count()));
    LoadFacts {
        model: plan.load.model,
        target_rate: plan.load.target_rate() * share,
        achieved_rate: if measured > 0.0 { recorded.sessions_measured as f64 / measured } else { 0.0 },
        planned_arrivals: plan.load.target_rate() * share * plan.load.measured_duration().as_secs_f64(),
        dropped: recorded.dropped_measured,
        schedule_lag_p99_us: if lag.is_empty() { 0 } else { lag.value_at_quantile(0.99) },
        cpu_pct: cpu.busy.as_secs_f64() * 100.0 / wall.as_secs_f64().max(1e-9),
        cores: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        local_limit_failures: recorded.endpoints.iter().map(|e| e.errors[ErrorClass::LocalLimit.index()]).sum(),
        open_files_limit: super::open_files_limit(),
        stopped_early: interruption.map(|i| match i {
            Interruption::Stopped => format!(
                "stopped after {:.1} s of the planned {:.0} s",
                paced_for.as_secs_f64(),
                plan.load.duration().as_secs_f64()
            ),
            Interruption::OutOfData => {
                format!("a `when_exhausted = \"stop\"` feeder ran out after {:.1} s", paced_for.as_secs_f64())
            }
        }),
    }
}

/// The load summary stored with the run: the generator's facts and the machine's.
fn load_summary(plan: &Plan, facts: &LoadFacts, cpu: &GeneratorCpu, measured: f64) -> LoadSummary {
    LoadSummary {
        model: plan.load.model.as_str().to_owned(),
        target_rate: facts.target_rate,
        achieved_rate: facts.achieved_rate,
        dropped: facts.dropped as i64,
        schedule_lag_p99_us: facts.schedule_lag_p99_us as i64,
        generator_cpu_pct: facts.cpu_pct,
        machine_cpu_busy_pct: cpu.machine.map(|m| m.busy_pct),
        machine_cpu_stolen_pct: cpu.machine.map(|m| m.stolen_pct),
        machine_cores: cpu.machine.map(|m| m.cores),
        machine_echo_p50_us: cpu.echo.map(|e| e.p50_us),
        machine_echo_p90_us: cpu.echo.map(|e| e.p90_us),
        measured_secs: measured,
        tape: plan.tape.as_ref().map(coverage),
        skew: Vec::new(),
        connection: cpu.connection,
    }
}

fn service_times(name: &str, record: &EndpointRecord) -> ServiceTimes {
    let h = &record.service;
    let at = |q: f64| if h.is_empty() { 0 } else { h.value_at_quantile(q) };
    ServiceTimes { endpoint: name.to_owned(), p50_us: at(0.5), p99_us: at(0.99) }
}

/// What the run page keeps of the tape replayed: its size, the realism report, its routes.
fn coverage(tape: &crate::scenario::TapeReplay) -> crate::model::TapeCoverage {
    let survey = &tape.survey;
    crate::model::TapeCoverage {
        file: tape.file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        digest: survey.digest.clone(),
        requests: survey.requests,
        distinct: survey.distinct,
        planned_requests: tape.planned_requests,
        realism: tape.realism(),
        routes: survey
            .routes
            .iter()
            .take(crate::scenario::MAX_TAPE_ROUTES)
            .map(|r| crate::model::RouteCoverage {
                route: r.key.clone(),
                requests: r.requests,
                distinct_ids: r.distinct_ids,
            })
            .collect(),
    }
}
