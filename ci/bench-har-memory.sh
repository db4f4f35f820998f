#!/usr/bin/env bash
# Is a HAR import's memory bounded whatever the recording holds (issue 41, point 2)? Makes the issue's two
# hostile recordings with ci/gen-hostile-har.py and imports each under /usr/bin/time -v, printing peak RSS and
# wall time:
#   1. `tape import` of `{"log":{"entries":[[0,0,0,…]]}}`, 120 MB of zeros (117 KB gzipped): an item that is not
#      an entry. Before: 3.9 GB and 10.8 s (an untagged enum buffered it as a generic tree).
#   2. `tape import --flows` of a HAR whose first answer is `[0,0,…]`, 250 MB (244 KB gzipped), over the 16 MiB
#      an entry may take. Before: 4.2 GB and 11.5 s.
#   3. the same with a 15 MB answer, under the entry cap: read whole, but too long to be read as a JSON tree
#      for values (over 1 MiB). Before: 280 MB.
# Target: each under 64 MB, that is one entry's 2 × 16 MiB (src/tape/sources/har/) and what degrade takes to
# start; measured on 2 cores: 12 MB in 1.4 s, 27 MB in 2.7 s and 40 MB in 0.2 s.
# Usage: bash ci/bench-har-memory.sh   (builds the release profile, or measures DEGRADE=path/to/degrade;
#        installs Debian's `time` if /usr/bin/time is missing)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! [ -x /usr/bin/time ]; then
    echo "installing time..."
    apt-get install -y -q time >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q time >/dev/null; }
fi
if [ -z "${DEGRADE:-}" ]; then
    cargo build --release --quiet
    DEGRADE=${CARGO_TARGET_DIR:-$PWD/target}/release/degrade
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python3 ci/gen-hostile-har.py entries 120 "$work/entries.har.gz"
python3 ci/gen-hostile-har.py answer 250 "$work/answer.har.gz"
python3 ci/gen-hostile-har.py answer 15 "$work/answer15.har.gz"

measure() {
    local label=$1; shift
    (cd "$work" && /usr/bin/time -v "$DEGRADE" "$@" > "$work/out.txt" 2> "$work/time.txt") || true
    local rss_kb elapsed
    rss_kb=$(grep 'Maximum resident set size' "$work/time.txt" | awk '{print $NF}')
    elapsed=$(grep 'Elapsed (wall clock)' "$work/time.txt" | awk '{print $NF}')
    echo "$label: peak RSS $(python3 -c "print(round($rss_kb / 1024, 1))") MB, $elapsed"
    grep -hE 'not a HAR entry|one entry may take|unread|flow  ' "$work/out.txt" | head -3 | sed 's/^ */    /' || true
}
echo "$(ls -l "$work"/*.har.gz | awk '{print $5, $NF}' | sed "s|$work/||")"
measure "tape import entries.har.gz ([[0,0,…]], 120 MB)" tape import entries.har.gz --output t.tape --scenario t.toml
measure "tape import --flows answer.har.gz (a 250 MB answer)" tape import answer.har.gz --flows --scenario a.toml
measure "tape import --flows answer15.har.gz (a 15 MB answer)" tape import answer15.har.gz --flows --scenario b.toml
