//! Telemetry from Prometheus exporters: a real night with Debian's node_exporter (and postgres_exporter on the
//! PostgreSQL variant) scraped while it runs, stored with the run and drawn on its page; exporters that hang,
//! fail, send 100 MB, garbage or too many series, none of which loses the night; `validate` and
//! `telemetry probe` through the real binary.

use degrade::model::TelemetryStatus;
use degrade::store::Store;

use crate::support::app::TestApp;
use crate::support::exporters::{Broken, broken_exporter, node_exporter, postgres_exporter};
use crate::support::target::StubTarget;
use crate::support::telemetry_night::{project_with, run_night, source_named};
use crate::support::{TestDb, assert_measured, degrade, degrade_child, text};

/// A `[[scenario.telemetry]]` table scraping `url` every second.
fn source(name: &str, url: &str, rest: &str) -> String {
    format!("[[scenario.telemetry]]\nname = \"{name}\"\nkind = \"scrape\"\nurl = \"{url}\"\nevery = \"1s\"\n{rest}\n")
}

async fn a_night_keeps_what_the_exporters_said(db: TestDb, with_postgres: bool) {
    let Some(node) = node_exporter().await else { return };
    let postgres = if with_postgres { postgres_exporter().await } else { None };
    let target = StubTarget::start().await;
    let mut telemetry = source("host", &node.url, "exporter = \"node_exporter\"");
    if let Some(postgres) = &postgres {
        telemetry.push_str(&source("db", &postgres.url, "exporter = \"postgres_exporter\"\ntimeout = \"1s\""));
    }
    let (dir, _) = project_with(&target, &telemetry);
    let stdout = run_night(&dir, &db).await;
    assert!(stdout.contains("Telemetry, over the measured stages:") && stdout.contains("CPU busy"), "{stdout}");
    crate::support::quoted::assert_quoted("run-telemetry", &stdout);

    let store = Store::connect(&db.url).await.unwrap();
    let run = store.run_detail(1).await.unwrap().unwrap().run;
    assert_measured(run.status, &run.validity_reasons);
    let stored = store.telemetry(1).await.unwrap();
    let host = source_named(&stored, "host");
    // Every second of the 5 measured ones, from its start to its end: 6 scrapes, unless this machine was too
    // slow to scrape on time (a late scrape skips the ones it overran).
    assert!(host.scrapes >= 2 && host.failed_scrapes == 0, "{host:?}");
    let names: Vec<&str> = host.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["CPU busy", "iowait", "memory used"]);
    let busy = &host.series[0];
    let summary = busy.summary.expect("CPU busy has a mean");
    // A share of all CPU time, and its mean (a ratio of sums) under its highest interval, to float rounding on a
    // machine whose CPUs were all busy.
    assert!((0.0..=1.0 + 1e-9).contains(&summary.mean) && summary.max >= summary.mean - 1e-9, "{busy:?}");
    assert!(summary.per_1000_requests.is_some_and(|cpu| cpu > 0.0), "{busy:?}");
    // The rates are stamped inside the measured stages (1 s to 6 s on the latency timeline's clock).
    assert!(busy.points.iter().all(|p| (1_000..=6_500).contains(&p.elapsed_ms)), "{:?}", busy.points);
    let memory = &host.series[2];
    assert!(memory.points.len() as u32 == host.scrapes && memory.summary.unwrap().mean > 1e6, "{memory:?}");
    if postgres.is_some() {
        let db_source = source_named(&stored, "db");
        let connections = &db_source.series[0];
        // The exporter's own connection, at least.
        assert!(connections.summary.is_some_and(|s| s.max >= 1.0), "{db_source:?}");
    }

    let app = TestApp::spawn(&db).await;
    let (status, page) = app.get("/runs/1").await;
    assert_eq!(status, 200);
    assert!(page.contains("Telemetry: the server&#39;s side") || page.contains("Telemetry: the server's side"));
    assert!(page.contains("host · CPU busy") && page.contains("class=\"server-side-chart\""), "{page}");
    assert!(page.contains("per 1,000 requests") || page.contains("Per 1,000 requests"));
    let (status, json) = app.get_json("/api/v1/runs/1").await;
    assert_eq!(status, 200);
    let host_json = &json["telemetry"][0];
    assert_eq!((host_json["name"].as_str(), host_json["status"].as_str()), (Some("host"), Some("complete")));
    // serde_json reads floats back to within an ulp, not bit for bit.
    let mean = host_json["series"][0]["summary"]["mean"].as_f64().unwrap_or(f64::NAN);
    assert!((mean - summary.mean).abs() < 1e-12, "{json}");
    assert_eq!(host_json["series"][2]["points"].as_array().map(Vec::len), Some(memory.points.len()));

    // Night over night on the scenario's trend page: CPU busy per 1,000 requests (a counter's cost), memory by
    // its mean and highest value, each run a dot that leads to it.
    let (status, trend) = app.get("/scenarios/checkout").await;
    assert_eq!(status, 200);
    let server_side = trend.split("id=\"telemetry\"").nth(1).unwrap_or_else(|| panic!("no server side: {trend}"));
    assert!(server_side.contains("host · CPU busy") && server_side.contains("host · memory used"), "{server_side}");
    assert!(server_side.contains("growth per 1,000 requests") && server_side.contains("href=\"/runs/1\""));
}

#[tokio::test]
async fn a_night_keeps_node_exporter_telemetry_on_sqlite() {
    a_night_keeps_what_the_exporters_said(TestDb::sqlite(), false).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: `source ci/postgres.sh`, then `cargo test -- --include-ignored`"]
async fn a_night_keeps_node_and_postgres_exporter_telemetry_on_postgres() {
    a_night_keeps_what_the_exporters_said(TestDb::postgres().await, true).await;
}

#[tokio::test]
async fn exporters_that_hang_fail_or_send_garbage_never_lose_the_night() {
    let target = StubTarget::start().await;
    let cases = [
        ("hangs", Broken::Hangs, "the exporter did not answer within 1s"),
        ("fails", Broken::Fails, "the exporter answered 500 Internal Server Error"),
        ("huge", Broken::Huge, "the answer is longer than 4 MiB"),
        ("garbage", Broken::Malformed, "line 2 of the answer is not the Prometheus text format: `<html>"),
        ("crowded", Broken::TooManySeries, "the answer holds more than 100,000 samples"),
    ];
    let mut servers = Vec::new();
    let mut telemetry = String::new();
    let series = "[[scenario.telemetry.series]]\nname = \"up\"\nmetric = \"up\"\nkind = \"gauge\"\nunit = \"targets\"";
    for (name, how, _) in cases {
        let (url, server) = broken_exporter(how).await;
        servers.push(server);
        telemetry.push_str(&source(name, &url, &format!("timeout = \"1s\"\n{series}")));
    }
    let (dir, _) = project_with(&target, &telemetry);
    let db = TestDb::sqlite();
    let stdout = run_night(&dir, &db).await;

    let store = Store::connect(&db.url).await.unwrap();
    let detail = store.run_detail(1).await.unwrap().unwrap();
    assert_measured(detail.run.status, &detail.run.validity_reasons);
    assert!(detail.endpoints.iter().any(|e| e.endpoint == "GET /fast" && e.requests > 0));
    let stored = store.telemetry(1).await.unwrap();
    for (name, _, why) in cases {
        let source = source_named(&stored, name);
        assert_eq!(source.status, TelemetryStatus::Missing, "{source:?}");
        let reason = source.reason.as_deref().unwrap_or_default();
        assert!(reason.contains(why), "{name}: {reason}");
        assert!(source.series.iter().all(|s| s.points.is_empty() && s.summary.is_none()), "{source:?}");
        assert!(stdout.contains(&format!("  {name} (0 of ")), "{stdout}");
    }

    let app = TestApp::spawn(&db).await;
    let (status, page) = app.get("/runs/1").await;
    assert_eq!(status, 200);
    assert!(page.contains("hangs: telemetry missing, nothing could be read"), "{page}");
    assert!(page.contains("the answer holds more than 100,000 samples"), "{page}");
    drop(servers);
}

#[tokio::test]
async fn validate_lists_the_series_and_probe_reads_them_once() {
    let Some(node) = node_exporter().await else { return };
    let target = StubTarget::start().await;
    let (failing, _server) = broken_exporter(Broken::Fails).await;
    let custom = "bearer_token_env = \"NODE_TOKEN\"\n[[scenario.telemetry.series]]\nname = \"free memory\"\n\
                  metric = \"node_memory_MemFree_bytes\"\nkind = \"gauge\"\nunit = \"bytes\"\nworse = \"lower\"\n\
                  [[scenario.telemetry.series]]\nname = \"cpu time\"\nmetric = \"node_cpu_seconds_total\"\n\
                  kind = \"gauge\"\nunit = \"CPU s\"";
    let telemetry = source("host", &node.url, "exporter = \"node_exporter\"") + &source("api", &node.url, custom);
    let (dir, _) = project_with(&target, &telemetry);
    let output = degrade(dir.path(), &["validate"], &[("NODE_TOKEN", "s3cret-token")]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("telemetry host (node_exporter): scrape {} every 1s (timeout 1s)", node.url)));
    assert!(
        stdout.contains(
            "CPU busy (share, counter; higher is worse) = rate(sum(node_cpu_seconds_total{mode!=\"idle\"})) / \
         rate(sum(node_cpu_seconds_total))"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("bearer token from $NODE_TOKEN (set)"), "{stdout}");
    assert!(stdout.contains("free memory (bytes, gauge; lower is worse) = sum(node_memory_MemFree_bytes)"), "{stdout}");
    assert!(!stdout.contains("s3cret") && !stderr.contains("s3cret"));

    let output = degrade(dir.path(), &["telemetry", "probe", "checkout"], &[("NODE_TOKEN", "s3cret-token")]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("checkout / host: ") && stdout.contains(" samples read in "), "{stdout}");
    assert!(stdout.contains("a night keeps its rate as a share"), "{stdout}");
    assert!(stdout.lines().any(|l| l.trim_start().starts_with("free memory") && l.contains("1 sample: ")), "{stdout}");
    // A counter read as a gauge is kept as a level that only grows: the probe says what the exporter declares.
    assert!(
        stdout.contains(
            "note: the exporter declares it a counter (its # TYPE line), and this series reads it as a gauge"
        ),
        "{stdout}"
    );

    let broken = source("db", &failing, "exporter = \"postgres_exporter\"");
    let (dir, _) = project_with(&target, &broken);
    // The broken exporter is served by this test's runtime: the binary is awaited, not waited for.
    let output = degrade_child(dir.path(), &["telemetry", "probe"], &[]).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stdout.contains("checkout / db: ") && stdout.contains("not read: the exporter answered 500"), "{stdout}");
}
