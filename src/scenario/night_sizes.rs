//! What a night of a plan gives each endpoint to judge, before the first night: the requests it will send
//! there at the planned load (open model; a closed model's count depends on the target's speed), and which
//! percentiles that many requests can judge at all (`metrics::interval::requests_needed`: the fewest whose
//! 95 % interval has an upper end). A user sizes the night for the tails they care about instead of learning
//! it from a verdict's "too few to judge". The run page says the same of a measured night's own counts.

use super::plan::{Plan, StageShape};
use crate::metrics::interval::requests_needed;
use crate::model::LoadModel;

/// The percentiles the judge reads, with their quantile.
const PERCENTILES: [(&str, f64); 3] = [("p50", 0.50), ("p95", 0.95), ("p99", 0.99)];

/// One endpoint's night: its planned requests and what they can judge.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointNight {
    /// The metric key.
    pub endpoint: String,
    /// Requests a measured night plans for it, or a measured night sent it.
    pub requests: f64,
    /// Whether `requests` is a plan (`~52`) rather than a count.
    pub planned: bool,
    /// The percentiles that many requests can judge.
    pub judged: Vec<&'static str>,
    /// Of them, those the verdict judged by its tail (the share of requests past the baseline's tail), as that
    /// many requests cannot bound the percentile itself.
    pub by_share: Vec<&'static str>,
    /// The percentiles it cannot, with the requests each needs.
    pub short: Vec<(&'static str, u64)>,
}

impl EndpointNight {
    /// `POST /drafts: ~52 requests: p50 judged; p95 needs ~59, p99 ~299: raise its share of the load or the
    /// night's length`.
    #[must_use]
    pub fn describe(&self) -> String {
        // `p50 judged` beside `p95 needs ~73` must not read as a contradiction where the p99 was judged by its
        // tail's share (a trial: "65 requests: p50, p99 judged; p95 needs ~73").
        let named: Vec<String> = self
            .judged
            .iter()
            .map(|p| if self.by_share.contains(p) { format!("{p} (by its tail)") } else { (*p).to_owned() })
            .collect();
        let judged = if named.is_empty() { "nothing judged".to_owned() } else { named.join(", ") + " judged" };
        let about = if self.planned { "~" } else { "" };
        let count = crate::model::thousands(self.requests.round());
        let mut text = format!("{}: {about}{count} requests: {judged}", self.endpoint);
        if !self.short.is_empty() {
            let needs: Vec<String> = self
                .short
                .iter()
                .enumerate()
                .map(|(i, (p, n))| if i == 0 { format!("{p} needs ~{n}") } else { format!("{p} ~{n}") })
                .collect();
            text += &format!("; {}: raise its share of the load or the night's length", needs.join(", "));
        }
        text
    }
}

/// Each endpoint's planned night, in the plan's endpoint order; `None` for the closed model.
#[must_use]
pub fn endpoint_nights(plan: &Plan) -> Option<Vec<EndpointNight>> {
    if plan.load.model == LoadModel::Closed {
        return None;
    }
    let sessions: f64 = plan
        .load
        .stages
        .iter()
        .filter(|s| s.measure && matches!(s.shape, StageShape::Rate { .. }))
        .map(super::plan::Stage::planned_arrivals)
        .sum();
    let mut requests = vec![0.0; plan.endpoints.len()];
    // Endpoints without response times (WebSocket pushes and sends without an await, counted; closes, not even
    // counted) have no percentiles to judge.
    let mut timed = vec![plan.tape.is_some(); plan.endpoints.len()];
    for step in plan.flows.iter().flat_map(|f| &f.steps) {
        if let Some(slot) = timed.get_mut(step.endpoint) {
            *slot = step.ws.as_ref().is_none_or(super::ws_plan::WsAction::is_timed);
        }
    }
    if let Some((tape, routes)) = plan.tape.as_ref().and_then(|tape| tape.first_part.as_ref().map(|p| (tape, p))) {
        // The run replays the tape's start, whose mix is its own: counted from the tape.
        for (key, count) in routes {
            if let Some(slot) = requests.get_mut(tape.endpoint(key)) {
                *slot += *count as f64;
            }
        }
    } else if let Some(tape) = &plan.tape {
        // The tape's planned requests count the warm-up too (they reach the service); a night judges the
        // measured stages' only.
        let every: f64 = plan.load.stages.iter().map(super::plan::Stage::planned_arrivals).sum();
        let measured_share = if every > 0.0 { sessions / every } else { 0.0 };
        let planned = tape.planned_requests.unwrap_or(0.0) * measured_share;
        for route in &tape.survey.routes {
            let at = tape.endpoints.get(&route.key).copied().or(tape.other_routes);
            if let Some(slot) = at.and_then(|i| requests.get_mut(i)) {
                *slot += planned * route.requests as f64 / tape.survey.requests.max(1) as f64;
            }
        }
    } else {
        let weights: f64 = plan.flows.iter().map(|f| f64::from(f.weight)).sum();
        for flow in &plan.flows {
            let share = f64::from(flow.weight) / weights.max(1.0);
            for step in &flow.steps {
                if let Some(slot) = requests.get_mut(step.endpoint) {
                    *slot += sessions * share;
                }
            }
        }
    }
    Some(
        plan.endpoints
            .iter()
            .zip(requests)
            .zip(timed)
            .filter_map(|(endpoint, timed)| timed.then_some(endpoint))
            .map(|(endpoint, n)| EndpointNight { planned: true, ..night(endpoint, n) })
            .collect(),
    )
}

/// What a night of `requests` to `endpoint` can judge (a count, as measured).
#[must_use]
pub fn night(endpoint: &str, requests: f64) -> EndpointNight {
    judged_night(endpoint, requests, |_| false)
}

/// [`night`], for a night the judge has read: a percentile `verdict_judged` says it judged counts as judged
/// whatever the count (the share of requests past the baseline's tail judges a p99 its interval cannot bound).
#[must_use]
pub fn judged_night(endpoint: &str, requests: f64, verdict_judged: impl Fn(&str) -> bool) -> EndpointNight {
    let (mut judged, mut by_share, mut short) = (Vec::new(), Vec::new(), Vec::new());
    for (name, p) in PERCENTILES {
        let needed = requests_needed(p);
        if requests >= needed as f64 {
            judged.push(name);
        } else if verdict_judged(name) {
            judged.push(name);
            by_share.push(name);
        } else {
            short.push((name, needed));
        }
    }
    EndpointNight { endpoint: endpoint.to_owned(), requests, planned: false, judged, by_share, short }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thin_endpoint_says_what_its_tails_need() {
        let thin = EndpointNight { planned: true, ..night("POST /drafts", 52.0) };
        assert_eq!(thin.judged, ["p50"]);
        let said = thin.describe();
        assert!(said.starts_with("POST /drafts: ~52 requests: p50 judged; p95 needs ~"), "{said}");
        assert!(said.ends_with(": raise its share of the load or the night's length"), "{said}");
        assert_eq!(night("GET /a", 20_000.0).describe(), "GET /a: 20,000 requests: p50, p95, p99 judged");
        let tail_judged = judged_night("POST /drafts", 52.0, |p| p == "p99");
        assert_eq!(tail_judged.judged, ["p50", "p99"], "a verdict that judged the p99 by its tail judged it");
        assert!(
            tail_judged.describe().contains(": p50, p99 (by its tail) judged; p95 needs ~"),
            "{}",
            tail_judged.describe()
        );
    }
}
