#!/usr/bin/env bash
# Does the README's first command tell its story every time on a busy machine? Runs `degrade demo --exit` N times
# (default 20) at its defaults while another process keeps one core busy, and prints "passed K/N, median T s".
# Target: 20/20, each in about two minutes at most. Traffic stays on 127.0.0.1 (the demo's own API).
#   bash ci/bench-demo.sh 20
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-20}
[ -n "${NO_BUILD:-}" ] || cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-$PWD/target}/release/degrade"
work="$(mktemp -d)"
python3 -c 'while True: pass' &
busy_pid=$!
trap 'kill "$busy_pid" 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

passed=0
times=()
for i in $(seq 1 "$runs"); do
    start=$(date +%s.%N)
    code=0
    "$bin" demo --exit --folder "$work/demo-$i" > "$work/out-$i.txt" 2>&1 || code=$?
    took=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
    times+=("$took")
    if [ "$code" -eq 0 ]; then
        passed=$((passed + 1))
        echo "  demo $i: passed in $took s"
    else
        echo "  demo $i: FAILED (exit $code) in $took s"
        grep -E 'unexpected|not judged|did not go|rerun' "$work/out-$i.txt" | sed 's/^/      /' || true
    fi
done
median=$(printf '%s\n' "${times[@]}" | sort -n | python3 -c 'import sys, statistics; print(statistics.median(float(l) for l in sys.stdin))')
echo "passed $passed/$runs, median $median s (one core kept busy by another process)"
