//! `degrade tape import`: real traffic into a tape and a scenario that replays it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

use super::tape_report::{describe, lexical, write_scenario};
use super::{Exit, print_stdout};
use crate::outside_text::printable;
use crate::tape::flows::{Recording, read_recording, scenario_from_har};
use crate::tape::import::{ImportOptions, ImportReport, import};
use crate::tape::scrub::ScrubRules;
use crate::tape::sources::SourceFormat;
use crate::tape::survey::survey;
use crate::tape::{MAX_JSON_TREE_BYTES, Router};

/// `degrade tape …`.
#[derive(Debug, clap::Subcommand)]
pub enum TapeCommand {
    /// Import an access log, a JSON Lines log or a HAR recording as a tape, and a scenario replaying it.
    #[command(
        after_help = "Examples:\n  degrade tape import /var/log/nginx/access.log.1.gz --host api.example.com\n  \
        degrade tape import gateway.jsonl --path-prefix /api --since 2026-11-30 --until 2026-12-01\n  \
        degrade tape import big.log --sample 200000 --route '/users/{name}'\n  \
        degrade tape import checkout.har --flows --scenario scenarios/checkout.toml\n  \
        degrade tape import app.log --format '$remote_addr [$time_iso8601] \"$request\" $status'\n\n\
        Writes scenarios/NAME.tape (NAME.tape.gz for sources over 8 MB) and, unless it exists, scenarios/NAME.toml \
        replaying it at the recorded rate. Cookies, credentials and values that look like secrets or personal \
        data are scrubbed; static assets are dropped. Malformed lines are reported by line and skipped."
    )]
    Import(ImportArgs),
}

/// `degrade tape import`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The access log, JSON Lines log or HAR file (gzip-compressed is fine).
    #[arg(value_name = "SOURCE")]
    source: PathBuf,
    /// combined, common, json or har, or an nginx log_format string [default: by the file name, else combined].
    #[arg(long)]
    format: Option<String>,
    /// The tape to write [default: beside the scenario, NAME.tape or NAME.tape.gz].
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The scenario to write if it does not exist [default: scenarios/NAME.toml].
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// Keep only these methods (comma-separated).
    #[arg(long = "method", value_delimiter = ',', value_name = "METHOD")]
    methods: Vec<String>,
    /// Keep only requests to these hosts (where the source records the host).
    #[arg(long = "host", value_delimiter = ',', value_name = "HOST")]
    hosts: Vec<String>,
    /// Keep only paths starting with one of these.
    #[arg(long = "path-prefix", value_delimiter = ',', value_name = "PREFIX")]
    path_prefixes: Vec<String>,
    /// Keep images, scripts, styles and fonts (dropped by default).
    #[arg(long)]
    keep_static: bool,
    /// Keep requests sent at or after this time (RFC 3339, or YYYY-MM-DD[ HH:MM[:SS]] in UTC).
    #[arg(long, value_parser = parse_time)]
    since: Option<DateTime<Utc>>,
    /// Keep requests sent before this time.
    #[arg(long, value_parser = parse_time)]
    until: Option<DateTime<Utc>>,
    /// Keep about N requests, stratified by route (each route its share, at least 5), reproducibly.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    sample: Option<u64>,
    /// Seeds the sample.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// A route pattern tried before the built-in rules, e.g. '/users/{name}' (repeatable).
    #[arg(long = "route", value_name = "PATTERN")]
    routes: Vec<String>,
    /// Also scrub parameters and fields with this name (repeatable).
    #[arg(long = "scrub", value_name = "NAME")]
    scrub: Vec<String>,
    /// Never scrub parameters and fields with this exact name (repeatable).
    #[arg(long = "keep", value_name = "NAME")]
    keep: Vec<String>,
    /// From a HAR: write flows (one per page, values from earlier answers correlated) instead of a tape.
    #[arg(long)]
    flows: bool,
}

fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(time) = DateTime::parse_from_rfc3339(text) {
        return Ok(time.to_utc());
    }
    for format in ["%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M"] {
        if let Ok(time) = NaiveDateTime::parse_from_str(text, format) {
            return Ok(time.and_utc());
        }
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
        .map_err(|_| format!("`{text}` is not a time: write 2026-11-30, 2026-11-30 18:00 or RFC 3339"))
}

/// Sources larger than this get a gzip-compressed tape.
const GZIP_ABOVE_BYTES: u64 = 8_000_000;

pub(super) fn run(command: TapeCommand) -> anyhow::Result<Exit> {
    let TapeCommand::Import(args) = command;
    let format = SourceFormat::choose(args.format.as_deref(), &args.source).map_err(anyhow::Error::msg)?;
    let router = Router::new(&args.routes).map_err(|e| anyhow::anyhow!("--route: {e}"))?;
    let name = source_name(&args.source);
    // Beside the scenario: the one named, else scenarios/ (as `degrade init` lays a project out).
    let folder = args
        .scenario
        .as_deref()
        .and_then(Path::parent)
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("scenarios"), Path::to_path_buf);
    std::fs::create_dir_all(&folder).map_err(|e| anyhow::anyhow!("{}: cannot create it: {e}", folder.display()))?;
    if let (Some(since), Some(until)) = (args.since, args.until)
        && since >= until
    {
        anyhow::bail!("--since {since} is not before --until {until}: nothing could be kept");
    }
    let scenario = args.scenario.clone().unwrap_or_else(|| folder.join(format!("{name}.toml")));
    if args.flows {
        return flows(&args.source, &scenario, ScrubRules::new(&args.scrub, &args.keep));
    }
    let large = std::fs::metadata(&args.source).is_ok_and(|m| m.len() > GZIP_ABOVE_BYTES);
    let extension = if large || crate::tape::lines::LineReader::is_gzip(&args.source) { "tape.gz" } else { "tape" };
    let output = args.output.clone().unwrap_or_else(|| folder.join(format!("{name}.{extension}")));
    refuse_to_overwrite(&output, &scenario, &args.source)?;
    let replaced = output.exists();
    if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| anyhow::anyhow!("{}: cannot create it: {e}", parent.display()))?;
    }
    let options = import_options(&args, format.clone(), router.clone())?;
    // The file name as a comment line of the tape: escaped, so no character of it can start a new line.
    let source_file =
        args.source.file_name().map(|n| n.to_string_lossy().escape_debug().to_string()).unwrap_or_default();
    let comments = [format!(
        "imported from {source_file} ({}) by degrade {} on {}",
        format.describe(),
        env!("CARGO_PKG_VERSION"),
        Utc::now().format("%Y-%m-%d")
    )];
    let report = import(&args.source, &output, &options, &comments).map_err(anyhow::Error::msg)?;
    if report.kept == 0 {
        print_stdout(&describe(&args.source, &format, &output, &report, &crate::tape::survey::Survey::default()))?;
        anyhow::bail!("nothing was kept to replay, so no tape was written; check --format and the filters");
    }
    let survey = survey(&output, &router).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut text = describe(&args.source, &format, &output, &report, &survey);
    if replaced {
        // Said: its placeholders are drawn anew, so the scenario's nights no longer compare with those before.
        text.push_str(
            "  replaced  the tape that was there: its requests and placeholders are new, so the scenario replaying \
             it starts a new workload series (its earlier nights are no baseline for it)\n",
        );
    }
    text.push_str(&scenario_for(&scenario, &output, &report)?);
    print_stdout(&text)?;
    Ok(Exit::Ok)
}

/// A tape is written over an earlier tape only: never over the scenario that would replay it, nor over any
/// other file (a trial's `-o scenarios/rec.toml` replaced the scenario with the tape, then said it had left it
/// as it was).
fn refuse_to_overwrite(output: &Path, scenario: &Path, source: &Path) -> anyhow::Result<()> {
    let same = |a: &Path, b: &Path| lexical(a) == lexical(b);
    if same(output, scenario) {
        anyhow::bail!(
            "{}: the tape and the scenario that replays it would be one file; name the tape with -o NAME.tape",
            output.display()
        );
    }
    if same(output, source) {
        anyhow::bail!("{}: the tape would replace the recording it is read from; name another file", output.display());
    }
    // A tape, compressed or not, starts with its header line; any other file (a gzipped backup) is not one.
    let is_tape = || {
        let mut lines = crate::tape::lines::LineReader::open(output).ok()?;
        let first = lines.next_line().ok()??;
        Some(matches!(first.1, crate::tape::lines::Line::Text(text) if text.trim_end() == crate::tape::format::HEADER))
    };
    if output.exists() && is_tape() != Some(true) {
        anyhow::bail!("{} exists and is not a tape; name a new file with -o", output.display());
    }
    Ok(())
}

/// What import keeps, from the command line.
fn import_options(args: &ImportArgs, format: SourceFormat, router: Router) -> anyhow::Result<ImportOptions> {
    let methods = args.methods.iter().map(|m| m.to_ascii_uppercase().parse()).collect::<Result<_, _>>();
    Ok(ImportOptions {
        format,
        methods: methods.map_err(|e| anyhow::anyhow!("--method: {e}"))?,
        hosts: args.hosts.clone(),
        path_prefixes: args.path_prefixes.clone(),
        keep_static: args.keep_static,
        since: args.since,
        until: args.until,
        sample: args.sample,
        seed: args.seed,
        router,
        scrub: ScrubRules::new(&args.scrub, &args.keep),
    })
}

/// Writes the scenario replaying `tape` unless it exists; says which, and what to do next.
fn scenario_for(scenario: &Path, tape: &Path, report: &ImportReport) -> anyhow::Result<String> {
    if scenario.exists() {
        return Ok(format!(
            "{} exists, left as it is; replay the tape from it with a [[tape]] table.\n",
            scenario.display()
        ));
    }
    write_scenario(scenario, tape, report)?;
    Ok(format!(
        "Wrote {}, replaying it at the recorded rate. Next: set its base_url, then\n  degrade validate {0}\n  degrade run {0}\n",
        scenario.display()
    ))
}

/// `--flows`: the HAR's pages as flows, in a new scenario file.
fn flows(source: &Path, scenario: &Path, rules: ScrubRules) -> anyhow::Result<Exit> {
    if scenario.exists() {
        anyhow::bail!("{} exists; name a new file with --scenario", scenario.display());
    }
    let recording = read_recording(source).map_err(anyhow::Error::msg)?;
    let skipped = skipped_entries(source, &recording);
    let origin = recording
        .entries
        .iter()
        .find_map(|e| e.recorded.host.clone())
        .map_or_else(String::new, |h| format!("recorded against {h}"));
    let mut scrubber = crate::tape::scrub::Scrubber::new(rules, rand::random());
    let built = scenario_from_har(&recording.entries, &mut scrubber, &origin);
    if built.flows.is_empty() {
        print_stdout(&skipped)?;
        anyhow::bail!("{}: no API requests to make flows of", source.display());
    }
    std::fs::write(scenario, &built.text)
        .map_err(|e| anyhow::anyhow!("{}: cannot write it: {e}", scenario.display()))?;
    let mut out = format!("Wrote {} from {}:\n", scenario.display(), source.display());
    for (flow, steps) in &built.flows {
        let _ = writeln!(out, "  flow      {} ({steps} steps)", printable(flow));
    }
    for c in &built.correlations {
        let (from, step) = (printable(&c.from), printable(&c.from_step));
        let _ = writeln!(out, "  correlated {} = {from} of {step}'s answer, used {} time(s) later", c.variable, c.uses);
    }
    for unread in &built.unread {
        let _ = writeln!(
            out,
            "  unread    the answer of {} (entry {}) is {:.1} MB, over the {} MiB read for values to correlate",
            printable(&unread.step),
            unread.entry,
            unread.bytes as f64 / 1e6,
            MAX_JSON_TREE_BYTES >> 20
        );
    }
    for grpc in &built.grpc {
        let method = printable(&grpc.method);
        let _ = match &grpc.recorded {
            Ok(_) => writeln!(out, "  grpc      {method}: its request shown in hex beside an empty `json`"),
            Err(why) => writeln!(out, "  grpc      {method}: its request withheld: {why}"),
        };
    }
    if !built.grpc.is_empty() {
        out.push_str("            gRPC steps need the services' .proto files: see the scenario's `[proto]` note\n");
    }
    let _ = writeln!(
        out,
        "  scrubbed  {} values and headers\n{skipped}Next: set its base_url, then `degrade validate {}`",
        scrubber.counts.total(),
        scenario.display()
    );
    print_stdout(&out)?;
    Ok(Exit::Ok)
}

/// The lines naming the entries `--flows` skipped, the first few quoted.
fn skipped_entries(source: &Path, recording: &Recording) -> String {
    let mut text = String::new();
    for bad in &recording.malformed_examples {
        let _ = writeln!(text, "  skipped   {}: entry {}: {}", source.display(), bad.line, printable(&bad.message));
    }
    let more = recording.malformed - recording.malformed_examples.len() as u64;
    if more > 0 {
        let _ = writeln!(text, "            … and {more} more malformed entries");
    }
    text
}

/// `access` for `/var/log/nginx/access.log.1.gz`.
fn source_name(path: &Path) -> String {
    let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = file.split('.').next().unwrap_or_default();
    let clean: String = stem.chars().filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_')).collect();
    if clean.is_empty() { "traffic".to_owned() } else { clean }
}
