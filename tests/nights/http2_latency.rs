//! Latency over HTTP/2 within ±3 ms of a server's fixed delay, as the server held it (its median, by its own
//! clock): hyper's HTTP/2 server answering after 50 ms,
//! loaded at a paced rate over h2c and over TLS with ALPN, so the time h2 and the connection's own task add
//! (frames read by another task than the request's) is shown to stay out of the figures.

use degrade::model::WireProtocol;

use crate::support::h2_stub::{H2Options, H2Stub, ca_file, median_held};
use crate::support::{ONE_HEAVY_TEST_AT_A_TIME, run_scenario};

/// The server's delay, and how far the median may be from it.
const DELAY_MS: i64 = 50;
const WITHIN_US: i64 = 3_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_delay_reads_as_itself_within_3_ms_over_h2c_and_tls() {
    let _alone = ONE_HEAVY_TEST_AT_A_TIME.lock().await;
    let plain = H2Stub::http2(H2Options::default()).await;
    let tls = H2Stub::http2(H2Options { alpn: Some(&[b"h2"]), ..H2Options::default() }).await;
    for (stub, wire) in [(&plain, WireProtocol::H2c), (&tls, WireProtocol::H2)] {
        let text = format!(
            "[target]\nbase_url = \"{}\"\nprotocol = \"http2\"\nca_file = \"{}\"\n\
             [[flow]]\nname = \"f\"\n[[flow.step]]\npath = \"/delay/{DELAY_MS}\"\n\
             [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"4s\"\nrate = 25\n",
            stub.url(),
            ca_file().display()
        );
        let measurement = run_scenario(&text, &[]).await;
        let connection = measurement.results.load_summary.connection.expect("an HTTP/2 run reports it");
        assert_eq!(connection.negotiated, wire);
        let delayed = measurement.results.endpoints.iter().find(|e| e.endpoint == format!("GET /delay/{DELAY_MS}"));
        let delayed = delayed.expect("the endpoint was measured");
        assert_eq!((delayed.requests, delayed.errors), (100, 0), "{:?}", delayed.error_samples);
        // Against what the stub held each stream for at its socket: hyper's work around the handler is the
        // server's time, and so is its timer's overshoot. Its handler must have held about the delay asked.
        let (served, handled) = (median_held(&stub.at_socket), median_held(&stub.held));
        assert!((DELAY_MS * 1000..DELAY_MS * 1000 + 10_000).contains(&handled), "{wire:?}: the stub held {handled} µs");
        assert!(served >= handled, "{wire:?}: {served} µs at the socket, {handled} µs in the handler");
        let off = delayed.p50_us - served;
        eprintln!(
            "{wire:?}: p50 {} µs, the stub held {served} µs at its socket ({handled} µs in its handler) at the \
             median: {off:+} µs",
            delayed.p50_us
        );
        let machine = &measurement.results.load_summary;
        assert!(
            off.abs() <= WITHIN_US,
            "{wire:?}: p50 {} µs is {off} µs from the {served} µs the stub held its {DELAY_MS} ms delay for at its \
             socket (the machine's loopback echo: p50 {:?} µs, p90 {:?} µs)",
            delayed.p50_us,
            machine.machine_echo_p50_us,
            machine.machine_echo_p90_us
        );
    }
}
