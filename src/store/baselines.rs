//! Choosing runs for a check: the candidate to judge and the earlier runs it is judged against.
//!
//! A baseline holds only runs of the same scenario *and the same workload* (scenario hash: a changed scenario
//! file starts a new series), that measured the build validly (`finished`, `passed`, `regressed`), and never
//! the candidate itself, measured by as many generator machines as the candidate (`runs.segments`: a night split
//! across N machines is compared with nights of N, whose generators' share of the latency is the same). A night whose regression a rerun confirmed measured the build twice; a window counts
//! it once, as its rerun (which the pair's status and alerts speak for): counted twice, a slower build would
//! pass as the new level a night early, and re-judging a rerun would put the run it confirmed into its own
//! baseline. A run named by `run:ID` is the user's choice, and one run is never counted twice.
//! Every spec is one query with optional conditions, so these rules are written once.

use chrono::{DateTime, Duration, Utc};

use super::rows::{RunRow, convert, select_runs};
use super::{Store, StoreError, on_pool, to_millis};
use crate::model::{BaselineSpec, Run, RunId, RunStatus};

/// Nightly runs do not start at the same second every night (deploys and health checks move them), so a
/// `last-Nd` window reaches this much further back and still holds the run from N nights ago.
const WINDOW_SLACK: Duration = Duration::hours(12);

/// Which runs of a window the baseline query returns.
#[derive(Debug, Clone, Copy)]
enum Measured {
    /// Those that may serve in a baseline.
    Validly,
    /// Those the generator shaped (`invalid`).
    Invalidly,
}

impl Measured {
    fn as_str(self) -> &'static str {
        match self {
            Self::Validly => "valid",
            Self::Invalidly => "invalid",
        }
    }
}

/// The optional conditions of the baseline query, one per kind of spec.
#[derive(Default)]
struct Conditions {
    started_from: Option<i64>,
    started_before: Option<i64>,
    build_id: Option<String>,
    run_id: Option<i64>,
    limit: Option<i64>,
}

impl Store {
    /// The newest run of `scenario` that is no longer running, and not a confirmation rerun that measured
    /// nothing, nor one whose first run's verdict stood without it (it could not be judged): the run it was to
    /// confirm is the night. With `nightly`, not a smoke run either (`--duration`, `--rate-scale`): the run a
    /// check judges by default, when there is one.
    pub async fn latest_completed_run(&self, scenario: &str, nightly: bool) -> Result<Option<Run>, StoreError> {
        let query = concat!(
            select_runs!(),
            "where scenarios.name = $1 and runs.status <> 'running' and ($2 = 0 or runs.reshape is null) \
             and not (runs.confirms_run_id is not null and runs.status in ('failed', 'aborted')) \
             and not (runs.status <> 'regressed' and exists (select 1 from runs as first \
                 where first.id = runs.confirms_run_id and first.status = 'regressed')) \
             order by runs.started_at desc, runs.id desc limit 1"
        );
        let row: Option<RunRow> = on_pool!(self, |pool| sqlx::query_as(query)
            .bind(scenario)
            .bind(i64::from(nightly))
            .fetch_optional(pool)
            .await?);
        row.map(Run::try_from).transpose()
    }

    /// How many measured runs of `candidate`'s scenario before it used another workload (another scenario
    /// hash: an edited scenario file, or a run reshaped by `--duration` or `--rate-scale`).
    pub async fn other_workload_runs(&self, candidate: &Run) -> Result<i64, StoreError> {
        let query = "select count(*) from runs join scenarios on scenarios.id = runs.scenario_id \
                     where scenarios.name = $1 and runs.scenario_hash <> $2 and runs.started_at < $3 \
                     and runs.status in ('finished', 'passed', 'regressed')";
        Ok(on_pool!(self, |pool| sqlx::query_scalar(query)
            .bind(&candidate.scenario)
            .bind(&candidate.scenario_hash)
            .bind(to_millis(candidate.started_at))
            .fetch_one(pool)
            .await?))
    }

    /// How many valid runs of `candidate`'s own workload series, started before it, were measured by another
    /// number of generator machines (a night split into segments, or one machine): never its baseline, which
    /// the short-baseline sentence says. Returns that count, their number of segments when they agree on one,
    /// and the candidate's own.
    pub async fn runs_split_otherwise(&self, candidate: &Run) -> Result<(i64, Option<i64>, i64), StoreError> {
        let query = "select count(*), min(runs.segments), max(runs.segments), \
                     (select candidate.segments from runs as candidate where candidate.id = $4) \
                     from runs join scenarios on scenarios.id = runs.scenario_id \
                     where scenarios.name = $1 and runs.scenario_hash = $2 and runs.started_at < $3 \
                     and runs.status in ('finished', 'passed', 'regressed') \
                     and runs.segments <> (select candidate.segments from runs as candidate where candidate.id = $4)";
        let (count, low, high, own): (i64, Option<i64>, Option<i64>, Option<i64>) =
            on_pool!(self, |pool| sqlx::query_as(query)
                .bind(&candidate.scenario)
                .bind(&candidate.scenario_hash)
                .bind(to_millis(candidate.started_at))
                .bind(candidate.id)
                .fetch_one(pool)
                .await?);
        Ok((count, low.filter(|l| Some(*l) == high), own.unwrap_or(1)))
    }

    /// Whether `scenario` has any run, of any status, of build `build`.
    pub async fn has_build(&self, scenario: &str, build: &str) -> Result<bool, StoreError> {
        let query = "select exists (select 1 from runs join scenarios on scenarios.id = runs.scenario_id \
                     where scenarios.name = $1 and runs.build_id = $2)";
        Ok(on_pool!(self, |pool| sqlx::query_scalar(query).bind(scenario).bind(build).fetch_one(pool).await?))
    }

    /// The distinct build ids of `scenario`'s runs, the most recent first (at most `limit`): what a `build:ID`
    /// baseline naming none of them could have meant.
    pub async fn recent_builds(&self, scenario: &str, limit: i64) -> Result<Vec<String>, StoreError> {
        let query = "select runs.build_id from runs join scenarios on scenarios.id = runs.scenario_id \
                     where scenarios.name = $1 and runs.build_id is not null \
                     group by runs.build_id order by max(runs.started_at) desc limit $2";
        Ok(on_pool!(self, |pool| sqlx::query_scalar(query).bind(scenario).bind(limit).fetch_all(pool).await?))
    }

    /// The last good run of `scenario` before run `upto`, and the distinct build ids of the runs after it up to
    /// `upto`, oldest first (at most 20): the builds an alert names as suspects. Good is a run that passed, or
    /// one of `judged_against` (the nights `upto`'s verdict was judged against) that measured and did not
    /// regress: the first nights of a scenario are judged inconclusive (too few before them) and stay
    /// `finished`, and the first alert had named their build, the baseline's, as a suspect (trial). The good
    /// run's own build is no suspect (smoke runs of it since had listed it), unless it is `upto`'s: the build
    /// measured.
    pub async fn builds_since_last_good(
        &self,
        scenario: &str,
        upto: RunId,
        judged_against: &[RunId],
    ) -> Result<(Option<RunId>, Vec<String>), StoreError> {
        let last_pass = "select runs.id from runs join scenarios on scenarios.id = runs.scenario_id \
                         where scenarios.name = $1 and runs.status = 'passed' and runs.id < $2 \
                         order by runs.started_at desc, runs.id desc limit 1";
        let since = "select runs.build_id from runs join scenarios on scenarios.id = runs.scenario_id \
                     where scenarios.name = $1 and runs.id > $2 and runs.id <= $3 and runs.build_id is not null \
                     order by runs.started_at, runs.id";
        let mut good: Option<RunId> =
            on_pool!(self, |pool| sqlx::query_scalar(last_pass).bind(scenario).bind(upto).fetch_optional(pool).await?);
        for &night in judged_against {
            if night >= upto || Some(night) <= good {
                continue;
            }
            let unregressed = |r: &Run| matches!(r.status, RunStatus::Finished | RunStatus::Passed);
            if self.find_run(night).await?.is_some_and(|r| unregressed(&r)) {
                good = Some(night);
            }
        }
        let builds: Vec<String> = on_pool!(self, |pool| sqlx::query_scalar(since)
            .bind(scenario)
            .bind(good.unwrap_or(0))
            .bind(upto)
            .fetch_all(pool)
            .await?);
        let build_of = |run: Option<RunId>| async move {
            let Some(run) = run else { return Ok::<_, StoreError>(None) };
            Ok(self.find_run(run).await?.and_then(|r| r.build_id))
        };
        let (good_build, measured) = (build_of(good).await?, build_of(Some(upto)).await?);
        let mut distinct: Vec<String> = Vec::new();
        for build in builds {
            let known_good = good_build.as_ref() == Some(&build) && measured.as_ref() != Some(&build);
            if !known_good && !distinct.contains(&build) {
                distinct.push(build);
            }
        }
        let keep_from = distinct.len().saturating_sub(20);
        Ok((good, distinct.split_off(keep_from)))
    }

    /// The runs `spec` selects for judging `candidate`, oldest first: `last-Nd` the runs started in the N days
    /// before it, `last-N` the N runs before it, `build:ID` that build's runs before it, `run:ID` that run.
    pub async fn baseline_runs(&self, candidate: &Run, spec: &BaselineSpec) -> Result<Vec<Run>, StoreError> {
        self.runs_in_window(candidate, spec, Measured::Validly).await
    }

    /// The `invalid` runs of `candidate`'s workload that `spec`'s window holds, oldest first: the nights a short
    /// baseline lost to a generator that shaped its numbers.
    pub async fn invalid_runs_in_window(&self, candidate: &Run, spec: &BaselineSpec) -> Result<Vec<Run>, StoreError> {
        self.runs_in_window(candidate, spec, Measured::Invalidly).await
    }

    async fn runs_in_window(
        &self,
        candidate: &Run,
        spec: &BaselineSpec,
        measured: Measured,
    ) -> Result<Vec<Run>, StoreError> {
        let before = Some(to_millis(candidate.started_at));
        let conditions = match spec {
            BaselineSpec::LastDays(days) => Conditions {
                started_from: Some(to_millis(window_start(candidate.started_at, *days))),
                started_before: before,
                ..Conditions::default()
            },
            BaselineSpec::LastRuns(count) => {
                Conditions { started_before: before, limit: Some(i64::from(*count)), ..Conditions::default() }
            }
            BaselineSpec::Build(build) => {
                Conditions { started_before: before, build_id: Some(build.clone()), ..Conditions::default() }
            }
            BaselineSpec::Run(id) => Conditions { run_id: Some(*id), ..Conditions::default() },
        };
        let query = concat!(
            select_runs!(),
            "where scenarios.name = $1 and runs.scenario_hash = $2 and runs.id <> $3 \
             and runs.segments = (select candidate.segments from runs as candidate where candidate.id = $3) \
             and ((cast($9 as text) = 'valid' and runs.status in ('finished', 'passed', 'regressed') \
                 and (cast($7 as bigint) is not null or not exists (select 1 from runs as reruns \
                     where reruns.confirms_run_id = runs.id and reruns.status in ('finished', 'passed', 'regressed')))) \
                 or (cast($9 as text) = 'invalid' and runs.status = 'invalid' and runs.confirms_run_id is null)) \
             and (cast($4 as bigint) is null or runs.started_at >= $4) \
             and (cast($5 as bigint) is null or runs.started_at < $5) \
             and (cast($6 as text) is null or runs.build_id = $6) \
             and (cast($7 as bigint) is null or runs.id = $7) \
             order by runs.started_at desc, runs.id desc limit $8"
        );
        let Conditions { started_from, started_before, build_id, run_id, limit } = conditions;
        let mut rows: Vec<RunRow> = on_pool!(self, |pool| sqlx::query_as(query)
            .bind(&candidate.scenario)
            .bind(&candidate.scenario_hash)
            .bind(candidate.id)
            .bind(started_from)
            .bind(started_before)
            .bind(build_id.as_deref())
            .bind(run_id)
            .bind(limit.unwrap_or(i64::MAX))
            .bind(measured.as_str())
            .fetch_all(pool)
            .await?);
        rows.reverse();
        convert(rows)
    }
}

/// The start of a `last-Nd` window ending at `end`; spec parsing bounds N, so this cannot overflow.
fn window_start(end: DateTime<Utc>, days: u32) -> DateTime<Utc> {
    end - Duration::days(i64::from(days)) - WINDOW_SLACK
}
