//! A `degrade serve` of a test, through the real binary: started in a project directory on a free port (its
//! address read from the line it prints), its log kept as it comes for the test to read while it runs, asked
//! for pages over real HTTP, and stopped with SIGTERM as a service manager stops it. Used by `chaos` (the
//! dashboard it compares with the store, and the watch that resumes a night a kill stopped) and `outages`
//! (a server that stays up through a database it cannot reach).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use super::degrade_child;

/// A running `degrade serve`.
pub struct Served {
    child: tokio::process::Child,
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub url: String,
    log: Arc<Mutex<String>>,
    client: reqwest::Client,
}

impl Served {
    /// `degrade serve --listen 127.0.0.1:0` with `args` after it, in `dir`, with `env`; once it listens.
    ///
    /// # Panics
    /// When it exits, or has not said where it listens within a minute: with what it logged.
    pub async fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut every = vec!["serve", "--listen", "127.0.0.1:0", "--shutdown-grace", "5s"];
        every.extend_from_slice(args);
        let mut child = degrade_child(dir, &every, env);
        let log = Arc::new(Mutex::new(String::new()));
        let (address_tx, address_rx) = tokio::sync::oneshot::channel();
        keep(child.stdout.take().unwrap(), &log, Some(address_tx));
        keep(child.stderr.take().unwrap(), &log, None);
        let Ok(Ok(url)) = tokio::time::timeout(Duration::from_mins(1), address_rx).await else {
            let _ = child.start_kill();
            let status = child.wait().await;
            panic!("degrade serve did not start ({status:?}):\n{}", log.lock().unwrap());
        };
        Self { child, url, log, client: super::http_client() }
    }

    /// Everything it printed and logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// `GET path`: the status and the body, or the error that kept it from answering.
    pub async fn get(&self, path: &str) -> Result<(u16, String), String> {
        let answer = self.client.get(format!("{}{path}", self.url)).send().await.map_err(|e| format!("{e}"))?;
        let status = answer.status().as_u16();
        Ok((status, answer.text().await.map_err(|e| format!("{e}"))?))
    }

    /// `GET path` as JSON, or why not.
    pub async fn get_json(&self, path: &str) -> Result<serde_json::Value, String> {
        let (status, body) = self.get(path).await?;
        if status != 200 {
            return Err(format!("GET {path} answered {status}: {body}"));
        }
        serde_json::from_str(&body).map_err(|e| format!("GET {path}: not JSON ({e}): {body}"))
    }

    /// `POST /api/v1/scenarios/{scenario}/runs` with `token` (the serve's `DEGRADE_API_TOKEN`): a night started
    /// now, in the background. The status and the body.
    pub async fn trigger(&self, scenario: &str, token: &str) -> Result<(u16, String), String> {
        let url = format!("{}/api/v1/scenarios/{scenario}/runs", self.url);
        let answer = self.client.post(url).bearer_auth(token).send().await.map_err(|e| format!("{e}"))?;
        let status = answer.status().as_u16();
        Ok((status, answer.text().await.map_err(|e| format!("{e}"))?))
    }

    /// SIGTERM, then its exit code (within 45 s) and its whole log.
    ///
    /// # Panics
    /// When it does not stop within 45 s.
    pub async fn stop(mut self) -> (Option<i32>, String) {
        let pid = self.child.id().map(|pid| pid.to_string());
        if let Some(pid) = pid {
            let _ = tokio::process::Command::new("kill").args(["-TERM", &pid]).status().await;
        }
        let status = tokio::time::timeout(Duration::from_secs(45), self.child.wait()).await;
        let status = status.unwrap_or_else(|_| panic!("degrade serve did not stop:\n{}", self.log())).unwrap();
        // What it wrote last reaches the log a moment after it exits.
        tokio::time::sleep(Duration::from_millis(100)).await;
        (status.code(), self.log())
    }
}

/// Appends every line of `from` to `log`; the first that says where the dashboard listens goes to `address`.
fn keep(
    from: impl AsyncRead + Unpin + Send + 'static,
    log: &Arc<Mutex<String>>,
    mut address: Option<tokio::sync::oneshot::Sender<String>>,
) {
    let log = Arc::clone(log);
    tokio::spawn(async move {
        let mut lines = BufReader::new(from).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.split("serving the dashboard at ").nth(1)
                && let Some(tx) = address.take()
            {
                let url = rest.split_whitespace().next().unwrap_or_default().trim_end_matches('/');
                let _ = tx.send(url.to_owned());
            }
            let mut log = log.lock().unwrap();
            log.push_str(&line);
            log.push('\n');
        }
    });
}
