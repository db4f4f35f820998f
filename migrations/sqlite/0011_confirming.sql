-- A first run is `confirming` while its confirmation rerun measures (the rerun linked from its creation), so a
-- degrade that stops mid-way leaves it for the next one to decide. Before, it was `unconfirmed` meanwhile and
-- the rerun linked only once it had ended, so a first run (one that confirms nothing itself) still
-- `unconfirmed` with no rerun linked to it is one whose rerun a kill cut short: it becomes `confirming`, and
-- the next degrade lets its verdict stand and alerts it. Not while a degrade holds the scenario's lease: its
-- rerun may be under way (stop every degrade sharing the database before upgrading; an older one cannot read
-- the new status). The lease times are milliseconds since 1970 on the system's clock. Same statement in the
-- other backend's migrations, with its own clock.
update runs set status = 'confirming'
where status = 'unconfirmed'
  and confirms_run_id is null
  and not exists (select 1 from runs as reruns where reruns.confirms_run_id = runs.id)
  and scenario_id not in (select scenario_id from scenario_leases
                          where expires_at > cast((julianday('now') - 2440587.5) * 86400000 as integer));
