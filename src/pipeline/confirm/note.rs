//! A confirmation pair in words, read from the store: what the run page and `check` say of a run that had a
//! rerun, or was one (confirmed, not confirmed, undecided, being confirmed, or measured nothing).

use super::measured_nothing_note;
use crate::model::{Run, RunId, RunStatus, VerdictOutcome};
use crate::store::{Store, StoreError};

/// What the store says about `run`'s confirmation, in words, with the other run of the pair: whether its rerun
/// confirmed it, or which run it was the rerun of.
pub async fn note(store: &Store, run: &Run) -> Result<Option<(String, RunId)>, StoreError> {
    if let Some(rerun) = store.rerun_of(run.id).await? {
        let nothing = measured_nothing(store, rerun).await?;
        let other = another_build(store, run, rerun).await?;
        let text = match (run.status, undecided(store, rerun).await?) {
            (RunStatus::Confirming, _) => {
                format!("being confirmed: rerun #{rerun} of the same build decides whether this regression stands")
            }
            _ if nothing => measured_nothing_note(Some(rerun)),
            // It was never judged: "confirmed by rerun #18 of the same build" had read a redeploy as a confirmation.
            _ if other.is_some() => {
                let other = other.as_ref().expect("matched");
                format!(
                    "not confirmable: rerun #{rerun} measured build {}, not {} (the build changed after this run), so \
                     it neither confirms nor refutes this regression, and this verdict stands",
                    other.rerun_build, other.first_build
                )
            }
            (RunStatus::Regressed, true) => format!(
                "not confirmable: rerun #{rerun} of the same build could not be judged (the reruns before it neither), \
                 and only a rerun that measured the build can refute a regression, so this verdict stands"
            ),
            (RunStatus::Unconfirmed, true) => format!(
                "undecided: rerun #{rerun} of the same build could not be judged, so it neither confirms nor \
                 refutes this regression; run #{} is stored as unconfirmed (never alerted, never a baseline)",
                run.id
            ),
            (RunStatus::Unconfirmed, false) => format!(
                "not confirmed: rerun #{rerun} of the same build did not reproduce this regression, so run #{} is \
                 stored as unconfirmed (never alerted, never a baseline)",
                run.id
            ),
            _ => format!("confirmed by rerun #{rerun} of the same build"),
        };
        return Ok(Some((text, rerun)));
    }
    let Some(first) = store.confirmed_by(run.id).await? else { return Ok(None) };
    let nothing = measured_nothing(store, run.id).await?;
    let first_run = store.find_run(first).await?;
    let other = first_run.as_ref().and_then(|f| super::other_build(f, run));
    let text = match (first_run.map(|r| r.status), undecided(store, run.id).await?) {
        (Some(RunStatus::Confirming), _) => format!("this run is the rerun of run #{first}, not decided yet"),
        _ if other.is_some() => {
            let other = other.as_ref().expect("matched");
            format!(
                "this run is the rerun of run #{first} and measured build {}, not {}, so it neither confirms nor \
                 refutes that run's regression",
                other.rerun_build, other.first_build
            )
        }
        _ if nothing => {
            format!("this run is the rerun of run #{first} and measured nothing to judge, so that run's verdict stands")
        }
        (Some(RunStatus::Regressed), true) => {
            format!("this run is a rerun of run #{first} and could not be judged, so that run's verdict stands")
        }
        (Some(RunStatus::Regressed), false) => {
            format!("this run is the rerun that confirmed run #{first}'s regression")
        }
        (_, true) => format!(
            "this run is the rerun of run #{first} and could not be judged, so it neither confirms nor refutes \
             that run's regression"
        ),
        (_, false) => format!("this run is the rerun of run #{first}, whose regression it did not reproduce"),
    };
    Ok(Some((text, first)))
}

/// The other build rerun `rerun` of `first` measured, when it measured another.
async fn another_build(store: &Store, first: &Run, rerun: RunId) -> Result<Option<super::OtherBuild>, StoreError> {
    Ok(store.find_run(rerun).await?.and_then(|r| super::other_build(first, &r)))
}

/// Whether a rerun was cut short or could not be done, so the first verdict stands.
async fn measured_nothing(store: &Store, rerun: RunId) -> Result<bool, StoreError> {
    Ok(store.find_run(rerun).await?.is_some_and(|r| r.status.measured_nothing()))
}

/// Whether a rerun's verdict that decided the pair (its first: a later `check --run` of it stores another,
/// against another baseline, which decides nothing) is inconclusive, so it confirmed nothing either way.
async fn undecided(store: &Store, rerun: RunId) -> Result<bool, StoreError> {
    Ok(store.first_verdict(rerun).await?.is_some_and(|v| v.outcome == VerdictOutcome::Inconclusive))
}
