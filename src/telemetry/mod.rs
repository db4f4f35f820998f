//! The server's side of a night: Prometheus exporters scraped while the run's measured stages go on, or a
//! Prometheus server queried over them once the run is over; each kept series stored with the run beside what
//! the client measured.
//!
//! `watch` runs the scrapes beside the engine, on the latency timeline's clock, and asks the Prometheus
//! servers when the run ends; `scrape` reads one answer in bounded memory into each series' sums; `query`
//! asks a Prometheus server's HTTP API, and `queried` turns a `prometheus` source's answers into readings on
//! the same clock; `series` turns readings into values and summaries; `shown` puts them in words. A source
//! that does not answer, or answers garbage, leaves its series empty with the reason: the night is kept
//! whatever an exporter or a server does.

mod queried;
mod query;
mod scrape;
mod series;
pub mod shown;
mod watch;

pub use query::{Prometheus, QueryError};
pub use scrape::{MAX_BODY, MAX_SAMPLES, Reading, Scraped, Scraper, read};
pub use series::{Completed, ScrapeOutcome, source_telemetry};
pub use watch::{Watch, Window, measured_windows};

/// The HTTP client every telemetry source is read with: the engine's TLS settings, no redirects (credentials go
/// to the named URL only) and no compression asked for (a compressed answer could grow past the body cap once
/// read).
fn http_client() -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .tls_backend_preconfigured(crate::engine::client::tls_config())
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("degrade/", env!("CARGO_PKG_VERSION")))
        .build()?)
}
