//! Telemetry judged through the real binary, no stand-ins: the demo target (`degrade demo-target`, its own
//! process, so the CPU it reports at /metrics is its own) scraped every second while `check --run-now` loads
//! it. Build 1.1 does twice the CPU work per request after each answer, so its latency holds on a machine with
//! headroom: the night is regressed on CPU per 1,000 requests alone, confirmed by the rerun (which scrapes
//! too), and alerted once.

use std::time::Duration;

use degrade::model::RunStatus;
use degrade::store::{DatabaseUrl, Store};

use crate::slow_target::{Spoiled, again_while_spoiled};
use crate::support::receiver::{Receiver, unused_address};
use crate::support::{degrade_child, project, text};

/// The demo target's extra CPU work per request: build 1.0's, and twice that for build 1.1. Several times what
/// the (debug-built) target itself spends on a request, so twice the work reads as +70 % or more.
const BURN_US: u64 = 12_000;

/// Valid nights of history before build 1.1. The CPU time of a fixed piece of work moves by 10–30 % from night
/// to night on this shared 2-core machine, with what the other tests run beside it (a core's sibling thread
/// busy slows every instruction): seven nights measure that noise well enough for +70 % to stand out from it at
/// the run's 1 % false-alarm rate, where five left it in doubt one run in three.
const HISTORY: i32 = 7;

/// `degrade demo-target` on `address` as `build`, burning `burn_us` per request, once it answers.
async fn demo_target(address: std::net::SocketAddr, build: &str, burn_us: u64) -> tokio::process::Child {
    let dir = tempfile::tempdir().unwrap();
    let (port, burn) = (address.port().to_string(), burn_us.to_string());
    let args = ["demo-target", "--port", &port, "--build", build, "--burn-cpu-us", &burn];
    let mut child = degrade_child(dir.path(), &args, &[]);
    let client = crate::support::http_client();
    let health = format!("http://{address}/healthz");
    for _ in 0..600 {
        if client.get(&health).send().await.is_ok_and(|r| r.status().is_success()) {
            return child;
        }
        assert!(child.try_wait().unwrap().is_none(), "the demo target exited: {:?}", child.wait_with_output().await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the demo target did not answer within 30 s");
}

/// One scenario reading a board at 10/s for 5 s (about a quarter of a core burnt for build 1.1), its build
/// from /version, the target's CPU scraped every second, alerting to the webhook in HOOK. The latency metrics
/// need 3× their usual figure to count: the other tests of this binary come and go on this machine and move a
/// route answering in about a millisecond by tens of percent, and this test is about the server's side (the
/// CPU per request takes the scenario's 10 %).
fn project_for(address: std::net::SocketAddr) -> tempfile::TempDir {
    let config = format!(
        "[[scenario]]\nname = \"api\"\nfile = \"scenarios/api.toml\"\ntarget = \"http://{address}\"\n\
         [scenario.build]\nversion_url = \"http://{address}/version\"\nversion_pointer = \"/build\"\n\
         [scenario.gates]\nbusy_machine_inconclusive = false\n\
         metric_min_effect_pct = {{ p50 = 200, p95 = 200, p99 = 200 }}\n\
         [[scenario.telemetry]]\nname = \"api\"\nkind = \"scrape\"\nurl = \"http://{address}/metrics\"\n\
         every = \"1s\"\n\
         [[scenario.telemetry.series]]\nname = \"CPU\"\nmetric = \"process_cpu_seconds_total\"\nkind = \"counter\"\n\
         unit = \"CPU s\"\n\n\
         [[notify]]\nname = \"team\"\nkind = \"json\"\nurl_env = \"HOOK\"\n"
    );
    let scenario = "[[flow]]\nname = \"board\"\n[[flow.step]]\npath = \"/boards/1\"\n\
                    [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"5s\"\nrate = 10\n";
    project(&config, &[("scenarios/api.toml", scenario)]).0
}

async fn night(dir: &tempfile::TempDir, hook: &Receiver) -> (Option<i32>, String) {
    let url = hook.url();
    let output =
        degrade_child(dir.path(), &["check", "--run-now"], &[("HOOK", url.as_str())]).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    (output.status.code(), format!("{stdout}{stderr}"))
}

/// Each run's status and CPU per 1,000 requests, to read a failure by.
async fn cpu_by_night(store: &Store) -> String {
    let mut nights = Vec::new();
    for run in store.last_runs("api", 30).await.unwrap().into_iter().rev() {
        let telemetry = store.telemetry_summaries(run.id).await.unwrap();
        let cpu = telemetry.sources.first().and_then(|s| s.series.first()).and_then(|s| s.summary);
        let per_1000 = cpu.and_then(|c| c.per_1000_requests).map_or("-".to_owned(), |c| format!("{c:.2}"));
        nights.push(format!("#{} {} {per_1000}", run.id, run.status));
    }
    nights.join(", ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twice_the_cpu_per_request_is_a_confirmed_regression_alerted_once() {
    if !cfg!(target_os = "linux") {
        eprintln!("skipped: the demo target reads its CPU from /proc, which only Linux has");
        return;
    }
    let _apart = crate::support::ONE_HEAVY_TEST_AT_A_TIME.lock().await;
    again_while_spoiled(a_build_burning_twice_the_cpu).await;
}

/// Seven valid nights of build 1.0, then build 1.1's night: regressed on CPU alone, confirmed, alerted once.
async fn a_build_burning_twice_the_cpu() -> Result<(), Spoiled> {
    let address = unused_address();
    let hook = Receiver::start().await;
    let dir = project_for(address);
    let store = Store::connect(&DatabaseUrl::Sqlite(dir.path().join("degrade.db"))).await.unwrap();

    let mut target = demo_target(address, "1.0", BURN_US).await;
    history_of_build_1_0(&dir, &hook, &store).await;
    let telemetry = store.telemetry(store.last_runs("api", 1).await.unwrap()[0].id).await.unwrap();
    let cpu = telemetry.sources[0].series[0].summary.expect("the target's CPU was scraped");
    assert!(cpu.per_1000_requests.is_some_and(|c| c > BURN_US as f64 / 1000.0 * 0.8), "{cpu:?}");

    target.kill().await.unwrap();
    // Killed when dropped, the story's end or a spoiled night's.
    let _target = demo_target(address, "1.1", 2 * BURN_US).await;
    let (code, output, before) = build_1_1_s_night(&dir, &hook, &store).await?;
    assert_eq!(code, Some(1), "{output}\nCPU per 1,000 requests night by night: {}", cpu_by_night(&store).await);
    assert!(output.contains("REGRESSION  api  CPU per 1,000 requests (CPU s)  "), "{output}");
    assert!(!output.contains("REGRESSION  (all)") && !output.contains("REGRESSION  GET"), "latency held: {output}");
    assert!(output.contains("regressed again on api CPU per 1,000 requests (CPU s)"), "{output}");
    crate::support::quoted::assert_quoted("telemetry-regression", &output);
    let first = store.find_run(before + 1).await.unwrap().unwrap();
    assert_eq!((first.status, first.build_id.as_deref()), (RunStatus::Regressed, Some("1.1")), "{output}");
    // The rerun that decided it.
    let rerun = store.last_runs("api", 1).await.unwrap().remove(0);
    assert_eq!((rerun.status, store.confirmed_by(rerun.id).await.unwrap()), (RunStatus::Regressed, Some(first.id)));
    assert!(!store.telemetry(rerun.id).await.unwrap().sources.is_empty(), "the rerun scraped too");

    let delivered = hook.delivered();
    assert_eq!(delivered.len(), 1, "one alert: {delivered:?}");
    let worse = delivered[0]["worse"].as_array().unwrap();
    assert_eq!(worse.len(), 1, "{delivered:?}");
    assert_eq!((worse[0]["endpoint"].as_str(), worse[0]["unit"].as_str()), (Some("api"), Some("CPU s")));
    assert_eq!(worse[0]["metric"], "CPU per 1,000 requests (CPU s)");
    let change = worse[0]["delta_pct"].as_f64().unwrap();
    assert!(change > 30.0, "twice the burn, on top of the target's own work per request: {change} %");

    // Night over night, the trend page's CPU series carries the regression on the first run of build 1.1.
    let now = chrono::Utc::now();
    let span = degrade::store::TrendSpan {
        scenario: "api",
        series: &first.scenario_hash,
        from: now - chrono::Duration::days(1),
        to: now + chrono::Duration::days(1),
        buckets: 60,
    };
    let trend = store.telemetry_trend(span).await.unwrap();
    let regressed: Vec<i64> = trend.nights.iter().filter(|n| n.regressed).map(|n| n.run_id).collect();
    assert_eq!(regressed, [first.id, rerun.id], "{:?}", trend.nights);
    store.close().await;
    Ok(())
}

/// [`HISTORY`] valid nights of build 1.0; a night this busy machine made invalid does not count.
async fn history_of_build_1_0(dir: &tempfile::TempDir, hook: &Receiver, store: &Store) {
    let mut valid = 0;
    for night_number in 1..=3 * HISTORY {
        let (code, output) = night(dir, hook).await;
        assert!(matches!(code, Some(0 | 3)), "history night {night_number}: {output}");
        let run = store.last_runs("api", 1).await.unwrap().remove(0);
        valid += i32::from(run.status.is_valid_measurement());
        if valid == HISTORY {
            return;
        }
    }
    panic!("too few valid history nights: this machine is too busy to measure");
}

/// Build 1.1's night, judged: (its exit code, its output, the last run before it). A night whose first run this
/// busy machine made invalid (requests sent late) judges nothing and is run again; one whose every rerun was
/// invalid had its first verdict stand and alerted, and is history now, so the story starts again ([`Spoiled`]).
async fn build_1_1_s_night(
    dir: &tempfile::TempDir,
    hook: &Receiver,
    store: &Store,
) -> Result<(Option<i32>, String, i64), Spoiled> {
    for _ in 0..6 {
        let before = store.last_runs("api", 1).await.unwrap()[0].id;
        let (code, output) = night(dir, hook).await;
        let made = store.last_runs("api", 5).await.unwrap();
        let made: Vec<_> = made.iter().filter(|r| r.id > before).collect();
        let (first, last) = (made.iter().min_by_key(|r| r.id), made.iter().max_by_key(|r| r.id));
        if first.is_none_or(|r| r.status == RunStatus::Invalid) {
            continue;
        }
        if last.is_some_and(|r| r.status == RunStatus::Invalid) {
            return Err(Spoiled(format!("every rerun of build 1.1's first run #{} was invalid: {output}", before + 1)));
        }
        return Ok((code, output, before));
    }
    panic!("six nights in a row had an invalid first run: this machine is too busy to measure anything");
}
