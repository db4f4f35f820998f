#!/usr/bin/env bash
# Scores `degrade detect` on the labelled development set in ../shared/detect (recall, false-alarm rate,
# precision at a 2 % share of regressing nights, by group). Target: recall >= 60 % at FAR <= 0.5 %.
#   bash ci/score-detector.sh            # from the repository root
set -euo pipefail
cd "$(dirname "$0")/.."
data_dir=${DEGRADE_DETECT_DATA:-../shared/detect}
if [ ! -f "$data_dir/score.py" ]; then
    echo "score-detector: no scorer at $data_dir/score.py (set DEGRADE_DETECT_DATA)" >&2
    exit 2
fi
cargo build --release --quiet
python3 "$data_dir/score.py" --data "$data_dir/dev-cases.jsonl" --cmd "$PWD/target/release/degrade detect"
