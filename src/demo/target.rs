//! The demo target: a small but realistic JSON API, boards with cards, backed by its own SQLite database
//! seeded with enough rows that requests spread over real data. Its knobs inject a regression: a delay on
//! one route, a share of 500s, CPU work per request that adds no latency (`cpu`), and the build id
//! `/version` reports.
//!
//! Routes: `GET /boards?page&per_page`, `GET /boards/{board_id}`, `GET /boards/{board_id}/cards?page&per_page`,
//! `POST /boards/{board_id}/cards`, `GET /boards/{board_id}/export` (a bounded pool of renderers: `export`),
//! `GET|PATCH|DELETE /cards/{card_id}`, `GET /search?q`, `GET /version`, `GET /healthz`, `GET /metrics` (its
//! process CPU in the Prometheus exposition format), and the board channel `GET /boards/{board_id}/live`, a
//! WebSocket where a board's users see each other's edits (`board_channel`); and on the same port, over h2c,
//! the gRPC method `demo.Boards/GetBoard` (`grpc`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{MatchedPath, Request, State};
use axum::http::HeaderMap;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::{Json, Router};
use serde_json::json;
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

mod api;

use super::board_channel::{self, BoardChannels};
use super::cpu::{self, Burner};
use super::export::{EXPORT_WORKERS, ExportPool};
use super::grpc;
use crate::engine::PreciseTimer;
use crate::metrics::GrpcCode;

/// Boards seeded; each gets [`CARDS_PER_BOARD`] cards, so reads spread over 24,000 rows.
pub const BOARDS: i64 = 600;
const CARDS_PER_BOARD: i64 = 40;
const WORDS: [&str; 16] = [
    "invoice",
    "release",
    "migration",
    "onboarding",
    "latency",
    "billing",
    "search",
    "mobile",
    "payments",
    "audit",
    "pricing",
    "export",
    "login",
    "cache",
    "report",
    "support",
];

/// What a user (or the demo) can change while the API runs.
#[derive(Debug, Default)]
pub struct Knobs {
    /// Extra microseconds on the slowed requests of [`Knobs::slow_routes`].
    pub slowdown_us: AtomicU64,
    /// The routes that are slowed, each as `METHOD /template` (e.g. `GET /boards/{board_id}/cards`) or a bare
    /// template.
    pub slow_routes: Mutex<Vec<String>>,
    /// Which share of those routes' requests is slowed, in millionths (a tail-only slowdown: 2 % of them);
    /// spread evenly over the requests, so a night's share is the share asked for.
    pub slow_share_ppm: AtomicU64,
    slow_seen: AtomicU64,
    /// Share of requests answered 500, in millionths.
    pub error_ppm: AtomicU64,
    /// CPU microseconds of work done after each API request is answered, off its path.
    pub burn_cpu_us: AtomicU64,
    /// What `/version` reports.
    pub build: Mutex<String>,
    /// Renderers of the board export, read when the API starts (0: [`EXPORT_WORKERS`]).
    pub export_workers: AtomicU32,
    served: AtomicU64,
}

impl Knobs {
    /// Knobs with `build` and nothing injected.
    #[must_use]
    pub fn new(build: &str) -> Arc<Self> {
        let knobs = Self::default();
        knobs.set_build(build);
        Arc::new(knobs)
    }

    /// Reports `build` from now on.
    pub fn set_build(&self, build: &str) {
        build.clone_into(&mut self.build.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Slows every request of `route` by `delay` (zero removes the slowdown), to the microsecond.
    pub fn slow_down(&self, route: &str, delay: Duration) {
        self.slow_down_share(&[route.to_owned()], delay, 1.0);
    }

    /// Slows `share` (0–1) of the requests of each of `routes` by `delay`.
    pub fn slow_down_share(&self, routes: &[String], delay: Duration, share: f64) {
        routes.clone_into(&mut self.slow_routes.lock().unwrap_or_else(PoisonError::into_inner));
        let us = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.slowdown_us.store(us, Ordering::Relaxed);
        self.slow_share_ppm.store((share.clamp(0.0, 1.0) * 1e6) as u64, Ordering::Relaxed);
    }

    /// Answers this share of requests (0.0 – 1.0) with 500.
    pub fn fail(&self, share: f64) {
        self.error_ppm.store((share.clamp(0.0, 1.0) * 1e6) as u64, Ordering::Relaxed);
    }

    /// Does about `us` microseconds of CPU work after each API request is answered (zero stops it): a build
    /// that costs more CPU per request while its answers take no longer.
    pub fn burn_cpu(&self, us: u64) {
        self.burn_cpu_us.store(us, Ordering::Relaxed);
    }

    fn delay_for(&self, method: &str, template: &str) -> Duration {
        let us = self.slowdown_us.load(Ordering::Relaxed);
        let matches = {
            let routes = self.slow_routes.lock().unwrap_or_else(PoisonError::into_inner);
            routes.iter().any(|route| *route == template || *route == format!("{method} {template}"))
        };
        if !matches || us == 0 {
            return Duration::ZERO;
        }
        // Request n is slowed when the running count of slowed ones, n × share, reaches a new whole number.
        let n = self.slow_seen.fetch_add(1, Ordering::Relaxed);
        let ppm = self.slow_share_ppm.load(Ordering::Relaxed);
        let slowed = (n + 1) * ppm / 1_000_000 > n * ppm / 1_000_000;
        Duration::from_micros(if slowed { us } else { 0 })
    }
}

#[derive(Clone)]
struct Demo {
    db: SqlitePool,
    knobs: Arc<Knobs>,
    burner: Arc<Burner>,
    exports: Arc<ExportPool>,
}

/// The running API: its address; stopped when dropped.
#[allow(missing_docs, reason = "the field names say what they hold")]
pub struct DemoTarget {
    pub address: SocketAddr,
    server: tokio::task::JoinHandle<()>,
    _db_dir: TempDir,
}

impl Drop for DemoTarget {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl DemoTarget {
    /// Seeds a fresh database and serves the API on `address` (port 0 picks a free one).
    pub async fn start(address: SocketAddr, knobs: Arc<Knobs>) -> anyhow::Result<Self> {
        let db_dir = TempDir::new()?;
        let options = SqliteConnectOptions::new()
            .filename(db_dir.0.join("demo-target.db"))
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // The data is seeded afresh on every start and thrown away after, so nothing is gained by waiting
            // for the disk: with fsyncs, a shared machine's disk stalls a few writes a night by 50–300 ms,
            // a heavy tail on the write routes that no build caused.
            .synchronous(SqliteSynchronous::Off)
            .busy_timeout(Duration::from_secs(5));
        let db = SqlitePoolOptions::new().max_connections(4).connect_with(options).await?;
        seed(&db).await?;
        let listener = tokio::net::TcpListener::bind(address).await?;
        let address = listener.local_addr()?;
        // Every write goes out at once: on a board channel, a change written right behind an ack would otherwise
        // wait for the client's delayed ACK (40 ms on Linux), a tail no build caused.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let workers = match knobs.export_workers.load(Ordering::Relaxed) {
            0 => EXPORT_WORKERS,
            n => n,
        };
        let exports = Arc::new(ExportPool::new(workers));
        let app = router(Demo { db, knobs, burner: Arc::new(Burner::start()), exports });
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "the demo target stopped");
            }
        });
        Ok(Self { address, server, _db_dir: db_dir })
    }

    /// `http://address`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }
}

/// A directory under the system's temp dir, removed when dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> std::io::Result<Self> {
        let path =
            std::env::temp_dir().join(format!("degrade-demo-target-{}-{}", std::process::id(), rand::random::<u32>()));
        std::fs::create_dir_all(&path)?;
        Ok(Self(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn router(demo: Demo) -> Router {
    Router::new()
        .route("/boards", get(api::list_boards))
        .route("/boards/{board_id}", get(api::get_board))
        .route("/boards/{board_id}/cards", get(api::list_cards).post(api::create_card))
        .route("/boards/{board_id}/live", get(board_channel::live).with_state(BoardChannels::new(BOARDS)))
        .route("/boards/{board_id}/export", get(api::export_board))
        .route("/cards/{card_id}", get(api::get_card).patch(api::update_card).delete(api::delete_card))
        .route("/search", get(api::search))
        .route("/version", get(api::version))
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(metrics))
        .route(grpc::GET_BOARD, post(grpc_get_board))
        .layer(axum::middleware::from_fn_with_state(demo.clone(), knobs))
        .with_state(demo)
}

/// Applies the knobs: the slowdown on the slowed route, then the injected 500s.
async fn knobs(State(demo): State<Demo>, request: Request, next: Next) -> Response {
    let template = request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_owned()).unwrap_or_default();
    let delay = demo.knobs.delay_for(request.method().as_str(), &template);
    if !delay.is_zero() {
        // Held to the microsecond on a timer of the event loop, as a slower query is awaited: the worker serves
        // other routes meanwhile. tokio's own timer counts whole milliseconds: a 2 ms hold answered at ~2.1 or
        // ~2.9 ms by the phase of the arrivals against its tick (a bench's p50 jumped 15 % between rounds), and
        // a sub-millisecond one had to be waited out by yielding in a loop, a core's worth of wake-ups.
        PreciseTimer::new().sleep_until(std::time::Instant::now() + delay).await;
    }
    let served = demo.knobs.served.fetch_add(1, Ordering::Relaxed);
    let ppm = demo.knobs.error_ppm.load(Ordering::Relaxed);
    // Every (1e6 / ppm)-th request fails: the same share every run, without a random source.
    let api = !["/version", "/healthz", "/metrics"].contains(&template.as_str());
    if ppm > 0 && api && served % (1_000_000 / ppm).max(1) == 0 {
        if template == grpc::GET_BOARD {
            // A gRPC client reads its outcome from the status, not from the HTTP one.
            return grpc::status_only(GrpcCode::Internal, "injected failure");
        }
        return (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"error": "injected failure"}))).into_response();
    }
    let answer = next.run(request).await;
    if api {
        // Queued for the burner's thread as the answer leaves: the work is the build's, the wait nobody's.
        demo.burner.burn(demo.knobs.burn_cpu_us.load(Ordering::Relaxed));
    }
    answer
}

async fn grpc_get_board(State(demo): State<Demo>, headers: HeaderMap, body: Bytes) -> Response {
    grpc::get_board(&demo.db, &headers, &body).await
}

async fn metrics(State(demo): State<Demo>) -> Response {
    let requests = demo.knobs.served.load(Ordering::Relaxed);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], cpu::exposition(requests)).into_response()
}

async fn seed(db: &SqlitePool) -> anyhow::Result<()> {
    let mut tx = db.begin().await?;
    sqlx::query("create table boards (id integer primary key, title text not null, created_at integer not null)")
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "create table cards (id integer primary key, board_id integer not null references boards(id), \
         title text not null, body text not null, done integer not null default 0)",
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query("create index cards_by_board on cards(board_id, id)").execute(&mut *tx).await?;
    for board in 1..=BOARDS {
        let title = format!("{} board {board}", WORDS[(board % 16) as usize]);
        sqlx::query("insert into boards (id, title, created_at) values ($1, $2, $3)")
            .bind(board)
            .bind(title)
            .bind(1_700_000_000 + board * 3600)
            .execute(&mut *tx)
            .await?;
        for n in 0..CARDS_PER_BOARD {
            let word = WORDS[((board * 7 + n * 3) % 16) as usize];
            sqlx::query("insert into cards (board_id, title, body, done) values ($1, $2, $3, $4)")
                .bind(board)
                .bind(format!("{word} task {n} of board {board}"))
                .bind(format!("Follow up on the {word} work item; see the board for context."))
                .bind(i64::from(n % 3 == 0))
                .execute(&mut *tx)
                .await?;
        }
    }
    tx.commit().await?;
    Ok(())
}
