-- When a scenario lease was taken, so a refused run can say since when the other degrade has held it. Same
-- column in migrations/sqlite. Leases taken before this migration have none.
alter table scenario_leases add column taken_at bigint;
