//! WebSocket frames the stub sends the hard way (`support::ws_stub`): a TCP connection dropped without a close
//! frame (1006), a server error close (1011), and a message in fragments with a ping between them, reassembled
//! into the one message an await matches while the ping is answered. Counts and classes only: no verdict here
//! depends on this machine's speed.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::support::run_scenario;
use crate::support::ws_stub::{WsStub, WsStubConfig};
use crate::websocket::{DELAY, endpoint, scenario, stub_config};

/// One send awaiting its ack, named `name`, asking the stub for `op` (more fields in `extra`).
fn send_step(name: &str, op: &str, extra: &str) -> String {
    format!(
        "[[flow.step]]\nws = \"send\"\nname = \"{name}\"\njson = {{ op = \"{op}\", id = \"{{{{ seq() }}}}\"{extra} }}\n\
         await = {{ json = [{{ path = \"$.type\", eq = \"ack\" }}], timeout = \"1s\" }}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_dropped_without_a_close_frame_is_a_reset_named_1006() {
    let stub = WsStub::start(stub_config()).await;
    let steps = send_step("WS dropped", "drop", "");
    let measurement = run_scenario(&scenario(&stub.url(), "", "board.v1", &steps, 1, 1), &[]).await;
    let dropped = endpoint(&measurement, "WS dropped");
    assert!(dropped.requests >= 1 && dropped.errors == dropped.requests, "{dropped:#?}");
    assert_eq!(dropped.errors_by_class.get("reset"), Some(&dropped.errors), "{dropped:#?}");
    let sample = &dropped.error_samples["reset"][0];
    assert!(sample.contains("without a close frame (1006)"), "{sample}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_close_awaited_is_a_reset_named_1011() {
    let stub = WsStub::start(stub_config()).await;
    let steps = send_step("WS failing", "close", ", code = 1011");
    let measurement = run_scenario(&scenario(&stub.url(), "", "board.v1", &steps, 1, 1), &[]).await;
    let failing = endpoint(&measurement, "WS failing");
    assert!(failing.requests >= 1 && failing.errors == failing.requests, "{failing:#?}");
    assert!(failing.error_samples["reset"][0].contains("closed the socket with 1011"), "{failing:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fragmented_message_is_reassembled_and_the_ping_between_its_fragments_answered() {
    // Pushes and the stub's own pings far apart: the only pings are those inside the fragmented answers.
    let quiet = WsStubConfig { push_every: Duration::from_mins(1), ..stub_config() };
    let stub = WsStub::start(quiet).await;
    let mut steps = send_step("WS fragmented", "fragments", ", parts = 4");
    steps = steps.replace("eq = \"ack\" }]", "eq = \"ack\" }, { path = \"$.fragmented\", eq = true }]");
    steps.push_str("extract = { acked = \"$.id\" }\nthink = \"100ms\"\n");
    let measurement = run_scenario(&scenario(&stub.url(), "", "board.v1", &steps, 1, 2), &[]).await;
    let fragmented = endpoint(&measurement, "WS fragmented");
    println!("{} fragmented answers, p50 {} µs", fragmented.requests, fragmented.p50_us);
    assert!(fragmented.requests >= 3 && fragmented.errors == 0, "{fragmented:#?}");
    // The whole message matched: each fragment alone is no JSON, and the await is timed to the last of them,
    // which the stub sent after its delay.
    assert!(fragmented.p50_us >= DELAY.as_micros() as i64, "p50 {} µs", fragmented.p50_us);
    let pongs = stub.counters.pongs.load(Ordering::Relaxed);
    let pings = u64::try_from(fragmented.requests).unwrap();
    assert!(pongs + 1 >= pings, "{pongs} pongs for {pings} pings");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keepalive_pings_are_sent_while_the_session_reads_and_their_pongs_timed() {
    let quiet = WsStubConfig { push_every: Duration::from_mins(1), ..stub_config() };
    let stub = WsStub::start(quiet).await;
    let steps = "[[flow.step]]\nws = \"send\"\nname = \"WS note\"\njson = { op = \"note\" }\nthink = \"1500ms\"\n\
                 [[flow.step]]\nws = \"close\"\n";
    let ws = "[ws]\nping_every = \"100ms\"\n";
    let measurement = run_scenario(&scenario(&stub.url(), ws, "board.v1", steps, 1, 2), &[]).await;
    let ping = endpoint(&measurement, "WS ping");
    println!("{} pings, p50 {} µs, p99 {} µs", ping.requests, ping.p50_us, ping.p99_us);
    // About 14 pings in the think time of 1.5 s; none is owed before the socket is read.
    assert!(ping.requests >= 8 && ping.errors == 0, "{ping:#?}");
    assert!(ping.p50_us > 0, "each pong is timed from its ping's intended time");
    // A flow whose last step leaves the socket open: its think time is spent connected, pinged as between
    // steps, and the socket is closed after it.
    let steps = "[[flow.step]]\nws = \"send\"\nname = \"WS note\"\njson = { op = \"note\" }\nthink = \"1500ms\"\n";
    let measurement = run_scenario(&scenario(&stub.url(), ws, "board.v1", steps, 1, 2), &[]).await;
    let ping = endpoint(&measurement, "WS ping");
    assert!(ping.requests >= 8 && ping.errors == 0, "{ping:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_message_carries_its_request_id_big_endian() {
    let stub = WsStub::start(stub_config()).await;
    // The stub answers a binary message starting 01 with the same bytes, 81 first: the answer to request n
    // starts 81 00 00 00 while n < 256, and is 5 bytes long.
    let steps = "[[flow.step]]\nws = \"send\"\nname = \"WS binary id\"\nbinary_hex = \"01 {{ u32be(seq()) }}\"\n\
                 await = { prefix_hex = \"81 00 00 00\", timeout = \"1s\" }\nthink = \"50ms\"\n";
    let measurement = run_scenario(&scenario(&stub.url(), "", "board.v1", steps, 1, 1), &[]).await;
    let binary = endpoint(&measurement, "WS binary id");
    assert!(binary.requests >= 3 && binary.errors == 0, "{binary:#?}");
    // A value that is no such integer fails the send, saying which.
    let steps = "[[flow.step]]\nws = \"send\"\nname = \"WS bad id\"\nbinary_hex = \"01 {{ u16be(70000) }}\"\n";
    let measurement = run_scenario(&scenario(&stub.url(), "", "board.v1", steps, 1, 1), &[]).await;
    let bad = endpoint(&measurement, "WS bad id");
    let sample = &bad.error_samples["protocol"][0];
    assert!(sample.contains("70000 is not a u16be integer"), "{sample}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_templated_await_waits_for_the_answer_to_this_very_message() {
    let stub = WsStub::start(stub_config()).await;
    let steps = r#"
[[flow.step]]
ws = "send"
name = "WS first"
json = { op = "echo", id = "{{ seq() }}" }
await = { json = [{ path = "$.type", eq = "ack" }] }
extract = { first = "$.id" }
[[flow.step]]
ws = "send"
name = "WS this one"
json = { op = "echo", id = "{{ first }}-b" }
await = { json = [{ path = "$.id", eq = "{{ first }}-b" }], timeout = "1s" }
[[flow.step]]
ws = "send"
name = "WS not this one"
json = { op = "echo", id = "{{ first }}-c" }
await = { json = [{ path = "$.id", eq = "{{ first }}-d" }], timeout = "300ms" }
"#;
    let measurement = run_scenario(&scenario(&stub.url(), "", "board.v1", steps, 1, 2), &[]).await;
    let this_one = endpoint(&measurement, "WS this one");
    assert!(this_one.requests >= 2 && this_one.errors == 0, "{this_one:#?}");
    // The answer carries `…-c`: an await rendered to `…-d` does not take it.
    let not_this_one = endpoint(&measurement, "WS not this one");
    assert!(not_this_one.requests >= 2, "{not_this_one:#?}");
    assert_eq!(not_this_one.errors_by_class.get("timeout"), Some(&not_this_one.requests), "{not_this_one:#?}");

    let dir = tempfile::tempdir().unwrap();
    let unknown = steps.replace("eq = \"{{ first }}-d\"", "eq = \"{{ nope }}\"");
    let text = scenario(&stub.url(), "", "board.v1", &unknown, 1, 1);
    let error = degrade::scenario::parse(&dir.path().join("s.toml"), &text, None, &|_| None).unwrap_err().to_string();
    assert!(error.contains("flow[0].step[3].await.json[0].eq: in `{{ nope }}`: unknown variable"), "{error}");
}
