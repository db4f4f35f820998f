#!/usr/bin/env bash
# The manual's pictures (docs/src/images/), taken from the demo's data so they show what degrade shows today:
# the overview, the trend, tonight's run and the alerts page, each in the light and the dark theme, with
# Debian's headless Chromium. Run it after changing a page or the demo, look at the PNGs, and commit them.
#
#   bash ci/screenshots.sh                          # builds the release binary first
#   DEGRADE=target/debug/degrade bash ci/screenshots.sh
#
# The dark theme is the page's own `prefers-color-scheme: dark`, which Chromium's
# `--blink-settings=preferredColorScheme=0` sets (`--force-dark-mode` only darkens the browser's own UI).
# pngquant, when installed (Debian's package), makes the pictures about a third of their size.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${DEGRADE:-}" ]; then
    cargo build --release
    DEGRADE="${CARGO_TARGET_DIR:-target}/release/degrade"
fi
command -v chromium >/dev/null || { echo "screenshots.sh: needs chromium (apt-get install chromium)" >&2; exit 2; }

out=docs/src/images
work="$(mktemp -d)"
demo_pid=""
cleanup() {
    [ -n "$demo_pid" ] && kill "$demo_pid" 2>/dev/null && wait "$demo_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# The demo tells its story (about a minute), then serves until stopped; its first line names the dashboard.
"$DEGRADE" demo --folder "$work/degrade-demo" --listen 127.0.0.1:0 >"$work/demo.txt" 2>&1 &
demo_pid=$!
for _ in $(seq 600); do
    grep -q "Serving until Ctrl-C" "$work/demo.txt" && break
    kill -0 "$demo_pid" 2>/dev/null || { cat "$work/demo.txt"; echo "screenshots.sh: the demo stopped" >&2; exit 1; }
    sleep 1
done
grep -q "Serving until Ctrl-C" "$work/demo.txt" || { cat "$work/demo.txt"; echo "screenshots.sh: the demo took over 10 minutes" >&2; exit 1; }
dashboard="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$work/demo.txt" | head -1)"
run="$(grep -o '/runs/[0-9]*' "$work/demo.txt" | head -1)"

# name, path, window height: each picture shows what a reader looks at first on that page.
pages=(
    "overview / 900"
    "trend /scenarios/demo 1100"
    "run $run 1000"
    "alerts /alerts 800"
)
mkdir -p "$out"
for page in "${pages[@]}"; do
    read -r name path height <<<"$page"
    for theme in light dark; do
        scheme=1
        [ "$theme" = dark ] && scheme=0
        file="$out/$name-$theme.png"
        chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="1200,$height" \
            --blink-settings="preferredColorScheme=$scheme" --screenshot="$file" "$dashboard$path" 2>/dev/null
        if command -v pngquant >/dev/null; then
            pngquant --force --skip-if-larger --quality 70-95 --strip --output "$file" "$file" || true
        fi
    done
done
du -ch "$out"/*.png | tail -1
