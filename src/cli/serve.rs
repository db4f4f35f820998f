//! `degrade serve`: its arguments, then [`crate::service::serve`] until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::time::Duration;

use super::{ConfigSource, Exit, shutdown_signal};
use crate::service::{ServeOptions, Service};
use crate::web;

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
    /// Serve without the scheduler and the alert courier: no scheduled runs, no alert delivery (runs started
    /// through the API are still measured; their alerts wait in the outbox for an instance that delivers).
    #[arg(long)]
    pub no_scheduler: bool,
}

pub(super) async fn run(source: &ConfigSource, args: ServeArgs) -> anyhow::Result<Exit> {
    // Without the scheduler no alert is delivered here (they wait in the outbox): an unset webhook variable is
    // not this instance's to warn about.
    let uses = if args.no_scheduler { super::Uses::NoAlerts } else { super::Uses::Alerts };
    let config = source.load_or_defaults(uses)?;
    // Before the database is opened (and migrated, and its left-behind runs settled) or anything is said: a
    // second scheduling serve must touch nothing of the first's.
    let _hold = if args.no_scheduler {
        None
    } else {
        Some(crate::store::ServingHold::take(&config.database).map_err(anyhow::Error::msg)?)
    };
    let service = Service::open(config).await?;
    let listener = web::bind(args.listen.unwrap_or(service.config().server.listen)).await?;
    let (address, database) = (listener.local_addr()?, &service.config().database);
    println!("degrade is serving the dashboard at http://{address}/ (database {database})");
    let options = ServeOptions { shutdown_grace: args.shutdown_grace, scheduler: !args.no_scheduler };
    let stopped = service.serve(listener, options, shutdown_signal()).await?;
    if stopped.runs_stopped > 0 {
        let runs = crate::model::counted(stopped.runs_stopped, "run", "runs");
        let stored = if stopped.runs_stopped == 1 { "it is stored" } else { "they are stored" };
        say!("stopped {runs} that outlasted the grace; {stored} as aborted");
    }
    Ok(Exit::Ok)
}
