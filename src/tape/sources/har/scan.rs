//! The bytes under a HAR's parser. Every byte serde_json reads passes through [`Scanner`] first, so the
//! reader can keep the text of one entry (up to a cap) while serde_json skips it without building anything,
//! and can refuse what would grow serde_json's own buffers: nesting deeper than [`MAX_DEPTH`] (it keeps a
//! byte per level of a value it skips) and a string outside the entries and pages longer than
//! [`MAX_OUTSIDE_STRING_BYTES`] (a field name is read whole before it is compared).

use std::cell::RefCell;
use std::io::{self, BufRead, Read};
use std::rc::Rc;

/// The deepest nesting read: a HAR entry is six levels deep, and serde_json refuses 128 where it builds.
pub const MAX_DEPTH: u8 = 128;

/// The longest string outside the entries and pages (field names, `creator`, `comment`).
pub const MAX_OUTSIDE_STRING_BYTES: u64 = 1 << 20;

/// Why the scanner stopped the reading (serde_json sees an I/O error; the reader says this instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// More bytes than the limit given.
    Larger(u64),
    /// Nested deeper than [`MAX_DEPTH`].
    Deep,
    /// A string outside the entries longer than [`MAX_OUTSIDE_STRING_BYTES`].
    LongString,
}

impl Refusal {
    /// Words for the error.
    #[must_use]
    pub fn describe(self) -> String {
        match self {
            Self::Larger(limit) => format!("larger than {} MB", limit / 1_000_000),
            Self::Deep => format!("nested deeper than {MAX_DEPTH} levels"),
            Self::LongString => "a string outside the entries is longer than 1 MiB".to_owned(),
        }
    }
}

/// One item of an array, as the scanner saw it go by.
#[derive(Debug, PartialEq, Eq)]
pub enum Element {
    /// An object: its text, whole.
    Object(Vec<u8>),
    /// An object longer than the cap: its length (its text was let go as soon as it passed the cap).
    TooLarge(u64),
    /// Not an object: what it is instead.
    Other(&'static str),
}

/// The shared state: what was read, where the nesting stands, and the item being kept.
#[derive(Debug)]
pub struct Scan {
    read: u64,
    /// The most bytes read (`u64::MAX` for none).
    limit: u64,
    depth: u8,
    /// Inside a string: its length so far.
    string: Option<u64>,
    escaped: bool,
    window: Option<Window>,
    refused: Option<Refusal>,
}

#[derive(Debug)]
struct Window {
    cap: usize,
    text: Vec<u8>,
    length: u64,
    state: WindowState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WindowState {
    /// Before the item: the comma and spaces that lead to it.
    Before,
    Object,
    Over,
    Other(&'static str),
}

impl Default for Scan {
    fn default() -> Self {
        Self { read: 0, limit: u64::MAX, depth: 0, string: None, escaped: false, window: None, refused: None }
    }
}

impl Scan {
    /// Starts keeping the next item of the array being read, up to `cap` bytes of it.
    pub fn open(&mut self, cap: usize) {
        self.window = Some(Window { cap, text: Vec::new(), length: 0, state: WindowState::Before });
    }

    /// The item kept since [`Scan::open`] (meaningless when the array ended instead).
    pub fn close(&mut self) -> Element {
        let Some(window) = self.window.take() else { return Element::Other("nothing") };
        match window.state {
            WindowState::Object => Element::Object(window.text),
            WindowState::Over => Element::TooLarge(window.length),
            WindowState::Other(what) => Element::Other(what),
            WindowState::Before => Element::Other("nothing"),
        }
    }

    /// Why the reading was stopped, if the scanner stopped it.
    #[must_use]
    pub fn refused(&self) -> Option<Refusal> {
        self.refused
    }

    fn take(&mut self, byte: u8) -> io::Result<()> {
        self.read += 1;
        if self.read > self.limit {
            return self.refuse(Refusal::Larger(self.limit));
        }
        self.nesting(byte)?;
        if let Some(window) = &mut self.window {
            window.take(byte);
        }
        Ok(())
    }

    /// Follows strings and nesting, which is all it takes to bound serde_json's buffers.
    fn nesting(&mut self, byte: u8) -> io::Result<()> {
        if let Some(length) = &mut self.string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.string = None;
                return Ok(());
            }
            *length += 1;
            if *length > MAX_OUTSIDE_STRING_BYTES && self.window.is_none() {
                return self.refuse(Refusal::LongString);
            }
            return Ok(());
        }
        match byte {
            b'"' => self.string = Some(0),
            b'[' | b'{' if self.depth >= MAX_DEPTH => return self.refuse(Refusal::Deep),
            b'[' | b'{' => self.depth += 1,
            b']' | b'}' => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        Ok(())
    }

    fn refuse(&mut self, why: Refusal) -> io::Result<()> {
        self.refused = Some(why);
        Err(io::Error::other(why.describe()))
    }
}

impl Window {
    fn take(&mut self, byte: u8) {
        match self.state {
            WindowState::Before => {
                self.state = match byte {
                    b',' | b' ' | b'\t' | b'\n' | b'\r' => return,
                    b'{' => WindowState::Object,
                    other => WindowState::Other(kind(other)),
                };
            }
            WindowState::Object if self.text.len() >= self.cap => {
                self.state = WindowState::Over;
                // Let go of it at once: it is not kept.
                self.text = Vec::new();
            }
            WindowState::Object | WindowState::Over | WindowState::Other(_) => {}
        }
        self.length += 1;
        if self.state == WindowState::Object {
            self.text.push(byte);
        }
    }
}

/// What a JSON value starting with `byte` is.
fn kind(byte: u8) -> &'static str {
    match byte {
        b'[' => "an array",
        b'"' => "a string",
        b'-' | b'0'..=b'9' => "a number",
        b't' | b'f' => "a boolean",
        b'n' => "null",
        _ => "not JSON",
    }
}

/// A reader handing serde_json the bytes of `source`, each seen by the [`Scan`] it shares.
pub struct Scanner {
    source: Box<dyn BufRead + Send>,
    /// What was taken from `source` and not yet handed over: serde_json asks for one byte at a time, and
    /// `source` is a trait object.
    chunk: Vec<u8>,
    at: usize,
    scan: Rc<RefCell<Scan>>,
}

impl Scanner {
    /// `source`, read at most `limit` bytes far (any length without one), and the state to steer it by.
    pub fn new(source: Box<dyn BufRead + Send>, limit: Option<u64>) -> (Self, Rc<RefCell<Scan>>) {
        let scan = Rc::new(RefCell::new(Scan { limit: limit.unwrap_or(u64::MAX), ..Scan::default() }));
        (Self { source, chunk: Vec::with_capacity(CHUNK_BYTES), at: 0, scan: Rc::clone(&scan) }, scan)
    }
}

/// How much is taken from the source at once.
const CHUNK_BYTES: usize = 64 * 1024;

impl Read for Scanner {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at == self.chunk.len() {
            self.chunk.resize(CHUNK_BYTES, 0);
            let n = self.source.read(&mut self.chunk)?;
            self.chunk.truncate(n);
            self.at = 0;
        }
        let mut scan = self.scan.borrow_mut();
        // serde_json's one byte at a time, without a call to copy it.
        if let ([slot], Some(&byte)) = (&mut *buf, self.chunk.get(self.at)) {
            scan.take(byte)?;
            *slot = byte;
            self.at += 1;
            return Ok(1);
        }
        let n = (self.chunk.len() - self.at).min(buf.len());
        let bytes = &self.chunk[self.at..self.at + n];
        for &byte in bytes {
            scan.take(byte)?;
        }
        buf[..n].copy_from_slice(bytes);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` to a scan with a window open over `kept`; the element and the refusal.
    fn window(text: &str, kept: std::ops::Range<usize>, cap: usize) -> (Element, Option<Refusal>) {
        let mut scan = Scan::default();
        let mut element = Element::Other("nothing");
        let mut result = Ok(());
        for (i, byte) in text.bytes().enumerate() {
            if i == kept.start {
                scan.open(cap);
            }
            if i == kept.end {
                element = scan.close();
            }
            result = result.and_then(|()| scan.take(byte));
        }
        (element, result.err().and(scan.refused()))
    }

    #[test]
    fn an_object_is_kept_whole_and_anything_else_only_named() {
        assert_eq!(window(r#"[{"a":"}"} , 1]"#, 1..10, 100), (Element::Object(br#"{"a":"}"}"#.to_vec()), None));
        assert_eq!(window("[0, [0,0,0]]", 2..11, 100), (Element::Other("an array"), None));
        assert_eq!(window(r#"[0, "x"]"#, 2..7, 100), (Element::Other("a string"), None));
        assert_eq!(window(r#"[0, {"a": [1, 2, 3]}]"#, 2..20, 8), (Element::TooLarge(16), None));
    }

    #[test]
    fn deep_nesting_and_long_strings_outside_a_window_are_refused() {
        let deep = "[".repeat(usize::from(MAX_DEPTH) + 1);
        assert_eq!(window(&deep, 0..0, 1).1, Some(Refusal::Deep));
        let long = format!("{{\"{}\":1}}", "k".repeat(MAX_OUTSIDE_STRING_BYTES as usize + 1));
        assert_eq!(window(&long, 0..0, 1).1, Some(Refusal::LongString));
        // Inside an entry a long string is the entry's business (its cap).
        assert_eq!(window(&long, 0..long.len(), 1).1, None);
        // Brackets inside a string, after an escaped quote, are text.
        let escaped = format!(r#"{{"a\"{}":1}}"#, "[".repeat(200));
        assert_eq!(window(&escaped, 0..0, 1).1, None);
    }
}
