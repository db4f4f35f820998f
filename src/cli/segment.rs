//! `--segment K/N --run-key KEY` on `degrade run` and `degrade check --run-now`: one segment of a night split
//! across N machines, meeting the others in PostgreSQL (`pipeline::segments`). What it prints: its own share,
//! and the merged night when this segment was the last to finish and merged it.

use std::time::Duration;

use anyhow::bail;

use super::live::Live;
use crate::clock::Clock;
use crate::model::{BaselineSpec, RunId, RunStatus, Segment};
use crate::pipeline::Job;
use crate::pipeline::segments::{self, MergedNight, SegmentEnd, SegmentJob};
use crate::store::Store;

/// The flags of a split night, shared by `run` and `check --run-now`.
#[derive(Debug, Clone, clap::Args)]
pub struct SegmentArgs {
    /// Send only segment K of N of the night (K from 0, e.g. 0/4 on the first of four machines): every segment
    /// plans the whole night and sends its exact share; they meet in the PostgreSQL database, start together and
    /// are merged into one run. Needs --run-key.
    #[arg(long, value_name = "K/N", requires = "run_key", value_parser = |s: &str| s.parse::<Segment>())]
    pub segment: Option<Segment>,
    /// The night's key, the same for its N segments and new each night (a Kubernetes Job's name, say).
    #[arg(long, value_name = "KEY", requires = "segment", value_parser = run_key)]
    pub run_key: Option<String>,
    /// How long a segment waits at the start barrier for the build and the other segments before the night is
    /// invalid, naming the segments that never became ready.
    #[arg(long, value_name = "DURATION", requires = "segment", value_parser = |s: &str| crate::config::durations::parse_positive(s, "5m"))]
    pub barrier_timeout: Option<Duration>,
}

/// A `--run-key`: 1 to 128 letters, digits, `.`, `_`, `-` or `:`.
fn run_key(text: &str) -> Result<String, String> {
    let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':');
    if (1..=128).contains(&text.len()) && text.chars().all(fine) {
        Ok(text.to_owned())
    } else {
        Err("a run key is 1 to 128 letters, digits, `.`, `_`, `-` or `:` (a Kubernetes Job's name fits)".to_owned())
    }
}

/// A segment that ran: the night's run, and whether this segment merged it (then how it stands).
pub(super) struct SegmentRan {
    pub run_id: RunId,
    pub merged: Option<MergedNight>,
}

/// Why a segment sent nothing or its night is not one to judge.
pub(super) enum NotRun {
    /// The night is invalid: its run, when one was created, and what to say (the reason).
    Invalid(Option<RunId>, String),
    /// The night failed (its build could not be prepared: deployed, healthy, its id read): its run and why.
    Failed(Option<RunId>, String),
    /// Another process holds this segment of the night (a Kubernetes Job may, rarely, run two pods for one
    /// index): this one had nothing to do, which is no failure, so a Job's failure policy leaves the night be.
    Taken(String),
    /// The night the run key names is over (merged, or invalid): the key was given again, for another night,
    /// which must not pass as done (a Job created twice under one name exited 0 in every pod, nothing sent).
    KeyReused(String),
}

/// Runs segment `segment` of `job` (SQLite refused: segments meet in a database they all reach). `Err` for a
/// segment that could not take part; `Ok(None)` when the night is invalid before this segment sent anything.
pub(super) async fn run(
    store: &Store,
    job: Job,
    flags: &SegmentArgs,
    build: Option<String>,
    judged_against: Option<BaselineSpec>,
) -> anyhow::Result<Result<SegmentRan, NotRun>> {
    let (Some(segment), Some(key)) = (flags.segment, flags.run_key.clone()) else {
        bail!("--segment and --run-key go together")
    };
    if store.backend() != "postgres" {
        bail!(
            "--segment needs a PostgreSQL database ([database] url or DEGRADE_DATABASE_URL): the segments of a night \
             meet in it, and a SQLite file is on one machine only"
        );
    }
    let (live, stop) = Live::start(&job.plan);
    let segment_job = SegmentJob {
        scenario: job.name,
        plan: job.plan,
        config: job.scenario,
        segment,
        run_key: key.clone(),
        barrier_timeout: flags.barrier_timeout.unwrap_or(segments::DEFAULT_BARRIER_TIMEOUT),
        judged_against,
        confirms: job.confirms,
    };
    let ended = segments::run_segment(store, segment_job, build, &Clock::system(), stop, |p| live.update(p)).await;
    live.finish();
    match ended? {
        SegmentEnd::Over { ended } => Ok(Err(NotRun::KeyReused(format!(
            "the night `{key}` is over already ({}): a run key names one night, so this process sends nothing; give \
             this night a key of its own (on Kubernetes, a new Job name)",
            crate::outside_text::printable(&ended)
        )))),
        SegmentEnd::Taken { holder } => Ok(Err(NotRun::Taken(format!(
            "segment {segment} of the night `{key}` is taken by {}: this process sends nothing",
            crate::outside_text::printable(&holder)
        )))),
        // Its scenario was running: the night could not be done, as a single run refused the same way (exit 2),
        // in every segment (a check exiting 0 there had measured nothing and told no one).
        SegmentEnd::Invalid { run_id: None, reason } if segments::lease::refused(&reason) => {
            Ok(Err(NotRun::Failed(None, format!("the night `{key}` could not start: {reason}"))))
        }
        SegmentEnd::Invalid { run_id, reason } => {
            let run = run_id.map_or_else(String::new, |id| format!(" (run {id})"));
            // A night whose build could not be prepared failed, as a single machine's does: exit 2, not 3.
            let failed = match run_id {
                Some(id) => store.find_run(id).await?.is_some_and(|r| r.status == RunStatus::Failed),
                None => false,
            };
            if failed {
                return Ok(Err(NotRun::Failed(run_id, format!("the night `{key}`{run} failed: {reason}"))));
            }
            Ok(Err(NotRun::Invalid(run_id, format!("the night `{key}`{run} is invalid: {reason}"))))
        }
        SegmentEnd::Measured { run_id, measurement, merged, invalid_reason, .. } => {
            let results = &measurement.results;
            let overall = results.endpoints.first();
            say!(
                "segment {segment} of the night `{key}` (run {run_id}): {}, {} requests, p95 {:.1} ms",
                results.status,
                overall.map_or(0, |e| e.requests),
                overall.map_or(0, |e| e.p95_us) as f64 / 1000.0
            );
            if let Some(night) = &merged {
                say!("{}", describe(run_id, night));
            } else if let Some(reason) = invalid_reason {
                let why = format!("the night `{key}` (run {run_id}) is invalid: {reason}");
                return Ok(Err(NotRun::Invalid(Some(run_id), why)));
            } else {
                say!("the last segment to finish merges the night into run {run_id}");
            }
            Ok(Ok(SegmentRan { run_id, merged }))
        }
    }
}

/// The merged night in a few lines.
fn describe(run_id: RunId, night: &MergedNight) -> String {
    let spread =
        night.start_spread_us.map_or_else(|| "unknown".to_owned(), |us| format!("{:.1} ms", us as f64 / 1000.0));
    let mut text = format!(
        "merged {} into run {run_id}: {}, {} requests, start spread {spread}",
        crate::model::counted(night.segments, "segment", "segments"),
        night.status,
        night.requests
    );
    for reason in &night.reasons {
        text.push_str(&format!("\n  invalid: {}", crate::outside_text::printable(reason)));
    }
    text
}

/// The exit of a segment of `degrade run`: 0 when its share (and the night, if it merged it) finished, or when
/// another process holds its segment; 3 when the night is invalid, 2 when it failed or its run key named a night
/// that is over.
pub(super) fn exit(ran: &Result<SegmentRan, NotRun>) -> super::Exit {
    match ran {
        Err(NotRun::Invalid(_, reason)) => {
            say!("{}", crate::outside_text::printable(reason));
            super::Exit::Inconclusive
        }
        Err(NotRun::Taken(why)) => {
            say!("{}", crate::outside_text::printable(why));
            super::Exit::Ok
        }
        Err(NotRun::Failed(_, why)) => {
            say!("{}", crate::outside_text::printable(why));
            super::Exit::Error
        }
        Err(NotRun::KeyReused(why)) => {
            say!("error: {}", crate::outside_text::printable(why));
            super::Exit::Error
        }
        Ok(SegmentRan { merged: Some(night), .. }) => match night.status {
            RunStatus::Finished => super::Exit::Ok,
            RunStatus::Invalid => super::Exit::Inconclusive,
            _ => super::Exit::Error,
        },
        Ok(_) => super::Exit::Ok,
    }
}
