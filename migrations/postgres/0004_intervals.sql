-- Sampling-aware verdicts: how sure each night's figures are, and how sure each finding is. Same columns in
-- migrations/sqlite.

-- The 95 % intervals of p50, p95, p99 (order statistics of the run's response times, µs) and of the error rate
-- (Wilson, percent). A null upper end: the percentile rests on too few requests to be bounded. Rows stored
-- before this migration have nulls throughout; degrade derives them from the stored histogram.
alter table endpoint_results add column p50_lo_us bigint;
alter table endpoint_results add column p50_hi_us bigint;
alter table endpoint_results add column p95_lo_us bigint;
alter table endpoint_results add column p95_hi_us bigint;
alter table endpoint_results add column p99_lo_us bigint;
alter table endpoint_results add column p99_hi_us bigint;
alter table endpoint_results add column error_pct_lo double precision;
alter table endpoint_results add column error_pct_hi double precision;

-- Tonight's 95 % interval of the finding's figure (in the figure's unit), and the test's p-value.
alter table findings add column interval_lo double precision;
alter table findings add column interval_hi double precision;
alter table findings add column p_value double precision;
