//! The build under test: rolled out by the scenario's `deploy_command`, awaited on its `health_url`, and
//! named by its `version_url` or `version_command`, so every run records which build it measured.

use std::time::Duration;

use anyhow::{Context, bail};

use crate::config::{DeployCommand, HealthCheck, VersionSource};
use crate::engine::client::HttpClient;

/// How long asking for the version may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest build id kept: longer answers are almost certainly a page, not an id.
const MAX_BUILD_ID: usize = 200;

/// Asks `source` which build is deployed.
pub async fn resolve_version(source: &VersionSource) -> anyhow::Result<String> {
    let id = match source {
        VersionSource::Url { url, pointer } => {
            let body = HttpClient::get_text(url, VERSION_TIMEOUT)
                .await
                .map_err(|e| anyhow::anyhow!("version_url {}: {e}", crate::secret::redact_url(url)))?;
            match pointer {
                None => body.trim().to_owned(),
                Some(pointer) => {
                    let json: serde_json::Value = serde_json::from_str(&body)
                        .context("version_url did not answer JSON, but version_pointer needs it")?;
                    match json.pointer(pointer) {
                        Some(serde_json::Value::String(s)) => s.clone(),
                        Some(other @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => other.to_string(),
                        Some(_) => bail!("version_pointer {pointer} selects an object or array, not an id"),
                        None => bail!("version_pointer {pointer} selects nothing in the version_url's answer"),
                    }
                }
            }
        }
        VersionSource::Command(command) => {
            let output = tokio::time::timeout(
                VERSION_TIMEOUT,
                tokio::process::Command::new("sh").arg("-c").arg(command).kill_on_drop(true).output(),
            )
            .await
            .context("version_command took longer than 30 s")?
            .context("cannot start version_command")?;
            if !output.status.success() {
                let stderr = String::from_utf8_lossy(&output.stderr);
                bail!(
                    "version_command failed ({}): {}",
                    output.status,
                    crate::outside_text::clipped(stderr.trim(), 500)
                );
            }
            String::from_utf8_lossy(&output.stdout).trim().to_owned()
        }
    };
    if id.is_empty() || id.len() > MAX_BUILD_ID || id.chars().any(char::is_control) {
        bail!("the version source gave {} characters, not one build id (one line, no control characters)", id.len());
    }
    Ok(id)
}

/// Output lines of a deploy command kept in a failed run's reason: the end is where the error is.
const DEPLOY_OUTPUT_LINES: usize = 20;

/// Output lines of a successful deploy kept with the run: enough to see what was rolled out.
const DEPLOY_OUTPUT_KEPT: usize = 200;

/// How often the health URL is asked while the target is not healthy yet.
const HEALTH_POLL_EVERY: Duration = Duration::from_millis(500);

/// How long one health request may take: a target that hangs is as unhealthy as one that answers 503.
const HEALTH_REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// Bytes of a deploy's output read back: the end, where the error is, however much the deploy printed.
const DEPLOY_OUTPUT_BYTES: u64 = 64 * 1024;

/// A deploy that failed, timed out or could not start, with the end of what it printed.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct DeployFailed {
    message: String,
    /// What it printed (the last lines), stored with the failed run.
    pub output: String,
}

/// Runs the deploy command and returns the end of what it printed; on failure or timeout, says why with the
/// end of its output. Done when the command exits: what it started in the background (the service) keeps
/// running.
///
/// The output goes to a temporary file, not to pipes. A service started in the background (`./server &`)
/// inherits it and may write to it for as long as it runs: a pipe would make degrade read the service's logs
/// during the load, and once degrade exits the service's next write would kill it (SIGPIPE). The file is
/// removed when the deploy is done; its space is freed when the last process writing to it exits.
pub async fn deploy(deploy: &DeployCommand) -> Result<String, DeployFailed> {
    let failed = |message: String, output: &str| DeployFailed {
        output: last_lines(output, DEPLOY_OUTPUT_KEPT),
        message: format!("{message}; its last output:\n{}", last_lines(output, DEPLOY_OUTPUT_LINES)),
    };
    let cannot_start = |e: std::io::Error| failed(format!("cannot start deploy_command: {e}"), "");
    let log = tempfile::NamedTempFile::new().map_err(cannot_start)?;
    // The command writes through a file description of its own, so reading the log back never moves the
    // position it writes at.
    let writes = log.reopen().map_err(cannot_start)?;
    let limit = humantime::format_duration(deploy.timeout);
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(&deploy.command)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::from(writes.try_clone().map_err(cannot_start)?))
        .stderr(std::process::Stdio::from(writes))
        // A timed-out deploy must not keep running behind the next night's run.
        .kill_on_drop(true);
    // Its own process group, so a timeout stops what the shell started too, not only the shell.
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command.spawn().map_err(cannot_start)?;
    // Kills what the deploy started if it times out or degrade stops waiting for it (a shutdown).
    let mut group = ProcessGroup(child.id());
    let waited = tokio::time::timeout(deploy.timeout, child.wait()).await;
    if waited.is_err() {
        drop(group);
    } else {
        group.0 = None;
    }
    let output = tail_of(log.as_file());
    match waited {
        Err(_) => Err(failed(format!("deploy_command did not finish within {limit}; it was stopped"), &output)),
        Ok(Err(e)) => Err(failed(format!("deploy_command failed to run: {e}"), &output)),
        Ok(Ok(status)) if status.success() => Ok(last_lines(&output, DEPLOY_OUTPUT_KEPT)),
        Ok(Ok(status)) => Err(failed(format!("deploy_command failed ({status})"), &output)),
    }
}

/// The last [`DEPLOY_OUTPUT_BYTES`] of the deploy's log, as text.
fn tail_of(mut log: &std::fs::File) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let length = log.seek(SeekFrom::End(0)).unwrap_or(0);
    let mut bytes = Vec::new();
    if log.seek(SeekFrom::Start(length.saturating_sub(DEPLOY_OUTPUT_BYTES))).is_ok() {
        let _ = log.take(DEPLOY_OUTPUT_BYTES).read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A process group killed when this is dropped, unless its id was taken out first.
struct ProcessGroup(Option<u32>);

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if let Some(group) = self.0 {
            // `kill` returns at once; blocking for it in a destructor is fine.
            let _ = std::process::Command::new("kill").args(["-KILL", "--"]).arg(format!("-{group}")).status();
        }
    }
}

/// The last `count` lines of a deploy's output, with passwords in URLs hidden and control characters
/// escaped: it is stored and shown.
fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let shown = crate::secret::redact_urls_in(&lines[lines.len().saturating_sub(count)..].join("\n"));
    crate::outside_text::printable(&shown)
}

/// Polls the health URL until it answers 2xx, or fails after its timeout with the last answer. While it
/// waits it says so once (a one-shot command logs it too: a silent minute reads as a hang).
pub async fn wait_healthy(health: &HealthCheck) -> anyhow::Result<()> {
    let started = tokio::time::Instant::now();
    let url = crate::secret::redact_url(&health.url);
    let mut said = false;
    loop {
        let Err(last) = HttpClient::get_text(&health.url, HEALTH_REQUEST_TIMEOUT).await else {
            if said {
                tracing::info!("health_url {url} answered 2xx after {:.1} s", started.elapsed().as_secs_f64());
            }
            return Ok(());
        };
        if !said {
            tracing::info!(
                "waiting up to {} for health_url {url} to answer 2xx (it said: {last})",
                humantime::format_duration(health.timeout)
            );
            said = true;
        }
        if started.elapsed() >= health.timeout {
            bail!(
                "the target was not healthy within {}: health_url {} last said: {last}",
                humantime::format_duration(health.timeout),
                url
            );
        }
        tokio::time::sleep(HEALTH_POLL_EVERY).await;
    }
}
