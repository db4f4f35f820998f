//! Whether the target was there at all. A run in which the target could not be reached, or answered nothing
//! successfully, measured no build: refused connections are fast, so its percentiles would read as an
//! improvement and its spread would widen the noise of every night after it. Such a run is `failed`, with the
//! reason, and never judged or used as a baseline. Error rates below this line are judged as usual.

use super::ErrorClass;
use crate::model::EndpointResult;

/// At least this share of requests failing in transport (no connection, no answer in time, the connection
/// cut) means the target was down or unreachable, not slower.
pub const MAX_TRANSPORT_FAILURE_SHARE: f64 = 0.5;

/// The transport failures: the request never got an HTTP answer.
const TRANSPORT: [ErrorClass; 3] = [ErrorClass::Connect, ErrorClass::Timeout, ErrorClass::Reset];

/// Why the run measured no build, judged from its whole-run figures (`overall`); `None` when the target
/// answered.
#[must_use]
pub fn target_failure(overall: &EndpointResult) -> Option<String> {
    let requests = overall.requests.max(0);
    if requests == 0 {
        return Some("no request was measured (the measured stages sent nothing)".to_owned());
    }
    let count = |class: ErrorClass| overall.errors_by_class.get(class.as_str()).copied().unwrap_or(0);
    let transport: i64 = TRANSPORT.iter().map(|&c| count(c)).sum();
    let share = transport as f64 / requests as f64;
    if share >= MAX_TRANSPORT_FAILURE_SHARE {
        let classes: Vec<String> =
            TRANSPORT.iter().filter(|&&c| count(c) > 0).map(|&c| format!("{} {}", count(c), c.as_str())).collect();
        return Some(format!(
            "the target could not be reached: {transport} of {requests} requests ({:.1} %) got no answer ({}); \
             at least {:.0} % means the target was down, so the run measured no build",
            100.0 * share,
            classes.join(", "),
            100.0 * MAX_TRANSPORT_FAILURE_SHARE
        ));
    }
    // Arrivals never sent and requests cut off at the end are the generator's, not the target's answers.
    let ours = count(ErrorClass::Dropped) + count(ErrorClass::AbortedAtEnd);
    let sent = requests - ours;
    if sent > 0 && overall.errors - ours >= sent {
        return Some(format!(
            "the target answered none of the {sent} requests successfully, so the run measured no build"
        ));
    }
    None
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

    #[test]
    fn failures_the_target_answered_are_judged_not_refused() {
        assert_eq!(target_failure(&overall(1000, &[(ErrorClass::Connect, 499)])), None);
        assert_eq!(target_failure(&overall(1000, &[(ErrorClass::Http5xx, 900)])), None, "a 90 % error rate is judged");
        let all_500 = target_failure(&overall(1000, &[(ErrorClass::Http5xx, 1000)])).unwrap();
        assert!(all_500.contains("answered none of the 1000 requests successfully"), "{all_500}");
        assert!(target_failure(&overall(0, &[])).unwrap().contains("no request was measured"));
        let cut_off = overall(10, &[(ErrorClass::AbortedAtEnd, 4), (ErrorClass::Dropped, 1)]);
        assert_eq!(target_failure(&cut_off), None, "the generator's own errors are not the target's");
    }
}
