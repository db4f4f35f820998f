//! "The dashboard and `check` agree with the store", the chaos harness's last invariant: what a person reads of a
//! night (its status, its verdict, whether it is concluded and alerted) must be what the store holds, after any
//! kill. The dashboard is a `degrade serve --no-scheduler` of the harness's own (it reads, it settles nothing):
//! for every run whose record changed since the last cycle, its JSON (`/api/v1/runs/{id}`) and its run page
//! (`/runs/{id}`: the status, and "This night is …" exactly while the night is not concluded, i.e. not alerted),
//! and the overview (`/api/v1/scenarios` and `/`: the latest run and its status). `check` is each night's own
//! `check --run-now --format json`: the run it reports, with the verdict's outcome the store holds for it, and
//! an exit code that says what the run's stored status says (1 for a confirmed regression, 0 for a refuted one).

use std::collections::BTreeMap;
use std::process::ExitStatus;

use degrade::model::{NightStep, RunStatus, VerdictOutcome};
use degrade::store::Store;

use crate::support::served::Served;

/// What the store holds of one run, as the dashboard is to show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Held {
    status: RunStatus,
    /// The latest verdict's id and outcome.
    verdict: Option<(i64, VerdictOutcome)>,
    /// Where the night stands while it is not concluded (alerted); `None` once it is.
    step: Option<NightStep>,
}

/// What the store holds of every run of `scenario`, by id, and the latest run's id.
async fn held(store: &Store, scenario: &str) -> (BTreeMap<i64, Held>, Option<i64>) {
    let runs = store.last_runs(scenario, 10_000).await.unwrap();
    let latest = runs.first().map(|run| run.id);
    let mut held = BTreeMap::new();
    for run in runs {
        let verdict = store.latest_verdict(run.id).await.unwrap().map(|v| (v.id, v.outcome));
        let step = store.night_record(run.id).await.unwrap().and_then(NightStep::of);
        held.insert(run.id, Held { status: run.status, verdict, step });
    }
    (held, latest)
}

/// Where the dashboard `served` says otherwise than the store, for the runs of `scenario` whose record changed
/// since `shown` (updated), and for the overview; and how many runs were compared.
pub(super) async fn dashboard_disagreements(
    served: &Served,
    store: &Store,
    scenario: &str,
    shown: &mut BTreeMap<i64, Held>,
) -> (Vec<String>, usize) {
    let (held, latest) = held(store, scenario).await;
    let (mut disagreements, mut compared) = (Vec::new(), 0);
    for (id, run) in &held {
        if shown.get(id) == Some(run) {
            continue;
        }
        compared += 1;
        disagreements.extend(run_disagreements(served, *id, run).await);
        shown.insert(*id, run.clone());
    }
    if let Some(latest) = latest {
        disagreements.extend(overview_disagreements(served, scenario, latest, &held[&latest]).await);
    }
    (disagreements, compared)
}

/// Run `id`'s JSON and page against what the store holds of it.
async fn run_disagreements(served: &Served, id: i64, run: &Held) -> Vec<String> {
    let mut disagreements = Vec::new();
    let status = run.status.as_str();
    match served.get_json(&format!("/api/v1/runs/{id}")).await {
        Ok(json) => {
            if json["run"]["status"].as_str() != Some(status) {
                disagreements.push(format!("the API says run #{id} is {}, the store {status}", json["run"]["status"]));
            }
            let said = json["verdict"]["id"].as_i64().zip(json["verdict"]["outcome"].as_str());
            let stored = run.verdict.map(|(v, outcome)| (v, outcome.as_str()));
            if said != stored {
                disagreements.push(format!("the API gives run #{id} the verdict {said:?}, the store {stored:?}"));
            }
        }
        Err(e) => disagreements.push(format!("the API on run #{id}: {e}")),
    }
    match served.get(&format!("/runs/{id}")).await {
        Ok((200, page)) => {
            if !page.contains(&format!("<span class=\"status status-{status}\">{status}</span>")) {
                disagreements.push(format!("run #{id}'s page does not show it {status}"));
            }
            if page.contains("This night is") != run.step.is_some() {
                let says = if run.step.is_some() { "concluded" } else { "not concluded" };
                disagreements.push(format!("run #{id}'s page says its night is {says}; the store: {:?}", run.step));
            }
        }
        Ok((code, _)) => disagreements.push(format!("run #{id}'s page answered {code}")),
        Err(e) => disagreements.push(format!("run #{id}'s page: {e}")),
    }
    disagreements
}

/// The overview (JSON and page) against the scenario's latest run.
async fn overview_disagreements(served: &Served, scenario: &str, latest: i64, run: &Held) -> Vec<String> {
    let status = run.status.as_str();
    let mut disagreements = Vec::new();
    match served.get_json("/api/v1/scenarios").await {
        Ok(json) => {
            let listed = json["scenarios"].as_array().into_iter().flatten().find(|s| s["name"] == scenario);
            let said = listed.map(|s| (s["latest_run"]["id"].as_i64(), s["latest_run"]["status"].as_str()));
            if said != Some((Some(latest), Some(status))) {
                disagreements
                    .push(format!("the overview API says the latest run is {said:?}, the store #{latest} {status}"));
            }
        }
        Err(e) => disagreements.push(format!("the overview API: {e}")),
    }
    match served.get("/").await {
        Ok((200, page)) if page.contains(&format!("status-{status}\">{status}</span>")) => {}
        Ok((code, _)) => disagreements.push(format!("the overview ({code}) does not show the latest run {status}")),
        Err(e) => disagreements.push(format!("the overview: {e}")),
    }
    disagreements
}

/// Where a night's `check --run-now --format json` (its exit `status` and `stdout`) says otherwise than the
/// store (none when it printed no report: killed, or ended on an error, exit 2, said on standard error only).
pub(super) async fn check_disagreements(store: &Store, status: ExitStatus, stdout: &str) -> Option<Vec<String>> {
    let code = status.code()?;
    let report: Option<serde_json::Value> = serde_json::from_str(stdout).ok();
    let Some((id, outcome)) = report.as_ref().and_then(|r| r["run_id"].as_i64().zip(r["outcome"].as_str())) else {
        return (code != 2).then(|| vec![format!("check exited {code} without a report: {stdout}")]);
    };
    let Some(run) = store.find_run(id).await.unwrap() else {
        return Some(vec![format!("check reported run #{id}, which the store does not hold")]);
    };
    let stored = store.latest_verdict(id).await.unwrap().map(|v| v.outcome.as_str());
    let mut disagreements = Vec::new();
    if stored != Some(outcome) {
        disagreements.push(format!("check says run #{id} {outcome}, the store's verdict is {stored:?}"));
    }
    let expected = match (outcome, run.status) {
        ("passed", RunStatus::Passed)
        | ("regressed", RunStatus::Unconfirmed)
        | ("inconclusive", RunStatus::Finished | RunStatus::Invalid) => Some(0),
        ("regressed", RunStatus::Regressed) => Some(1),
        _ => None,
    };
    if expected != Some(code) {
        disagreements.push(format!("check said {outcome} and exited {code} for run #{id}, stored {}", run.status));
    }
    Some(disagreements)
}
