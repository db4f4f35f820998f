//! degrade's tests of a few short real nights whose verdicts rest on latency: a binary apart from
//! `tests/degrade`, because a sub-millisecond route's p95 moves by half when anything else runs on a 2-core
//! machine, and a test that asserts "unchanged nights are not flagged" must not be judged on its
//! neighbours. Cargo runs test binaries one after another, so nothing of `tests/degrade` runs beside these;
//! each test holds `support::ONE_HEAVY_TEST_AT_A_TIME`, so they run one at a time among themselves too.
//! They share `tests/degrade/support` (its fixtures: the real binary, temp databases, stub targets) and add
//! two targets of their own: `pool_target` (a fixed worker pool, a knee known in advance) and `slow_target`
//! (slow for a set number of requests).
//!
//! - `tails`: the tail test on real nights of `degrade demo-target`: a change to 2 % of one route's requests
//!   caught on that route alone, unchanged nights not flagged.
//! - `confirm`: confirmation reruns of `check --run-now` on a target that is slow for a set number of requests.
//! - `capacity`: capacity nights against a worker pool whose knee is known in advance: found, stored on SQLite
//!   and PostgreSQL, a fall judged; a step past a telemetry limit, scraped or read from Debian's Prometheus,
//!   leaves the zone on it; bad `[scenario.capacity]` sections refused naming the field.
//! - `capacity_nights`: ten capacity nights of an unchanged build, no capacity finding.
//! - `segments_latency`: a night split across three `--segment k/3` processes against a fixed-latency target
//!   reads the percentiles of one process running the same plan.
//! - `segments_confirm`: a split night's regression confirmed by every segment rerunning together, or refuted
//!   when the target was slow for the first night only.
//! - `http2_latency`: a fixed delay of hyper's HTTP/2 server read within ±3 ms of what it held at its socket, over
//!   h2c, TLS with ALPN and HTTP/1.1 (hyper's HTTP/1.1 server); how much more h2c reads is printed, and held by
//!   `ci/bench-h2-latency.sh`.
//! - `grpc_latency`: a gRPC method's fixed delay read within ±3 ms of what the stub held at its socket.
//! - `telemetry_judged`: the demo target's CPU scraped through real nights; a build doing twice the CPU work
//!   per request, its latency unchanged, is regressed on CPU per 1,000 requests alone, confirmed, alerted once.

// A stored rate must come back bit for bit, so exact float comparison is the point of those assertions.
#![allow(clippy::float_cmp)]

mod capacity;
mod capacity_nights;
mod confirm;
mod grpc_latency;
mod http2_latency;
mod pool_target;
mod segments_latency;
mod segments_confirm;
mod slow_target;
mod tails;
mod telemetry_judged;

// The fixtures are shared with `tests/degrade`, which uses all of them; this binary uses a few.
#[allow(dead_code, reason = "the fixtures of tests/degrade; this binary uses a few of them")]
#[path = "../degrade/support/mod.rs"]
mod support;
