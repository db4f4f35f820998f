#!/usr/bin/env bash
# Does the gate cry wolf on a real process? Runs short nights of scenarios/demo.toml against `degrade
# demo-target` at the default gates, each through `degrade check --run-now` as a user's CI step would (so a
# night judged regressed is rerun at once on the same build, and only a reproduced regression counts):
#   1. WARMUP unchanged nights to build a history (not counted: fewer than min_runs = 5 are inconclusive);
#   2. NIGHTS unchanged nights, each judged against the unchanged nights before it; every third one runs with a
#      busy-loop process on one core (a noisy neighbour);
#   3. one night each with GET /boards/{board_id}/cards slowed by +10 %, +25 % and +50 % of its measured median
#      (--slowdown-ms sized from the unchanged nights' p50), judged against the unchanged nights;
#   4. a tail-only change: 2 % of that route's requests 20 ms slower;
#   5. two routes slowed alike (that route and GET /cards/{card_id}, each by twice their mean p50: about ×3, the
#      lost index of issue 50) on a night with one core kept busy: a lost index hits every query that used it, on
#      a machine that is rarely idle.
# It prints, for the unchanged nights, the first runs judged regressed (each refuted or confirmed by its rerun)
# and the confirmed false alarms separately, and for each slowdown whether it was caught and which endpoints were
# named. Target: at most 1 first run in 20 unchanged nights judged regressed, 0 confirmed; +25 % and +50 %
# caught on the slowed route alone; the tail-only change caught on its route; both slowed routes named on the
# busy night. Measured on this 2-core VM (session 42, 30 s nights): 0 / 20 first runs judged regressed, 0 confirmed;
# +10 % not caught, +25 % and +50 % caught on the route alone, the tail-only change caught on its route's p99;
# two routes ×3 with one core busy (20 s nights, by hand) caught, exit 1, on one of the two (the other excused:
# on a busy night the eight routes' own changes spread widely, and 7 others widen the cut-off to 6.5 spreads).
# With the tail test from the histograms (NIGHTS=10 NIGHT=20s, a machine shared with other builds): 0 / 10 first
# runs judged regressed, 0 confirmed; +10 % not caught; +25 %, +50 % and the tail-only change caught on the route
# alone (the tail test agreeing: 2.07 % of its requests past 1.64 ms against 0.10 %); both routes of the busy
# two-route night named. KEEP_DB's nights replay in tests/nights/tails.rs (DESIGN.md 6.3).
# Session 53 (the stand-out rule reading the others' added-time spread at each route's level), a quiet machine:
# 0 / 20 first runs judged regressed, 0 confirmed; +50 %, tail-only and both busy-night routes caught and named;
# +10 % and +25 % not: the route's p50 was 0.22 ms and moved +20-23 % on both nights, inside its own night noise
# (±11.6 %). The +50 % night's first rerun was held back (echo 24 against 19 µs, the others +31 % spread ±36 %)
# and its route excused there; the next rerun reproduced it and confirmed the night.
# Session 54 (a ladder's share read inside its body, the share test's night noise read on the common factor's
# heavy tail; `check` reads histograms, so only the latter applies), another machine of the same kind, quiet:
# 0 / 20 first runs judged regressed, 0 confirmed; +10 % not caught; +25 % (measured +30.3 % on a p50 of
# 0.35 ms, ±8.5 % night noise; its ratio to the 12 other endpoints 5.6 sigma, 4.3 needed), +50 %, tail-only
# and both busy-night routes caught and named. The six nights run with a core kept busy were left out of the later
# baselines as held back, and no other.
# Session 55 (an unsettled new level needs two nights that agree), a quiet machine of the same kind: 0 / 20 first
# runs judged regressed, 0 confirmed (19 judged); +10 % not caught; +25 %, +50 %, tail-only and both busy-night
# routes caught and named.
# Session 63 (the p50 tested as the body, with the p75), a machine of the same kind: 0 / 20 first runs judged
# regressed, 0 confirmed; +10 % and +25 % not caught (the route's p50 about 0.45 ms, its night noise ±8.7 % that
# day); +50 % (+37.8 % measured, its ratio to the 12 others 9.4 sigma), tail-only and both busy-night routes
# caught and named.
# Traffic goes to 127.0.0.1 only, to the demo target this script starts; every night is bounded by
# the scenario's plan (NIGHT long).
#   bash ci/bench-verdicts.sh                 # 20 judged nights of 30 s: about 20 minutes
#   NIGHTS=5 NIGHT=20s bash ci/bench-verdicts.sh
#   KEEP_DB=/tmp/verdicts.db bash ci/bench-verdicts.sh   # keeps the nights' database for a closer look
set -euo pipefail
cd "$(dirname "$0")/.."

NIGHTS=${NIGHTS:-20}
WARMUP=${WARMUP:-6}
NIGHT=${NIGHT:-30s}
PORT=${PORT:-39417}
ROUTE='GET /boards/{board_id}/cards'                       # the demo target's route that is slowed
ENDPOINT='GET /boards/{board_id}/cards?page=&per_page='     # the scenario's metric key for it

[ -n "${NO_BUILD:-}" ] || cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-$PWD/target}/release/degrade"
work="$(mktemp -d)"
target_pid=""
busy_pid=""
cleanup() {
    [ -n "$busy_pid" ] && kill "$busy_pid" 2>/dev/null || true
    [ -n "$target_pid" ] && kill "$target_pid" 2>/dev/null || true
    # SQLite's own backup, so the write-ahead log's pages come along.
    [ -n "${KEEP_DB:-}" ] && { python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).backup(sqlite3.connect(sys.argv[2]))' "$work/bench.db" "$KEEP_DB" || true; }
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/scenarios"
cp scenarios/demo.toml scenarios/demo-terms.csv scenarios/demo.proto "$work/scenarios/"
cat > "$work/degrade.toml" <<TOML
[database]
url = "sqlite://bench.db"

[[scenario]]
name = "demo"
file = "scenarios/demo.toml"
target = "http://127.0.0.1:$PORT"

[scenario.build]
version_url = "http://127.0.0.1:$PORT/version"
version_pointer = "/build"
TOML

start_target() { # build, slowdown in ms (fractions allowed), then more demo-target options (default: slow $ROUTE)
    local build=$1 slowdown=$2
    shift 2
    [ "$#" -gt 0 ] || set -- --slow-route "$ROUTE"
    [ -n "$target_pid" ] && kill "$target_pid" 2>/dev/null && wait "$target_pid" 2>/dev/null || true
    "$bin" demo-target --port "$PORT" --build "$build" --slowdown-ms "$slowdown" "$@" > "$work/target.log" 2>&1 &
    target_pid=$!
    for _ in $(seq 1 50); do
        curl -fsS "http://127.0.0.1:$PORT/healthz" > /dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "bench-verdicts: the demo target did not come up" >&2
    cat "$work/target.log" >&2
    exit 2
}

# One night through the CI step, judged against the unchanged nights before it; prints "CODE ENDPOINT..."
# (the endpoints with a regression finding) and keeps the whole report in $work/check.txt.
night() {
    local code=0
    (cd "$work" && "$bin" check --run-now --duration "$NIGHT" --baseline build:1.0.0 > "$work/check.txt" 2>&1) || code=$?
    if [ "$code" -eq 2 ]; then
        echo "bench-verdicts: the night failed:" >&2
        cat "$work/check.txt" >&2
        exit 2
    fi
    local named
    named=$(grep -E '^  (REGRESSION|GATE)' "$work/check.txt" | sed -E 's/^  (REGRESSION|GATE) +//; s/  (p50|p95|p99|error_rate|throughput|requests|max_[a-z0-9_]+)  .*$//' | sort -u | paste -sd ';' - || true)
    echo "$code ${named:-}"
}

# The run id and the confirmation line of the last night's report.
last_run() { grep -m1 '^degrade check: ' "$work/check.txt" | sed -E 's/.*run #([0-9]+).*/\1/'; }
confirmation() { grep '^confirmation: ' "$work/check.txt" | cut -c15- || true; }

route_p50_ms() { # an endpoint's p50 over the unchanged nights, ms (default: the slowed route's)
    python3 - "$work/bench.db" "${1:-$ENDPOINT}" <<'PY'
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

start_target 1.0.0 0
echo "bench-verdicts: $WARMUP warm-up nights and $NIGHTS judged unchanged nights of $NIGHT each, then 3 slowed nights"
for i in $(seq 1 "$WARMUP"); do
    night > /dev/null
    echo "  warm-up night $i: run #$(last_run)"
done

false_alarms=0
judged=0
unconfirmed=0
first_flags=0
for i in $(seq 1 "$NIGHTS"); do
    busy=""
    if [ $((i % 3)) -eq 0 ]; then
        python3 -c 'while True: pass' &
        busy_pid=$!
        busy=" (one core busy)"
    fi
    read -r code named <<< "$(night)"
    [ -n "$busy_pid" ] && { kill "$busy_pid"; wait "$busy_pid" 2>/dev/null || true; busy_pid=""; }
    id=$(last_run)
    said=$(confirmation)
    [ -n "$said" ] && said=" [$said]"
    case "$said" in *"not confirmed"*) unconfirmed=$((unconfirmed + 1)) ;; esac
    # A first run judged regressed shows as a confirmation line, whatever its rerun made of it.
    [ -n "$said" ] && first_flags=$((first_flags + 1))
    if grep -q '^verdict: inconclusive' "$work/check.txt"; then
        echo "  night $i: run #$id$busy: not judged ($(grep '^verdict:' "$work/check.txt" | cut -c10-))"
    elif [ "$code" -eq 1 ]; then
        judged=$((judged + 1)); false_alarms=$((false_alarms + 1))
        echo "  night $i: run #$id$busy: FALSE ALARM on ${named:-?}$said"
        grep -E -A1 '^  REGRESSION' "$work/check.txt" | sed 's/^/      /'
    else
        judged=$((judged + 1))
        echo "  night $i: run #$id$busy: $(grep '^verdict:' "$work/check.txt" | cut -c10-)$said"
    fi
done

# A slowed night: prints whether it was caught and what was named, and adds it to the summary.
slowed_night() { # label, then expected endpoints separated by ';'
    local label=$1 expected=$2 result
    read -r code named <<< "$(night)"
    if [ "$code" -eq 1 ]; then
        result="caught, named: ${named:-?}"
        [ "$named" = "$expected" ] && result="$result (the slowed routes alone)"
    else
        result="not caught"
    fi
    echo "  $label: run #$(last_run): $result"
    grep -E -A1 '^  REGRESSION' "$work/check.txt" | sed 's/^/      /' || true
    said=$(confirmation)
    [ -n "$said" ] && echo "      confirmation: $said"
    caught_summary="$caught_summary $label: $result;"
}

p50=$(route_p50_ms)
echo "bench-verdicts: $ROUTE p50 over the unchanged nights: $p50 ms"
caught_summary=""
for pct in 10 25 50; do
    slowdown=$(python3 -c "print(round($p50 * $pct / 100, 3))")
    start_target "1.1.$pct" "$slowdown"
    slowed_night "+$pct % (+$slowdown ms on $ROUTE)" "$ENDPOINT"
done

start_target 1.2.0 20 --slow-route "$ROUTE" --slow-share 0.02
slowed_night "tail only (2 % of $ROUTE +20 ms)" "$ENDPOINT"

OTHER='GET /cards/{card_id}'
both=$(python3 -c "print(round(($p50 + $(route_p50_ms "$OTHER")) / 2 * 2, 3))")
start_target 1.3.0 "$both" --slow-route "$ROUTE" --slow-route "$OTHER"
python3 -c 'while True: pass' &
busy_pid=$!
slowed_night "two routes +$both ms, one core busy" "$OTHER;$ENDPOINT"
kill "$busy_pid"; wait "$busy_pid" 2>/dev/null || true; busy_pid=""

echo "unchanged nights: $first_flags / $NIGHTS first runs judged regressed ($unconfirmed refuted by their rerun), \
$false_alarms confirmed false alarms / $judged judged"
echo "slowdowns:$caught_summary"
