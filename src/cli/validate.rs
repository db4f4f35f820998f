//! `degrade validate`: checks the config and prints how it was understood.

use std::path::Path;

use chrono::Utc;

use super::{Exit, load_config, print_stdout};
use crate::config::{Config, ScenarioConfig};
use crate::secret::redact_url;

pub(super) fn run(config_path: &Path) -> anyhow::Result<Exit> {
    let config = load_config(config_path)?;
    print_stdout(&(describe(&config).join("\n") + "\n"))?;
    Ok(Exit::Ok)
}

/// What the config means, in the words a user would check it against. Secrets show as set or not set.
fn describe(config: &Config) -> Vec<String> {
    let token = if config.server.api_token.is_some() { "set" } else { "not set: POST routes are refused" };
    let mut lines = vec![
        format!("{} is valid.", config.source.display()),
        format!("  database  {}", config.database),
        format!("  server    listens on {}, API token {token}", config.server.listen),
    ];
    if config.scenarios.is_empty() {
        lines.push("  no [[scenario]] yet: add one to run anything".to_owned());
    }
    lines.extend(config.scenarios.iter().flat_map(describe_scenario));
    for notify in &config.notifiers {
        let state = if notify.url.is_some() { "set" } else { "not set" };
        lines.push(format!("  notify    {} ({:?}) via ${} ({state})", notify.name, notify.kind, notify.url_env));
    }
    lines
}

fn describe_scenario(scenario: &ScenarioConfig) -> Vec<String> {
    let target = scenario.target.as_ref().map(|t| format!(" against {}", redact_url(t))).unwrap_or_default();
    let mut lines = vec![format!("  scenario  {} from {}{target}", scenario.name, scenario.file.display())];
    match &scenario.schedule {
        Some(schedule) => {
            lines.push(format!("            schedule {}", schedule.understood_as()));
            if let Some(next) = schedule.next_after(Utc::now()) {
                lines.push(format!("            next run {}", next.format("%Y-%m-%d %H:%M:%S %Z")));
            }
        }
        None => lines.push("            no schedule: runs only when asked".to_owned()),
    }
    let gates = &scenario.gates;
    lines.push(format!(
        "            baseline {}, at least {} runs, regressions from {} %",
        scenario.baseline, gates.min_runs, gates.min_effect_pct
    ));
    lines
}
