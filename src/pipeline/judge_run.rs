//! Judging a stored run against its baseline: choose the baseline runs, compare endpoint by endpoint, store
//! the verdict (which moves the run to `passed` or `regressed`), and return the report. `degrade check` and
//! the nightly chain both judge through here.

use chrono::{DateTime, Utc};

use super::held_back::{excuse_a_held_back_machine, without_held_back_nights};
use crate::analysis::Gates;
use crate::analysis::judge::{Comparison, Judgement, counted_findings, judge_with_telemetry};
use crate::analysis::telemetry::TelemetryNights;
use crate::config::Config;
use crate::model::{
    BaselineSpec, EndpointResult, FindingOutcome, LoadModel, NewVerdict, Run, RunId, RunStatus, VerdictOutcome,
};
use crate::report::{BaselineRun, CheckReport, LeftOut};
use crate::store::{Store, StoreCause, StoreError};

/// Why a run could not be judged.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    /// The store failed (the database may be unreachable; see `store::Retry`).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The run, or its baseline, cannot be judged; the message says why and what to do.
    #[error("{0}")]
    Refused(String),
}

impl StoreCause for JudgeError {
    fn store_error(&self) -> Option<&StoreError> {
        match self {
            Self::Store(e) => Some(e),
            Self::Refused(_) => None,
        }
    }
}

/// Returns [`JudgeError::Refused`] with a formatted reason, as `anyhow::bail!` would.
macro_rules! refuse {
    ($($reason:tt)*) => {
        return Err(JudgeError::Refused(format!($($reason)*)))
    };
}

/// Refuses a run that measured nothing whole: one still running, one that failed, one cut short.
fn ensure_measured(candidate: &Run) -> Result<(), JudgeError> {
    match candidate.status {
        RunStatus::Running => refuse!("run #{} is still running; check it once it has finished", candidate.id),
        RunStatus::Failed => {
            refuse!("run #{} failed: {}; it measured nothing to judge", candidate.id, stop_reason(candidate))
        }
        RunStatus::Aborted => {
            let measured = candidate
                .load_summary
                .as_ref()
                .filter(|l| l.measured_secs > 0.0)
                .map(|l| format!(" after measuring {:.0} s", l.measured_secs))
                .unwrap_or_default();
            refuse!(
                "run #{} was stopped{measured} ({}); a run cut short is never judged, since part of a night says \
                 nothing about a whole one",
                candidate.id,
                stop_reason(candidate)
            )
        }
        _ => {}
    }
    Ok(())
}

/// What a regressed verdict makes of the run it judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfRegressed {
    /// The run is `regressed`: the verdict is the night's.
    Stands,
    /// The run is `confirming`: a rerun of the same build decides it (`confirm`).
    Confirm,
    /// Reported, not stored: a run its night judged already, judged again against a baseline other than
    /// that verdict's (`check --run 13 --baseline run:12`) answers a question, and must not rewrite the
    /// night's verdict, its run's status or the dashboard's history.
    Unstored,
}

/// Judges `candidate` against the runs `spec` selects, with the scenario's gates, and stores the verdict made
/// `at` that time; a regressed one moves the run as `if_regressed` says.
pub async fn judge_run(
    store: &Store,
    config: &Config,
    candidate: &Run,
    spec: &BaselineSpec,
    if_regressed: IfRegressed,
    at: DateTime<Utc>,
) -> Result<CheckReport, JudgeError> {
    ensure_measured(candidate)?;
    let gates = config.scenario(&candidate.scenario).map(|s| s.gates.clone()).unwrap_or_default();
    let zone = zone_name(config, &candidate.scenario);
    let (baseline, left_out, judgement) = if candidate.status == RunStatus::Invalid {
        // Not compared, but the header still says which nights a valid run would have been judged against.
        (store.baseline_runs(candidate, spec).await?, Vec::new(), invalid_run(candidate))
    } else {
        judge_against_nights(store, candidate, spec, (&gates, &zone)).await?
    };
    let verdict = NewVerdict {
        baseline_spec: spec.to_string(),
        baseline_run_ids: baseline.iter().map(|r| r.id).collect(),
        outcome: judgement.outcome,
        summary: judgement.summary.clone(),
        created_at: at,
        findings: judgement.findings.clone(),
    };
    match if_regressed {
        IfRegressed::Stands => store.save_verdict(candidate.id, &verdict).await?,
        IfRegressed::Confirm => store.save_verdict_to_confirm(candidate.id, &verdict).await?,
        IfRegressed::Unstored => 0,
    };
    let Judgement { outcome, findings, mut summary } = judgement;
    if outcome == VerdictOutcome::Inconclusive && candidate.status != RunStatus::Invalid {
        summary += &other_series(store, candidate).await?;
    }
    let confirmation = super::confirm::note(store, candidate).await?.map(|(text, _)| text);
    Ok(CheckReport {
        scenario: candidate.scenario.clone(),
        run_id: candidate.id,
        build_id: candidate.build_id.clone(),
        started_at: candidate.started_at,
        outcome,
        summary,
        baseline_spec: spec.to_string(),
        baseline: baseline.iter().map(BaselineRun::from).collect(),
        left_out,
        findings,
        confirmation,
        capacity: store.capacity(candidate.id).await?.map(Box::new),
    })
}

/// Judges a valid run against the runs `spec` selects, less the nights whose machine was held back (see
/// `held_back`); returns the baseline as used, the nights left out, and the judgement.
async fn judge_against_nights(
    store: &Store,
    candidate: &Run,
    spec: &BaselineSpec,
    (gates, zone): (&Gates, &str),
) -> Result<(Vec<Run>, Vec<LeftOut>, Judgement), JudgeError> {
    let baseline = baseline_runs(store, candidate, spec).await?;
    // A `last-N` baseline that held its N runs (before held-back nights, said apart, left it) was short because
    // N is: invalid nights did not shorten it, and the latest N of them lie anywhere in the series (`last-2`
    // named two nights of months before).
    let as_long_as_asked = matches!(spec, BaselineSpec::LastRuns(n) if baseline.len() >= *n as usize);
    let comparison = if matches!(spec, BaselineSpec::Run(_)) { Comparison::OneRun } else { Comparison::Nightly };
    let mind_the_machine = gates.busy_machine_inconclusive;
    // A named run is the user's choice; a window's nights are ours to sift.
    let (baseline, left_out) = if mind_the_machine && comparison == Comparison::Nightly {
        without_held_back_nights(baseline, gates.min_runs as usize)
    } else {
        (baseline, Vec::new())
    };
    let tonight = endpoints(store, candidate.id).await?;
    let model = candidate.load_summary.as_ref().map_or(LoadModel::Open, |l| LoadModel::from_stored(&l.model));
    let before = baseline_results(store, &baseline).await?;
    let telemetry_tonight = store.telemetry_summaries(candidate.id).await?;
    let mut telemetry_before = Vec::with_capacity(baseline.len());
    for run in &baseline {
        telemetry_before.push(store.telemetry_summaries(run.id).await?);
    }
    let telemetry = TelemetryNights { tonight: Some(&telemetry_tonight), baseline: &telemetry_before };
    let mut judgement = judge_with_telemetry(&tonight, &before, telemetry, gates, comparison, model);
    if mind_the_machine {
        judgement = excuse_a_held_back_machine(judgement, candidate, &tonight, &baseline, &before);
    }
    judgement = with_capacity(store, candidate, &baseline, (gates, zone), judgement).await?;
    if mind_the_machine {
        judgement = super::held_back::excuse_a_capacity_fall_on_a_held_back_host(judgement, candidate, &baseline);
    }
    if let Some(first) = store.confirmed_by(candidate.id).await? {
        // The runner's verdict on the first run, whatever a `check` of it said since.
        let first_findings = store.first_verdict(first).await?.map(|v| v.findings).unwrap_or_default();
        judgement = super::confirm::only_what_reproduced(judgement, first, &first_findings);
    }
    if comparison == Comparison::Nightly && baseline.len() < gates.min_runs as usize && !as_long_as_asked {
        judgement.summary += &invalid_nights_left_out(&store.invalid_runs_in_window(candidate, spec).await?);
    }
    judgement.summary += &super::protocol_change::protocol_note(candidate, &baseline);
    if !left_out.is_empty() {
        let ids: Vec<String> = left_out.iter().map(|l| format!("#{}", l.id)).collect();
        let (nights, their) = if ids.len() == 1 { ("night", "its") } else { ("nights", "their") };
        judgement.summary += &format!("; baseline {nights} {} left out, {their} machine held back", ids.join(", "));
    }
    Ok((baseline, left_out, judgement))
}

/// The judgement with tonight's capacity judged against the baseline nights' (when tonight ran a capacity
/// search): a capacity that fell past the nights' noise and the minimum effect regresses the night.
async fn with_capacity(
    store: &Store,
    candidate: &Run,
    baseline: &[Run],
    (gates, zone): (&Gates, &str),
    mut judgement: Judgement,
) -> Result<Judgement, JudgeError> {
    let Some(tonight) = store.capacity(candidate.id).await? else { return Ok(judgement) };
    let ids: Vec<_> = baseline.iter().map(|r| r.id).collect();
    let before: Vec<_> = store.capacities(&ids).await?.into_iter().map(|(_, c)| c).collect();
    let finding = crate::analysis::capacity::capacity_finding(&tonight, &before, gates, zone);
    let regressed = finding.outcome == FindingOutcome::Regression;
    let reason = finding.reason.clone();
    let counted_before = counted_findings(judgement.outcome, &judgement.findings);
    judgement.findings.push(finding);
    if regressed {
        judgement.outcome = VerdictOutcome::Regressed;
        judgement.summary = format!("{}; {reason}", counted_findings(judgement.outcome, &judgement.findings));
    } else if let Some(rest) = judgement.summary.strip_prefix(&counted_before) {
        // The capacity is a finding like the others: counted with them (a trial read "13 unchanged" beside
        // 14 in the JSON).
        judgement.summary = format!("{}{rest}", counted_findings(judgement.outcome, &judgement.findings));
    }
    Ok(judgement)
}

/// What the scenario calls its capacity zone (`[scenario.capacity] zone_name`), the default when it has none.
#[must_use]
pub fn zone_name(config: &Config, scenario: &str) -> String {
    config
        .scenario(scenario)
        .and_then(|s| s.capacity.as_ref())
        .map_or_else(|| crate::analysis::capacity::DEFAULT_ZONE_NAME.to_owned(), |c| c.zone_name.clone())
}

/// `; 3 invalid nights left out: #4 (schedule lag …), …`, naming why each could not serve, so a baseline too
/// short to judge against says what shortened it; empty when none did.
fn invalid_nights_left_out(invalid: &[Run]) -> String {
    const NAMED: usize = 5;
    if invalid.is_empty() {
        return String::new();
    }
    let mut named: Vec<String> = invalid
        .iter()
        .rev()
        .take(NAMED)
        .rev()
        .map(|run| match run.validity_reasons.first() {
            Some(why) => format!("#{} ({why})", run.id),
            None => format!("#{}", run.id),
        })
        .collect();
    if invalid.len() > NAMED {
        named.insert(0, format!("{} earlier", invalid.len() - NAMED));
    }
    let nights = if invalid.len() == 1 { "night" } else { "nights" };
    format!("; {} invalid {nights} left out: {}", invalid.len(), named.join(", "))
}

/// The runs `spec` selects. When a `run:ID` or `build:ID` baseline selects nothing, says why, if the run
/// cannot serve or the scenario never ran the build (a typo in a CI step must not pass as an inconclusive
/// verdict).
async fn baseline_runs(store: &Store, candidate: &Run, spec: &BaselineSpec) -> Result<Vec<Run>, JudgeError> {
    let runs = store.baseline_runs(candidate, spec).await?;
    if runs.is_empty() {
        match spec {
            BaselineSpec::Build(build) => known_build(store, candidate, build).await?,
            BaselineSpec::Run(id) => usable_run(store, candidate, *id).await?,
            BaselineSpec::LastDays(_) | BaselineSpec::LastRuns(_) => {}
        }
    }
    Ok(runs)
}

/// Refuses a `build:ID` baseline naming a build `candidate`'s scenario never ran, listing the ones it did.
async fn known_build(store: &Store, candidate: &Run, build: &str) -> Result<(), JudgeError> {
    if store.has_build(&candidate.scenario, build).await? {
        return Ok(());
    }
    let builds = store.recent_builds(&candidate.scenario, 10).await?;
    let known = if builds.is_empty() {
        "it has no run with a build id".to_owned()
    } else {
        format!("its most recent builds: {}", builds.join(", "))
    };
    refuse!("baseline build:{build}: scenario `{}` has no run of build {build}; {known}", candidate.scenario);
}

/// Says why run `id`, which a `run:ID` baseline names but did not select, cannot serve as `candidate`'s.
async fn usable_run(store: &Store, candidate: &Run, id: RunId) -> Result<(), JudgeError> {
    let Some(run) = store.find_run(id).await? else { refuse!("baseline run #{id} does not exist") };
    if run.id == candidate.id {
        refuse!("run #{id} cannot be its own baseline");
    }
    if run.scenario != candidate.scenario {
        refuse!("baseline run #{id} belongs to scenario `{}`, not `{}`", run.scenario, candidate.scenario);
    }
    if !run.status.is_valid_measurement() {
        refuse!("baseline run #{id} is {}, so its numbers cannot serve as a baseline", run.status);
    }
    // A smoke run (`--duration 20s`) is another workload of the same file: say so, not "another version".
    let series = store.workload_series(&candidate.scenario).await?;
    let reshape = |hash: &str| series.iter().find(|s| s.hash == hash).and_then(|s| s.reshape.clone());
    let (theirs, ours) = (reshape(&run.scenario_hash), reshape(&candidate.scenario_hash));
    if theirs != ours {
        let shape = |r: Option<String>| {
            r.map_or_else(|| "the scenario as written".to_owned(), |r| format!("a smoke run ({r})"))
        };
        refuse!(
            "baseline run #{id} was {} and run #{} is {}: another workload, so its numbers are not comparable",
            shape(theirs),
            candidate.id,
            shape(ours)
        );
    }
    refuse!("baseline run #{id} ran a different version of the scenario file, so its numbers are not comparable");
}

async fn endpoints(store: &Store, id: i64) -> Result<Vec<EndpointResult>, JudgeError> {
    Ok(store.run_detail(id).await?.map(|d| d.endpoints).unwrap_or_default())
}

async fn baseline_results(store: &Store, runs: &[Run]) -> Result<Vec<Vec<EndpointResult>>, JudgeError> {
    let mut results = Vec::with_capacity(runs.len());
    for run in runs {
        results.push(endpoints(store, run.id).await?);
    }
    Ok(results)
}

/// Why a failed or aborted run ended, as stored.
fn stop_reason(run: &Run) -> String {
    run.failure_reason.clone().unwrap_or_else(|| match run.validity_reasons.join("; ") {
        reasons if reasons.is_empty() => "no reason recorded".to_owned(),
        reasons => reasons,
    })
}

/// An invalid run says nothing about the build: inconclusive, with the generator's reasons.
fn invalid_run(run: &Run) -> Judgement {
    let reasons =
        if run.validity_reasons.is_empty() { "no reason recorded".to_owned() } else { run.validity_reasons.join("; ") };
    Judgement {
        outcome: VerdictOutcome::Inconclusive,
        findings: Vec::new(),
        summary: format!(
            "inconclusive: run #{} is invalid, the load generator could not be trusted: {reasons}",
            run.id
        ),
    }
}

/// Why a baseline may be short although the scenario has runs: they belong to other workload series.
async fn other_series(store: &Store, candidate: &Run) -> Result<String, JudgeError> {
    let (split, theirs, ours) = store.runs_split_otherwise(candidate).await?;
    if split > 0 {
        // Same file, same shape, another number of generator machines: a trial's 2-way night read "0 valid runs"
        // beside a valid single-machine night of the same shape, with no word of why.
        let machines = |n: i64| if n == 1 { "one machine".to_owned() } else { format!("{n} segments") };
        let theirs = theirs.map_or_else(|| "other numbers of segments".to_owned(), machines);
        let (runs, were) = if split == 1 { ("run", "was") } else { ("runs", "were") };
        return Ok(format!(
            "; {split} earlier {runs} of this workload {were} measured by {theirs}, and run #{} by {}: a night is \
             judged only against nights split the same way",
            candidate.id,
            machines(ours)
        ));
    }
    let others = store.other_workload_runs(candidate).await?;
    if others == 0 {
        return Ok(String::new());
    }
    if let Some((key, runs)) = store.runs_keyed_without_query_names(candidate).await? {
        return Ok(keys_changed(&key, runs));
    }
    let runs = if others == 1 { "run" } else { "runs" };
    let series = store.workload_series(&candidate.scenario).await?;
    if let Some(reshape) = series.iter().find(|s| s.hash == candidate.scenario_hash).and_then(|s| s.reshape.as_ref()) {
        // Said of a smoke run, the sentence below read backwards: the other workload is the nightly one. The
        // others may be smoke runs of this very shape but of the scenario file before an edit: the sentence
        // names both causes (a trial's edit to `protocol` read as a matter of shape).
        return Ok(format!(
            "; run #{} is a smoke run ({reshape}), judged only against runs of the same scenario file as run and \
             the same shape: the {others} earlier {runs} of this scenario {} another workload (an edited scenario \
             file, or another shape; degrade check without --run judges the latest nightly run)",
            candidate.id,
            if others == 1 { "is" } else { "are" }
        ));
    }
    Ok(format!(
        "; {others} earlier {runs} of this scenario used another workload (an edited scenario file, or --duration \
         or --rate-scale): each workload is a series of its own, so smoke runs never form the nightly baseline"
    ))
}

/// Why the nights before an upgrade are another series: their endpoints were keyed without the names of their
/// query parameters, and a change of keys is a new workload series (the stored runs keep their old keys).
fn keys_changed(example: &str, runs: i64) -> String {
    let path = example.split_once('?').map_or(example, |(path, _)| path);
    let (runs, were) = if runs == 1 { ("run".to_owned(), "was") } else { (format!("{runs} runs"), "were") };
    format!(
        "; the earlier {runs} of this scenario {were} keyed without query parameter names (`{path}` where this \
         run has `{example}`): degrade now keys each endpoint by them too, and a change of keys starts a new \
         workload series, whose baseline builds up over the next nights"
    )
}
