#![allow(clippy::float_cmp, reason = "the figures here are exact in binary")]

use std::time::Duration;

use super::*;
use crate::config::exporters::Exporter;
use crate::telemetry::read;

fn node_source() -> TelemetrySource {
    TelemetrySource {
        name: "api-host".to_owned(),
        kind: crate::config::SourceKind::Scrape,
        url: "http://127.0.0.1:9100/metrics".to_owned(),
        exporter: Some(Exporter::Node),
        every: Duration::from_secs(5),
        timeout: Duration::from_secs(5),
        auth: None,
        series: Exporter::Node.series(),
        limits: Vec::new(),
    }
}

/// node_exporter's answer with two CPUs: `busy` and `idle` CPU seconds on each, `iowait` on the first.
fn node_answer(busy: f64, idle: f64, iowait: f64, available: f64) -> Vec<u8> {
    format!(
        "# TYPE node_cpu_seconds_total counter\n\
         node_cpu_seconds_total{{cpu=\"0\",mode=\"idle\"}} {idle}\nnode_cpu_seconds_total{{cpu=\"0\",mode=\"user\"}} {busy}\n\
         node_cpu_seconds_total{{cpu=\"0\",mode=\"iowait\"}} {iowait}\n\
         node_cpu_seconds_total{{cpu=\"1\",mode=\"idle\"}} {idle}\nnode_cpu_seconds_total{{cpu=\"1\",mode=\"user\"}} {busy}\n\
         node_cpu_seconds_total{{cpu=\"1\",mode=\"iowait\"}} 0\n\
         node_memory_MemTotal_bytes 8e9\nnode_memory_MemAvailable_bytes {available}\n"
    )
    .into_bytes()
}

fn scraped(at_s: i64, window: usize, body: &[u8]) -> ScrapeOutcome {
    ScrapeOutcome { elapsed_ms: at_s * 1000, window, result: read(body, &node_source().series) }
}

fn failed(at_s: i64, why: &str) -> ScrapeOutcome {
    ScrapeOutcome { elapsed_ms: at_s * 1000, window: 0, result: Err(why.to_owned()) }
}

const COMPLETED: Completed = Completed { requests: 10_000, measured_secs: 100.0 };

#[test]
fn counters_become_rates_and_shares_and_gauges_keep_their_level() {
    // CPU seconds grow by 2 (busy) and 8 (idle) per CPU every 10 s, iowait by 1 on one CPU: 20 % busy.
    let outcomes = [
        scraped(10, 0, &node_answer(100.0, 400.0, 10.0, 6e9)),
        scraped(20, 0, &node_answer(102.0, 407.0, 11.0, 5e9)),
        scraped(30, 0, &node_answer(106.0, 413.0, 12.0, 4e9)),
    ];
    let source = source_telemetry(&node_source(), &outcomes, COMPLETED);
    assert_eq!((source.status, source.reason.as_deref(), source.scrapes), (TelemetryStatus::Complete, None, 3));
    let [busy, iowait, memory] = source.series.as_slice() else { panic!("{:?}", source.series) };
    // Busy: user and iowait are not idle; per pair (2+2+1) / (2+2+1+7+7) and (4+4+1) / (4+4+1+6+6).
    let values: Vec<(i64, f64)> = busy.points.iter().map(|p| (p.elapsed_ms, p.value)).collect();
    assert_eq!(values, [(20_000, 5.0 / 19.0), (30_000, 9.0 / 21.0)]);
    let summary = busy.summary.unwrap();
    assert!((summary.mean - 14.0 / 40.0).abs() < 1e-12, "{summary:?}");
    assert_eq!(summary.max, 9.0 / 21.0);
    // 14 CPU seconds in 20 s, at 100 requests a second: 7 CPU s per 1,000 requests.
    assert!((summary.per_1000_requests.unwrap() - 7.0).abs() < 1e-9, "{summary:?}");
    assert_eq!((busy.unit.as_str(), busy.count_unit.as_deref()), ("share", Some("CPU s")));
    assert_eq!(iowait.points.len(), 2);
    // Memory used: 8 GB total less what is available.
    let used: Vec<f64> = memory.points.iter().map(|p| p.value).collect();
    assert_eq!(used, [2e9, 3e9, 4e9]);
    assert_eq!(memory.summary.unwrap(), SeriesSummary { mean: 3e9, max: 4e9, per_1000_requests: None });
}

#[test]
fn failed_scrapes_leave_gaps_and_say_why_and_a_reset_gives_no_rate() {
    let outcomes = [
        scraped(10, 0, &node_answer(100.0, 400.0, 10.0, 6e9)),
        failed(15, "the exporter answered 500 Internal Server Error"),
        scraped(20, 0, &node_answer(102.0, 407.0, 11.0, 5e9)),
        // Restarted: its counters began again from zero.
        scraped(30, 0, &node_answer(1.0, 4.0, 0.0, 5e9)),
        scraped(40, 0, &node_answer(3.0, 10.0, 1.0, 5e9)),
    ];
    let source = source_telemetry(&node_source(), &outcomes, COMPLETED);
    assert_eq!(source.status, TelemetryStatus::Partial);
    assert_eq!(
        source.reason.as_deref(),
        Some("1 of 5 scrapes failed; the first: the exporter answered 500 Internal Server Error")
    );
    let busy = &source.series[0];
    assert_eq!(busy.status, TelemetryStatus::Partial);
    let at: Vec<i64> = busy.points.iter().map(|p| p.elapsed_ms).collect();
    assert_eq!(at, [20_000, 40_000]);
}

#[test]
fn a_source_that_never_answered_or_a_series_it_does_not_have_is_missing_with_the_reason() {
    let outcomes = [failed(10, "the exporter did not answer within 5s"), failed(15, "later")];
    let source = source_telemetry(&node_source(), &outcomes, COMPLETED);
    assert_eq!(source.status, TelemetryStatus::Missing);
    assert_eq!(
        source.reason.as_deref(),
        Some("all 2 scrapes failed; the first: the exporter did not answer within 5s")
    );
    assert!(source.series.iter().all(|s| s.status == TelemetryStatus::Missing && s.points.is_empty()));
    assert_eq!(source.series[0].reason, source.reason);

    let postgres = TelemetrySource { series: Exporter::Postgres.series(), ..node_source() };
    let outcomes: Vec<ScrapeOutcome> = (0..3)
        .map(|i| ScrapeOutcome { elapsed_ms: i * 5000, window: 0, result: read(b"up 1\n", &postgres.series) })
        .collect();
    let source = source_telemetry(&postgres, &outcomes, COMPLETED);
    assert_eq!(source.status, TelemetryStatus::Complete);
    let connections = &source.series[0];
    assert_eq!(connections.status, TelemetryStatus::Missing);
    assert_eq!(connections.reason.as_deref(), Some("no sample matched `pg_stat_activity_count` in any scrape"));

    let none = source_telemetry(&node_source(), &[], COMPLETED);
    assert_eq!(none.reason.as_deref(), Some("no scrape was made: the run ended before its measured stages began"));
}

#[test]
fn rates_are_taken_within_a_measured_window_never_across_two() {
    let outcomes = [
        scraped(10, 0, &node_answer(100.0, 400.0, 10.0, 6e9)),
        scraped(20, 0, &node_answer(102.0, 407.0, 11.0, 5e9)),
        scraped(60, 1, &node_answer(200.0, 500.0, 12.0, 5e9)),
        scraped(70, 1, &node_answer(201.0, 509.0, 12.0, 5e9)),
    ];
    let busy = &source_telemetry(&node_source(), &outcomes, COMPLETED).series[0];
    let at: Vec<i64> = busy.points.iter().map(|p| p.elapsed_ms).collect();
    assert_eq!(at, [20_000, 70_000]);
}

#[test]
fn an_answer_past_the_caps_or_not_in_the_format_is_refused_whole() {
    let series = node_source().series;
    let many = "up 1\n".repeat(crate::telemetry::MAX_SAMPLES + 1);
    assert!(read(many.as_bytes(), &series).unwrap_err().contains("more than 100,000 samples"));
    let html = read(b"# HELP\nup 1\n<html><body>Oops</body></html>\n", &series).unwrap_err();
    assert_eq!(
        html,
        "line 3 of the answer is not the Prometheus text format: `<html><body>Oops</body></html>` does not start \
         with a metric name"
    );
    assert!(read(b"up 1\n\xff\xfe\n", &series).unwrap_err().contains("line 2 of the answer is not UTF-8"));
    let read = read(b"up 1\r\nnode_memory_MemTotal_bytes 1\r\n", &series).unwrap();
    assert_eq!((read.samples, read.readings[2].matched, read.readings[2].value), (2, 1, 1.0));
}

#[test]
fn a_scrape_tells_what_the_exporter_declares_each_series_to_be() {
    let series = node_source().series;
    let scraped = read(&node_answer(1.0, 2.0, 0.0, 1e9), &series).unwrap();
    assert_eq!(scraped.readings[0].declared, Some(SeriesKind::Counter));
    // No `# TYPE` line before node_memory_*: nothing declared.
    assert_eq!(scraped.readings[2].declared, None);
    let typed = b"# TYPE node_memory_MemTotal_bytes gauge\nnode_memory_MemTotal_bytes 8e9\n";
    assert_eq!(read(typed, &series).unwrap().readings[2].declared, Some(SeriesKind::Gauge));
}
