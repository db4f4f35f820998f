//! What `degrade tape import` must never let through, tried on a corpus of realistic recordings full of private
//! values (`tests/fixtures/tape/private.*`, listed in `EXPECTED.md`): card numbers in every form, IBANs, secret
//! keys, framework session ids, passwords in text bodies, addresses and phone numbers inside encoded search
//! queries; in an access log, a JSON Lines log with bodies, and a HAR turned into flows. None may reach the
//! tape or the flows, in any encoding; distinct values must stay distinct placeholders and one value written
//! two ways one placeholder; ordinary ids, hashes, dates and timestamps must stay as they were.

use std::collections::{BTreeMap, BTreeSet};

use crate::support::{degrade, import_fixture, tape_fixture, text};

/// Every card number of the corpus: each is looked for compact, in groups of four, and dashed.
const CARDS: [&str; 8] = [
    "4111111111111111",
    "5555555555554444",
    "378282246310005",
    "6011111111111117",
    "3530111333300000",
    "2223003122003222",
    "5105105105105100",
    "4012888888881881",
];

/// Every IBAN of the corpus: each is looked for compact and in groups of four.
const IBANS: [&str; 5] = [
    "DE89370400440532013000",
    "GB29NWBK60161331926819",
    "FR1420041010050500013M02606",
    "NL91ABNA0417164300",
    "CH9300762011623852957",
];

/// The rest, looked for as written: keys, session ids, a password, addresses, a phone number, an API key.
const OTHERS: [&str; 12] = [
    "wJalrXUtnFEMI",
    "kQ3mZ8pX2vR7nT4wY9bC1dF6gH0jL5sA",
    "9c1a7f3e2b4d6a8c0e1f2a3b4c",
    "A1B2C3D4E5F6A7B8C9D0E1F2A3B4C5D6",
    "x4z2kq5v1m3n0p8r7t6w9y",
    "Qk1x9fZ2",
    "grace.hopper",
    "ada@example.org",
    "7946 0958",
    "hunter2",
    "correct horse",
    "k-live-1f2e3d",
];

/// Values a service routes on, which must stay as recorded.
const ORDINARY: [&str; 6] = [
    "/users/12345",
    "/orders/550e8400-e29b-41d4-a716-446655440000",
    "/blobs/da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "since=1764496000000&page=2",
    "/reports/2026-11-30",
    "/orders/7000000000000001",
];

/// `text` with `+` read as a space and every `%XX` decoded, so a value is found in any encoding.
fn decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
                continue;
            }
            (b'+', _) => out.push(b' '),
            (b, _) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `digits` in groups of four joined by `separator`.
fn grouped(digits: &str, separator: &str) -> String {
    digits.as_bytes().chunks(4).map(|c| std::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join(separator)
}

/// Asserts that no private value of the corpus is in `output`, as written or decoded.
fn assert_none_private(output: &str) {
    let plain = decoded(output);
    let mut forms: Vec<String> = OTHERS.iter().map(|s| (*s).to_owned()).collect();
    for card in CARDS {
        forms.extend([card.to_owned(), grouped(card, " "), grouped(card, "-")]);
    }
    for iban in IBANS {
        forms.extend([iban.to_owned(), grouped(iban, " ")]);
    }
    for form in forms {
        assert!(!output.contains(&form) && !plain.contains(&form), "`{form}` reached the output:\n{output}");
    }
}

/// The run of placeholder digits (a card's, `999…`) in `line`, separators left out.
fn card_placeholder(line: &str) -> Option<String> {
    let line = decoded(line);
    let at = line.find("999")?;
    Some(
        line[at..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ' ' || *c == '-')
            .filter(char::is_ascii_digit)
            .collect(),
    )
}

#[test]
fn an_access_log_full_of_private_values_gives_a_tape_with_none_and_keeps_them_apart() {
    let (stdout, tape, _dir) = import_fixture("private.log", &[]);
    assert!(stdout.contains("kept      30 requests"), "{stdout}");
    assert_none_private(&tape);
    for ordinary in ORDINARY {
        assert!(tape.contains(ordinary), "`{ordinary}` was scrubbed:\n{tape}");
    }
    let plain = decoded(&tape);
    assert!(plain.contains("q=mail me at redacted-") && plain.contains("@example.invalid"), "{plain}");
    assert!(plain.contains("PHPSESSID=redacted-") && plain.contains(";jsessionid=redacted-"), "{plain}");
    assert!(plain.contains("ASP.NET_SessionId=redacted-") && plain.contains("connect.sid=redacted-"), "{plain}");
    // Each line of the log against the same line of the tape: a card's placeholder wherever it was written.
    let log = std::fs::read_to_string(tape_fixture("private.log")).unwrap();
    let requests: Vec<&str> = tape.lines().filter(|l| !l.starts_with('#')).collect();
    let mut placeholders: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (recorded, replayed) in log.lines().zip(&requests) {
        let digits: String = decoded(recorded).chars().filter(char::is_ascii_digit).collect();
        if let Some(card) = CARDS.iter().find(|card| digits.contains(**card)) {
            let placeholder = card_placeholder(replayed).unwrap_or_else(|| panic!("no placeholder in {replayed}"));
            placeholders.entry(card).or_default().insert(placeholder);
        }
    }
    assert_eq!(placeholders.len(), 8, "every card of the log: {placeholders:?}");
    assert!(placeholders.values().all(|p| p.len() == 1), "one card, one placeholder however written: {placeholders:?}");
    let distinct: BTreeSet<&String> = placeholders.values().flatten().collect();
    assert_eq!(distinct.len(), 8, "distinct cards, distinct placeholders: {placeholders:?}");
    let ibans: Vec<String> = requests
        .iter()
        .filter(|l| l.contains("/api/transfers"))
        .map(|l| decoded(l).split("to=").nth(1).unwrap().split(['&', '\t']).next().unwrap().replace(' ', ""))
        .collect();
    assert_eq!((ibans.len(), ibans[0] == ibans[3]), (4, true), "DE89 compact and spaced: {ibans:?}");
    assert!(ibans[0] != ibans[1] && ibans[1] != ibans[2] && ibans[0] != ibans[2], "{ibans:?}");
}

#[test]
fn bodies_of_every_kind_lose_their_private_values_and_keep_their_shape() {
    let (stdout, tape, _dir) = import_fixture("private.jsonl", &[]);
    assert!(stdout.contains("kept      9 requests"), "{stdout}");
    assert_none_private(&tape);
    assert!(tape.contains("password=redacted-"), "a plain-text body's password: {tape}");
    assert!(tape.contains("\"pan\":999"), "a card number sent as a number stays one: {tape}");
    assert!(tape.contains("\"order_id\":7000000000000001"), "an order id is no card: {tape}");
    assert!(tape.contains("/users/12345/orders/550e8400-e29b-41d4-a716-446655440000"), "{tape}");
    assert!(tape.contains("<password>redacted-"), "XML: {tape}");
}

#[test]
fn flows_made_from_a_har_carry_no_private_value_and_still_validate() {
    let dir = tempfile::tempdir().unwrap();
    let har = tape_fixture("private.har");
    let output =
        degrade(dir.path(), &["tape", "import", har.to_str().unwrap(), "--flows", "--scenario", "flows.toml"], &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    let scenario = std::fs::read_to_string(dir.path().join("flows.toml")).unwrap();
    assert_none_private(&scenario);
    assert!(scenario.contains("pan = \"999") && scenario.contains("number = 999"), "{scenario}");
    assert!(scenario.contains("path = \"/api/cards/999"), "{scenario}");
    // Each step named by its route: a recorded id in a path makes no endpoint of its own (a trial's flows had 67).
    assert!(scenario.contains("name = \"GET /api/cards/{id}?cc=\""), "{scenario}");
    assert!(scenario.contains("note = \"mail me at redacted-"), "{scenario}");
    let validated = degrade(dir.path(), &["validate", "flows.toml"], &[]);
    assert!(validated.status.success(), "{:?}", text(&validated));
}

/// A HAR records some bodies in base64: decoded, they are scrubbed and replayed as what was sent, and one that
/// is not text is left out and counted (a trial decoded a card number back from such a tape).
#[test]
fn a_har_body_recorded_in_base64_is_scrubbed_as_what_was_sent() {
    let (stdout, tape, _dir) = import_fixture("private.har", &[]);
    assert_none_private(&tape);
    assert_none_private(&stdout);
    assert!(tape.contains("card=999") && tape.contains("&password=redacted-"), "{tape}");
    assert!(stdout.contains("1 body that could not be checked (dropped)"), "{stdout}");
}

/// The import report quotes the first malformed lines, and is printed and pasted into tickets: what is private
/// in them is replaced there too.
#[test]
fn the_malformed_lines_the_report_quotes_carry_no_private_value() {
    let dir = tempfile::tempdir().unwrap();
    let good = "127.0.0.1 - - [04/Dec/2026:10:00:00 +0000] \"GET /boards HTTP/1.1\" 200 12 \"-\" \"curl\"\n";
    // Each message quotes the field it could not read: here a time and a status that hold private values.
    let bad = "127.0.0.1 - - [ada@example.org 4111 1111 1111 1111] \"GET /pay HTTP/1.1\" 200 12 \"-\" \"curl\"\n\
               127.0.0.1 - - [04/Dec/2026:10:00:02 +0000] \"GET /pay HTTP/1.1\" DE89370400440532013000 1 \"-\" \"-\"\n";
    std::fs::write(dir.path().join("access.log"), format!("{good}{bad}{good}")).unwrap();
    let output = degrade(dir.path(), &["tape", "import", "access.log", "--output", "t.tape"], &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("skipped   2 malformed lines"), "{stdout}");
    assert_none_private(&format!("{stdout}{stderr}"));
    // A path the message quotes is scrubbed as a request's target is, segment by segment (a trial's report
    // printed an email and a live key from two paths a space made malformed; a control character does now).
    let lines = [
        r#"{"method":"GET","path":"/users/alice@corp.example.com/x\u0007y"}"#,
        r#"{"method":"GET","path":"/reset/sk_live_51HxQ2pLKJH98sdfKJHsdf98/\u0007x"}"#,
        r#"{"method":"GET","path":"/boards"}"#,
    ];
    std::fs::write(dir.path().join("api.jsonl"), lines.join("\n")).unwrap();
    let output = degrade(dir.path(), &["tape", "import", "api.jsonl", "--output", "j.tape"], &[]);
    let (stdout, stderr) = text(&output);
    assert!(stdout.contains("api.jsonl:1: path: `/users/redacted-"), "{stdout}");
    for private in ["alice@corp.example.com", "sk_live_51HxQ2pLKJH98sdfKJHsdf98"] {
        assert!(!stdout.contains(private) && !stderr.contains(private), "{private}: {stdout}{stderr}");
    }
}
