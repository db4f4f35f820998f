#!/usr/bin/env bash
# One generator against four segments of the same plan at the same total rate, on this machine: the demo API
# (`degrade demo-target`, GET /boards/{id} held 2 ms by --slowdown-ms) loaded for DURATION at RATE arrivals a
# second, by one process and by `degrade run --segment k/4` x 4 meeting in a local PostgreSQL, ROUNDS times
# interleaved (the order alternating each round). Prints every round's counts and p50/p95/p99, then those of
# all rounds' requests added up (the merged runs' within 5 % of the single ones', counts exact) and the coordination's cost:
# time from the first segment's registration to the shared start, the spread of starts, and the rows a night
# wrote to the registry. Traffic stays on 127.0.0.1.
#
# Why rounds, added up: one run of each, one after the other, compares two moments of a shared machine as
# much as two ways of generating (another job's build starting between them moves a p99 by tens of percent),
# and a p99 of a few thousand requests rests on a few dozen of them. The merge itself is exact (the unit test
# metrics::segments::merged_histograms_equal_one_histogram_fed_every_value_bucket_by_bucket): what is left is the
# experiment's noise, which interleaved rounds share out evenly and adding their requests up damps. Four processes on a machine of
# two cores still run four pacers and four engines' threads against one's, each waking on its own timer: on a
# busy two-core machine their tail reads the machine, not the merge; give the bench cores to match (on a
# cluster each segment has its own machine). The target holds its 2 ms on an event-loop timer to the
# microsecond; on tokio's millisecond timer uniform arrivals met the tick at two phases and a round's p50 sat
# at 3.1 or 3.7 ms, which hid the generator's tail under the target's. Measured (session 50, 3 rounds of 20 s):
# load 1.5, p50 +0.2 %, p95 +0.0 %, p99 -1.6 %, PASS; load 2.5 (a chaos run beside it), p95 +5.3 %, p99 +8.4 %,
# FAIL, the four processes' schedule lag p99 0.44-0.50 ms against one's 0.28-0.40: the machine, not the merge.
#   bash ci/bench-segments.sh            # release build (cargo build --release first)
#   DEGRADE=target/debug/degrade RATE=200 DURATION=10s ROUNDS=3 bash ci/bench-segments.sh
set -euo pipefail
cd "$(dirname "$0")/.."

degrade=${DEGRADE:-target/release/degrade}
rate=${RATE:-400}
duration=${DURATION:-20s}
rounds=${ROUNDS:-3}
[ -x "$degrade" ] || { echo "build it first: cargo build --release (or set DEGRADE)"; exit 2; }
source ci/postgres.sh > /dev/null
degrade=$(realpath "$degrade")
repo=$PWD
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
single() { "$degrade" run bench > "single-$1.txt" 2>&1 || true; }
split() {
    local key="bench-$1-$(date +%s)" pids=() k
    for k in 0 1 2 3; do
        "$degrade" run bench --segment "$k/4" --run-key "$key" > "segment-$1-$k.txt" 2>&1 &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || true; done
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$rounds"); do
    if (( round % 2 )); then single "$round"; split "$round"; else split "$round"; single "$round"; fi
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"

psql "$server/$db" -At -F ' ' -c "
  select r.id, r.segments, r.status, e.requests, e.p50_us, e.p95_us, e.p99_us,
         coalesce((r.load_summary::json->>'schedule_lag_p99_us')::bigint, 0), encode(e.histogram, 'hex')
  from runs r join endpoint_results e on e.run_id = r.id and e.endpoint = '(all)' order by r.id" > runs.txt
psql "$server/$db" -At -F ' ' -c "
  select s.start_at * 1000 - min(g.registered_at) * 1000, max(g.started_at_us) - min(g.started_at_us), count(*) + 1
  from segmented_runs s join run_segments g on g.run_key = s.run_key group by s.run_key, s.start_at" > coordination.txt
PYTHONPATH="$repo/ci" python3 - "$rate" "$duration" << 'PY'
import statistics, sys
import hdr_v2
rate, duration = float(sys.argv[1]), sys.argv[2]
rows = [line.split() for line in open("runs.txt") if line.strip()]
singles = [r for r in rows if r[1] == "1"]
merged = [r for r in rows if r[1] == "4"]
planned = int(rate * float(duration.rstrip("s")))
print(f"planned {planned} requests at {rate:.0f}/s for {duration}, {len(singles)} rounds")
ok = len(singles) == len(merged) > 0
for n, (one, four) in enumerate(zip(singles, merged), 1):
    for name, r in (("1 process", one), ("4 segments", four)):
        print(f"  round {n} {name:10}: {r[2]:8} {int(r[3]):6} requests  p50 {int(r[4])/1000:6.2f} ms  "
              f"p95 {int(r[5])/1000:6.2f} ms  p99 {int(r[6])/1000:6.2f} ms  "
              f"schedule lag p99 {int(r[7])/1000:6.2f} ms")
    ok &= int(one[3]) == planned and int(four[3]) == planned
# Each configuration's requests of every round in one histogram: a round's p99 rests on its 80 slowest
# requests, and on this machine one process's own p99 moved by 15 % from round to round (4.9 to 5.6 ms), so
# a median of three rounds' p99s could not resolve 5 %. The sum is the merge the product does itself, and
# every run's own percentiles are read back from its histogram first, to check the reading.
def pooled(rows):
    total = None
    for r in rows:
        h = hdr_v2.decode(bytes.fromhex(r[8]))
        for i, q in ((4, 0.50), (5, 0.95), (6, 0.99)):
            read, stored = h.value_at_quantile(q), int(r[i])
            if abs(read - stored) > max(2, stored * 0.002):
                sys.exit(f"bench-segments: run {r[0]}'s histogram reads {read} µs at p{q * 100:.0f}, stored {stored}")
        total = h if total is None else (total.add(h) or total)
    return total
one_all, four_all = pooled(singles), pooled(merged)
for i, (name, q) in ((4, ("p50", 0.50)), (5, ("p95", 0.95)), (6, ("p99", 0.99))):
    one, four = one_all.value_at_quantile(q), four_all.value_at_quantile(q)
    change = four / one - 1
    ok &= abs(change) <= 0.05
    rounds = ", ".join(f"{int(b[i]) / int(a[i]) * 100 - 100:+.1f} %" for a, b in zip(singles, merged))
    print(f"  {name} of all rounds' requests: 4 segments {four/1000:.2f} ms against 1 process {one/1000:.2f} ms: "
          f"{change * 100:+.1f} % (round by round: {rounds})")
coordination = [line.split() for line in open("coordination.txt") if line.strip()]
to_start = statistics.median(int(c[0]) for c in coordination) / 1000
spread = statistics.median(int(c[1]) for c in coordination) / 1000
print(f"coordination (median): {to_start:.0f} ms from the first registration to the shared start, starts "
      f"{spread:.1f} ms apart, {coordination[0][2]} registry rows written a night")
print("PASS" if ok else "FAIL (counts not exact, or a percentile of all rounds' requests more than 5 % off)")
PY
