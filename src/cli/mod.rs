//! The command line: what users type, parsed by clap, and one function per subcommand.
//!
//! Arguments are parsed here and handed to the library as validated values; every subcommand returns an
//! [`Exit`], whose codes mean the same thing for every command so CI scripts can rely on them.

/// `eprintln!` that ignores a closed standard error (`degrade … 2>&1 | head`): a message nobody can read
/// any more is no reason to panic, and the exit code still says what happened.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod check;
mod confirmation_wait;
mod demo;
mod detect;
mod detect_runs;
mod init;
mod live;
mod migrate;
mod notify;
mod proto;
mod run;
mod run_report;
mod segment;
mod segment_check;
mod serve;
mod tape;
mod tape_report;
mod telemetry;
mod validate;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::{Config, DEFAULT_CONFIG_FILE};

/// What a command concluded, as an exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: done, or the check passed.
    Ok = 0,
    /// 1: a regression was found or an absolute gate was breached.
    Regression = 1,
    /// 2: bad arguments or config, database or target unreachable.
    Error = 2,
    /// 3: too few baseline runs, or the run was invalid.
    Inconclusive = 3,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit as u8)
    }
}

const ABOUT: &str = "Nightly degradation testing for HTTP APIs: run one realistic scenario every night, keep the \
numbers, show the trend, and fail the release whose build got slower.";

const EXAMPLES: &str = "\
Getting started:
  degrade init                       write a commented degrade.toml here
  degrade validate                   check it; errors name file:line:column and the field
  degrade migrate                    create or upgrade the database it points at

In CI, after a nightly or on-demand run:
  degrade check --baseline last-7d   judge the latest run; exit 1 on a regression

Environment:
  DEGRADE_CONFIG                     config file to read instead of ./degrade.toml
  DEGRADE_DATABASE_URL               database URL, overriding the file; the place for a password:
                                     postgres://user:password@host:5432/degrade
  DEGRADE_SERVER_LISTEN              overrides [server] listen
  DEGRADE_SERVER_PUBLIC_URL          overrides [server] public_url
  DEGRADE_LOG                        log filter, e.g. debug or degrade=trace

Exit codes: 0 ok or passed, 1 regression or gate breached, 2 error; 3 an invalid run (`run`), or an
inconclusive verdict with `check --strict` (an inconclusive check exits 0 and says so).";

/// The `degrade` command line.
#[derive(Debug, Parser)]
#[command(name = "degrade", version, about = ABOUT, after_help = EXAMPLES, max_term_width = 110)]
pub struct Cli {
    /// The config file [default: degrade.toml]. Also accepted after the subcommands that read one.
    #[arg(long, short, env = "DEGRADE_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Log more (-v: debug, -vv: trace). DEGRADE_LOG sets a filter instead.
    #[arg(long, short, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// `--config` after a subcommand that reads a config (`degrade check --config ci/degrade.toml`). Not a global
/// option: `demo`, `demo-target` and `detect` read none, and their help must not offer it.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConfigArg {
    /// The config file [default: degrade.toml, or DEGRADE_CONFIG].
    #[arg(long, short, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a commented degrade.toml, and scenarios/example.toml beside it, to start from.
    #[command(after_help = "Example:\n  degrade init && $EDITOR degrade.toml && degrade validate")]
    Init {
        /// `--config` after the subcommand.
        #[command(flatten)]
        config: ConfigArg,
        /// Overwrite an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Check degrade.toml (and the scenario files it names) without running anything.
    #[command(after_help = "Examples:\n  degrade validate\n  degrade --config ci/degrade.toml validate\n  \
        degrade validate scenarios/checkout.toml\n\n\
        Prints how each schedule was understood and when it fires next. Exits 2 on any error.")]
    Validate {
        /// `--config` after the subcommand.
        #[command(flatten)]
        config: ConfigArg,
        /// Check this scenario file alone, without a degrade.toml.
        #[arg(value_name = "SCENARIO_FILE")]
        scenario: Option<PathBuf>,
    },
    /// Create or upgrade the database's tables, then print the schema version.
    #[command(
        after_help = "Examples:\n  degrade migrate\n  DEGRADE_DATABASE_URL=postgres://degrade@db.internal/degrade degrade migrate\n\n\
        Every command migrates on connect; run this to prepare a shared PostgreSQL database up front."
    )]
    Migrate(ConfigArg),
    /// Run a scenario now against its target, store the run, and print the numbers.
    #[command(
        after_help = "Examples:\n  degrade run                          the only [[scenario]] in degrade.toml\n  \
        degrade run checkout --duration 20s --rate-scale 0.2   a short, gentle smoke run\n  \
        degrade run scenarios/checkout.toml  a scenario file without a degrade.toml\n  \
        degrade run --build $GIT_SHA --format json\n\n\
        Response times count from when each request should have started (no coordinated omission). The run is \
        stored even when invalid (the generator fell behind) or stopped with Ctrl-C (as aborted).\n\
        Exits 0 for a valid run, 3 for an invalid one, 2 on errors or when stopped."
    )]
    Run(run::RunArgs),
    /// Judge the latest run against its baseline: the CI gate.
    #[command(after_help = "Examples:\n  degrade check --baseline last-7d\n  \
        degrade check --scenario checkout --format junit > degrade.xml\n  \
        degrade check --run 42 --baseline build:1.4.2 --format markdown >> \"$GITHUB_STEP_SUMMARY\"\n  \
        degrade check --run-now --scenario checkout   deploy, run and judge in one step\n\n\
        Exits 0 when the run passed, 1 on a regression or breached gate, 2 on an error, and 3 when the verdict is \
        inconclusive (too few baseline runs, or an invalid run) with --strict; without it, inconclusive exits 0.")]
    Check(check::CheckArgs),
    /// Run the regression detector on raw series: JSON Lines in, JSON Lines out.
    #[command(
        after_help = "Example:\n  echo '{\"id\":\"a\",\"direction\":\"higher_is_worse\",\"history\":[{\"value\":100},\
        {\"value\":102},{\"value\":98},{\"value\":101},{\"value\":99}],\"candidate\":{\"value\":140}}' | degrade detect\n\n\
        Input lines: {\"id\", \"metric\", \"kind\", \"direction\": \"higher_is_worse\"|\"lower_is_worse\",\n\
        \"history\": [{\"date\", \"value\"}], \"candidate\": {\"date\", \"value\"}}\n\
        Output lines: {\"id\", \"alert\", \"baseline\", \"delta_pct\", \"reason\"}"
    )]
    Detect(detect::DetectArgs),
    /// Serve the dashboard and JSON API, run scheduled scenarios, and deliver alerts: the nightly service.
    #[command(after_help = "Examples:\n  degrade serve\n  degrade serve --listen 0.0.0.0:8080 --shutdown-grace 5m\n\n\
        Each [[scenario]] with a `schedule` runs at its cron time in its timezone (daylight saving followed), is \
        judged against its `baseline`, and alerts [[notify]] webhooks once when a regression starts and once when \
        it recovers. Several `degrade serve` sharing one PostgreSQL database never run a scenario twice at once.\n\
        Pages: / (every scenario), /scenarios/NAME?range=7d|30d|90d|1y|all (trends), /runs/ID (one run), \
        /compare?a=ID&b=ID (two runs side by side), /alerts.\n\
        JSON: /api/v1/scenarios, /api/v1/scenarios/NAME/runs, /api/v1/scenarios/NAME/trend, /api/v1/runs/ID, \
        /api/v1/episodes.\n\
        Start a run now:\n  \
        curl -X POST -H \"Authorization: Bearer $DEGRADE_API_TOKEN\" http://HOST/api/v1/scenarios/NAME/runs\n\
        Health: /healthz; Prometheus: /metrics. Stops on Ctrl-C or SIGTERM.")]
    Serve(serve::ServeArgs),
    /// See the whole job on a bundled demo API: nights of history, a regression, the alert, the dashboard.
    #[command(
        after_help = "Examples:\n  degrade demo                    tell the story, then serve the dashboard until Ctrl-C\n  \
        degrade demo --exit             tell it, check it went as planned, exit (0 when it did)\n  \
        degrade demo --listen 127.0.0.1:8080 --night-length 20s\n\n\
        Writes degrade-demo/ (degrade.toml, scenarios/demo.toml, degrade-demo.db, alerts.log) in this folder; \
        the database is started afresh each time. Build 1.1.0 adds --slowdown-ms to GET /boards/{board_id}/cards; \
        the check must find it there and nowhere else, and the alert must be delivered once."
    )]
    Demo(demo::DemoArgs),
    /// Serve the bundled demo API alone, with knobs that inject a regression.
    #[command(
        name = "demo-target",
        after_help = "Examples:\n  degrade demo-target --port 3000\n  \
        degrade demo-target --build 1.1.0 --slowdown-ms 50 --slow-route 'GET /search'\n  \
        degrade demo-target --build 1.2.0 --error-rate 0.01\n\n\
        Routes: GET /boards?page&per_page, GET /boards/{board_id}, GET|POST /boards/{board_id}/cards, \
        GET /boards/{board_id}/export (a bounded pool of renderers), GET|PATCH|DELETE /cards/{card_id}, \
        GET /search?q, GET /version, GET /healthz, GET /metrics (its process CPU, Prometheus format), the \
        WebSocket GET /boards/{board_id}/live, and the gRPC method demo.Boards/GetBoard over h2c. Its SQLite data \
        is seeded afresh on every start. The scenario for it: scenarios/demo.toml."
    )]
    DemoTarget(demo::DemoTargetArgs),
    /// Work with request tapes: real traffic from access logs and HAR recordings.
    #[command(subcommand)]
    Tape(tape::TapeCommand),
    /// Work with the [[notify]] webhooks.
    #[command(
        subcommand,
        after_help = "Example:\n  DEGRADE_SLACK_WEBHOOK=https://hooks.slack.com/services/... degrade notify test\n\n\
        Exits 2 when any webhook did not accept the message (the reason is printed, never the URL)."
    )]
    Notify(notify::NotifyCommand),
    /// Work with the [[scenario.telemetry]] sources: exporters scraped during a night.
    #[command(subcommand)]
    Telemetry(telemetry::TelemetryCommand),
    /// Work with gRPC descriptors: a server's methods, asked of its reflection service.
    #[command(subcommand)]
    Proto(proto::ProtoCommand),
}

/// Runs the parsed command line and returns its exit code; errors are printed to standard error.
#[must_use]
pub fn run(cli: Cli) -> Exit {
    let Cli { config, verbose: _, command } = cli;
    // After the subcommand wins over before it (and over DEGRADE_CONFIG, which fills the one before it).
    let source = ConfigSource::from(command.config().or(config));
    let outcome = crate::store::fault::refuse_in_release().and_then(|()| match command {
        Command::Init { force, .. } => init::run(source.path(), force),
        Command::Validate { scenario, .. } => validate::run(source.path(), scenario.as_deref()),
        Command::Migrate(_) => runtime().and_then(|rt| rt.block_on(migrate::run(&source))),
        Command::Run(args) => runtime().and_then(|rt| rt.block_on(run::run(&source, args))),
        Command::Check(args) => runtime().and_then(|rt| rt.block_on(check::run(&source, args))),
        Command::Detect(args) => detect::run(&args),
        Command::Serve(args) => runtime().and_then(|rt| rt.block_on(serve::run(&source, args))),
        Command::Demo(args) => runtime().and_then(|rt| rt.block_on(demo::demo(args))),
        Command::DemoTarget(args) => runtime().and_then(|rt| rt.block_on(demo::demo_target(args))),
        Command::Notify(command) => runtime().and_then(|rt| rt.block_on(notify::run(&source, command))),
        Command::Tape(command) => tape::run(command),
        Command::Telemetry(command) => runtime().and_then(|rt| rt.block_on(telemetry::run(&source, command))),
        Command::Proto(command) => runtime().and_then(|rt| rt.block_on(proto::run(command))),
    });
    outcome.unwrap_or_else(|e| {
        // An error may quote what a user or a file gave (a scenario's name, a TOML key): a terminal must not act
        // on an escape sequence in it.
        say!("error: {}", crate::outside_text::printable(&error_chain(&e)));
        Exit::Error
    })
}

impl Command {
    /// The `--config` given after the subcommand, if it takes one.
    fn config(&self) -> Option<PathBuf> {
        let arg = match self {
            Self::Init { config, .. }
            | Self::Validate { config, .. }
            | Self::Migrate(config)
            | Self::Notify(notify::NotifyCommand::Test(config)) => config,
            Self::Telemetry(telemetry::TelemetryCommand::Probe(args)) => &args.config,
            Self::Run(args) => &args.config,
            Self::Check(args) => &args.config,
            Self::Serve(args) => &args.config,
            Self::Detect(_) | Self::Demo(_) | Self::DemoTarget(_) | Self::Tape(_) | Self::Proto(_) => return None,
        };
        arg.config.clone()
    }
}

/// The error and its causes on one line, skipping a cause whose text its parent already quoted (many
/// library errors print their source inside their own message).
fn error_chain(error: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
    }
    out
}

/// Writes `text` to standard output. A reader that went away (`degrade check | head`) is not an error: the
/// command's work is done and its exit code still says what it concluded.
pub(crate) fn print_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Where the config comes from: a file the user named, or `./degrade.toml` by default.
#[derive(Debug)]
pub(crate) enum ConfigSource {
    /// `--config FILE` or `DEGRADE_CONFIG`: the file must exist.
    Named(PathBuf),
    /// Nothing named: `./degrade.toml`, or all defaults (plus `DEGRADE_*` variables) when it does not exist.
    Default(PathBuf),
}

impl From<Option<PathBuf>> for ConfigSource {
    fn from(named: Option<PathBuf>) -> Self {
        named.map_or_else(|| Self::Default(PathBuf::from(DEFAULT_CONFIG_FILE)), Self::Named)
    }
}

impl ConfigSource {
    pub(crate) fn path(&self) -> &Path {
        match self {
            Self::Named(path) | Self::Default(path) => path,
        }
    }

    /// The configuration for commands that can work on defaults alone (`migrate`, and later `serve`).
    /// `uses` says whether the command delivers alerts: only then is an unset webhook variable worth a warning.
    pub(crate) fn load_or_defaults(&self, uses: Uses) -> anyhow::Result<Config> {
        match self {
            Self::Default(path) if !path.exists() => {
                say!("note: no {} here; using the defaults (`degrade init` writes one)", path.display());
                report(Config::parse_with_env(path, "", &|name| std::env::var(name).ok()), uses)
            }
            _ => report(Config::load(self.path()), uses),
        }
    }
}

/// What a command does with the config, for the warnings it prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Uses {
    /// It may deliver alerts: an unset webhook variable leaves its alerts waiting in the outbox.
    Alerts,
    /// It never sends an alert (`migrate`, `run`, `check` of a stored run).
    NoAlerts,
}

/// Reads the config, printing every problem; `Err` carries a one-line summary for the caller to print.
pub(crate) fn load_config(path: &Path) -> anyhow::Result<Config> {
    report(Config::load(path), Uses::Alerts)
}

fn report(loaded: Result<Config, crate::config::ConfigErrors>, uses: Uses) -> anyhow::Result<Config> {
    let config = loaded.map_err(|errors| {
        let count = errors.0.len();
        anyhow::anyhow!("{errors}\n{count} problem{} in the configuration", if count == 1 { "" } else { "s" })
    })?;
    let concerns =
        |w: &&crate::config::ConfigWarning| uses == Uses::Alerts || w.kind != crate::config::WarningKind::UnsetWebhook;
    for warning in config.warnings.iter().filter(concerns) {
        say!("warning: {warning}");
    }
    Ok(config)
}

/// The async runtime: one worker per core degrade may use. Pinned to a single core (as a load generator
/// often is, `taskset -c 1 degrade run`), the single-threaded scheduler does the same work with less
/// bookkeeping per task switch, which is most of the generator's own cost per request.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let mut builder = if cores == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    Ok(builder.enable_all().build()?)
}

/// Logs go to standard error, filtered by `DEGRADE_LOG` or the `-v` count. A service (`serve`) logs what it
/// schedules, runs and delivers by default; one-shot commands only warnings, and the wait for a build to
/// come up (the one step that may take minutes before any progress shows).
pub fn init_logging(verbose: u8, service: bool) {
    let default = match verbose {
        0 if service => "degrade=info,warn",
        0 => "warn,degrade::latest_build=info",
        1 => "degrade=debug,info",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("DEGRADE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colour only on a terminal: `serve 2> degrade.log` must not fill the log with escape codes.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi).init();
}

/// Completes on Ctrl-C or SIGTERM (what systemd and container runtimes send).
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}

/// An undecided verdict's exit, and why: 3 with `--strict`, else 0 with a warning.
pub(super) fn undecided(why: &str, strict: bool) -> Exit {
    if strict {
        say!("{why}; exiting 3 (--strict)");
        Exit::Inconclusive
    } else {
        say!("warning: {why}; exiting 0 (pass --strict to exit 3)");
        Exit::Ok
    }
}
