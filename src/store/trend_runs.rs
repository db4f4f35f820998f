//! A trend read one point per run, for ranges of at most `trends::MAX_RUN_POINTS` runs: the runs once
//! (time, status, build), and each endpoint's figures as one row, its runs joined into one text in the
//! database. The SQLite driver hands every row across threads, and a year of nightly runs × 20 endpoints
//! read as rows (7,300 of them) cost a page over 60 ms; every field is an integer, because SQLite's exact
//! float formatting was the next cost (latencies are stored in whole µs; the error rate is read in
//! millionths of a percent, throughput in thousandths of a request per second; the two databases round a
//! half differently, by that last unit at most). A line is written by `format('%s …')`, the same function
//! in both databases, rather than by a chain of `||`, each of which copied the line so far.

use std::collections::HashMap;

use super::trend_rows::{PointRow, failing_outcomes, regressed_here};
use super::{Store, StoreError, on_pool};

/// The measured runs of one series (`$4`) of the scenario in the range, in time order. Failed and aborted
/// runs measured nothing about the build.
const RUNS: &str = "select runs.id, runs.started_at, runs.status, runs.build_id from runs \
    join scenarios on scenarios.id = runs.scenario_id \
    where scenarios.name = $1 and runs.started_at >= $2 and runs.started_at < $3 and runs.scenario_hash = $4 \
    and runs.status not in ('failed', 'aborted') order by runs.started_at, runs.id";

/// The same runs' figures, one row per endpoint, a line per run: run id, p50, p95 and p99 (µs), error rate
/// (millionths of a percent), throughput (thousandths of a request per second), and 1 when the run regressed
/// on this endpoint.
const FIGURES: &str = concat!(
    "select r.endpoint, string_agg(format('%s %s %s %s %s %s %s', runs.id, r.p50_us, r.p95_us, r.p99_us, \
     cast(round(1e6 * r.error_pct) as bigint), cast(round(1e3 * r.rate) as bigint), ",
    regressed_here!(),
    "), '\n') as runs \
     from endpoint_results r join runs on runs.id = r.run_id join scenarios on scenarios.id = runs.scenario_id \
     where scenarios.name = $1 and runs.started_at >= $2 and runs.started_at < $3 and runs.scenario_hash = $4 \
     and runs.status not in ('failed', 'aborted') group by r.endpoint order by r.endpoint"
);

#[derive(sqlx_macros::FromRow)]
struct RunRow {
    id: i64,
    started_at: i64,
    status: String,
    build_id: Option<String>,
}

#[derive(sqlx_macros::FromRow)]
struct EndpointRuns {
    endpoint: String,
    runs: String,
}

/// Every endpoint's points of the series `series` in `[from, to)` (ms), one per run, by endpoint then time.
pub(super) async fn point_per_run(
    store: &Store,
    scenario: &str,
    series: &str,
    from: i64,
    to: i64,
) -> Result<Vec<PointRow>, StoreError> {
    let runs: Vec<RunRow> = on_pool!(store, |pool| sqlx::query_as(RUNS)
        .bind(scenario)
        .bind(from)
        .bind(to)
        .bind(series)
        .fetch_all(pool)
        .await?);
    let endpoints: Vec<EndpointRuns> = on_pool!(store, |pool| sqlx::query_as(FIGURES)
        .bind(scenario)
        .bind(from)
        .bind(to)
        .bind(series)
        .fetch_all(pool)
        .await?);
    // Each run's place in time order, to put every endpoint's lines in that order.
    let order: HashMap<i64, usize> = runs.iter().enumerate().map(|(place, run)| (run.id, place)).collect();
    let mut points = Vec::new();
    for endpoint in endpoints {
        let mut mine = endpoint_points(&endpoint, &runs, &order)?;
        mine.sort_by_key(|(place, _)| *place);
        points.extend(mine.into_iter().map(|(_, point)| point));
    }
    Ok(points)
}

/// One endpoint's points, each with its run's place in time order.
fn endpoint_points(
    endpoint: &EndpointRuns,
    runs: &[RunRow],
    order: &HashMap<i64, usize>,
) -> Result<Vec<(usize, PointRow)>, StoreError> {
    let name = &endpoint.endpoint;
    let corrupt = |line: &str| StoreError::Corrupt(format!("trend of `{name}`: unreadable run `{line}`"));
    endpoint
        .runs
        .split('\n')
        .map(|line| {
            let mut fields = line.split(' ');
            let mut number = || fields.next().and_then(|f| f.parse::<i64>().ok()).ok_or_else(|| corrupt(line));
            let id = number()?;
            let (p50_us, p95_us, p99_us) = (number()? as f64, number()? as f64, number()? as f64);
            let (error_pct, rate) = (number()? as f64 / 1e6, number()? as f64 / 1e3);
            let regressed = number()?;
            // A run stored between the two reads is in the figures only: it is left for the next page.
            let Some(&place) = order.get(&id) else { return Ok(None) };
            let run = &runs[place];
            Ok(Some((
                place,
                PointRow {
                    endpoint: name.clone(),
                    started_at: run.started_at,
                    runs: 1,
                    run_id: Some(id),
                    status: Some(run.status.clone()),
                    p50_us,
                    p95_us,
                    p99_us,
                    error_pct,
                    rate,
                    min_p95_us: p95_us,
                    max_p95_us: p95_us,
                    max_p99_us: p99_us,
                    max_error_pct: error_pct,
                    regressed,
                    invalid: i64::from(run.status == "invalid"),
                    build_id: run.build_id.clone(),
                },
            )))
        })
        .filter_map(Result::transpose)
        .collect()
}
