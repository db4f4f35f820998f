//! The regression grid's data: the last nights of one workload series, and for each run the findings of its
//! latest verdict that a cell shows, so a page can colour endpoints × nights by how each night compared with
//! its baseline.

use chrono::{DateTime, Utc};

use super::{Store, StoreError, from_millis, on_pool};
use crate::model::{FindingOutcome, RunId, RunStatus};

/// One run of the grid, oldest first.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq)]
pub struct GridRun {
    pub id: RunId,
    pub started_at: DateTime<Utc>,
    /// Its build, when known.
    pub build_id: Option<String>,
    /// Its status, as stored.
    pub status: String,
    /// The findings of its latest verdict a cell can show: every p95, every change (none when it was never
    /// judged).
    pub findings: Vec<GridFinding>,
}

/// What a verdict said about one endpoint × metric.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq)]
pub struct GridFinding {
    /// Step name, or `(all)`.
    pub endpoint: String,
    /// `p95`, `error_rate`, or a gate.
    pub metric: String,
    pub outcome: FindingOutcome,
    /// Change from the baseline, percent.
    pub delta_pct: Option<f64>,
    /// The baseline's level, in the metric's unit, when there is one.
    pub baseline_value: Option<f64>,
    /// Tonight's value, in the metric's unit.
    pub candidate_value: f64,
}

#[derive(sqlx_macros::FromRow)]
struct RunRow {
    id: i64,
    started_at: i64,
    build_id: Option<String>,
    status: String,
}

#[derive(sqlx_macros::FromRow)]
struct FindingRow {
    run_id: i64,
    endpoint: String,
    metric: String,
    outcome: String,
    delta_pct: Option<f64>,
    baseline_value: Option<f64>,
    candidate_value: f64,
}

/// The newest measured runs of one series, newest first.
const RUNS: &str = "select runs.id, runs.started_at, runs.build_id, runs.status from runs \
    join scenarios on scenarios.id = runs.scenario_id where scenarios.name = $1 and runs.scenario_hash = $2 \
    and runs.status not in ('running', 'failed', 'aborted') order by runs.started_at desc, runs.id desc limit $3";

/// The findings of the latest verdict of every run of the series since `$3` that a cell can show: changes,
/// and the p95 that shades a steady cell. The rest (most of a verdict: p50, p99, error rates unchanged) are
/// left in the database, each row read costing a page as much as drawing it.
const FINDINGS: &str = "select v.run_id, f.endpoint, f.metric, f.outcome, f.delta_pct, f.baseline_value, \
    f.candidate_value from findings f \
    join verdicts v on v.id = f.verdict_id join runs on runs.id = v.run_id \
    join scenarios on scenarios.id = runs.scenario_id \
    where scenarios.name = $1 and runs.scenario_hash = $2 and runs.started_at >= $3 \
    and (f.metric = 'p95' or f.outcome in ('regression', 'gate_breached', 'improvement', 'unconfirmed')) \
    and v.id = (select max(v2.id) from verdicts v2 where v2.run_id = v.run_id)";

impl Store {
    /// The last `nights` measured runs of `scenario`'s series `series`, oldest first, with their findings.
    pub async fn regression_grid(&self, scenario: &str, series: &str, nights: u32) -> Result<Vec<GridRun>, StoreError> {
        let limit = i64::from(nights);
        let rows: Vec<RunRow> =
            on_pool!(self, |pool| sqlx::query_as(RUNS).bind(scenario).bind(series).bind(limit).fetch_all(pool).await?);
        let Some(oldest) = rows.last().map(|r| r.started_at) else { return Ok(Vec::new()) };
        let findings: Vec<FindingRow> = on_pool!(self, |pool| sqlx::query_as(FINDINGS)
            .bind(scenario)
            .bind(series)
            .bind(oldest)
            .fetch_all(pool)
            .await?);
        let mut runs: Vec<GridRun> = rows
            .into_iter()
            .rev()
            .map(|r| GridRun {
                id: r.id,
                started_at: from_millis(r.started_at),
                build_id: r.build_id,
                status: r.status,
                findings: Vec::new(),
            })
            .collect();
        for f in findings {
            if let Some(run) = runs.iter_mut().find(|r| r.id == f.run_id) {
                let FindingRow { endpoint, metric, outcome, delta_pct, baseline_value, candidate_value, .. } = f;
                let outcome = outcome.parse().map_err(StoreError::Corrupt)?;
                run.findings.push(GridFinding {
                    endpoint,
                    metric,
                    outcome,
                    delta_pct,
                    baseline_value,
                    candidate_value,
                });
            }
        }
        for run in runs.iter_mut().filter(|r| r.status == RunStatus::Regressed.as_str()) {
            self.only_what_its_rerun_reproduced(run).await?;
        }
        Ok(runs)
    }

    /// A confirmed night's first run as its pair decided: what its rerun did not regress on again is
    /// `unconfirmed`, never the alarm colour (a trial's noisy first run showed 11 routes red, 5 reproduced).
    async fn only_what_its_rerun_reproduced(&self, run: &mut GridRun) -> Result<(), StoreError> {
        let Some(rerun) = self.rerun_of(run.id).await? else { return Ok(()) };
        if !self.find_run(rerun).await?.is_some_and(|r| r.status == RunStatus::Regressed) {
            return Ok(());
        }
        let Some(verdict) = self.first_verdict(rerun).await? else { return Ok(()) };
        let again = |f: &GridFinding| {
            verdict.findings.iter().any(|r| r.outcome.is_failure() && r.endpoint == f.endpoint && r.metric == f.metric)
        };
        for finding in run.findings.iter_mut().filter(|f| f.outcome.is_failure()) {
            if !again(finding) {
                finding.outcome = FindingOutcome::Unconfirmed;
            }
        }
        Ok(())
    }
}
