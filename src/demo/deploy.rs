//! The demo's deploys: each build of the demo API runs as a process of its own (`degrade demo-target`), started
//! for the night it is tested and stopped before the next build replaces it, on the same address. A process of
//! its own is what lets the demo read the server's side: the CPU it reports at `/metrics` is the API's alone,
//! apart from the load generator's and the dashboard's, as it would be on any real service.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long a build may take to seed its database and listen.
const START_TIMEOUT: Duration = Duration::from_mins(1);

/// One build of the demo API and what it does differently.
#[derive(Debug, Clone, PartialEq)]
pub struct Build {
    /// What `/version` reports.
    pub id: String,
    /// Milliseconds added to [`super::story::SLOW_ROUTE`].
    pub slowdown_ms: u64,
    /// CPU microseconds of work after each API answer.
    pub burn_cpu_us: u64,
    /// Renderers of the board export (`super::export`): its capacity.
    pub export_workers: u32,
}

/// Starts each build's process on the address the first one was given.
pub struct Deployer {
    program: PathBuf,
    port: u16,
    running: Option<Child>,
    url: String,
}

impl Deployer {
    /// Runs `program demo-target` for each build; the first listens on a free port, the others on the same.
    #[must_use]
    pub fn new(program: &Path) -> Self {
        Self { program: program.to_owned(), port: 0, running: None, url: String::new() }
    }

    /// Stops the running build, if any, and starts `build` in its place; returns once it listens.
    pub async fn deploy(&mut self, build: &Build) -> anyhow::Result<()> {
        self.stop().await;
        let mut child = self
            .command(build)
            .spawn()
            .with_context(|| format!("cannot start the demo API ({} demo-target)", self.program.display()))?;
        let stdout = child.stdout.take().context("the demo API's output")?;
        let url = tokio::time::timeout(START_TIMEOUT, listening_url(stdout)).await;
        if let Ok(Some(url)) = url {
            self.port = port_of(&url).unwrap_or(self.port);
            self.url = url;
            self.running = Some(child);
            return Ok(());
        }
        let _ = child.start_kill();
        let output = child.wait_with_output().await?;
        let said = String::from_utf8_lossy(&output.stderr);
        anyhow::bail!("the demo API (build {}) did not start: {}", build.id, said.trim())
    }

    /// `http://address` of the builds.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Stops the running build and waits for it to exit, so its port is free for the next.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.running.take() {
            let _ = child.kill().await;
        }
    }

    fn command(&self, build: &Build) -> Command {
        let mut command = Command::new(&self.program);
        command
            .arg("demo-target")
            .args(["--port", &self.port.to_string(), "--build", &build.id])
            .args(["--slowdown-ms", &build.slowdown_ms.to_string()])
            .args(["--burn-cpu-us", &build.burn_cpu_us.to_string()])
            .args(["--export-workers", &build.export_workers.to_string()])
            // Its own logs stay quiet: what goes wrong is said through its exit, read above.
            .env("DEGRADE_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }
}

/// The URL the demo API prints once it listens (`the demo API (build …) is at http://…/ — …`), or `None` if
/// it exits first.
async fn listening_url(stdout: tokio::process::ChildStdout) -> Option<String> {
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(rest) = line.split_once(" is at ").map(|(_, rest)| rest) {
            let url = rest.split_whitespace().next()?.trim_end_matches('/');
            return Some(url.to_owned());
        }
    }
    None
}

fn port_of(url: &str) -> Option<u16> {
    url.rsplit_once(':')?.1.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_is_read_off_the_url_the_api_prints() {
        assert_eq!(port_of("http://127.0.0.1:40123"), Some(40123));
        assert_eq!(port_of("http://127.0.0.1"), None);
    }
}
