//! Confirmation reruns (`[scenario.gates] confirm`, on by default). A single slow night on a shared machine is
//! the commonest false alarm there is; degrade owns the load generator, so before anyone hears of a regression
//! it runs the same build again at once (no deploy) and judges that run against the same baseline. The night is
//! regressed only when at least one of the same endpoint × metric findings regresses again; otherwise the first
//! run is stored as `unconfirmed` (never alerted, never a baseline) and the rerun is the night's result. Either
//! way, what the rerun alone found is `unconfirmed` too: a finding seen once is not believed, whichever run saw it.

use std::collections::BTreeSet;

use crate::analysis::judge::{Judgement, Outcome, counted_findings, finding};
use crate::report::CheckReport;
use crate::store::{Finding, Run, RunId, RunStatus, Store, StoreError};

/// What a rerun made of a regression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmation {
    /// The run that was judged regressed first.
    pub first_run: RunId,
    /// The findings (endpoint, metric) that regressed in both runs; empty when the rerun did not reproduce it.
    pub reproduced: Vec<(String, String)>,
}

impl Confirmation {
    /// Whether the rerun reproduced the regression.
    #[must_use]
    pub fn confirmed(&self) -> bool {
        !self.reproduced.is_empty()
    }

    /// One line for people: what the rerun found.
    #[must_use]
    pub fn describe(&self, rerun: RunId) -> String {
        if self.confirmed() {
            let named: Vec<String> = self.reproduced.iter().map(|(e, m)| format!("{e} {m}")).collect();
            format!(
                "confirmed: run #{} was judged regressed, and rerun #{rerun} of the same build regressed again on {}",
                self.first_run,
                named.join(", ")
            )
        } else {
            format!(
                "not confirmed: run #{} was judged regressed, but rerun #{rerun} of the same build did not reproduce \
                 it, so run #{} is stored as unconfirmed (never alerted, never a baseline) and the rerun is the \
                 night's result",
                self.first_run, self.first_run
            )
        }
    }
}

fn worse(finding: &Finding) -> bool {
    finding.outcome == finding::REGRESSION || finding.outcome == finding::GATE_BREACHED
}

/// The endpoint × metric findings that regressed (or breached a gate).
fn regressions(findings: &[Finding]) -> BTreeSet<(String, String)> {
    findings.iter().filter(|f| worse(f)).map(|f| (f.endpoint.clone(), f.metric.clone())).collect()
}

/// Compares the first run's report with its rerun's.
#[must_use]
pub fn compare(first: &CheckReport, rerun: &CheckReport) -> Confirmation {
    let again = regressions(&rerun.findings);
    let reproduced = regressions(&first.findings).into_iter().filter(|f| again.contains(f)).collect();
    Confirmation { first_run: first.run_id, reproduced }
}

/// The statuses the first run and the rerun end with, given what the rerun found.
#[must_use]
pub fn statuses(confirmation: &Confirmation, rerun: &CheckReport) -> (RunStatus, Option<RunStatus>) {
    if confirmation.confirmed() {
        (RunStatus::Regressed, None)
    } else if rerun.findings.iter().any(|f| f.outcome == finding::UNCONFIRMED) {
        // The rerun regressed elsewhere: seen once, like the first run's findings, so not believed either; nor
        // is the run a baseline, whose figures it would skew.
        (RunStatus::Unconfirmed, Some(RunStatus::Unconfirmed))
    } else {
        (RunStatus::Unconfirmed, None)
    }
}

/// A rerun's judgement with only what the night's first run (`first_run`, with `first` its findings) also found
/// still counted: the rerun's other regressions and breached gates become `unconfirmed`, and the verdict is
/// regressed only when something was reproduced.
#[must_use]
pub fn only_what_reproduced(judgement: Judgement, first_run: RunId, first: &[Finding]) -> Judgement {
    if judgement.outcome != Outcome::Regressed {
        return judgement;
    }
    let before = regressions(first);
    let findings: Vec<Finding> = judgement
        .findings
        .into_iter()
        .map(|f| {
            if !worse(&f) || before.contains(&(f.endpoint.clone(), f.metric.clone())) {
                return f;
            }
            let reason = format!(
                "seen in this rerun only: run #{first_run}, the night's first run of the same build, did not \
                 regress here, so it is not blamed on the build; judged alone, {}",
                f.reason
            );
            Finding { outcome: finding::UNCONFIRMED.to_owned(), reason, ..f }
        })
        .collect();
    let outcome = if findings.iter().any(worse) { Outcome::Regressed } else { Outcome::Passed };
    let summary = counted_findings(outcome, &findings);
    Judgement { outcome, findings, summary }
}

/// What the store says about `run`'s confirmation, in words, with the other run of the pair: whether its rerun
/// confirmed it, or which run it was the rerun of.
pub async fn note(store: &Store, run: &Run) -> Result<Option<(String, RunId)>, StoreError> {
    if let Some(rerun) = store.rerun_of(run.id).await? {
        let text = if run.status == RunStatus::Unconfirmed {
            format!(
                "not confirmed: rerun #{rerun} of the same build did not reproduce this regression, so run #{} is \
                 stored as unconfirmed (never alerted, never a baseline)",
                run.id
            )
        } else {
            format!("confirmed by rerun #{rerun} of the same build")
        };
        return Ok(Some((text, rerun)));
    }
    let Some(first) = store.confirmed_by(run.id).await? else { return Ok(None) };
    let text = match store.find_run(first).await?.map(|r| r.status) {
        Some(RunStatus::Regressed) => format!("this run is the rerun that confirmed run #{first}'s regression"),
        _ => format!("this run is the rerun of run #{first}, whose regression it did not reproduce"),
    };
    Ok(Some((text, first)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(endpoint: &str, metric: &str, outcome: &str) -> Finding {
        Finding {
            endpoint: endpoint.into(),
            metric: metric.into(),
            outcome: outcome.into(),
            baseline_value: Some(1.0),
            candidate_value: 2.0,
            delta_pct: Some(100.0),
            limit: Some(1.1),
            interval: None,
            p_value: None,
            reason: "9.0 sigma above the level of 7 nights".into(),
        }
    }

    fn judged(findings: Vec<Finding>) -> Judgement {
        let summary = counted_findings(Outcome::Regressed, &findings);
        Judgement { outcome: Outcome::Regressed, findings, summary }
    }

    fn outcomes(judgement: &Judgement) -> Vec<&str> {
        judgement.findings.iter().map(|f| f.outcome.as_str()).collect()
    }

    #[test]
    fn what_the_rerun_alone_found_is_unconfirmed() {
        let first = [found("GET /a", "p95", finding::REGRESSION), found("GET /b", "p50", finding::REGRESSION)];
        let rerun = judged(vec![
            found("GET /a", "p95", finding::REGRESSION),
            found("GET /a", "p50", finding::REGRESSION),
            found("GET /c", "max_p95_ms", finding::GATE_BREACHED),
            found("GET /b", "p50", finding::NO_CHANGE),
        ]);
        let judged = only_what_reproduced(rerun, 7, &first);
        assert_eq!(judged.outcome, Outcome::Regressed);
        assert_eq!(outcomes(&judged), [finding::REGRESSION, finding::UNCONFIRMED, finding::UNCONFIRMED, "no_change"]);
        assert!(judged.findings[1].reason.starts_with("seen in this rerun only: run #7, the night's first run"));
        assert!(judged.findings[1].reason.ends_with("judged alone, 9.0 sigma above the level of 7 nights"));
        assert_eq!(judged.summary, "regressed: 1 regression, 2 not reproduced, 1 unchanged");
    }

    #[test]
    fn a_rerun_that_regressed_only_elsewhere_passes_and_stays_out_of_the_baseline() {
        let first = [found("GET /a", "p95", finding::REGRESSION)];
        let rerun = judged(vec![found("GET /b", "p95", finding::REGRESSION), found("GET /a", "p95", "no_change")]);
        let judged = only_what_reproduced(rerun, 7, &first);
        assert_eq!(judged.outcome, Outcome::Passed);
        assert_eq!(judged.summary, "passed: 1 not reproduced, 1 unchanged");
        let report = CheckReport {
            scenario: "shop".into(),
            run_id: 8,
            build_id: None,
            started_at: chrono::DateTime::UNIX_EPOCH,
            outcome: judged.outcome,
            summary: judged.summary,
            baseline_spec: "last-7d".into(),
            baseline: Vec::new(),
            left_out: Vec::new(),
            findings: judged.findings,
            confirmation: None,
        };
        let confirmation = Confirmation { first_run: 7, reproduced: Vec::new() };
        let ended = statuses(&confirmation, &report);
        assert_eq!(ended, (RunStatus::Unconfirmed, Some(RunStatus::Unconfirmed)));
    }

    #[test]
    fn a_verdict_that_did_not_regress_is_left_alone() {
        let passed = Judgement {
            outcome: Outcome::Inconclusive,
            findings: vec![found("GET /b", "p95", finding::EXCUSED)],
            summary: "inconclusive: …".into(),
        };
        assert_eq!(only_what_reproduced(passed.clone(), 7, &[]), passed);
    }
}
