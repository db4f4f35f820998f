-- degrade schema, PostgreSQL dialect. migrations/sqlite/0001_initial.sql holds the same tables for SQLite;
-- keep the two in step. Times are milliseconds since the Unix epoch (UTC) in both dialects, so every query
-- binds and decodes plain integers. Latencies are microseconds.

-- One row per [[scenario]] name ever run; runs refer to it so a rename does not orphan history.
create table scenarios (
    id bigserial primary key,
    name text not null unique,
    created_at bigint not null
);

-- One row per run of a scenario, from the moment it starts.
create table runs (
    id bigserial primary key,
    scenario_id bigint not null references scenarios(id),
    build_id text,                        -- what version_url/version_command said; null when not configured
    status text not null,                 -- running, finished, passed, regressed, failed, invalid, aborted
    started_at bigint not null,
    finished_at bigint,
    scenario_hash text not null,          -- hash of the scenario as run: a changed workload is a new series
    seed bigint not null,                -- all randomness derives from it, so a run can be reproduced
    validity_reasons text not null default '[]',  -- JSON array: why the generator's numbers cannot be trusted
    load_summary text,                    -- JSON: target vs achieved rate, dropped arrivals, schedule lag, CPU
    failure_reason text,                  -- why a failed or aborted run stopped
    scenario_source text                  -- the scenario file as run, shown on the run page
);
create index runs_by_scenario_time on runs(scenario_id, started_at);

-- Per endpoint (step name) figures of one run; the endpoint '(all)' holds the whole run.
create table endpoint_results (
    run_id bigint not null references runs(id) on delete cascade,
    endpoint text not null,
    requests bigint not null,
    errors bigint not null,
    error_pct double precision not null,              -- errors / requests * 100
    rate double precision not null,                   -- achieved requests per second over the measured stages
    p50_us bigint not null,
    p75_us bigint not null,
    p90_us bigint not null,
    p95_us bigint not null,
    p99_us bigint not null,
    p999_us bigint not null,
    max_us bigint not null,
    mean_us double precision not null,
    errors_by_class text not null,        -- JSON object: class -> count
    error_samples text not null,          -- JSON object: class -> a few sample messages
    histogram bytea not null,              -- HdrHistogram V2 serialization of response times
    primary key (run_id, endpoint)
);
-- Trend queries read one endpoint across many runs.
create index endpoint_results_by_endpoint on endpoint_results(endpoint, run_id);

-- Per second, per endpoint figures of one run, for the run page's timeline.
create table timeline (
    run_id bigint not null references runs(id) on delete cascade,
    endpoint text not null,
    elapsed_s bigint not null,             -- seconds since the run started
    requests bigint not null,
    errors bigint not null,
    p50_us bigint not null,
    p99_us bigint not null,
    max_us bigint not null,
    errors_by_class text not null,        -- JSON object: class -> count
    primary key (run_id, endpoint, elapsed_s)
);

-- One judgement of a run against a baseline (a run may be checked more than once).
create table verdicts (
    id bigserial primary key,
    run_id bigint not null references runs(id) on delete cascade,
    baseline_spec text not null,          -- as given: last-7d, last-10, run:ID, build:ID
    baseline_run_ids text not null,       -- JSON array of the runs that formed the baseline
    outcome text not null,                -- passed, regressed, inconclusive
    summary text not null,
    created_at bigint not null
);
create index verdicts_by_run on verdicts(run_id);

-- One line of a verdict: one endpoint x metric.
create table findings (
    verdict_id bigint not null references verdicts(id) on delete cascade,
    endpoint text not null,
    metric text not null,                 -- p50, p95, p99, error_rate, throughput, or an absolute gate
    outcome text not null,                -- regression, improvement, no_change, inconclusive, gate_breached
    baseline_value double precision,
    candidate_value double precision not null,
    delta_pct double precision,
    limit_value double precision,                     -- the threshold the candidate was held to
    reason text not null
);
create index findings_by_verdict on findings(verdict_id);

-- A regression (or missing run) from the night it opened to the night it resolved: alerts are sent per
-- episode, not per run, so a team hears once when it starts and once when it ends.
create table episodes (
    id bigserial primary key,
    scenario_id bigint not null references scenarios(id),
    kind text not null,                   -- regression, missing_run, run_failed
    state text not null,                  -- open, acknowledged, resolved
    opened_at bigint not null,
    opened_run_id bigint references runs(id),
    last_good_run_id bigint references runs(id),  -- builds since this run are listed in the alert
    summary text not null,
    acknowledged_at bigint,
    acknowledged_reason text,
    resolved_at bigint,
    resolved_run_id bigint references runs(id)
);
-- At most one unresolved episode per scenario and kind.
create unique index episodes_one_open on episodes(scenario_id, kind) where state <> 'resolved';

-- Messages waiting to be delivered to webhooks; rows stay after delivery as the sent log.
create table outbox (
    id bigserial primary key,
    episode_id bigint references episodes(id),
    notifier text not null,               -- the [[notify]] name; the URL itself is a secret and never stored
    event text not null,                  -- regression, recovery, missing_run, run_failed, test
    payload text not null,                -- the JSON body to POST
    idempotency_key text not null unique, -- sent as a header; a message is never enqueued twice
    created_at bigint not null,
    attempts bigint not null default 0,
    next_attempt_at bigint not null,
    delivered_at bigint,
    last_error text
);
create index outbox_due on outbox(delivered_at, next_attempt_at);
