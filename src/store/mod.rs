//! The only place with degrade's own SQL (the demo target keeps its own database): runs, results, timelines,
//! telemetry, verdicts, alert episodes and the notification outbox, on embedded SQLite or a shared PostgreSQL server.
//!
//! The backend is chosen by the URL scheme. Each query is written once, in SQL both dialects accept
//! (`$1` placeholders, `returning`, integer milliseconds for times, only i64/f64/text/bytes binds), and the
//! [`on_pool!`]/[`in_transaction!`] macros run it on whichever pool is open; native pools are used rather than
//! `sqlx::Any`, which cannot decode every column type. Writes that belong together share one transaction, and
//! SQLite write transactions start with `BEGIN IMMEDIATE` so two writers queue on the busy timeout instead of
//! failing mid-transaction; a busy error that still escapes is retried (see [`retry`]). Every text a write
//! binds goes through [`crate::outside_text::storable`], so a NUL, which PostgreSQL cannot hold, never fails one.

mod baselines;
mod capacity;
mod episodes;
pub mod fault;
mod grid;
mod confirmations;
mod left_behind;
mod leases;
mod migrations;
mod outbox;
mod overview;
mod retry;
mod rows;
mod run_reads;
mod runs;
mod segments;
mod series;
mod serving;
mod trend_rows;
mod telemetry;
mod telemetry_trends;
mod trend_runs;
mod trends;
mod url;
mod verdicts;

use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};

use sqlx::Connection;
use sqlx::migrate::MigrateError;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use std::str::FromStr;

use crate::model::RunId;

pub use capacity::CapacityNight;
pub use episodes::{Acknowledged, Episode, NewEpisode};
pub use grid::{GridFinding, GridRun};
pub use leases::Lease;
pub use left_behind::LeftBehind;
pub use outbox::{Claim, NewMessage, OutboxMessage};
pub use overview::{ScenarioSummary, StatusCount};
pub use retry::waiting_for;
pub(crate) use retry::{Retry, StoreCause, retry};
pub use segments::{Registration, SegmentRow, SegmentSummary, SegmentedRun};
pub use series::WorkloadSeries;
pub use serving::ServingHold;
pub use telemetry_trends::{TelemetryNight, TelemetryTrend};
pub use trends::{ChartPoint, Trend, TrendSpan};
pub use url::DatabaseUrl;

/// How long a SQLite statement waits for another writer before reporting busy.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// What can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database refused or failed a query; the message never contains the URL.
    /// (Not the error's source: its text is here already, and a source would be printed again after it.)
    #[error("database error: {}", database_message(.0))]
    Database(sqlx::Error),
    /// The schema could not be brought up to date.
    #[error("{0}")]
    Migrate(String),
    /// A run was expected in the `running` state (it finished, failed or was aborted already).
    #[error("run {0} is not running; it was finished, failed or aborted already")]
    RunNotRunning(RunId),
    /// No run has this id.
    #[error("run {0} does not exist")]
    RunNotFound(RunId),
    /// The database to read does not exist.
    #[error("{0}")]
    Missing(String),
    /// A value to store is not a finite number (a bug upstream); nothing was written.
    #[error("refusing to store {0}: not a finite number")]
    NotFinite(String),
    /// A stored value could not be read back (a JSON column, a status name).
    #[error("stored data is unreadable: {0}")]
    Corrupt(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        Self::Database(error)
    }
}

/// sqlx's text of `error`, less what misleads: a PostgreSQL error's " at line 948" is a line of the server's
/// own C source, which reads as a line of the user's file or query.
fn database_message(error: &sqlx::Error) -> String {
    match error {
        sqlx::Error::Database(db) => db.message().to_owned(),
        other => other.to_string(),
    }
}

/// An open connection pool to one backend.
#[derive(Clone)]
enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs `$body` with `$pool` bound to whichever native pool is open; the body is compiled once per backend.
macro_rules! on_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match &$store.pool {
            $crate::store::Pool::Sqlite($pool) => $body,
            $crate::store::Pool::Postgres($pool) => $body,
        }
    };
}

/// Runs `$body` inside one write transaction (`$tx`) and commits; an early `?` return rolls back.
macro_rules! in_transaction {
    ($store:expr, |$tx:ident| $body:expr) => {
        match &$store.pool {
            $crate::store::Pool::Sqlite(pool) => {
                let mut $tx = pool.begin_with("BEGIN IMMEDIATE").await?;
                let out = $body;
                $tx.commit().await?;
                out
            }
            $crate::store::Pool::Postgres(pool) => {
                let mut $tx = pool.begin().await?;
                let out = $body;
                $tx.commit().await?;
                out
            }
        }
    };
}
pub(crate) use {in_transaction, on_pool};

/// The run store. Cheap to clone: clones share the pool.
#[derive(Clone)]
pub struct Store {
    pool: Pool,
    url: DatabaseUrl,
    /// The schema version the database had when this store connected (0 for a new one), before migrating.
    found_version: i64,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({})", self.url)
    }
}

impl Store {
    /// Connects to `url` (creating a SQLite file if missing) and brings the schema up to date.
    pub async fn connect(url: &DatabaseUrl) -> Result<Self, StoreError> {
        let pool = match url {
            DatabaseUrl::Sqlite(path) => {
                let options = SqliteConnectOptions::new()
                    .filename(path)
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    // NORMAL is durable across application crashes in WAL mode; FULL only adds power-loss safety
                    // for the last transaction at the cost of an fsync per commit.
                    .synchronous(SqliteSynchronous::Normal)
                    .foreign_keys(true)
                    .busy_timeout(SQLITE_BUSY_TIMEOUT);
                Pool::Sqlite(SqlitePoolOptions::new().max_connections(4).connect_with(options).await?)
            }
            DatabaseUrl::Postgres(secret) => {
                let options = PgConnectOptions::from_str(secret.expose())?;
                // One direct connection first: a pool retries a refused connection until its acquire timeout
                // and then reports only "timed out", while this fails at once with the real cause.
                PgConnection::connect_with(&options).await?.close().await?;
                Pool::Postgres(PgPoolOptions::new().max_connections(8).connect_lazy_with(options))
            }
        };
        let mut store = Self { pool, url: url.clone(), found_version: 0 };
        store.found_version = store.found_version().await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Connects to a database that must exist already: for commands that read what earlier runs stored, where
    /// creating an empty SQLite file would only hide a wrong path.
    pub async fn connect_existing(url: &DatabaseUrl) -> Result<Self, StoreError> {
        if let DatabaseUrl::Sqlite(path) = url
            && !path.exists()
        {
            return Err(StoreError::Missing(
                "it does not exist; check [database] url or DEGRADE_DATABASE_URL, or run `degrade migrate` to \
                 create it"
                    .to_owned(),
            ));
        }
        Self::connect(url).await
    }

    /// The URL this store is connected to (prints without its password).
    #[must_use]
    pub fn url(&self) -> &DatabaseUrl {
        &self.url
    }

    /// `sqlite` or `postgres`.
    #[must_use]
    pub fn backend(&self) -> &'static str {
        match self.pool {
            Pool::Sqlite(_) => "sqlite",
            Pool::Postgres(_) => "postgres",
        }
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let result = match &self.pool {
            Pool::Sqlite(pool) => match migrations::SQLITE.migrator().await {
                Ok(migrator) => migrator.run(pool).await,
                Err(e) => Err(e),
            },
            Pool::Postgres(pool) => match migrations::POSTGRES.migrator().await {
                Ok(migrator) => migrator.run(pool).await,
                Err(e) => Err(e),
            },
        };
        result.map_err(|e| match e {
            MigrateError::VersionMissing(version) => StoreError::Migrate(format!(
                "the database has schema version {version}, which this degrade does not know; it was written by a \
                 newer degrade: upgrade this one"
            )),
            MigrateError::Execute(e) => StoreError::Database(e),
            other => StoreError::Migrate(format!("cannot migrate the schema: {other}")),
        })
    }

    /// The schema version before migrating: 0 when the migrations table does not exist yet (a new database);
    /// any other error is the database's and is reported.
    async fn found_version(&self) -> Result<i64, StoreError> {
        let query = match &self.pool {
            Pool::Sqlite(_) => "select count(*) from sqlite_master where type = 'table' and name = '_sqlx_migrations'",
            Pool::Postgres(_) => {
                "select count(*) from pg_tables where tablename = '_sqlx_migrations' and schemaname = current_schema()"
            }
        };
        let tables: i64 = on_pool!(self, |pool| sqlx::query_scalar(query).fetch_one(pool).await?);
        if tables == 0 { Ok(0) } else { self.schema_version().await }
    }

    /// The newest migration applied to the database.
    pub async fn schema_version(&self) -> Result<i64, StoreError> {
        let query = "select coalesce(max(version), 0) from _sqlx_migrations where success";
        let version: i64 = on_pool!(self, |pool| sqlx::query_scalar(query).fetch_one(pool).await?);
        Ok(version)
    }

    /// The schema version the database had when this store connected, before it was brought up to date: 0 for
    /// a database this connection created.
    #[must_use]
    pub fn version_found(&self) -> i64 {
        self.found_version
    }

    /// The newest migration this build of degrade carries.
    #[must_use]
    pub fn latest_known_version() -> i64 {
        migrations::SQLITE.latest_version()
    }

    /// Closes the pool, waiting for connections to finish (SQLite checkpoints its WAL on the last close).
    pub async fn close(&self) {
        on_pool!(self, |pool| pool.close().await);
    }
}

/// The first named figure that is NaN or infinite, as an error.
pub(crate) fn ensure_finite(figures: impl IntoIterator<Item = (String, f64)>) -> Result<(), StoreError> {
    match figures.into_iter().find(|(_, value)| !value.is_finite()) {
        Some((name, value)) => Err(StoreError::NotFinite(format!("{name} = {value}"))),
        None => Ok(()),
    }
}

pub(crate) fn to_millis(time: DateTime<Utc>) -> i64 {
    time.timestamp_millis()
}

pub(crate) fn from_millis(millis: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(millis).single().unwrap_or_default()
}
