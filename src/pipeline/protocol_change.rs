//! The note a verdict carries when tonight's requests went over another protocol than its baseline nights':
//! HTTP/2's multiplexed connection queues and fails differently from HTTP/1.1's pool, so a change in latency
//! may be the protocol's, not the build's. Editing `[target] protocol` starts a new series (the workload's hash
//! is the scenario's text), so this is `"auto"` negotiating otherwise: a load balancer that started or stopped
//! agreeing to `h2`.
//!
//! A note, not a reason to refuse the night: the night still measured the build as its users reach it, and
//! the note names the baseline nights concerned.

use crate::model::{Run, WireProtocol};

/// `; tonight's requests went over h2, baseline nights #3, #4 over http/1.1: …`, or nothing when every
/// baseline night went over tonight's protocol.
#[must_use]
pub fn protocol_note(tonight: &Run, baseline: &[Run]) -> String {
    let over = |run: &Run| run.load_summary.as_ref().map_or(WireProtocol::Http1, WireProtocol::of);
    let ours = over(tonight);
    let others: Vec<&Run> = baseline.iter().filter(|r| over(r) != ours).collect();
    let Some(first) = others.first() else { return String::new() };
    let ids: Vec<String> = others.iter().map(|r| format!("#{}", r.id)).collect();
    let nights = if ids.len() == 1 { "night" } else { "nights" };
    format!(
        "; tonight's requests went over {}, baseline {nights} {} over {}: a change in latency may be the \
         protocol's, not the build's",
        ours.as_str(),
        ids.join(", "),
        over(first).as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ConnectionReport, LoadSummary, RunStatus};

    /// Run `id` whose requests went over `wire` (`None`: stored before HTTP/2, so HTTP/1.1).
    fn night(id: i64, wire: Option<WireProtocol>) -> Run {
        let connection = wire.map(|negotiated| ConnectionReport {
            negotiated,
            connections_opened: 1,
            max_concurrent_streams: None,
            steps_only: false,
        });
        Run {
            id,
            scenario: "api".into(),
            build_id: None,
            status: RunStatus::Passed,
            started_at: chrono::DateTime::UNIX_EPOCH,
            finished_at: None,
            scenario_hash: "h".into(),
            seed: id,
            validity_reasons: Vec::new(),
            load_summary: Some(LoadSummary { connection, ..LoadSummary::default() }),
            failure_reason: None,
            segments: 1,
        }
    }

    #[test]
    fn a_night_over_another_protocol_than_its_baselines_says_so_and_names_them() {
        let baseline = [night(1, None), night(2, Some(WireProtocol::Http1)), night(3, Some(WireProtocol::H2))];
        assert_eq!(
            protocol_note(&night(4, Some(WireProtocol::H2)), &baseline),
            "; tonight's requests went over h2, baseline nights #1, #2 over http/1.1: a change in latency may be \
             the protocol's, not the build's"
        );
        assert_eq!(protocol_note(&night(4, None), &baseline[..2]), "", "all over HTTP/1.1, as before");
        let note = protocol_note(&night(4, Some(WireProtocol::H2)), &[night(3, Some(WireProtocol::H2c))]);
        assert!(note.contains("baseline night #3 over h2c"), "{note}");
    }
}
