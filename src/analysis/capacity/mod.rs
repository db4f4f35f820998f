//! The capacity search (`[scenario.capacity]` in `degrade.toml`): the highest open-model arrival rate a build
//! holds inside its zone, the scenario's absolute gates and its telemetry sources' limits. [`CapacitySearch`]
//! is the search as configured and its step plan; `search` decides the next rate from the steps so far, `zone`
//! judges one step on its own requests, with each percentile's interval, `telemetry_zone` on its telemetry
//! (each limit against the series' mean over the step's holds), and `trend` judges a night's capacity against the nights before
//! it. Pure: the pipeline runs the steps.

mod search;
mod telemetry_zone;
mod trend;
mod zone;

use std::time::Duration;

pub use search::{Next, Search};
pub use telemetry_zone::{telemetry_breach, telemetry_unread, with_telemetry};
pub use trend::{CAPACITY_METRIC, capacity_finding};
pub use zone::{StepJudgement, StepSample, judge_step};

/// The zone's name unless `zone_name` says otherwise: a capacity guide's green zone is the load a service
/// carries inside its limits.
pub const DEFAULT_ZONE_NAME: &str = "green";

/// How the climbing steps grow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Growth {
    /// Each step's rate is the last one's times this (`step_factor`, above 1).
    Factor(f64),
    /// Each step's rate is the last one's plus this many arrivals per second (`step_increment`).
    Increment(f64),
}

/// `[scenario.capacity]`, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacitySearch {
    /// The first step's rate, arrivals per second.
    pub start_rate: f64,
    /// How the rate climbs from step to step.
    pub growth: Growth,
    /// How long each step is held (one hold); a step whose intervals do not decide is held again.
    pub hold: Duration,
    /// The most holds of one step (the first included) before its point estimates decide.
    pub max_holds: u32,
    /// The highest rate ever sent: no open-ended ramp against someone's service.
    pub max_rate: f64,
    /// The longest the whole search may take; it stops before a step that could end past it.
    pub max_time: Duration,
    /// Bisection steps between the last rate held and the first that left the zone.
    pub refine_steps: u32,
    /// What the verdict and the alerts call the zone (`green`: "left the green zone").
    pub zone_name: String,
}

impl CapacitySearch {
    /// The rate after `rate` while climbing, never past the maximum.
    #[must_use]
    pub fn grow(&self, rate: f64) -> f64 {
        let next = match self.growth {
            Growth::Factor(factor) => rate * factor,
            Growth::Increment(step) => rate + step,
        };
        next.min(self.max_rate)
    }

    /// The climbing steps' rates, from the start rate up to the maximum rate.
    #[must_use]
    pub fn climb(&self) -> Vec<f64> {
        let mut rates = vec![self.start_rate.min(self.max_rate)];
        while let Some(&last) = rates.last()
            && last < self.max_rate
            && rates.len() < MAX_STEPS
        {
            rates.push(self.grow(last));
        }
        rates
    }

    /// The longest the search can take: every climbing and refining step held its most holds, capped by
    /// `max_time` (the engine's drain after each hold, up to the target's timeout, comes on top of a hold).
    #[must_use]
    pub fn worst_case(&self) -> Duration {
        let steps = self.climb().len() as u32 + self.refine_steps;
        (self.hold * self.max_holds).saturating_mul(steps).min(self.max_time)
    }

    /// `50 → 100 → 200 → 400 req/s (max_rate 400), then up to 3 refining steps; each step held 5s (up to 3
    /// holds); worst case 1m (max_time 10m)`.
    #[must_use]
    pub fn describe(&self) -> String {
        let climb: Vec<String> = self.climb().iter().map(|r| format!("{r:.0}")).collect();
        let secs = |d: Duration| humantime::format_duration(Duration::from_secs(d.as_secs())).to_string();
        format!(
            "{} req/s (max_rate {:.0}), then up to {} refining step(s); each step held {} (up to {} holds); worst \
             case {} (max_time {})",
            climb.join(" → "),
            self.max_rate,
            self.refine_steps,
            secs(self.hold),
            self.max_holds,
            secs(self.worst_case()),
            secs(self.max_time)
        )
    }
}

/// The highest rate a search may name: the engine's own ceiling on a plan (`scenario::plan::MAX_RATE`, a
/// layer above this one, which holds each step's plan to it again).
pub const MAX_SEARCH_RATE: f64 = 1_000_000.0;

/// The most climbing steps a search plans: a factor of 1.01 from 1 to a million would be ~1,400 steps, none
/// of them long enough to matter; the time limit ends a search far earlier anyway.
pub const MAX_STEPS: usize = 200;

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn search() -> CapacitySearch {
        CapacitySearch {
            start_rate: 50.0,
            growth: Growth::Factor(2.0),
            hold: Duration::from_secs(5),
            max_holds: 3,
            max_rate: 1000.0,
            max_time: Duration::from_mins(10),
            refine_steps: 3,
            zone_name: "green".to_owned(),
        }
    }

    #[test]
    fn the_climb_stops_at_the_maximum_rate_and_the_worst_case_counts_every_hold() {
        let search = search();
        assert_eq!(search.climb(), vec![50.0, 100.0, 200.0, 400.0, 800.0, 1000.0]);
        assert_eq!(search.worst_case(), Duration::from_secs((6 + 3) * 3 * 5));
        let by_step = CapacitySearch { growth: Growth::Increment(300.0), ..search.clone() };
        assert_eq!(by_step.climb(), vec![50.0, 350.0, 650.0, 950.0, 1000.0]);
        let short = CapacitySearch { max_time: Duration::from_mins(1), ..search };
        assert_eq!(short.worst_case(), Duration::from_mins(1));
        assert!(short.describe().starts_with("50 → 100 → 200 → 400 → 800 → 1000 req/s"), "{}", short.describe());
    }
}
