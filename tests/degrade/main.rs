//! degrade's integration tests: one binary (one link on a 2-core machine), one module per area. The tests of a
//! few short real nights whose verdicts rest on latency are in `tests/nights`, a binary of their own.
//!
//! - `support`: every fixture: temp directories, a fresh SQLite file or PostgreSQL database per test, the real
//!   binary, the app in-process (`TestApp`), stored nights, configs, stub targets and a stub webhook receiver.
//! - `store_story`: the storage story, run against SQLite always and PostgreSQL when
//!   `DEGRADE_TEST_POSTGRES_URL` is set; `store_trends` the trends a season of runs reads back, the same way.
//! - `config_errors`: every config mistake gets file:line:column and the field.
//! - `cli`: `degrade --help`, `init`, `validate`, `migrate` through the real binary.
//! - `dashboard`: the pages and JSON API over real HTTP, on SQLite and PostgreSQL; `dashboard_access` its
//!   doors: unknown paths, tokens, half-sent requests, cross-site posts, framing.
//! - `browser`: every page of the demo, crawled from the overview, in headless Chromium at 1400 and 400 px:
//!   overflow, screenshots, links.
//! - `glance`: one way to write a change (`check`, alerts, dashboard); only findings coloured or labelled as
//!   such; builds heading the grid; invalid runs drawn apart on trends.
//! - `check`: the CI gate and `degrade detect` through the real binary, on runs stored through the store.
//! - `engine`: the load engine against the stub targets; scenario validation errors.
//! - `echoed_secrets`: a token read with `env()` and echoed back by a server is hidden in error samples.
//! - `run_cli`: `degrade run` and `validate` of scenarios through the real binary; `unreached_steps`: a step
//!   no request reached is said to be unmeasured.
//! - `alerts`: episodes, Slack/JSON messages and the outbox courier, on runs judged by the real judge;
//!   `alerts_widened`: a second route regressing during an open episode is told once, and judged before it
//!   resolves.
//! - `nightly`: the nightly chain, the scheduler, leases across instances, and `degrade serve` itself.
//! - `hostile_input`: overflowing durations, sizes, ports, devices as files, bad names: refused, never a panic.
//! - `control_characters`: NUL and other control characters refused by `validate` in names, header values and
//!   paths; text carrying a NUL stored on SQLite and PostgreSQL.
//! - `chaos`: nights killed or cut off at every fault point in turn (and at random: `ci/chaos.sh N`), the
//!   exactly-once invariants checked after each against the store and the webhook receiver.
//! - `outages`: a SQLite file locked by another process and a PostgreSQL cluster of the test's own restarted
//!   mid-night: the night waits, is kept once and judged once.
//! - `killed_nights`: degrade killed at a fault point (`DEGRADE_FAULT`) through the real binary, and what
//!   the next degrade finishes: a night killed before its verdict is judged and alerted once.
//! - `held_back_machine`: nights measured on a busy or held-back machine, left out and excused.
//! - `layers`: every module of `src/` uses only modules of a lower layer (the table ARCHITECTURE.md draws).
//! - `demo`: the bundled demo API and its knobs (`degrade demo --exit` runs in `.ci/run`).
//! - `docs`: every `degrade` command the README and the manual write parses, and every output they quote is
//!   marked with the test that compares it with what degrade prints (`support::quoted`).
//! - `manual_quotes`: the manual's quotes of `validate`, the JSON API and the webhook payloads.
//! - `confirm_note`: a confirmation pair says what decided it, whatever later checks of its rerun stored.
//! - `local_limit`: a night on a machine out of file descriptors is invalid, its failed requests degrade's own.
//! - `manual_examples`: every TOML example of the README and the manual is accepted by degrade's checkers,
//!   every tape example by the tape reader.
//! - `reference`, `reference_cli`: the manual's reference lists exactly the keys, values, functions,
//!   statuses, error classes, commands, options and exit codes degrade has (`support::toml_keys`).
//! - `book`: the manual builds with mdBook without a warning and its links resolve (ignored without mdbook;
//!   `.ci/run` installs it).
//! - `tape`: `degrade tape import` of the committed fixtures, and tape replays against a recording server.
//! - `segments`: a night split across three `degrade run --segment k/3` processes meeting in PostgreSQL,
//!   merged into one run whose counts equal the plan; two processes for one index, a barrier timeout, a killed
//!   segment, another scenario, a wrong clock.
//! - `route_keys`: endpoints keyed by their query parameter names, in scenario runs, tape imports and replays,
//!   and the runs stored under the old keys, which stay a series of their own.
//! - `tape_privacy`: a corpus of recordings full of private values, none of which may reach a tape or flows.
//! - `telemetry`: a night scraping Debian's real node_exporter (and postgres_exporter on PostgreSQL), stored
//!   and drawn; exporters that hang, fail or send garbage, and the night kept; `validate` and `telemetry probe`
//!   (skipped, saying so, where the exporters are not installed; `.ci/run` installs them).
//! - `telemetry_prometheus`: a night whose series are PromQL queries asked of Debian's real Prometheus server
//!   scraping a real node_exporter; a bad query, and servers that are absent, hang, fail or answer garbage, the
//!   night kept; `validate` and `telemetry probe` (skipped, saying so, without Prometheus).
//! - `websocket`: WebSocket steps against the WebSocket stub (`support::ws_stub`): awaits timed from the send's
//!   intended start, pushes counted on their class, pings answered, every failure in its class;
//!   `websocket_frames`: the connection dropped (1006), a 1011 close, fragmented messages with pings between.
//! - `kubernetes`: the Kubernetes recipe (`deploy/kubernetes/`) against Kubernetes' schemas (kubernetes-validate,
//!   skipped, saying so, where it is not installed; `.ci/run` installs it), its containers' arguments and the
//!   image's CMD parsed by degrade's own parser, its ConfigMap checked by degrade's checkers, the night's
//!   Indexed Job split the same in its three places; `.dockerignore` lets in every file the image's Rust stage
//!   reads. `ci/container.sh` builds and runs the image itself.
//! - `http2`: the engine over HTTP/2 against hyper's HTTP/2 server and a raw `h2` one (`support::h2_stub`): h2c
//!   and TLS with ALPN, the negotiated protocol kept, the stream limit's queue timed, a stall in p99, stream
//!   resets and GOAWAY in their classes, a huge body capped, an HTTP/1.1-only server refused clearly.
//! - `har_memory`: hostile HARs imported in bounded memory, measured under `/usr/bin/time -v` (skipped without
//!   it; `.ci/run` installs it).

// Stored figures must come back bit for bit, so exact float comparison is the point of these assertions.
#![allow(clippy::float_cmp)]

mod check;
mod cli;
mod config_errors;
mod control_characters;
mod alerts;
mod alerts_widened;
mod book;
mod browser;
mod dashboard;
mod dashboard_access;
mod echoed_secrets;
mod demo;
mod distributions;
mod docs;
mod engine;
mod grpc;
mod grpc_reflection;
mod http2;
mod glance;
mod har_memory;
mod held_back_machine;
mod hostile_input;
mod layers;
mod chaos;
mod confirm_note;
mod confirm_wait;
mod killed_nights;
mod kubernetes;
mod left_behind;
mod local_limit;
mod manual_examples;
mod manual_quotes;
mod nightly;
mod outages;
mod reference;
mod reference_cli;
mod route_keys;
mod run_cli;
mod run_elsewhere;
mod store_story;
mod store_trends;
mod tape;
mod tape_grpc;
mod tape_privacy;
mod unreached_steps;
mod telemetry;
mod telemetry_prometheus;
mod segments;
mod segment_alerts;
mod segment_lease;
mod split_baseline;
mod websocket;
mod websocket_frames;
mod support;
