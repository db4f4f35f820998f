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

/// The zone's limits whose source could not be read on any hold of the step (every scrape or query failed, as
/// when its exporter is down), in words with why (`api-host CPU busy (all 3 scrapes failed: …)`); `None` when
/// each limit's source answered on some hold. A source that answered but gave the series no value (no sample
/// matched, a counter read once) is not this: its limit is not held, as before.
#[must_use]
pub fn telemetry_unread(holds: &[RunTelemetry], limits: &[TelemetryLimit]) -> Option<String> {
    let mut unread: Vec<String> = Vec::new();
    for limit in limits {
        let answered = |hold: &RunTelemetry| {
            hold.sources.iter().any(|s| s.name == limit.source && s.scrapes > 0 && s.failed_scrapes < s.scrapes)
        };
        if holds.iter().any(|hold| series_mean(hold, limit).is_some() || answered(hold)) {
            continue;
        }
        let named = format!("{} {}", limit.source, limit.series);
        // The last hold's own words for it: the source's failure, or the series'.
        let source = holds.last().and_then(|hold| hold.sources.iter().find(|s| s.name == limit.source));
        let series = source.and_then(|s| s.series.iter().find(|series| series.name == limit.series));
        let why = series.and_then(|s| s.reason.clone()).or_else(|| source.and_then(|s| s.reason.clone()));
        let words = why.map_or(named.clone(), |why| format!("{named} ({})", crate::outside_text::clipped(&why, 160)));
        if !unread.contains(&words) {
            unread.push(words);
        }
    }
    (!unread.is_empty()).then(|| unread.join("; "))
}

fn series_mean(hold: &RunTelemetry, limit: &TelemetryLimit) -> Option<f64> {
    let source = hold.sources.iter().find(|s| s.name == limit.source)?;
    let series = source.series.iter().find(|s| s.name == limit.series)?;
    series.summary.map(|summary| summary.mean).filter(|mean| mean.is_finite())
}

/// The step's judgement with its telemetry: a bound passed leaves the zone at once (unless the requests
/// already left it, or the step says nothing of the target); a step whose requests held while a limit was not
/// read at all is unread (inside the zone is unknown: a dead exporter must not make a capacity); otherwise the
/// judgement stands.
#[must_use]
pub fn with_telemetry(judgement: StepJudgement, breach: Option<ZoneBreach>, unread: Option<String>) -> StepJudgement {
    let Some(breach) = breach else {
        return match (judgement.verdict, unread) {
            (Some(StepVerdict::Held), Some(unread)) => StepJudgement {
                verdict: Some(StepVerdict::Unread),
                reason: format!("its requests held, but the zone's {unread} could not be read: inside it is unknown"),
                breach: None,
            },
            _ => judgement,
        };
    };
    match judgement.verdict {
        Some(StepVerdict::Left | StepVerdict::Invalid | StepVerdict::TargetFailed | StepVerdict::Unread) => judgement,
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

    #[test]
    fn a_step_whose_limited_series_no_hold_read_is_unread_not_held() {
        let mut failed = hold(0.1);
        failed.sources[0].series[0].summary = None;
        failed.sources[0].failed_scrapes = 3;
        failed.sources[0].reason = Some("3 of 3 scrapes failed: connection refused".into());
        // A source that answered, its series valueless (no sample matched): not held, not unread.
        let mut valueless = hold(0.1);
        valueless.sources[0].series[0].summary = None;
        assert_eq!(telemetry_unread(&[valueless], &[cpu_limit()]), None);
        let unread = telemetry_unread(&[failed.clone(), failed.clone()], &[cpu_limit()]).unwrap();
        assert_eq!(unread, "api-host CPU (3 of 3 scrapes failed: connection refused)");
        assert_eq!(telemetry_unread(&[failed, hold(0.2)], &[cpu_limit()]), None, "one hold read it");
        let held = || StepJudgement { verdict: Some(StepVerdict::Held), breach: None, reason: "inside".into() };
        let judged = with_telemetry(held(), None, Some(unread.clone()));
        assert_eq!(judged.verdict, Some(StepVerdict::Unread));
        assert!(
            judged.reason.starts_with("its requests held, but the zone's api-host CPU (3 of 3"),
            "{}",
            judged.reason
        );
        let left = StepJudgement { verdict: Some(StepVerdict::Left), ..held() };
        assert_eq!(with_telemetry(left, None, Some(unread)).verdict, Some(StepVerdict::Left), "out on its requests");
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
        let judged = with_telemetry(held, Some(breach), None);
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
        assert_eq!(with_telemetry(invalid, breach, None).verdict, Some(StepVerdict::Invalid));
    }
}
