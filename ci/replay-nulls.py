#!/usr/bin/env python3
"""Writes a null set of whole runs made from ../shared/detect/dev-runs.jsonl's histories: each case's history cut
at up to six random nights k >= 5, night k as tonight and the nights before it as the baseline, labelled
no_regression (runs with a past error step are left out: their history holds a change). A second, differently
made set of unchanged runs on which to read a test's calibration far out (DESIGN.md 6.8): the share of runs
alerted is the false-alarm rate, and a history's outlier nights and past steps become tonight here, so split it
by the cases' `tags` before reading latency figures.

    python3 ci/replay-nulls.py ../shared/detect/dev-runs.jsonl 1 > /tmp/replay.jsonl
    python3 ../shared/detect/score.py --runs --cmd "$PWD/target/release/degrade detect --runs" --data /tmp/replay.jsonl
"""
import json
import random
import sys


def main() -> None:
    source, seed = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1
    rng = random.Random(seed)
    with open(source) as lines:
        for line in lines:
            case = json.loads(line)
            if "past_error_step" in case.get("tags", {}).get("scenario", []):
                continue
            history = case["history"]
            nights = list(range(5, len(history)))
            rng.shuffle(nights)
            for k in sorted(nights[:6]):
                print(json.dumps({
                    "id": f"{case['id']}-k{k}",
                    "min_effect_pct": case.get("min_effect_pct"),
                    "history": history[:k],
                    "candidate": history[k],
                    "label": {"class": "no_regression", "endpoints": [], "minor": []},
                    "tags": case.get("tags", {}),
                }))


if __name__ == "__main__":
    main()
