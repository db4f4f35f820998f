//! The demo's local alert receiver: a webhook on 127.0.0.1 that stands in for Slack, appending every
//! message it gets to `alerts.log` in the demo folder, so the alert can be read without a Slack workspace.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use serde_json::Value;

struct Log {
    file: PathBuf,
    received: Mutex<Vec<Value>>,
}

/// The receiver; stopped when dropped.
#[allow(missing_docs, reason = "the field names say what they hold")]
pub struct LogReceiver {
    pub address: SocketAddr,
    log: Arc<Log>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for LogReceiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl LogReceiver {
    /// Starts on a free port, logging to `file` (created empty).
    pub async fn start(file: PathBuf) -> anyhow::Result<Self> {
        std::fs::write(&file, "")?;
        let log = Arc::new(Log { file, received: Mutex::new(Vec::new()) });
        let app = Router::new().route("/alerts", post(receive)).with_state(log.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { address, log, server })
    }

    /// The webhook URL to configure.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}/alerts", self.address)
    }

    /// Every message received so far.
    #[must_use]
    pub fn received(&self) -> Vec<Value> {
        self.log.received.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

async fn receive(State(log): State<Arc<Log>>, body: String) -> StatusCode {
    let Ok(message) = serde_json::from_str::<Value>(&body) else { return StatusCode::BAD_REQUEST };
    let line = format!("{} {}\n", chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true), message);
    let written =
        std::fs::OpenOptions::new().append(true).open(&log.file).and_then(|mut f| f.write_all(line.as_bytes()));
    log.received.lock().unwrap_or_else(PoisonError::into_inner).push(message);
    if written.is_ok() { StatusCode::OK } else { StatusCode::INTERNAL_SERVER_ERROR }
}
