#!/usr/bin/env bash
# The chaos test's long form (issue 45), through the real (debug) binary, on SQLite and, when PostgreSQL is at
# hand, on PostgreSQL at the same time (two processes): first every fault point of store::fault in turn (a SIGKILL
# before or after each durable step of a night and of an alert's delivery, or a committed write whose
# acknowledgement is lost; the capacity search's points on nights that run a small capacity ladder), then N cycles
# drawn at random, each a night at a point with a target drawn (answering, half failing and slow, down). A night
# the fault stopped is resumed by the next `check --run-now` or, half the time, by `degrade serve` started again
# (its watch settles the night, its courier posts what is due; the harness waits until the night is concluded). The
# invariants are checked after every cycle (printed below; tests/degrade/chaos lists them), the dashboard and
# `check --format json` compared with the store among them, and the run fails, listing them, if any fault point was
# never hit. Prints, per backend, the nights, the kills, the lost acknowledgements, the distinct fault points hit,
# the invariant violations (must be 0), the duplicates the webhook receiver saw (a webhook is at least once) and
# what the dashboard and check were compared on. Then the outages that take a minute or so: a SQLite file locked by
# another process for a minute under `check --run-now` and under `serve` (which stays up and says on /healthz what
# it waits for), and PostgreSQL servers of the tests' own stopped under a night and under `serve`. Traffic stays on
# 127.0.0.1. Exits non-zero when anything failed.
#   bash ci/chaos.sh 500            (CHAOS_SEED=7 bash ci/chaos.sh 500 to replay a draw)
set -euo pipefail
cd "$(dirname "$0")/.."

nights=${1:-100}
seed=${CHAOS_SEED:-$RANDOM}
# shellcheck source=ci/postgres.sh
source ci/postgres.sh || { echo "ci/chaos.sh: no PostgreSQL; SQLite only"; unset DEGRADE_TEST_POSTGRES_URL; }
echo "chaos: every fault point, then $nights random cycles per backend, seed $seed"
cat <<'INVARIANTS'
chaos: checked after every cycle: no run left running or confirming; one first run per night; every night
chaos:   measured and judged has one verdict, none measured is left unjudged; every night judged or failed is
chaos:   stamped alerted; every episode opened once and resolved at most once in the outbox; every regression
chaos:   and run-failed episode reached the receiver (repeats counted apart, as duplicates); no baseline holds
chaos:   an unconfirmed, failed, invalid, aborted or confirming run; the dashboard (each changed run's JSON and
chaos:   page, the overview's JSON and page) and each night's `check --format json` say what the store holds.
chaos: checked at the end: every fault point hit, on each backend.
INVARIANTS
status=0
cargo test --quiet --test degrade --no-run
# The two backends run side by side, in two processes (each harness has its own target, receiver and
# database), which halves the wall time; each one's lines are printed together when both are done.
long_form() {
    CHAOS_BACKEND="$1" CHAOS_NIGHTS="$nights" CHAOS_SEED="$seed" cargo test --quiet --test degrade \
        random_nights_keep_every_night_once -- --ignored --nocapture 2>&1 | grep -E '^chaos|test result|panicked'
}
out=$(mktemp -d)
backends=(sqlite)
[[ -n "${DEGRADE_TEST_POSTGRES_URL:-}" ]] && backends+=(postgres)
pids=()
for backend in "${backends[@]}"; do
    long_form "$backend" > "$out/$backend" & pids+=($!)
done
for n in "${!pids[@]}"; do
    wait "${pids[$n]}" || status=1
    cat "$out/${backends[$n]}"
done
rm -rf "$out"
echo "chaos: outages: a SQLite file locked a minute (check --run-now, serve), PostgreSQL stopped (a night, serve)"
cargo test --quiet --test degrade outages:: -- --include-ignored --nocapture --test-threads 1 2>&1 \
    | grep -E '^test |during|skipped|test result|panicked' || status=1
exit "$status"
