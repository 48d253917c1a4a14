"""Time loading a 1,000,000-row trace and ``calc goodput`` on it (targets: < 5 s, < 400 MB).

Run: ``python benchmarks/bench_trace_load.py [--rows N] [--repeat R]``. It writes a synthetic
trace CSV (seeded: arrivals at about 80 requests/s like the shipped trace, prompts of 16–1,024
tokens, outputs of 1–512 tokens) in a temporary folder and prints, each measured in a fresh
Python process so peak memory is that run's alone:

1. ``load_trace`` alone: seconds and the process's peak resident memory (RSS, MB);
2. ``inference-lab calc goodput --trace <file> --json`` end to end (imports, catalog, loading,
   the simulation, the metrics, JSON to /dev/null): seconds and peak RSS, with the time split
   into loading, simulating and scoring, and whether issue 9's target (< 5 s, < 400 MB on
   1,000,000 rows) is met, beside the load average (a busy machine stretches wall time).

Figures are best of ``--repeat`` runs (the machine is shared; the best is the least disturbed);
each also prints the process's CPU time, which a busy machine disturbs less than wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROWS = 1_000_000
"""Requests in the synthetic trace."""
TARGET_S, TARGET_MB = 5.0, 400.0
"""Issue 9's targets for ``calc goodput`` on a 1,000,000-row trace: wall seconds, peak RSS MB."""

LOAD_ONLY = """
import json, resource, sys, time
start = time.perf_counter()
from lab.models.goodput import load_trace
imported = time.perf_counter()
trace = load_trace(sys.argv[1])
done = time.perf_counter()
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"import_s": imported - start, "load_s": done - imported, "rows": len(trace),
                  "cpu_s": usage.ru_utime + usage.ru_stime,
                  "peak_rss_mb": usage.ru_maxrss / 1024}))
"""

END_TO_END = """
import contextlib, io, json, os, resource, sys, time
start = time.perf_counter()
import lab.models.goodput.simulate as simulate_module
import lab.points.serving_points as calc_serving
from cli.main import main
timings = {"load_s": 0.0, "simulate_s": 0.0}
def timed(name, function):
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            timings[name] += time.perf_counter() - t
    return wrapper
calc_serving.load_trace = timed("load_s", calc_serving.load_trace)
calc_serving.simulate = timed("simulate_s", calc_serving.simulate)
with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
    status = main(["calc", "goodput", "--trace", sys.argv[1], "--json"])
total = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"status": status, "total_s": total, **timings,
                  "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024}))
"""


def write_trace(path: Path, rows: int, seed: int = 0) -> None:
    """A seeded synthetic trace of ``rows`` requests in the shipped trace's format."""
    rng = np.random.default_rng(seed)
    arrival = np.round(np.cumsum(rng.exponential(1 / 80, rows)), 3)
    prompt = rng.integers(16, 1025, rows)
    output = rng.integers(1, 513, rows)
    ids = np.arange(1, rows + 1)
    with path.open("w") as handle:
        handle.write("request_id,arrival_s,prompt_tokens,output_tokens\n")
        np.savetxt(handle, np.column_stack([ids, arrival, prompt, output]),
                   fmt=["%d", "%.3f", "%d", "%d"], delimiter=",")


def run_child(code: str, trace: Path) -> dict:
    """Run ``code`` in a fresh interpreter and return the JSON line it prints."""
    done = subprocess.run([sys.executable, "-c", code, str(trace)], capture_output=True,
                          text=True, check=False)
    if done.returncode:
        raise SystemExit(f"child failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def best(runs: list[dict], key: str) -> dict:
    """The run with the smallest ``key``."""
    return min(runs, key=lambda run: run[key])


def main() -> None:
    """Write the trace, time both measurements and print them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=ROWS, help="requests (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each (default: 1)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "trace.csv"
        write_trace(trace, args.rows)
        size_mb = trace.stat().st_size / 1e6
        print(f"trace: {args.rows:,} rows, {size_mb:.1f} MB CSV")
        load = best([run_child(LOAD_ONLY, trace) for _ in range(args.repeat)], "load_s")
        print(f"load_trace alone     : {load['load_s']:6.2f} s, peak RSS "
              f"{load['peak_rss_mb']:5.0f} MB (imports {load['import_s']:.2f} s; process CPU "
              f"{load['cpu_s']:.2f} s)")
        e2e = best([run_child(END_TO_END, trace) for _ in range(args.repeat)], "total_s")
        rest = e2e["total_s"] - e2e["load_s"] - e2e["simulate_s"]
        print(f"calc goodput (--json): {e2e['total_s']:6.2f} s, peak RSS "
              f"{e2e['peak_rss_mb']:5.0f} MB (load {e2e['load_s']:.2f} s, simulate "
              f"{e2e['simulate_s']:.2f} s, imports/metrics/JSON {rest:.2f} s; process CPU "
              f"{e2e['cpu_s']:.2f} s; exit status {e2e['status']})")
        if args.rows == ROWS:
            met = e2e["total_s"] < TARGET_S and e2e["peak_rss_mb"] < TARGET_MB
            print(f"target < {TARGET_S:g} s and < {TARGET_MB:g} MB end to end: "
                  f"{'met' if met else 'NOT met'} ({e2e['total_s']:.2f} s, "
                  f"{e2e['peak_rss_mb']:.0f} MB; load average "
                  f"{', '.join(f'{x:.1f}' for x in os.getloadavg())})")


if __name__ == "__main__":
    main()
