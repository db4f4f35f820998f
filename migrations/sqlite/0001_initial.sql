-- degrade schema, SQLite dialect. migrations/postgres/0001_initial.sql holds the same tables for PostgreSQL;
-- keep the two in step. Times are milliseconds since the Unix epoch (UTC) in both dialects, so every query
-- binds and decodes plain integers. Latencies are microseconds.

-- One row per [[scenario]] name ever run; runs refer to it so a rename does not orphan history.
create table scenarios (
    id integer primary key,
    name text not null unique,
    created_at integer not null
);

-- One row per run of a scenario, from the moment it starts.
create table runs (
    id integer primary key,
    scenario_id integer not null references scenarios(id),
    build_id text,                        -- what version_url/version_command said; null when not configured
    status text not null,                 -- running, finished, passed, regressed, failed, invalid, aborted
    started_at integer not null,
    finished_at integer,
    scenario_hash text not null,          -- hash of the scenario as run: a changed workload is a new series
    seed integer not null,                -- all randomness derives from it, so a run can be reproduced
    validity_reasons text not null default '[]',  -- JSON array: why the generator's numbers cannot be trusted
    load_summary text,                    -- JSON: target vs achieved rate, dropped arrivals, schedule lag, CPU
    failure_reason text,                  -- why a failed or aborted run stopped
    scenario_source text                  -- the scenario file as run, shown on the run page
);
create index runs_by_scenario_time on runs(scenario_id, started_at);

-- Per endpoint (step name) figures of one run; the endpoint '(all)' holds the whole run.
create table endpoint_results (
    run_id integer not null references runs(id) on delete cascade,
    endpoint text not null,
    requests integer not null,
    errors integer not null,
    error_pct real not null,              -- errors / requests * 100
    rate real not null,                   -- achieved requests per second over the measured stages
    p50_us integer not null,
    p75_us integer not null,
    p90_us integer not null,
    p95_us integer not null,
    p99_us integer not null,
    p999_us integer not null,
    max_us integer not null,
    mean_us real not null,
    errors_by_class text not null,        -- JSON object: class -> count
    error_samples text not null,          -- JSON object: class -> a few sample messages
    histogram blob not null,              -- HdrHistogram V2 serialization of response times
    primary key (run_id, endpoint)
);
-- Trend queries read one endpoint across many runs.
create index endpoint_results_by_endpoint on endpoint_results(endpoint, run_id);

-- Per second, per endpoint figures of one run, for the run page's timeline.
create table timeline (
    run_id integer not null references runs(id) on delete cascade,
    endpoint text not null,
    elapsed_s integer not null,             -- seconds since the run started
    requests integer not null,
    errors integer not null,
    p50_us integer not null,
    p99_us integer not null,
    max_us integer not null,
    errors_by_class text not null,        -- JSON object: class -> count
    primary key (run_id, endpoint, elapsed_s)
);

-- One judgement of a run against a baseline (a run may be checked more than once).
create table verdicts (
    id integer primary key,
    run_id integer not null references runs(id) on delete cascade,
    baseline_spec text not null,          -- as given: last-7d, last-10, run:ID, build:ID
    baseline_run_ids text not null,       -- JSON array of the runs that formed the baseline
    outcome text not null,                -- passed, regressed, inconclusive
    summary text not null,
    created_at integer not null
);
create index verdicts_by_run on verdicts(run_id);

-- One line of a verdict: one endpoint x metric.
create table findings (
    verdict_id integer not null references verdicts(id) on delete cascade,
    endpoint text not null,
    metric text not null,                 -- p50, p95, p99, error_rate, throughput, or an absolute gate
    outcome text not null,                -- regression, improvement, no_change, inconclusive, gate_breached
    baseline_value real,
    candidate_value real not null,
    delta_pct real,
    limit_value real,                     -- the threshold the candidate was held to
    reason text not null
);
create index findings_by_verdict on findings(verdict_id);

-- A regression (or missing run) from the night it opened to the night it resolved: alerts are sent per
-- episode, not per run, so a team hears once when it starts and once when it ends.
create table episodes (
    id integer primary key,
    scenario_id integer not null references scenarios(id),
    kind text not null,                   -- regression, missing_run, run_failed
    state text not null,                  -- open, acknowledged, resolved
    opened_at integer not null,
    opened_run_id integer references runs(id),
    last_good_run_id integer references runs(id),  -- builds since this run are listed in the alert
    summary text not null,
    acknowledged_at integer,
    acknowledged_reason text,
    resolved_at integer,
    resolved_run_id integer references runs(id)
);
-- At most one unresolved episode per scenario and kind.
create unique index episodes_one_open on episodes(scenario_id, kind) where state <> 'resolved';

-- Messages waiting to be delivered to webhooks; rows stay after delivery as the sent log.
create table outbox (
    id integer primary key,
    episode_id integer references episodes(id),
    notifier text not null,               -- the [[notify]] name; the URL itself is a secret and never stored
    event text not null,                  -- regression, recovery, missing_run, run_failed, test
    payload text not null,                -- the JSON body to POST
    idempotency_key text not null unique, -- sent as a header; a message is never enqueued twice
    created_at integer not null,
    attempts integer not null default 0,
    next_attempt_at integer not null,
    delivered_at integer,
    last_error text
);
create index outbox_due on outbox(delivered_at, next_attempt_at);
