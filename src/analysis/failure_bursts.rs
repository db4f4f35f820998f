//! Failures read as bursts in a run's judgement: the bursts of the run's baseline nights (every endpoint's
//! failure counts, see `counts::bursts`) are given to every error-rate test before its p-value is taken. An
//! endpoint clean but for bursts then has its failures read as bursts only, not also as its rate's wobble
//! (`CountHistory::add_bursts`).

use std::collections::BTreeMap;

use super::counts::{Bursts, Count};
use super::evidence::{Draft, Evidence};
use crate::model::{EndpointResult, OVERALL_ENDPOINT};

/// Reads the bursts from the run's `baseline` nights and gives every error-rate draft its p-value with them.
pub(super) fn apply(drafts: &mut [Draft], baseline: &[Vec<EndpointResult>]) {
    let mut names: Vec<&str> = baseline.iter().flatten().map(|e| e.endpoint.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let nights: BTreeMap<&str, Vec<Count>> = names
        .into_iter()
        .filter(|name| *name != OVERALL_ENDPOINT)
        .map(|name| (name, failures_of(baseline, name)))
        .collect();
    let counts: Vec<Vec<u64>> = nights.values().map(|n| n.iter().map(|c| c.hits as u64).collect()).collect();
    let Some(bursts) = Bursts::from_counts(&counts) else { return };
    for d in drafts.iter_mut() {
        if let Evidence::Errors(e) = &mut d.evidence {
            // The run's own total is no endpoint's: it gets the bursts as they are.
            match nights.get(d.endpoint.as_str()) {
                Some(own) => e.history.add_bursts(bursts, own),
                None => e.history.bursts = Some(bursts),
            }
            e.p = e.history.p_at_least(e.errors, e.requests as f64);
        }
    }
}

/// `endpoint`'s failures on each baseline night it had requests (as `Sample` reads them: at most its requests).
fn failures_of(baseline: &[Vec<EndpointResult>], endpoint: &str) -> Vec<Count> {
    let nights = baseline.iter().filter_map(|run| run.iter().find(|e| e.endpoint == endpoint && e.requests > 0));
    nights.map(|e| Count { hits: e.errors.clamp(0, e.requests) as f64, trials: e.requests as f64 }).collect()
}
