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

/// The endpoints named beside the slowed route must be the whole run's `(all)` alone.
fn on_the_route_alone(named: &[String]) -> bool {
    named.iter().any(|n| n == SLOWED) && named.iter().all(|n| n == SLOWED || n == "(all)")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tail_only_change_is_caught_on_its_route_alone_and_unchanged_nights_are_not_flagged() {
    let _apart = crate::support::NOT_BESIDE_CHROMIUM.lock().await;
    let dir = tempfile::tempdir().unwrap();
    // One port for both builds: the nights are one series of one target.
    let port = unused_address().port().to_string();
    let (mut target, base) = demo_target(dir.path(), &port, "1.0.0", &[]).await;
    write_project(dir.path(), &base);
    // Nights until one is judged against five valid ones (at most ten): none may be flagged.
    let mut judged = None;
    for n in 1..=10 {
        let (code, report) = night(dir.path()).await;
        assert_ne!(code, Some(2), "night {n} failed: {report}");
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
    for _ in 0..3 {
        let (code, report) = night(dir.path()).await;
        if measured(&report) {
            assert_eq!(code, Some(1), "{report}");
            assert!(on_the_route_alone(&regressed(&report)), "{report}");
            target.start_kill().unwrap();
            target.wait().await.unwrap();
            return;
        }
    }
    eprintln!("skipped: no night of build 1.2.0 of three could be measured");
}
