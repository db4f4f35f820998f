#!/usr/bin/env bash
# Measures the dashboard on a SQLite database holding three years of judged nightly runs x 20 endpoints (a
# regression and its episode every 60 nights, timelines for the last 30): median latency of every page a user
# opens: the overview, the trend page (with its regression grid) over each range, a run page, the compare
# page and the alerts page, and the JSON trend.
# Targets: every page under 50 ms median; the all-range trend page costs at most 2x the 7d page.
#   bash ci/bench-dashboard.sh [REQUESTS]      # from the repository root; release build
set -euo pipefail
cd "$(dirname "$0")/.."
requests=${1:-30}
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT

cargo build --release --quiet --bin degrade --example bench_fill
echo "filling $work/bench.db ..."
target/release/examples/bench_fill "$work/bench.db"

port=$((20000 + RANDOM % 20000))
DEGRADE_DATABASE_URL="sqlite://$work/bench.db" target/release/degrade serve --listen "127.0.0.1:$port" \
    >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 50); do curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done

last_run=$(curl -fsS "http://127.0.0.1:$port/api/v1/scenarios/bench/runs?limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')

# Median and 90th percentile of $requests sequential requests, in milliseconds (after one warm-up request).
measure() {
    local name=$1 path=$2
    curl -fsS -o /dev/null "http://127.0.0.1:$port$path"
    for _ in $(seq 1 "$requests"); do
        curl -fsS -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$port$path"
    done | sort -n | awk -v name="$name" -v bytes="$(curl -fsS "http://127.0.0.1:$port$path" | wc -c)" \
        '{ t[NR] = $1 * 1000 } END { printf "%-22s median %7.1f ms   p90 %7.1f ms   %8d bytes\n", name, t[int((NR + 1) / 2)], t[int(NR * 0.9 + 0.5)], bytes }' \
        | tee -a "$work/medians"
}

echo "requests per page: $requests"
measure "overview" "/"
for range in 7d 30d 90d 1y all; do
    measure "trend $range" "/scenarios/bench?range=$range"
done
measure "trend zoom by runs" "/scenarios/bench?from_run=$((last_run - 40))&to_run=$((last_run - 20))"
measure "run page (timelines)" "/runs/$last_run"
measure "compare" "/compare?a=$((last_run - 1))&b=$last_run"
measure "alerts" "/alerts"
measure "api trend all" "/api/v1/scenarios/bench/trend?endpoint=GET%20/resource3/%7Bid%7D&metric=p95&range=all"
awk '$1 == "trend" && $2 == "7d" { week = $4 } $1 == "trend" && $2 == "all" { all = $4 }
     END { printf "all range / 7d range: %.2fx (target at most 2x)\n", all / week }' "$work/medians"
