//! Workload series: the runs of one scenario grouped by scenario hash. An edited scenario file, or a run
//! reshaped by `--duration` or `--rate-scale`, starts a series of its own, and a run is only ever judged
//! against runs of its own series; the dashboard names the series so a short baseline is not a mystery.

use chrono::{DateTime, Utc};

use super::{Store, StoreError, from_millis, on_pool};
use crate::model::{LoadSummary, RunId};

/// One workload series of a scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadSeries {
    /// The scenario hash that identifies the workload.
    pub hash: String,
    /// Runs that measured something (every status but running, failed and aborted).
    pub measured_runs: i64,
    /// The first and the newest run's start.
    pub first_started: DateTime<Utc>,
    /// The newest run's start.
    pub last_started: DateTime<Utc>,
    /// The newest measured run, whose load summary describes the workload.
    pub newest_run: RunId,
    /// The newest run's load: how long the measured stages lasted and at what rate.
    pub load: Option<LoadSummary>,
}

impl WorkloadSeries {
    /// The hash as shown: its first eight digits, enough to tell series apart on one page.
    #[must_use]
    pub fn short_hash(&self) -> &str {
        self.hash.get(..8).unwrap_or(&self.hash)
    }

    /// What the workload is, in words: "120 s measured at 60.0 sessions/s (open model)".
    #[must_use]
    pub fn shape(&self) -> String {
        match &self.load {
            Some(load) if load.model == "closed" => format!("{:.0} s measured (closed model)", load.measured_secs),
            Some(load) => format!("{:.0} s measured at {:.1} sessions/s", load.measured_secs, load.target_rate),
            None => "load not recorded".to_owned(),
        }
    }
}

#[derive(sqlx_macros::FromRow)]
struct SeriesRow {
    scenario_hash: String,
    measured_runs: i64,
    first_started: i64,
    last_started: i64,
    newest_run: i64,
}

impl Store {
    /// The workload series of `scenario` that measured something, newest first.
    pub async fn workload_series(&self, scenario: &str) -> Result<Vec<WorkloadSeries>, StoreError> {
        let query = "select runs.scenario_hash, count(*) as measured_runs, min(runs.started_at) as first_started, \
                     max(runs.started_at) as last_started, max(runs.id) as newest_run \
                     from runs join scenarios on scenarios.id = runs.scenario_id \
                     where scenarios.name = $1 and runs.status not in ('running', 'failed', 'aborted') \
                     group by runs.scenario_hash order by max(runs.started_at) desc";
        let rows: Vec<SeriesRow> = on_pool!(self, |pool| sqlx::query_as(query).bind(scenario).fetch_all(pool).await?);
        let mut series = Vec::with_capacity(rows.len());
        for row in rows {
            let load = self.find_run(row.newest_run).await?.and_then(|run| run.load_summary);
            series.push(WorkloadSeries {
                hash: row.scenario_hash,
                measured_runs: row.measured_runs,
                first_started: from_millis(row.first_started),
                last_started: from_millis(row.last_started),
                newest_run: row.newest_run,
                load,
            });
        }
        Ok(series)
    }
}
