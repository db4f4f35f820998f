//! The tail test from the stored histograms, on real nights: `degrade check --run-now` through the real binary
//! against `degrade demo-target`, a temp SQLite database, short nights (1 s of warm-up, 10 s measured at 150
//! requests a second). The slowed route gets about 1,050 requests a night, the two others about 225: too few for
//! a p99 of their own, which the tail test judges instead. Assertions are on findings a real change makes plain
//! (2 % of the route's requests 50 ms slower, against a route of a millisecond or so), never on timing. A night
//! the generator could not keep to its schedule (a busy machine) is invalid and is run again, a bounded number
//! of times; where none can be measured the test says "skipped".

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::{degrade_child, http_client, receiver::unused_address, text};

/// The slowed route's metric key (the step's name).
const SLOWED: &str = "GET /boards/{board_id}/cards";

fn scenario() -> &'static str {
    r#"
seed = 7

[target]
base_url = "http://127.0.0.1:1"
timeout = "5s"

[[flow]]
name = "cards"
weight = 14

  [[flow.step]]
  name = "GET /boards/{board_id}/cards"
  path = "/boards/{{ randint(1, 600) }}/cards"
  query = { page = "1", per_page = "20" }
  expect = { status = 200 }

[[flow]]
name = "card"
weight = 3

  [[flow.step]]
  name = "GET /cards/{card_id}"
  path = "/cards/{{ randint(1, 20000) }}"
  expect = { status = 200 }

[[flow]]
name = "boards"
weight = 3

  [[flow.step]]
  name = "GET /boards"
  path = "/boards"
  query = { page = "{{ randint(1, 30) }}", per_page = "20" }
  expect = { status = 200 }

[load]
model = "open"
arrivals = "uniform"
max_in_flight = 200

  [[load.stage]]
  duration = "1s"
  rate = 50
  measure = false

  [[load.stage]]
  duration = "10s"
  rate = 150
"#
}

/// `degrade demo-target` on `port` of 127.0.0.1 as `build`, with `extra` options; waits until it answers.
async fn demo_target(dir: &Path, port: &str, build: &str, extra: &[&str]) -> (tokio::process::Child, String) {
    let args = [&["demo-target", "--port", port, "--build", build], extra].concat();
    let child = degrade_child(dir, &args, &[]);
    let base = format!("http://127.0.0.1:{port}");
    let client = http_client();
    let started = Instant::now();
    while client.get(format!("{base}/healthz")).send().await.is_err() {
        assert!(started.elapsed() < Duration::from_secs(30), "demo-target did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (child, base)
}

/// A project in `dir` whose scenario targets `base`, on its own SQLite file.
fn write_project(dir: &Path, base: &str) {
    let config = format!(
        "[database]\nurl = \"sqlite://tails.db\"\n\n[[scenario]]\nname = \"tails\"\nfile = \"tails.toml\"\n\
         target = \"{base}\"\n\n[scenario.build]\nversion_url = \"{base}/version\"\nversion_pointer = \"/build\"\n"
    );
    std::fs::write(dir.join("degrade.toml"), config).unwrap();
    std::fs::write(dir.join("tails.toml"), scenario()).unwrap();
}

/// One night through the CI step, judged against build 1.0.0's nights: the exit code and the report.
async fn night(dir: &Path) -> (Option<i32>, String) {
    let output =
        degrade_child(dir, &["check", "--run-now", "--baseline", "build:1.0.0"], &[]).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    (output.status.code(), format!("{stdout}{stderr}"))
}

/// The endpoints of a report's regression lines.
fn regressed(report: &str) -> Vec<String> {
    let mut named: Vec<String> = report
        .lines()
        .filter_map(|l| l.strip_prefix("  REGRESSION"))
        .map(|l| l.trim_start().split("  ").next().unwrap_or_default().to_owned())
        .collect();
    named.sort_unstable();
    named.dedup();
    named
}

/// Nights on a measured machine: a night whose run was invalid (the generator fell behind) is not a verdict.
fn measured(report: &str) -> bool {
    !report.contains("is invalid, the load generator could not be trusted")
}

/// Whether every route of the scenario regressed: a night slower as a whole, not on a route.
fn every_route_slower(report: &str) -> bool {
    let named = regressed(report);
    ["GET /boards", "GET /cards/{card_id}", SLOWED].iter().all(|route| named.iter().any(|n| n == route))
}

/// The endpoints named beside the slowed route must be the whole run's `(all)` alone.
fn on_the_route_alone(named: &[String]) -> bool {
    named.iter().any(|n| n == SLOWED) && named.iter().all(|n| n == SLOWED || n == "(all)")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tail_only_change_is_caught_on_its_route_alone_and_unchanged_nights_are_not_flagged() {
    let _apart = crate::support::ONE_HEAVY_TEST_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap();
    // One port for both builds: the nights are one series of one target.
    let port = unused_address().port().to_string();
    let (mut target, base) = demo_target(dir.path(), &port, "1.0.0", &[]).await;
    write_project(dir.path(), &base);
    // Nights until one is judged against five valid ones (at most ten): none may be flagged.
    let (mut judged, mut whole_nights) = (None, 0);
    for n in 1..=10 {
        let (code, report) = night(dir.path()).await;
        assert_ne!(code, Some(2), "night {n} failed: {report}");
        if every_route_slower(&report) && whole_nights < 2 {
            // A night whose every route slowed together, where the machine's own signals (busy CPU, stolen
            // time, loopback echo) did not show why, is blamed on the build by design (DESIGN.md 6.6): CI once
            // had every route's p95 +60–95 %, night and rerun. Not this test's question, twice at most: a
            // third such night is a false alarm of the detector's, and fails.
            whole_nights += 1;
            eprintln!("night {n}: every route slower together; not judged here ({whole_nights} of at most 2)");
            continue;
        }
        assert!(regressed(&report).is_empty(), "unchanged night {n} flagged: {report}");
        if report.contains("verdict: passed") {
            judged = Some(report);
            break;
        }
    }
    let Some(report) = judged else {
        eprintln!("skipped: no night of ten was judged (the machine kept the generator from its schedule)");
        return;
    };
    // A route of ~225 requests gets a tail verdict on its p99 rather than "too few".
    assert!(!report.contains("GET /cards/{card_id} p99"), "{report}");
    target.start_kill().unwrap();
    target.wait().await.unwrap();

    // Build 1.2.0: 2 % of the route's requests 50 ms slower, nothing else changed.
    let args = ["--slowdown-ms", "50", "--slow-route", SLOWED, "--slow-share", "0.02"];
    let (mut target, base) = demo_target(dir.path(), &port, "1.2.0", &args).await;
    assert!(base.ends_with(&port));
    for n in 1..=3 {
        let (code, report) = night(dir.path()).await;
        if measured(&report) && every_route_slower(&report) {
            // As on the unchanged nights above: a night every route of which slowed together (CI once had every
            // route's p50 +60–87 % on this build, night and rerun, with the slowed route's tail caught beside
            // them) says nothing about whether the tail change is named on its route alone.
            eprintln!("build 1.2.0, night {n}: every route slower together; not judged here");
            continue;
        }
        if measured(&report) {
            assert_eq!(code, Some(1), "{report}");
            assert!(on_the_route_alone(&regressed(&report)), "{report}");
            target.start_kill().unwrap();
            target.wait().await.unwrap();
            return;
        }
    }
    eprintln!("skipped: no night of build 1.2.0 of three could be measured on a machine as usual");
}

/// Point 3 of issue 50, measured: how often the tail tests speak on unchanged real nights. Reads the nights kept
/// by `KEEP_DB=/tmp/x.db bash ci/bench-verdicts.sh` (`TAILS_DB=/tmp/x.db cargo test --test degrade
/// stored_unchanged -- --ignored --nocapture`): every valid run of the unchanged build 1.0.0, each judged by the
/// pure judge against the valid unchanged runs before it (at least five, at most 14), and each endpoint's tail
/// test on its own. Prints how many of the tail test's p-values fall at or under 5 %, 1 % and 0.1 % (a
/// calibrated test: about that share), and which test decided each regression finding. It judges without the
/// pipeline's held-back rules, so it counts what the tests alone would say.
#[tokio::test]
#[ignore = "a measurement on a kept bench database (TAILS_DB), not a check"]
async fn the_tail_tests_speak_on_stored_unchanged_nights() {
    use degrade::analysis::Gates;
    use degrade::analysis::judge::{Comparison, judge};
    use degrade::model::{FindingOutcome, LoadModel};

    let Ok(path) = std::env::var("TAILS_DB") else {
        eprintln!("skipped: TAILS_DB names no kept bench database");
        return;
    };
    let nights = unchanged_nights(&path).await;
    let (mut p_values, mut flagged_runs) = (Vec::new(), 0);
    let mut decided: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for i in 5..nights.len() {
        let history: Vec<_> = nights[i.saturating_sub(14)..i].iter().map(|(_, e)| e.clone()).collect();
        let (id, tonight) = &nights[i];
        p_values.extend(tail_p_values(*id, tonight, &history));
        let judgement = judge(tonight, &history, &Gates::default(), Comparison::Nightly, LoadModel::Open);
        let regressions: Vec<_> =
            judgement.findings.iter().filter(|f| f.outcome == FindingOutcome::Regression).collect();
        flagged_runs += usize::from(!regressions.is_empty());
        for f in regressions {
            let by = if f.reason.starts_with("decided by the share of slow") {
                "slow-share test"
            } else if f.reason.starts_with("decided by the share of requests far past") {
                "tail test"
            } else {
                "level or ratio test"
            };
            *decided.entry(format!("{by} ({} {})", f.metric, f.endpoint)).or_default() += 1;
            eprintln!("run #{id}: {} {}: {}", f.endpoint, f.metric, f.reason);
        }
    }
    let under = |alpha: f64| p_values.iter().filter(|p| **p <= alpha).count();
    eprintln!(
        "{} unchanged nights judged ({} valid in all); tail tests: {}, p <= 5 %: {}, <= 1 %: {}, <= 0.1 %: {}",
        nights.len().saturating_sub(5),
        nights.len(),
        p_values.len(),
        under(0.05),
        under(0.01),
        under(0.001)
    );
    eprintln!("runs with a regression finding: {flagged_runs}; findings by deciding test: {decided:?}");
}

/// The valid runs of build 1.0.0 of the bench's scenario in the SQLite file at `path`, oldest first.
async fn unchanged_nights(path: &str) -> Vec<(i64, Vec<degrade::model::EndpointResult>)> {
    use degrade::model::RunStatus;
    use degrade::store::{DatabaseUrl, Store};

    let url = DatabaseUrl::parse(&format!("sqlite://{path}"), Path::new("/")).unwrap();
    let store = Store::connect_existing(&url).await.unwrap();
    let mut nights = Vec::new();
    for run in store.last_runs("demo", 1_000).await.unwrap().iter().rev() {
        let valid = matches!(
            run.status,
            RunStatus::Passed | RunStatus::Regressed | RunStatus::Unconfirmed | RunStatus::Finished
        );
        if valid && run.build_id.as_deref() == Some("1.0.0") {
            nights.push((run.id, store.run_detail(run.id).await.unwrap().unwrap().endpoints));
        }
    }
    nights
}

/// Each endpoint's tail test of run `id` against `history`: its p-value, printed with its figures when ≤ 1 %.
fn tail_p_values(
    id: i64,
    tonight: &[degrade::model::EndpointResult],
    history: &[Vec<degrade::model::EndpointResult>],
) -> Vec<f64> {
    use degrade::analysis::sample::Sample;
    use degrade::analysis::tail::tail_share;

    let mut p_values = Vec::new();
    for endpoint in tonight {
        let samples: Vec<Sample> = history
            .iter()
            .filter_map(|night| night.iter().find(|e| e.endpoint == endpoint.endpoint))
            .map(Sample::from_result)
            .collect();
        let Some(t) = tail_share(&Sample::from_result(endpoint), &samples, 0.1, 5) else { continue };
        if t.p <= 0.01 {
            let (rate, wobble) = (100.0 * t.history.rate(), t.history.log_wobble_var.sqrt().exp());
            eprintln!(
                "run #{id}: {} tail test p {:.1e}: {} of {} past {:.2} ms ({:.2} % against {rate:.2} %, ×{wobble:.1}), \
                 effect {}",
                endpoint.endpoint,
                t.p,
                t.hits,
                t.timed,
                t.threshold_ms,
                100.0 * t.tonight(),
                t.is_effect()
            );
        }
        p_values.push(t.p);
    }
    p_values
}
