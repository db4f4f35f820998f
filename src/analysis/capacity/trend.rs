//! Whether tonight's capacity fell: against the median of the baseline nights' capacities, beyond their
//! night-to-night noise and the minimum effect.
//!
//! The noise is the nights' robust spread (1.4826 × the median absolute deviation of the log capacities), and
//! a fall counts only past 3.5 of them, as `contention/standout.rs` reads a route that stands out. Tonight's
//! own resolution counts too: the search brackets the capacity between the last rate held and the first that
//! left the zone, so the fall is measured from the bracket's top, the most the capacity can be.

use crate::analysis::Gates;
use crate::analysis::level::median;
use crate::model::{CapacityChange, CapacityResult, Finding, FindingOutcome, Metric, OVERALL_ENDPOINT, rate_text};

/// Robust spreads a fall must pass to be more than the nights' noise.
const SPREADS: f64 = 3.5;

/// The metric name of a capacity finding.
pub const CAPACITY_METRIC: &str = "capacity";

/// Judges tonight's capacity against the baseline nights' (those whose search found the target's capacity), in
/// the words of the zone named `zone` ("left the green zone on …").
#[must_use]
pub fn capacity_finding(tonight: &CapacityResult, before: &[CapacityResult], gates: &Gates, zone: &str) -> Finding {
    // A capacity is the highest rate held inside a zone: nights searched in another (a limit added, moved or
    // dropped since) measured something else. Searches stored before the zone was recorded count, unless a
    // recorded one shows the zone has changed since: then which zone they had is unknown.
    let changed = before.iter().any(|n| n.zone.is_some() && tonight.zone.is_some() && n.zone != tonight.zone);
    let same_zone = |night: &&CapacityResult| match (&night.zone, &tonight.zone) {
        (Some(then), Some(now)) => then == now,
        (None, Some(_)) => !changed,
        _ => true,
    };
    let other_zone: Vec<&str> = before.iter().filter(|n| !same_zone(n)).filter_map(|n| n.zone.as_deref()).collect();
    let capacities: Vec<f64> = before
        .iter()
        .filter(same_zone)
        .filter(|night| night.ended.measured_the_target())
        .filter_map(|night| night.capacity)
        .filter(|c| *c > 0.0)
        .collect();
    // A search whose start rate already left the zone is judged at that rate, an upper bound of its capacity.
    let (candidate, under) = tonight.rate_bound();
    // The whole run's, whichever endpoint left the zone (the reason names it): a confirmation rerun matches
    // findings by endpoint and metric, and the rerun's knee may show on another endpoint first.
    let mut finding = Finding {
        endpoint: OVERALL_ENDPOINT.to_owned(),
        metric: CAPACITY_METRIC.to_owned(),
        outcome: FindingOutcome::Inconclusive,
        baseline_value: None,
        candidate_value: candidate,
        delta_pct: None,
        limit: None,
        interval: None,
        p_value: None,
        reason: String::new(),
    };
    if capacities.len() < gates.min_runs as usize {
        let elsewhere = match (other_zone.is_empty(), &tonight.zone) {
            (false, Some(now)) => {
                let unknown = before.iter().filter(|n| n.zone.is_none()).count();
                let unknown = if unknown > 0 {
                    format!(" and {} before zones were recorded", crate::model::counted(unknown, "one", "others"))
                } else {
                    String::new()
                };
                format!(
                    " in this zone ({now}): {} searched {}{unknown}",
                    crate::model::counted(other_zone.len(), "baseline night", "baseline nights"),
                    other_zones(&other_zone)
                )
            }
            _ => String::new(),
        };
        finding.reason = format!(
            "{}; {} found a capacity{elsewhere}, {} needed to judge it",
            tonight.describe(),
            crate::model::counted(capacities.len(), "baseline night", "baseline nights"),
            crate::model::counted(gates.min_runs as usize, "is", "are")
        );
        return finding;
    }
    let level = median(&capacities);
    let logs: Vec<f64> = capacities.iter().map(|c| c.ln()).collect();
    let centre = median(&logs);
    let deviations: Vec<f64> = logs.iter().map(|l| (l - centre).abs()).collect();
    let spread = 1.4826 * median(&deviations);
    let min_effect = gates.min_effect_pct_of(Metric::Throughput) / 100.0;
    // The fall must pass both the noise and the minimum effect.
    let threshold = level * (1.0 - min_effect).min((-SPREADS * spread).exp());
    let top = tonight.first_out.unwrap_or(candidate).max(candidate);
    let change = CapacityChange::new(level, tonight, zone);
    finding.baseline_value = Some(level);
    finding.delta_pct = Some(change.delta_pct);
    finding.limit = Some(threshold);
    let (words, limit) = (change.describe(), rate_text(threshold));
    (finding.outcome, finding.reason) = if under && candidate >= threshold {
        // Under a rate the nights' noise allows says nothing of how far under.
        let reason =
            format!("{words}: under a rate within the nights' noise and min effect ({limit} req/s), so not judged");
        (FindingOutcome::Inconclusive, reason)
    } else if tonight.capacity.is_none() && !under {
        // Nothing measured (the target failed, the zone could not be read at the start rate): no rate to set
        // against the level, where "4,000 → 0 req/s (-100 %)" would read as a collapse.
        (FindingOutcome::Inconclusive, format!("{}: no capacity to judge", tonight.describe()))
    } else if !tonight.ended.measured_the_target() && candidate < threshold {
        let headline = change.headline();
        (FindingOutcome::Inconclusive, format!("{headline}, but {}: not the target's capacity", tonight.describe()))
    } else if tonight.ended.measured_the_target() && top < threshold {
        (FindingOutcome::Regression, format!("{words}; below {limit} req/s (the nights' noise and min effect)"))
    } else if candidate > level * (1.0 + min_effect).max((SPREADS * spread).exp()) {
        (FindingOutcome::Improvement, words)
    } else {
        (FindingOutcome::NoChange, format!("{words}; within the nights' noise and min effect"))
    };
    finding
}

/// The zones other nights searched, each with its count where there are several: `another (p75 ≤ 60 ms)`,
/// or `others: 1 in (app CPU ≤ 0.7), 3 in (app CPU ≤ 0.3)`.
fn other_zones(zones: &[&str]) -> String {
    let mut counted: Vec<(&str, usize)> = Vec::new();
    for zone in zones {
        match counted.iter_mut().find(|(z, _)| z == zone) {
            Some((_, count)) => *count += 1,
            None => counted.push((zone, 1)),
        }
    }
    if let [(zone, _)] = counted.as_slice() {
        return format!("another ({zone})");
    }
    let each: Vec<String> = counted.iter().map(|(zone, count)| format!("{count} in ({zone})")).collect();
    format!("others: {}", each.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{SearchEnd, ZoneBreach, ZoneGate};

    fn night(capacity: f64) -> CapacityResult {
        CapacityResult {
            capacity: Some(capacity),
            first_out: Some(capacity * 1.05),
            breach: Some(ZoneBreach {
                gate: ZoneGate::P75,
                endpoint: "POST /orders".into(),
                value: 412.0,
                limit: 300.0,
            }),
            ended: SearchEnd::Found,
            search_secs: 60.0,
            steps: Vec::new(),
            zone: None,
        }
    }

    fn nights() -> Vec<CapacityResult> {
        [3950.0, 4000.0, 4100.0, 3900.0, 4050.0, 4000.0].map(night).to_vec()
    }

    #[test]
    fn a_fall_past_noise_and_min_effect_is_a_regression_naming_why() {
        let finding = capacity_finding(&night(3100.0), &nights(), &Gates::default(), "green");
        assert_eq!(finding.outcome, FindingOutcome::Regression, "{}", finding.reason);
        assert!(
            finding
                .reason
                .starts_with("capacity 4,000 → 3,100 req/s (-22.5 %): left the green zone on p75 of POST /orders"),
            "{}",
            finding.reason
        );
    }

    #[test]
    fn a_start_rate_that_left_the_zone_is_a_fall_to_under_it_not_to_nothing() {
        let tonight =
            CapacityResult { capacity: None, first_out: Some(250.0), ended: SearchEnd::LeftAtStart, ..night(250.0) };
        let finding = capacity_finding(&tonight, &nights(), &Gates::default(), "green");
        assert_eq!(finding.outcome, FindingOutcome::Regression, "{}", finding.reason);
        assert!((finding.candidate_value - 250.0).abs() < 1e-9, "{finding:?}");
        assert!(
            finding.reason.starts_with("capacity 4,000 → under 250 req/s (÷16 or more): left"),
            "{}",
            finding.reason
        );
        // Under a rate the nights allow, it could be unchanged: not judged.
        let high_start = CapacityResult { first_out: Some(3900.0), ..tonight };
        let finding = capacity_finding(&high_start, &nights(), &Gates::default(), "green");
        assert_eq!(finding.outcome, FindingOutcome::Inconclusive, "{}", finding.reason);
    }

    #[test]
    fn nights_searched_in_another_zone_are_no_baseline() {
        let zoned = |capacity, zone: &str| CapacityResult { zone: Some(zone.to_owned()), ..night(capacity) };
        let before: Vec<CapacityResult> =
            nights().into_iter().map(|n| zoned(n.capacity.unwrap(), "p75 ≤ 60 ms")).collect();
        // A CPU limit added tonight: the knee moves, and that is the zone's doing, not the build's.
        let tonight = zoned(2800.0, "p75 ≤ 60 ms; api CPU ≤ 0.12");
        let finding = capacity_finding(&tonight, &before, &Gates::default(), "green");
        assert_eq!(finding.outcome, FindingOutcome::Inconclusive, "{}", finding.reason);
        assert!(
            finding.reason.ends_with(
                "0 baseline nights found a capacity in this zone (p75 ≤ 60 ms; api CPU ≤ 0.12): 6 baseline nights \
                 searched another (p75 ≤ 60 ms), 5 are needed to judge it"
            ),
            "{}",
            finding.reason
        );
        // The same zone as the nights before, and nights stored before zones were recorded, are judged.
        assert_eq!(
            capacity_finding(&zoned(2800.0, "p75 ≤ 60 ms"), &before, &Gates::default(), "green").outcome,
            FindingOutcome::Regression
        );
        assert_eq!(
            capacity_finding(&tonight, &nights(), &Gates::default(), "green").outcome,
            FindingOutcome::Regression
        );
        // Nights of two other zones: each named, with its count.
        let mut two_zones = before.clone();
        for night in two_zones.iter_mut().take(2) {
            night.zone = Some("p75 ≤ 60 ms; api CPU ≤ 0.3".to_owned());
        }
        let finding = capacity_finding(&tonight, &two_zones, &Gates::default(), "green");
        assert!(
            finding.reason.ends_with(
                "6 baseline nights searched others: 2 in (p75 ≤ 60 ms; api CPU ≤ 0.3), 4 in (p75 ≤ 60 ms), 5 are \
                 needed to judge it"
            ),
            "{}",
            finding.reason
        );
        // Unrecorded nights beside ones that show the zone changed: which zone they had is unknown.
        let mixed: Vec<CapacityResult> = nights().into_iter().chain(before.iter().take(2).cloned()).collect();
        let finding = capacity_finding(&tonight, &mixed, &Gates::default(), "green");
        assert_eq!(finding.outcome, FindingOutcome::Inconclusive, "{}", finding.reason);
    }

    #[test]
    fn an_unchanged_night_and_a_small_fall_are_no_change() {
        for tonight in [3980.0, 3700.0] {
            let finding = capacity_finding(&night(tonight), &nights(), &Gates::default(), "green");
            assert_eq!(finding.outcome, FindingOutcome::NoChange, "{}", finding.reason);
        }
    }

    #[test]
    fn a_search_that_measured_nothing_is_no_fall_to_zero() {
        let unread = CapacityResult { capacity: None, first_out: None, ended: SearchEnd::ZoneUnread, ..night(0.0) };
        let finding = capacity_finding(&unread, &nights(), &Gates::default(), "green");
        assert_eq!(finding.outcome, FindingOutcome::Inconclusive);
        assert!(finding.reason.starts_with("no capacity measured (a telemetry limit"), "{}", finding.reason);
        assert!(!finding.reason.contains("-100"), "{}", finding.reason);
    }

    #[test]
    fn a_generator_limit_is_never_the_targets_fall_and_few_nights_are_inconclusive() {
        let limited = CapacityResult { ended: SearchEnd::GeneratorLimit, first_out: None, ..night(1000.0) };
        assert_eq!(
            capacity_finding(&limited, &nights(), &Gates::default(), "green").outcome,
            FindingOutcome::Inconclusive
        );
        assert_eq!(
            capacity_finding(&night(1000.0), &nights()[..3], &Gates::default(), "green").outcome,
            FindingOutcome::Inconclusive
        );
    }
}
