//! Reading a text file line by line with a bounded line length, gzip-compressed or not.
//!
//! Logs and tapes can be gigabytes; they are read as streams, and no line may grow memory without bound (a
//! corrupt or hostile file can hold one endless "line"). Compression is recognised by gzip's magic bytes,
//! not the file name, so a rotated `access.log.1.gz` and a renamed tape both just work.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;

/// The first two bytes of every gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// The longest line read; a longer one is reported and skipped, never held.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// One line of a file, or why it could not be read.
pub enum Line<'a> {
    /// The line's text without its line break.
    Text(&'a str),
    /// Longer than [`MAX_LINE_BYTES`] (skipped) or not UTF-8.
    Unreadable(&'static str),
}

/// Lines of one file, numbered from 1.
pub struct LineReader {
    reader: Box<dyn BufRead + Send>,
    buffer: Vec<u8>,
    /// The number of the line last returned.
    pub number: u64,
    /// Whether the line last returned ended the file without a line feed after it (a tape cut short; a log's
    /// last line often does).
    pub unterminated: bool,
}

impl LineReader {
    /// Whether the file at `path` starts as gzip does.
    #[must_use]
    pub fn is_gzip(path: &Path) -> bool {
        let mut magic = [0_u8; 2];
        File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && magic == GZIP_MAGIC
    }

    /// Opens `path`, decompressing it on the fly if it is gzip.
    pub fn open(path: &Path) -> io::Result<Self> {
        let mut file = BufReader::with_capacity(256 * 1024, File::open(path)?);
        let gzip = file.fill_buf()?.starts_with(&GZIP_MAGIC);
        let reader: Box<dyn BufRead + Send> = if gzip {
            Box::new(BufReader::with_capacity(256 * 1024, MultiGzDecoder::new(file)))
        } else {
            Box::new(file)
        };
        Ok(Self { reader, buffer: Vec::with_capacity(4096), number: 0, unterminated: false })
    }

    /// The next line and its number, `None` at the end of the file.
    pub fn next_line(&mut self) -> io::Result<Option<(u64, Line<'_>)>> {
        self.buffer.clear();
        let mut too_long = false;
        let mut read_any = false;
        self.unterminated = true;
        loop {
            let available = self.reader.fill_buf()?;
            if available.is_empty() {
                break;
            }
            read_any = true;
            let (chunk, done) = match memchr(available) {
                Some(end) => (&available[..end], Some(end + 1)),
                None => (available, None),
            };
            if self.buffer.len() + chunk.len() > MAX_LINE_BYTES {
                too_long = true;
            } else {
                self.buffer.extend_from_slice(chunk);
            }
            let used = done.unwrap_or(available.len());
            self.reader.consume(used);
            if done.is_some() {
                self.unterminated = false;
                break;
            }
        }
        if !read_any {
            return Ok(None);
        }
        self.number += 1;
        if too_long {
            return Ok(Some((self.number, Line::Unreadable("the line is longer than 8 MiB"))));
        }
        if self.buffer.last() == Some(&b'\r') {
            self.buffer.pop();
        }
        let line = match std::str::from_utf8(&self.buffer) {
            Ok(text) => Line::Text(text),
            Err(_) => Line::Unreadable("the line is not UTF-8 text"),
        };
        Ok(Some((self.number, line)))
    }

    /// The rest of the file as a stream of bytes (for formats that are not line by line, such as HAR).
    #[must_use]
    pub fn into_reader(self) -> Box<dyn BufRead + Send> {
        self.reader
    }
}

fn memchr(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn lines(reader: &mut LineReader) -> Vec<String> {
        let mut all = Vec::new();
        while let Some((_, line)) = reader.next_line().unwrap() {
            all.push(match line {
                Line::Text(t) => t.to_owned(),
                Line::Unreadable(why) => format!("!{why}"),
            });
        }
        all
    }

    #[test]
    fn plain_and_gzip_files_read_the_same_lines() {
        let dir = tempfile::tempdir().unwrap();
        let text = b"one\r\ntwo\n\nthree";
        std::fs::write(dir.path().join("plain"), text).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(text).unwrap();
        std::fs::write(dir.path().join("packed"), gz.finish().unwrap()).unwrap();
        for name in ["plain", "packed"] {
            let mut reader = LineReader::open(&dir.path().join(name)).unwrap();
            assert_eq!(lines(&mut reader), ["one", "two", "", "three"]);
            assert_eq!(reader.number, 4);
        }
    }

    #[test]
    fn an_endless_line_is_skipped_not_held() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = vec![b'x'; MAX_LINE_BYTES + 10];
        text.extend_from_slice(b"\nnext\n\xff\n");
        std::fs::write(dir.path().join("big"), text).unwrap();
        let mut reader = LineReader::open(&dir.path().join("big")).unwrap();
        assert_eq!(lines(&mut reader), ["!the line is longer than 8 MiB", "next", "!the line is not UTF-8 text"]);
    }
}
