-- A capacity night's search (`[scenario.capacity]`): the highest rate held inside the zone, the first rate that
-- left it and why, and every step's figures. Written in one transaction after the run's own results. Same
-- tables in migrations/sqlite.
create table capacity_results (
    run_id bigint primary key references runs(id) on delete cascade,
    capacity double precision,        -- arrivals/s held inside the zone; null when the start rate left it
    first_out double precision,       -- the lowest rate that left the zone, when one did
    ended text not null,              -- found, max_rate_held, out_of_time, left_at_start, generator_limit, ...
    breach_gate text,                 -- why first_out left: max_p75_ms, max_error_rate_pct, max_in_flight, ...
    breach_endpoint text,
    breach_value double precision,    -- the step's figure, in the gate's unit
    breach_limit double precision,
    search_secs double precision not null
);

-- One step of the search, its holds pooled.
create table capacity_steps (
    run_id bigint not null references runs(id) on delete cascade,
    position bigint not null,         -- the order the steps ran in
    rate double precision not null,   -- planned arrivals/s
    achieved_rate double precision not null,
    holds bigint not null,
    verdict text not null,            -- held, left, invalid, target_failed
    requests bigint not null,
    errors bigint not null,
    p75_ms double precision,
    p95_ms double precision,
    p99_ms double precision,
    breach_gate text,
    breach_endpoint text,
    breach_value double precision,
    breach_limit double precision,
    reason text not null,
    primary key (run_id, position)
);
