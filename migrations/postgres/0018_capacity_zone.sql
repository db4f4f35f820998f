-- The zone a capacity search was made in, in words (`p75 ≤ 60 ms; api CPU ≤ 0.12`): a capacity is the
-- highest rate held inside *a* zone, so nights searched in another are not its baseline. Null for searches
-- stored before it was recorded. Same column in migrations/sqlite and migrations/postgres.
alter table capacity_results add column zone text;
