-- The nightly service: which degrade instance holds each scenario's run, what a deploy printed, and outbox
-- messages that will never be delivered. Same tables in migrations/sqlite.

-- One row per scenario with a run under way (or recently so): several `degrade serve` instances sharing one
-- database take the lease before running, so a scenario never runs twice at once. A lease expires unless its
-- holder renews it, so a crashed instance does not block the scenario forever.
create table scenario_leases (
    scenario_id bigint primary key references scenarios(id),
    holder text not null,                 -- host, process id and a random part: one running degrade
    expires_at bigint not null
);

-- The output of a successful deploy_command (a failed one is in failure_reason), shown on the run page.
alter table runs add column deploy_output text;

-- When delivery stopped for good (the receiver rejected the message, or it was retried for a day).
alter table outbox add column gave_up_at bigint;
