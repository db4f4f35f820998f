//! `degrade serve`: the trend dashboard and JSON API, the nightly scheduler and the alert courier in one
//! process, until Ctrl-C or SIGTERM.
//!
//! Shutdown is graceful: the scheduler stops firing, runs under way get `--shutdown-grace` to finish, then
//! are stopped and stored as `aborted` with what they measured; alerts not yet delivered stay in the outbox
//! for the next start.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::Utc;

use super::{ConfigSource, Exit, shutdown_signal};
use crate::notify::Courier;
use crate::pipeline::RunsUnderWay;
use crate::scheduler::Scheduler;
use crate::store::Store;
use crate::web::{self, AppState};

/// Where to listen, and how long shutdown waits.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// `--config` after the subcommand.
    #[command(flatten)]
    pub config: super::ConfigArg,
    /// Listen on this address instead of [server] listen (e.g. 0.0.0.0:8080, or 127.0.0.1:0 for any free port).
    #[arg(long, value_name = "ADDRESS")]
    pub listen: Option<SocketAddr>,
    /// On Ctrl-C or SIGTERM, let runs under way finish for this long before stopping them (they are then
    /// stored as aborted). Keep it below your service manager's stop timeout.
    #[arg(long, value_name = "DURATION", default_value = "60s",
          value_parser = |s: &str| crate::config::durations::parse(s, "60s or 5m"))]
    pub shutdown_grace: Duration,
    /// Serve the dashboard only: no scheduled runs, no alert delivery (for a read-only replica).
    #[arg(long)]
    pub no_scheduler: bool,
}

/// How long stopped runs get to store what they measured.
const STOPPED_RUNS_STORE_WITHIN: Duration = Duration::from_secs(30);

pub(super) async fn run(source: &ConfigSource, args: ServeArgs) -> anyhow::Result<Exit> {
    let config = source.load_or_defaults(super::Uses::Alerts)?;
    let store = Store::connect(&config.database)
        .await
        .with_context(|| format!("cannot open the database {}", config.database))?;
    let aborted = store.abort_interrupted_runs(Utc::now()).await?;
    if !aborted.is_empty() {
        tracing::warn!(?aborted, "runs left running by an earlier degrade that stopped were marked aborted");
    }
    let listener = web::bind(args.listen.unwrap_or(config.server.listen)).await?;
    let address = listener.local_addr()?;
    println!("degrade is serving the dashboard at http://{address}/ (database {})", config.database);
    let (state, stop_runs) = AppState::new(store.clone(), config);
    let runner = state.runner.clone();
    let runs = runner.runs().clone();
    let (stop_courier, courier_stop) = tokio::sync::watch::channel(false);
    let (scheduler, courier) = if args.no_scheduler {
        (None, None)
    } else {
        let scheduler = Scheduler::start(state.runner.clone(), store.clone(), state.config.clone()).await?;
        let courier = Courier::new(store.clone(), state.config.clone())?;
        (Some(scheduler), Some(tokio::spawn(courier.run(courier_stop))))
    };
    web::serve(listener, state, shutdown_signal()).await?;
    runner.stop_accepting();
    if let Some(scheduler) = scheduler {
        scheduler.stop().await;
    }
    if !wait_for(&runs, args.shutdown_grace).await {
        eprintln!("stopping {} run(s) still under way; they are stored as aborted", runs.count());
        stop_runs.send_replace(true);
        wait_for(&runs, STOPPED_RUNS_STORE_WITHIN).await;
    }
    stop_courier.send_replace(true);
    if let Some(courier) = courier {
        let _ = courier.await;
    }
    store.close().await;
    Ok(Exit::Ok)
}

/// Waits until no run is under way or `limit` has passed; `true` when none is left.
async fn wait_for(runs: &RunsUnderWay, limit: Duration) -> bool {
    let since = Instant::now();
    while runs.count() > 0 {
        if since.elapsed() >= limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    true
}
