"""Author ``default.csv``, the shipped trace of experiment 7 (goodput under a contract).

Deterministic: Python's ``random.Random`` seeded with a fixed integer (its Mersenne Twister and
``expovariate``/``lognormvariate`` are pure Python and stable across versions). Run from the
repository root::

    python datasets/traces/make_default_trace.py

Shape of the trace: ``REQUESTS`` requests arriving as a Poisson stream at ``RATE_PER_S`` (an
overload burst for one H100 at small batch caps), prompts log-normal around
``PROMPT_MEDIAN`` tokens and outputs log-normal around ``OUTPUT_MEDIAN`` tokens, clipped to
sensible bounds. Arrivals are rounded to the millisecond.
"""

from __future__ import annotations

import csv
import math
import random
import sys
from pathlib import Path

SEED = 1
REQUESTS = 400
RATE_PER_S = 80.0
PROMPT_MEDIAN, PROMPT_SIGMA, PROMPT_BOUNDS = 400, 0.6, (16, 8000)
OUTPUT_MEDIAN, OUTPUT_SIGMA, OUTPUT_BOUNDS = 250, 0.6, (1, 2000)
HEADER = ("request_id", "arrival_s", "prompt_tokens", "output_tokens")


def rows(seed: int = SEED, requests: int = REQUESTS, rate: float = RATE_PER_S) -> list[tuple]:
    """The trace's rows: (request id, arrival s, prompt tokens, output tokens)."""
    rng = random.Random(seed)
    out, now = [], 0.0
    for rid in range(1, requests + 1):
        prompt = round(rng.lognormvariate(math.log(PROMPT_MEDIAN), PROMPT_SIGMA))
        output = round(rng.lognormvariate(math.log(OUTPUT_MEDIAN), OUTPUT_SIGMA))
        prompt = min(max(prompt, PROMPT_BOUNDS[0]), PROMPT_BOUNDS[1])
        output = min(max(output, OUTPUT_BOUNDS[0]), OUTPUT_BOUNDS[1])
        out.append((rid, f"{now:.3f}", prompt, output))
        now += rng.expovariate(rate)
    return out


DEFAULT_PATH = Path(__file__).with_name("default.csv")
"""Where the shipped trace lives."""
PACKAGED_PATH = Path(__file__).resolve().parents[2] / "lab" / "data" / "default_trace.csv"
"""Its copy inside the ``lab`` package, which a wheel install reads."""


def main(path: Path = DEFAULT_PATH) -> None:
    """Write the trace to ``path``."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(HEADER)
        writer.writerows(rows())
    print(f"wrote {path} ({REQUESTS} requests)", file=sys.stderr)
    if path == DEFAULT_PATH:
        PACKAGED_PATH.write_bytes(path.read_bytes())
        print(f"wrote {PACKAGED_PATH} (the packaged copy)", file=sys.stderr)


if __name__ == "__main__":
    main()
