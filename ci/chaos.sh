#!/usr/bin/env bash
# The chaos test's long form (issue 45), through the real (debug) binary, on SQLite and, when PostgreSQL is at
# hand, on PostgreSQL: first every fault point of store::fault in turn (a SIGKILL before or after each durable
# step of a night and of an alert's delivery, or a committed write whose acknowledgement is lost), then N cycles
# drawn at random, each a night at a point with a target drawn (answering, half failing and slow, down), a night
# the fault stopped resumed by the next `check --run-now`; the exactly-once invariants checked after every
# cycle (tests/degrade/chaos.rs lists them). Prints, per backend, the nights, the kills, the lost
# acknowledgements, the distinct fault points hit, the invariant violations (must be 0) and the duplicates the
# webhook receiver saw (a webhook is at least once). Traffic stays on 127.0.0.1.
#   bash ci/chaos.sh 500            (CHAOS_SEED=7 bash ci/chaos.sh 500 to replay a draw)
set -euo pipefail
cd "$(dirname "$0")/.."

nights=${1:-100}
seed=${CHAOS_SEED:-$RANDOM}
# shellcheck source=ci/postgres.sh
source ci/postgres.sh || echo "ci/chaos.sh: no PostgreSQL; SQLite only"
echo "chaos: every fault point, then $nights random cycles per backend, seed $seed"
CHAOS_NIGHTS="$nights" CHAOS_SEED="$seed" cargo test --quiet --test degrade random_nights_keep_every_night_once \
    -- --ignored --nocapture 2>&1 | grep -E '^chaos|test result|panicked'
