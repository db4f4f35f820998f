//! The load engine over HTTP/2 (`[target] protocol`) against real HTTP/2 servers on 127.0.0.1 (hyper's, and a
//! raw `h2` one that resets streams or sends GOAWAY): h2c and TLS with ALPN, what was negotiated kept with the
//! run, the server's stream limit honoured and its queue in the response time and not in the server's service time, a stall in p99 under paced
//! sends, stream resets and GOAWAY in their classes, a huge body capped, and an HTTP/1.1-only server refused
//! clearly (an HTTP/0.9 error page too). Latency within ±3 ms of a fixed delay is in `tests/nights/http2_latency.rs`.

use degrade::engine::Measurement;
use degrade::model::{ConnectionReport, EndpointResult, RunStatus, WireProtocol};

use crate::support::h2_stub::{H2Options, H2Stub, ca_file};
use crate::support::run_scenario;

const H2: &[&[u8]] = &[b"h2"];
const HTTP1: &[&[u8]] = &[b"http/1.1"];

fn endpoint<'a>(measurement: &'a Measurement, name: &str) -> &'a EndpointResult {
    let endpoints = &measurement.results.endpoints;
    endpoints.iter().find(|e| e.endpoint == name).unwrap_or_else(|| panic!("no {name} in {endpoints:#?}"))
}

/// An open-model scenario of one GET of `path` at `rate` a second for `secs` seconds, over `protocol`.
fn scenario(base_url: &str, protocol: &str, target_extra: &str, path: &str, rate: u32, secs: u32) -> String {
    let ca = ca_file();
    format!(
        "[target]\nbase_url = \"{base_url}\"\nprotocol = \"{protocol}\"\nca_file = \"{}\"\n{target_extra}\n\
         [[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"{path}\"\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"{secs}s\"\nrate = {rate}\n",
        ca.display()
    )
}

fn connection(measurement: &Measurement) -> ConnectionReport {
    measurement.results.load_summary.connection.expect("an HTTP/2 run reports its connection")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2c_and_tls_with_alpn_both_carry_a_run_and_say_what_they_negotiated() {
    let plain = H2Stub::http2(H2Options::default()).await;
    let tls = H2Stub::http2(H2Options { alpn: Some(H2), ..H2Options::default() }).await;
    for (stub, wire) in [(&plain, WireProtocol::H2c), (&tls, WireProtocol::H2)] {
        let measurement = run_scenario(&scenario(&stub.url(), "http2", "", "/fast", 50, 1), &[]).await;
        let fast = endpoint(&measurement, "GET /fast");
        assert_eq!((fast.requests, fast.errors), (50, 0), "{}: {:?}", stub.url(), fast.error_samples);
        let report = connection(&measurement);
        assert_eq!((report.negotiated, report.connections_opened), (wire, 1), "{report:?}");
        assert!(!report.steps_only, "the target itself asked for HTTP/2: {report:?}");
        assert_eq!(report.max_concurrent_streams, Some(200), "hyper's default limit, read from its SETTINGS");
        assert_eq!(stub.connections.load(std::sync::atomic::Ordering::Relaxed), 1, "one connection carried all");
    }
}

/// A test server's self-signed certificate, as `openssl req -x509` makes it (a CA certificate served as the
/// server's own, which WebPKI refuses as an end entity), is trusted with `[target] ca_file`, as the guide says
/// and as curl's `--cacert` does; another CA's file still does not make it trusted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_signed_certificate_named_in_ca_file_is_trusted() {
    let stub = H2Stub::http2(H2Options { alpn: Some(H2), self_signed: true, ..H2Options::default() }).await;
    let own = ca_file().with_file_name("self-signed.crt");
    let text = scenario(&stub.url(), "http2", "", "/fast", 20, 1);
    let trusted = text.replace(&ca_file().display().to_string(), &own.display().to_string());
    let measurement = run_scenario(&trusted, &[]).await;
    let fast = endpoint(&measurement, "GET /fast");
    assert_eq!((fast.requests, fast.errors), (20, 0), "{:?}", fast.error_samples);
    let measurement = run_scenario(&text, &[]).await;
    assert_eq!(measurement.results.status, RunStatus::Failed, "{:?}", measurement.results.validity_reasons);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_follows_a_server_that_chooses_http1_in_alpn_and_says_so() {
    let stub = H2Stub::http1_only(Some(HTTP1)).await;
    let measurement = run_scenario(&scenario(&stub.url(), "auto", "", "/fast", 50, 1), &[]).await;
    let fast = endpoint(&measurement, "GET /fast");
    assert_eq!((fast.requests, fast.errors), (50, 0), "{:?}", fast.error_samples);
    let report = connection(&measurement);
    assert_eq!(report.negotiated, WireProtocol::Http1);
    // The HTTP/1.1 connections it went over, as the server counted them (it answered none as 0).
    let accepted = stub.connections.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(report.connections_opened, accepted, "{report:?}");
    assert!(accepted >= 1);
    // "auto" of an http:// target is HTTP/1.1 (HTTP/2 is negotiated over TLS only), and says so.
    let plain = H2Stub::http1_only(None).await;
    let measurement = run_scenario(&scenario(&plain.url(), "auto", "", "/fast", 20, 1), &[]).await;
    let report = connection(&measurement);
    assert_eq!(report.negotiated, WireProtocol::Http1);
    assert_eq!(report.connections_opened, plain.connections.load(std::sync::atomic::Ordering::Relaxed));
    // An HTTP/2 server is spoken to in HTTP/2 when it agrees.
    let h2 = H2Stub::http2(H2Options { alpn: Some(&[b"h2", b"http/1.1"]), ..H2Options::default() }).await;
    let measurement = run_scenario(&scenario(&h2.url(), "auto", "", "/fast", 20, 1), &[]).await;
    assert_eq!(connection(&measurement).negotiated, WireProtocol::H2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asking_http2_of_an_http1_only_server_fails_the_run_and_says_why() {
    let plain = H2Stub::http1_only(None).await;
    let tls = H2Stub::http1_only(Some(HTTP1)).await;
    for (stub, why) in [
        (&plain, "does not speak HTTP/2 over plain TCP"),
        (&tls, "refused every protocol offered in TLS's ALPN (h2): it does not speak them; protocol = \"auto\""),
    ] {
        refused_as_not_http2(&stub.url(), why).await;
    }
    // Python's http.server answers the preface with an HTTP/0.9 error page (no status line) and hangs up:
    // refused the same way, not counted as a server that was down.
    let page = http09_server().await;
    refused_as_not_http2(&page, "the server answered, but not in HTTP/2: it does not speak HTTP/2 over plain TCP")
        .await;
}

async fn refused_as_not_http2(url: &str, why: &str) {
    let measurement = run_scenario(&scenario(url, "http2", "", "/fast", 20, 1), &[]).await;
    assert_eq!(measurement.results.status, RunStatus::Failed, "{:?}", measurement.results.validity_reasons);
    let fast = endpoint(&measurement, "GET /fast");
    let samples = fast.error_samples.get("protocol").unwrap_or_else(|| panic!("{:?}", fast.error_samples));
    assert!(samples.iter().all(|s| s.contains(why)), "{url}: {samples:?}");
}

/// A plain TCP server on 127.0.0.1 that answers whatever comes with an HTTP/0.9 error page and closes, as
/// Python's http.server answers a request line of `HTTP/2.0`; its URL.
async fn http09_server() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let url = format!("http://{}", listener.local_addr().expect("bound"));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = [0; 64];
            let _ = socket.read(&mut request).await;
            let _ = socket.write_all(b"<!DOCTYPE HTML>\n<html><body><p>Error code: 505</p></body></html>\n").await;
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_past_the_servers_stream_limit_wait_for_a_stream_and_the_wait_counts() {
    // Two streams of 100 ms each carry 20 requests a second; 40 a second arrive, so they queue in the
    // generator, oldest first, and their response times grow with the queue.
    let stub = H2Stub::http2(H2Options { max_streams: Some(2), ..H2Options::default() }).await;
    let measurement = run_scenario(&scenario(&stub.url(), "http2", "", "/delay/100", 40, 2), &[]).await;
    let delayed = endpoint(&measurement, "GET /delay/100");
    assert_eq!((delayed.requests, delayed.errors), (80, 0), "{:?}", delayed.error_samples);
    let report = connection(&measurement);
    assert_eq!((report.max_concurrent_streams, report.connections_opened), (Some(2), 1), "{report:?}");
    // The last of 80 requests served 2 at a time for 100 ms ends near 4 s, intended at 2 s.
    assert!(delayed.p99_us >= 1_500_000, "p99 {} µs hides the queue for a stream", delayed.p99_us);
    assert!(delayed.p50_us >= 500_000, "p50 {} µs hides the queue for a stream", delayed.p50_us);
    // The server's time is its 100 ms, counted from when each stream opened: the wait for one is the
    // generator's queue, not the server's (it read ×10 before: the queue counted as service).
    let service = measurement.service.iter().find(|s| s.endpoint == "GET /delay/100").expect("its service times");
    assert!((100_000..300_000).contains(&service.p99_us), "service p99 {} µs counts the wait", service.p99_us);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_shows_in_p99_over_one_multiplexed_connection() {
    let stub = H2Stub::http2(H2Options::default()).await;
    let measurement = run_scenario(&scenario(&stub.url(), "http2", "", "/stall", 200, 4), &[]).await;
    let stall = endpoint(&measurement, "GET /stall");
    assert_eq!((stall.requests, stall.errors), (800, 0), "{:?}", stall.error_samples);
    assert!(stall.p99_us >= 300_000, "p99 response time {} µs should be near the 1 s stall", stall.p99_us);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_the_server_resets_count_as_stream_reset_with_its_code() {
    let stub = H2Stub::raw(5, 0).await;
    let measurement = run_scenario(&scenario(&stub.url(), "http2", "", "/", 50, 2), &[]).await;
    let root = endpoint(&measurement, "GET /");
    assert_eq!(root.requests, 100);
    assert_eq!(root.errors_by_class.get("stream_reset"), Some(&20), "{:?}", root.error_samples);
    assert_eq!(root.errors, 20, "{:?}", root.error_samples);
    assert!(root.error_samples["stream_reset"][0].contains("INTERNAL_ERROR"), "{:?}", root.error_samples);
    assert_eq!(connection(&measurement).connections_opened, 1, "a reset stream leaves its connection open");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goaway_mid_run_counts_the_streams_it_left_and_the_run_goes_on_over_a_new_connection() {
    // GOAWAY after 30 streams of each connection, with a few of the run's requests in flight each time.
    let stub = H2Stub::raw(0, 30).await;
    let measurement = run_scenario(&scenario(&stub.url(), "http2", "", "/", 100, 2), &[]).await;
    let root = endpoint(&measurement, "GET /");
    assert_eq!(root.requests, 200);
    let goaway = root.errors_by_class.get("goaway").copied().unwrap_or(0);
    assert!(goaway >= 1, "{:?}", root.errors_by_class);
    assert_eq!(root.errors, goaway, "only GOAWAY's streams failed: {:?}", root.error_samples);
    assert!(root.requests - root.errors >= 150, "the run went on: {:?}", root.errors_by_class);
    let report = connection(&measurement);
    assert!(report.connections_opened >= 5, "a new connection after each GOAWAY: {report:?}");
    // Measured whole: finished, or invalid only because this machine was slow (its schedule lag), never for
    // what GOAWAY did to the run.
    crate::support::assert_measured(measurement.results.status, &measurement.results.validity_reasons);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_body_is_capped_and_its_stream_reset_not_its_connection() {
    let stub = H2Stub::http2(H2Options::default()).await;
    let text = scenario(&stub.url(), "http2", "max_body = \"1MB\"", "/huge", 5, 1);
    let measurement = run_scenario(&text, &[]).await;
    let huge = endpoint(&measurement, "GET /huge");
    assert_eq!(huge.errors_by_class.get("body_too_large"), Some(&5), "{:?}", huge.error_samples);
    assert_eq!(connection(&measurement).connections_opened, 1, "capping a body resets its stream only");
}

#[test]
fn bad_protocol_settings_are_refused_at_their_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("not-pem.txt"), "hello").unwrap();
    let path = dir.path().join("scenario.toml");
    let text = "[target]\nbase_url = \"https://localhost:8443\"\nprotocol = \"h3\"\nhttp2_connections = 0\n\
                ca_file = \"not-pem.txt\"\n[[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"/\"\n\
                [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1s\"\nrate = 1\n";
    let errors = degrade::scenario::parse(&path, text, None, &|_| None).unwrap_err().to_string();
    for expected in [
        "scenario.toml:3:12: target.protocol: `h3` is not a protocol; use \"http1\", \"http2\" or \"auto\"",
        "scenario.toml:4:21: target.http2_connections: 0 is not a count from 1 to 1000",
        "scenario.toml:5:11: target.ca_file: not-pem.txt holds no certificate",
    ] {
        assert!(errors.contains(expected), "{expected}\nnot in\n{errors}");
    }
    let devices = text.replace("not-pem.txt", "/dev/zero").replace("\"h3\"", "\"http2\"");
    let errors = degrade::scenario::parse(&path, &devices, None, &|_| None).unwrap_err().to_string();
    assert!(errors.contains("target.ca_file: /dev/zero is not a regular file"), "{errors}");
    // A step's own protocol is checked alike; a WebSocket step opens with HTTP/1.1's upgrade, and refuses one.
    let steps = text.replace(
        "path = \"/\"\n",
        "path = \"/\"\nprotocol = \"spdy\"\n[[flow.step]]\nws = \"connect\"\npath = \"/ws\"\nprotocol = \"http2\"\n",
    );
    let errors = degrade::scenario::parse(&path, &steps, None, &|_| None).unwrap_err().to_string();
    assert!(errors.contains("flow[0].step[0].protocol: `spdy` is not a protocol"), "{errors}");
    assert!(errors.contains("flow[0].step[1].protocol:"), "{errors}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_may_choose_its_own_protocol() {
    // An h2c-only server: the target's HTTP/1.1 fails there, a step's own HTTP/2 does not.
    let stub = H2Stub::http2(H2Options::default()).await;
    let text = format!(
        "[target]\nbase_url = \"{}\"\n\
         [[flow]]\nname = \"one\"\n[[flow.step]]\nname = \"over http1\"\npath = \"/fast\"\n\
         [[flow]]\nname = \"two\"\n[[flow.step]]\nname = \"over http2\"\npath = \"/fast\"\nprotocol = \"http2\"\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"1s\"\nrate = 40\n",
        stub.url()
    );
    let measurement = run_scenario(&text, &[]).await;
    let (http1, http2) = (endpoint(&measurement, "over http1"), endpoint(&measurement, "over http2"));
    assert!(http1.requests > 0 && http1.errors == http1.requests, "{:?}", http1.errors_by_class);
    assert!(http2.requests > 0 && http2.errors == 0, "{:?}", http2.error_samples);
    assert_eq!(connection(&measurement).negotiated, WireProtocol::H2c, "the step's connections are reported");
}
