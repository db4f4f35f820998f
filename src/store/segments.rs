//! The meeting point of a night split across machines (`degrade run --segment K/N --run-key KEY`): the run
//! registry (`segmented_runs`, one row a run key) and one row a segment (`run_segments`).
//!
//! Every step is one conditional statement, so N processes racing on it agree without a lock held across
//! calls: the first insert of a run key makes its registrant the one that prepares the build; a segment's row is
//! inserted once, so a second process for the same index finds it taken; the shared start is set once, by
//! whichever segment sees all N ready first, on the database's clock; the invalid reason is set once (the first
//! wins); the merge is claimed once. Times on the database's clock, so no two machines' clocks are compared.

use super::retry::retry_busy;
use super::{Pool, Store, StoreError, on_pool};
use crate::model::{RunId, SegmentFigures};
use crate::outside_text::storable;

/// The run registry's row of a split night.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq, Eq, sqlx_macros::FromRow)]
pub struct SegmentedRun {
    pub scenario: String,
    /// N.
    pub segments: i64,
    /// The first registrant's plan hash.
    pub plan_hash: String,
    /// The index of the segment that prepares the build.
    pub preparer: i64,
    /// `preparing`, `ready` or `failed`.
    pub build_state: String,
    pub build_id: Option<String>,
    pub run_id: Option<RunId>,
    /// The shared start, database clock, ms since 1970.
    pub start_at: Option<i64>,
    pub invalid_reason: Option<String>,
    pub merged_at: Option<i64>,
}

/// One segment's row, as the others see it.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, PartialEq, Eq, sqlx_macros::FromRow)]
pub struct SegmentRow {
    pub segment_index: i64,
    pub holder: String,
    /// `registered`, `ready`, `done` or `failed`.
    pub state: String,
    /// How long ago it was last seen, by the database's clock, ms.
    pub unseen_ms: i64,
    pub offset_before_us: Option<i64>,
    pub offset_after_us: Option<i64>,
    pub started_at_us: Option<i64>,
    pub results: Option<String>,
}

/// A segment's whole-run figures, stored with its results.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, Copy, Default)]
pub struct SegmentSummary {
    pub requests: i64,
    pub errors: i64,
    pub p50_us: i64,
    pub p95_us: i64,
    pub p99_us: i64,
    pub schedule_lag_p99_us: i64,
}

/// How a segment's registration went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registration {
    /// The index is this process's; the registry as it stands.
    Registered(SegmentedRun),
    /// Another process holds this index already.
    Taken {
        /// Who.
        holder: String,
    },
}

/// A segment's figures as read for the run page.
type FigureRow = (
    i64,
    String,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

/// A statement this file assembled from its own constant fragments (the database clock's expression of each
/// backend), never from input: every value is bound.
fn trusted(sql: &str) -> sqlx::AssertSqlSafe<&str> {
    sqlx::AssertSqlSafe(sql)
}

impl Store {
    /// The database clock's now, microseconds since 1970, as an SQL expression of this backend.
    fn database_now_us(&self) -> &'static str {
        match self.pool {
            Pool::Postgres(_) => "cast(extract(epoch from clock_timestamp()) * 1000000 as bigint)",
            Pool::Sqlite(_) => "cast((julianday('now') - 2440587.5) * 86400000000.0 as integer)",
        }
    }

    /// The database's clock, microseconds since 1970 (for measuring this machine's offset to it).
    pub async fn database_clock_us(&self) -> Result<i64, StoreError> {
        let query = format!("select {}", self.database_now_us());
        Ok(on_pool!(self, |pool| sqlx::query_scalar(trusted(&query)).fetch_one(pool).await?))
    }

    /// Registers segment `index` of the night `key` for `holder`, creating the registry row if this is the
    /// first segment (which then prepares the build).
    pub async fn register_segment(
        &self,
        key: &str,
        scenario: &str,
        (index, count): (u32, u32),
        holder: &str,
        plan_hash: &str,
    ) -> Result<Registration, StoreError> {
        let now = self.database_now_us();
        let registry = format!(
            "insert into segmented_runs (run_key, scenario, segments, plan_hash, preparer, build_state, created_at) \
             values ($1, $2, $3, $4, $5, 'preparing', {now} / 1000) on conflict (run_key) do nothing"
        );
        let segment = format!(
            "insert into run_segments (run_key, segment_index, holder, plan_hash, state, registered_at, seen_at) \
             values ($1, $2, $3, $4, 'registered', {now} / 1000, {now} / 1000) \
             on conflict (run_key, segment_index) do nothing"
        );
        let inserted = retry_busy(|| async {
            Ok(on_pool!(self, |pool| {
                sqlx::query(trusted(&registry))
                    .bind(storable(key))
                    .bind(storable(scenario))
                    .bind(i64::from(count))
                    .bind(storable(plan_hash))
                    .bind(i64::from(index))
                    .execute(pool)
                    .await?;
                sqlx::query(trusted(&segment))
                    .bind(storable(key))
                    .bind(i64::from(index))
                    .bind(storable(holder))
                    .bind(storable(plan_hash))
                    .execute(pool)
                    .await?
                    .rows_affected()
            }))
        })
        .await?;
        if inserted == 0 {
            let query = "select holder from run_segments where run_key = $1 and segment_index = $2";
            let holder: String = on_pool!(self, |pool| sqlx::query_scalar(query)
                .bind(key)
                .bind(i64::from(index))
                .fetch_one(pool)
                .await?);
            return Ok(Registration::Taken { holder });
        }
        Ok(Registration::Registered(
            self.segmented_run(key)
                .await?
                .ok_or_else(|| StoreError::Corrupt(format!("the split night `{key}` vanished as it was registered")))?,
        ))
    }

    /// The registry row of the night `key`.
    pub async fn segmented_run(&self, key: &str) -> Result<Option<SegmentedRun>, StoreError> {
        let query = "select scenario, segments, plan_hash, preparer, build_state, build_id, run_id, start_at, \
                     invalid_reason, merged_at from segmented_runs where run_key = $1";
        Ok(on_pool!(self, |pool| sqlx::query_as(query).bind(key).fetch_optional(pool).await?))
    }

    /// The preparing segment's word on the build: `ready` (with the run created for the night and the build
    /// id) or `failed`.
    pub async fn segment_build_prepared(
        &self,
        key: &str,
        run_id: RunId,
        build_id: Option<&str>,
        ready: bool,
        segments: u32,
    ) -> Result<(), StoreError> {
        let registry = "update segmented_runs set build_state = $2, build_id = $3, run_id = $4 where run_key = $1";
        let run = "update runs set segments = $2 where id = $1";
        let state = if ready { "ready" } else { "failed" };
        retry_busy(|| async {
            on_pool!(self, |pool| {
                sqlx::query(registry)
                    .bind(key)
                    .bind(state)
                    .bind(build_id.map(storable))
                    .bind(run_id)
                    .execute(pool)
                    .await?;
                sqlx::query(run).bind(run_id).bind(i64::from(segments)).execute(pool).await?;
            });
            Ok(())
        })
        .await
    }

    /// Marks the night `key` invalid for `reason`, unless an earlier reason was recorded (the first wins);
    /// returns the reason that stands.
    pub async fn invalidate_segmented_run(&self, key: &str, reason: &str) -> Result<String, StoreError> {
        let query = "update segmented_runs set invalid_reason = $2 where run_key = $1 and invalid_reason is null";
        retry_busy(|| async {
            on_pool!(self, |pool| {
                sqlx::query(query).bind(key).bind(storable(reason)).execute(pool).await?;
            });
            Ok(())
        })
        .await?;
        Ok(self.segmented_run(key).await?.and_then(|r| r.invalid_reason).unwrap_or_else(|| reason.to_owned()))
    }

    /// Moves segment `index` to `state` (`ready`, `failed`) and stamps it seen, with its clock's offset when
    /// measured.
    pub async fn segment_state(
        &self,
        key: &str,
        index: u32,
        state: &str,
        offset: Option<(i64, i64)>,
    ) -> Result<(), StoreError> {
        let query = format!(
            "update run_segments set state = $3, seen_at = {} / 1000, \
             offset_before_us = coalesce($4, offset_before_us), round_trip_us = coalesce($5, round_trip_us) \
             where run_key = $1 and segment_index = $2",
            self.database_now_us()
        );
        retry_busy(|| async {
            on_pool!(self, |pool| sqlx::query(trusted(&query))
                .bind(key)
                .bind(i64::from(index))
                .bind(state)
                .bind(offset.map(|o| o.0))
                .bind(offset.map(|o| o.1))
                .execute(pool)
                .await?
                .rows_affected());
            Ok(())
        })
        .await
    }

    /// Sets the night's shared start `lead_ms` ahead on the database's clock if every segment is ready and no
    /// start is set yet; the registry as it then stands.
    pub async fn start_when_all_ready(&self, key: &str, lead_ms: i64) -> Result<Option<SegmentedRun>, StoreError> {
        let query = format!(
            "update segmented_runs set start_at = {} / 1000 + $2 where run_key = $1 and start_at is null \
             and invalid_reason is null and build_state = 'ready' \
             and (select count(*) from run_segments s where s.run_key = $1 and s.state = 'ready') = segments",
            self.database_now_us()
        );
        retry_busy(|| async {
            on_pool!(self, |pool| sqlx::query(trusted(&query))
                .bind(key)
                .bind(lead_ms)
                .execute(pool)
                .await?
                .rows_affected());
            Ok(())
        })
        .await?;
        self.segmented_run(key).await
    }

    /// Stamps segment `index` seen now.
    pub async fn segment_seen(&self, key: &str, index: u32) -> Result<(), StoreError> {
        let query = format!(
            "update run_segments set seen_at = {} / 1000 where run_key = $1 and segment_index = $2",
            self.database_now_us()
        );
        on_pool!(self, |pool| sqlx::query(trusted(&query))
            .bind(key)
            .bind(i64::from(index))
            .execute(pool)
            .await?
            .rows_affected());
        Ok(())
    }

    /// Every segment's row of the night `key`, by index.
    pub async fn run_segments(&self, key: &str) -> Result<Vec<SegmentRow>, StoreError> {
        let query = format!(
            "select segment_index, holder, state, {} / 1000 - seen_at as unseen_ms, offset_before_us, \
             offset_after_us, started_at_us, results from run_segments where run_key = $1 order by segment_index",
            self.database_now_us()
        );
        Ok(on_pool!(self, |pool| sqlx::query_as(trusted(&query)).bind(key).fetch_all(pool).await?))
    }

    /// Stores what segment `index` measured (`done`) or that it could not finish (`failed`, with what it
    /// measured until then, if anything).
    #[allow(clippy::too_many_arguments, reason = "one row's columns, each a different figure")]
    pub async fn save_segment_results(
        &self,
        key: &str,
        index: u32,
        state: &str,
        status: &str,
        summary: SegmentSummary,
        (offset_after_us, started_at_us): (i64, i64),
        results: &str,
    ) -> Result<(), StoreError> {
        let query = format!(
            "update run_segments set state = $3, status = $4, requests = $5, errors = $6, p50_us = $7, p95_us = $8, \
             p99_us = $9, schedule_lag_p99_us = $10, offset_after_us = $11, started_at_us = $12, results = $13, \
             seen_at = {} / 1000 where run_key = $1 and segment_index = $2",
            self.database_now_us()
        );
        let s = summary;
        retry_busy(|| async {
            on_pool!(self, |pool| sqlx::query(trusted(&query))
                .bind(key)
                .bind(i64::from(index))
                .bind(state)
                .bind(status)
                .bind(s.requests)
                .bind(s.errors)
                .bind(s.p50_us)
                .bind(s.p95_us)
                .bind(s.p99_us)
                .bind(s.schedule_lag_p99_us)
                .bind(offset_after_us)
                .bind(started_at_us)
                .bind(storable(results))
                .execute(pool)
                .await?
                .rows_affected());
            Ok(())
        })
        .await
    }

    /// Claims the merge of the night `key`: `true` for exactly one caller, once every segment is done or
    /// failed, or at once when `anyway` (the night is invalid and a segment may never report).
    pub async fn claim_segment_merge(&self, key: &str, anyway: bool) -> Result<bool, StoreError> {
        let query = format!(
            "update segmented_runs set merged_at = {} / 1000 where run_key = $1 and merged_at is null and ($2 = 1 or \
             (select count(*) from run_segments s where s.run_key = $1 and s.state in ('done', 'failed')) = segments)",
            self.database_now_us()
        );
        let claimed = retry_busy(|| async {
            Ok(on_pool!(self, |pool| sqlx::query(trusted(&query))
                .bind(key)
                .bind(i64::from(anyway))
                .execute(pool)
                .await?
                .rows_affected()))
        })
        .await?;
        Ok(claimed == 1)
    }

    /// The segments of run `run_id` and their figures, for the run page; empty for a single machine's run.
    pub async fn segment_figures(&self, run_id: RunId) -> Result<Vec<SegmentFigures>, StoreError> {
        let query = "select s.segment_index, s.state, s.status, s.requests, s.errors, s.p50_us, s.p95_us, s.p99_us, \
                     s.schedule_lag_p99_us, s.offset_before_us, s.offset_after_us, s.started_at_us \
                     from run_segments s join segmented_runs r on r.run_key = s.run_key where r.run_id = $1 \
                     order by s.segment_index";
        let rows: Vec<FigureRow> = on_pool!(self, |pool| sqlx::query_as(query).bind(run_id).fetch_all(pool).await?);
        let first_start = rows.iter().filter_map(|r| r.11).min();
        Ok(rows
            .into_iter()
            .map(|r| SegmentFigures {
                index: r.0 as u32,
                state: r.1,
                status: r.2,
                requests: r.3,
                errors: r.4,
                p50_us: r.5,
                p95_us: r.6,
                p99_us: r.7,
                schedule_lag_p99_us: r.8,
                offset_before_us: r.9,
                offset_after_us: r.10,
                start_lag_us: r.11.zip(first_start).map(|(s, first)| s - first),
            })
            .collect())
    }
}
