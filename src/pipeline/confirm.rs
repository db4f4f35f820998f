//! Confirmation reruns (`[scenario.gates] confirm`, on by default). A single slow night on a shared machine is
//! the commonest false alarm there is; degrade owns the load generator, so before anyone hears of a regression
//! it runs the same build again at once (no deploy) and judges that run against the same baseline. The night is
//! regressed only when at least one of the same endpoint × metric findings regresses again; otherwise the first
//! run is stored as `unconfirmed` (never alerted, never a baseline) and the rerun is the night's result.

use std::collections::BTreeSet;

use crate::analysis::judge::{Outcome, finding};
use crate::report::CheckReport;
use crate::store::{Run, RunId, RunStatus, Store, StoreError};

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

/// The endpoint × metric findings that regressed (or breached a gate) in a report.
fn regressions(report: &CheckReport) -> BTreeSet<(String, String)> {
    report
        .findings
        .iter()
        .filter(|f| f.outcome == finding::REGRESSION || f.outcome == finding::GATE_BREACHED)
        .map(|f| (f.endpoint.clone(), f.metric.clone()))
        .collect()
}

/// Compares the first run's report with its rerun's.
#[must_use]
pub fn compare(first: &CheckReport, rerun: &CheckReport) -> Confirmation {
    let again = regressions(rerun);
    let reproduced = regressions(first).into_iter().filter(|f| again.contains(f)).collect();
    Confirmation { first_run: first.run_id, reproduced }
}

/// The statuses the first run and the rerun end with, given what the rerun found.
#[must_use]
pub fn statuses(confirmation: &Confirmation, rerun: &CheckReport) -> (RunStatus, Option<RunStatus>) {
    if confirmation.confirmed() {
        (RunStatus::Regressed, None)
    } else if rerun.outcome == Outcome::Regressed {
        // The rerun regressed elsewhere: seen once, like the first run's findings, so not believed either.
        (RunStatus::Unconfirmed, Some(RunStatus::Unconfirmed))
    } else {
        (RunStatus::Unconfirmed, None)
    }
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
