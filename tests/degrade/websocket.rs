//! WebSocket steps against the WebSocket stub on 127.0.0.1 (`support::ws_stub`): awaits timed from the send's
//! intended start, pushes counted on their class and never taken for an answer, pings answered, and every
//! failure in its class: await timeout, refused upgrade, subprotocol disagreement, unexpected close, a message
//! over the cap. Runs are a few seconds at most, bounds generous enough for a busy machine.

use std::sync::atomic::Ordering;
use std::time::Duration;

use degrade::engine::Measurement;
use degrade::model::EndpointResult;
use degrade::scenario;

use crate::support::run_scenario;
use crate::support::ws_stub::{WsStub, WsStubConfig};

/// The stub's delay before each answer.
pub(crate) const DELAY: Duration = Duration::from_millis(50);

pub(crate) fn stub_config() -> WsStubConfig {
    WsStubConfig { delay: DELAY, push_every: Duration::from_millis(20), subprotocol: Some("board.v1"), stall: None }
}

pub(crate) fn endpoint<'a>(measurement: &'a Measurement, name: &str) -> &'a EndpointResult {
    let endpoints = &measurement.results.endpoints;
    endpoints.iter().find(|e| e.endpoint == name).unwrap_or_else(|| panic!("no {name} in {endpoints:#?}"))
}

/// A closed-model scenario of `users` users for `secs` seconds: a connect offering `subprotocol`, then `steps`.
pub(crate) fn scenario(url: &str, ws: &str, subprotocol: &str, steps: &str, users: u32, secs: u32) -> String {
    format!(
        "[target]\nbase_url = \"{url}\"\ntimeout = \"2s\"\n{ws}\n[[flow]]\nname = \"board\"\n\
         [[flow.step]]\nws = \"connect\"\npath = \"/boards/{{{{ randint(1, 2) }}}}\"\nsubprotocols = [\"{subprotocol}\"]\n\
         {steps}\n[load]\nmodel = \"closed\"\n[[load.stage]]\nduration = \"{secs}s\"\nusers = {users}\n"
    )
}

const PUSH_CLASSES: &str = "[[ws.push]]\nname = \"cursor\"\njson = [{ path = \"$.type\", eq = \"cursor\" }]\n";

/// An edit round trip, a note sent without an await, and a think time during which pushes arrive.
const EDIT_STEPS: &str = r#"
[[flow.step]]
ws = "send"
name = "WS edit"
json = { op = "echo", id = "{{ seq() }}" }
await = { json = [{ path = "$.type", eq = "ack" }], timeout = "1s" }
extract = { acked = "$.id" }
think = "100ms"
[[flow.step]]
ws = "send"
name = "WS note"
json = { op = "note", after = "{{ acked }}" }
[[flow.step]]
ws = "send"
name = "WS binary"
binary_hex = "01 ab cd"
await = { prefix_hex = "81abcd" }
think = "100ms"
[[flow.step]]
ws = "close"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_await_is_timed_from_its_send_to_the_matching_message_and_pushes_land_in_their_class() {
    let stub = WsStub::start(stub_config()).await;
    let text = scenario(&stub.url(), PUSH_CLASSES, "board.v1", EDIT_STEPS, 2, 3);
    let measurement = run_scenario(&text, &[]).await;
    let connect = endpoint(&measurement, "WS connect /boards/{randint}");
    assert!(connect.requests >= 2 && connect.errors == 0, "{connect:#?}");
    for name in ["WS edit", "WS binary"] {
        let e = endpoint(&measurement, name);
        assert_eq!(e.errors, 0, "{name}: {:?}", e.error_samples);
        assert!(e.requests >= 4, "{name}: {} awaits", e.requests);
        // Cursor pushes arrive every 20 ms: had one satisfied the await, the median would be under the delay.
        let delay = DELAY.as_micros() as i64;
        println!("{name}: {} awaits, p50 {} µs, p99 {} µs (stub delay {delay} µs)", e.requests, e.p50_us, e.p99_us);
        assert!(e.p50_us >= delay, "{name}: p50 {} µs is under the stub's {delay} µs delay", e.p50_us);
        assert!(e.p50_us < delay + 200_000, "{name}: p50 {} µs is far over the stub's delay", e.p50_us);
    }
    // Sent without an await: counted, never timed.
    let note = endpoint(&measurement, "WS note");
    assert!(note.requests >= 4 && note.errors == 0, "{note:#?}");
    assert_eq!((note.p50_us, note.max_us), (0, 0), "a send alone has no latency to claim");
    let cursor = endpoint(&measurement, "WS push: cursor");
    assert!(cursor.requests >= 20, "{} cursor pushes counted in 3 s of two sockets", cursor.requests);
    // The unpadded pings are answered while the session reads.
    assert!(stub.counters.pongs.load(Ordering::Relaxed) >= 10, "pings answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_await_that_sees_no_match_times_out_at_its_timeout() {
    let stub = WsStub::start(stub_config()).await;
    let steps = "[[flow.step]]\nws = \"send\"\nname = \"WS silent\"\njson = { op = \"silent\" }\n\
                 await = { json = [{ path = \"$.type\", eq = \"ack\" }], timeout = \"300ms\" }\n";
    let measurement = run_scenario(&scenario(&stub.url(), "", "board.v1", steps, 1, 2), &[]).await;
    let silent = endpoint(&measurement, "WS silent");
    assert!(silent.requests >= 1 && silent.errors == silent.requests, "{silent:#?}");
    assert_eq!(silent.errors_by_class.get("timeout"), Some(&silent.errors));
    assert!(silent.p50_us >= 300_000, "a timeout is recorded at its timeout: {} µs", silent.p50_us);
    // Pushes nobody classed are counted as such, not dropped.
    assert!(endpoint(&measurement, "WS push: (other)").requests >= 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subprotocol_the_server_refuses_or_ignores_fails_the_connect_clearly() {
    let stub = WsStub::start(stub_config()).await;
    let measurement = run_scenario(&scenario(&stub.url(), "", "board.v2", "", 1, 1), &[]).await;
    let connect = endpoint(&measurement, "WS connect /boards/{randint}");
    assert_eq!(connect.errors_by_class.get("http_4xx"), Some(&connect.requests), "{connect:#?}");
    let sample = &connect.error_samples["http_4xx"][0];
    assert!(sample.contains("400") && sample.contains("subprotocol board.v1 required"), "{sample}");
    assert!(stub.counters.refused.load(Ordering::Relaxed) >= 1);
    assert_ne!(measurement.results.status, degrade::model::RunStatus::Finished);

    // A server that accepts without choosing the subprotocol offered: the client must fail (RFC 6455 4.1).
    let lax = WsStub::start(WsStubConfig { subprotocol: None, ..stub_config() }).await;
    let measurement = run_scenario(&scenario(&lax.url(), "", "board.v1", "", 1, 1), &[]).await;
    let connect = endpoint(&measurement, "WS connect /boards/{randint}");
    let sample = &connect.error_samples["protocol"][0];
    assert!(sample.contains("did not agree to a subprotocol"), "{sample}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_from_the_server_is_a_reset_with_its_code() {
    let stub = WsStub::start(stub_config()).await;
    let steps = "[[flow.step]]\nws = \"send\"\nname = \"WS doomed\"\njson = { op = \"close\", code = 1011 }\n\
                 await = { json = [{ path = \"$.type\", eq = \"ack\" }] }\n";
    let measurement = run_scenario(&scenario(&stub.url(), "", "board.v1", steps, 1, 1), &[]).await;
    let doomed = endpoint(&measurement, "WS doomed");
    let sample = &doomed.error_samples["reset"][0];
    assert!(sample.contains("closed the socket with 1011: stub closes"), "{sample}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_between_steps_that_no_later_step_reports_is_counted_on_the_connect() {
    let stub = WsStub::start(stub_config()).await;
    let steps = "[[flow.step]]\nws = \"send\"\nname = \"WS bye\"\njson = { op = \"close\", code = 1011 }\n\
                 think = \"300ms\"\n[[flow.step]]\nws = \"close\"\n";
    let measurement = run_scenario(&scenario(&stub.url(), "", "board.v1", steps, 1, 1), &[]).await;
    let connect = endpoint(&measurement, "WS connect /boards/{randint}");
    let sample = &connect.error_samples["reset"][0];
    assert!(sample.contains("closed the socket with 1011"), "{sample}");
    assert_eq!(endpoint(&measurement, "WS bye").errors, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_pushes_is_counted_and_a_message_over_the_cap_ends_the_socket() {
    // Hundreds of thousands of pushes, or a thousand sockets, keep both cores busy: not beside the tests whose
    // verdicts rest on a few short real nights.
    let _apart = crate::support::ONE_HEAVY_TEST_AT_A_TIME.lock().await;
    let stub = WsStub::start(stub_config()).await;
    let steps = r#"
[[flow.step]]
ws = "send"
name = "WS flood"
json = { op = "flood", count = 20000, id = 1 }
await = { json = [{ path = "$.type", eq = "ack" }], timeout = "1500ms" }
[[flow.step]]
ws = "send"
name = "WS big"
json = { op = "big", size = 70000, id = 2 }
await = { json = [{ path = "$.type", eq = "ack" }] }
"#;
    let measurement =
        run_scenario(&scenario(&stub.url(), "[ws]\nmax_message = \"64KiB\"\n", "board.v1", steps, 1, 1), &[]).await;
    let flood = endpoint(&measurement, "WS flood");
    assert_eq!(flood.errors, 0, "{:?}", flood.error_samples);
    // Every pushed message was read, counted and let go: none dropped unseen, none kept.
    assert!(endpoint(&measurement, "WS push: (other)").requests >= 20_000);
    // Pushes are the server's messages, not requests: the whole run's row leaves them out.
    let all = endpoint(&measurement, degrade::model::OVERALL_ENDPOINT);
    assert!(all.requests < 100, "(all) counts {} requests", all.requests);
    let big = endpoint(&measurement, "WS big");
    let sample = &big.error_samples["protocol"][0];
    assert!(sample.contains("max_message"), "{sample}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_second_stall_shows_in_the_awaits_p99_under_planned_arrivals() {
    let stall = (Duration::from_millis(1500), Duration::from_secs(1));
    let stub = WsStub::start(WsStubConfig { stall: Some(stall), ..stub_config() }).await;
    let text = format!(
        "[target]\nbase_url = \"{}\"\n[[flow]]\nname = \"edit\"\n\
         [[flow.step]]\nws = \"connect\"\npath = \"/boards/1\"\nsubprotocols = [\"board.v1\"]\n\
         [[flow.step]]\nws = \"send\"\nname = \"WS edit\"\njson = {{ op = \"echo\", id = 1 }}\n\
         await = {{ json = [{{ path = \"$.type\", eq = \"ack\" }}] }}\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"4s\"\nrate = 50\n",
        stub.url()
    );
    let measurement = run_scenario(&text, &[]).await;
    let edit = endpoint(&measurement, "WS edit");
    assert_eq!(edit.errors, 0, "{:?}", edit.error_samples);
    // A quarter of the arrivals fall in the stall: their awaits count the wait, from their planned start.
    println!("stalled awaits: p50 {} µs, p99 {} µs", edit.p50_us, edit.p99_us);
    assert!(edit.p99_us >= 500_000, "p99 {} µs should be near the 1 s stall", edit.p99_us);
    assert!(edit.p50_us < 500_000, "p50 {} µs: most edits were not stalled", edit.p50_us);
}

fn scenario_error(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    let error = scenario::parse(&path, text, None, &|_| None).expect_err("the scenario should be rejected");
    error.to_string().replace(&format!("{}/", dir.path().display()), "")
}

#[test]
fn each_websocket_step_mistake_names_its_line_and_field() {
    let cases: &[(&str, &str)] = &[
        (
            "[[flow.step]]\nws = \"send\"\nname = \"x\"\nbody = \"hi\"\n",
            "s.toml:6:6: flow[0].step[0].ws: no socket is open here",
        ),
        ("[[flow.step]]\nws = \"open\"\n", "s.toml:6:6: flow[0].step[0].ws: `open` is not a WebSocket step"),
        (
            "[[flow.step]]\npath = \"/a\"\nawait = { prefix_hex = \"01\" }\n",
            "flow[0].step[0].await: `await` is for WebSocket steps",
        ),
        (
            "[[flow.step]]\nws = \"connect\"\npath = \"/s\"\nmethod = \"POST\"\n",
            "s.toml:8:10: flow[0].step[0].method: `method` does not apply",
        ),
        (
            "[[flow.step]]\nws = \"connect\"\npath = \"/s\"\n[[flow.step]]\nws = \"send\"\nbody = \"hi\"\n",
            "s.toml:9:6: flow[0].step[1].name: name this step",
        ),
        (
            // With a fan-out too: a trial's unnamed send, validated and then missing from every result.
            "[[flow.step]]\nws = \"connect\"\npath = \"/s\"\n[[flow.step]]\nws = \"send\"\njson = { id = 1 }\n\
             await = { json = [{ path = \"$.type\", eq = \"ack\" }] }\nfanout = \"$.id\"\n",
            "s.toml:12:10: flow[0].step[1].name: name this step: it is measured under its name, its fan-out as",
        ),
        (
            "[[flow.step]]\nws = \"connect\"\npath = \"/s\"\n[[flow.step]]\nws = \"send\"\nname = \"x\"\nbinary_hex = \"0g\"\n",
            "s.toml:11:14: flow[0].step[1].binary_hex: `0g` is not hexadecimal bytes",
        ),
        (
            "[[flow.step]]\nws = \"connect\"\npath = \"/s\"\n[[flow.step]]\nws = \"await\"\nname = \"x\"\nawait = { timeout = \"1s\" }\n",
            "flow[0].step[1].await: say which message",
        ),
        (
            "[[flow.step]]\nws = \"connect\"\npath = \"/s\"\nsubprotocols = [\"a b\"]\n",
            "s.toml:8:16: flow[0].step[0].subprotocols: `a b` is not a subprotocol name",
        ),
        (
            "[[flow.step]]\nws = \"connect\"\npath = \"/s\"\n[ws]\nping_every = \"1ms\"\n",
            "s.toml:9:14: ws.ping_every: `1ms` is too often: at least 10ms",
        ),
    ];
    for (steps, expected) in cases {
        let text = format!(
            "[target]\nbase_url = \"http://127.0.0.1:9\"\n[[flow]]\nname = \"f\"\n{steps}\
             [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1s\"\nrate = 1\n"
        );
        let error = scenario_error(&text);
        assert!(error.contains(expected), "expected `{expected}` in:\n{error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fan_out_is_timed_from_the_send_to_another_sessions_push() {
    let stub = WsStub::start(stub_config()).await;
    let text = format!(
        r#"
[target]
base_url = "{}"
[[ws.push]]
name = "change"
json = [{{ path = "$.type", eq = "change" }}]
fanout = "$.id"
[[flow]]
name = "board"
[[flow.step]]
ws = "connect"
path = "/boards/1"
subprotocols = ["board.v1"]
[[flow.step]]
ws = "send"
name = "WS broadcast"
json = {{ op = "broadcast", id = "{{{{ seq() }}}}" }}
await = {{ json = [{{ path = "$.type", eq = "ack" }}] }}
fanout = "$.id"
think = "150ms"
[[flow.step]]
ws = "send"
name = "WS broadcast"
json = {{ op = "broadcast", id = "{{{{ seq() }}}}" }}
await = {{ json = [{{ path = "$.type", eq = "ack" }}] }}
fanout = "$.id"
think = "150ms"
[load]
model = "closed"
[[load.stage]]
duration = "3s"
users = 2
"#,
        stub.url()
    );
    let measurement = run_scenario(&text, &[]).await;
    let fanout = endpoint(&measurement, "WS fanout: WS broadcast");
    assert_eq!(fanout.errors, 0, "{:?}", fanout.error_samples);
    assert!(fanout.requests >= 4, "{} fan-outs seen by the other session", fanout.requests);
    let delay = DELAY.as_micros() as i64;
    println!(
        "fan-out: {} seen, p50 {} µs, p99 {} µs (broadcast delay {delay} µs)",
        fanout.requests, fanout.p50_us, fanout.p99_us
    );
    assert!(fanout.p50_us >= delay, "fan-out p50 {} µs is under the broadcast delay {delay} µs", fanout.p50_us);
    assert!(fanout.p50_us < delay + 200_000, "fan-out p50 {} µs is far over the broadcast delay", fanout.p50_us);
    // Each change also counts in its class; a session's own change never comes back to it (the stub sends
    // changes to the others only), so fan-outs and changes agree.
    let changes = endpoint(&measurement, "WS push: change");
    assert!(changes.requests >= fanout.requests, "{} changes, {} fan-outs", changes.requests, fanout.requests);
}

/// `degrade run NAME` of `scenario` against the stub, under `/usr/bin/time`: its JSON report and peak memory in
/// KiB, or `None` (said as skipped) when `/usr/bin/time` is missing.
async fn run_under_time(stub: &WsStub, name: &str, scenario: &str) -> Option<(serde_json::Value, u64)> {
    let config = format!("[[scenario]]\nname = \"{name}\"\nfile = \"{name}.toml\"\ntarget = \"{}\"\n", stub.url());
    let file = format!("{name}.toml");
    let (dir, _) = crate::support::project(&config, &[(file.as_str(), scenario)]);
    let (path, name) = (dir.path().to_owned(), name.to_owned());
    let measured = tokio::task::spawn_blocking(move || {
        crate::support::degrade_peak_memory(&path, &["run", &name, "--build", "1", "-f", "json"])
    })
    .await
    .unwrap();
    let Some((output, peak_kib)) = measured else {
        println!("skipped: /usr/bin/time is not installed");
        return None;
    };
    let (stdout, stderr) = crate::support::text(&output);
    let run = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}:\n{stdout}\n{stderr}"));
    Some((run, peak_kib))
}

/// The real binary's peak memory for a run whose one session is flooded with `pushes` messages before its
/// answer, or `None` when `/usr/bin/time` is missing.
async fn flooded_peak_kib(stub: &WsStub, pushes: u32) -> Option<u64> {
    // `{"id":1` in hexadecimal (the stub's ack; its pushes start `{"flood"`): the await reads no JSON, so the
    // flood costs the generator little time.
    let scenario = format!(
        "[target]\ntimeout = \"30s\"\n[[flow]]\nname = \"flooded\"\n\
         [[flow.step]]\nws = \"connect\"\npath = \"/boards/1\"\nsubprotocols = [\"board.v1\"]\n\
         [[flow.step]]\nws = \"send\"\nname = \"WS flood\"\njson = {{ op = \"flood\", count = {pushes}, id = 1 }}\n\
         await = {{ prefix_hex = \"7b226964223a31\" }}\n\
         [load]\nmodel = \"closed\"\n[[load.stage]]\nduration = \"1s\"\nusers = 1\n"
    );
    let (run, peak_kib) = run_under_time(stub, "flood", &scenario).await?;
    let endpoints = run["endpoints"].as_array().unwrap();
    let other = endpoints.iter().find(|e| e["endpoint"] == "WS push: (other)").expect("pushes counted");
    assert!(other["requests"].as_u64().unwrap() >= u64::from(pushes), "every push counted:\n{run}");
    println!("{pushes} pushes: peak {peak_kib} KiB");
    Some(peak_kib)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_pushes_does_not_grow_the_generators_memory() {
    // Hundreds of thousands of pushes, or a thousand sockets, keep both cores busy: not beside the tests whose
    // verdicts rest on a few short real nights.
    let _apart = crate::support::ONE_HEAVY_TEST_AT_A_TIME.lock().await;
    let stub = WsStub::start(WsStubConfig { push_every: Duration::from_mins(1), ..stub_config() }).await;
    let Some(few) = flooded_peak_kib(&stub, 1_000).await else { return };
    // 300,000 pushes are 12 MB of messages: kept, even as bare bytes, they would show.
    let Some(flood) = flooded_peak_kib(&stub, 300_000).await else { return };
    assert!(flood < few + 6 * 1024, "peak {flood} KiB after 300,000 pushes, {few} KiB after 1,000");
}

/// The real binary's peak memory holding `users` sockets idle for 2 s, or `None` without `/usr/bin/time`.
async fn idle_peak_kib(stub: &WsStub, users: u32) -> Option<u64> {
    let scenario = format!(
        "[target]\ntimeout = \"10s\"\n[[flow]]\nname = \"idle\"\n\
         [[flow.step]]\nws = \"connect\"\npath = \"/boards/{{{{ randint(1, 50) }}}}\"\nsubprotocols = [\"board.v1\"]\n\
         [[flow.step]]\nws = \"await\"\nname = \"WS nothing\"\nawait = {{ prefix_hex = \"ff\", timeout = \"2s\" }}\n\
         [load]\nmodel = \"closed\"\n[[load.stage]]\nduration = \"1s\"\nusers = {users}\n"
    );
    let (run, peak_kib) = run_under_time(stub, "idle", &scenario).await?;
    let endpoints = run["endpoints"].as_array().unwrap();
    let connect = endpoints.iter().find(|e| e["endpoint"] == "WS connect /boards/{randint}").expect("connects");
    assert_eq!(connect["errors"], 0, "{connect}");
    assert!(connect["requests"].as_u64().unwrap() >= u64::from(users), "{connect}");
    Some(peak_kib)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_socket_costs_the_generator_a_few_kilobytes() {
    // Hundreds of thousands of pushes, or a thousand sockets, keep both cores busy: not beside the tests whose
    // verdicts rest on a few short real nights.
    let _apart = crate::support::ONE_HEAVY_TEST_AT_A_TIME.lock().await;
    let stub = WsStub::start(WsStubConfig { push_every: Duration::from_mins(1), ..stub_config() }).await;
    let Some(few) = idle_peak_kib(&stub, 100).await else { return };
    let Some(many) = idle_peak_kib(&stub, 1_100).await else { return };
    let per_socket = many.saturating_sub(few) / 1_000;
    println!("100 sockets: {few} KiB, 1,100 sockets: {many} KiB: {per_socket} KiB a socket");
    // The bound the codec's limits give an idle socket: far under one message of `[ws] max_message`.
    assert!(per_socket < 64, "{per_socket} KiB a socket");
}

#[test]
fn validate_warns_of_more_sockets_than_the_in_flight_cap_or_the_ports_allow() {
    let plan = |load: &str| {
        let text = format!(
            "[target]\nbase_url = \"http://127.0.0.1:9\"\n[[flow]]\nname = \"f\"\n\
             [[flow.step]]\nws = \"connect\"\npath = \"/b\"\nthink = \"30s\"\n\
             [[flow.step]]\nws = \"send\"\nname = \"WS edit\"\njson = {{ op = \"echo\" }}\n{load}"
        );
        scenario::parse(std::path::Path::new("s.toml"), &text, None, &|_| None).unwrap()
    };
    // 100 sessions a second, each holding its socket 30 s at least: 3,000 at once, over the default cap of 1,000.
    let open = plan("[load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1m\"\nrate = 100\n");
    assert!(open.warnings.iter().any(|w| w.contains("about 3000 sessions") && w.contains("max_in_flight = 1000")));
    // More users than any machine has ports for one source address.
    let closed = plan("[load]\nmodel = \"closed\"\n[[load.stage]]\nduration = \"1m\"\nusers = 70000\n");
    assert!(closed.warnings.iter().any(|w| w.contains("about 70000 WebSockets") && w.contains("ephemeral ports")));
    let calm = plan("[load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1m\"\nrate = 10\n");
    assert!(calm.warnings.is_empty(), "{:?}", calm.warnings);
}

#[test]
fn a_close_step_is_no_endpoint_of_the_workload() {
    let text = "[target]\nbase_url = \"http://127.0.0.1:9\"\n[[flow]]\nname = \"f\"\n\
                [[flow.step]]\nws = \"connect\"\npath = \"/b\"\n\
                [[flow.step]]\nws = \"send\"\nname = \"WS edit\"\njson = { op = \"echo\" }\n\
                [[flow.step]]\nws = \"close\"\n\
                [load]\nmodel = \"closed\"\n[[load.stage]]\nduration = \"1m\"\nusers = 1\n";
    let plan = scenario::parse(std::path::Path::new("s.toml"), text, None, &|_| None).unwrap();
    // A close is sent, never measured or counted: validate's list of endpoints leaves it out.
    assert_eq!(plan.recorded_endpoints().collect::<Vec<_>>(), ["WS connect /b", "WS edit", "WS push: (other)"]);
}
