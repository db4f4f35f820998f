#!/usr/bin/env bash
# Is memory bounded whatever a target sends? Starts a server on 127.0.0.1 that answers every request with an
# endless chunked body (and the same for the version URL), then runs `degrade run` against it at 1 request/s for
# 10 s with a 2 s timeout at the default [target] max_body, under /usr/bin/time -v, and prints the peak RSS.
# Target: under 50 MB (before the body cap: 1.8 GB, and an endless version_url aborted the process).
#   bash ci/bench-hardening.sh
set -euo pipefail
cd "$(dirname "$0")/.."

[ -n "${NO_BUILD:-}" ] || cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-$PWD/target}/release/degrade"
work="$(mktemp -d)"
server_pid=""
trap '[ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true; rm -rf "$work"' EXIT

# The endless server: 64 KB chunks for as long as the client reads, at most 60 s per connection.
cat > "$work/endless.py" <<'PY'
import socketserver, sys, time
class Endless(socketserver.StreamRequestHandler):
    def handle(self):
        self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        self.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
        chunk = b"10000\r\n" + b"x" * 65536 + b"\r\n"
        until = time.monotonic() + 60
        try:
            while time.monotonic() < until:
                self.wfile.write(chunk)
        except OSError:
            pass
class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
with Server(("127.0.0.1", 0), Endless) as server:
    print(server.server_address[1], flush=True)
    server.serve_forever()
PY
python3 "$work/endless.py" > "$work/port" &
server_pid=$!
for _ in $(seq 1 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")

cat > "$work/endless.toml" <<TOML
[target]
base_url = "http://127.0.0.1:$port"
timeout = "2s"
[[flow]]
name = "stream"
[[flow.step]]
path = "/stream"
[load]
model = "open"
[[load.stage]]
duration = "10s"
rate = 1
TOML
: > "$work/degrade.toml"

measure() {
    local label=$1; shift
    (cd "$work" && /usr/bin/time -v "$bin" "$@" > "$work/out.txt" 2> "$work/time.txt") || true
    local rss_kb
    rss_kb=$(grep 'Maximum resident set size' "$work/time.txt" | awk '{print $NF}')
    echo "$label: peak RSS $(python3 -c "print(round($rss_kb / 1024, 1))") MB"
    grep -hE 'body_too_large|longer than|Run 1' "$work/out.txt" "$work/time.txt" | head -3 | sed 's/^/    /' || true
}
measure "degrade run against an endless body, 1/s for 10 s" run endless.toml --build endless
rm -f "$work"/degrade.db*
cat > "$work/degrade.toml" <<TOML
[[scenario]]
name = "endless"
file = "endless.toml"
[scenario.build]
version_url = "http://127.0.0.1:$port/version"
TOML
measure "degrade run whose version_url answers an endless body" run endless
