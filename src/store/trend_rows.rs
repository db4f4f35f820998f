//! The rows a trend is read into, and the SQL both ways of reading it share (one point per run in
//! `trend_runs`, time buckets in `trends`): which finding outcomes fail a run, and whether a run regressed
//! on the endpoint of the row.

/// The stored finding outcomes that fail a run
/// ([`FindingOutcome::is_failure`](crate::model::FindingOutcome::is_failure)), as an SQL list; a test keeps the
/// two the same. A macro, so the queries that use it stay `&'static str`.
macro_rules! failing_outcomes {
    () => {
        "('regression', 'gate_breached')"
    };
}

/// Whether the run was judged regressed with a finding on this endpoint, as 0 or 1. A capacity's fall is on
/// `(all)` but is no latency's: the scenario's capacity chart marks it, the latency charts do not.
macro_rules! regressed_here {
    () => {
        concat!(
            "case when runs.status = 'regressed' and exists (select 1 from findings f \
    where f.verdict_id = (select max(v.id) from verdicts v where v.run_id = runs.id) \
    and f.endpoint = r.endpoint and f.metric <> 'capacity' and f.outcome in ",
            failing_outcomes!(),
            ") then 1 else 0 end"
        )
    };
}

pub(super) use {failing_outcomes, regressed_here};

/// One point of a trend as the database gives it: latencies in µs, the run's status as stored.
#[derive(sqlx_macros::FromRow)]
pub(super) struct PointRow {
    pub(super) endpoint: String,
    pub(super) started_at: i64,
    pub(super) runs: i64,
    pub(super) run_id: Option<i64>,
    pub(super) status: Option<String>,
    pub(super) p50_us: f64,
    pub(super) p95_us: f64,
    pub(super) p99_us: f64,
    pub(super) error_pct: f64,
    pub(super) rate: f64,
    pub(super) min_p95_us: f64,
    pub(super) max_p95_us: f64,
    pub(super) max_p99_us: f64,
    pub(super) max_error_pct: f64,
    pub(super) regressed: i64,
    pub(super) invalid: i64,
    pub(super) build_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use crate::model::FindingOutcome;

    #[test]
    fn the_sql_list_of_failing_outcomes_is_is_failure() {
        let failing: Vec<String> =
            FindingOutcome::ALL.into_iter().filter(|o| o.is_failure()).map(|o| format!("'{}'", o.as_str())).collect();
        assert_eq!(failing_outcomes!(), format!("({})", failing.join(", ")));
    }
}
