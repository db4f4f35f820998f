//! `degrade demo` (the whole job on the bundled API) and `degrade demo-target` (that API on its own, with
//! knobs to inject a regression, for trying degrade by hand).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use super::{Exit, shutdown_signal};
use crate::demo::capacity_story::{CAPACITY_SCENARIO, CapacityVerdict};
use crate::demo::story::{self, Options, SLOW_ENDPOINT, SLOW_ROUTE};
use crate::demo::target::{DemoTarget, Knobs};

fn duration(text: &str) -> Result<Duration, String> {
    crate::config::durations::parse_positive(text, "8s or 20s")
}

/// How to tell the demo.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Tell the story, check it went as planned, and exit (0 when it did) instead of serving until Ctrl-C.
    #[arg(long)]
    pub exit: bool,
    /// Where the dashboard listens (port 0: any free port).
    #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// The folder for the demo's degrade.toml, scenario, degrade-demo.db and alerts.log.
    #[arg(long, value_name = "DIR", default_value = "degrade-demo")]
    pub folder: PathBuf,
    /// Nights of history before tonight (the judge needs at least 5).
    #[arg(long, value_name = "N", default_value_t = 6, value_parser = clap::value_parser!(u32).range(5..=30))]
    pub nights: u32,
    /// How long each night's run lasts.
    #[arg(long, value_name = "DURATION", default_value = "8s", value_parser = duration)]
    pub night_length: Duration,
    /// Milliseconds build 1.1.0 adds to GET /boards/{board_id}/cards.
    #[arg(long, value_name = "MS", default_value_t = 80)]
    pub slowdown_ms: u64,
}

pub(super) async fn demo(args: DemoArgs) -> anyhow::Result<Exit> {
    let options = Options {
        folder: args.folder,
        listen: args.listen,
        nights: args.nights,
        night_length: args.night_length,
        slowdown_ms: args.slowdown_ms,
        // The demo deploys each build of its API as this same program's `demo-target`.
        program: std::env::current_exe().context("cannot find the degrade executable to run the demo API with")?,
    };
    let demo = story::tell(&options).await?;
    print_story(&demo, &options);
    let planned = demo.verdict.as_planned();
    if !planned {
        say!("degrade demo: the story did not go as planned (see above); on a busy machine try --night-length 20s");
    }
    if !args.exit {
        println!("Serving until Ctrl-C.");
        shutdown_signal().await;
    }
    demo.close().await;
    Ok(if planned { Exit::Ok } else { Exit::Error })
}

/// What tonight's check found, the alert, and where to look.
fn print_story(demo: &story::Demo, options: &Options) {
    let verdict = &demo.verdict;
    println!();
    print_findings(verdict);
    print_capacity(verdict.capacity.as_ref());
    let said: Vec<String> =
        verdict.alerts.iter().filter_map(|a| a["text"].as_str()).map(|text| format!("\"{text}\"")).collect();
    println!(
        "  alerts delivered: {} ({}), logged in {}",
        verdict.alerts.len(),
        if said.is_empty() { "none".to_owned() } else { said.join(", ") },
        options.folder.join("alerts.log").display()
    );
    print_where_to_look(demo, options);
}

/// Tonight's findings, and anything that went otherwise than planned.
fn print_findings(verdict: &story::StoryVerdict) {
    for f in &verdict.found {
        let in_unit = |v: f64| crate::report::with_unit(&f.metric, v);
        let tonight = in_unit(f.candidate_value);
        // A breached limit has no baseline: it says how far past the limit tonight went.
        let change = match (f.baseline_value, f.limit) {
            (None, Some(limit)) => format!("{tonight}, past its limit {}", in_unit(limit)),
            (baseline, _) => format!(
                "{} → {tonight} ({})",
                baseline.map(in_unit).unwrap_or_default(),
                crate::report::change_text(f.baseline_value, f.candidate_value, f.delta_pct)
            ),
        };
        println!("  worse: {} {}: {change}", f.endpoint, f.metric);
    }
    for run in &verdict.false_alarms {
        println!("  unexpected: night run #{run} of build 1.0.x was judged regressed");
    }
    for f in &verdict.false_findings {
        println!("  unexpected: {} {} judged worse: {}", f.endpoint, f.metric, f.reason);
    }
    if !verdict.as_planned() {
        println!("  tonight's run #{}: {}", verdict.run_id, verdict.summary);
    }
}

/// The dashboard's pages to open, the login, and the CI gate to try.
fn print_where_to_look(demo: &story::Demo, options: &Options) {
    let verdict = &demo.verdict;
    let d = &demo.dashboard;
    println!("\nLook at:\n  {d}/                   every scenario, with its latest status");
    println!("  {d}/scenarios/demo      the trend: {SLOW_ENDPOINT} jumps at build 1.1.0");
    println!("  {d}/runs/{}             tonight's verdict, findings and per-second timeline", verdict.run_id);
    if let Some(capacity) = &verdict.capacity {
        println!("  {d}/scenarios/{CAPACITY_SCENARIO}  the capacity night over night: it falls at build 1.2.0");
        println!("  {d}/runs/{}             build 1.2.0's capacity search, step by step", capacity.run_id);
    }
    println!("  {d}/alerts              the regression episode and the message sent");
    println!(
        "  Acknowledge (and the POST API) asks for a login: any user name, the password in {} (this demo's own \
         token, made for this session)",
        options.folder.join(crate::demo::story::TOKEN_FILE).display()
    );
    println!(
        "Try the CI gate on the same data: degrade --config {} check demo (or check {CAPACITY_SCENARIO})",
        options.folder.join("degrade.toml").display()
    );
}

/// The capacity chapter's verdict: what fell, and anything else judged worse (there should be nothing).
fn print_capacity(capacity: Option<&CapacityVerdict>) {
    let Some(capacity) = capacity else { return };
    match &capacity.capacity {
        Some(f) if f.outcome.is_failure() => println!("  worse: {} at build 1.2.0: {}", CAPACITY_SCENARIO, f.reason),
        _ => println!("  unexpected: build 1.2.0's capacity was not judged regressed: {}", capacity.summary),
    }
    for f in &capacity.false_findings {
        println!("  unexpected: {CAPACITY_SCENARIO} {} {} judged worse: {}", f.endpoint, f.metric, f.reason);
    }
    for run in &capacity.false_alarms {
        println!("  unexpected: capacity run #{run} of build 1.0.x was judged regressed");
    }
}

/// The demo API's knobs.
#[derive(Debug, clap::Args)]
pub struct DemoTargetArgs {
    /// The port to listen on (127.0.0.1).
    #[arg(long, default_value_t = 3000)]
    pub port: u16,
    /// Milliseconds added to every request of --slow-route; fractions are kept to the microsecond (0.25 adds
    /// 250 µs, held on a timer while the server serves others).
    #[arg(long, value_name = "MS", default_value_t = 0.0, value_parser = slowdown_ms)]
    pub slowdown_ms: f64,
    /// A route --slowdown-ms slows, as METHOD /template; repeat it to slow several routes alike. The gRPC
    /// method is the route 'POST /demo.Boards/GetBoard' (served over h2c on the same port).
    #[arg(long, value_name = "ROUTE", default_values_t = [SLOW_ROUTE.to_owned()])]
    pub slow_route: Vec<String>,
    /// The share of the slowed routes' requests that are slowed, from 0 to 1 (0.02 slows one request in
    /// fifty: a change of the tail only).
    #[arg(long, value_name = "SHARE", default_value_t = 1.0)]
    pub slow_share: f64,
    /// Share of requests answered 500, from 0 to 1.
    #[arg(long, value_name = "SHARE", default_value_t = 0.0)]
    pub error_rate: f64,
    /// CPU microseconds of work done after each API request is answered, on a thread of its own: a build
    /// that costs more CPU per request (read at /metrics as process_cpu_seconds_total) with its latency
    /// unchanged while the machine has headroom.
    #[arg(long, value_name = "US", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub burn_cpu_us: u64,
    /// Renderers of GET /boards/{board_id}/export, each holding an export for 25 ms spent waiting: the route
    /// carries at most this many ÷ 25 ms exports a second (4: 160), whatever else the machine runs.
    #[arg(long, value_name = "N", default_value_t = crate::demo::export::EXPORT_WORKERS,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::demo::export::MAX_EXPORT_WORKERS)))]
    pub export_workers: u32,
    /// The build id /version reports.
    #[arg(long, value_name = "ID", default_value = "1.0.0")]
    pub build: String,
}

/// A slowdown of 0 to 600,000 ms (ten minutes, past any timeout).
fn slowdown_ms(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(ms) if ms.is_finite() && (0.0..=600_000.0).contains(&ms) => Ok(ms),
        _ => Err(format!("`{text}` is not a number of milliseconds from 0 to 600000")),
    }
}

pub(super) async fn demo_target(args: DemoTargetArgs) -> anyhow::Result<Exit> {
    if !(0.0..=1.0).contains(&args.error_rate) {
        anyhow::bail!("--error-rate {} is not a share between 0 and 1", args.error_rate);
    }
    let knobs = Knobs::new(&args.build);
    if !(0.0..=1.0).contains(&args.slow_share) {
        anyhow::bail!("--slow-share {} is not a share between 0 and 1", args.slow_share);
    }
    knobs.slow_down_share(&args.slow_route, Duration::from_secs_f64(args.slowdown_ms / 1000.0), args.slow_share);
    knobs.fail(args.error_rate);
    knobs.burn_cpu(args.burn_cpu_us);
    knobs.export_workers.store(args.export_workers, std::sync::atomic::Ordering::Relaxed);
    let target = DemoTarget::start(SocketAddr::from(([127, 0, 0, 1], args.port)), knobs).await?;
    println!(
        "the demo API (build {}) is at {}/ — GET /boards, /boards/ID/cards, /boards/ID/export, /search?q=…, \
         /version, and /boards/ID/live (a WebSocket)",
        args.build,
        target.url()
    );
    shutdown_signal().await;
    Ok(Exit::Ok)
}
