-- The figures a trend reads of each run's endpoints, in an index of their own: a trend over a year of nightly
-- runs reads 7,000 endpoint results, and from this index it never touches their rows (histograms, error
-- samples). Same index in the other database's migrations.
create index endpoint_results_figures on endpoint_results (run_id, endpoint, p50_us, p95_us, p99_us, error_pct, rate);
