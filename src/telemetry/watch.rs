//! Scraping beside the engine: one task per `scrape` source on the caller's runtime (the engine has its own,
//! `engine::run_apart`, so a scrape never delays an arrival), each scraping at the start of every measured
//! window and then every `every` until the window's end, stamped on the latency timeline's clock. Stopping
//! (the run ended, or was stopped) drops a scrape under way, so the night is never held up by an exporter.
//! A `prometheus` source is asked once the run is over, over the same windows (`queried`).

use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::queried::{RunClock, query_source};
use super::query::Prometheus;
use super::scrape::Scraper;
use super::series::{Completed, ScrapeOutcome, source_telemetry};
use crate::config::{SourceKind, TelemetrySource};
use crate::model::RunTelemetry;
use crate::scenario::Plan;

/// The most scrapes one source keeps in a run: a week at one a second. Past it the rest are not taken.
const MAX_SCRAPES: usize = 7 * 24 * 3600;

/// A window of measured stages: from its start to its end, as offsets from the run's start.
pub type Window = (Duration, Duration);

/// The plan's measured stages as windows, adjacent ones joined.
#[must_use]
pub fn measured_windows(plan: &Plan) -> Vec<Window> {
    let mut windows: Vec<Window> = Vec::new();
    let mut at = Duration::ZERO;
    for stage in &plan.load.stages {
        let end = at + stage.duration;
        if stage.measure {
            match windows.last_mut() {
                Some(last) if last.1 == at => last.1 = end,
                _ => windows.push((at, end)),
            }
        }
        at = end;
    }
    windows
}

/// The scraping of one run's sources, under way.
pub struct Watch {
    sources: Vec<TelemetrySource>,
    /// Per source, its scraping task; `None` for a source queried after the run.
    tasks: Vec<Option<JoinHandle<Vec<ScrapeOutcome>>>>,
    stop: watch::Sender<bool>,
    windows: Vec<Window>,
    start: Instant,
    /// The Unix time at `start`: Prometheus' clock.
    zero_unix: f64,
}

impl Watch {
    /// Starts scraping `sources` in `windows`, measured from `start` (the engine's start: the latency
    /// timeline's zero). `None` when there is nothing to scrape.
    #[must_use]
    pub fn start(sources: &[TelemetrySource], windows: &[Window], start: std::time::Instant) -> Option<Self> {
        if sources.is_empty() {
            return None;
        }
        let scraper = match Scraper::new() {
            Ok(scraper) => scraper,
            Err(e) => {
                tracing::warn!("telemetry: no HTTP client for scraping ({e:#}); the run goes on without it");
                return None;
            }
        };
        let (stop, stopped) = watch::channel(false);
        let zero_unix = unix_secs_at(start);
        let start = Instant::from_std(start);
        let tasks = sources
            .iter()
            .map(|source| {
                let (source, windows, scraper, stopped) =
                    (source.clone(), windows.to_vec(), scraper.clone(), stopped.clone());
                (source.kind == SourceKind::Scrape).then(|| {
                    tokio::spawn(async move { scrape_windows(&scraper, &source, &windows, start, stopped).await })
                })
            })
            .collect();
        Some(Self { sources: sources.to_vec(), tasks, stop, windows: windows.to_vec(), start, zero_unix })
    }

    /// Stops scraping (a scrape under way ends first, within its timeout) and gives each source's telemetry; `completed` is what
    /// the run's measured stages completed.
    pub async fn finish(self, completed: Completed) -> RunTelemetry {
        let Self { sources, tasks, stop, windows, start, zero_unix } = self;
        stop.send_replace(true);
        let clock = RunClock { zero_unix, lasted: start.elapsed() };
        let mut prometheus = None;
        let mut telemetry = RunTelemetry::default();
        for (source, task) in sources.iter().zip(tasks) {
            let Some(task) = task else {
                let client = prometheus.get_or_insert_with(Prometheus::new);
                telemetry.sources.push(match client {
                    Ok(client) => query_source(client, source, &windows, clock, completed).await,
                    Err(e) => {
                        super::queried::not_asked(source, &format!("no HTTP client for the query ({e:#})"), completed)
                    }
                });
                continue;
            };
            // A task that panicked (a bug) loses its source's scrapes, never the run.
            let outcomes = task.await.unwrap_or_default();
            telemetry.sources.push(source_telemetry(source, &outcomes, completed));
        }
        telemetry
    }
}

/// The Unix time, in seconds, of `instant` (a moment ago).
fn unix_secs_at(instant: std::time::Instant) -> f64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    now.as_secs_f64() - instant.elapsed().as_secs_f64()
}

/// Scrapes `source` through `windows` until they end or `stopped` turns true.
async fn scrape_windows(
    scraper: &Scraper,
    source: &TelemetrySource,
    windows: &[Window],
    start: Instant,
    mut stopped: watch::Receiver<bool>,
) -> Vec<ScrapeOutcome> {
    let mut outcomes = Vec::new();
    for (window, (from, to)) in windows.iter().enumerate() {
        let (mut due, end) = (start + *from, start + *to);
        while due <= end && outcomes.len() < MAX_SCRAPES {
            // A scrape already due is taken even when the stop came meanwhile: the one at a window's end is
            // due as the engine finishes.
            tokio::select! {
                biased;
                () = tokio::time::sleep_until(due) => {}
                _ = stopped.wait_for(|s| *s) => return outcomes,
            }
            let began = Instant::now();
            // Not cancelled by the stop: bounded by the source's timeout, and its answer belongs to the run.
            let result = scraper.scrape(source).await;
            let elapsed_ms = began.saturating_duration_since(start).as_millis() as i64;
            outcomes.push(ScrapeOutcome { elapsed_ms, window, result });
            // A scrape that took longer than the interval skips the scrapes it overran, rather than bunching them.
            due += source.every;
            while due < Instant::now() {
                due += source.every;
            }
        }
    }
    outcomes
}
