#!/usr/bin/env bash
# One generator against four segments of the same plan at the same total rate, on this machine: the demo API
# (`degrade demo-target`, GET /boards/{id} held 2 ms by --slowdown-ms) loaded for DURATION at RATE arrivals a
# second, once by one process and once by `degrade run --segment k/4` x 4 meeting in a local PostgreSQL. Prints
# both runs' counts and p50/p95/p99 (the merged run within 5 % of the single one, counts exact) and the
# coordination's cost: time from the first segment's registration to the shared start, the spread of starts, and
# the rows the night wrote to the registry. Traffic stays on 127.0.0.1.
#   bash ci/bench-segments.sh            # release build (cargo build --release first)
#   DEGRADE=target/debug/degrade RATE=200 bash ci/bench-segments.sh
set -euo pipefail
cd "$(dirname "$0")/.."

degrade=${DEGRADE:-target/release/degrade}
rate=${RATE:-400}
duration=${DURATION:-20s}
[ -x "$degrade" ] || { echo "build it first: cargo build --release (or set DEGRADE)"; exit 2; }
source ci/postgres.sh > /dev/null
degrade=$(realpath "$degrade")
work=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
db="bench_segments_$$"
server=${DEGRADE_TEST_POSTGRES_URL%/*}
psql "$DEGRADE_TEST_POSTGRES_URL" -qc "create database $db" > /dev/null
"$degrade" demo-target --port "$port" --slowdown-ms 2 --slow-route "GET /boards/{board_id}" > "$work/target.log" 2>&1 &
target_pid=$!
trap 'kill "$target_pid" 2> /dev/null || true; psql "$DEGRADE_TEST_POSTGRES_URL" -qc "drop database if exists $db with (force)" > /dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && break; sleep 0.1; done

cat > "$work/degrade.toml" << TOML
[database]
url = "$server/$db"

[[scenario]]
name = "bench"
file = "bench.toml"
target = "http://127.0.0.1:$port"
TOML
cat > "$work/bench.toml" << TOML
[[flow]]
name = "board"
[[flow.step]]
path = "/boards/1"
[load]
model = "open"
arrivals = "uniform"
max_in_flight = 2000
[[load.stage]]
duration = "$duration"
rate = $rate
TOML

cd "$work"
"$degrade" run bench > single.txt 2>&1 || true
key="bench-$(date +%s)"
pids=()
for k in 0 1 2 3; do
    "$degrade" run bench --segment "$k/4" --run-key "$key" > "segment-$k.txt" 2>&1 &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || true; done

psql "$server/$db" -At -F ' ' -c "
  select r.id, r.segments, r.status, e.requests, e.p50_us, e.p95_us, e.p99_us
  from runs r join endpoint_results e on e.run_id = r.id and e.endpoint = '(all)' order by r.id" > runs.txt
psql "$server/$db" -At -F ' ' -c "
  select s.start_at * 1000 - min(g.registered_at) * 1000, max(g.started_at_us) - min(g.started_at_us),
         (select count(*) from run_segments) + 1
  from segmented_runs s join run_segments g on g.run_key = s.run_key group by s.start_at" > coordination.txt
python3 - "$rate" "$duration" << 'PY'
import sys
rate, duration = float(sys.argv[1]), sys.argv[2]
rows = [line.split() for line in open("runs.txt") if line.strip()]
single = next(r for r in rows if r[1] == "1")
merged = next(r for r in rows if r[1] == "4")
planned = int(rate * float(duration.rstrip("s")))
print(f"planned {planned} requests at {rate:.0f}/s for {duration}")
for name, r in (("1 process", single), ("4 segments", merged)):
    print(f"  {name:10}: {r[2]:8} {int(r[3]):6} requests  p50 {int(r[4])/1000:6.2f} ms  p95 {int(r[5])/1000:6.2f} ms  p99 {int(r[6])/1000:6.2f} ms")
ok = int(merged[3]) == planned and int(single[3]) == planned
for i, name in ((4, "p50"), (5, "p95"), (6, "p99")):
    change = int(merged[i]) / int(single[i]) - 1
    ok &= abs(change) <= 0.05
    print(f"  {name}: 4 segments {change * 100:+.1f} % against 1 process")
ready_to_start_us, spread_us, rows_written = open("coordination.txt").read().split()
print(f"coordination: {int(ready_to_start_us) / 1000:.0f} ms from the first registration to the shared start, "
      f"starts {int(spread_us) / 1000:.1f} ms apart, {rows_written} registry rows written")
print("PASS" if ok else "FAIL (counts not exact, or a percentile more than 5 % off)")
PY
