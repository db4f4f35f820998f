//! What `degrade run` prints: a per-endpoint table with the validity verdict for people, or JSON.

use serde_json::json;

use crate::engine::{Measurement, ServiceTimes};
use crate::model::{EndpointResult, LoadSummary, RunId, RunStatus, RunTelemetry, TelemetryStatus};

/// `--format` of `degrade run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RunFormat {
    /// A table for people.
    Human,
    /// One JSON document for scripts.
    Json,
}

/// A stored run and its numbers.
pub(super) struct RunReport {
    pub id: RunId,
    pub scenario: String,
    pub build_id: Option<String>,
    pub status: RunStatus,
    pub measurement: Measurement,
    /// What its telemetry sources gave.
    pub telemetry: RunTelemetry,
    /// Its capacity search, when the scenario has `[scenario.capacity]` and the night finished.
    pub capacity: Option<crate::model::CapacityResult>,
    /// Whether the scenario searches capacity after its night (`[scenario.capacity]`, not a smoke run).
    pub searches: bool,
    /// Endpoints of the scenario that no request reached: they have no row, and nothing of them is measured.
    pub unreached: Vec<String>,
}

fn ms(us: i64) -> String {
    format!("{:.1}", us as f64 / 1000.0)
}

/// `Load: open model, 40.0 sessions/s planned, 40.0 achieved over 5 s measured, …`, and a blank line.
fn load_line(load: &LoadSummary) -> String {
    // The closed model plans users, not a rate: its rate is only what the users achieved.
    let rates = if load.target_rate > 0.0 {
        format!("{:.1} sessions/s planned, {:.1} achieved", load.target_rate, load.achieved_rate)
    } else {
        format!("{:.1} sessions/s achieved", load.achieved_rate)
    };
    format!(
        "Load: {} model, {rates} over {:.0} s measured, {} dropped, schedule lag p99 {} ms, generator CPU {:.0} %{}\n\n",
        load.model,
        load.measured_secs,
        load.dropped,
        ms(load.schedule_lag_p99_us),
        load.generator_cpu_pct,
        machine_figures(load)
    )
}

/// Why a scenario that searches capacity has no search tonight: a search builds on a night whose own stages
/// measured the target, and says nothing after one that did not.
fn capacity_not_run(night: RunStatus) -> String {
    let why = match night {
        RunStatus::Invalid => {
            "not run: the night's own stages were invalid (why below), and a search runs only after a valid night"
                .to_owned()
        }
        // The search ran, but what it found could not be stored or read back: the warnings say why.
        RunStatus::Finished => "none stored: its result could not be stored or read back (see the warnings)".to_owned(),
        other => format!("not run: the night's own stages ended {other}"),
    };
    format!("Capacity search: {why}.\n\n")
}

/// The endpoints' figures as a table, then each named endpoint's errors by class with a sample.
fn endpoint_table(endpoints: &[EndpointResult], service: &[ServiceTimes]) -> String {
    let width = endpoints.iter().map(|e| e.endpoint.chars().count()).max().unwrap_or(8).max(8);
    let mut out = format!(
        "{:<width$}  {:>8} {:>8} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9}\n",
        "endpoint", "count", "rate/s", "errors", "p50 ms", "p90 ms", "p95 ms", "p99 ms", "max ms", "svc p99"
    );
    for (e, service) in endpoints.iter().zip(service) {
        let (name, count, rate, errors) = (&e.endpoint, e.requests, e.rate, e.errors);
        if e.is_counted_only() {
            // WebSocket pushes and sends without an await: no response time to claim.
            out.push_str(&format!("{name:<width$}  {count:>8} {rate:>8.1} {errors:>7}  counted, not timed\n"));
            continue;
        }
        let times = [e.p50_us, e.p90_us, e.p95_us, e.p99_us, e.max_us].map(ms);
        let [p50, p90, p95, p99, max] = &times;
        let svc = ms(service.p99_us as i64);
        out.push_str(&format!(
            "{name:<width$}  {count:>8} {rate:>8.1} {errors:>7} {p50:>8} {p90:>8} {p95:>8} {p99:>8} {max:>8} {svc:>9}\n"
        ));
    }
    for e in endpoints.iter().skip(1) {
        for (class, count) in &e.errors_by_class {
            let sample = e.error_samples.get(class).and_then(|s| s.first()).map_or("", String::as_str);
            out.push_str(&format!("  {}: {count} {class}, e.g. {sample}\n", e.endpoint));
        }
    }
    out
}

/// The planned endpoints that got no request, and the usual reasons, so a step the night never sent is not
/// mistaken for one that was measured and fine.
fn unreached_lines(unreached: &[String]) -> String {
    if unreached.is_empty() {
        return String::new();
    }
    format!(
        "No request reached {}, so nothing of {} is measured. A session ends at its first step that fails, so the \
         steps after a failing one are never sent; a flow's small weight or a short night can leave one out too.\n",
        unreached.join(", "),
        if unreached.len() == 1 { "it" } else { "them" }
    )
}

/// Whether the run is valid, and if not why: a failed run is never judged, an invalid one never a baseline.
fn validity_lines(status: RunStatus, reasons: &[String]) -> String {
    let heading = match (status, reasons.is_empty()) {
        (RunStatus::Failed, _) => "Failed, so it is never judged and never serves as a baseline:",
        (_, true) => return "Valid: the generator delivered the planned load.\n".to_owned(),
        (_, false) => "Not valid, so it will not serve as a baseline:",
    };
    let mut out = format!("{heading}\n");
    for reason in reasons {
        out.push_str(&format!("  - {reason}\n"));
    }
    out
}

/// ", machine CPU 9 % busy (0.3 % stolen by its host), loopback echo 58/87 µs (p50/p90)", where the kernel
/// published the figures and the probe ran.
fn machine_figures(load: &LoadSummary) -> String {
    let cpu = match (load.machine_cpu_busy_pct, load.machine_cpu_stolen_pct) {
        (None, _) => String::new(),
        (Some(busy), Some(stolen)) if stolen > 0.0 => {
            format!(", machine CPU {busy:.0} % busy ({stolen:.1} % stolen by its host)")
        }
        (Some(busy), _) => format!(", machine CPU {busy:.0} % busy"),
    };
    let echo = match (load.machine_echo_p50_us, load.machine_echo_p90_us) {
        (Some(p50), Some(p90)) => format!(", loopback echo {p50:.0}/{p90:.0} µs (p50/p90)"),
        _ => String::new(),
    };
    cpu + &echo
}

/// The telemetry block: each series' summary, or why it has none; nothing when no source is configured.
fn telemetry_lines(telemetry: &RunTelemetry) -> String {
    if telemetry.sources.is_empty() {
        return String::new();
    }
    let mut out = "Telemetry, over the measured stages:\n".to_owned();
    let width = telemetry.sources.iter().flat_map(|s| &s.series).map(|s| s.name.chars().count()).max().unwrap_or(0);
    for source in &telemetry.sources {
        let note = source.reason.as_deref().map_or_else(String::new, |r| format!(": {r}"));
        out.push_str(&format!(
            "  {} ({} of {} scrapes read{note})\n",
            source.name,
            source.scrapes - source.failed_scrapes,
            source.scrapes
        ));
        for series in &source.series {
            let figures = match (&series.summary, &series.reason) {
                (Some(summary), _) => crate::telemetry::shown::summary(series, summary),
                // A source that was never read said why above.
                (None, Some(reason)) if source.status != TelemetryStatus::Missing => format!("missing: {reason}"),
                (None, _) => "missing".to_owned(),
            };
            out.push_str(&format!("    {:<width$}  {figures}\n", series.name));
        }
    }
    out.push('\n');
    out
}

/// Each skewed draw's predicted shares beside what the run drew, then a blank line; nothing without skew.
fn skew_lines(skew: &[crate::model::SkewObserved]) -> String {
    use crate::scenario::skew_shapes::percent;
    let mut out = String::new();
    for s in skew {
        let departs = if s.departs() { "  (more than chance explains: check the data)" } else { "" };
        out.push_str(&format!(
            "Skew {}: {} drawn {} times: hottest key {} predicted, {} drawn; top 1 % {} predicted, {} drawn{departs}\n",
            s.site,
            s.draw,
            s.draws,
            percent(s.predicted_hottest),
            percent(s.observed_hottest),
            percent(s.predicted_top_percent),
            percent(s.observed_top_percent),
        ));
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

impl RunReport {
    pub(super) fn render(&self, format: RunFormat) -> String {
        match format {
            RunFormat::Human => self.human(),
            RunFormat::Json => self.json(),
        }
    }

    fn human(&self) -> String {
        let r = &self.measurement.results;
        let build = self.build_id.as_deref().map_or(String::new(), |b| format!(" (build {b})"));
        let mut out = format!("Run {} of {}{build}: {}\n", self.id, self.scenario, self.status);
        out.push_str(&load_line(&r.load_summary));
        out.push_str(&skew_lines(&r.load_summary.skew));
        out.push_str(&endpoint_table(&r.endpoints, &self.measurement.service));
        out.push_str(&unreached_lines(&self.unreached));
        out.push('\n');
        out.push_str(&telemetry_lines(&self.telemetry));
        if let Some(capacity) = &self.capacity {
            out.push_str(&format!(
                "Capacity search: {}, {} in {:.0} s.\n\n",
                capacity.describe(),
                crate::model::counted(capacity.steps.len(), "step", "steps"),
                capacity.search_secs
            ));
        } else if self.searches {
            out.push_str(&capacity_not_run(r.status));
        }
        out.push_str(&validity_lines(r.status, &r.validity_reasons));
        out.push_str(
            "Response times count from when each request should have started; svc p99 is the server's time alone.\n",
        );
        // A failed or aborted run is never judged: `check --run` would only refuse it.
        let judge = if matches!(r.status, RunStatus::Failed | RunStatus::Aborted) {
            String::new()
        } else {
            format!("degrade check --run {} (judge it), ", self.id)
        };
        out.push_str(&format!("Next: {judge}degrade serve (see it at /runs/{}).\n", self.id));
        out
    }

    fn json(&self) -> String {
        let r = &self.measurement.results;
        let value = json!({
            "run_id": self.id,
            "scenario": self.scenario,
            "build_id": self.build_id,
            "status": self.status,
            "started_at": self.measurement.started_at,
            "finished_at": r.finished_at,
            "validity_reasons": r.validity_reasons,
            "load_summary": r.load_summary,
            "endpoints": r.endpoints,
            "service_times": self.measurement.service,
            "telemetry": self.telemetry.sources,
            "capacity": self.capacity,
            "unreached": self.unreached,
        });
        serde_json::to_string_pretty(&value).expect("plain data serializes") + "\n"
    }
}
