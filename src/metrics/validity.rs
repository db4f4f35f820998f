//! Whether a run measured the build or the generator: a run whose generator fell behind is stored as
//! `invalid` with the reasons, kept and shown, but never used as a baseline and never alerted on.

use crate::model::LoadModel;

/// What the engine observed about its own delivery of the load.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadFacts {
    /// Open or closed.
    pub model: LoadModel,
    /// Planned arrivals per second over the measured stages (0 for closed).
    pub target_rate: f64,
    /// Sessions started per second over the measured stages.
    pub achieved_rate: f64,
    /// Planned arrivals over the measured stages (0 for closed).
    pub planned_arrivals: f64,
    /// Arrivals over the in-flight cap, never sent.
    pub dropped: u64,
    /// 99th percentile of dispatch − intended start, µs.
    pub schedule_lag_p99_us: u64,
    /// Generator CPU, percent of one core.
    pub cpu_pct: f64,
    /// Cores the generator could use.
    pub cores: usize,
    /// Why the run ended before its plan did (a feeder ran out, Ctrl-C), if it did.
    pub stopped_early: Option<String>,
    /// Measured requests this machine failed for want of file descriptors or ports (`local_limit`).
    pub local_limit_failures: u64,
    /// The process's open-files limit, when known: what `local_limit` failures most often ran into.
    pub open_files_limit: Option<u64>,
}

/// Where a run stops being trustworthy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Open model: achieved arrivals at least this share of the plan.
    pub min_rate_share: f64,
    /// Dropped arrivals at most this share of the plan.
    pub max_dropped_share: f64,
    /// Schedule-lag p99 at most this many µs: beyond it, the generator's own delay is a visible part of
    /// the response times it reports.
    pub max_schedule_lag_p99_us: u64,
    /// Generator CPU at most this share of its cores: a saturated generator delays its own timestamps.
    pub max_cpu_share: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Self { min_rate_share: 0.95, max_dropped_share: 0.001, max_schedule_lag_p99_us: 10_000, max_cpu_share: 0.9 }
    }
}

/// Every reason the run cannot be trusted; empty when it can.
#[must_use]
pub fn validity_reasons(facts: &LoadFacts, limits: &Limits) -> Vec<String> {
    let mut reasons = Vec::new();
    if let Some(why) = &facts.stopped_early {
        reasons.push(format!("the run ended early: {why}"));
    }
    if facts.model == LoadModel::Open && facts.target_rate > 0.0 {
        let share = facts.achieved_rate / facts.target_rate;
        if share < limits.min_rate_share {
            reasons.push(format!(
                "achieved {:.1} sessions/s of the planned {:.1} ({:.1} %; at least {:.0} % is needed)",
                facts.achieved_rate,
                facts.target_rate,
                share * 100.0,
                limits.min_rate_share * 100.0
            ));
        }
    }
    if facts.planned_arrivals > 0.0 && facts.dropped as f64 > facts.planned_arrivals * limits.max_dropped_share {
        reasons.push(format!(
            "{} arrivals were dropped at the in-flight cap ({:.2} % of the plan; at most {} % is allowed): raise \
             [load] max_in_flight, or the target is far slower than planned",
            facts.dropped,
            facts.dropped as f64 * 100.0 / facts.planned_arrivals,
            limits.max_dropped_share * 100.0
        ));
    }
    if facts.schedule_lag_p99_us > limits.max_schedule_lag_p99_us {
        reasons.push(format!(
            "schedule lag p99 was {:.1} ms (at most {:.1} ms is allowed): the generator sent requests late",
            facts.schedule_lag_p99_us as f64 / 1000.0,
            limits.max_schedule_lag_p99_us as f64 / 1000.0
        ));
    }
    if facts.local_limit_failures > 0 {
        // Any: each such failure is counted against the target, and the load it did not send is missing.
        let limit = facts.open_files_limit.map_or_else(String::new, |n| format!(" (its open-files limit is {n})"));
        reasons.push(format!(
            "{} requests failed inside the generator: this machine ran out of file descriptors, local ports or socket \
             buffers{limit}; raise `ulimit -n` (in a container, `--ulimit nofile=`) or lower [load] max_in_flight",
            facts.local_limit_failures
        ));
    }
    let cpu_limit = limits.max_cpu_share * facts.cores as f64 * 100.0;
    if facts.cpu_pct > cpu_limit {
        reasons.push(format!(
            "the generator used {:.0} % CPU of {} (limit {:.0} %): it was saturated",
            facts.cpu_pct,
            crate::model::counted(facts.cores, "core", "cores"),
            cpu_limit
        ));
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    fn healthy() -> LoadFacts {
        LoadFacts {
            model: LoadModel::Open,
            target_rate: 100.0,
            achieved_rate: 99.5,
            planned_arrivals: 6000.0,
            dropped: 0,
            schedule_lag_p99_us: 400,
            cpu_pct: 20.0,
            cores: 2,
            stopped_early: None,
            local_limit_failures: 0,
            open_files_limit: None,
        }
    }

    #[test]
    fn a_healthy_run_is_valid() {
        assert!(validity_reasons(&healthy(), &Limits::default()).is_empty());
    }

    #[test]
    fn each_failing_figure_gives_its_reason() {
        type Spoil = fn(&mut LoadFacts);
        let cases: [(Spoil, &str); 6] = [
            (|f| f.achieved_rate = 80.0, "achieved 80.0 sessions/s of the planned 100.0"),
            (|f| f.dropped = 7, "7 arrivals were dropped"),
            (|f| f.schedule_lag_p99_us = 25_000, "schedule lag p99 was 25.0 ms"),
            (|f| f.cpu_pct = 190.0, "190 % CPU of 2 cores"),
            (|f| f.stopped_early = Some("feeder `users` ran out".into()), "ended early: feeder `users` ran out"),
            (
                |f| (f.local_limit_failures, f.open_files_limit) = (1696, Some(1024)),
                "1696 requests failed inside the generator: this machine ran out of file descriptors, local ports or \
                 socket buffers (its open-files limit is 1024)",
            ),
        ];
        for (spoil, expected) in cases {
            let mut facts = healthy();
            spoil(&mut facts);
            let reasons = validity_reasons(&facts, &Limits::default());
            assert_eq!(reasons.len(), 1, "{reasons:?}");
            assert!(reasons[0].contains(expected), "{} lacks {expected}", reasons[0]);
        }
    }

    #[test]
    fn the_closed_model_has_no_rate_to_miss() {
        let facts = LoadFacts { model: LoadModel::Closed, target_rate: 0.0, planned_arrivals: 0.0, ..healthy() };
        assert!(validity_reasons(&facts, &Limits::default()).is_empty());
    }
}
