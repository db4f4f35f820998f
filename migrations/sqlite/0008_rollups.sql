-- Sums of each endpoint's figures over periods of 1, 4 and 16 weeks, kept up to date as runs are stored (they
-- replace weekly_results, whose rows become the 1-week periods). A trend page over years reads the longest
-- periods that fit its buckets, so the whole history costs about as much as one year: over three years 40
-- four-week rows per endpoint instead of 157 weekly ones. Same table in migrations/postgres.
create table rollups (
    scenario_id integer not null references scenarios(id),
    endpoint text not null,
    weeks integer not null,                 -- the period's length in weeks: 1, 4 or 16
    period integer not null,                -- started_at / (weeks * 604800000): periods since the Unix epoch (UTC)
    first_started_at integer not null,      -- the earliest run of the period, for chart labels
    runs integer not null,
    sum_p50_us real not null,
    sum_p95_us real not null,
    sum_p99_us real not null,
    sum_error_pct real not null,
    sum_rate real not null,
    max_p95_us real not null,
    min_p95_us real not null,
    max_p99_us real not null,
    max_error_pct real not null,
    primary key (scenario_id, endpoint, weeks, period)
);

insert into rollups (scenario_id, endpoint, weeks, period, first_started_at, runs, sum_p50_us, sum_p95_us, sum_p99_us,
                     sum_error_pct, sum_rate, max_p95_us, min_p95_us, max_p99_us, max_error_pct)
select scenario_id, endpoint, 1, week, first_started_at, runs, sum_p50_us, sum_p95_us, sum_p99_us, sum_error_pct,
       sum_rate, max_p95_us, min_p95_us, max_p99_us, max_error_pct
from weekly_results;

insert into rollups (scenario_id, endpoint, weeks, period, first_started_at, runs, sum_p50_us, sum_p95_us, sum_p99_us,
                     sum_error_pct, sum_rate, max_p95_us, min_p95_us, max_p99_us, max_error_pct)
select scenario_id, endpoint, 4, week / 4, min(first_started_at), sum(runs), sum(sum_p50_us), sum(sum_p95_us),
       sum(sum_p99_us), sum(sum_error_pct), sum(sum_rate), max(max_p95_us), min(min_p95_us), max(max_p99_us),
       max(max_error_pct)
from weekly_results group by scenario_id, endpoint, week / 4;

insert into rollups (scenario_id, endpoint, weeks, period, first_started_at, runs, sum_p50_us, sum_p95_us, sum_p99_us,
                     sum_error_pct, sum_rate, max_p95_us, min_p95_us, max_p99_us, max_error_pct)
select scenario_id, endpoint, 16, week / 16, min(first_started_at), sum(runs), sum(sum_p50_us), sum(sum_p95_us),
       sum(sum_p99_us), sum(sum_error_pct), sum(sum_rate), max(max_p95_us), min(min_p95_us), max(max_p99_us),
       max(max_error_pct)
from weekly_results group by scenario_id, endpoint, week / 16;

drop table weekly_results;
