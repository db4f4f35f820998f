#!/usr/bin/env bash
# How close and how fast does a capacity search find a knee known in advance? Runs the `capacity` story of the
# integration tests N times (default 5) while another process keeps one core busy: a pool of 4 workers × 25 ms
# (knee 160 req/s, set by waiting, not CPU), searched by `check --run-now` night after night (start 25 req/s,
# doubling, 4 bisections, 2 s holds), then a 35 ms build (knee ~114 req/s), on SQLite; and a night finding the
# same knee on PostgreSQL when ci/postgres.sh finds the server. Prints each search's capacity against
# the knee, its error and its time, and "passed K/N". Traffic stays on 127.0.0.1 (the test's own target).
#   bash ci/bench-capacity.sh 5
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-5}
work="$(mktemp -d)"
# shellcheck source=ci/postgres.sh
source ci/postgres.sh || echo "bench-capacity: no PostgreSQL; SQLite only"
nice -n 10 cargo test --test nights --no-run --quiet 2> /dev/null
python3 -c 'while True: pass' &
busy_pid=$!
trap 'kill "$busy_pid" 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

# One test of the nights binary, its output in $work/NAME-RUN.txt; prints its searches against their knees.
story() {
    local test=$1 name=$2 run=$3 code=0
    nice -n 10 cargo test --test nights --quiet -- --include-ignored --exact "capacity::$test" --nocapture \
        > "$work/$name-$run.txt" 2>&1 || code=$?
    python3 - "$work/$name-$run.txt" "$run $name" "$code" <<'PY'
import re, sys
path, run, code = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(path).read()
for label, knee in (("night 1", 160.0), ("night 2", 160.0), ("slower build", 4 / 0.035)):
    m = re.search(label + r": capacity (?:at least )?([0-9.]+) req/s.*? in ([0-9.]+) s", text)
    if m:
        found, secs = float(m.group(1)), float(m.group(2))
        print(f"  run {run:11} {label:12}: capacity {found:6.1f} req/s against {knee:6.1f} ({(found / knee - 1) * 100:+5.1f} %), search {secs:4.0f} s")
print(f"  run {run}: {'passed' if code == 0 else 'FAILED'}")
PY
    return "$code"
}

passed=0
for i in $(seq 1 "$runs"); do
    ok=1
    story a_worker_pools_knee_is_found_and_its_fall_judged_on_sqlite SQLite "$i" || ok=0
    if [ -n "${DEGRADE_TEST_POSTGRES_URL:-}" ]; then
        story a_worker_pools_knee_is_found_on_postgresql PostgreSQL "$i" || ok=0
    fi
    passed=$((passed + ok))
done
echo "passed $passed/$runs"
