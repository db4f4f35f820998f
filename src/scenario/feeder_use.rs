//! Which `[[data]]` feeders each flow reads: a session draws a row only from the feeders its flow's templates
//! (and the target's headers) use, so the engine draws those alone and `validate` counts a feeder's sessions
//! by the weights of the flows that use it.

use super::plan::{Body, Plan, Step};
use super::template::Expr;
use super::ws_plan::{WsAction, WsPayload};

/// The feeders each flow's templates read, by flow index, so a session draws only the rows it uses.
#[must_use]
pub fn flow_feeders(plan: &Plan) -> Vec<Vec<usize>> {
    let target: Vec<&Expr> = plan.target.headers.iter().flat_map(|(_, t)| t.expressions()).collect();
    plan.flows
        .iter()
        .map(|flow| {
            let mut used: Vec<usize> = target
                .iter()
                .copied()
                .chain(flow.steps.iter().flat_map(step_expressions))
                .filter_map(|e| match e.source() {
                    Expr::Feeder { feeder, .. } => Some(*feeder),
                    _ => None,
                })
                .collect();
            used.sort_unstable();
            used.dedup();
            used
        })
        .collect()
}

fn step_expressions(step: &Step) -> Vec<&Expr> {
    let mut all: Vec<&Expr> = step.path.expressions().collect();
    all.extend(step.query.iter().flat_map(|(_, t)| t.expressions()));
    all.extend(step.headers.iter().flat_map(|(_, t)| t.expressions()));
    match &step.body {
        Some(Body::Json(t)) => all.extend(t.expressions()),
        Some(Body::Text(t)) => all.extend(t.expressions()),
        Some(Body::Proto(p)) => all.extend(p.json.expressions()),
        Some(Body::Bytes(_)) | None => {}
    }
    if let Some(WsAction::Send { payload, .. }) = &step.ws {
        match payload {
            WsPayload::Json(t) => all.extend(t.expressions()),
            WsPayload::Text(t) | WsPayload::Hex(t) | WsPayload::Base64(t) => all.extend(t.expressions()),
        }
    }
    all
}
