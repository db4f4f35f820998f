//! `degrade notify test`: posts a test message to every configured `[[notify]]` webhook right away, so a
//! team can see the format in their channel and know the URL works before the first real alert.

use anyhow::bail;
use chrono::Utc;

use super::{ConfigSource, Exit};
use crate::notify::{self, Alert, Event, Webhooks};

/// What to do with the webhooks.
#[derive(Debug, clap::Subcommand)]
pub enum NotifyCommand {
    /// Send a test message to every [[notify]] webhook and say which got through.
    Test(super::ConfigArg),
}

pub(super) async fn run(source: &ConfigSource, command: NotifyCommand) -> anyhow::Result<Exit> {
    let NotifyCommand::Test(_) = command;
    let config = source.load_or_defaults(super::Uses::Alerts)?;
    if config.notifiers.is_empty() {
        bail!("no [[notify]] webhook is configured in {}", config.source.display());
    }
    // Posted directly, not queued: no database is opened (or, for SQLite, created) for a test message.
    let webhooks = Webhooks::new()?;
    let scenario = config.scenarios.first().map_or("example", |s| s.name.as_str());
    let summary = "This is a test message from degrade: alerts will arrive here.".to_owned();
    let alert = Alert { build_id: Some("test".to_owned()), ..Alert::about(Event::Test, scenario, summary, Utc::now()) };
    let mut failed = 0;
    for notifier in &config.notifiers {
        let Some(url) = &notifier.url else {
            println!("{}: skipped, the environment variable {} is not set", notifier.name, notifier.url_env);
            failed += 1;
            continue;
        };
        let key = format!("degrade-test-{}-{}", Utc::now().timestamp_millis(), notifier.name);
        let payload = notify::payload(&config, notifier.kind, &alert, None, &key);
        match webhooks.post(url, &key, &payload).await {
            Ok(()) => println!("{}: delivered", notifier.name),
            Err(e) => {
                println!("{}: not delivered: {}", notifier.name, e.message);
                failed += 1;
            }
        }
    }
    Ok(if failed == 0 { Exit::Ok } else { Exit::Error })
}
