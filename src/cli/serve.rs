//! `degrade serve`: the trend dashboard and the JSON API, until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;

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

pub(super) async fn run(source: &ConfigSource, args: ServeArgs) -> anyhow::Result<Exit> {
    let config = source.load_or_defaults()?;
    let store = Store::connect(&config.database)
        .await
        .with_context(|| format!("cannot open the database {}", config.database))?;
    let listener = web::bind(args.listen.unwrap_or(config.server.listen)).await?;
    let address = listener.local_addr()?;
    println!("degrade is serving the dashboard at http://{address}/ (database {})", config.database);
    let state = AppState { store: store.clone(), config: Arc::new(config) };
    web::serve(listener, state, shutdown_signal()).await?;
    store.close().await;
    Ok(Exit::Ok)
}
