//! The HAR reader on small documents: entries handed over one at a time, items that are not entries named
//! and never built, caps, and documents that are not HARs.

use super::entry::{MAX_ANSWER_BYTES, MAX_HEADERS};
use super::*;

/// Every item of the HAR `text` with entries of at most `cap` bytes, and its pages.
fn read(text: &str, cap: usize) -> Result<(Vec<Result<HarEntry, Malformed>>, PageTitles), HarError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.har");
    std::fs::write(&path, text).unwrap();
    let mut entries = Vec::new();
    let pages = read_with(LineReader::open(&path).unwrap(), None, cap, &mut |entry| {
        entries.push(entry);
        Ok(())
    })?;
    Ok((entries, pages))
}

fn malformed(items: &[Result<HarEntry, Malformed>]) -> Vec<(u64, String)> {
    items.iter().filter_map(|item| item.as_ref().err()).map(|bad| (bad.line, bad.message.clone())).collect()
}

const GET_A: &str = r#"{"pageref":"p2","request":{"method":"GET","url":"https://x.example/a?q=1","headers":[{"name":"Accept","value":"*/*"},{"name":":path","value":"/a"}]}}"#;

#[test]
fn items_that_are_not_entries_are_named_by_number_and_the_rest_is_read() {
    let text = format!(r#"{{"log":{{"entries":[[0,0,0], 5, {GET_A}, "x", {{"request":5}}, {{}}]}}}}"#);
    let (items, _) = read(&text, 1 << 20).unwrap();
    assert_eq!(items.len(), 6);
    assert_eq!(
        malformed(&items),
        [
            (1, "not a HAR entry: an array, not an object".to_owned()),
            (2, "not a HAR entry: a number, not an object".to_owned()),
            (4, "not a HAR entry: a string, not an object".to_owned()),
            (5, "not a HAR entry: invalid type: integer `5`, expected struct Request".to_owned()),
            (6, "not a HAR entry: missing field `request`".to_owned()),
        ]
    );
    let entry = items[2].as_ref().unwrap();
    assert_eq!((entry.number, entry.recorded.request.target.as_str()), (3, "/a?q=1"));
    assert_eq!(entry.recorded.headers, [("accept".to_owned(), "*/*".to_owned())]);
    assert_eq!(entry.recorded.host.as_deref(), Some("x.example"));
}

#[test]
fn an_entry_over_the_cap_is_malformed_and_the_next_one_is_read() {
    let big = format!(r#"{{"request":{{"method":"GET","url":"/big"}},"comment":"{}"}}"#, "z".repeat(5000));
    let text = format!(r#"{{"log":{{"entries":[{big},{GET_A}]}}}}"#);
    let (items, _) = read(&text, 1 << 12).unwrap();
    let expected =
        format!("the entry is {} bytes long, over the 4 KiB one entry may take (its answer included)", big.len());
    assert_eq!(malformed(&items), [(1, expected)]);
    assert_eq!(items[1].as_ref().unwrap().number, 2);
}

#[test]
fn pages_are_named_by_title_wherever_they_stand() {
    let pages = r#""pages":[{"id":"p1","title":"Boards"},{"id":"p2","title":"Boards"},{"id":"p3","title":" "},7]"#;
    let text = format!(r#"{{"log":{{"entries":[{GET_A}],"creator":{{"name":"x"}},{pages}}}}}"#);
    let (items, titles) = read(&text, 1 << 20).unwrap();
    assert_eq!(items[0].as_ref().unwrap().page.as_deref(), Some("p2"));
    assert_eq!(titles.name("p2"), "Boards (p2)");
    assert_eq!(titles.name("p3"), "p3");
    assert_eq!(titles.name("p9"), "p9");
}

#[test]
fn of_an_answer_only_its_location_and_a_short_body_are_kept() {
    let answer = |content: &str| {
        let entry = format!(
            r#"{{"request":{{"method":"POST","url":"/b"}},"response":{{"status":201,"headers":[{{"name":"Set-Cookie","value":"s=1"}},{{"name":"Location","value":"/b/7"}}],"content":{content}}}}}"#
        );
        let (items, _) = read(&format!(r#"{{"log":{{"entries":[{entry}]}}}}"#), 4 << 20).unwrap();
        items.into_iter().next().unwrap().unwrap()
    };
    let entry = answer(r#"{"mimeType":"application/json","text":"eyJpZCI6N30=","encoding":"base64"}"#);
    assert_eq!((entry.location.as_deref(), entry.answer), (Some("/b/7"), Answer::Text(r#"{"id":7}"#.to_owned())));
    let long = format!(r#"{{"mimeType":"application/json","text":"[{}0]"}}"#, "0,".repeat(MAX_ANSWER_BYTES / 2));
    assert_eq!(answer(&long).answer, Answer::TooLong(MAX_ANSWER_BYTES + 3));
    assert_eq!(answer(r#"{"mimeType":"text/plain"}"#).answer, Answer::Absent);
}

#[test]
fn a_request_with_too_many_headers_is_malformed() {
    let headers = vec![r#"{"name":"x-a","value":"1"}"#; MAX_HEADERS + 1].join(",");
    let entry = format!(r#"{{"request":{{"method":"GET","url":"/","headers":[{headers}]}}}}"#);
    let (items, _) = read(&format!(r#"{{"log":{{"entries":[{entry}]}}}}"#), 1 << 20).unwrap();
    assert_eq!(malformed(&items), [(1, "not a HAR entry: more than 256 request headers".to_owned())]);
}

#[test]
fn what_is_not_a_har_stops_the_reading_and_so_does_the_receiver() {
    let fails = |text: &str| read(text, 1 << 20).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(fails("[1, 2]").starts_with("not a HAR file: invalid type: sequence"), "{}", fails("[1, 2]"));
    assert!(fails(r#"{"version":1}"#).starts_with("not a HAR file: missing field `log`"));
    assert!(fails(r#"{"log":{"entries":[{}"#).starts_with("not a HAR file: EOF while parsing"));
    let deep = format!(r#"{{"log":{{"creator":{}}}}}"#, "[".repeat(200));
    assert_eq!(fails(&deep), "not a HAR file: nested deeper than 128 levels");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.har");
    std::fs::write(&path, format!(r#"{{"log":{{"entries":[{GET_A},{GET_A},{GET_A}]}}}}"#)).unwrap();
    let mut seen = 0;
    let stopped = read_har(LineReader::open(&path).unwrap(), None, &mut |_| {
        seen += 1;
        if seen == 2 { Err("enough".to_owned()) } else { Ok(()) }
    });
    assert_eq!((stopped.unwrap_err(), seen), (HarError::Stopped("enough".to_owned()), 2));
    let limited = read_har(LineReader::open(&path).unwrap(), Some(100), &mut |_| Ok(()));
    assert_eq!(limited.unwrap_err(), HarError::Unreadable("cannot read it: larger than 0 MB".to_owned()));
}
