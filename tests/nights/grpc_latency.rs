//! Latency of gRPC calls within ±3 ms of what the server took at its socket (its median, by its own clock,
//! from the request's headers read to the response's end written): the tests' gRPC stub (`Echo` answering
//! after 50 ms) called at a paced rate over h2c, so what framing, Protobuf encoding and decoding and the
//! HTTP/2 connection's task add is shown to stay out of the figures.

use crate::support::grpc_stub::{GrpcStub, proto_folder};
use crate::support::h2_stub::median_held;
use crate::support::{ONE_HEAVY_TEST_AT_A_TIME, run_scenario};

/// The server's delay, and how far the median may be from it.
const DELAY_MS: i64 = 50;
const WITHIN_US: i64 = 3_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_delay_of_a_grpc_method_reads_as_itself_within_3_ms() {
    let _alone = ONE_HEAVY_TEST_AT_A_TIME.lock().await;
    let stub = GrpcStub::start().await;
    let text = format!(
        "[target]\nbase_url = \"{}\"\n[proto]\nfiles = [\"{}\"]\n\
         [[flow]]\nname = \"f\"\n[[flow.step]]\ngrpc = \"stub.Stub/Echo\"\n\
         json = {{ text = \"{{{{ seq() }}}}\", delay_ms = {DELAY_MS} }}\n\
         expect = {{ json = [{{ path = \"$.number\", eq = 7 }}] }}\n\
         [load]\nmodel = \"open\"\n[[load.stage]]\nduration = \"4s\"\nrate = 25\n",
        stub.url(),
        proto_folder().join("stub.proto").display()
    );
    let measurement = run_scenario(&text, &[]).await;
    let echo = measurement.results.endpoints.iter().find(|e| e.endpoint == "gRPC stub.Stub/Echo");
    let echo = echo.expect("the call was measured");
    assert_eq!((echo.requests, echo.errors), (100, 0), "{:?}", echo.error_samples);
    // Against what the stub held each call for at its socket (its own work and its timer's overshoot are the
    // server's time); its handler must have held about the delay asked.
    let (served, handled) = (median_held(&stub.at_socket), median_held(&stub.held));
    assert!((DELAY_MS * 1000..DELAY_MS * 1000 + 10_000).contains(&handled), "the stub held {handled} µs");
    assert!(served >= handled, "{served} µs at the socket, {handled} µs in the handler");
    let off = echo.p50_us - served;
    eprintln!(
        "p50 {} µs, the stub held {served} µs at its socket ({handled} µs in its handler) at the median: {off:+} µs",
        echo.p50_us
    );
    let machine = &measurement.results.load_summary;
    assert!(
        off.abs() <= WITHIN_US,
        "p50 {} µs is {off} µs from the {served} µs the stub held its {DELAY_MS} ms delay for at its socket (the \
         machine's loopback echo: p50 {:?} µs, p90 {:?} µs)",
        echo.p50_us,
        machine.machine_echo_p50_us,
        machine.machine_echo_p90_us
    );
}
