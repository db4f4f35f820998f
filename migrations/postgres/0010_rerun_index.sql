-- Baselines count a night whose regression a rerun confirmed once, as its rerun: every baseline query asks
-- whether a run has a rerun, so the runs that confirm another are found by index. Same index in the other
-- backend's migrations.
create index runs_confirms_run_id on runs (confirms_run_id);
