//! `degrade telemetry probe`: scrapes each telemetry source once and prints what a night would keep, so a
//! source is set up without waiting for a night; and the lines `degrade validate` prints for each source.

use std::time::Instant;

use super::{ConfigSource, Exit, print_stdout};
use crate::config::{ScenarioConfig, ScrapeAuth, SeriesSpec, TelemetrySource};
use crate::model::SeriesKind;
use crate::scenario::tape_source::thousands;
use crate::secret::redact_url;
use crate::telemetry::{Reading, Scraper, shown};

/// What to do with the telemetry sources.
#[derive(Debug, clap::Subcommand)]
pub enum TelemetryCommand {
    /// Scrape each [[scenario.telemetry]] source once and print what a night would keep of it.
    #[command(after_help = "Examples:\n  degrade telemetry probe\n  degrade telemetry probe checkout\n\n\
        Exits 2 when a source cannot be read or a series matches no sample.")]
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
    let scraper = Scraper::new()?;
    let mut all_read = true;
    let mut out = String::new();
    for (scenario, source) in sources {
        let began = Instant::now();
        let scraped = scraper.scrape(source).await;
        let took = began.elapsed().as_millis();
        let url = redact_url(&source.url);
        match scraped {
            Ok(scraped) => {
                out.push_str(&format!(
                    "{scenario} / {}: {url}: {} samples read in {took} ms\n",
                    source.name,
                    thousands(scraped.samples as f64)
                ));
                for (spec, reading) in source.series.iter().zip(&scraped.readings) {
                    all_read &= reading.matched > 0;
                    out.push_str(&format!("  {:<14} {}\n", spec.name, kept(spec, reading, source)));
                }
            }
            Err(why) => {
                all_read = false;
                out.push_str(&format!("{scenario} / {}: {url}: not read: {why}\n", source.name));
            }
        }
    }
    print_stdout(&out)?;
    Ok(if all_read { Exit::Ok } else { Exit::Error })
}

/// What one scrape says of a series: what its selector matched, and its value or total.
fn kept(spec: &SeriesSpec, reading: &Reading, source: &TelemetrySource) -> String {
    let matched = match reading.matched {
        0 => return format!("matched no sample of `{}`: the night would keep nothing of it", spec.metric),
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
            if spec.divide_by.is_some() { " as a share" } else { "" },
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
        lines.push(format!(
            "            telemetry {}{exporter}: scrape {} every {} (timeout {}){auth}, keeping:",
            source.name,
            redact_url(&source.url),
            humantime::format_duration(source.every),
            humantime::format_duration(source.timeout)
        ));
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
