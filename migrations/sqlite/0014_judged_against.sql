-- A night the runner measured is judged against this baseline (`last-7d`, `build:1.4.0`, ...), written with the
-- run's creation; null for what `degrade run` measured alone, which is never judged by design. A degrade
-- killed after storing a night's results and before its verdict leaves the run `finished` with no verdict and
-- this set: the next degrade to touch the scenario judges it (`pipeline::interrupted`). Runs stored before this
-- column existed keep null: a left-behind night from then cannot be told from a measured-only run. Same
-- statement in the other backend's migrations.
alter table runs add column judged_against text;

-- When the night's alerts were stored (milliseconds since 1970): its verdict's, or its failure's. Null until
-- then, and for runs no runner alerts (`degrade run`'s, runs from before this column). A degrade killed between
-- a runner night's verdict (or failure) and its alerts leaves it null: the next degrade alerts the night (unless
-- a later night was judged since) and stamps it.
alter table runs add column alerted_at bigint;
