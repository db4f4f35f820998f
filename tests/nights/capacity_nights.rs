//! Capacity nights of an unchanged build raise no capacity finding: ten nights of the same worker pool (4 workers
//! × 25 ms, knee 160 req/s) searched by `check --run-now` with short holds, each judged from the fourth on
//! against the nights before it. The search's own resolution (a bracket of about 12 %) and a shared machine's
//! noise must stay inside the nights' noise and the minimum effect. Its verdicts depend on this machine's
//! timing, so it is one of the `nights` binary's tests, which run one at a time and beside nothing else.

use std::time::Duration;

use degrade::model::{FindingOutcome, RunStatus, SearchEnd};
use degrade::store::Store;

use crate::pool_target::PoolTarget;
use crate::support::{TestDb, degrade_child, project, text};

/// Nights run; the first [`MIN_RUNS`] build the history the others are judged against.
const NIGHTS: usize = 10;
const MIN_RUNS: usize = 3;

/// Short holds, two bisections: a search of about ten seconds, climbing 50 → 100 → 200 req/s, then refining
/// between 100 and 200 (its grid lands on neither side of the knee).
fn config(address: std::net::SocketAddr) -> String {
    format!(
        "[[scenario]]\nname = \"pool\"\nfile = \"scenarios/pool.toml\"\ntarget = \"http://{address}\"\n\
         [scenario.gates]\nmin_runs = {MIN_RUNS}\nconfirm = false\nbusy_machine_inconclusive = false\n\
         max_p75_ms = 60\nmetric_min_effect_pct = {{ p50 = 200, p95 = 200, p99 = 200 }}\n\
         [scenario.capacity]\nstart_rate = 50\nstep_factor = 2\nhold = \"1s\"\nmax_rate = 1000\n\
         max_time = \"2m\"\nrefine_steps = 2\n"
    )
}

const SCENARIO: &str = "[[flow]]\nname = \"work\"\n[[flow.step]]\npath = \"/work\"\n\
                        [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"2s\"\nrate = 20\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unchanged_build_over_ten_nights_raises_no_capacity_finding() {
    let _apart = crate::support::ONE_HEAVY_TEST_AT_A_TIME.lock().await;
    let db = TestDb::sqlite();
    let target = PoolTarget::start(4, Duration::from_millis(25)).await;
    let dir = project(&config(target.address), &[("scenarios/pool.toml", SCENARIO)]).0;
    let store = Store::connect(&db.url).await.unwrap();
    let url = db.url_string();
    let (mut measured, mut judged, mut tries) = (0, Vec::new(), 0);
    // A night sent late by this busy machine measures nothing of the target and is run again (at most 2 × NIGHTS).
    while measured < NIGHTS {
        tries += 1;
        assert!(tries <= 2 * NIGHTS, "too many nights sent late: this machine is too busy to measure");
        let child = degrade_child(dir.path(), &["check", "--run-now"], &[("DEGRADE_DATABASE_URL", url.as_str())]);
        let output = child.wait_with_output().await.unwrap();
        let (stdout, stderr) = text(&output);
        let run = store.last_runs("pool", 1).await.unwrap().remove(0);
        let Some(found) = store.capacity(run.id).await.unwrap() else {
            assert_eq!(run.status, RunStatus::Invalid, "only an invalid night skips the search: {stdout}{stderr}");
            continue;
        };
        if found.ended == SearchEnd::GeneratorLimit {
            continue;
        }
        measured += 1;
        eprintln!("night {measured}: {}", found.describe());
        let verdict = store.latest_verdict(run.id).await.unwrap();
        let capacity = verdict.iter().flat_map(|v| &v.findings).find(|f| f.metric == "capacity").cloned();
        if measured > MIN_RUNS && found.ended.measured_the_target() {
            let finding = capacity.unwrap_or_else(|| panic!("night {measured} has no capacity finding: {stdout}"));
            // The capacity is counted with the other findings, as the JSON lists it.
            let verdict = verdict.as_ref().unwrap();
            let unchanged = verdict.findings.iter().filter(|f| f.outcome == FindingOutcome::NoChange).count();
            assert!(verdict.summary.contains(&format!(" {unchanged} unchanged")), "{}", verdict.summary);
            // A passing night's log still says what it held: the capacity is the night's headline.
            if finding.outcome == FindingOutcome::NoChange {
                let line = format!(
                    "  capacity    {} req/s, unchanged (baseline ",
                    degrade::model::rate_text(found.capacity.unwrap())
                );
                assert!(stdout.contains(&line), "{line} in {stdout}");
            }
            judged.push((measured, finding.outcome, finding.reason));
        }
    }
    eprintln!("{judged:#?}");
    assert!(judged.len() >= NIGHTS - MIN_RUNS - 1, "too few nights judged: {judged:#?}");
    let raised: Vec<_> = judged.iter().filter(|(_, outcome, _)| *outcome != FindingOutcome::NoChange).collect();
    assert!(raised.is_empty(), "an unchanged build raised a capacity finding: {raised:#?}");
}
