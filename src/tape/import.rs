//! `degrade tape import`: a source streamed through filters, scrubbing, routes and an optional sample into
//! a tape, with a report of what was kept, dropped and scrubbed.
//!
//! Memory does not grow with the log: requests are written as they are read; what is kept per route (its
//! count) grows with the number of routes only, within the caps of [`RouteTally`]. A sample reads the source
//! twice (counting routes, then choosing), so it needs a file, not a pipe; both passes see the same requests in
//! the same order, so a route shares a key past a cap in both alike.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Utc};
use http::Method;

use super::format::TapeRequest;
use super::grpc_body::is_grpc;
use super::route::Router;
use super::route_tally::RouteTally;
use super::sample::StratifiedSample;
use super::scrub::{ScrubRules, Scrubbed, Scrubber};
use super::sources::{self, Malformed, Recorded, SourceFormat};
use super::writer::TapeWriter;

/// What to keep, and how.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// How the source is written.
    pub format: SourceFormat,
    /// Keep only these methods (all when empty).
    pub methods: Vec<Method>,
    /// Keep only requests to these hosts (all when empty; requests with no recorded host are kept).
    pub hosts: Vec<String>,
    /// Keep only paths starting with one of these (all when empty).
    pub path_prefixes: Vec<String>,
    /// Keep images, scripts, styles and fonts too.
    pub keep_static: bool,
    /// Keep only requests sent at or after this.
    pub since: Option<DateTime<Utc>>,
    /// Keep only requests sent before this.
    pub until: Option<DateTime<Utc>>,
    /// Keep about this many, stratified by route.
    pub sample: Option<u64>,
    /// Seeds the sample.
    pub seed: u64,
    /// Route patterns.
    pub router: Router,
    /// What to scrub.
    pub scrub: ScrubRules,
}

/// Why a request was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dropped {
    /// An image, script, style sheet or font (keep them with `--keep-static`).
    Static,
    /// Its method is not among `--method`.
    Method,
    /// Its host is not among `--host`.
    Host,
    /// Its path starts with none of `--path-prefix`.
    Path,
    /// Sent outside `--since`/`--until` (or its time is unknown).
    Window,
    /// Not chosen by `--sample`.
    Sampled,
    /// A gRPC call: a tape replays HTTP requests, and a call's binary body is not a tape's text.
    Grpc,
    /// A WebSocket session's opening: replayed as a plain request, it could only fail.
    WebSocket,
}

impl Dropped {
    /// Words for the report.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::Static => "static assets (--keep-static keeps them)",
            Self::Method => "other methods (--method)",
            Self::Host => "other hosts (--host)",
            Self::Path => "other paths (--path-prefix)",
            Self::Window => "outside --since/--until",
            Self::Sampled => "left out by --sample",
            Self::Grpc => "gRPC calls (a tape replays HTTP requests; --flows writes them as gRPC steps)",
            Self::WebSocket => {
                "WebSocket sessions (a tape replays HTTP requests; --flows writes each as a `ws = \"connect\"` step)"
            }
        }
    }
}

/// What an import did.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    /// Requests and malformed lines read.
    pub read: u64,
    /// Requests written to the tape.
    pub kept: u64,
    /// Requests left out, by reason.
    pub dropped: BTreeMap<Dropped, u64>,
    /// Lines that were not requests.
    pub malformed: u64,
    /// The first few of them, for the report.
    pub malformed_examples: Vec<Malformed>,
    /// What was scrubbed.
    pub scrubbed: Scrubbed,
    /// Kept requests per route key (a route every request of which was left out counts 0).
    pub routes: RouteTally<u64>,
    /// The earliest and latest recorded times of kept requests.
    pub span: Option<(DateTime<Utc>, DateTime<Utc>)>,
    /// Kept requests whose source recorded no host although `--host` was given (kept: they cannot be told
    /// apart).
    pub hostless: u64,
    /// Kept POST, PUT and PATCH requests without a recorded body: replayed empty, a service usually refuses
    /// them.
    pub bodiless_writes: u64,
}

/// How many malformed lines the report quotes.
const EXAMPLES: usize = 10;

/// Extensions of files that are not API traffic.
const STATIC_EXTENSIONS: &[&str] = &[
    "js", "mjs", "css", "map", "png", "jpg", "jpeg", "gif", "svg", "ico", "webp", "avif", "bmp", "woff", "woff2",
    "ttf", "otf", "eot", "mp4", "webm", "mp3", "ogg", "wav",
];

/// Imports `source` into a tape at `destination`, headed by `comments`; writes nothing when nothing is kept.
pub fn import(
    source: &Path,
    destination: &Path,
    options: &ImportOptions,
    comments: &[String],
) -> Result<ImportReport, String> {
    let key = rand::random::<u64>();
    let mut sample = match options.sample {
        Some(size) => {
            let mut counting = ImportReport::default();
            each_kept(source, options, key, &mut counting, &mut |_, _| Ok(true))?;
            let counts: BTreeMap<String, u64> = counting.routes.into_routes().into_iter().collect();
            Some(StratifiedSample::plan(&counts, size, options.seed))
        }
        None => None,
    };
    let mut writer = TapeWriter::create(destination, comments)
        .map_err(|e| format!("{}: cannot write the tape: {e}", destination.display()))?;
    let mut report = ImportReport::default();
    each_kept(source, options, key, &mut report, &mut |request, route| {
        if sample.as_mut().is_some_and(|s| !s.keep(route)) {
            return Ok(false);
        }
        writer.write(request).map(|()| true)
    })
    .map_err(|e| e.replace("{tape}", &destination.display().to_string()))?;
    if report.kept == 0 {
        // Nothing to replay: no tape is written (and an earlier one at the same place stays).
        return Ok(report);
    }
    writer.finish().map_err(|e| format!("{}: cannot write the tape: {e}", destination.display()))?;
    Ok(report)
}

/// Runs every request of `source` through the filters and the scrubber, hands the kept ones to `keep`
/// (which says whether it kept it), and counts everything in `report`.
fn each_kept(
    source: &Path,
    options: &ImportOptions,
    key: u64,
    report: &mut ImportReport,
    keep: &mut dyn FnMut(&TapeRequest, &str) -> std::io::Result<bool>,
) -> Result<(), String> {
    let mut scrubber = Scrubber::new(options.scrub.clone(), key);
    sources::read(source, &options.format, &mut |item| {
        report.read += 1;
        // A malformed line's message may quote it, and the report is printed and pasted into tickets.
        let item = item.map_err(|bad| Malformed { message: scrubber.message(&bad.message), ..bad });
        let Some(recorded) =
            report.take(item).map_err(|bad| format!("{}:{}: {}", source.display(), bad.line, bad.message))?
        else {
            return Ok(());
        };
        if let Some(reason) = filtered_out(&recorded, options) {
            *report.dropped.entry(reason).or_default() += 1;
            return Ok(());
        }
        report.keep(recorded, options, &mut scrubber, keep)
    })?;
    report.scrubbed = scrubber.counts;
    Ok(())
}

impl ImportReport {
    /// Scrubs `recorded` and hands it to `keep`, counting it if kept.
    fn keep(
        &mut self,
        recorded: Recorded,
        options: &ImportOptions,
        scrubber: &mut Scrubber,
        keep: &mut dyn FnMut(&TapeRequest, &str) -> std::io::Result<bool>,
    ) -> Result<(), String> {
        let Recorded { mut request, headers, host, unreadable_body } = recorded;
        let scrubbed_before = scrubber.counts;
        scrubber.request(&mut request, &headers);
        scrubber.counts.bodies += u64::from(unreadable_body);
        // Counted whether kept or not, so both passes of a sample give a route the same key.
        let (route, count) = self.routes.entry(&options.router.route(request.method.as_str(), &request.target).key);
        if !keep(&request, route).map_err(|e| format!("{{tape}}: cannot write the tape: {e}"))? {
            *self.dropped.entry(Dropped::Sampled).or_default() += 1;
            // What was scrubbed from a request the tape does not keep is not in the tape.
            scrubber.counts = scrubbed_before;
            return Ok(());
        }
        *count += 1;
        self.kept += 1;
        self.hostless += u64::from(!options.hosts.is_empty() && host.is_none());
        // A body the scrubber dropped was recorded: the report counts it there, not as one the source lacked.
        let dropped_body = scrubber.counts.bodies > scrubbed_before.bodies;
        self.bodiless_writes += u64::from(
            request.body.is_none()
                && !dropped_body
                && matches!(request.method, Method::POST | Method::PUT | Method::PATCH),
        );
        if let Some(time) = request.time {
            self.span = Some(self.span.map_or((time, time), |(a, b)| (a.min(time), b.max(time))));
        }
        Ok(())
    }

    /// A source's item: the request, or `None` for a malformed line (counted, the first few kept for the
    /// report); `Err` when the source cannot be read further.
    fn take(&mut self, item: Result<Recorded, Malformed>) -> Result<Option<Recorded>, Malformed> {
        match item {
            Ok(recorded) => Ok(Some(recorded)),
            Err(malformed) if malformed.fatal => Err(malformed),
            Err(malformed) => {
                self.malformed += 1;
                if self.malformed_examples.len() < EXAMPLES {
                    self.malformed_examples.push(malformed);
                }
                Ok(None)
            }
        }
    }
}

/// Why `recorded` is left out, if it is.
fn filtered_out(recorded: &Recorded, options: &ImportOptions) -> Option<Dropped> {
    let request = &recorded.request;
    let path = request.target.split('?').next().unwrap_or_default();
    if recorded.headers.iter().any(|(name, value)| name == "content-type" && is_grpc(value)) {
        return Some(Dropped::Grpc);
    }
    if is_websocket(&recorded.headers, request.status) {
        return Some(Dropped::WebSocket);
    }
    if !options.keep_static && is_static(path) {
        return Some(Dropped::Static);
    }
    if !options.methods.is_empty() && !options.methods.contains(&request.method) {
        return Some(Dropped::Method);
    }
    if !options.hosts.is_empty()
        && recorded.host.as_deref().is_some_and(|host| !options.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)))
    {
        return Some(Dropped::Host);
    }
    if !options.path_prefixes.is_empty() && !options.path_prefixes.iter().any(|p| path.starts_with(p.as_str())) {
        return Some(Dropped::Path);
    }
    if options.since.is_some() || options.until.is_some() {
        let inside = request.time.is_some_and(|t| {
            options.since.is_none_or(|since| t >= since) && options.until.is_none_or(|until| t < until)
        });
        if !inside {
            return Some(Dropped::Window);
        }
    }
    None
}

/// Whether a recorded request opened a WebSocket: it asked to upgrade to one, or was answered 101.
pub(crate) fn is_websocket(headers: &[(String, String)], status: Option<u16>) -> bool {
    status == Some(101)
        || headers.iter().any(|(name, value)| name == "upgrade" && value.trim().eq_ignore_ascii_case("websocket"))
}

/// Whether `path` names an image, script, style sheet or font.
pub(crate) fn is_static(path: &str) -> bool {
    let last = path.rsplit('/').next().unwrap_or_default();
    last.rsplit_once('.').is_some_and(|(_, ext)| STATIC_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()))
}
