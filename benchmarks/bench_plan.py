"""Experiment 12's speed: one plan, the page's update, the regret study and the default grid.

Measures, in this process (``taskset -c 0,1`` to hold it to 2 cores):

* **calibration**: experiment 11's table of the shipped rows and its fits, once per process
  (cold; every later plan reuses it);
* **plan**: :func:`lab.plan.plan_calc.calc_plan` — a model × GPU × budget × engine × workload's
  whole configuration space enumerated, predicted, banded and decided — median and max over
  ``--repeat`` runs of each case in :data:`CASES` (target < 1 s);
* **page update**: the page's experiment recomputing after a target changes (the calculation
  the page waits on), median over the same repeats;
* **validate**: ``calc plan --validate`` (the regret study at every band quantile);
* **grid**: the default ``plan`` grid written to Zarr with the threaded scheduler (target < 60 s).

Usage: ``python benchmarks/bench_plan.py [--repeat 5] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

CASES = (
    {"model": "llama-3.1-70b", "gpu": "h200", "budget": 8, "engine": "vllm"},
    {"model": "deepseek-v3", "gpu": "b200", "budget": 32, "engine": "trtllm"},
    {"model": "qwen3-235b-a22b", "gpu": "h200", "budget": 64, "engine": "sglang"},
)
"""Plans timed: a dense model on one node, and two mixtures of experts on larger budgets (the
largest configuration spaces)."""


def _timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    start = time.perf_counter()
    from lab.plan.plan_calc import calc_plan
    from lab.plan.plan_calibration import shipped_calibration
    from lab.plan.plan_space import PlanSpace, enumerate_rows

    shipped_calibration()
    calc_plan()
    cold = time.perf_counter() - start
    result = {"cores": len(os.sched_getaffinity(0)), "calibration_and_first_plan_s": round(cold, 3),
              "plans": []}
    for case in CASES:
        times = _timed(lambda case=case: calc_plan(**case), args.repeat)
        configurations = len(enumerate_rows(PlanSpace(**case)))
        result["plans"].append({**case, "configurations": configurations,
                                "median_s": round(statistics.median(times), 3),
                                "max_s": round(max(times), 3)})
        print(f"plan {case}: {configurations:,} configurations, median "
              f"{statistics.median(times):.3f} s, max {max(times):.3f} s")

    from lab.plan.plan_experiment import PlanDeployment

    experiment = PlanDeployment()
    targets = [20.0, 30.0, 40.0, 50.0, 60.0]

    def update():
        experiment.tokens_per_s_user = targets[0]
        targets.append(targets.pop(0))

    times = _timed(update, args.repeat)
    result["page_update_median_s"] = round(statistics.median(times), 3)
    print(f"page update: median {statistics.median(times):.3f} s")

    from lab.plan.plan_decide import validate

    start = time.perf_counter()
    validate(shipped_calibration().table)
    result["validate_s"] = round(time.perf_counter() - start, 3)
    print(f"validate: {result['validate_s']:.3f} s")

    from sweeps.grid_files import preset
    from sweeps.grid_kinds import grid_kind
    from sweeps.runner import Runner
    from sweeps.store import write_experiment

    grid = preset("default")
    spec = grid.resolve("plan")
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        write_experiment(grid_kind("plan"), spec, grid.name, Path(folder) / "plan.zarr",
                         Runner(None, "threads"))
        result["grid_s"] = round(time.perf_counter() - start, 3)
    cells = 1
    for values in spec.axes.values():
        cells *= len(values)
    result["grid_cells"] = cells
    print(f"default plan grid: {cells:,} cells in {result['grid_s']:.3f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
