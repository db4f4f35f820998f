//! Reading the files a scenario names (the scenario itself, its feeders, its tape) safely: a device such as
//! `/dev/zero`, a named pipe, a directory or a file of the kernel's own (`/proc`, `/sys`, whose "regular"
//! files report no size and may never end) is refused before it is opened ([`regular_file`], the one check
//! for every such file), and a file past its limit is refused instead of filling memory.

use std::io::Read;
use std::path::Path;

/// Why a file could not be read as text.
pub(super) enum FileProblem {
    /// Opening or reading it failed (missing, no permission).
    Unreadable(std::io::Error),
    /// A directory, device or pipe.
    NotRegular,
    /// A file the kernel makes up as it is read (under `/proc` or `/sys`).
    KernelFile,
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
            Self::KernelFile => {
                format!("{subject} is a file of the kernel's (under /proc or /sys), not data: its size is unknown")
            }
            Self::TooLarge(megabytes) => format!("{subject} is larger than {megabytes} MB, the most that is read"),
            // Where, as an editor reads it (`data.csv:3:7: not UTF-8 text…`), not a byte index.
            Self::NotText(e) => crate::config::ConfigError::not_utf8(Path::new(subject), e).to_string(),
        }
    }
}

/// Where the kernel's made-up files live: regular to `stat`, with no size, and some never end.
const KERNEL_FILE_SYSTEMS: [&str; 2] = ["/proc", "/sys"];

/// The metadata of `path` if it is a regular file of data that can be read to its end: looked at before
/// anything opens it, since opening a named pipe waits for a writer and reading a device may never end.
pub(super) fn regular_file(path: &Path) -> Result<std::fs::Metadata, FileProblem> {
    let metadata = std::fs::metadata(path).map_err(FileProblem::Unreadable)?;
    if !metadata.is_file() {
        return Err(FileProblem::NotRegular);
    }
    // Resolved, so a symbolic link or `..` does not hide where the file is.
    let real = std::fs::canonicalize(path).map_err(FileProblem::Unreadable)?;
    if KERNEL_FILE_SYSTEMS.iter().any(|root| real.starts_with(root)) {
        return Err(FileProblem::KernelFile);
    }
    Ok(metadata)
}

/// The text of the regular file at `path`, at most `max_bytes` long.
pub(super) fn read_text(path: &Path, max_bytes: u64) -> Result<String, FileProblem> {
    String::from_utf8(read_bytes(path, max_bytes)?).map_err(FileProblem::NotText)
}

/// The bytes of the regular file at `path`, at most `max_bytes` of them.
pub(super) fn read_bytes(path: &Path, max_bytes: u64) -> Result<Vec<u8>, FileProblem> {
    let metadata = regular_file(path)?;
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
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_pipes_and_kernel_files_are_refused_before_they_are_opened() {
        let refused = |path: &str| regular_file(Path::new(path)).map(|_| ()).map_err(|p| p.about(path));
        assert_eq!(refused("/dev/zero"), Err("/dev/zero is not a regular file (a directory, device or pipe)".into()));
        assert!(refused("/proc/self/environ").is_err_and(|e| e.contains("a file of the kernel's (under /proc")));
        assert!(refused("/proc/self/../self/status").is_err());
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data.csv");
        std::fs::write(&data, "id\n1\n").unwrap();
        assert!(regular_file(&data).is_ok());
    }
}
