//! One scheduling `degrade serve` per SQLite file (a `serve --no-scheduler`, a dashboard, runs no night and
//! takes no hold): a second one on the same file would run the same schedule beside the
//! first, each catching up nights the other had skipped and losing some to the other's leases (a trial's log
//! read "catching up on a run missed while degrade was down" while the first was up). SQLite is one machine's
//! database; a team's several `serve` share PostgreSQL, where the scenario leases keep each night to one.
//!
//! The hold is an advisory lock on the database file itself (`flock`), which SQLite's own locks (POSIX record
//! locks) never meet on a local file system, and which the kernel lets go when the process ends however it ends.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

use super::DatabaseUrl;

/// Held while `serve` serves a SQLite database; let go when dropped (or when the process ends).
#[derive(Debug)]
pub struct ServingHold {
    _file: Option<File>,
}

impl ServingHold {
    /// Holds `url` for this process's `serve`: nothing to hold for PostgreSQL; an error saying so when another
    /// `degrade serve` holds the SQLite file.
    pub fn take(url: &DatabaseUrl) -> Result<Self, String> {
        match url {
            DatabaseUrl::Postgres(_) => Ok(Self { _file: None }),
            DatabaseUrl::Sqlite(path) => hold(path).map(|file| Self { _file: Some(file) }),
        }
    }
}

fn hold(path: &Path) -> Result<File, String> {
    // Taken before the store opens the database, so made here when it is new (an empty file is an empty SQLite
    // database); nothing is ever written through this handle.
    if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder).map_err(|e| format!("cannot create {}: {e}", folder.display()))?;
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(format!(
            "another degrade serve runs the schedule on {} already: a SQLite database takes one (a `serve \
             --no-scheduler` beside it is fine; share PostgreSQL between several that schedule)",
            path.display()
        )),
        Err(TryLockError::Error(e)) => Err(format!("cannot lock {} for serving: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_hold_on_one_sqlite_file_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("degrade.db");
        std::fs::write(&path, b"").unwrap();
        let url = DatabaseUrl::Sqlite(path);
        let first = ServingHold::take(&url).unwrap();
        let refused = ServingHold::take(&url).unwrap_err();
        assert!(refused.starts_with("another degrade serve runs the schedule on"), "{refused}");
        drop(first);
        assert!(ServingHold::take(&url).is_ok(), "let go when dropped");
    }
}
