//! HAR 1.2 recordings (browser developer tools, proxies): every entry a request with its answer.
//!
//! A HAR is one JSON document, read as a stream all the same: serde_json walks it without building what it
//! skips, and hands over the items of `log.entries` one at a time (`stream`), each kept as text while it
//! goes by (`scan`) and only then read (`entry`). So memory grows neither with the recording nor with what
//! stands in it. An item that is not an object is a malformed entry, named and never built; an entry longer
//! than [`MAX_ENTRY_BYTES`] (its answer included) is a malformed entry, let go as soon as it passes the cap;
//! what an entry is read into takes no more than its text (request headers and form fields are counted, an
//! answer's body is kept up to 1 MiB). The bound: one entry at a time, its text and what is read from it,
//! at most 2 × 16 MiB. What serde_json buffers itself is bounded by refusing, as not a HAR, nesting deeper
//! than 128 and strings outside the entries longer than 1 MiB.
//!
//! Entries keep what their answers gave for `tape import --flows`, which correlates values from earlier
//! answers with later requests, and holds the entries it uses.

mod entry;
mod scan;
mod stream;
#[cfg(test)]
mod tests;

use std::fmt;
use std::rc::Rc;

use serde::Deserialize;
use serde::de::DeserializeSeed;

pub use entry::{Answer, HarEntry};
use scan::{Refusal, Scanner};
use stream::{Document, Reading};

use super::Malformed;
use crate::tape::lines::LineReader;

/// The longest entry read: a recording's entry carries its answer, so a page's largest download decides
/// (scripts and images are a few megabytes).
pub const MAX_ENTRY_BYTES: usize = 16 * 1024 * 1024;

/// What a HAR's entries are handed to, in order: it says whether to go on.
pub type Each<'a> = dyn FnMut(Result<HarEntry, Malformed>) -> Result<(), String> + 'a;

/// Why a HAR was not read to its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HarError {
    /// The file is not a HAR, or cannot be read further.
    Unreadable(String),
    /// What the entries were handed to stopped the reading, and why.
    Stopped(String),
}

impl fmt::Display for HarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unreadable(why) | Self::Stopped(why) => f.write_str(why),
        }
    }
}

/// A recorded page: its id (what entries' `pageref` names) and its title.
#[derive(Debug, Deserialize)]
struct Page {
    #[serde(default)]
    id: String,
    #[serde(default)]
    title: String,
}

/// The recording's pages, to name the pages entries belong to.
#[derive(Debug, Default)]
pub struct PageTitles(Vec<Page>);

impl PageTitles {
    /// A page is named by its title where the recording has one (`Boards`; with its id when two pages share
    /// it, as a page visited twice does), by its id otherwise.
    #[must_use]
    pub fn name(&self, id: &str) -> String {
        let pages = &self.0;
        let title = pages.iter().find(|p| p.id == id).map(|p| p.title.trim()).filter(|t| !t.is_empty());
        match title {
            Some(title) if pages.iter().filter(|p| p.title.trim() == title).count() == 1 => title.to_owned(),
            Some(title) => format!("{title} ({id})"),
            None => id.to_owned(),
        }
    }
}

/// Reads a HAR, handing `each` its entries in order, each a request or why it is not one, at most `limit`
/// bytes of it (any length without one); the pages it names, once all is read.
pub fn read_har(lines: LineReader, limit: Option<u64>, each: &mut Each<'_>) -> Result<PageTitles, HarError> {
    read_with(lines, limit, MAX_ENTRY_BYTES, each)
}

fn read_with(
    lines: LineReader,
    limit: Option<u64>,
    entry_cap: usize,
    each: &mut Each<'_>,
) -> Result<PageTitles, HarError> {
    let (scanner, scan) = Scanner::new(lines.into_reader(), limit);
    let pages = PageTitles::default();
    let mut reading = Reading { scan: Rc::clone(&scan), each, entry_cap, entries: 0, pages, stopped: None };
    let mut deserializer = serde_json::Deserializer::from_reader(scanner);
    let read = Document(&mut reading).deserialize(&mut deserializer).and_then(|()| deserializer.end());
    if let Some(why) = reading.stopped {
        return Err(HarError::Stopped(why));
    }
    let refused = scan.borrow().refused();
    match (read, refused) {
        (Ok(()), _) => Ok(reading.pages),
        (Err(_), Some(Refusal::Larger(limit))) => {
            Err(HarError::Unreadable(format!("cannot read it: larger than {} MB", limit / 1_000_000)))
        }
        (Err(_), Some(refusal)) => Err(HarError::Unreadable(format!("not a HAR file: {}", refusal.describe()))),
        (Err(e), None) if e.is_io() => Err(HarError::Unreadable(format!("cannot read it: {e}"))),
        (Err(e), None) => Err(HarError::Unreadable(format!("not a HAR file: {e}"))),
    }
}
