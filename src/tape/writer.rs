//! Writing a tape: to a temporary file beside its destination, gzip-compressed when its name ends in `.gz`,
//! moved into place only when complete, so a failed or interrupted import never leaves half a tape.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::format::{HEADER, TapeRequest};

/// Writes a tape to a temporary file beside its destination and moves it into place only when complete, so
/// a failed import never leaves half a tape. A name ending in `.gz` is gzip-compressed.
pub struct TapeWriter {
    out: Sink,
    file: tempfile::NamedTempFile,
    destination: PathBuf,
    line: String,
}

impl TapeWriter {
    /// Starts a tape at `destination`, its comment lines first.
    pub fn create(destination: &Path, comments: &[String]) -> io::Result<Self> {
        let folder = destination.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let file = tempfile::NamedTempFile::new_in(folder)?;
        let raw = io::BufWriter::with_capacity(256 * 1024, file.reopen()?);
        let mut out = if destination.extension().is_some_and(|e| e == "gz") {
            Sink::Gzip(flate2::write::GzEncoder::new(raw, flate2::Compression::default()))
        } else {
            Sink::Plain(raw)
        };
        writeln!(out, "{HEADER}")?;
        for comment in comments {
            writeln!(out, "# {comment}")?;
        }
        Ok(Self { out, file, destination: destination.to_owned(), line: String::new() })
    }

    /// Adds one request.
    pub fn write(&mut self, request: &TapeRequest) -> io::Result<()> {
        self.line.clear();
        request.write_line(&mut self.line);
        self.out.write_all(self.line.as_bytes())
    }

    /// Flushes everything and moves the tape into place.
    pub fn finish(self) -> io::Result<()> {
        let Self { out, file, destination, .. } = self;
        out.finish()?;
        file.as_file().sync_all()?;
        file.persist(&destination).map_err(|e| e.error)?;
        Ok(())
    }
}

/// Where a tape's bytes go: the file, through gzip or not.
enum Sink {
    Plain(io::BufWriter<std::fs::File>),
    Gzip(flate2::write::GzEncoder<io::BufWriter<std::fs::File>>),
}

impl Sink {
    /// Ends the gzip stream and flushes; dropping the encoder instead would swallow a write error.
    fn finish(self) -> io::Result<()> {
        let mut raw = match self {
            Self::Plain(raw) => raw,
            Self::Gzip(gzip) => gzip.finish()?,
        };
        raw.flush()
    }
}

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            Self::Plain(out) => out.write(bytes),
            Self::Gzip(out) => out.write(bytes),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Plain(out) => out.flush(),
            Self::Gzip(out) => out.flush(),
        }
    }
}
