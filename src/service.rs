//! `degrade serve` as a library call: the trend dashboard and JSON API, the nightly scheduler and the alert
//! courier in one process, until `shutdown` completes. `cli::serve` only parses its arguments, binds the
//! listener and calls [`serve`]; the tests call it in-process.
//!
//! Shutdown is graceful: the dashboard stops accepting, the scheduler stops firing, runs under way get
//! [`ServeOptions::shutdown_grace`] to finish, then are stopped and stored as `aborted` with what they
//! measured; alerts not yet delivered stay in the outbox for the next start.

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::Utc;
use tokio::net::TcpListener;

use crate::config::Config;
use crate::notify::Courier;
use crate::pipeline::RunsUnderWay;
use crate::scheduler::Scheduler;
use crate::store::{LeftBehind, Store};
use crate::web::{self, AppState};

/// How the service runs, beyond its configuration.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// How long runs under way may go on after shutdown is asked for before they are stopped.
    pub shutdown_grace: Duration,
    /// Whether scheduled runs and alert delivery happen here (`false`: a dashboard beside an instance that
    /// schedules; runs started through its API are measured, their alerts wait in the outbox).
    pub scheduler: bool,
}

/// How the service ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped {
    /// Runs that outlasted the grace and were stopped (stored as `aborted`).
    pub runs_stopped: usize,
}

/// How long stopped runs get to store what they measured.
const STOPPED_RUNS_STORE_WITHIN: Duration = Duration::from_secs(30);

/// Serves `config` on `listener` until `shutdown` completes, then shuts down as the module says: [`Service::open`]
/// then [`Service::serve`].
pub async fn serve(
    config: Config,
    listener: TcpListener,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<Stopped> {
    Service::open(config).await?.serve(listener, options, shutdown).await
}

/// The service with its database open, ready to serve: `degrade serve` says so only once it is.
pub struct Service {
    config: Config,
    store: Store,
}

impl Service {
    /// Opens (and migrates) the database, and marks aborted the runs an earlier degrade left `running` when
    /// it stopped (leases are on the system's clock, so this reads it too).
    pub async fn open(config: Config) -> anyhow::Result<Self> {
        let store = Store::connect(&config.database)
            .await
            .with_context(|| format!("cannot open the database {}", config.database))?;
        let aborted = store.abort_interrupted_runs(LeftBehind::Unleased(Utc::now()), Utc::now()).await?;
        if !aborted.is_empty() {
            tracing::warn!(?aborted, "runs left running by an earlier degrade that stopped were marked aborted");
        }
        Ok(Self { config, store })
    }

    /// The configuration served.
    #[must_use]
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Serves on `listener` until `shutdown` completes, then shuts down gracefully.
    pub async fn serve(
        self,
        listener: TcpListener,
        options: ServeOptions,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<Stopped> {
        let Self { config, store } = self;
        let (state, stop_runs) = AppState::new(store.clone(), config);
        let runner = state.runner.clone();
        let runs = runner.runs().clone();
        let (stop_courier, courier_stop) = tokio::sync::watch::channel(false);
        let (scheduler, courier) = if options.scheduler {
            let scheduler = Scheduler::start(state.runner.clone(), store.clone(), state.config.clone()).await?;
            let courier = Courier::new(store.clone(), state.config.clone())?.with_clock(runner.clock().clone());
            (Some(scheduler), Some(tokio::spawn(courier.run(courier_stop))))
        } else {
            (None, None)
        };
        web::serve(listener, state, shutdown).await?;
        runner.stop_accepting();
        if let Some(scheduler) = scheduler {
            scheduler.stop().await;
        }
        let mut runs_stopped = 0;
        if runs.count() > 0 {
            // Said, so the quiet minute of a graceful stop (the dashboard already closed) is not read as a hang.
            tracing::info!(
                "shutting down: waiting up to {} for {} under way to finish",
                humantime::format_duration(options.shutdown_grace),
                crate::model::counted(runs.count(), "run", "runs")
            );
        } else {
            tracing::info!("shutting down: no run under way");
        }
        if !wait_for(&runs, options.shutdown_grace).await {
            runs_stopped = runs.count();
            let stopping = crate::model::counted(runs_stopped, "run", "runs");
            tracing::warn!("stopping {stopping} still under way; stored as aborted");
            stop_runs.send_replace(true);
            wait_for(&runs, STOPPED_RUNS_STORE_WITHIN).await;
        }
        stop_courier.send_replace(true);
        if let Some(courier) = courier {
            let _ = courier.await;
        }
        store.close().await;
        Ok(Stopped { runs_stopped })
    }
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
