-- A night split across N generator machines (`degrade run --segment K/N --run-key KEY`): one row a run key,
-- where the segments meet. Only PostgreSQL coordinates segments (SQLite refuses --segment: a file on one
-- machine is no meeting point for several); the same tables exist in both backends so the schema stays one.
-- Times are milliseconds since 1970 on the database's clock.
create table segmented_runs (
    run_key text primary key,
    scenario text not null,
    -- N: how many segments the night is split into.
    segments bigint not null,
    -- The first segment's plan hash (scenario, seed, degrade version); a segment whose hash differs makes the
    -- night invalid.
    plan_hash text not null,
    -- The first segment to register prepares the build (deploy, health, build id) and creates the one run.
    preparer bigint not null,
    -- preparing, ready or failed: the build step's state, which the other segments wait on.
    build_state text not null,
    build_id text,
    -- The one run the night is stored as, merged from the segments.
    run_id bigint references runs(id),
    -- The shared start, set once when every segment is ready.
    start_at bigint,
    -- Why the night is invalid (set once: the first reason wins); the segments stop early when it is set.
    invalid_reason text,
    -- Set by the one segment that merges the others' results.
    merged_at bigint,
    created_at bigint not null
);

-- One row a segment of a split night. Inserted once per index: a second process for the same index finds the
-- row taken and exits without sending anything.
create table run_segments (
    run_key text not null references segmented_runs(run_key),
    segment_index bigint not null,
    -- Who took the index: host and process id.
    holder text not null,
    plan_hash text not null,
    -- registered, ready, done (its results stored) or failed (it stopped, or could not run).
    state text not null,
    registered_at bigint not null,
    -- The last sign of life, every second while it runs: a segment not seen for a while is lost.
    seen_at bigint not null,
    -- Its clock's offset to the database's (database minus its own), microseconds, measured before and after
    -- the load, and the round trip of the tightest measurement.
    offset_before_us bigint,
    offset_after_us bigint,
    round_trip_us bigint,
    -- When its load started, on the database's clock (its own start corrected by its offset), microseconds.
    started_at_us bigint,
    -- Its whole-run figures, for the run page: a sick generator shows as one segment standing out.
    requests bigint,
    errors bigint,
    p50_us bigint,
    p95_us bigint,
    p99_us bigint,
    schedule_lag_p99_us bigint,
    status text,
    -- Everything it measured, JSON with its histograms (V2-serialized, base64), for the merge.
    results text,
    primary key (run_key, segment_index)
);

-- How many segments measured a run (1 for a single machine): baselines compare runs of the same count.
alter table runs add column segments bigint not null default 1;
