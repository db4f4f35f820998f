//! Trend pages: every endpoint of a scenario over a time range. A range of at most [`MAX_RUN_POINTS`] runs
//! comes back one point per run however long it is (`trend_runs`), so several runs a day (one per deploy)
//! stay apart and a year of nightly runs is a year of nights; one of more runs is merged in the database into
//! time buckets that keep their worst run beside their mean, so a one-night spike is never averaged away.
//! Such ranges over 120 days read `rollups` (sums over periods of 1, 4 and 16 weeks, kept up to date by
//! `finish_run`), the longest periods that fit the buckets, so a page over three years reads about as few
//! rows as one over a year; the few regressed runs in such a range are read one by one, so its buckets still
//! carry their pins.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::runs::{MILLIS_PER_WEEK, ROLLUP_WEEKS};
use super::trend_rows::{PointRow, failing_outcomes, regressed_here};
use super::{Store, StoreError, from_millis, on_pool, to_millis};
use crate::model::{RunId, RunStatus};

/// One point of an endpoint's trend: one run, or the runs that started within one time bucket. Latencies
/// are in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChartPoint {
    /// Step name, or `(all)`.
    pub endpoint: String,
    /// When the point's (first) run started.
    pub started_at: DateTime<Utc>,
    /// How many runs the point holds.
    pub runs: i64,
    /// The run, when the point is a single run: a chart links the point to it.
    pub run_id: Option<RunId>,
    /// The run's status, when the point is a single run.
    pub status: Option<RunStatus>,
    /// p50, ms (the mean over a bucket's runs).
    pub p50_ms: f64,
    /// p95, ms (the mean over a bucket's runs).
    pub p95_ms: f64,
    /// p99, ms (the mean over a bucket's runs).
    pub p99_ms: f64,
    /// Error rate, percent (the mean over a bucket's runs).
    pub error_pct: f64,
    /// Throughput, requests per second (the mean over a bucket's runs).
    pub rate: f64,
    /// The bucket's lowest and highest p95: its spread, drawn as a whisker.
    pub p95_range_ms: (f64, f64),
    /// The bucket's worst p99.
    pub p99_max_ms: f64,
    /// The bucket's worst error rate.
    pub error_pct_max: f64,
    /// Runs judged `regressed` with a finding on this endpoint: a regression on one route does not mark every
    /// route's chart.
    pub regressed: i64,
    /// Runs marked `invalid` (0 over period sums).
    pub invalid: i64,
    /// The build of a single run; over a bucket the highest build id in text order (none over period sums).
    pub build_id: Option<String>,
}

impl ChartPoint {
    /// Whether the point's figures were never judged and never will be: an invalid run (the generator shaped
    /// its numbers, so they say nothing about the build), or a bucket of invalid runs only. Charts draw such a
    /// point apart from the line and leave it out of their scale. A `finished` run stays on the line: it
    /// measured the build validly and is a baseline, whether it was judged inconclusive or not judged yet.
    #[must_use]
    pub fn never_judged(&self) -> bool {
        self.runs > 0 && self.invalid >= self.runs
    }
}

/// Up to this many runs in a range, every run is a point of its own (about one a night for a year, or a
/// few a day for three months): past it a chart's points would be narrower than a pixel.
pub const MAX_RUN_POINTS: i64 = 400;

/// Ranges longer than this read the sums over periods (`rollups`) instead of every run.
const WEEKLY_FROM: Duration = Duration::days(120);

/// The regressed runs of a scenario in the range, once per endpoint with a regression or a breached gate in
/// the run's latest verdict (a capacity's fall aside: the capacity chart marks it). Regressions are rare, so this stays short over years.
const REGRESSED_RUNS: &str = concat!(
    "select distinct f.endpoint, runs.id, runs.started_at from runs \
    join scenarios on scenarios.id = runs.scenario_id \
    join findings f on f.verdict_id = (select max(v.id) from verdicts v where v.run_id = runs.id) \
    where scenarios.name = $1 and runs.started_at >= $2 and runs.started_at < $3 and runs.status = 'regressed' \
    and f.metric <> 'capacity' and f.outcome in ",
    failing_outcomes!()
);

/// The runs of one series (`$4`) in the range: their count decides between a point per run
/// ([`super::trend_runs`]) and buckets.
/// Counted up to `$5` only: past [`MAX_RUN_POINTS`] the exact number does not matter, and three years of runs
/// would each be read to count them.
const COUNT_RUNS: &str = "select count(*) from (select 1 from runs join scenarios on scenarios.id = runs.scenario_id \
    where scenarios.name = $1 and runs.started_at >= $2 and runs.started_at < $3 and runs.scenario_hash = $4 \
    and runs.status not in ('failed', 'aborted') limit $5) counted";

/// The runs of one series in the range merged into time buckets `$5` ms wide: means, the spread, and the build
/// of the bucket's newest run (build ids are not ordered as text: `1.10.0` is newer than `1.9.0`).
const BUCKETED: &str = concat!(
    "select g.*, newest.build_id from (select r.endpoint, max(runs.id) as newest_run_id, \
         min(runs.started_at) as started_at, count(*) as runs, \
         cast(null as bigint) as run_id, cast(null as text) as status, \
         cast(avg(r.p50_us) as double precision) as p50_us, cast(avg(r.p95_us) as double precision) as p95_us, \
         cast(avg(r.p99_us) as double precision) as p99_us, cast(avg(r.error_pct) as double precision) as error_pct, \
         cast(avg(r.rate) as double precision) as rate, \
         cast(min(r.p95_us) as double precision) as min_p95_us, cast(max(r.p95_us) as double precision) as max_p95_us, \
         cast(max(r.p99_us) as double precision) as max_p99_us, \
         cast(max(r.error_pct) as double precision) as max_error_pct, \
         cast(sum(",
    regressed_here!(),
    ") as bigint) as regressed, \
         cast(sum(case when runs.status = 'invalid' then 1 else 0 end) as bigint) as invalid \
         from endpoint_results r join runs on runs.id = r.run_id join scenarios on scenarios.id = runs.scenario_id \
         where scenarios.name = $1 and runs.started_at >= $2 and runs.started_at < $3 and runs.scenario_hash = $4 \
    and runs.status not in ('failed', 'aborted') \
         group by r.endpoint, (runs.started_at - $2) / $5) g join runs newest on newest.id = g.newest_run_id \
         order by g.endpoint, g.started_at"
);

/// A field of [`ROLLED_UP`]'s merged buckets as integer text (a macro, so the query stays `&'static str`).
macro_rules! period_field {
    ($column:literal) => {
        concat!("cast(cast(g.", $column, " as bigint) as text)")
    };
}

/// The sums over periods of `$2` weeks (`rollups`) from period `$3` to before `$4`, merged `$5` periods to a
/// bucket (weighted by their run counts), as one row per endpoint: its buckets joined into one text in the
/// database, a line each, the fields split by spaces. The SQLite driver hands every row across threads, so
/// 40 buckets × 20 endpoints as rows cost more than merging them; and every field is an integer, because
/// writing floats as text was most of the merge's cost (SQLite's exact float formatting): latencies in whole
/// µs, the error rate in millionths of a percent, throughput in thousandths of a request per second (rounded
/// half to even by PostgreSQL and half away from zero by SQLite: the two may differ by that last unit). The
/// sums hold every workload series of the scenario: periods are summed as runs are stored, whatever their
/// series.
const ROLLED_UP: &str = concat!(
    "select g.endpoint, string_agg(",
    period_field!("started_at"),
    " || ' ' || ",
    period_field!("runs"),
    " || ' ' || ",
    period_field!("p50_us"),
    " || ' ' || ",
    period_field!("p95_us"),
    " || ' ' || ",
    period_field!("p99_us"),
    " || ' ' || ",
    period_field!("error_ppm"),
    " || ' ' || ",
    period_field!("rate_milli"),
    " || ' ' || ",
    period_field!("min_p95_us"),
    " || ' ' || ",
    period_field!("max_p95_us"),
    " || ' ' || ",
    period_field!("max_p99_us"),
    " || ' ' || ",
    period_field!("max_error_ppm"),
    ", '\n' order by g.started_at) as buckets from (select w.endpoint, min(w.first_started_at) as started_at, \
    sum(w.runs) as runs, round(sum(w.sum_p50_us) / sum(w.runs)) as p50_us, \
    round(sum(w.sum_p95_us) / sum(w.runs)) as p95_us, round(sum(w.sum_p99_us) / sum(w.runs)) as p99_us, \
    round(1e6 * sum(w.sum_error_pct) / sum(w.runs)) as error_ppm, round(1e3 * sum(w.sum_rate) / sum(w.runs)) as rate_milli, \
    round(min(w.min_p95_us)) as min_p95_us, round(max(w.max_p95_us)) as max_p95_us, \
    round(max(w.max_p99_us)) as max_p99_us, round(1e6 * max(w.max_error_pct)) as max_error_ppm \
    from rollups w where w.scenario_id = (select id from scenarios where name = $1) and w.weeks = $2 \
    and w.period >= $3 and w.period < $4 \
    group by w.endpoint, (w.period - $3) / $5) g group by g.endpoint order by g.endpoint"
);

/// One endpoint's buckets of period sums as [`ROLLED_UP`] joins them.
#[derive(sqlx_macros::FromRow)]
struct PeriodBuckets {
    endpoint: String,
    buckets: String,
}

impl PeriodBuckets {
    /// The endpoint's buckets, oldest first; a bucket of period sums knows no run, status, build or verdict.
    fn points(self) -> Result<Vec<PointRow>, StoreError> {
        let Self { endpoint, buckets } = self;
        let corrupt = |line: &str| StoreError::Corrupt(format!("period sums of `{endpoint}`: unreadable `{line}`"));
        buckets
            .split('\n')
            .map(|line| {
                let mut fields = line.split(' ');
                let mut number = || fields.next().and_then(|f| f.parse::<i64>().ok()).ok_or_else(|| corrupt(line));
                let (started_at, runs) = (number()?, number()?);
                Ok(PointRow {
                    endpoint: endpoint.clone(),
                    started_at,
                    runs,
                    run_id: None,
                    status: None,
                    p50_us: number()? as f64,
                    p95_us: number()? as f64,
                    p99_us: number()? as f64,
                    error_pct: number()? as f64 / 1e6,
                    rate: number()? as f64 / 1e3,
                    min_p95_us: number()? as f64,
                    max_p95_us: number()? as f64,
                    max_p99_us: number()? as f64,
                    max_error_pct: number()? as f64 / 1e6,
                    regressed: 0,
                    invalid: 0,
                    build_id: None,
                })
            })
            .collect()
    }
}

impl TryFrom<PointRow> for ChartPoint {
    type Error = StoreError;

    fn try_from(row: PointRow) -> Result<Self, StoreError> {
        let status = row.status.map(|s| s.parse::<RunStatus>().map_err(StoreError::Corrupt)).transpose()?;
        Ok(Self {
            endpoint: row.endpoint,
            started_at: from_millis(row.started_at),
            runs: row.runs,
            run_id: row.run_id,
            status,
            p50_ms: row.p50_us / 1000.0,
            p95_ms: row.p95_us / 1000.0,
            p99_ms: row.p99_us / 1000.0,
            error_pct: row.error_pct,
            rate: row.rate,
            p95_range_ms: (row.min_p95_us / 1000.0, row.max_p95_us / 1000.0),
            p99_max_ms: row.max_p99_us / 1000.0,
            error_pct_max: row.max_error_pct,
            regressed: row.regressed,
            invalid: row.invalid,
            build_id: row.build_id,
        })
    }
}

/// What a trend covers: the scenario, its workload series, and the time range.
#[allow(missing_docs, reason = "the field names say what they hold")]
#[derive(Debug, Clone, Copy)]
pub struct TrendSpan<'a> {
    pub scenario: &'a str,
    /// The full hash of the workload series shown (period sums over long ranges hold every series).
    pub series: &'a str,
    /// Start of the range.
    pub from: DateTime<Utc>,
    /// End of the range (exclusive).
    pub to: DateTime<Utc>,
    /// How many time buckets a range of more than [`MAX_RUN_POINTS`] runs is merged into.
    pub buckets: u32,
}

/// A trend: its points, and whether they come from the period sums (which hold every workload series).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trend {
    /// By endpoint, then time.
    pub points: Vec<ChartPoint>,
    /// The range was long enough to be read from the period sums, so every series of the scenario is in it.
    pub every_series: bool,
}

impl Store {
    /// Whether any run of `scenario` measured `endpoint`.
    pub async fn endpoint_exists(&self, scenario: &str, endpoint: &str) -> Result<bool, StoreError> {
        let query = "select count(*) from endpoint_results r join runs on runs.id = r.run_id \
                     join scenarios on scenarios.id = runs.scenario_id where scenarios.name = $1 and r.endpoint = $2";
        let found: i64 =
            on_pool!(self, |pool| sqlx::query_scalar(query).bind(scenario).bind(endpoint).fetch_one(pool).await?);
        Ok(found > 0)
    }

    /// Every endpoint of the span's scenario and series in `[from, to)`, by endpoint then time: a point per
    /// run when the range holds at most [`MAX_RUN_POINTS`] runs, however long it is, else about `buckets` time
    /// buckets. Runs
    /// of every status that stored results are included but failed and aborted ones: a down target
    /// measured no build (its fast refusals would read as a faster night), and a stopped run's cut-off
    /// requests say nothing about the target.
    pub async fn trend_points(&self, span: TrendSpan<'_>) -> Result<Trend, StoreError> {
        let first = "select min(runs.started_at) from runs join scenarios on scenarios.id = runs.scenario_id \
                     where scenarios.name = $1";
        let scenario = span.scenario;
        let first: Option<i64> =
            on_pool!(self, |pool| sqlx::query_scalar(first).bind(scenario).fetch_one(pool).await?);
        let Some(first) = first else { return Ok(Trend { points: Vec::new(), every_series: false }) };
        // The range starts no earlier than the first run, so "all" is split over the real history.
        let from = to_millis(span.from).max(first);
        let to = to_millis(span.to);
        let width = ((to - from) / i64::from(span.buckets.max(1))).max(Duration::minutes(1).num_milliseconds());
        let series = span.series;
        let runs: i64 = on_pool!(self, |pool| sqlx::query_scalar(COUNT_RUNS)
            .bind(scenario)
            .bind(from)
            .bind(to)
            .bind(series)
            .bind(MAX_RUN_POINTS + 1)
            .fetch_one(pool)
            .await?);
        let every_series = runs > MAX_RUN_POINTS && to - from > WEEKLY_FROM.num_milliseconds();
        let rows: Vec<PointRow> = if runs <= MAX_RUN_POINTS {
            super::trend_runs::point_per_run(self, scenario, series, from, to).await?
        } else if every_series {
            let periods = Periods::fitting(from, to, span.buckets);
            let endpoints: Vec<PeriodBuckets> = on_pool!(self, |pool| sqlx::query_as(ROLLED_UP)
                .bind(scenario)
                .bind(periods.weeks)
                .bind(periods.from)
                .bind(periods.to)
                .bind(periods.per_bucket)
                .fetch_all(pool)
                .await?);
            let rows: Vec<Vec<PointRow>> =
                endpoints.into_iter().map(PeriodBuckets::points).collect::<Result<_, _>>()?;
            let rows = rows.into_iter().flatten().collect();
            // The buckets hold whole periods, so the first may start before `from` and the last end after
            // `to`: the pins are read over the same stretch.
            let (pins_from, pins_to) = periods.millis();
            let regressed: Vec<(String, i64, i64)> = on_pool!(self, |pool| sqlx::query_as(REGRESSED_RUNS)
                .bind(scenario)
                .bind(pins_from)
                .bind(pins_to)
                .fetch_all(pool)
                .await?);
            pin_regressed_runs(rows, &regressed)
        } else {
            on_pool!(self, |pool| sqlx::query_as(BUCKETED)
                .bind(scenario)
                .bind(from)
                .bind(to)
                .bind(series)
                .bind(width)
                .fetch_all(pool)
                .await?)
        };
        let points = rows.into_iter().map(ChartPoint::try_from).collect::<Result<_, _>>()?;
        Ok(Trend { points, every_series })
    }
}

/// Which period sums a long range reads: the longest periods no longer than its buckets, merged a whole number
/// of them to a bucket.
struct Periods {
    /// The periods' length, one of [`ROLLUP_WEEKS`].
    weeks: i64,
    /// The first period (it holds the range's start).
    from: i64,
    /// The period after the last one.
    to: i64,
    /// Periods merged into each bucket.
    per_bucket: i64,
}

impl Periods {
    /// For the range `[from, to)` in ms, drawn as about `buckets` buckets: a bucket is a whole number of weeks,
    /// at least one, made of the longest periods that fit it (rounded to a whole number of them, so there are
    /// between about 0.7 and 1.5 times `buckets`).
    fn fitting(from: i64, to: i64, buckets: u32) -> Self {
        let bucket_weeks = ((to - from) as f64 / MILLIS_PER_WEEK as f64 / f64::from(buckets.max(1))).ceil().max(1.0);
        let weeks = ROLLUP_WEEKS.into_iter().find(|w| *w as f64 <= bucket_weeks).unwrap_or(1);
        let length = weeks * MILLIS_PER_WEEK;
        Self {
            weeks,
            from: from.div_euclid(length),
            to: (to - 1).div_euclid(length) + 1,
            per_bucket: ((bucket_weeks / weeks as f64).round() as i64).max(1),
        }
    }

    /// The stretch of time the periods cover, `[from, to)` in ms.
    fn millis(&self) -> (i64, i64) {
        let length = self.weeks * MILLIS_PER_WEEK;
        (self.from * length, self.to * length)
    }
}

/// Period sums know nothing of verdicts: each regressed run `(endpoint, run id, started at)` is counted in the
/// last bucket of its endpoint that starts no later than it.
fn pin_regressed_runs(mut rows: Vec<PointRow>, regressed: &[(String, i64, i64)]) -> Vec<PointRow> {
    for (endpoint, _, started_at) in regressed {
        let bucket = rows
            .iter_mut()
            .filter(|row| row.endpoint == *endpoint && row.started_at <= *started_at)
            .max_by_key(|row| row.started_at);
        if let Some(row) = bucket {
            row.regressed += 1;
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (period weeks, periods per bucket, buckets) for a range of `days` drawn as about `buckets` buckets.
    fn fit(days: i64, buckets: u32) -> (i64, i64, i64) {
        let periods = Periods::fitting(0, days * 24 * 3600 * 1000, buckets);
        (periods.weeks, periods.per_bucket, (periods.to - periods.from + periods.per_bucket - 1) / periods.per_bucket)
    }

    #[test]
    fn long_ranges_read_the_longest_periods_that_fit_their_buckets() {
        assert_eq!(fit(366, 53), (1, 1, 53), "a year: a point a week");
        assert_eq!(fit(3 * 365, 40), (4, 1, 40), "three years: 4-week periods, one a bucket");
        assert_eq!(fit(10 * 365, 40), (4, 4, 33), "ten years: four 4-week periods a bucket");
        assert_eq!(fit(20 * 365, 40), (16, 2, 33), "twenty years: 16-week periods");
        assert_eq!(fit(200, 20), (1, 2, 15), "200 days: two weeks a bucket");
    }
}
