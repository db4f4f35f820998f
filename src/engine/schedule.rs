//! The open model's whole schedule: every planned arrival of every stage, numbered across the run, with its
//! planned time from the run's start.
//!
//! Arrival times come from the stage's rate curve: the k-th arrival is where the integral of the rate reaches
//! k + ½ (uniform) or the k-th point of a unit Poisson process (poisson), so a stage of N/s for T s plans
//! exactly N·T arrivals and a ramp plans its integral. The schedule is a pure function of the load and the seed,
//! computed the same way by every segment of a split night ([`Segment`]): each one walks the whole schedule and
//! keeps the arrivals it owns, so the segments' shares add up to the single machine's plan, bit for bit.

use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand_distr::{Distribution, Exp1};

use crate::model::Segment;
use crate::scenario::plan::{Arrivals, Load};
use crate::scenario::{Stage, StageShape};

/// One planned arrival.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Arrival {
    /// Its number across the whole plan (every segment numbers alike).
    pub number: u64,
    /// When it is due, from the run's start.
    pub at: Duration,
    /// Its stage's index.
    pub stage: usize,
    /// When its stage ends, from the run's start: past it, the stage's arrivals are never sent.
    pub stage_end: Duration,
    /// Whether its stage is measured.
    pub measure: bool,
}

/// The planned arrivals of an open-model load, in order, optionally only one segment's.
pub(super) struct Schedule<'a> {
    load: &'a Load,
    segment: Option<Segment>,
    rng: SmallRng,
    stage: usize,
    stage_start: Duration,
    clock: Option<ArrivalClock>,
    number: u64,
}

impl<'a> Schedule<'a> {
    /// The schedule of `load` under `seed`; with `segment`, only the arrivals that segment owns.
    pub(super) fn new(load: &'a Load, seed: u64, segment: Option<Segment>) -> Self {
        // The pacer's generator is separate from the sessions', so a session's choices do not depend on how
        // many arrivals came before it.
        let rng = SmallRng::seed_from_u64(seed.rotate_left(17) ^ 0x5eed);
        Self { load, segment, rng, stage: 0, stage_start: Duration::ZERO, clock: None, number: 0 }
    }

    fn next_planned(&mut self) -> Option<Arrival> {
        loop {
            let stage = self.load.stages.get(self.stage)?;
            let clock = match &mut self.clock {
                Some(clock) => clock,
                None => {
                    self.clock.insert(ArrivalClock::new(stage, self.load.arrivals, SmallRng::from_rng(&mut self.rng)))
                }
            };
            let stage_end = self.stage_start + stage.duration;
            if let Some(offset) = clock.next() {
                let number = self.number;
                self.number += 1;
                return Some(Arrival {
                    number,
                    at: self.stage_start + offset,
                    stage: self.stage,
                    stage_end,
                    measure: stage.measure,
                });
            }
            self.stage += 1;
            self.stage_start = stage_end;
            self.clock = None;
        }
    }
}

impl Iterator for Schedule<'_> {
    type Item = Arrival;

    fn next(&mut self) -> Option<Arrival> {
        loop {
            let arrival = self.next_planned()?;
            if self.segment.is_none_or(|s| s.owns(arrival.number)) {
                return Some(arrival);
            }
        }
    }
}

/// Arrival offsets within one open-model stage.
struct ArrivalClock {
    from: f64,
    slope: f64,
    length: f64,
    next: f64,
    poisson: Option<SmallRng>,
}

impl ArrivalClock {
    fn new(stage: &Stage, arrivals: Arrivals, rng: SmallRng) -> Self {
        let (from, to) = match stage.shape {
            StageShape::Rate { from, to } => (from, to),
            StageShape::Users(_) => (0.0, 0.0),
        };
        let length = stage.duration.as_secs_f64();
        let mut clock = Self { from, slope: (to - from) / length, length, next: 0.5, poisson: None };
        if arrivals == Arrivals::Poisson {
            let mut rng = rng;
            clock.next = Exp1.sample(&mut rng);
            clock.poisson = Some(rng);
        }
        clock
    }

    /// The time at which the rate's integral reaches `u`: the root of `slope/2·t² + from·t = u`, in the form
    /// that stays exact when the slope is 0.
    fn time_of(&self, u: f64) -> f64 {
        let discriminant = self.from * self.from + 2.0 * self.slope * u;
        if discriminant < 0.0 {
            return f64::INFINITY;
        }
        let denominator = self.from + discriminant.sqrt();
        if denominator <= 0.0 { f64::INFINITY } else { 2.0 * u / denominator }
    }
}

impl Iterator for ArrivalClock {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let t = self.time_of(self.next);
        if t.is_nan() || t >= self.length {
            return None;
        }
        self.next += match &mut self.poisson {
            Some(rng) => Exp1.sample(rng),
            None => 1.0,
        };
        Some(Duration::from_secs_f64(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LoadModel;

    fn stage(from: f64, to: f64, secs: u64) -> Stage {
        Stage { duration: Duration::from_secs(secs), shape: StageShape::Rate { from, to }, measure: true }
    }

    fn count(stage: &Stage, arrivals: Arrivals) -> usize {
        ArrivalClock::new(stage, arrivals, SmallRng::seed_from_u64(3)).count()
    }

    #[test]
    fn a_steady_stage_plans_rate_times_duration() {
        assert_eq!(count(&stage(200.0, 200.0, 4), Arrivals::Uniform), 800);
        let times: Vec<_> = ArrivalClock::new(&stage(2.0, 2.0, 2), Arrivals::Uniform, SmallRng::seed_from_u64(1))
            .map(|d| d.as_millis())
            .collect();
        assert_eq!(times, [250, 750, 1250, 1750]);
    }

    #[test]
    fn a_ramp_plans_its_integral_up_or_down() {
        assert_eq!(count(&stage(0.0, 100.0, 10), Arrivals::Uniform), 500);
        assert_eq!(count(&stage(100.0, 0.0, 10), Arrivals::Uniform), 500);
        assert_eq!(count(&stage(10.0, 30.0, 5), Arrivals::Uniform), 100);
    }

    #[test]
    fn poisson_arrivals_average_the_rate() {
        let n = count(&stage(1000.0, 1000.0, 10), Arrivals::Poisson);
        assert!((9_700..=10_300).contains(&n), "{n}");
    }

    fn random_load(rng: &mut SmallRng) -> Load {
        use rand::Rng;
        let stages = (0..rng.random_range(1..5))
            .map(|_| {
                let millis = rng.random_range(1..4_000);
                let from = if rng.random_bool(0.2) { 0.0 } else { rng.random_range(0.0..300.0) };
                let to = if rng.random_bool(0.5) { from } else { rng.random_range(0.0..300.0) };
                Stage {
                    duration: Duration::from_millis(millis),
                    shape: StageShape::Rate { from, to },
                    measure: rng.random_bool(0.7),
                }
            })
            .collect();
        let arrivals = if rng.random_bool(0.5) { Arrivals::Uniform } else { Arrivals::Poisson };
        Load { model: LoadModel::Open, stages, arrivals, max_in_flight: 1000 }
    }

    /// The property of a split night: for random stage lists, the union of the N segments' (arrival number,
    /// planned time) pairs is the single machine's schedule, bit for bit, each arrival in exactly one segment.
    #[test]
    fn segments_add_up_to_the_single_machine_plan_bit_for_bit() {
        let mut rng = SmallRng::seed_from_u64(46);
        for case in 0..400 {
            let load = random_load(&mut rng);
            let seed = rand::Rng::random(&mut rng);
            let count = rand::Rng::random_range(&mut rng, 1..8);
            let whole: Vec<(u64, u128)> =
                Schedule::new(&load, seed, None).map(|a| (a.number, a.at.as_nanos())).collect();
            let mut union: Vec<(u64, u128)> = (0..count)
                .flat_map(|k| Schedule::new(&load, seed, Some(Segment::new(k, count).unwrap())))
                .map(|a| (a.number, a.at.as_nanos()))
                .collect();
            union.sort_unstable();
            assert_eq!(union, whole, "case {case}: {count} segments of {load:?}");
        }
    }

    /// Closed model: at every step, the users the segments run add up to the plan's.
    #[test]
    fn closed_model_users_sum_to_the_plan_at_every_step() {
        let mut rng = SmallRng::seed_from_u64(7);
        for _ in 0..400 {
            let count = rand::Rng::random_range(&mut rng, 1..9);
            let users = rand::Rng::random_range(&mut rng, 0..5_000_u32);
            let segments: Vec<Segment> = (0..count).map(|k| Segment::new(k, count).unwrap()).collect();
            let running: u64 =
                segments.iter().map(|s| (0..u64::from(users)).filter(|&j| s.owns(j)).count() as u64).sum();
            assert_eq!(running, u64::from(users));
            let shared: u64 = segments.iter().map(|s| s.share(u64::from(users))).sum();
            assert_eq!(shared, u64::from(users));
        }
    }
}
