//! Whether the target was there at all. A run in which the target could not be reached, or answered nothing
//! successfully, measured no build: refused connections are fast, so its percentiles would read as an
//! improvement and its spread would widen the noise of every night after it. So does a run whose target went
//! away part-way and never came back: a session whose first request is refused sends no other, so its share
//! of failed requests understates how long the target was gone, and the end of its timeline says it plainly.
//! Such a run is `failed`, with the reason, and never judged or used as a baseline. Error rates below these
//! lines are judged as usual, a target that failed for a while and came back included.

use std::collections::BTreeMap;

use super::ErrorClass;
use crate::model::{EndpointResult, TimelinePoint};

/// A target that answered nothing for the last this many seconds of a run, at the least, went away.
const GONE_FOR_AT_LEAST_S: i64 = 2;
/// ... and for at least this share of the run: a short run's last seconds are not its whole story.
const GONE_FOR_AT_LEAST_SHARE: f64 = 0.1;
/// ... and refused at least this many requests in that time: at a rate of one request in seconds, a lone
/// refusal at the end is a blip, not an outage.
const GONE_AFTER_AT_LEAST_REQUESTS: i64 = 3;

/// At least this share of requests failing in transport (no connection, no answer in time, the connection
/// cut) means the target was down or unreachable, not slower.
pub const MAX_TRANSPORT_FAILURE_SHARE: f64 = 0.5;

/// The transport failures: the request never got an HTTP answer (an HTTP/2 stream reset or left by GOAWAY
/// is HTTP/1.1's connection reset).
const TRANSPORT: [ErrorClass; 5] =
    [ErrorClass::Connect, ErrorClass::Timeout, ErrorClass::Reset, ErrorClass::StreamReset, ErrorClass::GoAway];
/// The generator's own: arrivals never sent, requests cut off at the end, requests this machine could not
/// make. Never the target's answers.
const GENERATORS: [ErrorClass; 3] = [ErrorClass::Dropped, ErrorClass::AbortedAtEnd, ErrorClass::LocalLimit];

/// Failures per class, as runs and timeline seconds count them.
type ByClass = BTreeMap<String, i64>;

/// How many failures of `classes` `by_class` counts.
fn failed(by_class: &ByClass, classes: &[ErrorClass]) -> i64 {
    classes.iter().map(|c| by_class.get(c.as_str()).copied().unwrap_or(0)).sum()
}

/// `150 connect, 3 reset`: the classes in `by_class` that failed and that `shown` keeps.
fn listed(by_class: &ByClass, shown: impl Fn(&str) -> bool) -> String {
    let counted = by_class.iter().filter(|(class, n)| **n > 0 && shown(class));
    counted.map(|(class, n)| format!("{n} {class}")).collect::<Vec<_>>().join(", ")
}

/// Whether `class` is one of `classes`.
fn among(classes: &[ErrorClass]) -> impl Fn(&str) -> bool + '_ {
    |class| classes.iter().any(|c| c.as_str() == class)
}

/// Why the run measured no build, judged from its whole-run figures (`overall`); `None` when the target
/// answered.
#[must_use]
pub fn target_failure(overall: &EndpointResult) -> Option<String> {
    let requests = overall.requests.max(0);
    if requests == 0 {
        return Some("no request was measured (the measured stages sent nothing)".to_owned());
    }
    let by_class = &overall.errors_by_class;
    let transport = failed(by_class, &TRANSPORT);
    let share = transport as f64 / requests as f64;
    if share >= MAX_TRANSPORT_FAILURE_SHARE {
        return Some(format!(
            "the target could not be reached: {transport} of {requests} requests ({:.1} %) got no answer ({}); \
             at least {:.0} % means the target was down, so the run measured no build",
            100.0 * share,
            listed(by_class, among(&TRANSPORT)),
            100.0 * MAX_TRANSPORT_FAILURE_SHARE
        ));
    }
    let ours = failed(by_class, &GENERATORS);
    let sent = requests - ours;
    if sent > 0 && overall.errors - ours >= sent {
        // Which failures, since some are the scenario's own checks on answers that came (an extraction that
        // found nothing, an assertion): a user must see whether the target or the scenario is at fault.
        return Some(format!(
            "none of the {sent} requests succeeded ({}), so the run measured no build",
            listed(by_class, |class| !among(&GENERATORS)(class))
        ));
    }
    None
}

/// Why the run measured no build for its last seconds, judged from its `timeline` (every endpoint's seconds,
/// `ran_s` seconds in all): the target stopped answering at some second, refused connections after it, and did
/// not answer again for at least [`GONE_FOR_AT_LEAST_S`] and [`GONE_FOR_AT_LEAST_SHARE`] of the run, failing
/// at least [`GONE_AFTER_AT_LEAST_REQUESTS`]; `None` when it answered on.
#[must_use]
pub fn target_went_away(timeline: &[TimelinePoint], ran_s: f64) -> Option<String> {
    let answered = |p: &TimelinePoint| {
        p.requests > failed(&p.errors_by_class, &TRANSPORT) + failed(&p.errors_by_class, &GENERATORS)
    };
    let last_answer = timeline.iter().filter(|p| answered(p)).map(|p| p.elapsed_s).max()?;
    let mut after = ByClass::new();
    for point in timeline.iter().filter(|p| p.elapsed_s > last_answer) {
        for class in TRANSPORT {
            *after.entry(class.as_str().to_owned()).or_default() += failed(&point.errors_by_class, &[class]);
        }
    }
    let unanswered = failed(&after, &TRANSPORT);
    let gone_s = ran_s - (last_answer + 1) as f64;
    // Refused: a target that only grew slower than the timeout was there, and its timeouts are judged.
    if failed(&after, &[ErrorClass::Connect]) == 0
        || unanswered < GONE_AFTER_AT_LEAST_REQUESTS
        || gone_s < GONE_FOR_AT_LEAST_S as f64
        || gone_s < GONE_FOR_AT_LEAST_SHARE * ran_s
    {
        return None;
    }
    Some(format!(
        "the target stopped answering {last_answer}–{} s into the {ran_s:.0} s run and did not come back: none of \
         the {unanswered} requests after that got an answer ({}), so the run measured no build for its last \
         {gone_s:.0} s",
        last_answer + 1,
        listed(&after, among(&TRANSPORT))
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn overall(requests: i64, errors: &[(ErrorClass, i64)]) -> EndpointResult {
        EndpointResult {
            requests,
            errors: errors.iter().map(|(_, n)| n).sum(),
            errors_by_class: errors.iter().map(|(c, n)| (c.as_str().to_owned(), *n)).collect::<BTreeMap<_, _>>(),
            ..EndpointResult::default()
        }
    }

    #[test]
    fn a_stopped_target_measured_no_build() {
        let why = target_failure(&overall(812, &[(ErrorClass::Connect, 790), (ErrorClass::Timeout, 22)])).unwrap();
        assert!(why.starts_with("the target could not be reached: 812 of 812 requests (100.0 %)"), "{why}");
        assert!(why.contains("(790 connect, 22 timeout)"), "{why}");
        let half = overall(1000, &[(ErrorClass::Reset, 500)]);
        assert!(target_failure(&half).is_some(), "half the requests unanswered is a down target");
    }

    fn second(elapsed_s: i64, requests: i64, errors: &[(ErrorClass, i64)]) -> TimelinePoint {
        TimelinePoint {
            endpoint: "GET /items".into(),
            elapsed_s,
            requests,
            errors: errors.iter().map(|(_, n)| n).sum(),
            errors_by_class: errors.iter().map(|(c, n)| (c.as_str().to_owned(), *n)).collect(),
            ..TimelinePoint::default()
        }
    }

    #[test]
    fn a_target_that_went_away_for_the_last_seconds_measured_no_build() {
        // Answered for 6 s of 10, then refused every request: 40 % of the run, whatever the request share.
        let mut timeline: Vec<TimelinePoint> = (0..6).map(|s| second(s, 100, &[])).collect();
        timeline.push(second(6, 50, &[(ErrorClass::Reset, 3), (ErrorClass::Connect, 10)]));
        timeline.push(second(6, 20, &[]));
        timeline.extend((7..10).map(|s| second(s, 50, &[(ErrorClass::Connect, 50)])));
        let why = target_went_away(&timeline, 10.0).unwrap();
        assert!(why.starts_with("the target stopped answering 6–7 s into the 10 s run and did not come back"), "{why}");
        assert!(why.contains("none of the 150 requests after that got an answer (150 connect)"), "{why}");
        assert!(why.ends_with("so the run measured no build for its last 3 s"), "{why}");
        // Gone for its last second only, or answering again at the end (an outage it came back from, judged
        // as errors): not a run without a build.
        assert_eq!(target_went_away(&timeline[..timeline.len() - 2], 8.0), None, "1 s is a blip");
        let lone = [second(0, 1, &[]), second(4, 1, &[(ErrorClass::Connect, 1)])];
        assert_eq!(target_went_away(&lone, 5.0), None, "one refusal at a slow rate is a blip");
        timeline.push(second(9, 30, &[]));
        assert_eq!(target_went_away(&timeline, 10.0), None, "it came back");
        // 5xx answers are answers.
        let failing: Vec<TimelinePoint> = (0..10).map(|s| second(s, 10, &[(ErrorClass::Http5xx, 10)])).collect();
        assert_eq!(target_went_away(&failing, 10.0), None);
        // A build that grew slower than the timeout was there: its timeouts are judged, not a missing target.
        let mut slower: Vec<TimelinePoint> = (0..6).map(|s| second(s, 100, &[])).collect();
        slower.extend((6..12).map(|s| second(s, 50, &[(ErrorClass::Timeout, 50)])));
        assert_eq!(target_went_away(&slower, 10.0), None);
        // Nor do the generator's own drops count as answers from a target that went away.
        let mut hung: Vec<TimelinePoint> = (0..6).map(|s| second(s, 100, &[])).collect();
        hung.extend((6..10).map(|s| second(s, 50, &[(ErrorClass::Connect, 20), (ErrorClass::Dropped, 30)])));
        assert!(target_went_away(&hung, 10.0).is_some());
    }

    #[test]
    fn failures_the_target_answered_are_judged_not_refused() {
        assert_eq!(target_failure(&overall(1000, &[(ErrorClass::Connect, 499)])), None);
        assert_eq!(target_failure(&overall(1000, &[(ErrorClass::Http5xx, 900)])), None, "a 90 % error rate is judged");
        let all_500 = target_failure(&overall(1000, &[(ErrorClass::Http5xx, 1000)])).unwrap();
        assert!(all_500.contains("none of the 1000 requests succeeded (1000 http_5xx)"), "{all_500}");
        let unextracted = target_failure(&overall(30, &[(ErrorClass::Extraction, 30)])).unwrap();
        assert!(unextracted.contains("(30 extraction)"), "the scenario's own check is named: {unextracted}");
        assert!(target_failure(&overall(0, &[])).unwrap().contains("no request was measured"));
        let cut_off = overall(10, &[(ErrorClass::AbortedAtEnd, 4), (ErrorClass::Dropped, 1)]);
        assert_eq!(target_failure(&cut_off), None, "the generator's own errors are not the target's");
    }
}
