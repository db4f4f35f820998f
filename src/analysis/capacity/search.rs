//! Which rate the capacity search holds next: climb from the start rate until a step leaves the zone, then
//! bisect between the last rate held and the first that left it. A step the generator could not send ends the
//! search (the rates above it cannot be measured from here), and so does a target that was not there.

use super::CapacitySearch;
use crate::model::{SearchEnd, StepVerdict, ZoneBreach};

/// Refining stops once the bracket is narrower than this share of the rate held: finer than the night-to-night
/// noise of any capacity, so further steps would only spend time.
const FINEST_BRACKET: f64 = 0.01;

/// What the search does next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    /// Hold this rate, arrivals per second.
    Step(f64),
    /// The search is over.
    Done(SearchEnd),
}

/// The search's state: the highest rate held, the lowest that left the zone and why, and how it ended.
#[derive(Debug, Clone)]
pub struct Search {
    config: CapacitySearch,
    held: Option<f64>,
    left: Option<(f64, ZoneBreach)>,
    refined: u32,
    ended: Option<SearchEnd>,
}

impl Search {
    /// A search that has run no step yet.
    #[must_use]
    pub fn new(config: CapacitySearch) -> Self {
        Self { config, held: None, left: None, refined: 0, ended: None }
    }

    /// The highest rate held so far.
    #[must_use]
    pub fn held(&self) -> Option<f64> {
        self.held
    }

    /// The lowest rate that left the zone so far, and why.
    #[must_use]
    pub fn left(&self) -> Option<&(f64, ZoneBreach)> {
        self.left.as_ref()
    }

    /// The next rate to hold, or how the search ended.
    #[must_use]
    pub fn next(&self) -> Next {
        if let Some(end) = self.ended {
            return Next::Done(end);
        }
        match (self.held, &self.left) {
            (None, None) => Next::Step(self.config.start_rate.min(self.config.max_rate)),
            (None, Some(_)) => Next::Done(SearchEnd::LeftAtStart),
            (Some(held), None) if held >= self.config.max_rate => Next::Done(SearchEnd::MaxRateHeld),
            (Some(held), None) => Next::Step(self.config.grow(held)),
            (Some(held), Some((left, _))) => {
                let narrow = (left - held) <= held * FINEST_BRACKET;
                if self.refined >= self.config.refine_steps || narrow {
                    Next::Done(SearchEnd::Found)
                } else {
                    Next::Step(f64::midpoint(held, *left))
                }
            }
        }
    }

    /// Records what the zone made of the step at `rate`.
    pub fn record(&mut self, rate: f64, verdict: StepVerdict, breach: Option<ZoneBreach>) {
        if self.left.is_some() && self.held.is_some() {
            self.refined += 1;
        }
        match verdict {
            StepVerdict::Held => self.held = Some(self.held.map_or(rate, |h| h.max(rate))),
            StepVerdict::Left => {
                let lower = self.left.as_ref().is_none_or(|(left, _)| rate < *left);
                if lower && let Some(breach) = breach {
                    self.left = Some((rate, breach));
                }
            }
            StepVerdict::Invalid => self.ended = Some(SearchEnd::GeneratorLimit),
            StepVerdict::TargetFailed => self.ended = Some(SearchEnd::TargetFailed),
            // A bracket both of whose ends were read is a capacity measured, as when time runs out mid-refining.
            StepVerdict::Unread => {
                let bracketed = self.held.is_some() && self.left.is_some();
                self.ended = Some(if bracketed { SearchEnd::Found } else { SearchEnd::ZoneUnread });
            }
        }
    }

    /// Ends the search early (out of time, stopped); a bracketed capacity stands as found.
    pub fn end(&mut self, why: SearchEnd) {
        if self.ended.is_none() {
            let bracketed = self.held.is_some() && self.left.is_some() && why == SearchEnd::OutOfTime;
            self.ended = Some(if bracketed { SearchEnd::Found } else { why });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ZoneGate;

    fn breach() -> ZoneBreach {
        ZoneBreach { gate: ZoneGate::P75, endpoint: "(all)".into(), value: 80.0, limit: 50.0 }
    }

    /// Runs the search against a target whose zone ends at `knee`.
    fn against(knee: f64, config: CapacitySearch) -> (Search, Vec<f64>) {
        let mut search = Search::new(config);
        let mut rates = Vec::new();
        while let Next::Step(rate) = search.next() {
            rates.push(rate);
            let (verdict, why) =
                if rate <= knee { (StepVerdict::Held, None) } else { (StepVerdict::Left, Some(breach())) };
            search.record(rate, verdict, why);
            assert!(rates.len() < 50, "the search ends");
        }
        (search, rates)
    }

    #[test]
    fn it_climbs_to_the_first_step_out_then_bisects_towards_the_knee() {
        let (search, rates) = against(730.0, super::super::tests::search());
        assert_eq!(rates, vec![50.0, 100.0, 200.0, 400.0, 800.0, 600.0, 700.0, 750.0]);
        assert_eq!(search.next(), Next::Done(SearchEnd::Found));
        assert_eq!(search.held(), Some(700.0));
        assert_eq!(search.left().map(|l| l.0), Some(750.0));
    }

    #[test]
    fn a_target_above_the_maximum_and_one_out_at_the_start_say_so() {
        let (search, rates) = against(5000.0, super::super::tests::search());
        assert_eq!(rates.last(), Some(&1000.0));
        assert_eq!(search.next(), Next::Done(SearchEnd::MaxRateHeld));
        let (search, rates) = against(10.0, super::super::tests::search());
        assert_eq!(rates, vec![50.0]);
        assert_eq!(search.next(), Next::Done(SearchEnd::LeftAtStart));
    }

    #[test]
    fn an_invalid_step_ends_the_search_without_blaming_the_target() {
        let mut search = Search::new(super::super::tests::search());
        search.record(50.0, StepVerdict::Held, None);
        search.record(100.0, StepVerdict::Invalid, None);
        assert_eq!(search.next(), Next::Done(SearchEnd::GeneratorLimit));
        assert_eq!(search.held(), Some(50.0));
        assert!(search.left().is_none());
    }

    #[test]
    fn an_unread_step_keeps_a_bracket_already_read_and_ends_a_climb() {
        let mut refining = Search::new(super::super::tests::search());
        refining.record(100.0, StepVerdict::Held, None);
        refining.record(200.0, StepVerdict::Left, Some(breach()));
        refining.record(150.0, StepVerdict::Unread, None);
        assert_eq!((refining.next(), refining.held()), (Next::Done(SearchEnd::Found), Some(100.0)));
        let mut climbing = Search::new(super::super::tests::search());
        climbing.record(50.0, StepVerdict::Held, None);
        climbing.record(100.0, StepVerdict::Unread, None);
        assert_eq!((climbing.next(), climbing.held()), (Next::Done(SearchEnd::ZoneUnread), Some(50.0)));
    }

    #[test]
    fn running_out_of_time_with_a_bracket_keeps_what_was_found() {
        let mut search = Search::new(super::super::tests::search());
        search.record(50.0, StepVerdict::Held, None);
        search.record(100.0, StepVerdict::Left, Some(breach()));
        search.end(SearchEnd::OutOfTime);
        assert_eq!(search.next(), Next::Done(SearchEnd::Found));
        let mut climbing = Search::new(super::super::tests::search());
        climbing.record(50.0, StepVerdict::Held, None);
        climbing.end(SearchEnd::OutOfTime);
        assert_eq!(climbing.next(), Next::Done(SearchEnd::OutOfTime));
    }
}
