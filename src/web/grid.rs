//! The regression grid of the scenario page: endpoints × the last nights of one workload series, each cell
//! coloured by what that night's verdict said of the endpoint — the alarm colour for a regression or a
//! breached gate, green for an improvement, and otherwise a tint that grows with the p95 change against the
//! baseline — with the numbers on hover and the run a click away. One glance shows which route started
//! degrading on which night, and whether it was one route or all of them.

use std::collections::BTreeSet;

use crate::model::{Change, FindingOutcome, OVERALL_ENDPOINT, RunStatus};
use crate::report::with_unit;
use crate::store::{GridFinding, GridRun};

/// How many nights the grid shows.
pub const GRID_NIGHTS: u32 = 30;

/// One cell: its CSS class and inline tint, its text, tooltip and run.
pub struct Cell {
    /// `regressed`, `improved`, `steady` or `unjudged`.
    pub class: &'static str,
    /// A background tint for steady cells, by how far p95 moved.
    pub style: String,
    /// The change shown in the cell as the grid writes it ([`Change::short`]): `+12`, `×316`.
    pub text: String,
    /// What hovering says.
    pub title: String,
    /// The run the cell links to.
    pub run_id: i64,
}

/// The grid: column heads (run, short date, tooltip) and one row of cells per endpoint.
pub struct Grid {
    /// Per night: the run, its date as `MM-DD`, and a tooltip (build, status).
    pub nights: Vec<(i64, String, String)>,
    /// Per endpoint, the whole run first: its name and cells, one per night.
    pub rows: Vec<(String, Vec<Cell>)>,
}

impl Grid {
    /// The grid of `runs` (oldest first); `min_effect_pct` scales the tint: a steady cell at the minimum
    /// effect is as strong as a tint gets.
    #[must_use]
    pub fn new(runs: &[GridRun], min_effect_pct: f64) -> Self {
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
                let tip = format!("run #{}, {}{build}: {}", r.id, r.started_at.format("%Y-%m-%d %H:%M UTC"), r.status);
                (r.id, r.started_at.format("%m-%d").to_string(), tip)
            })
            .collect();
        let rows = endpoints
            .iter()
            .map(|endpoint| {
                ((*endpoint).to_owned(), runs.iter().map(|run| cell(run, endpoint, min_effect_pct)).collect())
            })
            .collect();
        Self { nights, rows }
    }
}

fn cell(run: &GridRun, endpoint: &str, min_effect_pct: f64) -> Cell {
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
    let signed = |f: &GridFinding| f.delta_pct.map(|d| Change::from_pct(d).short()).unwrap_or_default();
    if let Some(f) = worst(&[FindingOutcome::Regression, FindingOutcome::GateBreached]) {
        // A regression the night's rerun did not reproduce, or has not decided yet, is shown, not alarmed.
        let (class, why) = match run.status.parse::<RunStatus>() {
            Ok(RunStatus::Unconfirmed) => ("unconfirmed", "; not reproduced by the night's rerun"),
            Ok(RunStatus::Confirming) => ("unconfirmed", "; a rerun of the same build is deciding it"),
            _ => ("regressed", ""),
        };
        return Cell { class, style: String::new(), text: signed(f), title: title(described(f)) + why, run_id: run.id };
    }
    if let Some(f) = worst(&[FindingOutcome::Improvement]) {
        return Cell {
            class: "improved",
            style: String::new(),
            text: signed(f),
            title: title(described(f)),
            run_id: run.id,
        };
    }
    match mine.iter().find(|f| f.metric == "p95" && f.delta_pct.is_some()) {
        Some(p95) => {
            let d = p95.delta_pct.unwrap_or(0.0);
            // Up to 45 % opacity at the minimum effect: a steady cell never looks like a regressed one.
            let strength = (d.abs() / min_effect_pct.max(1.0)).min(1.0) * 0.45;
            let rgb = if d > 0.0 { "217, 45, 32" } else { "30, 132, 73" };
            Cell {
                class: "steady",
                style: format!("background: rgba({rgb}, {strength:.2})"),
                text: String::new(),
                title: title(described(p95)),
                run_id: run.id,
            }
        }
        None => Cell {
            class: "unjudged",
            style: String::new(),
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
    fn one_route_that_started_degrading_stands_out() {
        let runs = [
            run(
                1,
                &[("GET /a", "p95", FindingOutcome::NoChange, 2.0), ("GET /b", "p95", FindingOutcome::NoChange, -1.0)],
            ),
            run(
                2,
                &[
                    ("GET /a", "p95", FindingOutcome::Regression, 35.0),
                    ("GET /b", "p95", FindingOutcome::NoChange, 1.0),
                ],
            ),
            run(3, &[]),
        ];
        let grid = Grid::new(&runs, 10.0);
        assert_eq!(grid.nights.len(), 3);
        assert_eq!(grid.nights[1].1, "11-22");
        let (name, cells) = &grid.rows[0];
        assert_eq!(name, "GET /a");
        let classes: Vec<&str> = cells.iter().map(|c| c.class).collect();
        assert_eq!(classes, ["steady", "regressed", "unjudged"]);
        assert_eq!(cells[1].text, "+35");
        assert_eq!(cells[1].title, "run #2, 2026-11-22 02:00 UTC: GET /a p95 20.0 ms → 27.0 ms, +35.0 % (regression)");
        assert_eq!(cells[0].style, "background: rgba(217, 45, 32, 0.09)");
        assert!(grid.rows[1].1.iter().all(|c| c.class != "regressed"), "the other route stays calm");
        let cell = |pct: f64| Change::from_pct(pct).short();
        assert_eq!([cell(-12.4), cell(260.0), cell(4404.0)], ["-12", "+260", "×45"], "the table's rule, shorter");
    }

    #[test]
    fn a_regression_the_nights_rerun_did_not_reproduce_is_shown_not_alarmed() {
        let regressed = [("GET /a", "p95", FindingOutcome::Regression, 35.0)];
        let runs = [
            GridRun { status: "unconfirmed".into(), ..run(1, &regressed) },
            GridRun { status: "confirming".into(), ..run(2, &regressed) },
            GridRun { status: "regressed".into(), ..run(3, &regressed) },
        ];
        let cells = &Grid::new(&runs, 10.0).rows[0].1;
        let classes: Vec<&str> = cells.iter().map(|c| c.class).collect();
        assert_eq!(classes, ["unconfirmed", "unconfirmed", "regressed"]);
        assert!(cells[0].title.ends_with("(regression); not reproduced by the night's rerun"), "{}", cells[0].title);
        assert!(cells[1].title.ends_with("; a rerun of the same build is deciding it"), "{}", cells[1].title);
    }
}
