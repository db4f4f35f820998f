//! Failures read as bursts in a run's judgement: the bursts of the run's baseline nights (every endpoint's
//! failure counts, see `counts::bursts`) are given to every error-rate test before its p-value is taken.

use super::counts::Bursts;
use super::evidence::{Draft, Evidence};
use crate::model::{EndpointResult, OVERALL_ENDPOINT};

/// Reads the bursts from the run's `baseline` nights and gives every error-rate draft its p-value with them.
pub(super) fn apply(drafts: &mut [Draft], baseline: &[Vec<EndpointResult>]) {
    let mut names: Vec<&str> = baseline.iter().flatten().map(|e| e.endpoint.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let counts: Vec<Vec<u64>> = names
        .into_iter()
        .filter(|name| *name != OVERALL_ENDPOINT)
        .map(|name| {
            let nights = baseline.iter().filter_map(|run| run.iter().find(|e| e.endpoint == name && e.requests > 0));
            nights.map(|e| e.errors.max(0) as u64).collect()
        })
        .collect();
    let bursts = Bursts::from_counts(&counts);
    for d in drafts.iter_mut() {
        if let Evidence::Errors(e) = &mut d.evidence {
            e.history.bursts = bursts;
            e.p = e.history.p_at_least(e.errors, e.requests as f64);
        }
    }
}
