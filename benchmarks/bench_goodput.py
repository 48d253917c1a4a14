"""Time the goodput simulation of a 10,000-request trace (target: under 2 s).

Run: ``python benchmarks/bench_goodput.py``. Prints the time per batch cap.
"""

from __future__ import annotations

import time

import numpy as np

from lab.catalog import get_gpu, get_model
from lab.models.goodput import goodput_metrics, make_trace, simulate

REQUESTS = 10_000


def main() -> None:
    """Simulate one synthetic 10,000-request trace at several caps and print the timings."""
    rng = np.random.default_rng(0)
    trace = make_trace(range(REQUESTS), np.round(np.cumsum(rng.exponential(1 / 30, REQUESTS)), 3),
                       rng.integers(16, 2000, REQUESTS), rng.integers(1, 500, REQUESTS))
    model, gpu = get_model("llama-3.1-8b"), get_gpu("h100-sxm")
    for cap in (1, 16, 64, 256):
        for memory_check in (False, True):
            start = time.perf_counter()
            sim = simulate(trace, model, gpu, 1, "bf16", cap, 0.002, 2e-5,
                           memory_check=memory_check)
            elapsed = time.perf_counter() - start
            m = goodput_metrics(sim, 1.0, 0.012)
            print(f"{REQUESTS:,} requests, cap {cap:>3}, memory check {memory_check!s:<5}: "
                  f"{elapsed:.3f} s ({m['steps']:,} steps, {m['goodput_rps']:.2f} req/s good)")


if __name__ == "__main__":
    main()
