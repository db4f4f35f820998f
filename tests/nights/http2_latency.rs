//! Latency over HTTP/2 within ±3 ms of a server's fixed delay, as the server held it at its socket (its
//! median, by its own clock): hyper's HTTP/2 server answering after 50 ms, loaded at a paced rate over h2c and
//! over TLS with ALPN, so the time h2 and the connection's own task add (frames read by another task than the
//! request's) is shown to stay out of the figures. The same delay over HTTP/1.1 from hyper's HTTP/1.1 server
//! is measured between them, and what h2c reads more than it is printed: how much more it may read is a speed
//! target, held by `ci/bench-h2-latency.sh` in the release profile, not by a test on this machine's speed.
//!
//! What the gap is made of (stamps at each step of one request, scratch instrumentation; 4 s at 25/s, a
//! 2-core machine at load 4-7, medians, µs, debug build / release build): the pacer's timer waking late
//! 175 / 70 and the session starting and rendering its request 170 / 38, as over HTTP/1.1; then h2's request
//! built from the engine's bytes 82 / 19 and h2's connection task putting it on the wire 240 / 90, where
//! HTTP/1.1's session writes it in 50 / 30 (of the 240: 35 the one yield that gathers a burst's frames into
//! one write, `engine/http2/watched.rs`); then the stub's wake-up to read it, 65 / 20. The answer's end is the
//! kernel's stamp of its arrival, so nothing after it counts.

use degrade::engine::Measurement;
use degrade::model::WireProtocol;

use crate::support::h2_stub::{H2Options, H2Stub, ca_file, median_held};
use crate::support::{ONE_HEAVY_TEST_AT_A_TIME, run_scenario};

/// The server's delay, and how far the median may be from it.
const DELAY_MS: i64 = 50;
const WITHIN_US: i64 = 3_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_delay_reads_as_itself_within_3_ms_over_h2c_tls_and_http1() {
    let _alone = ONE_HEAVY_TEST_AT_A_TIME.lock().await;
    let plain = H2Stub::http2(H2Options::default()).await;
    let tls = H2Stub::http2(H2Options { alpn: Some(&[b"h2"]), ..H2Options::default() }).await;
    let http1 = H2Stub::http1_only(None).await;
    let h2c = off_at_socket(&plain, Some(WireProtocol::H2c)).await;
    let over_http1 = off_at_socket(&http1, None).await;
    off_at_socket(&tls, Some(WireProtocol::H2)).await;
    // Seen in a debug build: +198 to +365 µs at load 4-7, +346 to +514 µs at load 1.4 (a quieter machine reads
    // more: each of h2's hops between tasks may wake an idle core, and a virtual one wakes slowly).
    eprintln!("h2c read {h2c:+} µs from the stub's time at its socket, HTTP/1.1 {over_http1:+} µs");
}

/// Runs 4 s of the delayed route against `stub` over `wire` (HTTP/1.1 when `None`) and returns how far its
/// median read from what the stub held at its socket, µs, checked within [`WITHIN_US`].
async fn off_at_socket(stub: &H2Stub, wire: Option<WireProtocol>) -> i64 {
    let (protocol, name) = wire.map_or(("http1", "HTTP/1.1".to_owned()), |w| ("http2", format!("{w:?}")));
    let text = format!(
        "[target]\nbase_url = \"{}\"\nprotocol = \"{protocol}\"\nca_file = \"{}\"\n\
         [[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"/delay/{DELAY_MS}\"\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"4s\"\nrate = 25\n",
        stub.url(),
        ca_file().display()
    );
    let measurement = run_scenario(&text, &[]).await;
    let negotiated = measurement.results.load_summary.connection.map(|c| c.negotiated);
    assert_eq!(negotiated, wire, "{name}");
    let delayed = measurement.results.endpoints.iter().find(|e| e.endpoint == format!("GET /delay/{DELAY_MS}"));
    let delayed = delayed.expect("the endpoint was measured");
    assert_eq!((delayed.requests, delayed.errors), (100, 0), "{:?}", delayed.error_samples);
    // Against what the stub held each request for at its socket: hyper's work around the handler is the
    // server's time, and so is its timer's overshoot. Its handler must have held about the delay asked.
    let (served, handled) = (median_held(&stub.at_socket), median_held(&stub.held));
    assert!((DELAY_MS * 1000..DELAY_MS * 1000 + 10_000).contains(&handled), "{name}: the stub held {handled} µs");
    assert!(served >= handled, "{name}: {served} µs at the socket, {handled} µs in the handler");
    let off = delayed.p50_us - served;
    eprintln!(
        "{name}: p50 {} µs, the stub held {served} µs at its socket ({handled} µs in its handler) at the median: \
         {off:+} µs",
        delayed.p50_us
    );
    assert!(off.abs() <= WITHIN_US, "{name}: {}", far(&measurement, delayed.p50_us, served));
    off
}

/// Why a median is too far from the stub's: the figures, and how fast the machine was.
fn far(measurement: &Measurement, p50_us: i64, served: i64) -> String {
    let machine = &measurement.results.load_summary;
    format!(
        "p50 {p50_us} µs is {} µs from the {served} µs the stub held its {DELAY_MS} ms delay for at its socket (the \
         machine's loopback echo: p50 {:?} µs, p90 {:?} µs)",
        p50_us - served,
        machine.machine_echo_p50_us,
        machine.machine_echo_p90_us
    )
}
