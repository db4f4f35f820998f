-- A capacity night's search (`[scenario.capacity]`): the highest rate held inside the zone, the first rate that
-- left it and why, and every step's figures. Written in one transaction after the run's own results. Same
-- tables in migrations/postgres.
create table capacity_results (
    run_id integer primary key references runs(id) on delete cascade,
    capacity real,                        -- arrivals/s held inside the zone; null when the start rate left it
    first_out real,                       -- the lowest rate that left the zone, when one did
    ended text not null,                  -- found, max_rate_held, out_of_time, left_at_start, generator_limit, ...
    breach_gate text,                     -- why first_out left: max_p75_ms, max_error_rate_pct, max_in_flight, ...
    breach_endpoint text,
    breach_value real,                    -- the step's figure, in the gate's unit
    breach_limit real,
    search_secs real not null
);

-- One step of the search, its holds pooled.
create table capacity_steps (
    run_id integer not null references runs(id) on delete cascade,
    position integer not null,            -- the order the steps ran in
    rate real not null,                   -- planned arrivals/s
    achieved_rate real not null,
    holds integer not null,
    verdict text not null,                -- held, left, invalid, target_failed
    requests integer not null,
    errors integer not null,
    p75_ms real,
    p95_ms real,
    p99_ms real,
    breach_gate text,
    breach_endpoint text,
    breach_value real,
    breach_limit real,
    reason text not null,
    primary key (run_id, position)
);
