-- A first run is `confirming` while its confirmation rerun measures (the rerun linked from its creation), so a
-- degrade that stops mid-way leaves it for the next one to decide. Before, it was `unconfirmed` meanwhile and
-- the rerun linked only once it had ended, so a run still `unconfirmed` with no rerun linked to it is one whose
-- rerun a kill cut short: it becomes `confirming`, and the next degrade lets its verdict stand and alerts it.
-- Same statement in the other backend's migrations.
update runs set status = 'confirming'
where status = 'unconfirmed'
  and not exists (select 1 from runs as reruns where reruns.confirms_run_id = runs.id);
