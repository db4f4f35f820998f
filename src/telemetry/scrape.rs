//! One scrape of one source: GET its exposition with its credentials, read at most [`MAX_BODY`] bytes of
//! the answer within the source's timeout, then read it line by line into each kept series' sums. Nothing of
//! the answer is kept but those sums, so memory stays bounded whatever an endpoint sends. A scrape that cannot
//! be read whole (an error status, a timeout, a body or a sample count past the caps, a line that is not the
//! format) is refused whole, as Prometheus refuses one: half a scrape would sum half the CPUs.

use std::time::Duration;

use crate::config::{Reads, ScrapeAuth, SeriesSpec, TelemetrySource};
use crate::engine::client::chain;
use crate::exposition::{Line, parse_line};
use crate::model::SeriesKind;

/// The most bytes of one scrape read: node_exporter sends 50–150 KB, postgres_exporter about 100 KB plus a few
/// hundred bytes per table; past this, an endpoint is not an exporter a night should parse every few seconds.
pub const MAX_BODY: usize = 4 << 20;

/// The most samples one scrape may hold (node_exporter: about 1,000 on a small host).
pub const MAX_SAMPLES: usize = 100_000;

/// Sums one scrape gave one series.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reading {
    /// The sum of the samples `metric` matched, less those `minus` matched.
    pub value: f64,
    /// How many samples `metric` matched: none means the series is not in this scrape.
    pub matched: usize,
    /// The sum `divide_by` matched, when the series has one.
    pub divisor: Option<f64>,
    /// What the exporter's `# TYPE` line calls the first metric `metric` matched, when it is a counter or a
    /// gauge: `telemetry probe` warns when the series reads it as the other.
    pub declared: Option<SeriesKind>,
}

/// What one scrape read: one reading per series, in the source's order, and how many samples it held.
#[derive(Debug, Clone, PartialEq)]
pub struct Scraped {
    /// Per series of the source.
    pub readings: Vec<Reading>,
    /// Samples in the answer.
    pub samples: usize,
}

/// Scrapes sources; cheap to clone (the connection pool is shared).
#[derive(Clone)]
pub struct Scraper {
    client: reqwest::Client,
}

impl Scraper {
    /// A scraper with the client [`super::http_client`] makes.
    ///
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn new() -> anyhow::Result<Self> {
        Ok(Self { client: super::http_client()? })
    }

    /// Scrapes `source` once.
    ///
    /// # Errors
    /// Says why the scrape could not be read, never quoting the URL (its query may hold a token).
    pub async fn scrape(&self, source: &TelemetrySource) -> Result<Scraped, String> {
        let body = tokio::time::timeout(source.timeout, self.fetch(source))
            .await
            .map_err(|_| no_answer_within(source.timeout))??;
        read(&body, &source.series)
    }

    async fn fetch(&self, source: &TelemetrySource) -> Result<Vec<u8>, String> {
        let mut request = self
            .client
            .get(&source.url)
            .timeout(source.timeout)
            // The classic text format: what every exporter speaks, and what this reader reads.
            .header(reqwest::header::ACCEPT, "text/plain;version=0.0.4;q=1,*/*;q=0.1");
        let mut unset = None;
        match &source.auth {
            Some(ScrapeAuth::Bearer { token: Some(token), .. }) => request = request.bearer_auth(token.expose()),
            Some(ScrapeAuth::Basic { user, password: Some(password), .. }) => {
                request = request.basic_auth(user, Some(password.expose()));
            }
            Some(ScrapeAuth::Bearer { var, token: None } | ScrapeAuth::Basic { var, password: None, .. }) => {
                unset = Some(var);
            }
            None => {}
        }
        let mut response = request.send().await.map_err(|e| describe(e, source.timeout))?;
        let status = response.status();
        if !status.is_success() {
            let hint =
                unset.map_or_else(String::new, |var| format!(" ({var}, which holds its credentials, is not set)"));
            return Err(format!("the exporter answered {status}{hint}"));
        }
        if response.content_length().is_some_and(|length| length > MAX_BODY as u64) {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| describe(e, source.timeout))? {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

/// Reads an answer into each series' sums.
///
/// # Errors
/// The first line that is not the text format, or a sample count past [`MAX_SAMPLES`].
pub fn read(body: &[u8], series: &[SeriesSpec]) -> Result<Scraped, String> {
    let mut readings: Vec<Reading> =
        series.iter().map(|s| Reading { divisor: s.divide_by().map(|_| 0.0), ..Reading::default() }).collect();
    let mut samples = 0;
    // The format groups a family's samples after its `# TYPE` line.
    let mut family: Option<(&str, Option<SeriesKind>)> = None;
    for (index, bytes) in body.split(|b| *b == b'\n').enumerate() {
        let number = index + 1;
        let line = std::str::from_utf8(bytes).map_err(|_| format!("line {number} of the answer is not UTF-8 text"))?;
        let sample = match parse_line(line) {
            Ok(Line::Sample(sample)) => sample,
            Ok(Line::Type { name, kind }) => {
                family = Some((name, kind.parse().ok()));
                continue;
            }
            Ok(Line::Other) => continue,
            Err(e) => return Err(format!("line {number} of the answer is not the Prometheus text format: {e}")),
        };
        samples += 1;
        if samples > MAX_SAMPLES {
            return Err(format!(
                "the answer holds more than {} samples, the most degrade reads in one scrape",
                crate::model::thousands(MAX_SAMPLES as f64)
            ));
        }
        for (spec, reading) in series.iter().zip(&mut readings) {
            // A query is a Prometheus server's to answer: a scrape source holds none (the config sees to it).
            let Reads::Samples { metric, minus, divide_by } = &spec.reads else { continue };
            if metric.matches(&sample) {
                reading.value += sample.value;
                reading.matched += 1;
                if reading.matched == 1 {
                    // OpenMetrics names a counter's family without its `_total`.
                    reading.declared = family.filter(|(name, _)| sample.name.starts_with(name)).and_then(|(_, k)| k);
                }
            }
            if minus.as_ref().is_some_and(|m| m.matches(&sample)) {
                reading.value -= sample.value;
            }
            if let (Some(divisor), Some(sum)) = (divide_by, &mut reading.divisor)
                && divisor.matches(&sample)
            {
                *sum += sample.value;
            }
        }
    }
    Ok(Scraped { readings, samples })
}

fn too_large() -> String {
    format!("the answer is longer than {} MiB, the most degrade reads of one scrape", MAX_BODY >> 20)
}

fn no_answer_within(timeout: Duration) -> String {
    format!("the exporter did not answer within {} (the source's timeout)", humantime::format_duration(timeout))
}

/// What went wrong, with its causes but never the URL (reqwest puts it in its message).
fn describe(error: reqwest::Error, timeout: Duration) -> String {
    if error.is_timeout() {
        return no_answer_within(timeout);
    }
    let kind = if error.is_connect() { "cannot connect to the exporter" } else { "the scrape failed" };
    format!("{kind}: {}", crate::outside_text::clipped(&chain(&error.without_url()), 300))
}
