//! The build under test: learned from the scenario's `version_url` or `version_command`, stored with every
//! run so trends can say since which build a number moved.

use std::time::Duration;

use anyhow::{Context, bail};

use crate::config::VersionSource;
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
