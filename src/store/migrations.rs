//! The schema migrations of each database, embedded in the binary, and the one call that applies them.
//!
//! Why not `sqlx::migrate!`: that macro was the only use of sqlx's `macros` feature, which builds sqlx, its
//! two drivers, SQLite's C source, rustls, ring and tokio a second time, for the compiler to run: ~50 s of
//! CPU in a cold release build on 2 cores, the first thing a new user waits for. The files are embedded with
//! `include_str!` and handed to sqlx's own migrator, which checksums them exactly as the macro did, so
//! databases migrated by either are the same to both.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;

use sqlx::migrate::{MigrateError, Migration, MigrationSource, MigrationType, Migrator};

/// Each migration file of a folder under `migrations/`, in order: `(file name, SQL)`.
macro_rules! embedded {
    ($folder:literal: $($file:literal),+ $(,)?) => {
        &[$(($file, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/", $folder, "/", $file)))),+]
    };
}

/// SQLite's migrations.
pub(super) const SQLITE: Embedded = Embedded(embedded!("sqlite":
    "0001_initial.sql", "0002_weekly_results.sql", "0003_scheduler.sql", "0004_intervals.sql",
    "0005_lease_taken_at.sql", "0006_confirmation.sql", "0007_weekly_spread.sql", "0008_rollups.sql",
    "0009_trend_figures_index.sql", "0010_rerun_index.sql", "0011_confirming.sql", "0012_telemetry.sql",
    "0013_capacity.sql", "0014_judged_against.sql", "0015_segments.sql", "0016_outbox_claims.sql",
    "0017_outbox_claim_token.sql", "0018_capacity_zone.sql", "0019_run_reshape.sql",
));

/// PostgreSQL's migrations: the same versions as SQLite's.
pub(super) const POSTGRES: Embedded = Embedded(embedded!("postgres":
    "0001_initial.sql", "0002_weekly_results.sql", "0003_scheduler.sql", "0004_intervals.sql",
    "0005_lease_taken_at.sql", "0006_confirmation.sql", "0007_weekly_spread.sql", "0008_rollups.sql",
    "0009_trend_figures_index.sql", "0010_rerun_index.sql", "0011_confirming.sql", "0012_telemetry.sql",
    "0013_capacity.sql", "0014_judged_against.sql", "0015_segments.sql", "0016_outbox_claims.sql",
    "0017_outbox_claim_token.sql", "0018_capacity_zone.sql", "0019_run_reshape.sql",
));

/// Migration files named `<version>_<description>.sql`, as sqlx names them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Embedded(&'static [(&'static str, &'static str)]);

impl Embedded {
    /// The migrator for these files.
    pub(super) async fn migrator(self) -> Result<Migrator, MigrateError> {
        Migrator::new(self).await
    }

    /// The newest version.
    pub(super) fn latest_version(self) -> i64 {
        self.0.iter().filter_map(|(file, _)| version_and_description(file)).map(|(v, _)| v).max().unwrap_or(0)
    }
}

/// `0002_weekly_results.sql` is version 2, "weekly results" (sqlx's reading of a file name).
fn version_and_description(file: &str) -> Option<(i64, String)> {
    let (version, rest) = file.strip_suffix(".sql")?.split_once('_')?;
    Some((version.parse().ok()?, rest.replace('_', " ")))
}

impl MigrationSource<'static> for Embedded {
    fn resolve(self) -> Pin<Box<dyn Future<Output = Result<Vec<Migration>, sqlx::error::BoxDynError>> + Send>> {
        Box::pin(async move {
            self.0
                .iter()
                .map(|&(file, sql)| {
                    let (version, description) =
                        version_and_description(file).ok_or_else(|| format!("`{file}` is not a migration's name"))?;
                    let sql = sqlx::SqlStr::from_static(sql);
                    Ok(Migration::new(version, Cow::Owned(description), MigrationType::Simple, sql, false))
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files_in(folder: &str) -> Vec<String> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").join(folder);
        let mut files: Vec<String> =
            std::fs::read_dir(path).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        files.sort();
        files
    }

    #[test]
    fn every_file_of_each_folder_is_embedded_in_order_with_both_databases_at_one_version() {
        for (folder, embedded) in [("sqlite", SQLITE), ("postgres", POSTGRES)] {
            let names: Vec<&str> = embedded.0.iter().map(|(file, _)| *file).collect();
            assert_eq!(names, files_in(folder), "{folder}: add the new file to store/migrations.rs");
            let versions: Vec<i64> = names.iter().map(|f| version_and_description(f).unwrap().0).collect();
            assert!(versions.windows(2).all(|pair| pair[0] < pair[1]), "{folder}: {versions:?}");
        }
        assert_eq!(SQLITE.latest_version(), POSTGRES.latest_version());
        assert_eq!(version_and_description("0002_weekly_results.sql"), Some((2, "weekly results".to_owned())));
    }
}
