//! Confirmation reruns (`[scenario.gates] confirm`, on by default). A single slow night on a shared machine is
//! the commonest false alarm there is; degrade owns the load generator, so before anyone hears of a regression
//! it runs the same build again at once (no deploy) and judges that run against the same baseline; the first run
//! is `confirming` meanwhile. The night is regressed only when at least one of the same endpoint × metric
//! findings regresses again; otherwise the first run is stored as `unconfirmed` (never alerted, never a
//! baseline) and the rerun is the night's result. Either
//! way, what the rerun alone found is `unconfirmed` too: a finding seen once is not believed, whichever run saw it.
//! Only a rerun that measured the build and did not reproduce the finding refutes it. A rerun that cannot be
//! judged (invalid, because a build that burns CPU starved the generator; or measured on a held-back
//! machine) neither confirms nor refutes: the runner tries again a few times, spaced, and when none can be
//! judged the first verdict stands, regressed and alerted, saying so. The first run's verdict already
//! carries the run-level false-alarm control; the rerun only lowers it further, and machine trouble must
//! never turn a regression into a pass (the worse a build burns CPU on a shared box, the likelier its rerun
//! is invalid).

mod note;

use std::collections::BTreeSet;

use crate::analysis::judge::{Judgement, counted_findings};
use crate::model::{Finding, FindingOutcome, RunId, RunStatus, VerdictOutcome};
use crate::report::CheckReport;
use crate::store::{Store, StoreError};

pub use note::note;

/// What a rerun made of a regression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rerun {
    /// These findings (endpoint, metric) regressed in both runs.
    Reproduced(Vec<(String, String)>),
    /// The rerun was judged, and none of the first run's findings regressed again.
    NotReproduced,
    /// The rerun's verdict is inconclusive (a held-back machine, an invalid run): it says nothing either way,
    /// and when no rerun says more, the first verdict stands.
    Undecided,
}

/// A rerun's word on the run it was asked to confirm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmation {
    /// The run that was judged regressed first.
    pub first_run: RunId,
    /// What the rerun made of it.
    pub rerun: Rerun,
}

impl Confirmation {
    /// Whether the rerun reproduced the regression.
    #[must_use]
    pub fn confirmed(&self) -> bool {
        matches!(self.rerun, Rerun::Reproduced(_))
    }

    /// One line for people: what the rerun found.
    #[must_use]
    pub fn describe(&self, rerun: RunId) -> String {
        let first = self.first_run;
        match &self.rerun {
            Rerun::Reproduced(reproduced) => {
                let named: Vec<String> = reproduced.iter().map(|(e, m)| format!("{e} {m}")).collect();
                format!(
                    "confirmed: run #{first} was judged regressed, and rerun #{rerun} of the same build regressed \
                     again on {}",
                    named.join(", ")
                )
            }
            Rerun::NotReproduced => format!(
                "not confirmed: run #{first} was judged regressed, but rerun #{rerun} of the same build did not \
                 reproduce it, so run #{first} is stored as unconfirmed (never alerted, never a baseline) and the \
                 rerun is the night's result"
            ),
            Rerun::Undecided => format!(
                "undecided: run #{first} was judged regressed, and rerun #{rerun} of the same build could not be \
                 judged, so it neither confirms nor refutes it; unless another rerun can be, run #{first}'s verdict \
                 stands"
            ),
        }
    }
}

/// The endpoint × metric findings that regressed (or breached a gate).
fn regressions(findings: &[Finding]) -> BTreeSet<(String, String)> {
    findings.iter().filter(|f| f.outcome.is_failure()).map(|f| (f.endpoint.clone(), f.metric.clone())).collect()
}

/// Compares the first run's report with its rerun's.
#[must_use]
pub fn compare(first: &CheckReport, rerun: &CheckReport) -> Confirmation {
    let again = regressions(&rerun.findings);
    let first_found = regressions(&first.findings);
    let reproduced: Vec<(String, String)> = first_found.iter().filter(|f| again.contains(*f)).cloned().collect();
    // A finding the rerun excused (its machine held back) was neither reproduced nor refuted: however the rest
    // of the rerun was judged, it cannot pass the night.
    let excused_again = rerun
        .findings
        .iter()
        .any(|f| f.outcome == FindingOutcome::Excused && first_found.contains(&(f.endpoint.clone(), f.metric.clone())));
    // A rerun inconclusive for its short baseline still judged the absolute gates, which need no baseline: where
    // the first run failed on gates alone and the rerun judged each of them, it measured what was found (the
    // demo's second night on a busy box breached a CPU ceiling once, its reruns stayed within it, and with the
    // reruns "undecided" the breach stood).
    let gates_judged =
        !first_found.is_empty()
            && first_found.iter().all(|(endpoint, metric)| {
                first.findings.iter().any(|f| {
                    (&f.endpoint, &f.metric) == (endpoint, metric) && f.outcome == FindingOutcome::GateBreached
                }) && rerun.findings.iter().any(|f| {
                    (&f.endpoint, &f.metric) == (endpoint, metric)
                        && matches!(f.outcome, FindingOutcome::GatePassed | FindingOutcome::GateBreached)
                })
            });
    let rerun = match (rerun.outcome, reproduced.is_empty()) {
        (VerdictOutcome::Inconclusive, _) if !gates_judged => Rerun::Undecided,
        (_, true) if excused_again => Rerun::Undecided,
        (_, true) => Rerun::NotReproduced,
        (_, false) => Rerun::Reproduced(reproduced),
    };
    Confirmation { first_run: first.run_id, rerun }
}

/// What a first run's report says when its rerun (`rerun`, if one was stored) measured nothing to judge.
#[must_use]
pub fn measured_nothing_note(rerun: Option<RunId>) -> String {
    match rerun {
        Some(rerun) => format!("rerun #{rerun} of the same build measured nothing to judge, so this verdict stands"),
        None => "the rerun of the same build could not be done, so this verdict stands".to_owned(),
    }
}

/// The build rerun `rerun` measured, when it is known and not `first`'s: a build deployed between the two runs,
/// which the rerun can neither confirm nor refute.
#[must_use]
pub fn other_build(first: &crate::model::Run, rerun: &crate::model::Run) -> Option<OtherBuild> {
    let (first_build, rerun_build) = (first.build_id.as_ref()?, rerun.build_id.as_ref()?);
    (first_build != rerun_build).then(|| OtherBuild {
        rerun: rerun.id,
        first_build: first_build.clone(),
        rerun_build: rerun_build.clone(),
    })
}

/// How the last rerun of a first run whose verdict stands ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LastRerun {
    /// It could not be judged either (it is the last of the undecided ones).
    Undecided,
    /// It measured nothing to judge (the rerun, if it was stored): cut short, failed, or never started.
    MeasuredNothing(Option<RunId>),
    /// It measured another build than the first run's: the build was deployed anew between the two.
    OtherBuild(OtherBuild),
}

/// A rerun that measured another build than its first run's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherBuild {
    /// The rerun.
    pub rerun: RunId,
    /// The build the first run measured.
    pub first_build: String,
    /// The build the rerun measured.
    pub rerun_build: String,
}

/// What a first run's report says when its verdict stands without a rerun to decide it: the `undecided`
/// reruns (each with why it could not be judged), then how the `last` ended. Only a rerun that measured the
/// build can refute a regression.
#[must_use]
pub fn stands_note(undecided: &[(RunId, String)], last: LastRerun) -> String {
    let named: Vec<String> = undecided.iter().map(|(id, _)| format!("#{id}")).collect();
    let why: Vec<String> = undecided.iter().map(|(id, why)| format!("#{id}: {why}")).collect();
    let reruns = if named.len() == 1 { format!("rerun {}", named[0]) } else { format!("reruns {}", named.join(", ")) };
    match last {
        LastRerun::MeasuredNothing(rerun) if undecided.is_empty() => measured_nothing_note(rerun),
        LastRerun::MeasuredNothing(rerun) => {
            format!("{}; {reruns} before it could not be judged ({})", measured_nothing_note(rerun), why.join("; "))
        }
        LastRerun::OtherBuild(OtherBuild { rerun, first_build: first, rerun_build: now }) => {
            let earlier = if undecided.is_empty() {
                String::new()
            } else {
                format!("; {reruns} before it could not be judged ({})", why.join("; "))
            };
            format!(
                "rerun #{rerun} measured build {now}, not {first}: the build changed after the first run, so the \
                 rerun can neither confirm nor refute it, and this verdict stands{earlier}"
            )
        }
        LastRerun::Undecided => format!(
            "the confirmation could not be made: {reruns} of the same build could not be judged ({}), and only a \
             rerun that measured the build can refute a regression, so this verdict stands",
            why.join("; ")
        ),
    }
}

/// How a judged rerun decides its pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// What the rerun made of the first run's regression.
    pub confirmation: Confirmation,
    /// The status the first run ends with.
    pub first: RunStatus,
    /// The rerun's status, when the decision changes it.
    pub rerun: Option<RunStatus>,
}

impl Decision {
    /// Compares the two reports, and puts what the rerun found in its report.
    #[must_use]
    pub fn of(first: &CheckReport, rerun: &mut CheckReport) -> Self {
        let confirmation = compare(first, rerun);
        let (first_status, rerun_status) = statuses(&confirmation, rerun);
        rerun.confirmation = Some(confirmation.describe(rerun.run_id));
        Self { confirmation, first: first_status, rerun: rerun_status }
    }

    /// Whether the rerun's report is the night's to alert: not when the rerun is not believed either, nor
    /// when it could not be judged (the first run's report is the night's then).
    #[must_use]
    pub fn alerted(&self) -> bool {
        self.rerun != Some(RunStatus::Unconfirmed) && self.confirmation.rerun != Rerun::Undecided
    }

    /// Stores both statuses in one transaction, if the first run is still `confirming`; false when another
    /// degrade had decided the pair already. Its alerts are stored first, so a kill between the two only
    /// makes the next degrade decide the pair again, and its alert, which says nothing new, too.
    /// The `earlier` reruns, which could not be judged, become `unconfirmed` with it (the night counts once).
    pub async fn store(
        &self,
        store: &Store,
        first: RunId,
        rerun: RunId,
        earlier: &[RunId],
    ) -> Result<bool, StoreError> {
        let mut reruns: Vec<(RunId, RunStatus)> = earlier.iter().map(|id| (*id, RunStatus::Unconfirmed)).collect();
        reruns.extend(self.rerun.map(|s| (rerun, s)));
        store.end_confirmation(first, self.first, &reruns).await
    }
}

/// The statuses the first run and the rerun end with, given what the rerun found.
#[must_use]
pub fn statuses(confirmation: &Confirmation, rerun: &CheckReport) -> (RunStatus, Option<RunStatus>) {
    match confirmation.rerun {
        Rerun::Reproduced(_) => (RunStatus::Regressed, None),
        // The rerun regressed elsewhere: seen once, like the first run's findings, so not believed either; nor
        // is the run a baseline, whose figures it would skew.
        Rerun::NotReproduced if rerun.findings.iter().any(|f| f.outcome == FindingOutcome::Unconfirmed) => {
            (RunStatus::Unconfirmed, Some(RunStatus::Unconfirmed))
        }
        Rerun::NotReproduced => (RunStatus::Unconfirmed, None),
        // The first verdict stands; a rerun that measured validly on a held-back machine is kept out of the
        // baselines (`unconfirmed`), so the night counts once, as its first run.
        Rerun::Undecided => (RunStatus::Regressed, Some(RunStatus::Unconfirmed)),
    }
}

/// A rerun's judgement with only what the night's first run (`first_run`, with `first` its findings) also found
/// still counted: the rerun's other regressions and breached gates become `unconfirmed`, and the verdict is
/// regressed only when something was reproduced.
#[must_use]
pub fn only_what_reproduced(judgement: Judgement, first_run: RunId, first: &[Finding]) -> Judgement {
    if judgement.outcome != VerdictOutcome::Regressed {
        return judgement;
    }
    let before = regressions(first);
    let findings: Vec<Finding> = judgement
        .findings
        .into_iter()
        .map(|f| {
            if !f.outcome.is_failure() || before.contains(&(f.endpoint.clone(), f.metric.clone())) {
                return f;
            }
            let reason = format!(
                "seen in this rerun only: run #{first_run}, the night's first run of the same build, did not \
                 regress here, so it is not blamed on the build; judged alone, {}",
                f.reason
            );
            Finding { outcome: FindingOutcome::Unconfirmed, reason, ..f }
        })
        .collect();
    let outcome = if findings.iter().any(|f| f.outcome.is_failure()) {
        VerdictOutcome::Regressed
    } else {
        VerdictOutcome::Passed
    };
    let summary = counted_findings(outcome, &findings);
    Judgement { outcome, findings, summary }
}

#[cfg(test)]
#[path = "confirm_tests.rs"]
mod tests;
