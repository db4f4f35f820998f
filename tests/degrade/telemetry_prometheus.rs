//! The `prometheus` telemetry source: a real night against Debian's Prometheus server scraping a real
//! node_exporter, its series queried over the run's window and stored like scraped ones (a bad PromQL leaves
//! its series missing with Prometheus' words, the night kept); servers that refuse the connection, hang, fail
//! or answer garbage, none of which loses the night; `validate` and `telemetry probe` through the real binary.
//! Skipped, saying so, where Prometheus or node_exporter is not installed (`.ci/run` installs them).

use degrade::model::TelemetryStatus;
use degrade::store::Store;

use crate::support::app::TestApp;
use crate::support::exporters::{Broken, broken_exporter, free_port, node_exporter};
use crate::support::prometheus::prometheus_scraping;
use crate::support::target::StubTarget;
use crate::support::telemetry_night::{project_with, run_night, source_named};
use crate::support::{TestDb, assert_measured, degrade_child, text};

/// CPU busy as a share over the last 5 s of scrapes, taken as it is.
const BUSY: &str = r#"sum(rate(node_cpu_seconds_total{mode!="idle"}[5s])) / sum(rate(node_cpu_seconds_total[5s]))"#;

/// A `[[scenario.telemetry]]` of kind `prometheus` at `url`, a value a second, with `series` as
/// `(name, query, kind, unit)`.
fn prometheus_source(name: &str, url: &str, rest: &str, series: &[(&str, &str, &str, &str)]) -> String {
    let mut text = format!(
        "[[scenario.telemetry]]\nname = \"{name}\"\nkind = \"prometheus\"\nurl = \"{url}\"\nevery = \"1s\"\n{rest}\n"
    );
    for (name, query, kind, unit) in series {
        text.push_str(&format!(
            "[[scenario.telemetry.series]]\nname = \"{name}\"\nquery = '{query}'\nkind = \"{kind}\"\nunit = \"{unit}\"\n"
        ));
    }
    text
}

fn node_series() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    vec![
        ("CPU busy", BUSY, "gauge", "share"),
        ("CPU time", r#"sum(node_cpu_seconds_total{mode!="idle"})"#, "counter", "CPU s"),
        ("memory used", "node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes", "gauge", "bytes"),
        ("typo", "sum(rate(node_cpu_seconds_total[5s])", "gauge", "share"),
    ]
}

#[tokio::test]
async fn a_night_keeps_what_prometheus_answers_over_its_window() {
    let Some(node) = node_exporter().await else { return };
    let Some(prometheus) = prometheus_scraping(&node.url, 3).await else { return };
    let target = StubTarget::start().await;
    let (dir, _) = project_with(&target, &prometheus_source("prom", &prometheus.url, "", &node_series()));
    let db = TestDb::sqlite();
    let stdout = run_night(&dir, &db).await;
    assert!(stdout.contains("CPU busy") && stdout.contains("memory used"), "{stdout}");

    let store = Store::connect(&db.url).await.unwrap();
    let run = store.run_detail(1).await.unwrap().unwrap().run;
    assert_measured(run.status, &run.validity_reasons);
    let stored = store.telemetry(1).await.unwrap();
    let prom = source_named(&stored, "prom");
    // Three queries answered, the typo refused: the source is partial, and says why.
    assert_eq!((prom.status, prom.scrapes, prom.failed_scrapes), (TelemetryStatus::Partial, 4, 1), "{prom:?}");
    let [busy, cpu, memory, typo] = prom.series.as_slice() else { panic!("{prom:?}") };
    // One value a second inside the 5 measured seconds, half a step in from either end, on the latency
    // timeline's clock (1 s to 6 s): samples Prometheus took inside the stage, none of the warm-up's.
    let inside = |p: &degrade::model::TelemetryPoint| (1_500..=5_500).contains(&p.elapsed_ms);
    assert!(busy.points.len() >= 4 && busy.points.iter().all(inside), "{busy:?}");
    let summary = busy.summary.expect("CPU busy has a mean");
    assert!((0.0..=1.0 + 1e-9).contains(&summary.mean) && summary.max >= summary.mean - 1e-9, "{busy:?}");
    assert_eq!((busy.unit.as_str(), busy.status), ("share", TelemetryStatus::Complete), "{busy:?}");
    // A counter's rate between steps, and its cost per 1,000 requests (the machine's CPUs never stand still).
    assert_eq!(cpu.unit, "CPU s/s");
    assert!(cpu.summary.is_some_and(|s| s.per_1000_requests.is_some_and(|c| c > 0.0)), "{cpu:?}");
    assert!(memory.summary.is_some_and(|s| s.mean > 1e6), "{memory:?}");
    assert_eq!(typo.status, TelemetryStatus::Missing);
    let why = typo.reason.as_deref().unwrap_or_default();
    assert!(why.starts_with("Prometheus refused the query (bad_data): "), "{why}");
    assert!(prom.reason.as_deref().is_some_and(|r| r.starts_with("1 of 4 queries gave nothing")), "{prom:?}");

    let app = TestApp::spawn(&db).await;
    let (status, page) = app.get("/runs/1").await;
    assert_eq!(status, 200);
    assert!(page.contains("prom · CPU busy") && page.contains("class=\"server-side-chart\""), "{page}");
    assert!(page.contains("Prometheus refused the query (bad_data)"), "{page}");
}

#[tokio::test]
async fn a_prometheus_that_hangs_fails_or_answers_garbage_never_loses_the_night() {
    let target = StubTarget::start().await;
    let nobody = format!("http://127.0.0.1:{}", free_port().await);
    let mut servers = Vec::new();
    let mut cases = vec![("absent", nobody, "cannot connect to Prometheus")];
    for (name, how, why) in [
        ("hangs", Broken::Hangs, "Prometheus did not answer within 1s"),
        ("fails", Broken::Fails, "Prometheus answered 500 Internal Server Error"),
        ("garbage", Broken::Malformed, "the answer is not Prometheus' query API JSON"),
    ] {
        let (url, server) = broken_exporter(how).await;
        servers.push(server);
        cases.push((name, url.trim_end_matches("/metrics").to_owned(), why));
    }
    let series = [("load", "node_load1", "gauge", "load"), ("busy", BUSY, "gauge", "share")];
    let telemetry: String =
        cases.iter().map(|(name, url, _)| prometheus_source(name, url, "timeout = \"1s\"", &series)).collect();
    let (dir, _) = project_with(&target, &telemetry);
    let db = TestDb::sqlite();
    run_night(&dir, &db).await;

    let store = Store::connect(&db.url).await.unwrap();
    let detail = store.run_detail(1).await.unwrap().unwrap();
    assert_measured(detail.run.status, &detail.run.validity_reasons);
    assert!(detail.endpoints.iter().any(|e| e.endpoint == "GET /fast" && e.requests > 0));
    let stored = store.telemetry(1).await.unwrap();
    for (name, _, why) in &cases {
        let source = source_named(&stored, name);
        assert_eq!(source.status, TelemetryStatus::Missing, "{source:?}");
        assert!(source.reason.as_deref().unwrap_or_default().contains(why), "{name}: {source:?}");
        // The server is asked once: its second series is not asked again, and says the same.
        assert!(source.series.iter().all(|s| s.points.is_empty() && s.reason == source.reason), "{source:?}");
    }
    drop(servers);
}

#[tokio::test]
async fn validate_lists_the_queries_and_probe_asks_each_once() {
    let Some(node) = node_exporter().await else { return };
    let Some(prometheus) = prometheus_scraping(&node.url, 3).await else { return };
    let target = StubTarget::start().await;
    let rest = "bearer_token_env = \"PROM_TOKEN\"";
    let (dir, _) = project_with(&target, &prometheus_source("prom", &prometheus.url, rest, &node_series()));
    let env = [("PROM_TOKEN", "s3cret-token")];
    let output = degrade_child(dir.path(), &["validate"], &env).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let expected = format!(
        "telemetry prom: query Prometheus at {} after the run, a value every 1s (timeout 10s a query), bearer \
         token from $PROM_TOKEN (set), keeping:",
        prometheus.url
    );
    assert!(stdout.contains(&expected), "{stdout}");
    assert!(stdout.contains(&format!("CPU busy (share, gauge; higher is worse) = {BUSY}")), "{stdout}");
    assert!(
        stdout.contains(
            "CPU time (CPU s/s, counter; higher is worse) = rate(sum(node_cpu_seconds_total{mode!=\"idle\"}))"
        ),
        "{stdout}"
    );

    let output = degrade_child(dir.path(), &["telemetry", "probe"], &env).wait_with_output().await.unwrap();
    let (stdout, stderr) = text(&output);
    // The typo gives no value: the probe says so and exits 2.
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("checkout / prom: Prometheus at {}: 4 queries asked in ", prometheus.url)));
    let line = |name: &str| stdout.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_default().to_owned();
    assert!(line("CPU busy").contains(" now ") && line("CPU busy").ends_with(" %"), "{stdout}");
    assert!(line("memory used").contains("now ") && line("memory used").contains("iB"), "{stdout}");
    assert!(line("CPU time").contains("CPU s in all so far; a night keeps its rate, from steps 1s apart"), "{stdout}");
    assert!(line("typo").contains("not read: Prometheus refused the query (bad_data): "), "{stdout}");
    assert!(!stdout.contains("s3cret") && !stderr.contains("s3cret"));
    crate::support::quoted::assert_quoted("probe-prometheus", &stdout);
}
