//! A real Prometheus server for the `prometheus` telemetry source's tests: Debian's `prometheus` (installed by
//! `.ci/run`, its own service kept from starting on 9090), on a free port of 127.0.0.1 with its storage in a
//! temporary folder, scraping one target every second; stopped by its PID when dropped.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const BINARY: &str = "/usr/bin/prometheus";

/// A running Prometheus, killed by its PID when dropped (even when the test panics).
pub struct Prometheus {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    child: Child,
    _storage: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Prometheus scraping `target` (`http://host:port/metrics`) every second as job `node`, once it has scraped
/// it `scrapes` times (so a rate over the last seconds has samples); `None` when it is not installed, the test
/// then says it skipped.
pub async fn prometheus_scraping(target: &str, scrapes: u32) -> Option<Prometheus> {
    if !Path::new(BINARY).is_file() {
        super::exporters::skipped(BINARY);
        return None;
    }
    let address = target.trim_start_matches("http://").trim_end_matches("/metrics");
    let storage = tempfile::tempdir().unwrap();
    let config = storage.path().join("prometheus.yml");
    let yaml = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: node\n    \
         static_configs:\n      - targets: ['{address}']\n"
    );
    std::fs::write(&config, yaml).unwrap();
    let port = super::exporters::free_port().await;
    let child = Command::new(BINARY)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", storage.path().join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {BINARY}: {e}"));
    let prometheus = Prometheus { url: format!("http://127.0.0.1:{port}"), child, _storage: storage };
    // Ready once the target has been scraped `scrapes` times: two minutes at most, however busy the machine.
    let client = super::http_client();
    let count = format!("{}/api/v1/query?query=count_over_time(up{{job=%22node%22}}[1m])", prometheus.url);
    for _ in 0..1200 {
        let answer = client.get(&count).send().await;
        let json: Option<serde_json::Value> = match answer {
            Ok(response) => response.json().await.ok(),
            Err(_) => None,
        };
        let scraped = json
            .as_ref()
            .and_then(|j| j["data"]["result"][0]["value"][1].as_str())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        if scraped >= f64::from(scrapes) {
            return Some(prometheus);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("Prometheus on {} did not scrape {target} {scrapes} times within two minutes", prometheus.url);
}
