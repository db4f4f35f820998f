#!/usr/bin/env bash
# What does a WebSocket cost degrade? Starts the demo API (`degrade demo-target`, whose board channel
# /boards/{id}/live acknowledges every message) on 127.0.0.1, then in one run:
#   1. idle sockets: `degrade run` holding 1, then 10,000 sockets open on the channel (closed model, one socket
#      per user, nothing sent); the RSS of degrade and of the demo API sampled while they are held, and the RSS
#      per socket, (RSS with 10,000 − RSS with 1) / 9,999. The open-files limit is raised to the hard limit; if
#      that cannot hold 10,000 sockets, the bench holds as many as it can and says so.
#   2. messages against requests at the same rate: an open-model run of WebSocket sessions (connect, then 20
#      sends each awaiting its ack, 50 ms apart), RATE messages a second, beside a run of plain HTTP GETs at
#      RATE requests a second on keep-alive connections; each with its achieved rate, its p50/p99 and the CPU
#      per message (per request) of degrade's process and of the demo API's, read from /proc over the measured
#      window.
# Targets (release build, 2 cores): under 16 KiB of degrade's memory per idle socket (the guide
# states 13-15 KiB, measured on the debug build by the websocket tests); a message costs degrade no more CPU
# than an HTTP request at the same rate.
#   bash ci/bench-websocket.sh                 # RATE=1000 SOCKETS=10000 by default
#   RATE=2000 SOCKETS=5000 bash ci/bench-websocket.sh
set -euo pipefail
cd "$(dirname "$0")/.."

RATE=${RATE:-1000}
SOCKETS=${SOCKETS:-10000}
[ -n "${NO_BUILD:-}" ] || cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-$PWD/target}/release/degrade"
work="$(mktemp -d)"
api_pid=""
trap '[ -z "$api_pid" ] || kill "$api_pid" 2>/dev/null || true; rm -rf "$work"' EXIT

# Each socket is a descriptor in both processes: raise the soft limit as far as the hard one allows.
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -ge $((SOCKETS + 1000)) ]; then
    ulimit -n $((SOCKETS + 1000))
else
    ulimit -n "$hard"
    echo "the open-files hard limit is $hard: holding $((hard - 1000)) sockets instead of $SOCKETS"
    SOCKETS=$((hard - 1000))
fi
echo "open-files limit $(ulimit -n); ephemeral ports $(tr '\t' - < /proc/sys/net/ipv4/ip_local_port_range)"

"$bin" demo-target --port 0 > "$work/api.out" 2>&1 &
api_pid=$!
for _ in $(seq 1 300); do grep -q ' is at ' "$work/api.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/.* is at \(http[^ ]*\)\/ .*/\1/p' "$work/api.out" | head -1)
[ -n "$url" ] || { cat "$work/api.out"; exit 1; }
: > "$work/degrade.toml"

cat > "$work/bench.py" <<'PY'
"""Runs degrade against the demo API and samples both processes from /proc while it runs."""
import json, os, subprocess, sys, time

bin_, work, url, api_pid, rate, sockets = sys.argv[1:7]
api_pid, rate, sockets = int(api_pid), int(rate), int(sockets)
TICK = os.sysconf("SC_CLK_TCK")

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))

def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK

def run(name, scenario, samples):
    """Runs `scenario`; calls each (at, sample) after `at` seconds with degrade's pid; returns the JSON report."""
    path = os.path.join(work, f"{name}.toml")
    with open(path, "w") as f:
        f.write(scenario)
    cmd = [bin_, "run", f"{name}.toml", "--build", "bench", "-f", "json"]
    p = subprocess.Popen(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    for at, sample in samples:
        time.sleep(max(0.0, started + at - time.monotonic()))
        if p.poll() is not None:
            out, err = p.communicate()
            sys.exit(f"degrade run {name} ended after {time.monotonic() - started:.1f} s, before its sample at {at} s:\n{out}\n{err}")
        sample(p.pid)
    out, err = p.communicate()
    try:
        return json.loads(out)
    except json.JSONDecodeError:
        sys.exit(f"degrade run {name} did not report:\n{out}\n{err}")

def endpoint(report, name):
    return next(e for e in report["endpoints"] if e["endpoint"] == name)

def open_sockets(pid):
    """The sockets a process holds open."""
    held = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            held += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return held

def idle(users):
    held = {}
    def sample(pid):
        held.update(degrade=rss_kib(pid), api=rss_kib(api_pid), sockets=open_sockets(api_pid))
    scenario = f"""[target]
base_url = "{url}"
timeout = "20s"
connect_timeout = "10s"
[[flow]]
name = "idle"
  [[flow.step]]
  ws = "connect"
  name = "WS connect"
  path = "/boards/{{{{ randint(1, 600) }}}}/live"
  # An await nothing answers holds the socket open (a think time past the stage's end would end the session at
  # once); it times out after the sample, counted on WS idle.
  [[flow.step]]
  ws = "await"
  name = "WS idle"
  await = {{ prefix_hex = "ff", timeout = "25s" }}
[load]
model = "closed"
  [[load.stage]]
  duration = "35s"
  users = {users}
"""
    # Sampled well after the last connect (10,000 take about a second here) and well before the stage ends.
    report = run(f"idle{users}", scenario, [(20, sample)])
    connect = endpoint(report, "WS connect")
    return held, connect

one, _ = idle(1)
many, connect = idle(sockets)
# The demo API's sockets beyond those it held with one client: the clients' sockets held open at once.
held = many["sockets"] - one["sockets"] + 1
print(f"idle sockets: {held} held open at once (asked {sockets}); {connect['requests']} connects, "
      f"{connect['errors']} failed, connect p50 {connect['p50_us'] / 1000:.1f} ms, p99 {connect['p99_us'] / 1000:.1f} ms")
per = lambda key: (many[key] - one[key]) / max(1, held - 1)
print(f"  degrade RSS: {one['degrade'] / 1024:.1f} MiB with 1 socket, {many['degrade'] / 1024:.1f} MiB with {held}: "
      f"{per('degrade'):.1f} KiB per socket (session, codec and connection)")
print(f"  demo API RSS: {one['api'] / 1024:.1f} MiB, then {many['api'] / 1024:.1f} MiB: {per('api'):.1f} KiB per socket")

WARMUP, MEASURED = 5, 20

def paced(name, flow, sessions_per_s):
    window = {}
    def begin(pid):
        window.update(t=time.monotonic(), degrade=cpu_s(pid), api=cpu_s(api_pid))
    def end(pid):
        window.update(secs=time.monotonic() - window["t"], degrade=cpu_s(pid) - window["degrade"],
                      api=cpu_s(api_pid) - window["api"])
    scenario = f"""[target]
base_url = "{url}"
timeout = "5s"
[[flow]]
name = "{name}"
{flow}
[load]
model = "open"
max_in_flight = 2000
  [[load.stage]]
  duration = "{WARMUP}s"
  rate = {sessions_per_s}
  measure = false
  [[load.stage]]
  duration = "{MEASURED}s"
  rate = {sessions_per_s}
"""
    report = run(name, scenario, [(WARMUP + 1, begin), (WARMUP + MEASURED - 1, end)])
    return report, window

SENDS = 20
ws_flow = """  [[flow.step]]
  ws = "connect"
  name = "WS connect"
  path = "/boards/{{ randint(1, 600) }}/live"
""" + """  [[flow.step]]
  ws = "send"
  name = "WS move"
  json = { op = "move", id = "{{ seq() }}" }
  await = { json = [{ path = "$.type", eq = "ack" }] }
  think = "50ms"
""" * SENDS
http_flow = """  [[flow.step]]
  name = "GET /version"
  path = "/version"
"""
ws, ws_window = paced("messages", ws_flow, rate / SENDS)
http, http_window = paced("requests", http_flow, rate)

def line(label, report, key, window):
    e = endpoint(report, key)
    per_s = e["requests"] / report["load_summary"]["measured_secs"]
    done = per_s * window["secs"]
    us = lambda cpu: 1e6 * cpu / max(1.0, done)
    print(f"  {label}: {per_s:.0f}/s achieved ({e['errors']} errors), p50 {e['p50_us']} µs, p99 {e['p99_us']} µs; "
          f"CPU per {label.split()[0]}: degrade {us(window['degrade']):.1f} µs, demo API {us(window['api']):.1f} µs")

print(f"at {rate} a second for {MEASURED} s (after {WARMUP} s of warm-up), CPU over the measured window:")
line("message (WebSocket, awaited ack)", ws, "WS move", ws_window)
line("request (HTTP/1.1 keep-alive GET)", http, "GET /version", http_window)
c = endpoint(ws, "WS connect")
print(f"  (the WebSocket run also opened {c['requests']} sockets, one per {SENDS} messages; their cost is in its CPU)")
PY
python3 "$work/bench.py" "$bin" "$work" "$url" "$api_pid" "$RATE" "$SOCKETS"
