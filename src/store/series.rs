//! Workload series: the runs of one scenario grouped by scenario hash. An edited scenario file, a run
//! reshaped by `--duration` or `--rate-scale`, or metric keys that now name query parameters, starts a series
//! of its own, and a run is only ever judged against runs of its own series; the dashboard names the series so
//! a short baseline is not a mystery.

use chrono::{DateTime, Utc};

use super::{Store, StoreError, from_millis, on_pool, to_millis};
use crate::model::{LoadSummary, Run, RunId};

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
    /// How its runs reshaped the scenario when they are smoke runs (`--duration 20s`); `None` for the
    /// scenario as written.
    pub reshape: Option<String>,
}

impl WorkloadSeries {
    /// The hash as shown: its first eight digits, enough to tell series apart on one page.
    #[must_use]
    pub fn short_hash(&self) -> &str {
        self.hash.get(..8).unwrap_or(&self.hash)
    }

    /// What the workload is, in words: "120 s measured at 60.0 sessions/s" ("… over h2c" where the newest run
    /// went over HTTP/2), and for smoke runs how they reshaped the scenario ("20 s measured at 6.0
    /// sessions/s, smoke runs: --duration 20s --rate-scale 0.1").
    #[must_use]
    pub fn shape(&self) -> String {
        let load = match &self.load {
            Some(load) if load.model == "closed" => format!("{:.0} s measured (closed model)", load.measured_secs),
            Some(load) => format!("{:.0} s measured at {:.1} sessions/s", load.measured_secs, load.target_rate),
            None => "load not recorded".to_owned(),
        };
        // The protocol tells apart two series an edit of `[target] protocol` made, which are otherwise alike.
        let wire = match self.load.as_ref().and_then(|l| l.connection) {
            Some(c) if !c.steps_only && c.negotiated != crate::model::WireProtocol::Http1 => {
                format!(" over {}", c.negotiated.as_str())
            }
            _ => String::new(),
        };
        let load = load + &wire;
        match &self.reshape {
            Some(reshape) => format!("{load}, smoke runs: {reshape}"),
            None => load,
        }
    }

    /// The series a page shows when none is asked for: the newest that runs the scenario as written. A smoke
    /// run is a series of its own; shown by default, one `--duration 20s` run would hide every night's
    /// history behind a chart of one point. Only smoke series: the newest of them.
    #[must_use]
    pub fn default_of(every: &[Self]) -> Option<&Self> {
        every.iter().find(|s| s.reshape.is_none()).or_else(|| every.first())
    }
}

#[derive(sqlx_macros::FromRow)]
struct SeriesRow {
    scenario_hash: String,
    measured_runs: i64,
    first_started: i64,
    last_started: i64,
    newest_run: i64,
    reshape: Option<String>,
}

impl Store {
    /// The workload series of `scenario` that measured something, newest first.
    pub async fn workload_series(&self, scenario: &str) -> Result<Vec<WorkloadSeries>, StoreError> {
        let query = "select runs.scenario_hash, count(*) as measured_runs, min(runs.started_at) as first_started, \
                     max(runs.started_at) as last_started, max(runs.id) as newest_run, max(runs.reshape) as reshape \
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
                reshape: row.reshape,
            });
        }
        Ok(series)
    }

    /// Why `candidate`'s earlier runs may be another series although its scenario file is the same: the
    /// candidate has an endpoint keyed by its query parameter names (the first such key, returned), and this
    /// many measured runs before it, of another series, ran the same scenario text with no such key: nights
    /// keyed before degrade named query parameters in keys. Their stored keys are left as they were.
    pub async fn runs_keyed_without_query_names(&self, candidate: &Run) -> Result<Option<(String, i64)>, StoreError> {
        let example = "select endpoint from endpoint_results where run_id = $1 and endpoint like '%?%' \
                       order by endpoint limit 1";
        let example: Option<String> =
            on_pool!(self, |pool| sqlx::query_scalar(example).bind(candidate.id).fetch_optional(pool).await?);
        let Some(example) = example else { return Ok(None) };
        let count = "select count(*) from runs join scenarios on scenarios.id = runs.scenario_id \
                     where scenarios.name = $1 and runs.scenario_hash <> $2 and runs.started_at < $3 \
                     and runs.status in ('finished', 'passed', 'regressed') \
                     and runs.scenario_source = (select scenario_source from runs where id = $4) \
                     and not exists (select 1 from endpoint_results e where e.run_id = runs.id and e.endpoint like '%?%')";
        let count: i64 = on_pool!(self, |pool| sqlx::query_scalar(count)
            .bind(&candidate.scenario)
            .bind(&candidate.scenario_hash)
            .bind(to_millis(candidate.started_at))
            .bind(candidate.id)
            .fetch_one(pool)
            .await?);
        Ok((count > 0).then_some((example, count)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ConnectionReport, WireProtocol};

    #[test]
    fn a_series_over_http2_says_so_beside_its_shape() {
        let over = |negotiated, steps_only| WorkloadSeries {
            hash: "h".into(),
            measured_runs: 3,
            first_started: DateTime::UNIX_EPOCH,
            last_started: DateTime::UNIX_EPOCH,
            newest_run: 3,
            load: Some(LoadSummary {
                model: "open".into(),
                target_rate: 100.0,
                measured_secs: 10.0,
                connection: Some(ConnectionReport {
                    negotiated,
                    connections_opened: 1,
                    max_concurrent_streams: None,
                    steps_only,
                }),
                ..LoadSummary::default()
            }),
            reshape: Some("--duration 10s".into()),
        };
        assert_eq!(
            over(WireProtocol::H2c, false).shape(),
            "10 s measured at 100.0 sessions/s over h2c, smoke runs: --duration 10s"
        );
        // Only its gRPC steps went over h2c: the series' requests are HTTP/1.1's, as a series without a word.
        assert_eq!(
            over(WireProtocol::H2c, true).shape(),
            "10 s measured at 100.0 sessions/s, smoke runs: --duration 10s"
        );
    }
}
