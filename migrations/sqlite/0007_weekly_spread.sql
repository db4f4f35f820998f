-- The spread of each week's runs beside its sums, so a long-range trend point shows its worst run (a
-- one-night spike) instead of averaging it away. Same columns in migrations/postgres.
alter table weekly_results add column max_p95_us real not null default 0;
alter table weekly_results add column min_p95_us real not null default 0;
alter table weekly_results add column max_p99_us real not null default 0;
alter table weekly_results add column max_error_pct real not null default 0;

update weekly_results set
    max_p95_us = coalesce((select max(r.p95_us) from endpoint_results r join runs on runs.id = r.run_id
        where runs.scenario_id = weekly_results.scenario_id and r.endpoint = weekly_results.endpoint
        and runs.started_at / 604800000 = weekly_results.week and runs.status not in ('failed', 'aborted')), 0),
    min_p95_us = coalesce((select min(r.p95_us) from endpoint_results r join runs on runs.id = r.run_id
        where runs.scenario_id = weekly_results.scenario_id and r.endpoint = weekly_results.endpoint
        and runs.started_at / 604800000 = weekly_results.week and runs.status not in ('failed', 'aborted')),
        weekly_results.sum_p95_us / weekly_results.runs),
    max_p99_us = coalesce((select max(r.p99_us) from endpoint_results r join runs on runs.id = r.run_id
        where runs.scenario_id = weekly_results.scenario_id and r.endpoint = weekly_results.endpoint
        and runs.started_at / 604800000 = weekly_results.week and runs.status not in ('failed', 'aborted')), 0),
    max_error_pct = coalesce((select max(r.error_pct) from endpoint_results r join runs on runs.id = r.run_id
        where runs.scenario_id = weekly_results.scenario_id and r.endpoint = weekly_results.endpoint
        and runs.started_at / 604800000 = weekly_results.week and runs.status not in ('failed', 'aborted')), 0);
