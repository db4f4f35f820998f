//! Exporters for the telemetry tests: Debian's real `prometheus-node-exporter` and
//! `prometheus-postgres-exporter` (installed by `.ci/run`) on free ports of 127.0.0.1, stopped by their PID
//! when dropped, and raw TCP exporters that misbehave as a broken endpoint would.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A real exporter process, killed by its PID when dropped (even when the test panics).
pub struct Exporter {
    /// `http://127.0.0.1:PORT/metrics`.
    pub url: String,
    child: Child,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// node_exporter with only its CPU and memory collectors (what the default series read: fast to scrape on a
/// busy 2-core box), or `None` when it is not installed; the test then says it skipped.
pub async fn node_exporter() -> Option<Exporter> {
    let binary = "/usr/bin/prometheus-node-exporter";
    let args = ["--collector.disable-defaults", "--collector.cpu", "--collector.meminfo"];
    start(binary, &args, &[]).await
}

/// postgres_exporter on the server `DEGRADE_TEST_POSTGRES_URL` names, or `None` when it is not installed.
pub async fn postgres_exporter() -> Option<Exporter> {
    let server = std::env::var(super::POSTGRES_ENV).expect("the PostgreSQL variant needs DEGRADE_TEST_POSTGRES_URL");
    let separator = if server.contains('?') { '&' } else { '?' };
    let source = format!("{server}{separator}sslmode=disable");
    start("/usr/bin/prometheus-postgres-exporter", &[], &[("DATA_SOURCE_NAME", source.as_str())]).await
}

/// Says the test skipped, where `cargo test` shows it.
pub fn skipped(binary: &str) {
    eprintln!("skipped: {binary} is not installed (.ci/run installs it from Debian's packages)");
}

async fn start(binary: &str, args: &[&str], env: &[(&str, &str)]) -> Option<Exporter> {
    if !Path::new(binary).is_file() {
        skipped(binary);
        return None;
    }
    let port = free_port().await;
    let child = Command::new(binary)
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {binary}: {e}"));
    let exporter = Exporter { url: format!("http://127.0.0.1:{port}/metrics"), child };
    // Up once it answers; a minute at most, however busy the machine.
    let client = super::http_client();
    for _ in 0..600 {
        if client.get(&exporter.url).send().await.is_ok_and(|r| r.status().is_success()) {
            return Some(exporter);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{binary} did not answer on {} within a minute", exporter.url);
}

pub async fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

/// How a broken exporter answers.
#[derive(Debug, Clone, Copy)]
pub enum Broken {
    /// Reads the request and never answers.
    Hangs,
    /// Answers 500.
    Fails,
    /// Answers 200 with 100 MB of valid samples.
    Huge,
    /// Answers 200 with a page that is not the format.
    Malformed,
    /// Answers 200 with 150,000 samples in 600 KB.
    TooManySeries,
}

/// A raw TCP exporter on a free port that answers every scrape as `how` says; returns its URL.
pub async fn broken_exporter(how: Broken) -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = [0_u8; 4096];
                let _ = socket.read(&mut buffer).await;
                let ok = |body: &str| format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}", body.len());
                let answer = match how {
                    Broken::Hangs => {
                        tokio::time::sleep(Duration::from_mins(1)).await;
                        return;
                    }
                    Broken::Fails => "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 5\r\n\r\noops\n".to_owned(),
                    Broken::Huge => return huge(&mut socket).await,
                    Broken::Malformed => ok("up 1\n<html><body>Service Unavailable</body></html>\n"),
                    Broken::TooManySeries => ok(&"a 1\n".repeat(150_000)),
                };
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    (url, server)
}

/// 100 MB of samples without a length, until the client stops reading.
async fn huge(socket: &mut tokio::net::TcpStream) {
    if socket.write_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n").await.is_err() {
        return;
    }
    let chunk = "up 1\n".repeat(13_108);
    for _ in 0..1_526 {
        if socket.write_all(chunk.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Stores telemetry with run `run_id` as a night scraping two sources would leave it: `host`, read every 5 s
/// (CPU busy as a share, memory used in bytes), and `db`, which never answered.
pub async fn store_telemetry(store: &degrade::store::Store, run_id: i64) {
    use degrade::model::{
        RunTelemetry, SeriesKind, SeriesSummary, SeriesTelemetry, SourceTelemetry, TelemetryPoint, TelemetryStatus,
        Worse,
    };
    let series = |name: &str, unit: &str, count_unit: Option<&str>, value: fn(i64) -> f64| {
        let points: Vec<TelemetryPoint> =
            (1..=12).map(|i| TelemetryPoint { elapsed_ms: i * 5_000, value: value(i) }).collect();
        let max = points.iter().map(|p| p.value).fold(0.0, f64::max);
        let mean = points.iter().map(|p| p.value).sum::<f64>() / points.len() as f64;
        SeriesTelemetry {
            name: name.to_owned(),
            unit: unit.to_owned(),
            count_unit: count_unit.map(str::to_owned),
            kind: if count_unit.is_some() { SeriesKind::Counter } else { SeriesKind::Gauge },
            worse: Worse::Higher,
            status: TelemetryStatus::Complete,
            reason: None,
            points,
            summary: Some(SeriesSummary { mean, max, per_1000_requests: count_unit.map(|_| 0.41) }),
        }
    };
    let host = SourceTelemetry {
        name: "host".to_owned(),
        status: TelemetryStatus::Complete,
        reason: None,
        scrapes: 12,
        failed_scrapes: 0,
        series: vec![
            series("CPU busy", "share", Some("CPU s"), |i| 0.2 + 0.03 * (i % 4) as f64),
            series("memory used", "bytes", None, |i| 2.4e9 + 1e7 * i as f64),
        ],
    };
    let reason = "all 12 scrapes failed; the first: the exporter answered 500 Internal Server Error".to_owned();
    let mut missing = series("connections", "connections", None, |_| 0.0);
    (missing.points, missing.summary, missing.status, missing.reason) =
        (Vec::new(), None, TelemetryStatus::Missing, Some(reason.clone()));
    let db = SourceTelemetry {
        name: "db".to_owned(),
        status: TelemetryStatus::Missing,
        reason: Some(reason),
        scrapes: 12,
        failed_scrapes: 12,
        series: vec![missing],
    };
    store.save_telemetry(run_id, &RunTelemetry { sources: vec![host, db] }).await.unwrap();
}
