//! Database URLs: which backend, where, and how to print one without its password.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use sqlx::postgres::PgConnectOptions;

use crate::secret::{Secret, redact_url};

/// Where runs are stored, chosen by the URL scheme.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// `sqlite://path`: an embedded file, created if missing.
    Sqlite(PathBuf),
    /// `postgres://…` or `postgresql://…`: a shared server. The whole URL is secret, since it may carry a
    /// password.
    Postgres(Secret),
}

impl DatabaseUrl {
    /// The default, `sqlite://degrade.db`, inside `folder`.
    #[must_use]
    pub fn default_in(folder: &Path) -> Self {
        Self::Sqlite(folder.join("degrade.db"))
    }

    /// Parses `url`; a relative SQLite path is taken relative to `folder`. Errors never contain a password.
    pub fn parse(url: &str, folder: &Path) -> Result<Self, String> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return match PgConnectOptions::from_str(url) {
                Ok(_) => Ok(Self::Postgres(Secret::new(url))),
                Err(e) => {
                    Err(format!("`{}` is not a valid PostgreSQL URL: {}", redact_url(url), redact_url(&e.to_string())))
                }
            };
        }
        let Some(path) = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")) else {
            // Not echoed: it may be a libpq keyword string or anything else holding a password.
            return Err(
                "not a database URL degrade knows; use sqlite://degrade.db or postgres://user@host:5432/db".to_owned()
            );
        };
        if path.is_empty() || path.contains('?') || path == ":memory:" {
            return Err(format!(
                "`{url}` needs a file path without options, e.g. sqlite://degrade.db (degrade keeps runs on disk and \
                 sets WAL mode itself)"
            ));
        }
        Ok(Self::Sqlite(folder.join(path)))
    }

    /// The URL with any password replaced by `***`, for logs and output.
    #[must_use]
    pub fn redacted(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("sqlite://{}", path.display()),
            Self::Postgres(url) => redact_url(url.expose()),
        }
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({})", self.redacted())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chooses_the_backend_by_scheme() {
        let folder = Path::new("/srv/degrade");
        assert_eq!(
            DatabaseUrl::parse("sqlite://runs.db", folder).unwrap(),
            DatabaseUrl::Sqlite("/srv/degrade/runs.db".into())
        );
        assert_eq!(
            DatabaseUrl::parse("sqlite:///var/lib/d.db", folder).unwrap(),
            DatabaseUrl::Sqlite("/var/lib/d.db".into())
        );
        let pg = DatabaseUrl::parse("postgres://app:hunter2@db/degrade", folder).unwrap();
        assert_eq!(pg.to_string(), "postgres://app:***@db/degrade");
        assert_eq!(format!("{pg:?}"), "DatabaseUrl(postgres://app:***@db/degrade)");
    }

    #[test]
    fn errors_never_show_the_password() {
        let odd = DatabaseUrl::parse("postgres://app:1234/hunter2@db/x", Path::new("")).unwrap();
        assert!(!odd.to_string().contains("hunter2"), "{odd}");
        for url in [
            "mysql://app:hunter2@db/x",
            "postgres://app:hunter2@db:notaport/x",
            "postgres://app:hun#ter2@db/x",
            "host=db password=hunter2",
        ] {
            let err = DatabaseUrl::parse(url, Path::new("")).unwrap_err();
            assert!(!err.contains("hunter2"), "{err}");
        }
        assert!(DatabaseUrl::parse("sqlite::memory:", Path::new("")).is_err());
    }
}
