//! The dashboard and JSON API: server-rendered pages (askama templates, charts-rs SVG, no JavaScript) and
//! `/api/v1` routes over the same data, all read from the store.
//!
//! Handlers only translate between HTTP and the store; what a page shows is decided in its view type.
//! Errors go through [`error::WebError`], which logs internal failures and answers with a generic page.

mod alerts;
mod api;
mod auth;
mod capacity_chart;
mod changes;
mod charts;
mod compare;
mod error;
mod grid;
mod metrics;
mod no_nul;
mod overview_page;
mod range;
mod route_name;
mod run_page;
mod run_telemetry;
mod security_headers;
mod sparkline;
mod svg;
mod telemetry_chart;
mod trend_chart;
mod trend_geometry;
mod trend_marks;
mod trend_time_axis;
mod trend_page;
mod trend_telemetry;
mod trend_view;
mod trigger;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, post};

use crate::config::Config;
use crate::pipeline::Runner;
use crate::store::Store;

pub use error::WebError;

/// What every handler can reach.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    /// The validated configuration (scenario settings, public URL).
    pub config: Arc<Config>,
    /// Starts runs through the whole chain (API triggers; the scheduler shares it).
    pub runner: Runner,
}

impl AppState {
    /// The state for `store` and `config`, with the sender that stops runs under way (they are stored as
    /// aborted) when the server shuts down.
    #[must_use]
    pub fn new(store: Store, config: Config) -> (Self, tokio::sync::watch::Sender<bool>) {
        let (stop_tx, stop) = tokio::sync::watch::channel(false);
        let config = Arc::new(config);
        let runner = Runner::new(store.clone(), config.clone(), stop);
        (Self { store, config, runner }, stop_tx)
    }
}

/// Every route of the dashboard and the API.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(overview_page::page))
        .route("/scenarios/{name}", get(trend_page::page))
        .route("/runs/{id}", get(run_page::page))
        .route("/compare", get(compare::page))
        .route("/alerts", get(alerts::page))
        .route("/alerts/{id}/acknowledge", post(alerts::acknowledge_form))
        .route("/api/v1/episodes", get(alerts::list))
        .route("/api/v1/episodes/{id}/acknowledge", post(alerts::acknowledge_json))
        .route("/api/v1/scenarios", get(api::scenarios))
        .route("/api/v1/scenarios/{name}/runs", get(api::runs).post(trigger::trigger))
        .route("/api/v1/scenarios/{name}/trend", get(api::trend))
        .route("/api/v1/scenarios/{name}/capacity", get(api::capacity))
        .route("/api/v1/runs/{id}", get(api::run))
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics::metrics))
        .route("/static/style.css", get(stylesheet))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth::guard))
        .layer(axum::middleware::from_fn(no_nul::refuse))
        .layer(axum::middleware::map_response(security_headers::add))
        .with_state(state)
}

/// How long a client may take to send a request's headers. Without a limit, a client that opens
/// connections and sends half a request keeps each open for good (a thousand of them exhaust the process's
/// file descriptors); a browser or script sends its headers at once.
const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long open connections may take to finish once the dashboard stops.
const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves `router` on `listener` until `shutdown` completes, then lets requests under way finish.
///
/// This is `axum::serve` written out on hyper's HTTP/1 server, for the one setting it does not offer: the
/// header-read timeout.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(state);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(HEADER_READ_TIMEOUT);
    let connections = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let socket = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => socket,
                // Out of file descriptors and the like: wait a moment rather than spin, as axum::serve does.
                Err(e) => {
                    tracing::warn!(error = %e, "the dashboard cannot accept a connection");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let connection = http.serve_connection(hyper_util::rt::TokioIo::new(socket), service);
        let connection = connections.watch(connection);
        tokio::spawn(async move {
            // A client that goes away or is too slow to send its headers ends its own connection: not an error.
            let _ = connection.await;
        });
    }
    drop(listener);
    // Requests under way may finish, but a client that stops reading must not hold the shutdown up (the
    // runs' own grace period comes after this).
    if tokio::time::timeout(SHUTDOWN_WAIT, connections.shutdown()).await.is_err() {
        tracing::warn!("connections still open after {} s were closed", SHUTDOWN_WAIT.as_secs());
    }
    Ok(())
}

/// Binds the listen address, with a message that says what to change when it is taken.
pub async fn bind(address: SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(address).await.map_err(|e| {
        anyhow::anyhow!(
            "cannot listen on {address}: {e}; set [server] listen or DEGRADE_SERVER_LISTEN to another address"
        )
    })
}

/// The run id in a path or query value, or a 400 that quotes it.
fn parse_run_id(text: &str) -> Result<i64, WebError> {
    text.parse().map_err(|_| WebError::BadRequest(format!("`{text}` is not a run id")))
}

/// The workload series a page or answer shows: the one whose hash starts with `wanted`, else the newest that
/// runs the scenario as written (`WorkloadSeries::default_of`).
fn chosen_series<'a>(
    every: &'a [crate::store::WorkloadSeries],
    scenario: &str,
    wanted: Option<&str>,
) -> Result<Option<&'a crate::store::WorkloadSeries>, WebError> {
    match wanted {
        None => Ok(crate::store::WorkloadSeries::default_of(every)),
        Some(wanted) => every
            .iter()
            .find(|s| s.hash.starts_with(wanted))
            .map(Some)
            .ok_or_else(|| WebError::NotFound(format!("Scenario `{scenario}` has no workload series `{wanted}`."))),
    }
}

/// A 404 unless some run of `name` was ever stored.
async fn ensure_scenario(state: &AppState, name: &str) -> Result<(), WebError> {
    if state.store.scenario_exists(name).await? {
        Ok(())
    } else {
        Err(WebError::NotFound(format!("No scenario is called `{name}`.")))
    }
}

/// `ok` while the database answers, 503 while it does not; either way followed by what this process's
/// database work is waiting for, if it is (a night's write under a SQLite file another process locked still
/// reads `ok`: the dashboard serves, and the night carries on once the lock is let go).
async fn healthz(axum::extract::State(state): axum::extract::State<AppState>) -> impl IntoResponse {
    let waiting = crate::store::waiting_for().map(|what| format!("waiting: {what}\n")).unwrap_or_default();
    match state.store.schema_version().await {
        Ok(_) => (axum::http::StatusCode::OK, format!("ok\n{waiting}")),
        Err(e) => {
            tracing::error!(error = %e, "health check: database unavailable");
            (axum::http::StatusCode::SERVICE_UNAVAILABLE, format!("database unavailable\n{waiting}"))
        }
    }
}

async fn stylesheet() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], include_str!("../../static/style.css"))
}

async fn not_found(uri: axum::http::Uri) -> axum::response::Response {
    WebError::NotFound(format!("There is no page at {}.", uri.path())).answer_for(uri.path())
}

/// A path that exists, asked with a method it does not take: 405 in the API's JSON under `/api/` (axum adds
/// the `Allow` header naming the methods it does take).
async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> axum::response::Response {
    WebError::MethodNotAllowed(format!("{} does not take {method}.", uri.path())).answer_for(uri.path())
}
