//! What `validate` warns about a scenario's sockets before a night finds out: each session of a flow with a
//! WebSocket step holds a socket for its whole length, so by Little's law the open model holds about
//! rate × session length of them at once. More than `[load] max_in_flight` and arrivals are dropped; more than
//! one source address's ephemeral ports and connects fail.

use std::time::Duration;

use super::plan::{Flow, Load, StageShape, Think};
use crate::model::LoadModel;

/// Linux's default ephemeral port range (32768–60999), used where the machine's cannot be read.
const DEFAULT_EPHEMERAL_PORTS: u64 = 28_232;

/// The warnings for `flows` under `load`; `ports` is the number of ephemeral ports of one source address.
pub(super) fn warnings(flows: &[Flow], load: &Load, ports: u64) -> Vec<String> {
    let mut out = Vec::new();
    let sockets = planned_sockets(flows, load);
    if sockets == 0 {
        return out;
    }
    if load.model == LoadModel::Open && sockets > load.max_in_flight as u64 {
        out.push(format!(
            "each session holds its WebSocket for at least its think times, so about {sockets} sessions are planned \
             at once at the highest rate (Little's law), over [load] max_in_flight = {}: arrivals past it are \
             dropped and the run is invalid; raise max_in_flight or shorten the sessions",
            load.max_in_flight
        ));
    }
    if sockets > ports {
        out.push(format!(
            "about {sockets} WebSockets are planned at once, over the {ports} ephemeral ports of one source address: \
             connects past them fail; use fewer users or a shorter session"
        ));
    }
    out
}

/// The machine's ephemeral ports (`/proc/sys/net/ipv4/ip_local_port_range`), or Linux's default.
pub(super) fn ephemeral_ports() -> u64 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| {
            let mut bounds = text.split_whitespace().map(|n| n.parse::<u64>().ok());
            let (low, high) = (bounds.next()??, bounds.next()??);
            (high >= low).then(|| high - low + 1)
        })
        .unwrap_or(DEFAULT_EPHEMERAL_PORTS)
}

/// Sockets held at once at the plan's peak: the most users (closed model), or the highest rate times the
/// shortest length of a session that opens one (open model: its think times). 0 when no flow opens one.
fn planned_sockets(flows: &[Flow], load: &Load) -> u64 {
    let lengths: Vec<Duration> = flows
        .iter()
        .filter(|f| f.steps.iter().any(|s| s.ws.is_some()))
        .map(|f| f.steps.iter().filter_map(|s| s.think).map(least_think).sum())
        .collect();
    let Some(shortest) = lengths.iter().min() else { return 0 };
    let peak = |shape: &StageShape| match *shape {
        StageShape::Users(users) => f64::from(users),
        StageShape::Rate { from, to } => from.max(to) * shortest.as_secs_f64(),
    };
    load.stages.iter().map(|s| peak(&s.shape)).fold(0.0, f64::max).ceil() as u64
}

/// The shortest a think time usually is: a constant, the low bound, or a log-normal's median.
fn least_think(think: Think) -> Duration {
    match think {
        Think::Constant(d) | Think::Uniform(d, _) | Think::LogNormal { median: d, .. } => d,
    }
}
