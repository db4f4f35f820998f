//! `degrade migrate`: brings the configured database's schema up to date and reports its version.

use anyhow::Context;

use super::{ConfigSource, Exit, print_stdout};
use crate::store::Store;

pub(super) async fn run(source: &ConfigSource) -> anyhow::Result<Exit> {
    let config = source.load_or_defaults(super::Uses::NoAlerts)?;
    let store = Store::connect(&config.database)
        .await
        .with_context(|| format!("cannot open the database {}", config.database))?;
    let version = store.schema_version().await?;
    let latest = Store::latest_known_version();
    let state = match store.version_found() {
        0 => "created".to_owned(),
        found if found < version => format!("migrated from {found}"),
        _ if version == latest => "up to date".to_owned(),
        _ => format!("this degrade knows up to {latest}"),
    };
    print_stdout(&format!(
        "Database {} ({}) is at schema version {version} ({state}).\n",
        config.database,
        store.backend()
    ))?;
    store.close().await;
    Ok(Exit::Ok)
}
