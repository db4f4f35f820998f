//! Configuration errors that point at the exact place to fix.
//!
//! Every problem found in `degrade.toml` carries where it is (file, line, column, or the environment
//! variable it came from) and the dotted field path, printed the way compilers print errors so editors and
//! terminals can jump to it: `degrade.toml:12:12: scenario[0].schedule: …`.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where a bad value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A position in a config file (1-based line and column).
    File {
        /// The config file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column, counted in characters.
        column: usize,
    },
    /// A whole file, when the problem has no narrower place (the file is missing or unreadable).
    WholeFile(PathBuf),
    /// An environment variable, for values that override or complete the file.
    Env(String),
}

impl Location {
    /// The location of byte `offset` in `text`, the contents of `path`.
    #[must_use]
    pub fn at_offset(path: &Path, text: &str, offset: usize) -> Self {
        let before = &text[..offset.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        Self::File { path: path.to_owned(), line, column }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File { path, line, column } => write!(f, "{}:{line}:{column}", path.display()),
            Self::WholeFile(path) => write!(f, "{}", path.display()),
            Self::Env(var) => write!(f, "environment variable {var}"),
        }
    }
}

/// One problem in the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where the bad value is.
    pub location: Location,
    /// The dotted field path, e.g. `scenario[0].timezone`; empty for file-level problems.
    pub field: String,
    /// What is wrong and, where it helps, how to fix it.
    pub message: String,
}

impl ConfigError {
    /// A problem at `location` in `field`.
    /// An error at `location` in `field`. A message that quotes a huge rejected value is cut (a 1 MB value
    /// must not make a 1 MB line), and control characters in it are shown escaped.
    pub fn new(location: Location, field: impl Into<String>, message: impl Into<String>) -> Self {
        let message = crate::outside_text::clipped(&message.into(), MAX_MESSAGE_CHARS);
        Self { location, field: field.into(), message }
    }

    /// The file at `path` is not UTF-8: an error at the line and column of the first byte that is not, so an
    /// editor can jump to it.
    #[must_use]
    pub fn not_utf8(path: &Path, error: &std::string::FromUtf8Error) -> Self {
        let valid = error.utf8_error().valid_up_to();
        let before = String::from_utf8_lossy(&error.as_bytes()[..valid]);
        let location = Location::at_offset(path, &before, before.len());
        Self::new(location, "", "not UTF-8 text: a byte here starts no UTF-8 character; save the file as UTF-8")
    }
}

/// Characters of one error message at most.
const MAX_MESSAGE_CHARS: usize = 600;

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.location, self.message)
        } else {
            write!(f, "{}: {}: {}", self.location, self.field, self.message)
        }
    }
}

/// Every problem found in one configuration, so a user fixes them all in one pass instead of one per run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl From<ConfigError> for ConfigErrors {
    fn from(error: ConfigError) -> Self {
        Self(vec![error])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_lines_and_columns() {
        let text = "a = 1\n[server]\nlisten = \"x\"\n";
        let at = |offset| Location::at_offset(Path::new("d.toml"), text, offset).to_string();
        assert_eq!(at(0), "d.toml:1:1");
        assert_eq!(at(6), "d.toml:2:1");
        assert_eq!(at(24), "d.toml:3:10");
    }

    #[test]
    fn a_byte_that_is_not_utf8_is_placed_by_line_and_column() {
        let bytes = b"a = 1\n[s]\nname = \"caf\xe9\"\n".to_vec();
        let error = String::from_utf8(bytes).unwrap_err();
        let shown = ConfigError::not_utf8(Path::new("d.toml"), &error).to_string();
        assert!(shown.starts_with("d.toml:3:12: not UTF-8 text"), "{shown}");
    }
}
