-- How a smoke run reshaped its scenario, as its options read (`--duration 20s --rate-scale 0.1`); null for a
-- run of the scenario as written, and for runs stored before it was recorded. A smoke run is a workload series
-- of its own (its hash says so); this says which series are smoke runs, so the scenario page does not show one
-- in place of the nights. Same column in migrations/sqlite and migrations/postgres.
alter table runs add column reshape text;
