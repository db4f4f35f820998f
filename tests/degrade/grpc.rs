//! gRPC steps against a real gRPC server on 127.0.0.1 (`support::grpc_stub`, h2c): a unary call's request
//! built from templated JSON and its answer decoded for `expect` and `extract`, every gRPC status in a class
//! of its own, a per-step deadline, a 1 s stall in p99, a huge answer capped, an endless server stream cut at
//! `max_body` with the stub's sending held back by flow control (memory bounded on both sides), and a wrong
//! field of the JSON request refused when the scenario is loaded, with its path; and a call over TLS with ALPN
//! `h2`. Latency within ±3 ms of a
//! fixed delay is in `tests/nights/grpc_latency.rs`.

use std::sync::atomic::Ordering;

use degrade::engine::Measurement;
use degrade::model::EndpointResult;

use crate::support::grpc_stub::{GrpcStub, StubOptions, proto_folder};
use crate::support::quoted::assert_quoted;
use crate::support::run_scenario;

fn endpoint<'a>(measurement: &'a Measurement, name: &str) -> &'a EndpointResult {
    let endpoints = &measurement.results.endpoints;
    endpoints.iter().find(|e| e.endpoint == name).unwrap_or_else(|| panic!("no {name} in {endpoints:#?}"))
}

/// A scenario against `url` with the stub's `.proto`, `flows` as written, in the open model at `rate` a second
/// for `secs` seconds. The connect timeout is long: on a busy 2-core machine running other tests beside these,
/// the stub's SETTINGS once took past the default 3 s, and a test must not depend on the machine's speed.
fn scenario(url: &str, target_extra: &str, flows: &str, rate: u32, secs: u32) -> String {
    format!(
        "[target]\nbase_url = \"{url}\"\nconnect_timeout = \"10s\"\n{target_extra}\n[proto]\nfiles = [\"{}\"]\n{flows}\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"{secs}s\"\nrate = {rate}\n",
        proto_folder().join("stub.proto").display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unary_call_sends_templated_json_and_checks_and_extracts_its_decoded_answer() {
    let stub = GrpcStub::start().await;
    let flows = r#"
[vars]
who = "night"
[[flow]]
name = "f"
[[flow.step]]
grpc = "stub.Stub/Echo"
headers = { x-team = "{{ who }}" }
json = { text = "hello {{ who }}", big = 9007199254740993, tags = ["a", "b"], kind = "KIND_FAST", inner = { note = "n" } }
expect = { json = [{ path = "$.text", eq = "hello night" }, { path = "$.number", eq = 7 }, { path = "$.tags[1]", eq = "b" }] }
extract = { said = "$.text" }
[[flow.step]]
name = "again"
grpc = "stub.Stub/Echo"
json = { text = "{{ said }}!" }
expect = { json = [{ path = "$.text", eq = "hello night!" }] }
"#;
    // A target's JSON content type is for its HTTP steps: a gRPC call carries gRPC's.
    let target = "headers = { content-type = \"application/json\" }";
    let measurement = run_scenario(&scenario(&stub.url(), target, flows, 20, 1), &[]).await;
    let echo = endpoint(&measurement, "gRPC stub.Stub/Echo");
    assert_eq!((echo.requests, echo.errors), (20, 0), "{:?}", echo.error_samples);
    let again = endpoint(&measurement, "again");
    assert_eq!((again.requests, again.errors), (20, 0), "{:?}", again.error_samples);
    // The target is HTTP/1.1 (the default), but every step is gRPC: every request went over h2c.
    let connection = measurement.results.load_summary.connection.expect("the gRPC steps' connection is reported");
    assert_eq!(connection.negotiated, degrade::model::WireProtocol::H2c, "{connection:?}");
    assert!(!connection.steps_only, "no request went over HTTP/1.1: {connection:?}");
}

/// Beside an HTTP step on an HTTP/1.1 target, the gRPC steps' h2c is theirs alone, and the run says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_steps_beside_http_ones_say_only_they_went_over_h2c() {
    let stub = GrpcStub::start().await;
    // The stub speaks HTTP/2 only: the HTTP/1.1 step's connections open and its requests fail, which is all
    // this needs.
    let flows = "[[flow]]\nname = \"f\"\n[[flow.step]]\ngrpc = \"stub.Stub/Echo\"\njson = { text = \"hi\" }\n\
                 [[flow.step]]\npath = \"/health\"\n";
    let measurement = run_scenario(&scenario(&stub.url(), "", flows, 10, 1), &[]).await;
    assert_eq!(endpoint(&measurement, "gRPC stub.Stub/Echo").errors, 0);
    let connection = measurement.results.load_summary.connection.expect("the gRPC steps' connection is reported");
    assert_eq!(connection.negotiated, degrade::model::WireProtocol::H2c, "{connection:?}");
    assert!(connection.steps_only, "the HTTP step went over HTTP/1.1: {connection:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_grpc_status_lands_in_its_own_class_and_an_expected_one_is_a_success() {
    let stub = GrpcStub::start().await;
    let mut flows = String::new();
    for code in 1..=16 {
        flows += &format!(
            "[[flow]]\nname = \"c{code}\"\n[[flow.step]]\nname = \"code {code}\"\ngrpc = \"stub.Stub/Echo\"\n\
             json = {{ code = {code} }}\n"
        );
    }
    flows += "[[flow]]\nname = \"nf\"\n[[flow.step]]\nname = \"expected\"\ngrpc = \"stub.Stub/Echo\"\n\
              json = { code = 5 }\nexpect = { grpc_status = [\"OK\", \"NOT_FOUND\"] }\n\
              [[flow]]\nname = \"gone\"\n[[flow.step]]\nname = \"meant to fail\"\ngrpc = \"stub.Stub/Echo\"\n\
              expect = { grpc_status = \"NOT_FOUND\" }\n";
    // Closed model: every user runs the flows in turn by weight, so each flow is called many times.
    let text = scenario(&stub.url(), "", &flows, 1, 1)
        .replace("model = \"open\"", "model = \"closed\"")
        .replace("rate = 1", "users = 4");
    let measurement = run_scenario(&text, &[]).await;
    let names = [
        "cancelled",
        "unknown",
        "invalid_argument",
        "deadline_exceeded",
        "not_found",
        "already_exists",
        "permission_denied",
        "resource_exhausted",
        "failed_precondition",
        "aborted",
        "out_of_range",
        "unimplemented",
        "internal",
        "unavailable",
        "data_loss",
        "unauthenticated",
    ];
    for (code, name) in (1..=16).zip(names) {
        let result = endpoint(&measurement, &format!("code {code}"));
        let class = format!("grpc_{name}");
        assert!(result.requests > 0, "code {code} was never called");
        assert_eq!(result.errors_by_class.get(&class), Some(&result.requests), "{code}: {:?}", result.errors_by_class);
        let sample = &result.error_samples[&class][0];
        assert!(sample.contains(&name.to_uppercase()) && sample.contains("asked for"), "{sample}");
    }
    let expected = endpoint(&measurement, "expected");
    assert!(expected.requests > 0 && expected.errors == 0, "{:?}", expected.error_samples);
    // An answer of OK where NOT_FOUND was expected fails, and its sample says what was expected.
    let meant_to_fail = endpoint(&measurement, "meant to fail");
    let sample = &meant_to_fail.error_samples["assertion"][0];
    assert_eq!(sample, "gRPC status OK (expected NOT_FOUND)", "{:?}", meant_to_fail.error_samples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_deadline_is_deadline_exceeded_at_the_deadline() {
    let stub = GrpcStub::start().await;
    let flows = "[[flow]]\nname = \"f\"\n[[flow.step]]\ngrpc = \"stub.Stub/Echo\"\njson = { delay_ms = 400 }\n\
                 deadline = \"100ms\"\n";
    let measurement = run_scenario(&scenario(&stub.url(), "", flows, 10, 1), &[]).await;
    let echo = endpoint(&measurement, "gRPC stub.Stub/Echo");
    assert_eq!(echo.errors_by_class.get("grpc_deadline_exceeded"), Some(&10), "{:?}", echo.error_samples);
    // Ended at the deadline, not at the server's 400 ms.
    assert!(echo.p99_us < 350_000, "p99 {} µs: the deadline did not end the call", echo.p99_us);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_call_over_tls_negotiates_h2_in_alpn_and_is_measured() {
    let stub = GrpcStub::start_with(StubOptions { tls: true, ..StubOptions::default() }).await;
    // The stub's certificate is the committed test CA's, for `localhost`: trusted through `ca_file`.
    let ca = crate::support::h2_stub::ca_file();
    let target = format!("ca_file = \"{}\"", ca.display());
    let flows = "[[flow]]\nname = \"f\"\n[[flow.step]]\ngrpc = \"stub.Stub/Echo\"\n\
                 json = { text = \"over tls\", delay_ms = 20 }\n\
                 expect = { json = [{ path = \"$.text\", eq = \"over tls\" }] }\n";
    let measurement = run_scenario(&scenario(&stub.url(), &target, flows, 20, 1), &[]).await;
    let echo = endpoint(&measurement, "gRPC stub.Stub/Echo");
    assert_eq!((echo.requests, echo.errors), (20, 0), "{:?}", echo.error_samples);
    // Measured, not only answered: no call can be faster than the stub's 20 ms wait.
    assert!(echo.p50_us >= 20_000, "p50 {} µs is below the stub's 20 ms delay", echo.p50_us);
    let connection = measurement.results.load_summary.connection.expect("an HTTP/2 run reports its connection");
    assert_eq!(connection.negotiated, degrade::model::WireProtocol::H2, "{connection:?}");

    // Without the CA, the stub's certificate is refused: the call fails at the TLS handshake (a `connect`
    // error), not at gRPC.
    let measurement = run_scenario(&scenario(&stub.url(), "", flows, 5, 1), &[]).await;
    let echo = endpoint(&measurement, "gRPC stub.Stub/Echo");
    assert_eq!(echo.errors, echo.requests, "{:?}", echo.errors_by_class);
    assert!(echo.errors_by_class.keys().all(|class| class == "connect"), "{:?}", echo.errors_by_class);
    let said = format!("{:?}", echo.error_samples).to_lowercase();
    assert!(said.contains("certificate"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_second_stall_shows_in_p99_of_a_grpc_call() {
    let stub = GrpcStub::start().await;
    let flows = "[[flow]]\nname = \"f\"\n[[flow.step]]\ngrpc = \"stub.Stub/Stall\"\n";
    let measurement = run_scenario(&scenario(&stub.url(), "", flows, 200, 4), &[]).await;
    let stall = endpoint(&measurement, "gRPC stub.Stub/Stall");
    // Every call answered; a generator held back past the stage's end on a loaded machine sends a few fewer
    // (seen: 797 and 799 of 800 with three busy loops on two cores), never more.
    assert_eq!(stall.errors, 0, "{:?}", stall.error_samples);
    assert!((792..=800).contains(&stall.requests), "{} of 800 calls sent", stall.requests);
    assert!(stall.p99_us >= 300_000, "p99 response time {} µs should be near the 1 s stall", stall.p99_us);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_answer_and_an_endless_stream_are_cut_at_max_body_and_memory_stays_bounded() {
    let stub = GrpcStub::start().await;
    let flows = "[[flow]]\nname = \"h\"\n[[flow.step]]\ngrpc = \"stub.Stub/Huge\"\n\
                 [[flow]]\nname = \"t\"\n[[flow.step]]\ngrpc = \"stub.Stub/Ticks\"\njson = { count = 0 }\n\
                 expect = { json = [{ path = \"$[0].text\", eq = \"tick 0\" }] }\n\
                 [[flow]]\nname = \"few\"\n[[flow.step]]\nname = \"three ticks\"\ngrpc = \"stub.Stub/Ticks\"\n\
                 json = { count = 3, delay_ms = 5 }\n\
                 expect = { json = [{ path = \"$[2].text\", eq = \"tick 2\" }] }\n";
    let measurement = run_scenario(&scenario(&stub.url(), "max_body = \"1MB\"", flows, 6, 1), &[]).await;
    let huge = endpoint(&measurement, "gRPC stub.Stub/Huge");
    let endless = endpoint(&measurement, "gRPC stub.Stub/Ticks");
    for result in [huge, endless] {
        assert!(result.requests > 0, "{result:?}");
        let capped = result.errors_by_class.get("body_too_large");
        assert_eq!(capped, Some(&result.requests), "{}: {:?}", result.endpoint, result.error_samples);
    }
    let few = endpoint(&measurement, "three ticks");
    assert!(few.requests > 0 && few.errors == 0, "{:?}", few.error_samples);
    // Each endless stream was cut after about 1 MB of ~20-byte messages: the stub sent no more than the
    // client's windows let it, not an unbounded queue.
    let sent = stub.ticks_sent.load(Ordering::Relaxed);
    assert!(sent < 1_000_000, "the stub sent {sent} messages: flow control did not hold it back");
}

#[test]
fn a_wrong_field_of_a_grpc_request_is_refused_at_load_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scenario.toml");
    let flows = "[[flow]]\nname = \"f\"\n[[flow.step]]\ngrpc = \"stub.Stub/Echo\"\n\
                 json = { text = \"a\", inner = { nte = \"x\" } }\n\
                 [[flow.step]]\ngrpc = \"stub.Stub/Echo\"\njson = { kind = \"KIND_SLOW\", delay_ms = \"{{ seq() }}\" }\n\
                 [[flow.step]]\ngrpc = \"stub.Stub/Echo\"\njson = { tags = \"one\" }\n\
                 [[flow.step]]\ngrpc = \"stub.Stub/Ech\"\n\
                 [[flow.step]]\ngrpc = \"stub.Stub/Upload\"\n\
                 [[flow.step]]\ngrpc = \"stub.Stub/Echo\"\npath = \"/x\"\nexpect = { status = 200 }\n\
                 [[flow.step]]\npath = \"/y\"\ndeadline = \"1s\"\nexpect = { grpc_status = \"OK\" }\n\
                 [[flow.step]]\nws = \"close\"\ngrpc = \"stub.Stub/Echo\"\n\
                 [[flow.step]]\ngrpc = \"stub.Stub/Echo\"\njson = { big = \"abc\" }\n\
                 [[flow.step]]\ngrpc = \"stub.Stub/Echo\"\njson = { delay_ms = -1 }\n\
                 [[flow.step]]\ngrpc = \"stub.Stub/Echo\"\njson = { big = \"9007199254740993\", delay_ms = \"5\" }\n";
    let text = scenario("http://127.0.0.1:1", "", flows, 1, 1);
    let errors = degrade::scenario::parse(&path, &text, None, &|_| None).unwrap_err().to_string();
    for expected in [
        "flow[0].step[0].json: json.inner.nte: message `stub.Inner` has no field `nte` (its fields: note)",
        "flow[0].step[1].json: json.kind: enum `stub.Kind` has no value `KIND_SLOW`",
        "flow[0].step[2].json: json.tags: repeated field `tags` is written as an array, not the string \"one\"",
        "flow[0].step[3].grpc: service `stub.Stub` has no method `Ech`",
        "flow[0].step[4].grpc: `stub.Stub/Upload` takes a stream of requests",
        "flow[0].step[5].path: `path` is for HTTP steps",
        "flow[0].step[5].expect.status: a gRPC call's outcome is its `grpc_status`",
        "flow[0].step[6].deadline: `deadline` is a gRPC call's",
        "flow[0].step[6].expect.grpc_status: `grpc_status` is a gRPC call's",
        "flow[0].step[7].grpc: `grpc` does not apply to a `ws = \"close\"` step",
        // proto3's JSON writes 64-bit integers as strings: one that is no integer is refused, as is a
        // negative value for an unsigned field.
        "flow[0].step[8].json: json.big: an int64 field cannot hold the string \"abc\"",
        "flow[0].step[9].json: json.delay_ms: a uint32 field cannot hold the integer -1",
    ] {
        assert!(errors.contains(expected), "{expected}\nnot in\n{errors}");
    }
    assert!(!errors.contains("flow[0].step[10]"), "integers written as strings are proto3's JSON: {errors}");
    // Each at its own line of the scenario.
    assert!(errors.contains("scenario.toml:11:8: flow[0].step[0].json"), "{errors}");
}

#[test]
fn an_error_in_a_proto_file_is_reported_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.proto"), "syntax = \"proto3\";\nmessage A {\n  strin x = 1;\n}\n").unwrap();
    let path = dir.path().join("scenario.toml");
    let text = "[target]\nbase_url = \"http://127.0.0.1:1\"\n[proto]\nfiles = [\"bad.proto\"]\n\
                [[flow]]\nname = \"f\"\n[[flow.step]]\ngrpc = \"a.B/C\"\n\
                [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1s\"\nrate = 1\n";
    let errors = degrade::scenario::parse(&path, text, None, &|_| None).unwrap_err().to_string();
    assert!(errors.contains("scenario.toml:4:10: proto.files[0]: bad.proto:3:3:"), "{errors}");
    // The one mistake is reported once: the step that needs the files says nothing more.
    assert_eq!(errors.lines().count(), 1, "{errors}");
    // Files that are not there, or not files, are refused before they are read.
    let text = text.replace("[\"bad.proto\"]", "[\"missing.proto\", \"/dev/zero\"]");
    let errors = degrade::scenario::parse(&path, &text, None, &|_| None).unwrap_err().to_string();
    assert!(errors.contains("proto.files[0]: ") && errors.contains("missing.proto"), "{errors}");
    assert!(errors.contains("proto.files[1]: /dev/zero is not a regular file"), "{errors}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_steps_send_protobuf_from_json_or_raw_bytes_and_decode_a_protobuf_answer() {
    let stub = GrpcStub::start().await;
    // CallRequest { text: "abc", delay_ms: 5 } encoded by hand: field 1 (string) and field 2 (varint).
    let flows = r#"
[[flow]]
name = "f"
[[flow.step]]
name = "from json"
method = "POST"
path = "/raw"
protocol = "http2"
proto = "stub.CallRequest"
json = { text = "{{ seq() }}", tags = ["x"], inner = { note = "n" } }
decode = "stub.CallRequest"
expect = { json = [{ path = "$.tags[0]", eq = "x" }, { path = "$.inner.note", eq = "n" }, { path = "$.delay_ms", eq = 0 }] }
extract = { sent = "$.text" }
[[flow.step]]
name = "hex"
method = "POST"
path = "/raw"
protocol = "http2"
headers = { content-type = "application/x-protobuf" }
body_hex = "0a 03 61 62 63 10 05"
decode = "stub.CallRequest"
expect = { json = [{ path = "$.text", eq = "abc" }, { path = "$.delay_ms", eq = 5 }] }
[[flow.step]]
name = "not that type"
method = "POST"
path = "/raw"
protocol = "http2"
body_hex = "0a 03 61 62"
decode = "stub.CallRequest"
expect = { json = [{ path = "$.text", exists = true }] }
"#;
    let measurement = run_scenario(&scenario(&stub.url(), "", flows, 10, 1), &[]).await;
    for name in ["from json", "hex"] {
        let result = endpoint(&measurement, name);
        assert_eq!((result.requests, result.errors), (10, 0), "{name}: {:?}", result.error_samples);
    }
    let cut = endpoint(&measurement, "not that type");
    assert_eq!(cut.errors_by_class.get("assertion"), Some(&10), "{:?}", cut.error_samples);
    assert!(
        cut.error_samples["assertion"][0].contains("is not a `stub.CallRequest` message"),
        "{:?}",
        cut.error_samples
    );
}

#[test]
fn the_guides_wrong_field_is_refused_as_the_guide_quotes() {
    let dir = tempfile::tempdir().unwrap();
    let guide = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/guide");
    std::fs::copy(guide.join("boards.proto"), dir.path().join("boards.proto")).unwrap();
    let path = dir.path().join("scenario.toml");
    let text = "[target]\nbase_url = \"http://127.0.0.1:50051\"\n[proto]\nfiles = [\"boards.proto\"]\n\
                [[flow]]\nname = \"read a board\"\n[[flow.step]]\ngrpc = \"boards.v1.Boards/GetBoard\"\n\
                json = { id = 7, with_card = true }\n\
                [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1s\"\nrate = 1\n";
    let errors = degrade::scenario::parse(&path, text, None, &|_| None).unwrap_err().to_string();
    assert_quoted("grpc-wrong-field", &errors.replace(&format!("{}/", dir.path().display()), ""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stream_is_timed_to_its_first_message_and_to_its_last() {
    let stub = GrpcStub::start().await;
    // Three messages 150 ms apart: the first at once, the last 300 ms later.
    let flows = "[[flow]]\nname = \"f\"\n[[flow.step]]\ngrpc = \"stub.Stub/Ticks\"\njson = { count = 3, delay_ms = 150 }\n\
                 expect = { json = [{ path = \"$[-1].text\", eq = \"tick 2\" }] }\n";
    let measurement = run_scenario(&scenario(&stub.url(), "", flows, 10, 1), &[]).await;
    let last = endpoint(&measurement, "gRPC stub.Stub/Ticks");
    let first = endpoint(&measurement, "gRPC stub.Stub/Ticks (first message)");
    for result in [last, first] {
        assert_eq!((result.requests, result.errors), (10, 0), "{}: {:?}", result.endpoint, result.error_samples);
    }
    assert!(last.p50_us >= 300_000, "the stream's last message came after 300 ms, not {} µs", last.p50_us);
    assert!(
        last.p50_us - first.p50_us >= 250_000,
        "the first message ({} µs) was timed apart from the last ({} µs)",
        first.p50_us,
        last.p50_us
    );
}

#[test]
fn validate_names_each_grpc_method_with_its_request_and_answer_types() {
    let dir = tempfile::tempdir().unwrap();
    let flows = "[[flow]]\nname = \"f\"\n[[flow.step]]\ngrpc = \"stub.Stub/Echo\"\ndeadline = \"250ms\"\n\
                 [[flow.step]]\ngrpc = \"stub.Stub/Ticks\"\n";
    std::fs::write(dir.path().join("scenario.toml"), scenario("http://127.0.0.1:50051", "", flows, 1, 1)).unwrap();
    let output = crate::support::degrade(dir.path(), &["validate", "scenario.toml"], &[]);
    let (stdout, stderr) = crate::support::text(&output);
    assert!(output.status.success(), "{stdout}{stderr}");
    for line in [
        "grpc      gRPC stub.Stub/Echo: stub.CallRequest → stub.CallReply, deadline 250ms",
        "grpc      gRPC stub.Stub/Ticks: stub.CallRequest → stream of stub.CallReply",
        "gRPC stub.Stub/Ticks (first message)",
    ] {
        assert!(stdout.contains(line), "{line}\nnot in\n{stdout}");
    }
}

/// A deadline longer than the target's timeout never ends a call: the timeout does, as `timeout`. `validate`
/// says so where the settings are written, not after a night of unexpected error classes.
#[test]
fn a_deadline_past_the_targets_timeout_is_warned_about() {
    let flows = "[[flow]]\nname = \"f\"\n[[flow.step]]\ngrpc = \"stub.Stub/Echo\"\ndeadline = \"2s\"\n\
                 [[flow.step]]\ngrpc = \"stub.Stub/Echo\"\nname = \"quick\"\ndeadline = \"100ms\"\n";
    let text = scenario("http://127.0.0.1:50051", "timeout = \"200ms\"", flows, 1, 1);
    let plan = degrade::scenario::parse(std::path::Path::new("s.toml"), &text, None, &|_| None).unwrap();
    let said = "gRPC stub.Stub/Echo: deadline 2s is longer than [target] timeout 200ms: its calls end at the timeout";
    assert!(plan.warnings.iter().any(|w| w == said), "{:?}", plan.warnings);
    assert!(!plan.warnings.iter().any(|w| w.starts_with("quick")), "{:?}", plan.warnings);
    // The method written as its HTTP/2 path, as gRPC's tools print it, is the same method.
    let slashed = text.replace("grpc = \"stub.Stub/Echo\"\ndeadline = \"2s\"", "grpc = \"/stub.Stub/Echo\"");
    let plan = degrade::scenario::parse(std::path::Path::new("s.toml"), &slashed, None, &|_| None).unwrap();
    assert!(plan.endpoints.iter().any(|e| e == "gRPC stub.Stub/Echo"), "{:?}", plan.endpoints);
}

/// Two unnamed steps calling one method, one of them expecting it to fail, would be measured as one endpoint:
/// a read and a `NOT_FOUND` mixed (a trial merged the guide's two examples so). Said, with the way out; a
/// second read of the same method expecting the same outcome is no news.
#[test]
fn two_unnamed_calls_of_one_method_expecting_other_outcomes_are_warned_about() {
    let flows = "[[flow]]\nname = \"f\"\n[[flow.step]]\ngrpc = \"stub.Stub/Echo\"\n\
                 [[flow.step]]\ngrpc = \"stub.Stub/Echo\"\njson = { text = \"again\" }\n\
                 [[flow.step]]\ngrpc = \"stub.Stub/Echo\"\nexpect = { grpc_status = \"NOT_FOUND\" }\n";
    let text = scenario("http://127.0.0.1:50051", "", flows, 1, 1);
    let plan = degrade::scenario::parse(std::path::Path::new("s.toml"), &text, None, &|_| None).unwrap();
    let merged: Vec<&String> = plan.warnings.iter().filter(|w| w.contains("measured as one endpoint")).collect();
    assert_eq!(
        merged,
        [
            "flow[0].step[2] and flow[0].step[0] both call `gRPC stub.Stub/Echo` expecting other outcomes (NOT_FOUND and \
          OK), so they are measured as one endpoint; give one of them a `name` to measure them apart"
        ],
        "{:?}",
        plan.warnings
    );
    let named = text.replace("expect = { grpc_status", "name = \"missing board\"\nexpect = { grpc_status");
    let plan = degrade::scenario::parse(std::path::Path::new("s.toml"), &named, None, &|_| None).unwrap();
    assert!(!plan.warnings.iter().any(|w| w.contains("measured as one endpoint")), "{:?}", plan.warnings);
}
