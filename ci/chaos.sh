#!/usr/bin/env bash
# The chaos test's long form (issue 45): N nights of one scenario through the real (debug) binary, each with a
# fault point drawn at random (a SIGKILL where a night is stored and not yet judged or alerted, a committed
# write whose acknowledgement is lost, or none) and a target drawn at random (answering, half failing, down),
# on SQLite and, when PostgreSQL is at hand, on PostgreSQL; the exactly-once invariants checked after every
# night no fault killed (tests/degrade/chaos.rs lists them). Prints, per backend, the nights, the kills, the
# lost acknowledgements, the fault points hit, the invariant violations (must be 0) and the duplicates the
# webhook receiver saw (a webhook is at least once). Traffic stays on 127.0.0.1.
#   bash ci/chaos.sh 500            (CHAOS_SEED=7 bash ci/chaos.sh 500 to replay a draw)
set -euo pipefail
cd "$(dirname "$0")/.."

nights=${1:-100}
seed=${CHAOS_SEED:-$RANDOM}
# shellcheck source=ci/postgres.sh
source ci/postgres.sh || echo "ci/chaos.sh: no PostgreSQL; SQLite only"
echo "chaos: $nights nights per backend, seed $seed"
CHAOS_NIGHTS="$nights" CHAOS_SEED="$seed" cargo test --quiet --test degrade random_nights_keep_every_night_once \
    -- --ignored --nocapture 2>&1 | grep -E '^chaos|after night|test result|panicked'
