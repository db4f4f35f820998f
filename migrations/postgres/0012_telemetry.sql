-- The server's side of a run: each [[scenario.telemetry]] source scraped during the measured stages, the series
-- it keeps with their summaries, and their values on the latency timeline's clock. Stored after the run's own
-- results, in a transaction of their own: telemetry that cannot be stored never loses the night. Same tables in
-- migrations/sqlite.
create table telemetry_sources (
    run_id bigint not null references runs(id) on delete cascade,
    source text not null,                 -- its name in degrade.toml; its URL is never stored (a query may hold a token)
    position bigint not null,             -- its place in the configuration: sources are shown in that order
    status text not null,                 -- complete, partial (some scrapes failed), missing (none was read)
    reason text,                          -- why scrapes failed, when some did
    scrapes bigint not null,              -- scrapes tried during the measured stages
    failed_scrapes bigint not null,
    primary key (run_id, source)
);

-- One kept series of a source, with its figures over the measured stages.
create table telemetry_series (
    run_id bigint not null references runs(id) on delete cascade,
    source text not null,
    series text not null,
    position bigint not null,             -- its place among the source's series
    unit text not null,                   -- of its values, mean and max: bytes, transactions/s, share (0 to 1)
    count_unit text,                      -- a counter's own unit (transactions, CPU s), that of per_1000_requests
    kind text not null,                   -- gauge, counter
    worse text not null,                  -- higher, lower: which way is bad
    status text not null,                 -- complete, partial, missing
    reason text,                          -- why values are missing, when some are
    mean double precision,                -- null when it has no values
    max double precision,
    per_1000_requests double precision,   -- a counter's growth per 1,000 requests completed
    primary key (run_id, source, series)
);

-- The values of a series: a gauge at each scrape, a counter's rate stamped at the end of its interval.
create table telemetry_points (
    run_id bigint not null references runs(id) on delete cascade,
    source text not null,
    series text not null,
    elapsed_ms bigint not null,           -- milliseconds since the run started, the latency timeline's clock
    value double precision not null,
    primary key (run_id, source, series, elapsed_ms)
);
