#!/usr/bin/env bash
# Does the gate cry wolf on a real process? Runs short nights of scenarios/demo.toml against `degrade
# demo-target` at the default gates and judges each with `degrade check`, as a user's CI would:
#   1. WARMUP unchanged nights to build a history (not counted: fewer than min_runs = 5 are inconclusive);
#   2. NIGHTS unchanged nights, each judged against the unchanged nights before it; every third one runs with a
#      busy-loop process on one core (a noisy neighbour);
#   3. one night each with GET /boards/{board_id}/cards slowed by +10 %, +25 % and +50 % of its measured median
#      (--slowdown-ms sized from the unchanged nights' p50), judged against the unchanged nights.
# It prints false-alarm nights / unchanged nights judged, and for each slowdown whether it was caught and which
# endpoints were named. Target: 0 false alarms in 20 unchanged nights; +25 % and +50 % caught on the slowed
# route alone. Traffic goes to 127.0.0.1 only, to the demo target this script starts; every night is bounded by
# the scenario's plan (NIGHT long).
#   bash ci/bench-verdicts.sh                 # 20 judged nights of 30 s: about 20 minutes
#   NIGHTS=5 NIGHT=20s bash ci/bench-verdicts.sh
set -euo pipefail
cd "$(dirname "$0")/.."

NIGHTS=${NIGHTS:-20}
WARMUP=${WARMUP:-6}
NIGHT=${NIGHT:-30s}
PORT=${PORT:-39417}
ROUTE='GET /boards/{board_id}/cards'

cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-$PWD/target}/release/degrade"
work="$(mktemp -d)"
target_pid=""
busy_pid=""
cleanup() {
    [ -n "$busy_pid" ] && kill "$busy_pid" 2>/dev/null || true
    [ -n "$target_pid" ] && kill "$target_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/scenarios"
cp scenarios/demo.toml scenarios/demo-terms.csv "$work/scenarios/"
cat > "$work/degrade.toml" <<TOML
[database]
url = "sqlite://bench.db"

[[scenario]]
name = "demo"
file = "scenarios/demo.toml"
target = "http://127.0.0.1:$PORT"
TOML

start_target() { # slowdown in ms (fractions allowed)
    [ -n "$target_pid" ] && kill "$target_pid" 2>/dev/null && wait "$target_pid" 2>/dev/null || true
    "$bin" demo-target --port "$PORT" --build 1.0.0 --slowdown-ms "$1" --slow-route "$ROUTE" > "$work/target.log" 2>&1 &
    target_pid=$!
    for _ in $(seq 1 50); do
        curl -fsS "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "bench-verdicts: the demo target did not come up" >&2
    cat "$work/target.log" >&2
    exit 2
}

# One night: runs the scenario as build $1, prints the run id.
night() {
    (cd "$work" && "$bin" run demo --duration "$NIGHT" --build "$1" --format json > "$work/run.json" 2> "$work/run.err") || {
        echo "bench-verdicts: the run failed:" >&2
        cat "$work/run.err" >&2
        exit 2
    }
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$work/run.json"
}

# Judges run $1 against the unchanged nights before it; prints "CODE ENDPOINT..." (the endpoints with a
# regression finding) and keeps the whole report in $work/check.txt.
judge() {
    local code=0
    (cd "$work" && "$bin" check --run "$1" --baseline build:1.0.0 > "$work/check.txt" 2>&1) || code=$?
    local named
    named=$(grep -E '^  (REGRESSION|GATE)' "$work/check.txt" | sed -E 's/^  (REGRESSION|GATE) +//; s/  (p50|p95|p99|error_rate|throughput|requests|max_[a-z0-9_]+)  .*$//' | sort -u | paste -sd ';' -)
    echo "$code ${named:-}"
}

route_p50_ms() { # the slowed route's p50 over the unchanged nights, ms
    python3 - "$work/bench.db" "$ROUTE" <<'PY'
import sqlite3, statistics, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute(
    "select e.p50_us from endpoint_results e join runs r on r.id = e.run_id "
    "where e.endpoint = ? and r.build_id = '1.0.0' and r.status in ('finished','passed','regressed')",
    (sys.argv[2],),
).fetchall()
print(statistics.median(r[0] for r in rows) / 1000.0)
PY
}

start_target 0
echo "bench-verdicts: $WARMUP warm-up nights and $NIGHTS judged unchanged nights of $NIGHT each, then 3 slowed nights"
for i in $(seq 1 "$WARMUP"); do
    id=$(night 1.0.0)
    echo "  warm-up night $i: run #$id"
done

false_alarms=0
judged=0
for i in $(seq 1 "$NIGHTS"); do
    busy=""
    if [ $((i % 3)) -eq 0 ]; then
        python3 -c 'while True: pass' &
        busy_pid=$!
        busy=" (one core busy)"
    fi
    id=$(night 1.0.0)
    [ -n "$busy_pid" ] && { kill "$busy_pid"; wait "$busy_pid" 2>/dev/null || true; busy_pid=""; }
    read -r code named <<< "$(judge "$id")"
    case "$code" in
        0) verdict=$(grep '^verdict:' "$work/check.txt" | cut -c10-)
           if grep -q '^verdict: inconclusive' "$work/check.txt"; then
               echo "  night $i: run #$id$busy: not judged ($verdict)"
           else
               judged=$((judged + 1))
               echo "  night $i: run #$id$busy: $verdict"
           fi ;;
        1) judged=$((judged + 1)); false_alarms=$((false_alarms + 1))
           echo "  night $i: run #$id$busy: FALSE ALARM on ${named:-?}"
           grep -E -A1 '^  REGRESSION' "$work/check.txt" | sed 's/^/      /' ;;
        *) echo "  night $i: run #$id$busy: check exited $code"; cat "$work/check.txt"; exit 2 ;;
    esac
done

p50=$(route_p50_ms)
echo "bench-verdicts: $ROUTE p50 over the unchanged nights: $p50 ms"
caught_summary=""
for pct in 10 25 50; do
    slowdown=$(python3 -c "print(round($p50 * $pct / 100, 3))")
    start_target "$slowdown"
    id=$(night 1.0.0-slow$pct)
    read -r code named <<< "$(judge "$id")"
    if [ "$code" -eq 1 ]; then
        result="caught, named: ${named:-?}"
        [ "$named" = "$ROUTE" ] && result="$result (the slowed route alone)"
    else
        result="not caught"
    fi
    echo "  +$pct % (+$slowdown ms on $ROUTE): run #$id: $result"
    grep -E -A1 '^  REGRESSION' "$work/check.txt" | sed 's/^/      /' || true
    caught_summary="$caught_summary +$pct%: $result;"
done

echo "false alarms: $false_alarms / $judged unchanged nights judged"
echo "slowdowns:$caught_summary"
