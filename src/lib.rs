//! degrade: nightly degradation testing for HTTP APIs.
//!
//! Every night one fixed, realistic scenario runs against the latest build of a service; the numbers are
//! stored forever, drawn as trends, and a build that got slower fails the release. Data flows through the
//! modules in this order:
//!
//! ```text
//! cli ─▶ config ─▶ scenario ─▶ engine ─▶ metrics ─▶ store ─▶ analysis ─▶ report (check)
//!  │       │                                          └────▶ web (serve: pages, charts, JSON API)
//!  │       └─ schedules, gates, webhooks, secrets (from the environment only)
//!  ├─ pipeline: claim → deploy → health → build id → engine → store → judge → episodes (run, check
//!  │            --run-now, the API, the scheduler) ─▶ notify (outbox → Slack/JSON webhooks)
//!  └─ one function per subcommand, turned into an exit code (0 ok, 1 regression, 2 error, 3 inconclusive)
//! ```
//!
//! Every layer speaks [`model`]'s types (runs, figures, metrics, baselines, verdicts). A module uses only
//! modules below it — `secret`/`outside_text`/`clock` ← `model` ← `metrics` ← `analysis` ← `store` ←
//! `config` ← `tape` ← `scenario`/`report` ← `engine` ← `latest_build`/`notify` ← `pipeline` ← `scheduler`/`web` ←
//! `service`/`demo` ← `cli` — and the `layers` test checks it; ARCHITECTURE.md has the tour.

/// The command line: parsing arguments and running one subcommand.
pub mod cli;
/// `degrade.toml`: parsed, validated, secrets from the environment.
pub mod config;
/// The shared vocabulary: runs, figures, metrics, baselines, verdicts, findings (pure types).
pub mod model;
/// The build under test: its id from a version URL or command.
pub mod latest_build;
/// The server's side of a night: Prometheus exporters scraped during the measured stages.
pub mod telemetry;
/// Request tapes: real traffic imported from access logs and HAR recordings, scrubbed, routed, replayed.
pub mod tape;
/// Scenario files: flows, data, load, parsed and validated into a plan.
pub mod scenario;
/// The load engine: pacer, sessions on its own HTTP/1.1 client, the recorder.
pub mod engine;
/// What the numbers mean: error classes, histogram summaries, run validity (pure).
pub mod metrics;
/// Where runs, results, verdicts and alert state are kept (SQLite or PostgreSQL).
pub mod store;
/// Judging runs against earlier ones: baselines, the regression detector, verdicts.
pub mod analysis;
/// The one chain every run goes through: claim, deploy, health, build id, load, store, judge, alert episodes.
pub mod pipeline;
/// Alerts: Slack and JSON webhook messages, delivered from the outbox with retries.
pub mod notify;
/// The nightly scheduler of `degrade serve`: cron jobs per scenario, catch-up, missing-run alerts.
pub mod scheduler;
/// What `degrade check` prints: human, JSON, JUnit and Markdown reports.
pub mod report;
/// The dashboard and JSON API served by `degrade serve`.
pub mod web;
/// `degrade serve` as a library call: dashboard, scheduler and alert courier until shutdown.
pub mod service;
/// `degrade demo`: the bundled demo API, a local alert receiver, and the story told on them.
pub mod demo;
/// The wall clock runs, verdicts, episodes and leases are stamped with: the system's, shifted, or manual.
pub mod clock;
/// Secrets that cannot be printed by accident, and URL redaction.
pub mod secret;
/// The Prometheus text exposition format and series selectors, read without knowing anything of degrade.
pub mod exposition;
/// Text from outside (targets, receivers, build ids) made safe for terminals: control characters escaped.
pub mod outside_text;
