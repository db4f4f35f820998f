//! Verdicts: the judgement of a run against its baseline, with one finding per endpoint × metric.

use super::retry::retry_busy;
use super::rows::{FindingRow, json, to_json};
use super::{Store, StoreError, from_millis, in_transaction, on_pool, to_millis};
use crate::model::{Finding, HeldBackNights, NewVerdict, RunId, RunStatus, Verdict, VerdictOutcome};
use crate::outside_text::storable;

#[derive(sqlx_macros::FromRow)]
struct VerdictRow {
    id: i64,
    run_id: i64,
    baseline_spec: String,
    baseline_run_ids: String,
    outcome: String,
    summary: String,
    created_at: i64,
}

impl Store {
    /// Stores a verdict and its findings, and moves a measured run to `passed` or `regressed` to match, all
    /// in one transaction. An inconclusive verdict leaves the run's status as it is.
    pub async fn save_verdict(&self, run_id: RunId, verdict: &NewVerdict) -> Result<i64, StoreError> {
        self.save_verdict_as(run_id, verdict, RunStatus::Regressed).await
    }

    /// As [`Store::save_verdict`], but a regressed verdict moves the run to `confirming`, for a rerun to
    /// decide: in the same transaction, so no kill can leave it `regressed` and never alerted.
    pub async fn save_verdict_to_confirm(&self, run_id: RunId, verdict: &NewVerdict) -> Result<i64, StoreError> {
        self.save_verdict_as(run_id, verdict, RunStatus::Confirming).await
    }

    async fn save_verdict_as(
        &self,
        run_id: RunId,
        verdict: &NewVerdict,
        regressed: RunStatus,
    ) -> Result<i64, StoreError> {
        let status = match verdict.outcome {
            VerdictOutcome::Passed => Some(RunStatus::Passed),
            VerdictOutcome::Regressed => Some(regressed),
            VerdictOutcome::Inconclusive => None,
        };
        let figures = verdict.findings.iter().flat_map(|f| {
            let name = |what: &str| format!("{} {} {what}", f.endpoint, f.metric);
            [
                (name("candidate value"), f.candidate_value),
                (name("baseline value"), f.baseline_value.unwrap_or(0.0)),
                (name("delta"), f.delta_pct.unwrap_or(0.0)),
                (name("limit"), f.limit.unwrap_or(0.0)),
                (name("interval"), f.interval.map_or(0.0, |i| i.lo + i.hi.unwrap_or(0.0))),
                (name("p-value"), f.p_value.unwrap_or(0.0)),
            ]
        });
        super::ensure_finite(figures)?;
        retry_busy(|| async move { self.save_verdict_once(run_id, verdict, status).await }).await
    }

    async fn save_verdict_once(
        &self,
        run_id: RunId,
        verdict: &NewVerdict,
        status: Option<RunStatus>,
    ) -> Result<i64, StoreError> {
        let insert = "insert into verdicts (run_id, baseline_spec, baseline_run_ids, outcome, summary, created_at) \
                      values ($1, $2, $3, $4, $5, $6) returning id";
        let insert_finding = "insert into findings (verdict_id, endpoint, metric, outcome, baseline_value, \
                              candidate_value, delta_pct, limit_value, interval_lo, interval_hi, p_value, reason) \
                              values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)";
        // Only a run that measured the build validly takes its status from a verdict.
        let update = "update runs set status = $1 where id = $2 and status in ('finished', 'passed', 'regressed')";
        if self.find_run(run_id).await?.is_none() {
            return Err(StoreError::RunNotFound(run_id));
        }
        let id = in_transaction!(self, |tx| {
            let id: i64 = sqlx::query_scalar(insert)
                .bind(run_id)
                .bind(storable(&verdict.baseline_spec))
                .bind(to_json(&verdict.baseline_run_ids))
                .bind(verdict.outcome.as_str())
                .bind(storable(&verdict.summary))
                .bind(to_millis(verdict.created_at))
                .fetch_one(&mut *tx)
                .await?;
            for f in &verdict.findings {
                sqlx::query(insert_finding)
                    .bind(id)
                    .bind(storable(&f.endpoint))
                    .bind(storable(&f.metric))
                    .bind(f.outcome.as_str())
                    .bind(f.baseline_value)
                    .bind(f.candidate_value)
                    .bind(f.delta_pct)
                    .bind(f.limit)
                    .bind(f.interval.map(|i| i.lo))
                    .bind(f.interval.and_then(|i| i.hi))
                    .bind(f.p_value)
                    .bind(storable(&f.reason))
                    .execute(&mut *tx)
                    .await?;
            }
            if let Some(status) = status {
                sqlx::query(update).bind(status.as_str()).bind(run_id).execute(&mut *tx).await?;
            }
            id
        });
        Ok(id)
    }

    /// The most recent verdict on a run, with its findings by endpoint and metric.
    pub async fn latest_verdict(&self, run_id: RunId) -> Result<Option<Verdict>, StoreError> {
        let query = "select id, run_id, baseline_spec, baseline_run_ids, outcome, summary, created_at from verdicts \
                     where run_id = $1 order by created_at desc, id desc limit 1";
        self.verdict_by(query, run_id).await
    }

    /// The nights of `scenario` up to run `upto`, newest first, that the gate did not judge because their
    /// machine was held back (their latest verdict inconclusive, with latency findings excused), as long as
    /// they come one after another: a streak the next judged night ends. Reruns and nights never judged (failed,
    /// aborted) neither count nor break it.
    pub async fn held_back_in_a_row(&self, scenario: &str, upto: RunId) -> Result<HeldBackNights, StoreError> {
        const LOOKED_AT: i64 = 20;
        let query = "select runs.id, latest.outcome, (select count(*) from findings \
                         where findings.verdict_id = latest.id and findings.outcome = 'excused') \
                     from runs join scenarios on scenarios.id = runs.scenario_id \
                     join verdicts latest on latest.id = (select id from verdicts \
                         where verdicts.run_id = runs.id order by created_at desc, id desc limit 1) \
                     where scenarios.name = $1 and runs.id <= $2 and runs.confirms_run_id is null \
                     order by runs.id desc limit $3";
        let rows: Vec<(i64, String, i64)> = on_pool!(self, |pool| sqlx::query_as(query)
            .bind(scenario)
            .bind(upto)
            .bind(LOOKED_AT)
            .fetch_all(pool)
            .await?);
        Ok(HeldBackNights(
            rows.into_iter()
                .take_while(|(_, outcome, excused)| outcome == "inconclusive" && *excused > 0)
                .map(|(id, _, _)| id)
                .collect(),
        ))
    }

    /// The run's first verdict, with its findings: the one the runner made when the run was measured, before
    /// any `check` of it since (which may have named another baseline).
    pub async fn first_verdict(&self, run_id: RunId) -> Result<Option<Verdict>, StoreError> {
        let query = "select id, run_id, baseline_spec, baseline_run_ids, outcome, summary, created_at from verdicts \
                     where run_id = $1 order by id limit 1";
        self.verdict_by(query, run_id).await
    }

    /// The verdict `query` selects for `run_id`, with its findings.
    async fn verdict_by(&self, query: &'static str, run_id: RunId) -> Result<Option<Verdict>, StoreError> {
        let row: Option<VerdictRow> =
            on_pool!(self, |pool| sqlx::query_as(query).bind(run_id).fetch_optional(pool).await?);
        let Some(row) = row else { return Ok(None) };
        let VerdictRow { id, run_id, baseline_spec, baseline_run_ids, outcome, summary, created_at } = row;
        let findings_query = "select endpoint, metric, outcome, baseline_value, candidate_value, delta_pct, \
                              limit_value, interval_lo, interval_hi, p_value, reason from findings where verdict_id = $1 \
                              order by endpoint, metric";
        let findings: Vec<FindingRow> =
            on_pool!(self, |pool| sqlx::query_as(findings_query).bind(id).fetch_all(pool).await?);
        Ok(Some(Verdict {
            id,
            run_id,
            baseline_spec,
            baseline_run_ids: json("verdicts.baseline_run_ids", &baseline_run_ids)?,
            outcome: outcome.parse().map_err(StoreError::Corrupt)?,
            summary,
            created_at: from_millis(created_at),
            findings: findings.into_iter().map(Finding::try_from).collect::<Result<_, _>>()?,
        }))
    }
}
