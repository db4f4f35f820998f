//! `/runs/{id}`: one run in detail: status and validity (and where a night not concluded stands), build, duration and load profile, the verdict with
//! its findings, per-endpoint figures, per-second timelines, sample error messages, and the scenario as run.

use std::collections::BTreeSet;

use askama::Template;
use axum::extract::{Path, State};
use axum::response::Html;

use super::charts::{CountLine, Merge, Series, counts_svg, timeline_svg};
use super::route_name::chart_title;
use super::trend_chart::colour;
use super::{AppState, WebError, parse_run_id};
use crate::model::{
    Change, EndpointResult, Finding, FindingOutcome, HeldBackNights, Interval, Run, RunDetail, TimelinePoint, Verdict,
};
use crate::report::{change_text, interval_text, with_unit};
use crate::store::WorkloadSeries;

/// Error classes on the errors-per-second chart: the errors' amber first, then colours no other figure uses.
const ERROR_CLASS_COLOURS: [&str; 4] = [colour::ERRORS, "#5d6d7e", "#6d4c41", "#e67e22"];

/// One endpoint's timeline charts.
struct EndpointTimeline {
    endpoint: String,
    latency_svg: String,
    rate_svg: String,
    errors_svg: String,
}

#[derive(Template)]
#[template(path = "run.html")]
struct RunPage {
    run: Run,
    duration: String,
    endpoints: Vec<EndpointResult>,
    verdict: Option<Verdict>,
    timelines: Vec<EndpointTimeline>,
    scenario_source: Option<String>,
    deploy_output: Option<String>,
    /// The confirmation rerun's word on this run, and the other run of the pair.
    confirmation: Option<(String, i64)>,
    /// Where a runner's night not yet concluded stands, and who carries it on.
    night: Option<crate::model::NightStep>,
    /// The workload series this run belongs to, and how many measured runs the scenario's other series hold.
    series: Option<WorkloadSeries>,
    other_series: (usize, i64),
    /// The run of the same scenario before this one, for "compare with the previous run".
    previous: Option<i64>,
    /// The nights up to this one, newest first, whose machine was held back one after another, when there
    /// were two or more: the gate has not been watching.
    held_back: Option<HeldBackNights>,
    /// The endpoints whose requests this night were too few for a percentile, in words: what it needs.
    thin: Vec<String>,
    /// The server's side of the run, when it has telemetry sources.
    telemetry: Option<super::run_telemetry::TelemetryView>,
    /// The night's capacity search, when it ran one.
    capacity: Option<super::capacity_chart::CapacityView>,
    /// The segments of a night split across machines, each with its own figures; empty for one machine.
    segments: Vec<crate::model::SegmentFigures>,
}

// Templates pass every argument by reference.
#[allow(clippy::trivially_copy_pass_by_ref, clippy::ref_option)]
impl RunPage {
    fn ms(us: &i64) -> String {
        format!("{:.1}", *us as f64 / 1000.0)
    }

    /// A segment's figure in ms, or a dash when it never reported one.
    fn ms_or_dash(us: &Option<i64>) -> String {
        us.map_or_else(|| "–".to_owned(), |us| format!("{:.1}", us as f64 / 1000.0))
    }

    /// A segment's count, or a dash.
    fn count_or_dash(count: &Option<i64>) -> String {
        count.map_or_else(|| "–".to_owned(), |c| c.to_string())
    }

    fn errors(endpoint: &EndpointResult) -> String {
        format!("{:.3}", endpoint.error_pct())
    }

    /// A count with thousands separated: `20,000`.
    fn count(value: &u64) -> String {
        crate::model::thousands(*value as f64)
    }

    /// A share of draws as a percentage, with the digits it needs.
    fn share(value: &f64) -> String {
        crate::scenario::skew_shapes::percent(*value)
    }

    /// Why a run has no endpoint's figures, in place of an empty table under its headers.
    fn no_endpoints(&self) -> &'static str {
        match self.run.status {
            crate::model::RunStatus::Running => "No figures yet: each endpoint's are stored when the run ends.",
            _ => "Nothing was measured: this run stored no endpoint's figures.",
        }
    }

    fn num(value: &f64) -> String {
        format!("{value:.2}")
    }

    /// Microseconds, whole.
    fn us(value: &f64) -> String {
        format!("{value:.0}")
    }

    /// A percentile's 95 % interval under its value: `11.8–13.0`, or `≥ 11.8` when too few requests bound it.
    fn spread(interval: &Option<Interval>) -> String {
        match interval {
            Some(Interval { lo, hi: Some(hi) }) => format!("{:.1}–{:.1}", lo / 1000.0, hi / 1000.0),
            Some(Interval { lo, hi: None }) => format!("≥ {:.1}, too few requests", lo / 1000.0),
            None => String::new(),
        }
    }

    fn finding_interval(finding: &Finding) -> String {
        interval_text(finding).unwrap_or_default()
    }

    /// A finding's figure with its unit (`12.3 ms`, `0.520 %`), empty when it has none.
    fn value(finding: &Finding, value: &Option<f64>) -> String {
        value.map_or_else(String::new, |v| with_unit(&finding.metric, v))
    }

    fn tonight(finding: &Finding) -> String {
        with_unit(&finding.metric, finding.candidate_value)
    }

    /// The change as every output writes it (`+31.9 %`, `×316`, `from none`), empty without a baseline.
    fn signed(finding: &Finding) -> String {
        match finding.baseline_value {
            Some(_) => change_text(finding.baseline_value, finding.candidate_value, finding.delta_pct),
            None => String::new(),
        }
    }

    /// The exact percentage, for the change's tooltip.
    fn exact(delta: &Option<f64>) -> String {
        delta.map(|pct| Change::from_pct(pct).exact()).unwrap_or_default()
    }

    /// A finding's outcome in words (`too few requests`, not the stored `too_few`).
    fn result(finding: &Finding) -> &'static str {
        match finding.outcome {
            FindingOutcome::Regression => "regression",
            FindingOutcome::GateBreached => "gate breached",
            FindingOutcome::Improvement => "improvement",
            FindingOutcome::TooFew => "too few requests",
            FindingOutcome::Inconclusive => "inconclusive",
            FindingOutcome::Excused => "excused: held-back machine",
            FindingOutcome::Unconfirmed => "unconfirmed: not reproduced",
            FindingOutcome::GatePassed => "gate passed",
            FindingOutcome::NoChange => "no change",
        }
    }

    /// The verdict table's rows, most severe first: regressions and breached gates, then improvements, then
    /// the rest that says something (too few requests, inconclusive, excused, unconfirmed); within each, the
    /// largest change first. Unchanged figures and gates that held are left to the summary's count.
    fn remarkable(verdict: &Verdict) -> Vec<&Finding> {
        let rank = |f: &Finding| match f.outcome {
            o if o.is_failure() => 0,
            FindingOutcome::Improvement => 1,
            _ => 2,
        };
        let size = |f: &Finding| f.delta_pct.map_or(f64::INFINITY, f64::abs);
        let mut shown: Vec<&Finding> = verdict
            .findings
            .iter()
            .filter(|f| !matches!(f.outcome, FindingOutcome::NoChange | FindingOutcome::GatePassed))
            .collect();
        shown.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| size(b).total_cmp(&size(a))));
        shown
    }

    /// `worse`, `better` or nothing, for the finding's row colour.
    fn direction(finding: &Finding) -> &'static str {
        match finding.outcome {
            o if o.is_failure() => "worse",
            FindingOutcome::Improvement => "better",
            _ => "",
        }
    }
}

pub(super) async fn page(State(state): State<AppState>, Path(id): Path<String>) -> Result<Html<String>, WebError> {
    let id = parse_run_id(&id)?;
    let Some(RunDetail { run, endpoints }) = state.store.run_detail(id).await? else {
        return Err(WebError::NotFound(format!("There is no run #{id}.")));
    };
    let verdict = state.store.latest_verdict(id).await?;
    let timeline = state.store.timeline(id).await?;
    let timelines = timelines(&timeline)?;
    let findings = verdict.as_ref().map(|v| v.findings.as_slice()).unwrap_or_default();
    let telemetry = super::run_telemetry::view(&state.store.telemetry(id).await?, &timeline, findings);
    let scenario_source = state.store.scenario_source(id).await?;
    let deploy_output = state.store.deploy_output(id).await?;
    // The header's "· took …" or "· still running" (it read "took still running").
    let duration = run.finished_at.map_or_else(
        || "still running".to_owned(),
        |end| {
            // To the nearest second: a run of 2.99 s took 3 s, as its measured stages say.
            let millis = (end - run.started_at).num_milliseconds().max(0).unsigned_abs();
            format!("took {}", humantime::format_duration(std::time::Duration::from_secs((millis + 500) / 1000)))
        },
    );
    let confirmation = crate::pipeline::confirm::note(&state.store, &run).await?;
    let night = state.store.night_record(id).await?.and_then(crate::model::NightStep::of);
    let (mine, others): (Vec<WorkloadSeries>, Vec<WorkloadSeries>) =
        state.store.workload_series(&run.scenario).await?.into_iter().partition(|s| s.hash == run.scenario_hash);
    let other_series = (others.len(), others.iter().map(|s| s.measured_runs).sum());
    let series = mine.into_iter().next();
    let previous = state.store.previous_run(run.id).await?;
    let held_back = state.store.held_back_in_a_row(&run.scenario, run.id).await?.told_at(Some(run.id));
    // A run never judged (failed, cut short, invalid) says nothing of which percentiles a night judges: "p50
    // judged" beside a failed run's connection errors read as if it had been.
    let never_judged = run.status.measured_nothing() || run.status == crate::model::RunStatus::Invalid;
    let thin = if never_judged { Vec::new() } else { thin_endpoints(&endpoints, findings) };
    let capacity = state.store.capacity(id).await?.as_ref().map(super::capacity_chart::view);
    let segments = concluded_segments(state.store.segment_figures(id).await?, run.status);
    let page = RunPage {
        run,
        duration,
        endpoints,
        verdict,
        timelines,
        scenario_source,
        deploy_output,
        confirmation,
        night,
        series,
        other_series,
        previous,
        held_back,
        thin,
        telemetry,
        capacity,
        segments,
    };
    Ok(Html(page.render()?))
}

/// `POST /drafts: 54 requests: p50 judged; p95 needs ~73, p99 ~381: raise …` for each endpoint that served
/// requests, but too few for a percentile the judge reads: the night's size, told where its figures are. A
/// percentile the verdict judged anyway (by the share of requests past the baseline's tail) is judged.
fn thin_endpoints(endpoints: &[EndpointResult], findings: &[Finding]) -> Vec<String> {
    endpoints
        .iter()
        .filter(|e| e.requests > 0 && !e.is_counted_only())
        .map(|e| {
            crate::scenario::night_sizes::judged_night(&e.endpoint, e.requests as f64, |percentile| {
                findings.iter().any(|f| f.endpoint == e.endpoint && f.metric == percentile && f.outcome.was_judged())
            })
        })
        .filter(|night| !night.short.is_empty())
        .map(|night| night.describe())
        .collect()
}

/// Per endpoint: p50/p99, requests per second, and failures per class, second by second.
fn timelines(points: &[TimelinePoint]) -> Result<Vec<EndpointTimeline>, WebError> {
    let names: BTreeSet<&str> = points.iter().map(|p| p.endpoint.as_str()).collect();
    let (first, last) = (points.iter().map(|p| p.elapsed_s).min(), points.iter().map(|p| p.elapsed_s).max());
    let run_seconds = first.zip(last).unwrap_or((0, -1));
    let mut charts = Vec::new();
    for name in names {
        let seconds: Vec<&TimelinePoint> = points.iter().filter(|p| p.endpoint == name).collect();
        // Spikes must survive merging into buckets: p99 takes the bucket's maximum.
        let series = |name: &str, colour, merge, f: fn(&TimelinePoint) -> f64| Series {
            colour,
            name: name.to_owned(),
            values: seconds.iter().map(|p| f(p)).collect(),
            merge,
        };
        let latency = [
            series("p50 ms", colour::P50, Merge::Median, |p| p.p50_us as f64 / 1000.0),
            series("p99 ms", colour::P99, Merge::Max, |p| p.p99_us as f64 / 1000.0),
        ];
        let errors = error_lines(&seconds);
        charts.push(EndpointTimeline {
            endpoint: name.to_owned(),
            // Counted without response times (WebSocket pushes, sends without an await): no latency to draw.
            latency_svg: if seconds.iter().all(|p| p.requests == 0 || p.p99_us == 0) {
                String::new()
            } else {
                timeline_svg(&chart_title(name, "response time per second"), &seconds, &latency)?
            },
            // Counts are drawn over every second of the run: a second without a request of this endpoint is a
            // 0, not a gap the axis closes (a trial's requests/s never showed 0, and 2 s apart read as 1). A
            // response time has no value there, so its chart keeps the seconds that had one.
            rate_svg: counts_svg(&chart_title(name, "requests per second"), &seconds, run_seconds, &rate_line())?,
            errors_svg: if errors.is_empty() {
                String::new()
            } else {
                counts_svg(&chart_title(name, "errors per second by class"), &seconds, run_seconds, &errors)?
            },
        });
    }
    Ok(charts)
}

/// An endpoint's requests per second, a bucket of seconds read as their mean.
fn rate_line() -> [CountLine; 1] {
    [CountLine {
        colour: colour::THROUGHPUT,
        name: "requests/s".to_owned(),
        count: Box::new(|p| p.requests as f64),
        merge: Merge::Mean,
    }]
}

/// An endpoint's failures per second, a line per class it had: a bucket of seconds keeps its worst one.
fn error_lines(seconds: &[&TimelinePoint]) -> Vec<CountLine> {
    let classes: BTreeSet<String> = seconds.iter().flat_map(|p| p.errors_by_class.keys().cloned()).collect();
    classes
        .into_iter()
        .zip(ERROR_CLASS_COLOURS.iter().cycle())
        .map(|(class, colour)| CountLine {
            colour,
            name: class.clone(),
            count: Box::new(move |p: &TimelinePoint| p.errors_by_class.get(&class).copied().unwrap_or(0) as f64),
            merge: Merge::Max,
        })
        .collect()
}

/// A concluded night's segments as they ended: one still `ready` or `registered`, with no results, was lost
/// (killed, or its machine gone) and never reported; it read "ready" beside the run's reason that named it.
fn concluded_segments(
    mut segments: Vec<crate::model::SegmentFigures>,
    status: crate::model::RunStatus,
) -> Vec<crate::model::SegmentFigures> {
    if status != crate::model::RunStatus::Running {
        for segment in segments.iter_mut().filter(|s| s.status.is_none()) {
            if matches!(segment.state.as_str(), "ready" | "registered") {
                "lost: never reported".clone_into(&mut segment.state);
            }
        }
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(endpoint: &str, elapsed_s: i64) -> TimelinePoint {
        TimelinePoint {
            endpoint: endpoint.into(),
            elapsed_s,
            requests: 3,
            p50_us: 900,
            p99_us: 2000,
            ..TimelinePoint::default()
        }
    }

    #[test]
    fn a_second_without_requests_is_drawn_at_zero_not_left_out() {
        // GET /items was not asked in seconds 3 and 5 of the run, which GET /search was.
        let points: Vec<TimelinePoint> = [1, 2, 4]
            .into_iter()
            .map(|s| second("GET /items", s))
            .chain((1..=5).map(|s| second("GET /search", s)))
            .collect();
        let charts = timelines(&points).unwrap();
        let items = charts.iter().find(|c| c.endpoint == "GET /items").unwrap();
        for label in ["1s", "2s", "3s", "4s", "5s"] {
            assert!(items.rate_svg.contains(&format!(">{label}</text>")), "{label}: {}", items.rate_svg);
        }
        // Its response times have no value in those seconds: the latency chart keeps the seconds that had one.
        assert!(!items.latency_svg.contains(">3s</text>"), "{}", items.latency_svg);
    }
}
