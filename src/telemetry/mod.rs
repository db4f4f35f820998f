//! The server's side of a night: Prometheus exporters scraped while the run's measured stages go on, each
//! kept series stored with the run beside what the client measured (issue 43's first slice: the `scrape`
//! kind; judging, gates and the trend page come later).
//!
//! `watch` runs the scrapes beside the engine, on the latency timeline's clock; `scrape` reads one answer
//! in bounded memory into each series' sums; `series` turns the scrapes into values and summaries; `shown` puts them in words. A source
//! that does not answer, or answers garbage, leaves its series empty with the reason: the night is kept
//! whatever an exporter does.

mod scrape;
mod series;
pub mod shown;
mod watch;

pub use scrape::{MAX_BODY, MAX_SAMPLES, Reading, Scraped, Scraper, read};
pub use series::{Completed, ScrapeOutcome, source_telemetry};
pub use watch::{Watch, Window, measured_windows};
