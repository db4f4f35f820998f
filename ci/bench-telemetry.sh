#!/usr/bin/env bash
# What scraping telemetry costs the load generator (issue 43's target: scraping 5 exporters every second costs
# the generator under 1 % of one core at 5,000 req/s). Nights of `degrade run` against `degrade demo-target`
# (GET /version) at 5,000 req/s, open model, side by side in alternating rounds of one script run:
#   - without telemetry;
#   - with 5 `scrape` sources scraped every second: five real node_exporter instances (Debian's
#     prometheus-node-exporter, its default collectors: a scrape of the size a real exporter sends), each
#     source keeping node_exporter's default series.
# The target and the exporters run on core 0, the generator on core 1. The generator's CPU is the whole
# `degrade run` process's (user + system, /usr/bin/time): the scrapes run in it, on the caller's runtime beside
# the engine's, and so does storing the telemetry. Printed: each round's CPU per request and the difference as a
# share of one core (the extra CPU per request at 5,000 req/s), then the medians. At 5,000 req/s the generator
# itself spends several percent of a core, and on a shared virtual machine two identical nights differ by a
# percent or two of a core: that difference is read to that precision only. So each round also runs the same
# pair at 10 req/s, where the generator is otherwise idle, and prints what the scrapes alone cost (the extra
# CPU seconds over the run's seconds): the same scrapes, parsed alike, without the engine's noise around them.
# Usage: bash ci/bench-telemetry.sh   (ROUNDS=3, SECONDS_PER_RUN=20 by default; builds --release, or measures
#        DEGRADE=path/to/degrade; installs prometheus-node-exporter if missing, its service kept from starting)
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-20}
RATE=5000
EXPORTERS=5

if ! [ -x /usr/bin/prometheus-node-exporter ] || ! [ -x /usr/bin/time ]; then
    echo "installing prometheus-node-exporter and time..."
    policy=""
    if ! [ -e /usr/sbin/policy-rc.d ]; then
        policy=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy"
    fi
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus-node-exporter time >/dev/null
    if [ -n "$policy" ]; then rm -f "$policy"; fi
fi
if [ -z "${DEGRADE:-}" ]; then
    cargo build --release --quiet
    DEGRADE=${CARGO_TARGET_DIR:-$PWD/target}/release/degrade
fi

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
echo "work folder: $work (kept with KEEP=1)"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() { for _ in $(seq 100); do curl -fs "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "$1 never answered" >&2; exit 1; }

target_port=$(free_port)
taskset -c 0 "$DEGRADE" demo-target --port "$target_port" > "$work/target.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$target_port/version"

telemetry=""
for i in $(seq "$EXPORTERS"); do
    port=$(free_port)
    taskset -c 0 /usr/bin/prometheus-node-exporter --web.listen-address="127.0.0.1:$port" > /dev/null 2>&1 &
    pids+=($!)
    wait_for "http://127.0.0.1:$port/metrics"
    telemetry+="[[scenario.telemetry]]\nname = \"host$i\"\nkind = \"scrape\"\nurl = \"http://127.0.0.1:$port/metrics\"\n"
    telemetry+="exporter = \"node_exporter\"\nevery = \"1s\"\n"
done
bytes=$(curl -fs "http://127.0.0.1:$port/metrics" | wc -c)
echo "$EXPORTERS node_exporters on core 0, $((bytes / 1024)) KB a scrape; demo-target on core 0; generator on core 1"

mkdir -p "$work/scenarios"
# `scenario NAME RATE`: GET /version at RATE, 2 s of warm-up, then SECONDS_PER_RUN measured.
scenario() {
    printf '[[flow]]\nname = "version"\n[[flow.step]]\npath = "/version"\n[load]\nmodel = "open"\n' > "$work/scenarios/$1.toml"
    printf '[[load.stage]]\nduration = "2s"\nrate = %s\nmeasure = false\n' "$2" >> "$work/scenarios/$1.toml"
    printf '[[load.stage]]\nduration = "%ss"\nrate = %s\n' "$SECONDS_PER_RUN" "$2" >> "$work/scenarios/$1.toml"
}
scenario load "$RATE"
scenario idle 10
# `project FOLDER TELEMETRY`: a degrade.toml with both scenarios, each with the telemetry tables given.
project() {
    mkdir -p "$1"
    : > "$1/degrade.toml"
    for name in load idle; do
        printf '[[scenario]]\nname = "%s"\nfile = "%s/scenarios/%s.toml"\ntarget = "http://127.0.0.1:%s"\n%b' \
            "$name" "$work" "$name" "$target_port" "$2" >> "$1/degrade.toml"
    done
}
project "$work/without" ""
project "$work/with" "$telemetry"

# `night FOLDER SCENARIO`: one night there, on core 1 under /usr/bin/time; prints "requests,CPU seconds,
# scrapes read,status" (requests: the measured stages', over which the CPU of the whole process is divided).
night() {
    (cd "$1" && DEGRADE_DATABASE_URL="sqlite://$1/bench.db" taskset -c 1 /usr/bin/time -f '%U %S' -o "$1/time" \
        "$DEGRADE" run "$2" --format json > "$1/run.json" 2>> "$work/degrade.err") || true
    python3 - "$1/run.json" "$1/time" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
user, system = open(sys.argv[2]).read().split()[-2:]
overall = next(e for e in d["endpoints"] if e["endpoint"] == "(all)")
scrapes = sum(s["scrapes"] - s["failed_scrapes"] for s in d.get("telemetry", []))
print(f"{overall['requests']},{float(user) + float(system)},{scrapes},{d['status']}")
PY
}

rows=()
for round in $(seq "$ROUNDS"); do
    # Which of the pair goes first alternates, so neither always meets a machine the other warmed.
    if [ $((round % 2)) -eq 1 ]; then
        without=$(night "$work/without" load) with=$(night "$work/with" load)
        idle_without=$(night "$work/without" idle) idle_with=$(night "$work/with" idle)
    else
        with=$(night "$work/with" load) without=$(night "$work/without" load)
        idle_with=$(night "$work/with" idle) idle_without=$(night "$work/without" idle)
    fi
    row=$(python3 - "$round" "$RATE" "$((SECONDS_PER_RUN + 2))" "$without" "$with" "$idle_without" "$idle_with" <<'PY'
import sys
round_, rate, secs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
def night(text):
    requests, cpu, scrapes, status = text.split(",")
    return int(requests), float(cpu), int(scrapes), status
(r0, c0, _, s0), (r1, c1, n1, s1), (_, i0, _, _), (_, i1, m1, _) = (night(a) for a in sys.argv[4:8])
us0, us1 = c0 * 1e6 / r0, c1 * 1e6 / r1
# The extra CPU per request, at the rate sent: CPU seconds a second of load, as a share of one core.
core = (us1 - us0) * 1e-6 * rate * 100
# At 10 req/s: the extra CPU seconds over the run's seconds.
alone = (i1 - i0) / secs * 100
print(f"{us0:.3f},{us1:.3f},{core:.3f},{alone:.3f}")
print(f"round {round_}: at {rate:.0f} req/s without telemetry {r0} requests ({s0}), {us0:.2f} us CPU/request | with "
      f"{n1} scrapes, {r1} requests ({s1}), {us1:.2f} us CPU/request | difference {core:+.2f} % of one core; "
      f"at 10 req/s the {m1} scrapes alone {alone:+.2f} % of one core", file=sys.stderr)
PY
)
    rows+=("$row")
done
python3 - "${rows[@]}" <<'PY'
import statistics, sys
rows = [tuple(map(float, r.split(","))) for r in sys.argv[1:]]
us0, us1, core, alone = (statistics.median(r[i] for r in rows) for i in range(4))
spread = max(r[2] for r in rows) - min(r[2] for r in rows)
print(f"median over {len(rows)} rounds at 5,000 req/s: without telemetry {us0:.2f} us CPU/request, with 5 exporters "
      f"scraped every second {us1:.2f} us CPU/request; difference {core:+.2f} % of one core (its rounds spread over "
      f"{spread:.2f} points; target: under 1 %)")
print(f"the scrapes alone (the same pair at 10 req/s): {alone:+.2f} % of one core")
PY
