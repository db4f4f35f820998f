-- Confirmation reruns: a run judged regressed is run again at once on the same build; the rerun names the run
-- it was asked to confirm. A first run the rerun did not reproduce is stored with status 'unconfirmed'. Same
-- column in migrations/postgres.
alter table runs add column confirms_run_id integer references runs(id);
