//! Reading the files a scenario names (the scenario itself, its feeders) with a size limit: a device such as
//! `/dev/zero`, a named pipe or a directory is refused before it is opened, and a file past the limit is
//! refused instead of filling memory.

use std::io::Read;
use std::path::Path;

/// Why a file could not be read as text.
pub(super) enum FileProblem {
    /// Opening or reading it failed (missing, no permission).
    Unreadable(std::io::Error),
    /// A directory, device or pipe.
    NotRegular,
    /// Larger than the limit, in MB, before or while it was read.
    TooLarge(u64),
    /// Not UTF-8.
    NotText(std::string::FromUtf8Error),
}

impl FileProblem {
    /// The problem in a sentence about `subject` (the file as the user knows it).
    pub(super) fn about(&self, subject: &str) -> String {
        match self {
            Self::Unreadable(e) => format!("cannot read {subject}: {e}"),
            Self::NotRegular => format!("{subject} is not a regular file (a directory, device or pipe)"),
            Self::TooLarge(megabytes) => format!("{subject} is larger than {megabytes} MB, the most that is read"),
            // Where, as an editor reads it (`data.csv:3:7: not UTF-8 text…`), not a byte index.
            Self::NotText(e) => crate::config::ConfigError::not_utf8(Path::new(subject), e).to_string(),
        }
    }
}

/// The text of the regular file at `path`, at most `max_bytes` long.
pub(super) fn read_text(path: &Path, max_bytes: u64) -> Result<String, FileProblem> {
    // Looked at before opening: opening a named pipe would wait for a writer.
    let metadata = std::fs::metadata(path).map_err(FileProblem::Unreadable)?;
    if !metadata.is_file() {
        return Err(FileProblem::NotRegular);
    }
    let too_large = FileProblem::TooLarge(max_bytes / 1_000_000);
    if metadata.len() > max_bytes {
        return Err(too_large);
    }
    let file = std::fs::File::open(path).map_err(FileProblem::Unreadable)?;
    // Bounded again while reading: the file may have grown since its size was looked at.
    let mut bytes = Vec::new();
    file.take(max_bytes + 1).read_to_end(&mut bytes).map_err(FileProblem::Unreadable)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large);
    }
    String::from_utf8(bytes).map_err(FileProblem::NotText)
}
