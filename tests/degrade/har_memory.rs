//! Hostile HAR recordings (issue 41) through the real binary under `/usr/bin/time -v`: whatever a HAR holds,
//! `tape import` reads one entry at a time, so its peak memory stays under one entry's bound (2 × 16 MiB,
//! `tape::sources::MAX_ENTRY_BYTES`) and what the debug binary takes to start. The files are tens of MB once
//! decompressed, enough to show the blow-up the bound prevents (before it: 800 MB and 280 MB), and made of
//! one compressed chunk repeated as gzip members, so they take no time to write.

use std::io::Write;
use std::path::Path;

use degrade::tape::sources::MAX_ENTRY_BYTES;
use flate2::Compression;
use flate2::write::GzEncoder;

use crate::support::{degrade_peak_memory, text};

/// The most a HAR import may take, in KiB: one entry (its text and what is read from it), and what the debug
/// binary takes to start (about 25 MB, measured) with room to spare.
const BOUND_KIB: u64 = (2 * MAX_ENTRY_BYTES as u64 + (48 << 20)) >> 10;

/// One megabyte of `0,` once compressed, written `megabytes` times between `head` and `tail`: gzip members
/// one after another read as one stream.
fn write_zeros_har(path: &Path, head: &str, megabytes: usize, tail: &str) {
    let member = |bytes: &[u8]| {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    };
    let zeros = member("0,".repeat(500_000).as_bytes());
    let mut file = std::fs::File::create(path).unwrap();
    file.write_all(&member(head.as_bytes())).unwrap();
    for _ in 0..megabytes {
        file.write_all(&zeros).unwrap();
    }
    file.write_all(&member(tail.as_bytes())).unwrap();
}

/// `degrade args` in `dir` under `/usr/bin/time`: its exit code, output and peak memory, or `None` when the
/// test is skipped.
fn import_measured(dir: &Path, args: &[&str]) -> Option<(Option<i32>, String, u64)> {
    let Some((output, peak_kib)) = degrade_peak_memory(dir, args) else {
        println!("skipped: /usr/bin/time is not installed");
        return None;
    };
    let (stdout, stderr) = text(&output);
    println!("peak {peak_kib} KiB, bound {BOUND_KIB} KiB");
    Some((output.status.code(), format!("{stdout}{stderr}"), peak_kib))
}

#[test]
fn an_item_of_entries_that_is_an_array_of_24_mb_is_named_without_being_built() {
    let dir = tempfile::tempdir().unwrap();
    write_zeros_har(&dir.path().join("zeros.har.gz"), r#"{"log":{"entries":[["#, 24, "0]]}}");
    let args = ["tape", "import", "zeros.har.gz", "--output", "t.tape", "--scenario", "t.toml"];
    let Some((code, output, peak_kib)) = import_measured(dir.path(), &args) else { return };
    // Nothing to keep is an error of the import, not of the reading.
    assert_eq!(code, Some(2), "{output}");
    assert!(output.contains("zeros.har.gz:1: not a HAR entry: an array, not an object"), "{output}");
    assert!(peak_kib < BOUND_KIB, "peak {peak_kib} KiB, over {BOUND_KIB} KiB:\n{output}");
}

#[test]
fn flows_from_an_answer_of_15_mb_of_zeros_leave_it_unread_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let head = r#"{"log":{"pages":[{"id":"p1","title":"Boards"}],"entries":[{"pageref":"p1","request":{"method":"POST","url":"https://api.example.com/api/boards","postData":{"mimeType":"application/json","text":"{\"title\":\"Q4\"}"}},"response":{"status":201,"content":{"mimeType":"application/json","text":"["#;
    let tail = r#"0]"}}},{"pageref":"p1","request":{"method":"GET","url":"https://api.example.com/api/boards/4711"},"response":{"status":200,"content":{"mimeType":"application/json","text":"{\"id\":4711}"}}}]}}"#;
    write_zeros_har(&dir.path().join("answer.har.gz"), head, 15, tail);
    let args = ["tape", "import", "answer.har.gz", "--flows", "--scenario", "flows.toml"];
    let Some((code, output, peak_kib)) = import_measured(dir.path(), &args) else { return };
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains("flow      Boards (2 steps)"), "{output}");
    let unread = "unread    the answer of POST /api/boards (entry 1) is 15.0 MB, over the 1 MiB read for values";
    assert!(output.contains(unread), "{output}");
    assert!(peak_kib < BOUND_KIB, "peak {peak_kib} KiB, over {BOUND_KIB} KiB:\n{output}");
}
