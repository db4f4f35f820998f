//! `check --run-now --segment K/N`: one segment of a split night as the CI gate. Every segment sends its share;
//! the one that merges the night judges it. A night not measured as one (invalid, failed) is alerted once; a
//! judged night opens or resolves episodes as the runner's do; a regression the scenario confirms is rerun by
//! all N segments together under a derived run key (`pipeline::segments::confirm`), and the segment that
//! merges the rerun decides the pair and exits on it. The alerts due go out before each segment exits.

use std::sync::Arc;

use anyhow::Context;
use chrono::Utc;

use super::segment::{NotRun, SegmentArgs, SegmentRan};
use super::{Exit, print_stdout, undecided};
use crate::analysis::Gates;
use crate::config::Config;
use crate::model::{BaselineSpec, RunId, RunStatus, VerdictOutcome};
use crate::notify::Courier;
use crate::pipeline::Job;
use crate::pipeline::judge_run::{IfRegressed, judge_run};
use crate::pipeline::segments::{self, alert, confirm};
use crate::report::{CheckReport, Format};
use crate::store::Store;

/// What `check --run-now --segment` was asked: the job found and reshaped, its baseline, the split's flags.
#[allow(missing_docs, reason = "the field names say what they hold")]
pub(super) struct SplitCheck<'a> {
    pub job: Job,
    pub spec: BaselineSpec,
    pub flags: &'a SegmentArgs,
    pub build: Option<String>,
    pub format: Format,
    pub strict: bool,
}

/// Runs this segment's share of the night; see the module's header.
pub(super) async fn check_segment(store: &Store, config: &Config, args: SplitCheck<'_>) -> anyhow::Result<Exit> {
    let SplitCheck { job, spec, flags, build, format, strict } = args;
    let confirms = config.scenario(&job.name).map_or(Gates::default().confirm, |s| s.gates.confirm);
    let rerun = confirms.then(|| job.rerun_of(build.as_deref()));
    let scenario = job.name.clone();
    let ran = super::segment::run(store, job, flags, build, Some(spec.clone())).await?;
    // The segment that merged the night gives its scenario's lease back once the night is judged, or once its
    // rerun has decided it (`confirm_together`); a segment that did not merge it leaves that to the one that did.
    let merged_here = matches!(&ran, Ok(SegmentRan { merged: Some(_), .. }));
    // Not measured as one night: the split failed it, or the target was down. A night invalid only because a
    // segment's share fell behind is judged (inconclusive) like a single machine's invalid night.
    let night = match &ran {
        Ok(SegmentRan { run_id, merged: Some(night) })
            if night.status == RunStatus::Failed || (night.status == RunStatus::Invalid && night.split_fault) =>
        {
            Some(*run_id)
        }
        Err(NotRun::Invalid(run_id, _) | NotRun::Failed(run_id, _)) => *run_id,
        _ => None,
    };
    if let Some(run_id) = night
        && alert::after_unmeasured(store, config, run_id, Utc::now()).await?
    {
        deliver(store, config).await;
        release_if(merged_here, store, &scenario, flags).await;
        return unjudged(&ran, format, &scenario, strict);
    }
    let first = match &ran {
        Ok(SegmentRan { run_id, merged: Some(night) })
            if matches!(night.status, RunStatus::Finished | RunStatus::Invalid) =>
        {
            let merged = Merged { run_id: *run_id, confirms: rerun.is_some(), format, strict };
            if let Some(exit) = judge_merged(store, config, &spec, merged).await? {
                release_if(true, store, &scenario, flags).await;
                return Ok(exit);
            }
            *run_id
        }
        // A segment that did not merge: the night's rerun, if it has one, needs this segment too.
        Ok(SegmentRan { run_id, merged: None }) if rerun.is_some() => {
            let timeout = flags.barrier_timeout.unwrap_or(segments::DEFAULT_BARRIER_TIMEOUT);
            if confirm::wait_for_verdict(store, *run_id, timeout).await? != Some(RunStatus::Confirming) {
                return unjudged(&ran, format, &scenario, strict);
            }
            *run_id
        }
        _ => {
            release_if(merged_here, store, &scenario, flags).await;
            return unjudged(&ran, format, &scenario, strict);
        }
    };
    say!("run {first} is judged regressed: every segment reruns its share of the same build to confirm it");
    let rerun = rerun.context("a confirming night has its rerun")?;
    Box::pin(confirm_together(store, config, flags, rerun, first, spec, format)).await
}

/// Gives the split night's scenario lease back when `settled` (this segment merged the night and it is judged,
/// or its rerun decided); a failure to is logged, and the lease runs out by itself.
async fn release_if(settled: bool, store: &Store, scenario: &str, flags: &SegmentArgs) {
    if let (true, Some(key)) = (settled, flags.run_key.as_deref()) {
        segments::lease::release(store, scenario, key).await;
    }
}

/// The night this segment merged, and how its judgement is said.
struct Merged {
    run_id: RunId,
    /// Whether a regression is confirmed by a rerun of every segment.
    confirms: bool,
    format: Format,
    strict: bool,
}

/// Judges the night this segment merged: the exit when that decides it, `None` when a regression is to be
/// confirmed by every segment's rerun.
async fn judge_merged(
    store: &Store,
    config: &Config,
    spec: &BaselineSpec,
    night: Merged,
) -> anyhow::Result<Option<Exit>> {
    let Merged { run_id, confirms, format, strict } = night;
    let if_regressed = if confirms { IfRegressed::Confirm } else { IfRegressed::Stands };
    let run = store.find_run(run_id).await?.with_context(|| format!("run {run_id} vanished"))?;
    let report = judge_run(store, config, &run, spec, if_regressed, Utc::now()).await?;
    if report.outcome != VerdictOutcome::Regressed || !confirms {
        alert::after_judgement(store, config, &report, Utc::now()).await?;
        deliver(store, config).await;
        // Printed last: an error before it writes its own JUnit document, never a second one.
        print_stdout(&report.render(format))?;
        return Ok(Some(exit_on(report.outcome, strict)));
    }
    // A regression to confirm is reported once decided (one JSON or JUnit document, not two); people read the
    // first run's findings as they come.
    if format == Format::Human {
        print_stdout(&report.render(format))?;
    }
    Ok(None)
}

/// The exit of a segment that judged nothing itself (its share sent while another merges the night, the night
/// not run or not measured); with `--format junit` it still writes a report saying why, so a CI step that
/// publishes every segment's report finds one instead of an empty file. An invalid night is inconclusive, as a
/// single machine's is: 0, or 3 with `--strict` (a trial found 3 without it, against the manual).
fn unjudged(ran: &Result<SegmentRan, NotRun>, format: Format, scenario: &str, strict: bool) -> anyhow::Result<Exit> {
    let exit = match super::segment::exit(ran) {
        Exit::Inconclusive => undecided("the night could not be measured, so it is not judged", strict),
        other => other,
    };
    if format == Format::Junit {
        let why = match ran {
            Err(NotRun::Invalid(_, why) | NotRun::Failed(_, why) | NotRun::Taken(why) | NotRun::KeyReused(why)) => {
                crate::outside_text::printable(why)
            }
            Ok(SegmentRan { run_id, merged: Some(night) }) if night.reasons.is_empty() => {
                format!("run {run_id} ended {}", night.status)
            }
            Ok(SegmentRan { run_id, merged: Some(night) }) => {
                let why = crate::outside_text::printable(&night.reasons.join("; "));
                format!("run {run_id} ended {}: {why}", night.status)
            }
            Ok(SegmentRan { run_id, merged: None }) => {
                format!("this segment sent its share of run {run_id}; the segment that merges the night judges it")
            }
        };
        let document = match exit {
            Exit::Error => crate::report::junit_error(Some(scenario), &why),
            _ => crate::report::junit_skipped(Some(scenario), &why),
        };
        print_stdout(&document)?;
    }
    Ok(exit)
}

/// This segment's share of the rerun of night `first`, under the derived run key; the segment that merges the
/// rerun (or sees it end invalid) decides the pair and exits on it: 1 when the regression stands, else 0.
async fn confirm_together(
    store: &Store,
    config: &Config,
    flags: &SegmentArgs,
    mut job: Job,
    first: RunId,
    spec: BaselineSpec,
    format: Format,
) -> anyhow::Result<Exit> {
    let scenario = job.name.clone();
    job.confirms = Some(first);
    // The build is read again where the scenario has a version source (a deploy between the two runs is then
    // seen, and the decision says the rerun measured another build); else it is the first run's.
    let reads_its_build = job.scenario.as_ref().is_some_and(|s| s.build.version.is_some());
    let build = if reads_its_build { None } else { store.find_run(first).await?.and_then(|r| r.build_id) };
    let mut flags = flags.clone();
    flags.run_key = flags.run_key.as_deref().map(confirm::rerun_key);
    let ran = super::segment::run(store, job, &flags, build, Some(spec)).await?;
    if !matches!(&ran, Ok(SegmentRan { merged: Some(_), .. }) | Err(NotRun::Invalid(..) | NotRun::Failed(..))) {
        // Never an invalid night here (decided below), so `--strict` has nothing to change.
        return unjudged(&ran, format, &scenario, false);
    }
    if let Err(NotRun::Invalid(_, why) | NotRun::Failed(_, why)) = &ran {
        say!("{}", crate::outside_text::printable(why));
    }
    let at = Utc::now();
    let decided = crate::pipeline::interrupted::decide(store, config, first, at).await;
    // Decided here or by another segment: the night and its rerun are over.
    release_if(true, store, &scenario, &flags).await;
    let Some(result) = decided? else {
        let why = format!("run {first}'s confirmation was decided by another segment");
        say!("{why}");
        if format == Format::Junit {
            print_stdout(&crate::report::junit_skipped(Some(&scenario), &why))?;
        }
        return Ok(Exit::Ok);
    };
    // The night's alerts are the pair's, stored by the decision: the first run has nothing left to alert.
    store.mark_alerted(first, at).await?;
    deliver(store, config).await;
    let first_status = store.find_run(first).await?.map_or(RunStatus::Regressed, |r| r.status);
    // The rerun's own id: the night's result is the first run itself when the rerun could not be measured (a
    // trial read "its rerun by all segments is run 6" of run 6).
    let rerun = match first_status {
        RunStatus::Regressed => store.rerun_of(first).await?,
        _ => None,
    };
    print_decided(&result, first, format)?;
    if first_status == RunStatus::Regressed {
        let rerun = rerun.map_or_else(String::new, |id| format!(" (its rerun by all segments is run {id})"));
        say!("confirmation: run {first}'s regression stands{rerun}");
        Ok(Exit::Regression)
    } else {
        say!("note: run {first}'s regression was not confirmed by its rerun on the same build; exiting 0");
        Ok(Exit::Ok)
    }
}

/// The night's report as the pair decided it, its confirmation said; printed last, so an error before it
/// writes its own JUnit document, never a second one. People were shown the first run's findings as they came:
/// where the first run stands as the night's result, they read only the confirmation.
fn print_decided(result: &CheckReport, first: RunId, format: Format) -> anyhow::Result<()> {
    match (&result.confirmation, format) {
        (Some(confirmation), Format::Human) if result.run_id == first => {
            print_stdout(&format!("confirmation: {confirmation}\n"))
        }
        _ => print_stdout(&result.render(format)),
    }
}

/// The exit on a judged night's verdict.
fn exit_on(outcome: VerdictOutcome, strict: bool) -> Exit {
    match outcome {
        VerdictOutcome::Regressed => Exit::Regression,
        VerdictOutcome::Inconclusive => undecided("the verdict is inconclusive", strict),
        VerdictOutcome::Passed => Exit::Ok,
    }
}

/// Posts the alerts due now; what cannot be delivered stays in the outbox for `degrade serve`.
async fn deliver(store: &Store, config: &Config) {
    let delivered = match Courier::new(store.clone(), Arc::new(config.clone())) {
        Ok(courier) => courier.deliver_due().await.map(|_| ()).map_err(anyhow::Error::from),
        Err(e) => Err(e),
    };
    if let Err(e) = delivered {
        say!("warning: alerts were stored but not delivered: {e}");
    }
}
