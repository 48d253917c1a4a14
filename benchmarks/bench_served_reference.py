"""A learned reference for experiment 11 (a benchmark only, never the lab's model): gradient-
boosted trees on the listed inputs, scored with the lab's own out-of-sample splits.

The lab's prediction of a served row is its floor plus named terms with at most four fitted
coefficients per metric and engine × GPU × mode (docs/model.md §11). How much of the measured
TPOT and TTFT could *any* model of the listed columns predict? This script fits scikit-learn's
``HistGradientBoostingRegressor`` on the columns the CSV lists — engine, GPU, mode, model,
precision, isl, osl, concurrency, tp, attention DP, ep, decode batch and workers, prefill tp,
attention DP and workers (no floor, no term) — to log TPOT and log TTFT, over the rows the lab
models, with the lab's splits:

- *leave the workload out* (the stored predictions' split): a row is predicted by a tree
  trained on every modelled row except those of its own engine × GPU × mode with its own
  (isl, osl) — rows of other groups with that workload stay in training, as the tree may use
  them;
- *hold the input length out* (stricter): the same with its own ``isl``.

It prints and writes (``--json``, default ``benchmarks/results/served-reference.json``) median
and p90 |predicted − measured| / measured, overall, per mode and per engine × GPU × mode, beside
the lab's (``lab.served.served_calc.served_table``). scikit-learn is the ``bench`` extra
(``pip install -e .[bench]``), never a runtime dependency. About 5 minutes on one core
(404 fits).

Usage::

    python benchmarks/bench_served_reference.py [--json FILE] [--max-iter 300]
    python benchmarks/bench_served_reference.py --rescore benchmarks/results/FILE.json \
        --json benchmarks/results/FILE.json     # the lab rescored beside the stored trees
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

# one OpenMP thread per fit: on a shared two-core machine scikit-learn's threads spin against
# each other (27 s of CPU per fit measured under load, 0.4 s with one thread)
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.served.gap import error_summary
from lab.served.served_calc import served_table

CATEGORIES = ("engine", "gpu", "mode", "model", "precision")
"""Listed text columns (as categories)."""
NUMBERS = ("isl", "osl", "concurrency", "tp", "attention_dp", "moe_ep", "decode_batch",
           "decode_workers", "prefill_tp", "prefill_attention_dp", "prefill_workers")
"""Listed whole-number columns (log2 scale)."""
METRICS = ("tpot", "ttft")


def features(table) -> np.ndarray:
    """One row per served row: category codes, then log2 of the numbers."""
    columns = []
    for name in CATEGORIES:
        values = np.asarray(table[name].values).astype(str)
        codes = {v: i for i, v in enumerate(sorted(set(values)))}
        columns.append(np.array([codes[v] for v in values], dtype=float))
    for name in NUMBERS:
        columns.append(np.log2(np.maximum(np.asarray(table[name].values, dtype=float), 1.0)))
    return np.column_stack(columns)


def held_out_predictions(x, y, groups, keys, usable, max_iter: int) -> np.ndarray:
    """Each usable row predicted by a tree trained on every usable row except its group's
    rows with its key (workload or input length)."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    predicted = np.full(len(y), np.nan)
    categorical = np.array([True] * len(CATEGORIES) + [False] * len(NUMBERS))
    for group in np.unique(groups[usable]):
        in_group = usable & (groups == group)
        for key in np.unique(keys[in_group]):
            test = in_group & (keys == key)
            train = usable & ~test
            tree = HistGradientBoostingRegressor(max_iter=max_iter, learning_rate=0.1,
                                                 categorical_features=categorical,
                                                 random_state=0)
            tree.fit(x[train], y[train])
            predicted[test] = tree.predict(x[test])
    return predicted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default="benchmarks/results/served-reference.json")
    parser.add_argument("--max-iter", type=int, default=300)
    parser.add_argument("--rescore", default=None, help="a results JSON of this script: its "
                        "stored tree figures beside the current lab's (no tree is fitted)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    table = served_table()
    usable = np.asarray(table["modelled"].values, dtype=bool)
    groups = np.asarray(table["group"].values).astype(str)
    mode = np.asarray(table["mode"].values).astype(str)
    splits = {"workload": np.asarray(table["workload"].values).astype(str),
              "isl": np.asarray(table["isl"].values).astype(str)}
    stored = json.loads(Path(args.rescore).read_text(encoding="utf-8")) if args.rescore else None
    x = None if stored else features(table)
    errors = {}
    for metric in METRICS:
        measured = np.asarray(table[f"{metric}_measured_ms"].values, dtype=float)
        for split, keys in splits.items():
            if stored:
                continue
            log_predicted = held_out_predictions(x, np.log(measured), groups, keys, usable,
                                                 args.max_iter)
            errors[f"tree_{metric}_{split}"] = np.abs(np.exp(log_predicted) - measured) / measured
        errors[f"lab_{metric}_workload"] = np.asarray(table[f"{metric}_error"].values)
        errors[f"lab_{metric}_isl"] = np.asarray(table[f"{metric}_error_isl_out"].values)
    masks = {"all": usable, "agg": usable & (mode == "agg"), "disagg": usable & (mode == "disagg")}
    masks |= {g: usable & (groups == g) for g in sorted(set(groups[usable]))}
    result = {"seconds": None, "splits": list(splits), "subsets": {
        name: {k: error_summary(v[mask]) for k, v in errors.items()} for name, mask in masks.items()}}
    result["seconds"] = round(time.perf_counter() - started, 1)
    if stored:  # the stored trees' figures, the lab's as it is now
        result["seconds"], result["lab_rescored_seconds"] = (stored["seconds"],
                                                             result["seconds"])
        for name, sub in result["subsets"].items():
            sub.update({k: v for k, v in stored["subsets"][name].items()
                        if k.startswith("tree_")})
            result["subsets"][name] = {k: sub[k] for k in stored["subsets"][name]}
    pct = lambda s: f"{s['median'] * 100:5.1f} / {s['p90'] * 100:5.1f}"  # noqa: E731
    print("subset | rows | TPOT lab | TPOT tree | TTFT lab | TTFT tree  (median / p90 %, "
          "workload left out; then input length held out)")
    for name, sub in result["subsets"].items():
        for split in splits:
            print(f"{name} [{split}] | {sub[f'lab_tpot_{split}']['rows']} | "
                  f"{pct(sub[f'lab_tpot_{split}'])} | {pct(sub[f'tree_tpot_{split}'])} | "
                  f"{pct(sub[f'lab_ttft_{split}'])} | {pct(sub[f'tree_ttft_{split}'])}")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"{result['seconds']} s; written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
