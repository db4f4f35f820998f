-- Weekly sums of each endpoint's figures, kept up to date as runs are stored, so trend pages over a year or
-- more read one row per endpoint and week instead of one per run. Same table in migrations/postgres.
create table weekly_results (
    scenario_id integer not null references scenarios(id),
    endpoint text not null,
    week integer not null,                -- started_at / 604800000: weeks since the Unix epoch (UTC)
    first_started_at integer not null,    -- the earliest run of the week, for chart labels
    runs integer not null,
    sum_p50_us real not null,
    sum_p95_us real not null,
    sum_p99_us real not null,
    sum_error_pct real not null,
    sum_rate real not null,
    primary key (scenario_id, endpoint, week)
);

insert into weekly_results (scenario_id, endpoint, week, first_started_at, runs, sum_p50_us, sum_p95_us, sum_p99_us,
                            sum_error_pct, sum_rate)
select runs.scenario_id, r.endpoint, runs.started_at / 604800000, min(runs.started_at), count(*), sum(r.p50_us),
       sum(r.p95_us), sum(r.p99_us), sum(r.error_pct), sum(r.rate)
from endpoint_results r join runs on runs.id = r.run_id
group by runs.scenario_id, r.endpoint, runs.started_at / 604800000;
