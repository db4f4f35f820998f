//! The zone's telemetry limits, judged per step: each `limits` bound of a scenario's telemetry source (CPU at
//! most 60 %) against the series' mean over the step's own holds, as the night's gate reads it over the
//! measured stages. A step past a bound leaves the zone on it at once: a mean over a window has no interval
//! to wait for, and the server's side past its ceiling is outside the zone however fast the answers still are.

use crate::analysis::TelemetryLimit;
use crate::model::{RunTelemetry, StepVerdict, ZoneBreach, ZoneGate};

use super::StepJudgement;

/// The bound farthest past its limit over the step's holds (each hold's mean of the series, averaged), if
/// any is; a series no hold could read is not held to its limits.
#[must_use]
pub fn telemetry_breach(holds: &[RunTelemetry], limits: &[TelemetryLimit]) -> Option<ZoneBreach> {
    let mut worst: Option<(f64, ZoneBreach)> = None;
    for limit in limits {
        let means: Vec<f64> = holds.iter().filter_map(|hold| series_mean(hold, limit)).collect();
        if means.is_empty() {
            continue;
        }
        let mean = means.iter().sum::<f64>() / means.len() as f64;
        let endpoint = format!("{} {}", limit.source, limit.series);
        let bounds = [(ZoneGate::TelemetryMax, limit.max), (ZoneGate::TelemetryMin, limit.min)];
        for (gate, bound) in bounds {
            let Some(bound) = bound else { continue };
            // How far past, as a ratio of the bound (a floor is past when the mean is under it).
            let past = match gate {
                ZoneGate::TelemetryMin if mean < bound => bound / mean.max(f64::MIN_POSITIVE),
                ZoneGate::TelemetryMax if mean > bound => mean / bound.max(f64::MIN_POSITIVE),
                _ => continue,
            };
            if worst.as_ref().is_none_or(|(farthest, _)| past > *farthest) {
                let breach = ZoneBreach { gate, endpoint: endpoint.clone(), value: mean, limit: bound };
                worst = Some((past, breach));
            }
        }
    }
    worst.map(|(_, breach)| breach)
}

fn series_mean(hold: &RunTelemetry, limit: &TelemetryLimit) -> Option<f64> {
    let source = hold.sources.iter().find(|s| s.name == limit.source)?;
    let series = source.series.iter().find(|s| s.name == limit.series)?;
    series.summary.map(|summary| summary.mean).filter(|mean| mean.is_finite())
}

/// The step's judgement with its telemetry: a bound passed leaves the zone at once (unless the requests
/// already left it, or the step says nothing of the target); otherwise the judgement stands.
#[must_use]
pub fn with_telemetry(judgement: StepJudgement, breach: Option<ZoneBreach>) -> StepJudgement {
    let Some(breach) = breach else { return judgement };
    match judgement.verdict {
        Some(StepVerdict::Left | StepVerdict::Invalid | StepVerdict::TargetFailed) => judgement,
        Some(StepVerdict::Held) | None => StepJudgement {
            verdict: Some(StepVerdict::Left),
            reason: format!("left the zone: {}", breach.describe()),
            breach: Some(breach),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{SeriesKind, SeriesSummary, SeriesTelemetry, SourceTelemetry, TelemetryStatus, Worse};

    fn hold(cpu: f64) -> RunTelemetry {
        let series = SeriesTelemetry {
            name: "CPU".into(),
            unit: "share".into(),
            count_unit: None,
            kind: SeriesKind::Gauge,
            worse: Worse::Higher,
            status: TelemetryStatus::Complete,
            reason: None,
            points: Vec::new(),
            summary: Some(SeriesSummary { mean: cpu, max: cpu, per_1000_requests: None }),
        };
        let source = SourceTelemetry {
            name: "api-host".into(),
            status: TelemetryStatus::Complete,
            reason: None,
            scrapes: 3,
            failed_scrapes: 0,
            series: vec![series],
        };
        RunTelemetry { sources: vec![source] }
    }

    fn cpu_limit() -> TelemetryLimit {
        TelemetryLimit { source: "api-host".into(), series: "CPU".into(), max: Some(0.6), min: None }
    }

    #[test]
    fn a_step_whose_mean_passes_a_bound_leaves_the_zone_on_it() {
        let breach = telemetry_breach(&[hold(0.7), hold(0.8)], &[cpu_limit()]).unwrap();
        assert_eq!(
            (breach.gate, breach.endpoint.as_str(), breach.limit),
            (ZoneGate::TelemetryMax, "api-host CPU", 0.6)
        );
        assert!((breach.value - 0.75).abs() < 1e-9);
        let held = StepJudgement { verdict: Some(StepVerdict::Held), breach: None, reason: "inside the zone".into() };
        let judged = with_telemetry(held, Some(breach));
        assert_eq!(judged.verdict, Some(StepVerdict::Left));
        assert!(
            judged.reason.starts_with("left the zone: api-host CPU mean 0.750 over its limit 0.600"),
            "{}",
            judged.reason
        );
    }

    #[test]
    fn a_mean_within_its_bounds_or_unread_leaves_the_judgement_as_it_was() {
        assert_eq!(telemetry_breach(&[hold(0.5)], &[cpu_limit()]), None);
        assert_eq!(telemetry_breach(&[RunTelemetry::default()], &[cpu_limit()]), None);
        let floor = TelemetryLimit { min: Some(0.9), max: None, ..cpu_limit() };
        assert_eq!(telemetry_breach(&[hold(0.5)], &[floor]).map(|b| b.gate), Some(ZoneGate::TelemetryMin));
        let invalid = StepJudgement { verdict: Some(StepVerdict::Invalid), breach: None, reason: "late".into() };
        let breach = telemetry_breach(&[hold(0.9)], &[cpu_limit()]);
        assert_eq!(with_telemetry(invalid, breach).verdict, Some(StepVerdict::Invalid));
    }
}
