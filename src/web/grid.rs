//! The regression grid of the scenario page: endpoints × the last nights of one workload series, each cell
//! coloured by what that night's verdict said of the endpoint — the alarm colour for a regression or a
//! breached gate, amber for one the night's rerun did not reproduce, green for an improvement — and plain
//! otherwise, however far a figure moved: a movement the verdict judged no change is not a finding, and a tint
//! would read as one. The numbers are on hover and the run a click away; each column is headed by its build,
//! so "since which build" is read without hovering. One glance shows which route started degrading on which
//! build, and whether it was one route or all of them.

use std::collections::BTreeSet;

use super::route_name::shortened;
use crate::model::{Change, FindingOutcome, OVERALL_ENDPOINT, RunStatus};
use crate::report::with_unit;
use crate::store::{GridFinding, GridRun};

/// How many nights the grid shows.
pub const GRID_NIGHTS: u32 = 30;

/// A column head's build is shortened (from the middle) to this many characters; the tooltip has it whole.
const BUILD_CHARACTERS: usize = 12;

/// One cell: its CSS class, its text, tooltip and run.
pub struct Cell {
    /// `regressed`, `unconfirmed`, `improved`, `steady` or `unjudged`.
    pub class: &'static str,
    /// The change shown in the cell as the grid writes it ([`Change::short`]): `+12`, `×316`.
    pub text: String,
    /// What hovering says.
    pub title: String,
    /// The run the cell links to.
    pub run_id: i64,
}

/// One column's head: the night's run, its build (or run number without one) and a tooltip.
pub struct Night {
    /// The run the head links to.
    pub run_id: i64,
    /// The build, shortened to fit; `#12` for a run without a build id.
    pub label: String,
    /// Run number, time, whole build and status.
    pub title: String,
}

/// The grid: column heads and one row of cells per endpoint.
pub struct Grid {
    /// One head per night, oldest first.
    pub nights: Vec<Night>,
    /// Per endpoint, the whole run first: its name and cells, one per night.
    pub rows: Vec<(String, Vec<Cell>)>,
}

impl Grid {
    /// The grid of `runs` (oldest first).
    #[must_use]
    pub fn new(runs: &[GridRun]) -> Self {
        let mut endpoints: Vec<&str> = runs
            .iter()
            .flat_map(|r| r.findings.iter().map(|f| f.endpoint.as_str()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        endpoints.sort_by_key(|n| (*n != OVERALL_ENDPOINT, *n));
        let nights = runs
            .iter()
            .map(|r| {
                let build = r.build_id.as_deref().map(|b| format!(", build {b}")).unwrap_or_default();
                let when = r.started_at.format("%Y-%m-%d %H:%M UTC");
                Night {
                    run_id: r.id,
                    label: r
                        .build_id
                        .as_deref()
                        .map_or_else(|| format!("#{}", r.id), |b| shortened(b, BUILD_CHARACTERS)),
                    title: format!("run #{}, {when}{build}: {}", r.id, r.status),
                }
            })
            .collect();
        let rows = endpoints
            .iter()
            .map(|endpoint| ((*endpoint).to_owned(), runs.iter().map(|run| cell(run, endpoint)).collect()))
            .collect();
        Self { nights, rows }
    }
}

fn cell(run: &GridRun, endpoint: &str) -> Cell {
    let mine: Vec<&GridFinding> = run.findings.iter().filter(|f| f.endpoint == endpoint).collect();
    let delta = |f: &&GridFinding| f.delta_pct.unwrap_or(0.0);
    let worst = |outcomes: &[FindingOutcome]| {
        mine.iter()
            .copied()
            .filter(|f| outcomes.contains(&f.outcome))
            .max_by(|a, b| delta(a).abs().total_cmp(&delta(b).abs()))
    };
    let when = run.started_at.format("%Y-%m-%d %H:%M UTC");
    // The numbers behind the colour: baseline → tonight in the metric's unit, and the change.
    let described = |f: &GridFinding| {
        let tonight = with_unit(&f.metric, f.candidate_value);
        let values = f.baseline_value.map_or(tonight.clone(), |b| format!("{} → {tonight}", with_unit(&f.metric, b)));
        match f.delta_pct.map(Change::from_pct) {
            Some(change) => format!("{endpoint} {} {values}, {} ({})", f.metric, change.spelled_out(), f.outcome),
            None => format!("{endpoint} {} {values} ({})", f.metric, f.outcome),
        }
    };
    let title = |what: String| format!("run #{}, {when}: {what}", run.id);
    // A rise from zero (an endpoint that never failed) has no ratio; the cell still says which way it went.
    let signed = |f: &GridFinding| match (f.delta_pct, f.baseline_value) {
        (Some(d), _) => Change::from_pct(d).short(),
        (None, Some(0.0)) => "from 0".to_owned(),
        (None, _) => String::new(),
    };
    if let Some(f) = worst(&[FindingOutcome::Regression, FindingOutcome::GateBreached]) {
        // A regression the night's rerun did not reproduce, or has not decided yet, is shown, not alarmed.
        let (class, why) = match run.status.parse::<RunStatus>() {
            Ok(RunStatus::Unconfirmed) => ("unconfirmed", "; not reproduced by the night's rerun"),
            Ok(RunStatus::Confirming) => ("unconfirmed", "; a rerun of the same build is deciding it"),
            _ => ("regressed", ""),
        };
        return Cell { class, text: signed(f), title: title(described(f)) + why, run_id: run.id };
    }
    if let Some(f) = worst(&[FindingOutcome::Unconfirmed]) {
        let why = "; not reproduced by the night's rerun";
        return Cell { class: "unconfirmed", text: signed(f), title: title(described(f)) + why, run_id: run.id };
    }
    if let Some(f) = worst(&[FindingOutcome::Improvement]) {
        return Cell { class: "improved", text: signed(f), title: title(described(f)), run_id: run.id };
    }
    // Judged, and no change: plain, whatever p95 did; the tooltip still has its numbers. Too few requests, or
    // an inconclusive verdict, is not judged.
    match mine.iter().find(|f| f.metric == "p95") {
        Some(p95) => {
            let judged = matches!(p95.outcome, FindingOutcome::NoChange | FindingOutcome::Excused);
            let class = if judged { "steady" } else { "unjudged" };
            Cell { class, text: String::new(), title: title(described(p95)), run_id: run.id }
        }
        None => Cell {
            class: "unjudged",
            text: String::new(),
            title: title(format!("{endpoint}: not judged ({})", run.status)),
            run_id: run.id,
        },
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn run(id: i64, findings: &[(&str, &str, FindingOutcome, f64)]) -> GridRun {
        GridRun {
            id,
            started_at: chrono::Utc.with_ymd_and_hms(2026, 11, 20 + id as u32, 2, 0, 0).unwrap(),
            build_id: Some(format!("1.0.{id}")),
            status: "passed".into(),
            findings: findings
                .iter()
                .map(|(endpoint, metric, outcome, delta)| GridFinding {
                    endpoint: (*endpoint).into(),
                    metric: (*metric).into(),
                    outcome: *outcome,
                    delta_pct: Some(*delta),
                    baseline_value: Some(20.0),
                    candidate_value: 20.0 * (1.0 + delta / 100.0),
                })
                .collect(),
        }
    }

    #[test]
    fn one_route_that_started_degrading_stands_out_and_only_findings_are_coloured() {
        let runs = [
            run(
                1,
                &[("GET /a", "p95", FindingOutcome::NoChange, 8.0), ("GET /b", "p95", FindingOutcome::NoChange, -1.0)],
            ),
            run(
                2,
                &[
                    ("GET /a", "p95", FindingOutcome::Regression, 31531.5),
                    ("GET /b", "p95", FindingOutcome::NoChange, 57.0),
                ],
            ),
            run(3, &[]),
            GridRun { build_id: None, ..run(4, &[("GET /a", "p95", FindingOutcome::TooFew, 3.0)]) },
        ];
        let grid = Grid::new(&runs);
        let heads: Vec<(&str, &str)> = grid.nights.iter().map(|n| (n.label.as_str(), n.title.as_str())).collect();
        assert_eq!(
            heads[1],
            ("1.0.2", "run #2, 2026-11-22 02:00 UTC, build 1.0.2: passed"),
            "the build heads a column"
        );
        assert_eq!(heads[3].0, "#4", "a run without a build is named by its number");
        let (name, cells) = &grid.rows[0];
        assert_eq!(name, "GET /a");
        let classes: Vec<&str> = cells.iter().map(|c| c.class).collect();
        assert_eq!(classes, ["steady", "regressed", "unjudged", "unjudged"]);
        assert_eq!(cells[1].text, "×316", "the factor the changes table shows too");
        assert_eq!(
            cells[1].title,
            "run #2, 2026-11-22 02:00 UTC: GET /a p95 20.0 ms → 6326.3 ms, ×316 (+31531.5 %) (regression)"
        );
        // GET /b moved +57 % and the verdict said no change: a plain cell, its numbers on hover only.
        let b = &grid.rows[1].1[1];
        assert_eq!((b.class, b.text.as_str()), ("steady", ""));
        assert!(b.title.ends_with("20.0 ms → 31.4 ms, +57.0 % (no_change)"), "{}", b.title);
    }

    #[test]
    fn a_long_build_is_shortened_in_the_middle_in_its_head() {
        let long = GridRun { build_id: Some("2026.12.04-main-8f3e2a91".into()), ..run(1, &[]) };
        let night = &Grid::new(&[long]).nights[0];
        assert_eq!(night.label, "202…8f3e2a91");
        assert!(night.title.contains("build 2026.12.04-main-8f3e2a91"), "{}", night.title);
    }

    #[test]
    fn a_regression_the_nights_rerun_did_not_reproduce_is_shown_not_alarmed() {
        let regressed = [("GET /a", "p95", FindingOutcome::Regression, 35.0)];
        // Run 4: a confirmed night's first run, whose finding on this route its rerun did not reproduce.
        let unreproduced = [("GET /a", "p95", FindingOutcome::Unconfirmed, 35.0)];
        let runs = [
            GridRun { status: "unconfirmed".into(), ..run(1, &regressed) },
            GridRun { status: "confirming".into(), ..run(2, &regressed) },
            GridRun { status: "regressed".into(), ..run(3, &regressed) },
            GridRun { status: "regressed".into(), ..run(4, &unreproduced) },
        ];
        let cells = &Grid::new(&runs).rows[0].1;
        let classes: Vec<&str> = cells.iter().map(|c| c.class).collect();
        assert_eq!(classes, ["unconfirmed", "unconfirmed", "regressed", "unconfirmed"]);
        assert!(cells[3].title.ends_with("(unconfirmed); not reproduced by the night's rerun"), "{}", cells[3].title);
        assert!(cells[0].title.ends_with("(regression); not reproduced by the night's rerun"), "{}", cells[0].title);
        assert!(cells[1].title.ends_with("; a rerun of the same build is deciding it"), "{}", cells[1].title);
    }
}
