//! The demo's capacity chapter: a second scenario, `demo-capacity`, exports boards at a modest rate each night
//! and then searches for the highest rate the exports hold inside the zone (`[scenario.capacity]`). The last
//! nights of builds 1.0.x search it as history; after tonight's story, build 1.2.0 renders exports with three
//! renderers instead of four: at the nightly rate its exports answer as fast as ever (none waits for a
//! renderer), and only the capacity verdict sees that it carries a quarter less.

use anyhow::Context;
use chrono::{DateTime, Utc};

use super::deploy::Build;
use crate::config::Config;
use crate::model::{BaselineSpec, CapacityResult, Finding, FindingOutcome, RunStatus, SearchEnd};
use crate::pipeline::{Ended, Job, Runner};
use crate::store::Store;

/// The capacity scenario, also in the repository as `scenarios/demo-capacity.toml`.
pub const DEMO_CAPACITY_SCENARIO: &str = include_str!("../../scenarios/demo-capacity.toml");
/// Its name in the demo's degrade.toml.
pub const CAPACITY_SCENARIO: &str = "demo-capacity";
/// The exported route, as the scenario names its step.
pub const EXPORT_ENDPOINT: &str = "GET /boards/{board_id}/export";
/// Nights of history that search the capacity: the capacity scenario's `min_runs`, so the chapter's night is
/// judged on them. Few, as each night's search takes about 20 s.
pub const CAPACITY_NIGHTS: u32 = 3;
/// Renderers of build 1.2.0: three instead of four, a quarter less capacity (120 exports a second, not 160).
pub const FEWER_RENDERERS: u32 = 3;
/// Tries of one night whose search could not measure the target (a busy machine's generator sent a step late
/// three holds in a row, or the night's own stage late): such a night is no baseline, so it is run again.
const TRIES: u32 = 3;

/// `degrade.toml`'s entry for the capacity scenario against the API at `target`. The zone: an export's p75
/// at most 60 ms (2.4 render times: past the knee the queue passes it within a hold). The search climbs from 25
/// exports a second, doubling (its grid lands on neither knee), then bisects four times, each step held 2 s: about
/// 20 s a night. No confirmation rerun: the search is the night's longest part, and the chapter's point is the
/// capacity verdict itself.
#[must_use]
pub fn config_entry(target: &str) -> String {
    format!(
        "[[scenario]]\nname = \"{CAPACITY_SCENARIO}\"\nfile = \"scenarios/demo-capacity.toml\"\ntarget = \"{target}\"\n\
         baseline = \"last-7d\"\n\n\
         [scenario.build]\nversion_url = \"{target}/version\"\nversion_pointer = \"/build\"\n\
         health_url = \"{target}/healthz\"\nhealth_timeout = \"30s\"\n\n\
         [scenario.gates]\nmin_runs = {CAPACITY_NIGHTS}\nconfirm = false\nmax_p75_ms = 60\n\n\
         [scenario.capacity]\nstart_rate = 25\nstep_factor = 2\nhold = \"2s\"\nmax_rate = 1000\nmax_time = \"3m\"\n\
         refine_steps = 4\nzone_name = \"green\"\n"
    )
}

/// Build 1.2.0: 1.1.0's slowdown and CPU cost undone, and one renderer fewer.
#[must_use]
pub fn fewer_renderers_build(burn_cpu_us: u64) -> Build {
    Build { id: "1.2.0".to_owned(), slowdown_ms: 0, burn_cpu_us, export_workers: FEWER_RENDERERS }
}

/// One capacity night, labelled `when`, and what its search found. A night whose search says nothing of the
/// target (an invalid night runs none; one sent late ends at the generator's limit) is run again, up to
/// [`TRIES`] times, and says so.
pub async fn night(
    runner: &Runner,
    config: &Config,
    store: &Store,
    when: DateTime<Utc>,
) -> anyhow::Result<(Ended, Option<CapacityResult>)> {
    let mut tried = 0;
    loop {
        tried += 1;
        runner.clock().set(when);
        let job = Job::find(config, Some(CAPACITY_SCENARIO))?;
        let claim = runner.claim(CAPACITY_SCENARIO).await?;
        let ended = runner.run(claim, job, None, &BaselineSpec::default(), |_| {}).await?;
        let found = store.capacity(ended.run_id).await.context("cannot read the night's capacity")?;
        let measured = found.as_ref().is_some_and(|f| f.ended != SearchEnd::GeneratorLimit);
        if measured || tried == TRIES || matches!(ended.status, RunStatus::Failed | RunStatus::Aborted) {
            return Ok((ended, found));
        }
        println!("    (capacity run #{} was sent late by this busy machine: it is run again)", ended.run_id);
    }
}

/// `capacity 158 req/s` or what the search ended with, for a night's line.
#[must_use]
pub fn said(found: Option<&CapacityResult>) -> String {
    found.map_or_else(|| "no capacity search (the night was invalid)".to_owned(), CapacityResult::describe)
}

/// What the chapter's night came to, checked against the plan.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug)]
pub struct CapacityVerdict {
    pub run_id: i64,
    /// Whether the night was judged regressed.
    pub regressed: bool,
    /// The capacity finding, when the night was judged.
    pub capacity: Option<Finding>,
    /// Anything else judged worse: the export's latency at the nightly rate must not be.
    pub false_findings: Vec<Finding>,
    /// Capacity nights of builds 1.0.x judged regressed: false alarms.
    pub false_alarms: Vec<i64>,
    /// The night's verdict in a sentence.
    pub summary: String,
}

impl CapacityVerdict {
    /// Regressed on its capacity, and on nothing else.
    #[must_use]
    pub fn as_planned(&self) -> bool {
        self.regressed
            && self.capacity.as_ref().is_some_and(|f| f.outcome == FindingOutcome::Regression)
            && self.false_findings.is_empty()
            && self.false_alarms.is_empty()
    }

    /// The chapter's night, as judged.
    pub fn of(ended: &Ended, false_alarms: Vec<i64>) -> anyhow::Result<Self> {
        let report = ended.report.as_ref().with_context(|| {
            format!("capacity run #{} was not judged: {}", ended.run_id, ended.failure.as_deref().unwrap_or("stopped"))
        })?;
        let is_capacity = |f: &&Finding| f.metric == crate::analysis::capacity::CAPACITY_METRIC;
        Ok(Self {
            run_id: ended.run_id,
            regressed: ended.status == RunStatus::Regressed,
            capacity: report.findings.iter().find(is_capacity).cloned(),
            false_findings: report
                .findings
                .iter()
                .filter(|f| f.outcome.is_failure() && !is_capacity(f))
                .cloned()
                .collect(),
            false_alarms,
            summary: report.summary.clone(),
        })
    }
}
