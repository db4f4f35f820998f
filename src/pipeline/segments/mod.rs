//! One segment of a night split across N generator machines (`degrade run --segment K/N --run-key KEY`),
//! meeting the others in PostgreSQL: through the start barrier ([`barrier`]: register, one segment prepares
//! the build, all ready, a shared start a few seconds ahead), its share of the load on the engine while a
//! sentinel ([`sentinel`]) keeps it seen and stops it early when the night turns invalid or a segment is lost,
//! its results stored, and the last segment to finish merging all N into the night's one run ([`merge`]).
//!
//! The night holds its scenario's lease as any run does ([`lease`]), so no other run of it overlaps the night.
//!
//! Clocks are compared only through the database's ([`clock`]): each segment measures its offset before and
//! after its load, and a skew, a drift or a spread of starts beyond tolerance makes the night invalid with the
//! numbers in the reason.

pub mod alert;
pub mod clock;
pub mod confirm;
pub mod lease;
pub mod lost;

mod barrier;
mod merge;
mod sentinel;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::watch;

use crate::clock::Clock;
use crate::config::ScenarioConfig;
use crate::engine::{self, Measurement, Progress};
use crate::model::{BaselineSpec, RunId, RunStatus, Segment};
use crate::scenario::Plan;
use crate::store::Store;

pub use merge::MergedNight;

/// How long a segment waits at the start barrier (build prepared, all N ready) unless told otherwise.
pub const DEFAULT_BARRIER_TIMEOUT: Duration = Duration::from_mins(5);

/// What a segment is asked to do.
#[allow(missing_docs, reason = "the field names say what they hold")]
pub struct SegmentJob {
    /// The scenario's name (the night's run is stored under it).
    pub scenario: String,
    /// The whole plan; the segment keeps its share.
    pub plan: Plan,
    pub config: Option<ScenarioConfig>,
    pub segment: Segment,
    /// The night's key, the same for all N segments (the Kubernetes Job's name, say).
    pub run_key: String,
    pub barrier_timeout: Duration,
    /// The baseline the merged night is to be judged against (`check --run-now`), or `None`.
    pub judged_against: Option<BaselineSpec>,
    /// The night whose regression this one reruns to confirm ([`confirm`]), or `None`.
    pub confirms: Option<RunId>,
}

/// How a segment ended.
pub enum SegmentEnd {
    /// Another process holds this index already: this one sent nothing.
    Taken {
        /// Who holds it.
        holder: String,
    },
    /// The night this key names is over already (merged, or invalid before this segment came): its run and how
    /// it ended, in words. The key was used again, for another night, which this process must not pass over in
    /// silence.
    Over {
        /// `run 11, invalid: the start barrier timed out …`.
        ended: String,
    },
    /// The night is invalid (plan differs, build not prepared, barrier timeout, stopped before the start): this
    /// segment sent nothing.
    Invalid {
        /// The night's run, when it was created.
        run_id: Option<RunId>,
        /// Why.
        reason: String,
    },
    /// This segment sent its share and stored what it measured.
    Measured {
        /// The night's run.
        run_id: RunId,
        /// The build measured.
        build_id: Option<String>,
        /// This segment's own numbers.
        measurement: Box<Measurement>,
        /// The merged night, when this segment was the one to merge it.
        merged: Option<MergedNight>,
        /// Why the night is invalid, as this segment last saw it.
        invalid_reason: Option<String>,
    },
}

/// A segment's settings during the night.
struct Night<'a> {
    key: &'a str,
    scenario: &'a str,
    segment: Segment,
    holder: &'a str,
    plan_hash: String,
    plan: &'a Plan,
    config: Option<&'a ScenarioConfig>,
    barrier_timeout: Duration,
    judged_against: Option<BaselineSpec>,
    confirms: Option<RunId>,
}

impl Night<'_> {
    /// Marks this segment failed and the night invalid for `reason` (the first reason recorded stands), and the
    /// night's run invalid if one was created: nothing of it is ever judged or a baseline.
    async fn fail(&self, store: &Store, reason: &str, run_id: Option<RunId>) -> SegmentEnd {
        let _ = store.segment_state(self.key, self.segment.index(), "failed", None).await;
        let reason = store.invalidate_segmented_run(self.key, reason).await.unwrap_or_else(|_| reason.to_owned());
        lease::release(store, self.scenario, self.key).await;
        let run_id = match run_id {
            Some(id) => Some(id),
            None => store.segmented_run(self.key).await.ok().flatten().and_then(|r| r.run_id),
        };
        if let Some(id) = run_id {
            // Ended once: whichever segment comes second finds it ended already.
            let _ = store.end_run(id, RunStatus::Invalid, &reason, chrono::Utc::now()).await;
        }
        // The command that ran the segment says it, once, as its result (a warning here printed it twice).
        tracing::debug!("segment {}: the night `{}` is invalid: {reason}", self.segment, self.key);
        SegmentEnd::Invalid { run_id, reason }
    }
}

/// The hash every segment of a night must share: the workload, the seed and this degrade's version.
fn plan_hash(plan: &Plan) -> String {
    let mut hash = crate::tape::fnv::Fnv::default();
    hash.add(plan.hash.as_bytes()).add(&plan.seed.to_le_bytes()).add(env!("CARGO_PKG_VERSION").as_bytes());
    format!("{:016x}", hash.value())
}

/// Runs one segment of a split night end to end; the segment that finishes last merges the night.
pub async fn run_segment(
    store: &Store,
    job: SegmentJob,
    build: Option<String>,
    clock: &Clock,
    stop: watch::Receiver<bool>,
    on_progress: impl FnMut(&Progress),
) -> anyhow::Result<SegmentEnd> {
    let SegmentJob { scenario, plan, config, segment, run_key, barrier_timeout, judged_against, confirms } = job;
    let plan = plan.segmented(segment).map_err(anyhow::Error::msg)?;
    let holder = super::claim::holder_name();
    let night = Night {
        key: &run_key,
        scenario: &scenario,
        segment,
        holder: &holder,
        plan_hash: plan_hash(&plan),
        plan: &plan,
        config: config.as_ref(),
        barrier_timeout,
        judged_against,
        confirms,
    };
    // From registration to the end of this segment's load: any segment may be the last alive.
    let renewal = lease::Renewal::start(store.clone(), scenario.clone(), &run_key);
    let started = match barrier::pass(store, &night, build, clock, &stop).await? {
        Ok(started) => started,
        Err(end) => return Ok(end),
    };
    let mut plan = plan.clone();
    plan.start_at = Some(started.start);
    let (sentinel, engine_stop) = sentinel::Sentinel::start(store.clone(), run_key.clone(), segment, stop);
    let measurement = engine::run_apart(Arc::new(plan), engine_stop, on_progress).await;
    sentinel.finish().await;
    drop(renewal);
    let after = clock::measure(store).await.context("cannot read the database's clock after the load")?;
    merge::store_segment(store, &night, &measurement, started.offset, after).await?;
    let merged = merge::merge_if_last(store, &night, started.run_id).await?;
    if merged.is_some() && night.judged_against.is_none() {
        // A night only measured (`degrade run`) is over once merged. One to be judged keeps its lease until it
        // is judged, or its rerun under the same holder has decided it (`cli::segment_check`).
        lease::release(store, &scenario, &run_key).await;
    }
    let invalid_reason = store.segmented_run(&run_key).await?.and_then(|r| r.invalid_reason);
    Ok(SegmentEnd::Measured {
        run_id: started.run_id,
        build_id: started.build_id,
        measurement: Box::new(measurement),
        merged,
        invalid_reason,
    })
}
