//! Judging a stored run against its baseline: choose the baseline runs, compare endpoint by endpoint, store
//! the verdict (which moves the run to `passed` or `regressed`), and return the report. `degrade check` and
//! the nightly chain both judge through here.

use anyhow::bail;
use chrono::Utc;

use crate::analysis::baseline::BaselineSpec;
use crate::analysis::contention::{MachineLoad, UsualMachine, contention, not_blamed_on_the_build};
use crate::analysis::judge::{Comparison, Judgement, Outcome, judge};
use crate::config::Config;
use crate::report::{BaselineRun, CheckReport};
use crate::scenario::LoadModel;
use crate::store::{EndpointResult, NewVerdict, Run, RunStatus, Store};

/// Judges `candidate` against the runs `spec` selects, with the scenario's gates, and stores the verdict.
pub async fn judge_run(
    store: &Store,
    config: &Config,
    candidate: &Run,
    spec: &BaselineSpec,
) -> anyhow::Result<CheckReport> {
    let gates = config.scenario(&candidate.scenario).map(|s| s.gates.clone()).unwrap_or_default();
    match candidate.status {
        RunStatus::Running => bail!("run #{} is still running; check it once it has finished", candidate.id),
        RunStatus::Failed => {
            bail!("run #{} failed: {}; it measured nothing to judge", candidate.id, stop_reason(candidate))
        }
        RunStatus::Aborted => {
            let measured = candidate
                .load_summary
                .as_ref()
                .filter(|l| l.measured_secs > 0.0)
                .map(|l| format!(" after measuring {:.0} s", l.measured_secs))
                .unwrap_or_default();
            bail!(
                "run #{} was stopped{measured} ({}); a run cut short is never judged, since part of a night says \
                 nothing about a whole one",
                candidate.id,
                stop_reason(candidate)
            )
        }
        _ => {}
    }
    let (baseline, judgement) = if candidate.status == RunStatus::Invalid {
        (Vec::new(), invalid_run(candidate))
    } else {
        let baseline = baseline_runs(store, candidate, spec).await?;
        let comparison = if matches!(spec, BaselineSpec::Run(_)) { Comparison::OneRun } else { Comparison::Nightly };
        let tonight = endpoints(store, candidate.id).await?;
        let model = candidate.load_summary.as_ref().map_or(LoadModel::Open, |l| LoadModel::from_stored(&l.model));
        let before = baseline_results(store, &baseline).await?;
        let judgement = judge(&tonight, &before, &gates, comparison, model);
        let judgement = if gates.busy_machine_inconclusive {
            excuse_a_held_back_machine(judgement, candidate, &tonight, &baseline, &before)
        } else {
            judgement
        };
        (baseline, judgement)
    };
    let verdict = NewVerdict {
        baseline_spec: spec.to_string(),
        baseline_run_ids: baseline.iter().map(|r| r.id).collect(),
        outcome: judgement.outcome.as_str().to_owned(),
        summary: judgement.summary.clone(),
        created_at: Utc::now(),
        findings: judgement.findings.clone(),
    };
    store.save_verdict(candidate.id, &verdict).await?;
    let Judgement { outcome, findings, mut summary } = judgement;
    if outcome == Outcome::Inconclusive && candidate.status != RunStatus::Invalid {
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
        findings,
        confirmation,
    })
}

/// The runs `spec` selects; when a `run:ID` baseline selects nothing, says why that run cannot serve.
async fn baseline_runs(store: &Store, candidate: &Run, spec: &BaselineSpec) -> anyhow::Result<Vec<Run>> {
    let runs = store.baseline_runs(candidate, spec).await?;
    if let (BaselineSpec::Run(id), true) = (spec, runs.is_empty()) {
        let Some(run) = store.find_run(*id).await? else { bail!("baseline run #{id} does not exist") };
        if run.id == candidate.id {
            bail!("run #{id} cannot be its own baseline");
        }
        if run.scenario != candidate.scenario {
            bail!("baseline run #{id} belongs to scenario `{}`, not `{}`", run.scenario, candidate.scenario);
        }
        if !run.status.is_valid_measurement() {
            bail!("baseline run #{id} is {}, so its numbers cannot serve as a baseline", run.status);
        }
        bail!("baseline run #{id} ran a different version of the scenario file, so its numbers are not comparable");
    }
    Ok(runs)
}

async fn endpoints(store: &Store, id: i64) -> anyhow::Result<Vec<EndpointResult>> {
    Ok(store.run_detail(id).await?.map(|d| d.endpoints).unwrap_or_default())
}

async fn baseline_results(store: &Store, runs: &[Run]) -> anyhow::Result<Vec<Vec<EndpointResult>>> {
    let mut results = Vec::with_capacity(runs.len());
    for run in runs {
        results.push(endpoints(store, run.id).await?);
    }
    Ok(results)
}

/// A latency regression measured while the machine was busier than on the baseline nights (beyond what the
/// slower requests could have burnt themselves), or held back by its host, is inconclusive (see
/// `analysis::contention`).
fn excuse_a_held_back_machine(
    judgement: Judgement,
    candidate: &Run,
    tonight: &[EndpointResult],
    baseline: &[Run],
    before: &[Vec<EndpointResult>],
) -> Judgement {
    let usual_machine = |run: &Run| {
        run.load_summary.as_ref().map_or_else(UsualMachine::default, |l| UsualMachine {
            busy_pct: l.machine_cpu_busy_pct,
            stolen_pct: l.machine_cpu_stolen_pct,
        })
    };
    let usual: Vec<UsualMachine> = baseline.iter().map(usual_machine).collect();
    let load = candidate.load_summary.as_ref().and_then(|l| {
        Some(MachineLoad {
            busy_pct: l.machine_cpu_busy_pct?,
            stolen_pct: l.machine_cpu_stolen_pct,
            cores: l.machine_cores?,
            secs: l.measured_secs,
        })
    });
    let Some(contention) = contention(load, &usual) else { return judgement };
    not_blamed_on_the_build(judgement, &contention, load.map_or(1, |l| l.cores), |endpoint| {
        added_secs(endpoint, tonight, before)
    })
}

/// How much longer an endpoint's requests took tonight, together, than at the baseline nights' median mean.
fn added_secs(endpoint: &str, tonight: &[EndpointResult], before: &[Vec<EndpointResult>]) -> f64 {
    let Some(now) = tonight.iter().find(|e| e.endpoint == endpoint) else { return 0.0 };
    let mut means: Vec<f64> = before
        .iter()
        .flatten()
        .filter(|e| e.endpoint == endpoint)
        .map(|e| e.mean_us)
        .filter(|m| m.is_finite())
        .collect();
    means.sort_by(f64::total_cmp);
    let usual = means.get(means.len() / 2).copied().unwrap_or(0.0);
    (now.mean_us - usual).max(0.0) / 1e6 * now.requests.max(0) as f64
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
        outcome: Outcome::Inconclusive,
        findings: Vec::new(),
        summary: format!(
            "inconclusive: run #{} is invalid, the load generator could not be trusted: {reasons}",
            run.id
        ),
    }
}

/// Why a baseline may be short although the scenario has runs: they belong to other workload series.
async fn other_series(store: &Store, candidate: &Run) -> anyhow::Result<String> {
    let others = store.other_workload_runs(candidate).await?;
    if others == 0 {
        return Ok(String::new());
    }
    Ok(format!(
        "; {others} earlier run{} of this scenario used another workload (an edited scenario file, or --duration \
         or --rate-scale): each workload is a series of its own, so smoke runs never form the nightly baseline",
        if others == 1 { "" } else { "s" }
    ))
}
