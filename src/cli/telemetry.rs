//! `degrade telemetry probe`: scrapes each telemetry source once (or asks a Prometheus server each series'
//! query at this instant) and prints what a night would keep, so a source is set up without waiting for a
//! night; and the lines `degrade validate` prints for each source.

use std::time::Instant;

use super::{ConfigSource, Exit, print_stdout};
use crate::config::{Reads, ScenarioConfig, ScrapeAuth, SeriesSpec, SourceKind, TelemetrySource};
use crate::model::SeriesKind;
use crate::model::thousands;
use crate::secret::redact_url;
use crate::telemetry::{Prometheus, QueryError, Reading, Scraper, shown};

/// What to do with the telemetry sources.
#[derive(Debug, clap::Subcommand)]
pub enum TelemetryCommand {
    /// Scrape each [[scenario.telemetry]] source once (a `prometheus` source: run each series' query at this
    /// instant) and print what a night would keep of it.
    #[command(after_help = "Examples:\n  degrade telemetry probe\n  degrade telemetry probe checkout\n\n\
        Exits 2 when a source cannot be read, a series matches no sample or a query gives no value.")]
    Probe(ProbeArgs),
}

/// `degrade telemetry probe`.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// `--config` after the subcommand.
    #[command(flatten)]
    pub config: super::ConfigArg,
    /// The [[scenario]] whose sources to probe [default: every scenario's].
    pub scenario: Option<String>,
}

pub(super) async fn run(source: &ConfigSource, command: TelemetryCommand) -> anyhow::Result<Exit> {
    let TelemetryCommand::Probe(args) = command;
    let config = super::load_config(source.path())?;
    let scenarios: Vec<&ScenarioConfig> = match &args.scenario {
        Some(name) => vec![config.scenario(name).ok_or_else(|| {
            let names: Vec<&str> = config.scenarios.iter().map(|s| s.name.as_str()).collect();
            anyhow::anyhow!("no [[scenario]] is named `{name}` (configured: {})", names.join(", "))
        })?],
        None => config.scenarios.iter().collect(),
    };
    let sources: Vec<(&str, &TelemetrySource)> =
        scenarios.iter().flat_map(|s| s.telemetry.iter().map(|t| (s.name.as_str(), t))).collect();
    if sources.is_empty() {
        anyhow::bail!("no [[scenario.telemetry]] source is configured in {}", config.source.display());
    }
    let (scraper, prometheus) = (Scraper::new()?, Prometheus::new()?);
    let mut all_read = true;
    let mut out = String::new();
    for (scenario, source) in sources {
        let (text, read) = match source.kind {
            SourceKind::Scrape => probe_scrape(&scraper, scenario, source).await,
            SourceKind::Prometheus => probe_queries(&prometheus, scenario, source).await,
        };
        out.push_str(&text);
        all_read &= read;
    }
    print_stdout(&out)?;
    Ok(if all_read { Exit::Ok } else { Exit::Error })
}

/// Scrapes `source` once: what it says, and whether every series was found.
async fn probe_scrape(scraper: &Scraper, scenario: &str, source: &TelemetrySource) -> (String, bool) {
    let began = Instant::now();
    let scraped = scraper.scrape(source).await;
    let took = began.elapsed().as_millis();
    let url = redact_url(&source.url);
    match scraped {
        Ok(scraped) => {
            let mut out = format!(
                "{scenario} / {}: {url}: {} samples read in {took} ms\n",
                source.name,
                thousands(scraped.samples as f64)
            );
            let mut all_read = true;
            for (spec, reading) in source.series.iter().zip(&scraped.readings) {
                all_read &= reading.matched > 0;
                out.push_str(&format!("  {:<14} {}\n", spec.name, kept(spec, reading, source)));
            }
            (out, all_read)
        }
        Err(why) => (format!("{scenario} / {}: {url}: not read: {why}\n", source.name), false),
    }
}

/// Asks `source`'s Prometheus each series' query at this instant: what it says, and whether each gave a value.
async fn probe_queries(prometheus: &Prometheus, scenario: &str, source: &TelemetrySource) -> (String, bool) {
    let began = Instant::now();
    let mut lines = Vec::new();
    let mut all_read = true;
    for spec in &source.series {
        let Reads::Query(query) = &spec.reads else { continue };
        let answer = prometheus.instant(source, query).await;
        all_read &= matches!(answer, Ok(Some(_)));
        if let Err(QueryError::Server(why)) = answer {
            // The server itself could not be asked: once is enough to say so.
            let url = redact_url(&source.url);
            return (format!("{scenario} / {}: Prometheus at {url}: not read: {why}\n", source.name), false);
        }
        lines.push(format!("  {:<14} {}\n", spec.name, now(spec, &answer, source)));
    }
    let took = began.elapsed().as_millis();
    let mut out = format!(
        "{scenario} / {}: Prometheus at {}: {} queries asked in {took} ms\n",
        source.name,
        redact_url(&source.url),
        lines.len()
    );
    out.extend(lines);
    (out, all_read)
}

/// What an instant query says of a series: its value now, or why there is none.
fn now(spec: &SeriesSpec, answer: &Result<Option<f64>, QueryError>, source: &TelemetrySource) -> String {
    match (answer, spec.kind) {
        (Err(why), _) => format!("not read: {}", why.reason()),
        (Ok(None), _) => "the query gives no series now: the night would keep nothing of it".to_owned(),
        (Ok(Some(value)), SeriesKind::Gauge) => format!("now {}", shown::value(*value, &spec.value_unit())),
        (Ok(Some(value)), SeriesKind::Counter) => format!(
            "{} in all so far; a night keeps its rate, from steps {} apart",
            shown::value(*value, &spec.unit),
            humantime::format_duration(source.every)
        ),
    }
}

/// What one scrape says of a series: what its selector matched, and its value or total.
fn kept(spec: &SeriesSpec, reading: &Reading, source: &TelemetrySource) -> String {
    let matched = match reading.matched {
        0 => return format!("matched no sample of `{}`: the night would keep nothing of it", spec.formula()),
        1 => "1 sample".to_owned(),
        n => format!("{} samples", thousands(n as f64)),
    };
    let every = humantime::format_duration(source.every);
    let now = match (spec.kind, reading.divisor) {
        (SeriesKind::Gauge, Some(divisor)) if divisor != 0.0 => shown::value(reading.value / divisor, "share"),
        (SeriesKind::Gauge, Some(_)) => "its divisor is zero: no share".to_owned(),
        (SeriesKind::Gauge, None) => shown::value(reading.value, &spec.unit),
        (SeriesKind::Counter, _) => format!(
            "{} in all so far; a night keeps its rate{}, from scrapes {every} apart",
            shown::value(reading.value, &spec.unit),
            if spec.divide_by().is_some() { " as a share" } else { "" },
        ),
    };
    let declared = match reading.declared {
        Some(declared) if declared != spec.kind => format!(
            "; note: the exporter declares it a {declared} (its # TYPE line), and this series reads it as a {}",
            spec.kind
        ),
        _ => String::new(),
    };
    format!("{matched}: {now}{declared}")
}

/// `validate`'s lines for a scenario's sources: where each is scraped, how, and the series it keeps.
pub(super) fn describe_sources(scenario: &ScenarioConfig) -> Vec<String> {
    let mut lines = Vec::new();
    for source in &scenario.telemetry {
        let auth = match &source.auth {
            None => String::new(),
            Some(ScrapeAuth::Bearer { var, token }) => format!(", bearer token from ${var} ({})", set(token.is_some())),
            Some(ScrapeAuth::Basic { user, var, password }) => {
                format!(", basic auth as {user}, password from ${var} ({})", set(password.is_some()))
            }
        };
        let exporter = source.exporter.map_or_else(String::new, |e| format!(" ({})", e.as_str()));
        let (url, every, timeout) = (
            redact_url(&source.url),
            humantime::format_duration(source.every),
            humantime::format_duration(source.timeout),
        );
        lines.push(match source.kind {
            SourceKind::Scrape => format!(
                "            telemetry {}{exporter}: scrape {url} every {every} (timeout {timeout}){auth}, keeping:",
                source.name
            ),
            SourceKind::Prometheus => format!(
                "            telemetry {}: query Prometheus at {url} after the run, a value every {every} \
                 (timeout {timeout} a query){auth}, keeping:",
                source.name
            ),
        });
        for spec in &source.series {
            lines.push(format!(
                "              {} ({}, {}; {} is worse) = {}",
                spec.name,
                spec.value_unit(),
                spec.kind,
                spec.worse,
                spec.formula()
            ));
            if let Some(limit) = source.limits.iter().find(|l| l.series == spec.name) {
                lines.push(format!("                {}", limit_words(limit, &spec.value_unit())));
            }
        }
    }
    lines
}

/// `gated: mean at most 60.0 % over the measured stages`.
fn limit_words(limit: &crate::analysis::TelemetryLimit, unit: &str) -> String {
    let shown = |v: f64| crate::model::value_in_unit(v, unit);
    let bounds: Vec<String> =
        [limit.min.map(|m| format!("at least {}", shown(m))), limit.max.map(|m| format!("at most {}", shown(m)))]
            .into_iter()
            .flatten()
            .collect();
    format!("gated: mean {} over the measured stages", bounds.join(" and "))
}

fn set(is_set: bool) -> &'static str {
    if is_set { "set" } else { "not set" }
}
