//! `degrade serve`: the trend dashboard and the JSON API, until Ctrl-C or SIGTERM.

use std::net::SocketAddr;

use anyhow::Context;

use super::{ConfigSource, Exit, shutdown_signal};
use crate::store::Store;
use crate::web::{self, AppState};

/// Where to listen.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Listen on this address instead of [server] listen (e.g. 0.0.0.0:8080, or 127.0.0.1:0 for any free port).
    #[arg(long, value_name = "ADDRESS")]
    pub listen: Option<SocketAddr>,
}

/// How long shutdown waits for runs under way to stop and store what they measured.
const RUNS_STOP_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);

pub(super) async fn run(source: &ConfigSource, args: ServeArgs) -> anyhow::Result<Exit> {
    let config = source.load_or_defaults()?;
    let store = Store::connect(&config.database)
        .await
        .with_context(|| format!("cannot open the database {}", config.database))?;
    let listener = web::bind(args.listen.unwrap_or(config.server.listen)).await?;
    let address = listener.local_addr()?;
    println!("degrade is serving the dashboard at http://{address}/ (database {})", config.database);
    let (state, stop_runs) = AppState::new(store.clone(), config);
    let runs = state.runs.clone();
    web::serve(listener, state, shutdown_signal()).await?;
    // Runs started through the API stop too: they store what they measured, as `aborted`.
    stop_runs.send_replace(true);
    let waiting_since = std::time::Instant::now();
    while runs.count() > 0 && waiting_since.elapsed() < RUNS_STOP_WITHIN {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    store.close().await;
    Ok(Exit::Ok)
}
