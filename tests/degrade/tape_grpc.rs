//! gRPC calls in a HAR recording: left out of a tape (and counted), written by `--flows` as `grpc` steps with the
//! method from the path and the recorded request in hex beside an empty `json`, unless something in the bytes is
//! private, when they are withheld and the report says so.

use base64::Engine as _;
use serde_json::json;

use crate::support::{degrade, text};

/// A unary call's body: gRPC's 5-byte prefix, then `message`.
fn framed(message: &[u8]) -> String {
    let mut body = vec![0];
    body.extend_from_slice(&(message.len() as u32).to_be_bytes());
    body.extend_from_slice(message);
    base64::engine::general_purpose::STANDARD.encode(body)
}

fn grpc_entry(path: &str, message: &[u8]) -> serde_json::Value {
    json!({
        "pageref": "page_1",
        "startedDateTime": "2026-12-04T10:00:01.000Z",
        "request": {
            "method": "POST",
            "url": format!("https://api.example.com{path}"),
            "headers": [
                {"name": "content-type", "value": "application/grpc"},
                {"name": "te", "value": "trailers"},
                {"name": "grpc-accept-encoding", "value": "gzip"},
                {"name": "x-team", "value": "checkout"}
            ],
            "postData": {"mimeType": "application/grpc", "text": framed(message), "encoding": "base64"}
        },
        "response": {"status": 200, "headers": [], "content": {"mimeType": "application/grpc"}}
    })
}

/// A page that lists boards over JSON, reads one over gRPC, and pays over gRPC with a card number inside the
/// Protobuf (field 1, a string).
fn recording() -> String {
    let mut charge = vec![0x0a, 19];
    charge.extend_from_slice(b"4111 1111 1111 1111");
    let har = json!({"log": {"version": "1.2", "pages": [{"id": "page_1", "title": "Board"}], "entries": [
        {
            "pageref": "page_1",
            "startedDateTime": "2026-12-04T10:00:00.000Z",
            "request": {"method": "GET", "url": "https://api.example.com/api/boards", "headers": []},
            "response": {"status": 200, "headers": [], "content": {"mimeType": "application/json", "text": "[]"}}
        },
        grpc_entry("/boards.v1.Boards/GetBoard", &[0x08, 0x07, 0x10, 0x01]),
        grpc_entry("/shop.v1.Pay/Charge", &charge),
    ]}});
    har.to_string()
}

#[test]
fn grpc_calls_in_a_har_become_grpc_steps_and_never_leak_a_card_number() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("board.har"), recording()).unwrap();

    // A tape: the calls are left out, and counted.
    let output = degrade(dir.path(), &["tape", "import", "board.har", "--output", "board.tape"], &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("gRPC calls (a tape replays HTTP requests"), "{stdout}");
    let tape = std::fs::read_to_string(dir.path().join("board.tape")).unwrap();
    assert!(tape.contains("/api/boards") && !tape.contains("Boards/GetBoard") && !tape.contains("4111"), "{tape}");

    // Flows: each call a gRPC step.
    let args = ["tape", "import", "board.har", "--flows", "--scenario", "flows.toml"];
    let output = degrade(dir.path(), &args, &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    let scenario = std::fs::read_to_string(dir.path().join("flows.toml")).unwrap();
    assert!(scenario.contains("grpc = \"boards.v1.Boards/GetBoard\""), "{scenario}");
    assert!(scenario.contains("Protobuf; write it as `json` by the .proto): 08 07 10 01"), "{scenario}");
    assert!(scenario.contains("grpc = \"shop.v1.Pay/Charge\""), "{scenario}");
    assert!(scenario.contains("recorded request withheld (21 bytes, it holds a value the scrubber"), "{scenario}");
    // The card number in no form: its digits, or the hex of its digits.
    for form in ["4111", "34 31 31 31"] {
        assert!(!scenario.contains(form) && !stdout.contains(form), "{form}: {scenario}\n{stdout}");
    }
    // gRPC's transport headers are the engine's to write; other headers follow the import's rules (a custom
    // one is not kept, as on every step).
    assert!(
        !scenario.contains("\n  headers =")
            && !scenario.contains("trailers")
            && !scenario.contains("grpc-accept-encoding"),
        "{scenario}"
    );
    assert!(stdout.contains("shop.v1.Pay/Charge: its request withheld: it holds a value"), "{stdout}");

    // Without the services' .proto files it does not run, and `validate` says what to add.
    let validated = degrade(dir.path(), &["validate", "flows.toml"], &[]);
    let (out, err) = text(&validated);
    assert!(!validated.status.success() && format!("{out}{err}").contains("add `[proto] files"), "{out}{err}");
    // With them (here the GetBoard step alone, against the guide's boards.proto) it validates.
    let proto = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/guide/boards.proto");
    std::fs::copy(proto, dir.path().join("boards.proto")).unwrap();
    let charge = scenario.find("\n  [[flow.step]]\n  grpc = \"shop.v1.Pay/Charge\"").unwrap();
    let load = scenario.find("\n[load]").unwrap();
    let runnable = format!("{}{}", &scenario[..charge], &scenario[load..])
        .replace("# [proto]\n# files = [\"service.proto\"]", "[proto]\nfiles = [\"boards.proto\"]");
    std::fs::write(dir.path().join("runnable.toml"), runnable).unwrap();
    let validated = degrade(dir.path(), &["validate", "runnable.toml"], &[]);
    assert!(validated.status.success(), "{:?}", text(&validated));
}
