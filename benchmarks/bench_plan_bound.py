"""What any planner can reach in experiment 12's regret study (docs/model.md §12): bounds from
the measurements themselves, beside the product's planner.

The study (``calc plan --validate``): per (checkpoint, GPU, engine, mode, isl/osl) group of
≥ 3 measured configurations, a TPOT target at the group's 25th / 50th / 75th measured
percentile (612 cases); regret = 1 − measured tokens/s per GPU of the pick / the best measured
one meeting the target (1 for a miss or no pick). Three measurements:

* **repeats** — rows that share every column the lab models (model, precision, engine, GPU,
  mode, layout, workers, concurrency, workload) but hold distinct runs (a distinct (TTFT, TPOT);
  rows with identical TTFT and TPOT are one run exported twice, issue 41): the spread no method
  on those columns can explain.
* **column oracle** (exact, on the real cases) — a planner that knows every row's measured TPOT
  and throughput, except that it cannot tell apart rows sharing every modelled column (it sees
  the set of their runs and gets one of them at random). It keeps the sets whose share of runs
  meeting the target is ≥ α and picks the most expected tokens delivered. Any planner whose
  information is a function of the modelled columns knows at most this much, so its trade-off
  is an upper bound on what such a planner can reach on these cases (for decisions of this
  form; the α sweep spans them from "any chance" to "certain").
* **noise oracle** (simulation, illustrative) — a planner that knows each configuration's
  expected TPOT, facing measurements that scatter about it by ε independently per
  configuration: ε drawn from the repeats' deviations, or Gaussian with standard deviation σ
  (log TPOT). It keeps configurations whose chance of meeting is ≥ q and picks the most
  expected tokens. This says how accurate a prediction must be for the targets (median
  regret ≤ 10 % and misses ≤ 10 %); independent scatter is pessimistic where the real scatter
  is shared by a whole sweep (the file's repeats mostly are: one source runs 10–20 % slower at
  every concurrency), which moves the target with it.

Usage: ``python benchmarks/bench_plan_bound.py [--draws 20] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ALPHAS = (0.01, 0.5, 0.75, 0.9, 1.0)
QUANTILES = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
SIGMAS = (0.03, 0.05, 0.1, 0.15, 0.2, 0.26)


def _cases(table):
    """The regret study's groups (:func:`lab.plan.plan_decide.study_groups`) and the measured
    figures of every row (ms, output tokens/s per GPU, GPUs)."""
    from lab.plan.plan_calibration import CONFIG_KEY, config_keys
    from lab.plan.plan_decide import VALIDATION_PERCENTILES, gpus_of, study_groups, throughput_of

    s = lambda n: np.asarray(table[n].values).astype(str)  # noqa: E731
    f = lambda n: np.asarray(table[n].values, dtype=float)  # noqa: E731
    _, usable, groups = study_groups(table)
    config = np.char.add(config_keys({k: table[k].values for k in CONFIG_KEY}).astype(str),
                         np.char.add("|", s("workload")))
    measured = throughput_of(table, f("ttft_measured_ms"), f("tpot_measured_ms"))
    return {"groups": list(groups.values()), "config": config, "tpot": f("tpot_measured_ms"),
            "ttft": f("ttft_measured_ms"), "tokens": measured, "gpus": gpus_of(table),
            "concurrency": f("concurrency"), "osl": f("osl"), "usable": usable,
            "percentiles": VALIDATION_PERCENTILES}


def repeats(c) -> dict:
    """The spread of distinct runs of identical configurations (every modelled column)."""
    seen: dict = {}
    for i in np.flatnonzero(c["usable"]):
        seen.setdefault(c["config"][i], {})[(c["ttft"][i], c["tpot"][i])] = c["tpot"][i]
    deviations, pairs = [], []
    for runs in seen.values():
        if len(runs) < 2:
            continue
        v = np.log(np.array(list(runs.values())))
        n = v.size
        deviations += list((v - v.mean()) * np.sqrt(n / (n - 1)))  # one run about the mean
        pairs += [abs(a - b) for k, a in enumerate(v) for b in v[k + 1:]]
    deviations, pairs = np.array(deviations), np.array(pairs)
    return {"configurations": len(seen),
            "configurations_with_distinct_runs": int(sum(len(r) > 1 for r in seen.values())),
            "runs_in_those": int(deviations.size),
            "single_run_sd_log_tpot": float(deviations.std()),
            "median_abs_log_ratio_of_two_runs": float(np.median(pairs)),
            "p90_abs_log_ratio_of_two_runs": float(np.quantile(pairs, 0.9)),
            "share_of_run_pairs_beyond_10_percent": float(np.mean(pairs > np.log(1.1))),
            "_deviations": deviations}


def column_oracle(c) -> dict:
    """The exact bound on the real cases: identical-column rows are one choice with a random
    outcome among their runs."""
    from lab.plan.plan_decide import study_target

    out = {f"alpha {a:g}": {"regret": [], "miss": []} for a in ALPHAS}
    straddle = 0
    for index in c["groups"]:
        sets: dict = {}
        for i in index.tolist():
            sets.setdefault(c["config"][i], []).append(i)
        members = [np.array(v) for v in sets.values()]
        tpot = c["tpot"][index]
        for p in c["percentiles"]:
            target = study_target(tpot, p)
            best = c["tokens"][index][tpot <= target].max()
            share = np.array([np.mean(c["tpot"][m] <= target) for m in members])
            tokens = np.array([np.mean(c["tokens"][m] * (c["tpot"][m] <= target))
                               for m in members])
            straddle += bool(np.any((share > 0) & (share < 1)))
            for a in ALPHAS:
                keep = share >= a
                r = out[f"alpha {a:g}"]
                if not keep.any():
                    r["regret"].append(1.0)
                    r["miss"].append(0.0)
                    continue
                m = members[int(np.argmax(np.where(keep, tokens, -np.inf)))]
                regrets = np.where(c["tpot"][m] > target, 1.0, 1 - c["tokens"][m] / best)
                r["regret"].append(float(regrets.mean()))
                r["miss"].append(float(np.mean(c["tpot"][m] > target)))
    result = {name: _summary(v["regret"], v["miss"]) for name, v in out.items()}
    result["cases_where_identical_columns_straddle_the_target"] = straddle
    return result


def _summary(regret, miss) -> dict:
    regret = np.asarray(regret, dtype=float)
    return {"cases": int(regret.size), "median_regret": float(np.median(regret)),
            "mean_regret": float(regret.mean()), "misses": float(np.mean(miss)),
            "share_regret_above_10_percent": float(np.mean(regret > 0.1))}


def _tokens(c, index, tpot):
    """Output tokens/s per GPU of rows ``index`` at their measured TTFT and ``tpot`` (ms)."""
    from lab.plan.plan_space import throughput_per_gpu

    return throughput_per_gpu(c["concurrency"][index], c["osl"][index], c["ttft"][index], tpot,
                              c["gpus"][index])


def noise_oracle(c, noise, draws: int, rng) -> dict:
    """The simulated bound: expected TPOT known (taken as the measured one), measurement =
    expected · exp(ε), ε independent per configuration from ``noise`` (a sorted sample)."""
    from lab.plan.plan_decide import study_target

    out = {q: ([], []) for q in QUANTILES}
    for _ in range(draws):
        for index in c["groups"]:
            mu = c["tpot"][index]
            tpot = mu * np.exp(rng.choice(noise, index.size))
            measured, expected = (_tokens(c, index, tpot), _tokens(c, index, mu))
            for p in c["percentiles"]:
                target = study_target(tpot, p)
                best = measured[tpot <= target].max()
                chance = np.searchsorted(noise, np.log(target / mu), side="right") / noise.size
                for q, (regret, miss) in out.items():
                    keep = chance >= q
                    if not keep.any():
                        regret.append(1.0)
                        miss.append(False)
                        continue
                    j = int(np.argmax(np.where(keep, expected * chance, -np.inf)))
                    missed = bool(tpot[j] > target)
                    regret.append(1.0 if missed else float(1 - measured[j] / best))
                    miss.append(missed)
    return {f"q {q:g}": _summary(r, m) for q, (r, m) in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    from lab.plan.plan_calibration import DEFAULT_QUANTILE, shipped_calibration
    from lab.plan.plan_decide import planner_name, previous_planner_name, validate

    start = time.perf_counter()
    table = shipped_calibration().table
    c = _cases(table)
    rep = repeats(c)
    deviations = np.sort(rep.pop("_deviations"))
    rng = np.random.default_rng(12)
    result = {
        "cases": sum(len(c["percentiles"]) for _ in c["groups"]),
        "repeats": rep,
        "column_oracle": column_oracle(c),
        "noise_oracle": {"repeat deviations, independent": noise_oracle(c, deviations,
                                                                         args.draws, rng)},
    }
    for sigma in SIGMAS:
        noise = np.sort(rng.standard_normal(4000) * sigma)
        result["noise_oracle"][f"gaussian sd {sigma:g}, independent"] = noise_oracle(
            c, noise, args.draws, rng)
    study = validate(table)
    result["planner"] = {
        "default": {"name": planner_name(DEFAULT_QUANTILE),
                    **study[planner_name(DEFAULT_QUANTILE)]["overall"]},
        "previous default": {"name": previous_planner_name(0.9),
                             **study[previous_planner_name(0.9)]["overall"]},
        "cross-validated q": study["cross-validated q"]["overall"],
    }
    result["draws"] = args.draws
    result["seconds"] = round(time.perf_counter() - start, 1)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
