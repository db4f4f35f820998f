//! Failures read as bursts in a run's judgement: the bursts of the run's baseline nights (every endpoint's
//! failure counts, see `counts::bursts`) are given to every error-rate test before its p-value is taken. An
//! endpoint clean but for bursts then has its rate's wobble read from its nights without failures, since its
//! failures are counted as bursts already (`counts::wobble_beside_bursts`).

use super::counts::{Bursts, Count, wobble_beside_bursts};
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
        .map(|name| failures_of(baseline, name).iter().map(|n| n.hits as u64).collect())
        .collect();
    let bursts = Bursts::from_counts(&counts);
    for d in drafts.iter_mut() {
        if let Evidence::Errors(e) = &mut d.evidence {
            if let Some(wobble) = wobble_beside_bursts(&failures_of(baseline, &d.endpoint)) {
                e.history.log_wobble_var = wobble;
            }
            e.history.bursts = bursts;
            e.p = e.history.p_at_least(e.errors, e.requests as f64);
        }
    }
}

/// `endpoint`'s failures on each baseline night it had requests.
fn failures_of(baseline: &[Vec<EndpointResult>], endpoint: &str) -> Vec<Count> {
    let nights = baseline.iter().filter_map(|run| run.iter().find(|e| e.endpoint == endpoint && e.requests > 0));
    nights.map(|e| Count { hits: e.errors.max(0) as f64, trials: e.requests as f64 }).collect()
}
