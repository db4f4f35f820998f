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
                bail!("version_command failed ({}): {}", output.status, stderr.trim());
            }
            String::from_utf8_lossy(&output.stdout).trim().to_owned()
        }
    };
    if id.is_empty() || id.len() > MAX_BUILD_ID || id.contains('\n') {
        bail!("the version source gave {} characters, not one build id", id.len());
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

/// Runs the deploy command and returns the end of what it printed; on failure or timeout, says why with the
/// end of its output.
pub async fn deploy(deploy: &DeployCommand) -> anyhow::Result<String> {
    let limit = humantime::format_duration(deploy.timeout);
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(&deploy.command)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        // A timed-out deploy must not keep running behind the next night's run.
        .kill_on_drop(true);
    // Its own process group, so a timeout stops what the shell started too, not only the shell.
    #[cfg(unix)]
    command.process_group(0);
    let child = command.spawn().context("cannot start deploy_command")?;
    // Kills what the deploy started if it times out or degrade stops waiting for it (a shutdown).
    let mut group = ProcessGroup(child.id());
    let Ok(output) = tokio::time::timeout(deploy.timeout, child.wait_with_output()).await else {
        bail!("deploy_command did not finish within {limit}; it was stopped");
    };
    group.0 = None;
    let output = output.context("deploy_command failed to run")?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    if output.status.success() {
        return Ok(last_lines(&text, DEPLOY_OUTPUT_KEPT));
    }
    bail!("deploy_command failed ({}); its last output:\n{}", output.status, last_lines(&text, DEPLOY_OUTPUT_LINES))
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

/// The last `count` lines of a deploy's output, with passwords in URLs hidden: it is stored and shown.
fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    crate::secret::redact_urls_in(&lines[lines.len().saturating_sub(count)..].join("\n"))
}

/// Polls the health URL until it answers 2xx, or fails after its timeout with the last answer.
pub async fn wait_healthy(health: &HealthCheck) -> anyhow::Result<()> {
    let started = tokio::time::Instant::now();
    loop {
        let Err(last) = HttpClient::get_text(&health.url, HEALTH_REQUEST_TIMEOUT).await else { return Ok(()) };
        if started.elapsed() >= health.timeout {
            bail!(
                "the target was not healthy within {}: health_url {} last said: {last}",
                humantime::format_duration(health.timeout),
                crate::secret::redact_url(&health.url)
            );
        }
        tokio::time::sleep(HEALTH_POLL_EVERY).await;
    }
}
