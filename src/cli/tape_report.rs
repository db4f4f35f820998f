//! What `degrade tape import` prints, and the scenario it writes to replay the tape.

use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use crate::model::thousands;
use crate::outside_text::printable;
use crate::tape::import::{Dropped, ImportReport};
use crate::tape::route_tally::{MAX_QUERY_SHAPES, OTHER_QUERIES};
use crate::tape::sources::SourceFormat;
use crate::tape::survey::Survey;

/// Routes listed in the report; the rest are summed up in one line.
const ROUTES_LISTED: usize = 20;

/// The import report: read, kept, dropped, malformed (with where), scrubbed, and the routes' shares.
pub(super) fn describe(
    source: &Path,
    format: &SourceFormat,
    output: &Path,
    report: &ImportReport,
    survey: &Survey,
) -> String {
    let mut out = String::new();
    let count = |n: u64| thousands(n as f64);
    let (source_name, kind) = (source.display(), format.describe());
    let _ = if report.kept == 0 {
        writeln!(out, "Read {source_name} ({kind}): nothing to keep, no tape written")
    } else {
        writeln!(out, "Imported {source_name} ({kind}) into {}", output.display())
    };
    let read = match (matches!(format, SourceFormat::Har), report.read) {
        (true, 1) => "1 entry".to_owned(),
        (true, n) => format!("{} entries", count(n)),
        (false, n) => plural(n, "line"),
    };
    let _ = writeln!(out, "  read      {read}");
    let span = report.span.map(|(first, last)| {
        let rate = recorded_rate(report).map(|r| format!(", {r} req/s")).unwrap_or_default();
        format!(", sent {} to {}{rate}", first.format("%Y-%m-%d %H:%M:%S"), last.format("%Y-%m-%d %H:%M:%S %Z"))
    });
    let _ = writeln!(
        out,
        "  kept      {}, {} distinct, {}{}",
        plural(report.kept, "request"),
        count(survey.distinct),
        plural(survey.routes.len() as u64, "route"),
        span.unwrap_or_default()
    );
    for (reason, n) in &report.dropped {
        let _ = writeln!(out, "  dropped   {} {}", count(*n), reason.describe());
    }
    if report.malformed > 0 {
        let unit = if matches!(format, SourceFormat::Har) { "entr" } else { "line" };
        let unit = match (unit, report.malformed) {
            ("entr", 1) => "entry",
            ("entr", _) => "entries",
            (_, 1) => "line",
            _ => "lines",
        };
        let _ = writeln!(out, "  skipped   {} malformed {unit}:", count(report.malformed));
        for bad in &report.malformed_examples {
            let _ = writeln!(out, "            {}:{}: {}", source.display(), bad.line, printable(&bad.message));
        }
        if report.malformed > report.malformed_examples.len() as u64 {
            let _ = writeln!(
                out,
                "            … and {} more",
                count(report.malformed - report.malformed_examples.len() as u64)
            );
        }
    }
    scrubbed_and_routes(&mut out, report, survey);
    notes(&mut out, report, survey, format);
    out
}

/// What the import's reader should act on: a path with more query shapes than are told apart, requests whose
/// host or body the source did not record.
fn notes(out: &mut String, report: &ImportReport, survey: &Survey, format: &SourceFormat) {
    let count = |n: u64| thousands(n as f64);
    for shared in survey.shared_query_routes() {
        let path = shared.key.strip_suffix(OTHER_QUERIES).unwrap_or(&shared.key);
        let bare = path.split_once(' ').map_or(path, |(_, p)| p);
        let _ = writeln!(
            out,
            "  note      {} has more query shapes than the {MAX_QUERY_SHAPES} told apart for one path: {} of its \
             requests share one route, {} (name the shapes that matter with --route '{}?name={{x}}', or keep the \
             path as one route with --route '{}?*')",
            printable(path),
            count(shared.requests),
            printable(&shared.key),
            printable(bare),
            printable(bare)
        );
    }
    if report.hostless > 0 {
        let _ = writeln!(
            out,
            "  note      {} kept whatever --host says: the source records no host (log $host to filter by it)",
            plural(report.hostless, "request")
        );
    }
    if report.bodiless_writes > 0 {
        // How to record a body depends on what recorded the traffic.
        let record = match format {
            SourceFormat::Log(_) => "log $request_body",
            SourceFormat::JsonLines => "log each request's body",
            SourceFormat::Har => "record the HAR with its request bodies",
        };
        let n = report.bodiless_writes;
        let (have, replay) = if n == 1 { ("has", "replays") } else { ("have", "replay") };
        let _ = writeln!(
            out,
            "  note      {} POST, PUT or PATCH {} {have} no recorded body and {replay} empty, which services usually \
             refuse: {record}, import with --method GET, or accept their answer with [[tape.expect]]",
            count(n),
            if n == 1 { "request" } else { "requests" },
        );
    }
}

/// The scrubbing line and the routes' table.
fn scrubbed_and_routes(out: &mut String, report: &ImportReport, survey: &Survey) {
    let count = |n: u64| thousands(n as f64);
    let s = report.scrubbed;
    let kinds = [
        (s.headers, "credential header", "credential headers"),
        (s.query, "query value", "query values"),
        (s.fields, "body field", "body fields"),
        (
            s.values,
            "value holding an email, a phone or card number, an IBAN, a key or a token",
            "values holding emails, phone or card numbers, IBANs, keys or tokens",
        ),
        (s.bodies, "body that could not be checked (dropped)", "bodies that could not be checked (dropped)"),
    ];
    let parts: Vec<String> = kinds
        .iter()
        .filter(|(n, ..)| *n > 0)
        .map(|&(n, one, many)| crate::model::counted(n as usize, one, many))
        .collect();
    let _ = writeln!(out, "  scrubbed  {}", if parts.is_empty() { "nothing".to_owned() } else { parts.join(", ") });
    if survey.routes.is_empty() {
        return;
    }
    let _ = writeln!(out, "  routes    share  requests  distinct ids");
    for route in survey.routes.iter().take(ROUTES_LISTED) {
        let share = route.requests as f64 / survey.requests.max(1) as f64 * 100.0;
        let ids = if route.distinct_ids == 0 { "-".to_owned() } else { count(route.distinct_ids) };
        let _ =
            writeln!(out, "          {share:6.2} % {:>9}  {ids:>12}  {}", count(route.requests), printable(&route.key));
    }
    if survey.routes.len() > ROUTES_LISTED {
        let rest = &survey.routes[ROUTES_LISTED..];
        let requests: u64 = rest.iter().map(|r| r.requests).sum();
        let _ = writeln!(out, "          … {} more routes with {} requests", rest.len(), count(requests));
    }
}

/// `1 request`, `2,000 requests`.
fn plural(n: u64, word: &str) -> String {
    format!("{} {word}{}", thousands(n as f64), if n == 1 { "" } else { "s" })
}

/// Requests per second in production over the kept requests' span (before any sample), if it is known.
fn recorded_rate(report: &ImportReport) -> Option<f64> {
    let (first, last) = report.span?;
    let seconds = (last - first).num_milliseconds() as f64 / 1000.0;
    let requests = report.kept + report.dropped.get(&Dropped::Sampled).copied().unwrap_or(0);
    (seconds >= 1.0 && requests >= 2).then(|| ((requests as f64 / seconds) * 10.0).round().max(1.0) / 10.0)
}

/// A scenario replaying `tape` at the recorded rate, for the user to point at a test deployment.
pub(super) fn write_scenario(scenario: &Path, tape: &Path, report: &ImportReport) -> anyhow::Result<()> {
    let folder = scenario.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // A scenario reads its tape relative to itself, wherever the command ran.
    let relative = relative_to(tape, folder).display().to_string();
    let file = toml::Value::String(relative.clone());
    let rate = recorded_rate(report).unwrap_or(10.0);
    // The warm-up ramps up to the recorded rate from a fifth of it.
    let start = ((rate / 5.0) * 10.0).round().max(1.0) / 10.0;
    let text = format!(
        r#"# Replays {shown}, imported by `degrade tape import`: production's requests, scrubbed of secrets.
# Check it with `degrade validate {scenario}`: it says how often this run repeats each distinct request.
seed = 1

[target]
base_url = "http://127.0.0.1:8080"   # a test deployment, never production; degrade.toml's target overrides it
timeout = "10s"
# Auth never comes from the tape: give the replay its own credentials from the environment.
# headers = {{ authorization = "Bearer {{{{ env(\"API_TOKEN\") }}}}" }}

[[tape]]
file = {file}
order = "sequential"      # sequential | shuffle | session (each arrival replays one recorded session)
preserve = "mix"          # a run shorter than the tape takes requests from all of it, keeping its route mix
# [[tape.route]]
# pattern = "/users/{{name}}"      # name routes the built-in rules do not see
# [[tape.expect]]
# route = "GET /api/boards/{{id}}"
# status = [200, 404]            # by default each request expects its recorded status class

[load]
model = "open"
arrivals = "uniform"

  [[load.stage]]
  duration = "30s"
  from = {start}
  to = {rate}
  measure = false

  [[load.stage]]
  duration = "5m"
  rate = {rate}                  # the recorded rate (at least 0.1 per second)
"#,
        scenario = scenario.display(),
        shown = printable(&relative),
    );
    std::fs::write(scenario, text).map_err(|e| anyhow::anyhow!("{}: cannot write it: {e}", scenario.display()))
}

/// `path` as written from `folder`, both read from the working directory: `x.tape` beside it,
/// `../tapes/x.tape` elsewhere. Where they share no root (another drive), `path` made absolute.
fn relative_to(path: &Path, folder: &Path) -> PathBuf {
    let (path, folder) = (lexical(path), lexical(folder));
    let shared = path.components().zip(folder.components()).take_while(|(a, b)| a == b).count();
    if shared == 0 {
        return path;
    }
    let up = folder.components().count() - shared;
    std::iter::repeat_n(Component::ParentDir, up).chain(path.components().skip(shared)).collect()
}

/// `path` made absolute from the working directory, its `.` and `..` resolved by name (the file need not exist),
/// so two spellings of one path compare equal.
pub(super) fn lexical(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut resolved = PathBuf::new();
    for component in absolute.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                resolved.pop();
            }
            other => resolved.push(other),
        }
    }
    resolved
}
