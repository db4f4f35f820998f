#!/usr/bin/env bash
# Request tapes: the cost of `degrade tape import` on a big access log, and of replaying its tape, against nginx
# serving a static 200 on 127.0.0.1, nginx on core 0 and degrade on core 1:
#   1. import of a day of nginx `combined` log, 2 million lines (ci/gen-access-log.py: 12 routes under /api,
#      hundreds of thousands of distinct ids, 5 % static assets), timed by /usr/bin/time: wall time, lines per
#      second and peak RSS, beside the same figures for its first 200 thousand lines. Target: memory independent
#      of the log's size (the two peaks within a few MB of each other); the import report's first lines are
#      printed to read what it kept, dropped and grouped;
#   2. replay of that tape in the open model at 20,000 req/s for 10 s (after 2 s of unmeasured ramp, at most
#      256 connections, as bench-engine.sh's open run), beside the same load on a one-step flow, in alternating
#      rounds (tape, then flow): achieved rate (target within 1 %), schedule-lag p99 (target < 1 ms) and CPU per
#      request, user + system over the whole process (/usr/bin/time, start-up, ramp and loading the tape
#      included), of each, and the ratio tape / flow (target <= 1.10: replaying recorded requests costs at most
#      10 % more than sending one fixed one). On a shared virtual machine one round can be off by 30 %, so read
#      the medians. The peak RSS of each run is printed too, for the memory the tape takes while replayed.
# Usage: bash ci/bench-tape.sh   (ROUNDS=3 by default; installs nginx-light if missing; builds the `dist`
#        profile, or measures DEGRADE=path/to/degrade; KEEP=1 keeps the work folder)
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
LINES=${LINES:-2000000}
SMALL_LINES=${SMALL_LINES:-200000}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
OPEN_RATE=${OPEN_RATE:-20000}

if ! [ -x /usr/sbin/nginx ] || ! [ -x /usr/bin/time ]; then
    echo "installing nginx-light and time..."
    apt-get install -y -q nginx-light time >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q nginx-light time >/dev/null; }
fi
# The fully optimised profile (Cargo.toml's `dist`); DEGRADE=path measures another build instead.
if [ -z "${DEGRADE:-}" ]; then
    cargo build --profile dist --quiet
    DEGRADE=${CARGO_TARGET_DIR:-$PWD/target}/dist/degrade
fi

work=$(mktemp -d)
echo "work folder: $work (kept with KEEP=1)"
nginx_pid=""
trap '[ -z "$nginx_pid" ] || kill $nginx_pid 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
export DEGRADE_DATABASE_URL="sqlite://$work/bench.db"
mb() { python3 -c "print(f'{$1 / 1024:.1f}')"; }

echo "== import: $LINES lines of nginx combined log, and its first $SMALL_LINES"
started=$(date +%s.%N)
python3 ci/gen-access-log.py "$LINES" > "$work/access.log"
head -n "$SMALL_LINES" "$work/access.log" > "$work/small.log"
echo "generated in $(python3 -c "print(f'{$(date +%s.%N) - $started:.1f}')") s: $(du -m "$work/access.log" | cut -f1) MB"
# `import_log NAME LOG LINES`: imports LOG into NAME.tape.gz and NAME.toml; prints its wall time, rate and peak RSS,
# and leaves the report (stdout and stderr) in NAME.out and "seconds KB" in NAME.time.
import_log() {
    if ! /usr/bin/time -f '%e %M' -o "$work/$1.time" \
            "$DEGRADE" tape import "$2" --output "$work/$1.tape.gz" --scenario "$work/$1.toml" > "$work/$1.out" 2>&1; then
        echo "tape import of $2 failed:"; cat "$work/$1.out"; tail -3 "$work/$1.time"; exit 1
    fi
    [ -s "$work/$1.tape.gz" ] || { echo "tape import of $2 wrote no $work/$1.tape.gz"; cat "$work/$1.out"; exit 1; }
    read -r secs kb < <(tail -1 "$work/$1.time")
    python3 - "$3" "$secs" "$kb" "$(stat -c %s "$work/$1.tape.gz")" <<'PY'
import sys
lines, secs, kb, size = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
print(f"{lines:>9,} lines: {secs:.2f} s, {lines / max(secs, 1e-3):,.0f} lines/s, peak RSS {kb / 1024:.1f} MB, "
      f"tape {size / 1e6:.1f} MB")
PY
}
import_log small "$work/small.log" "$SMALL_LINES"
import_log bench "$work/access.log" "$LINES"
small_kb=$(tail -1 "$work/small.time" | awk '{print $2}')
big_kb=$(tail -1 "$work/bench.time" | awk '{print $2}')
echo "peak RSS: $(mb "$small_kb") MB for $SMALL_LINES lines, $(mb "$big_kb") MB for $LINES lines" \
     "(target: independent of the log's size; identical runs differ by about 1 MB)"
echo "-- the import report of the $LINES lines, first lines:"
head -n 15 "$work/bench.out"

echo "== replay at $OPEN_RATE req/s for ${SECONDS_PER_RUN}s, tape vs a one-step flow, $ROUNDS rounds"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$work/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 8192; }
http {
    access_log off;
    keepalive_requests 100000000;
    server {
        listen 127.0.0.1:$port;
        location / { return 200 "ok\n"; }
    }
}
EOF
taskset -c 0 /usr/sbin/nginx -p "$work" -c "$work/nginx.conf" &
nginx_pid=$!
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$port/" >/dev/null 2>&1 && break; sleep 0.1; done

# `scenario NAME WORKLOAD [one]`: the same target and load around the tape or the flow (with `one`, a single
# request instead: the run's start-up, reading the tape included); prints the file's path.
scenario() {
    local file="$work/$1.toml"
    {
        printf '[target]\nbase_url = "http://127.0.0.1:%s"\nmax_connections = 256\n' "$port"
        printf '%b' "$2"
        printf '[load]\nmodel = "open"\nmax_in_flight = 5000\n'
        if [ -n "${3:-}" ]; then
            printf '[[load.stage]]\nduration = "1s"\nrate = 1\n'
        else
            # Two seconds of ramp first, unmeasured, as bench-engine.sh's open run has.
            printf '[[load.stage]]\nduration = "2s"\nfrom = 100\nto = %s\nmeasure = false\n' "$OPEN_RATE"
            printf '[[load.stage]]\nduration = "%ss"\nrate = %s\n' "$SECONDS_PER_RUN" "$OPEN_RATE"
        fi
    } > "$file"
    echo "$file"
}
tape=$(scenario tape "[[tape]]\nfile = \"$work/bench.tape.gz\"\n")
flow=$(scenario flow "[[flow]]\nname = \"one\"\n[[flow.step]]\npath = \"/api/boards\"\n")
tape_one=$(scenario tape_one "[[tape]]\nfile = \"$work/bench.tape.gz\"\n" one)
flow_one=$(scenario flow_one "[[flow]]\nname = \"one\"\n[[flow.step]]\npath = \"/api/boards\"\n" one)

# `run NAME FILE`: one run on core 1; prints "achieved,target,lag_us,dropped,requests,endpoints,cpu_s,rss_kb,status".
run() {
    # `run` exits 3 for a run it judged invalid; the figures are still what is measured here.
    taskset -c 1 /usr/bin/time -f '%U %S %M' -o "$work/$1.time" \
        "$DEGRADE" run "$2" --format json > "$work/$1.json" 2>> "$work/degrade.err" || true
    if ! [ -s "$work/$1.json" ]; then
        echo "the $1 run printed no JSON; the end of its standard error:" >&2; tail -20 "$work/degrade.err" >&2; exit 1
    fi
    python3 - "$work/$1.json" "$(tail -1 "$work/$1.time")" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
user, system, rss_kb = sys.argv[2].split()
load, endpoints = d["load_summary"], d["endpoints"]
# The whole run's row is "(all)" (endpoints[0] in this version); without one, the rows add up to the whole.
parts = [e for e in endpoints if e["endpoint"] != "(all)"]
requests = sum(e["requests"] for e in parts)
overall = [e["requests"] for e in endpoints if e["endpoint"] == "(all)"]
if overall and overall[0] != requests:
    print(f"warning: {sys.argv[1]}: the endpoints add up to {requests} requests, (all) says {overall[0]}", file=sys.stderr)
print(f"{load['achieved_rate']},{load['target_rate']},{load['schedule_lag_p99_us']},{load['dropped']},{requests},"
      f"{len(parts)},{float(user) + float(system)},{rss_kb},{d['status']}")
PY
}
# Start-up (the tape's one read when the scenario loads: checking every line, its routes, its hash) is paid
# once per run, not per request: measured on a one-request run of each, and taken out of the per-request CPU.
t1=$(run tape_one "$tape_one")
f1=$(run flow_one "$flow_one")
startup_tape=$(echo "$t1" | cut -d, -f7)
startup_flow=$(echo "$f1" | cut -d, -f7)
echo "start-up CPU (a one-request run): tape $startup_tape s (reading the $LINES-line tape once), flow $startup_flow s"
rounds=""
for round in $(seq "$ROUNDS"); do
    t=$(run tape "$tape")
    f=$(run flow "$flow")
    rounds="$rounds $t/$f"
    python3 - "$round" "$t" "$f" "$startup_tape" "$startup_flow" <<'PY'
import sys
def fields(s):
    a, target, lag, dropped, n, endpoints, cpu, rss, status = s.split(",")
    return float(a), float(target), float(lag), int(dropped), int(n), int(endpoints), float(cpu), int(rss), status
t, f = fields(sys.argv[2]), fields(sys.argv[3])
def show(name, r):
    a, target, lag, dropped, n, endpoints, cpu, rss, status = r
    return (f"{name} {a:.0f} req/s ({(a / target - 1) * 100:+.2f} %), lag p99 {lag / 1000:.3f} ms, "
            f"{cpu / n * 1e6:.2f} us CPU/request, {n} requests over {endpoints} endpoint{'s' * (endpoints != 1)}, "
            f"dropped {dropped}, RSS {rss / 1024:.0f} MB, {status}")
st, sf = float(sys.argv[4]), float(sys.argv[5])
print(f"round {sys.argv[1]}: {show('tape', t)}\n         {show('flow', f)}\n"
      f"         CPU ratio tape / flow {(t[6] / t[4]) / (f[6] / f[4]):.2f} over the whole process; without start-up "
      f"{(t[6] - st) / t[4] * 1e6:.2f} vs {(f[6] - sf) / f[4] * 1e6:.2f} us/request, ratio "
      f"{((t[6] - st) / t[4]) / ((f[6] - sf) / f[4]):.2f}")
PY
done
python3 - "$rounds" "$startup_tape" "$startup_flow" <<'PY'
import statistics, sys
st, sf = float(sys.argv[2]), float(sys.argv[3])
rows = [[r.split(",") for r in pair.split("/")] for pair in sys.argv[1].split()]
def med(side, f):
    return statistics.median(f(r[side]) for r in rows)
target = float(rows[0][0][1])
for side, name in ((0, "tape"), (1, "flow")):
    rate = med(side, lambda r: float(r[0]))
    lag = med(side, lambda r: float(r[2]) / 1000)
    cpu = med(side, lambda r: float(r[6]) / int(r[4]) * 1e6)
    rss = med(side, lambda r: int(r[7]) / 1024)
    print(f"median {name}: {rate:.0f} req/s of {target:.0f} ({(rate / target - 1) * 100:+.2f} %; target within 1 %), "
          f"lag p99 {lag:.3f} ms (target < 1 ms), {cpu:.2f} us CPU/request, peak RSS {rss:.0f} MB")
ratio = statistics.median((float(t[6]) / int(t[4])) / (float(f[6]) / int(f[4])) for t, f in rows)
print(f"median round ratio of CPU per request, tape / flow: {ratio:.2f} over the whole process")
ratio = statistics.median(((float(t[6]) - st) / int(t[4])) / ((float(f[6]) - sf) / int(f[4])) for t, f in rows)
print(f"median round ratio of CPU per request without start-up, tape / flow: {ratio:.2f} (target <= 1.10)")
PY
