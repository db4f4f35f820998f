//! What `--flows` keeps of a HAR: the entries of API requests (static assets are let go as they are read),
//! their pages named, and the first few entries that are not requests. It holds all it keeps, so it reads a
//! browser session, not a day of traffic: at most [`MAX_HAR_BYTES`] and [`MAX_ENTRIES`] entries.

use std::path::Path;

use crate::tape::import::is_static;
use crate::tape::lines::LineReader;
use crate::tape::sources::{HarEntry, HarError, Malformed, read_har};

/// The most of a HAR read (decompressed) for flows.
pub const MAX_HAR_BYTES: u64 = 256_000_000;

/// The most entries read for flows: a browser session has hundreds.
pub const MAX_ENTRIES: u64 = 10_000;

/// How many malformed entries are quoted.
const EXAMPLES: usize = 10;

/// A HAR's entries, as `--flows` uses them.
#[derive(Debug, Default)]
pub struct Recording {
    /// The API requests, in order, each page named by its title.
    pub entries: Vec<HarEntry>,
    /// Entries that are not requests.
    pub malformed: u64,
    /// The first few of them.
    pub malformed_examples: Vec<Malformed>,
}

/// Reads the HAR at `source` for flows.
pub fn read_recording(source: &Path) -> Result<Recording, String> {
    let lines = LineReader::open(source).map_err(|e| format!("{}: cannot read it: {e}", source.display()))?;
    let mut recording = Recording::default();
    let mut read = 0;
    let pages = read_har(lines, Some(MAX_HAR_BYTES), &mut |entry| {
        read += 1;
        if read > MAX_ENTRIES {
            return Err(format!(
                "{}: more than {MAX_ENTRIES} entries; --flows makes flows of a browser session: import a longer \
                 recording as a tape",
                source.display()
            ));
        }
        match entry {
            Ok(entry) if is_static(entry.recorded.request.target.split('?').next().unwrap_or_default()) => {}
            Ok(entry) => recording.entries.push(entry),
            Err(bad) => {
                recording.malformed += 1;
                if recording.malformed_examples.len() < EXAMPLES {
                    recording.malformed_examples.push(bad);
                }
            }
        }
        Ok(())
    })
    .map_err(|e| match e {
        HarError::Unreadable(why) => format!("{}: {why}", source.display()),
        HarError::Stopped(why) => why,
    })?;
    for entry in &mut recording.entries {
        entry.page = entry.page.as_deref().map(|id| pages.name(id));
    }
    Ok(recording)
}
