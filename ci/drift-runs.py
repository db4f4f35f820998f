#!/usr/bin/env python3
"""Writes ../shared/detect/dev-runs.jsonl again with a slow drift added to every endpoint's latency: each endpoint
of each scenario gets its own slope, drawn uniformly from +-MAX per night (seeded), applied to every percentile
of every night by its date (a missing night still counts as a night of drift). Labels are unchanged: a drift is
part of the current level (dev-runs' README), and a change tonight sits on top of it.

It is a stress set made differently from the one the judge was tuned on, for one question: does a drifting
history make unchanged nights look regressed? Score it like dev-runs:

    python3 ci/drift-runs.py 0.04 > /tmp/drift4.jsonl
    python3 ../shared/detect/score.py --runs --cmd "$PWD/target/release/degrade detect --runs" --data /tmp/drift4.jsonl
"""
import datetime
import json
import os
import random
import sys

PERCENTILES = ["p50_ms", "p75_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms", "mean_ms"]


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: drift-runs.py MAX_SLOPE_PER_NIGHT [SEED] [DATA]")
    max_slope = float(sys.argv[1])
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 7)
    here = os.path.dirname(os.path.abspath(__file__))
    data = sys.argv[3] if len(sys.argv) > 3 else os.path.join(here, "..", "..", "shared", "detect", "dev-runs.jsonl")
    with open(data) as lines:
        for number, line in enumerate(lines, 1):
            try:
                case = json.loads(line)
                nights = case["history"] + [case["candidate"]]
                first = datetime.date.fromisoformat(nights[0]["date"])
            except (ValueError, KeyError, IndexError) as e:
                sys.exit(f"{data}:{number}: not a dev-runs case ({e})")
            names = sorted({e["endpoint"] for night in nights for e in night["endpoints"]})
            slopes = {name: rng.uniform(-max_slope, max_slope) for name in names}
            for night in nights:
                age = (datetime.date.fromisoformat(night["date"]) - first).days
                for e in night["endpoints"]:
                    factor = (1.0 + slopes[e["endpoint"]]) ** age
                    for key in PERCENTILES:
                        if key in e:
                            e[key] = round(e[key] * factor, 4)
            print(json.dumps(case))


if __name__ == "__main__":
    main()
