"""What any predictor can reach in experiment 12's regret study on the planner's own
information (docs/model.md §12): the held-out workload's measurements are unseen, so every
predictor transfers what the group measured on its *other* workloads.

The study is ``calc plan --validate``'s (612 cases: per (checkpoint, GPU, engine, mode, isl/osl)
group of ≥ 3 measured configurations, a TPOT target at the group's 25th / 50th / 75th measured
percentile; regret = 1 − measured tokens/s per GPU of the pick / the best measured one meeting
the target, 1 for a miss or no pick). Each predictor below gives every configuration of a case
a TPOT and TTFT (ms) at the held-out workload; one decision family is applied to all of them —
keep the configurations whose predicted TPOT · exp(m) meets the target, pick the most
predicted tokens/s per GPU — and the margin ``m`` (log TPOT) is swept, so each predictor is
scored at its *best* margin whose misses are ≤ 10 %, chosen on the very cases it is scored on
(optimistic for every predictor alike). Predictors:

* ``lab`` — experiment 11's stored leave-one-workload-out predictions;
* ``lab, centred`` — the same times the configuration's own mean error on the group's other
  workloads (the planner's centre; NaN centre: the bare prediction);
* ``tree`` — scikit-learn's HistGradientBoosting on the listed columns, leave the workload out
  (``benchmarks/bench_served_reference.py``'s split; the ``bench`` extra), bare and centred on
  its own error on the other workloads;
* ``transfer`` — the configuration's own measurement on the nearest other workload of the
  group (log-distance in isl and osl; ties averaged), scaled by its floor's ratio between the
  workloads and by the median such ratio error of the *other* groups for that pair of
  workloads (no measurement at the held-out workload of its own group is used); configurations
  never measured elsewhere take the lab's prediction;
* ``… + oracle offset`` — a predictor told the one number a group shares at the held-out
  workload: its predictions multiplied by exp(δ*), δ* the median of log(measured /
  predicted) over the case's configurations. What is left is the error *between* the
  configurations of a group. ``transfer + oracle offset`` is the bound asked for: a predictor
  that knows how the configurations rank on the group's other workloads (and the floors) and
  is told exactly where the held-out workload's scale sits still loses this much; the standard
  deviation of its log TPOT error between configurations is printed beside it.

Beside them, ``lab, centred × transfer`` and ``tree × lab, centred`` (geometric means of
two predictors), and the **margin oracle**: a planner that knows every measured TPOT exactly
but keeps a safety margin m (never a miss) — its regret at m bounds any predictor that needs
that margin to keep its misses ≤ 10 %, and the best configuration's own slack log(target /
TPOT) says why the study is harsh (the target sits at a measured configuration's TPOT).

With ``--planner`` the product's whole planner (bands, monotone chance, expected tokens:
:func:`lab.plan.plan_decide.validate`) is also run on the tree's predictions in place of the
lab's, at every band quantile.

Usage: ``python benchmarks/bench_plan_transfer.py [--tree FILE.npz] [--planner] [--json FILE]``
(``--tree``: cached tree predictions; without it they are computed, about 3 minutes on one core).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread per fit on a shared machine

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

MARGINS = tuple(np.round(np.arange(0.0, 0.81, 0.025), 3))
"""Margins m (log TPOT) the decision is swept over: keep predicted TPOT · exp(m) ≤ target."""
MISSES = 0.10
"""The misses a margin may allow (the study's target)."""


def tree_predictions(table, cache: str | None) -> dict[str, np.ndarray]:
    """The gradient-boosted tree's leave-the-workload-out TPOT and TTFT (ms) per row (NaN
    where not modelled), read from ``cache`` (an ``.npz`` by row id) when given."""
    ids = np.asarray(table["id"].values).astype(str)
    if cache and Path(cache).exists():
        data = np.load(cache)
        where = {k: i for i, k in enumerate(data["id"].tolist())}
        index = np.array([where.get(k, -1) for k in ids.tolist()])
        return {m: np.where(index >= 0, data[m][np.maximum(index, 0)], np.nan)
                for m in ("tpot", "ttft")}
    from bench_served_reference import features, held_out_predictions

    usable = np.asarray(table["modelled"].values, dtype=bool)
    groups = np.asarray(table["group"].values).astype(str)
    workloads = np.asarray(table["workload"].values).astype(str)
    x = features(table)
    out = {}
    for metric in ("tpot", "ttft"):
        y = np.log(np.asarray(table[f"{metric}_measured_ms"].values, dtype=float))
        out[metric] = np.exp(held_out_predictions(x, y, groups, workloads, usable, 300))
    if cache:
        np.savez(cache, id=ids, **out)
    return out


class Study:
    """The regret study's cases on one table, and the per-row facts every predictor needs."""

    def __init__(self, table) -> None:
        from lab.plan.plan_calibration import CONFIG_KEY, config_keys
        from lab.plan.plan_decide import (
            VALIDATION_PERCENTILES,
            gpus_of,
            study_groups,
            throughput_of,
        )

        s = lambda n: np.asarray(table[n].values).astype(str)  # noqa: E731
        f = lambda n: np.asarray(table[n].values, dtype=float)  # noqa: E731
        self.table = table
        _, self.usable, groups = study_groups(table)
        self.group = np.array(["|".join(k) for k in zip(s("model_path"), s("gpu"), s("engine"),
                                                          s("mode"), strict=True)])
        self.workload = s("workload")
        self.engine_mode = np.char.add(np.char.add(s("engine"), " × "), s("mode"))
        self.config = config_keys({k: table[k].values for k in CONFIG_KEY})
        self.isl, self.osl = f("isl"), f("osl")
        self.tpot, self.ttft = f("tpot_measured_ms"), f("ttft_measured_ms")
        self.floor = {"tpot": f("tpot_floor_ms"), "ttft": f("ttft_floor_ms")}
        self.measured_tokens = throughput_of(table, self.ttft, self.tpot)
        self.gpus, self.concurrency = gpus_of(table), np.maximum(f("concurrency"), 1.0)
        self.cases = [(self.group[index[0]], self.workload[index[0]], index)
                      for index in groups.values()]
        self.percentiles = VALIDATION_PERCENTILES
        # each (configuration, workload)'s geometric mean of its runs, per metric
        self._runs: dict = {}
        for i in np.flatnonzero(self.usable):
            self._runs.setdefault((self.config[i], self.workload[i]), []).append(i)

    def tokens(self, index: np.ndarray, ttft: np.ndarray, tpot: np.ndarray) -> np.ndarray:
        """Output tokens/s per GPU of rows ``index`` at ``ttft`` and ``tpot`` (ms)."""
        from lab.plan.plan_space import throughput_per_gpu

        return throughput_per_gpu(self.concurrency[index], self.osl[index], ttft, tpot,
                                  self.gpus[index])

    def transfer(self, fallback: dict[str, np.ndarray]) -> tuple[dict, np.ndarray]:
        """The ``transfer`` predictor (TPOT and TTFT, ms, per row) and which rows it covers
        (a measurement of the same configuration on another workload of the group)."""
        mean_log = {k: {m: float(np.mean(np.log(getattr(self, m)[v]))) for m in ("tpot", "ttft")}
                    for k, v in self._runs.items()}
        source: dict[int, list[str]] = {}
        by_config: dict = {}
        for (k, w) in self._runs:
            by_config.setdefault(k, []).append(w)
        parse = lambda w: np.log2(np.array(w.split("/"), dtype=float))  # noqa: E731
        for i in np.flatnonzero(self.usable):
            others = [w for w in by_config[self.config[i]] if w != self.workload[i]]
            if not others:
                continue
            here = parse(self.workload[i])
            distance = np.array([np.abs(parse(w) - here).sum() for w in others])
            source[i] = [w for w, d in zip(others, distance, strict=True) if d == distance.min()]
        raw = {m: np.full(self.usable.shape, np.nan) for m in ("tpot", "ttft")}
        for i, ws in source.items():
            for m in ("tpot", "ttft"):
                logs = []
                for w in ws:
                    j = self._runs[(self.config[i], w)][0]
                    logs.append(mean_log[(self.config[i], w)][m]
                                + np.log(self.floor[m][i] / self.floor[m][j]))
                raw[m][i] = np.mean(logs)
        covered = np.isfinite(raw["tpot"]) & np.isfinite(raw["ttft"])
        # the shift a pair of workloads adds beyond the floors' ratio, read on other groups
        out = {m: np.array(fallback[m], dtype=float) for m in ("tpot", "ttft")}
        residual = {m: np.log(getattr(self, m)) - raw[m] for m in ("tpot", "ttft")}
        pair = np.array([f"{'+'.join(source.get(i, []))}>{self.workload[i]}"
                         for i in range(self.usable.size)])
        for g, _, index in self.cases:
            for m in ("tpot", "ttft"):
                for p in dict.fromkeys(pair[index].tolist()):
                    rows = index[covered[index] & (pair[index] == p)]
                    if not rows.size:
                        continue
                    elsewhere = covered & (pair == p) & (self.group != g)
                    shift = float(np.median(residual[m][elsewhere])) if elsewhere.any() else 0.0
                    out[m][rows] = np.exp(raw[m][rows] + shift)
        return out, covered

    def regret(self, tpot: np.ndarray, ttft: np.ndarray, margin: float,
               oracle_offset: str = "", extra: np.ndarray | None = None) -> list[dict]:
        """The cases for one predictor (TPOT, TTFT in ms per row) at ``margin``: keep
        predicted TPOT · exp(margin + extra) ≤ target (``extra``: a row's added margin, log
        TPOT; inf: never kept), pick the most predicted tokens/s per GPU. ``oracle_offset``
        ``"median"``: each case's predictions are first shifted by the median log error of
        its own configurations (what the group shares at the held-out workload);
        ``"percentile"``: shifted so that their q-th percentile is the target (the target's
        exact rank among the predictions)."""
        from lab.plan.plan_decide import study_target

        cases = []
        extra = np.zeros(self.usable.shape) if extra is None else extra
        for _, _, index in self.cases:
            p_tpot, p_ttft = tpot[index], ttft[index]
            if oracle_offset:
                p_ttft = p_ttft * np.exp(np.median(np.log(self.ttft[index] / p_ttft)))
            if oracle_offset == "median":
                p_tpot = p_tpot * np.exp(np.median(np.log(self.tpot[index] / p_tpot)))
            measured_tpot = self.tpot[index]
            measured = self.measured_tokens[index]
            for q in self.percentiles:
                target = study_target(measured_tpot, q)
                best = measured[measured_tpot <= target].max()
                at = p_tpot
                if oracle_offset == "percentile":
                    at = p_tpot * target / float(np.percentile(p_tpot, q))
                predicted = self.tokens(index, p_ttft, at)
                keep = at * np.exp(margin + extra[index]) <= target
                key = self.engine_mode[index[0]]
                if not keep.any():
                    cases.append({"engine_mode": key, "regret": 1.0, "miss": False,
                                  "picked": False})
                    continue
                j = int(np.argmax(np.where(keep, predicted, -np.inf)))
                miss = bool(measured_tpot[j] > target)
                cases.append({"engine_mode": key, "miss": miss, "picked": True,
                              "regret": 1.0 if miss else float(1 - measured[j] / best)})
        return cases

    def spread(self, tpot: np.ndarray) -> dict:
        """Log TPOT error of a predictor: its standard deviation over all case rows, and
        between the configurations of a case (each case's median removed)."""
        total, within = [], []
        for _, _, index in self.cases:
            e = np.log(self.tpot[index] / tpot[index])
            total += e.tolist()
            within += (e - np.median(e)).tolist()
        return {"sd_log_tpot_error": float(np.std(total)),
                "sd_log_tpot_error_between_configurations": float(np.std(within)),
                "median_abs_error_between_configurations": float(
                    np.median(np.abs(np.expm1(within))))}


def margin_oracle(study: Study, margins=(0.0, 0.025, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2,
                                         0.25, 0.3)) -> dict:
    """A planner that knows every configuration's measured TPOT and throughput exactly but
    keeps a safety margin ``m``: it picks the best measured throughput among the configurations
    whose measured TPOT · exp(m) meets the target (never a miss). Its regret at ``m`` bounds
    every predictor that needs that margin to keep its misses down; the best configuration's
    own slack log(target / TPOT) is summarised beside it."""
    from lab.plan.plan_decide import study_target

    out, slack = {}, []
    regrets: dict = {m: [] for m in margins}
    for _, _, index in study.cases:
        tpot, tokens = study.tpot[index], study.measured_tokens[index]
        for q in study.percentiles:
            target = study_target(tpot, q)
            ok = tpot <= target
            j = np.flatnonzero(ok)[int(np.argmax(tokens[ok]))]
            slack.append(float(np.log(target / tpot[j])))
            for m in margins:
                keep = tpot * np.exp(m) <= target
                regrets[m].append(1 - tokens[keep].max() / tokens[j] if keep.any() else 1.0)
    for m, r in regrets.items():
        out[f"margin {m:g}"] = {"median_regret": float(np.median(r)),
                                "mean_regret": float(np.mean(r))}
    slack = np.array(slack)
    out["slack_of_the_best"] = {"median": float(np.median(slack)),
                                **{f"share_below_{x:g}": float(np.mean(slack < x))
                                   for x in (0.05, 0.1, 0.2)}}
    return out


def summary(cases: list[dict]) -> dict:
    """Median regret, misses and picks of a list of cases."""
    return {"cases": len(cases), "median_regret": float(np.median([c["regret"] for c in cases])),
            "misses": float(np.mean([c["miss"] for c in cases])),
            "no_pick": int(sum(not c["picked"] for c in cases))}


EXTRA = (0.0, 0.2, 0.4, np.inf)
"""Added margins (log TPOT) the sweep tries for configurations never measured on another
workload of the group (inf: never kept)."""


def sweep(study: Study, tpot, ttft, oracle_offset: str = "",
          covered: np.ndarray | None = None) -> dict:
    """A predictor over every margin (and, given ``covered``, every added margin of
    :data:`EXTRA` for the rows it does not cover): its best median regret at misses ≤
    :data:`MISSES`, the margins that give it, and their figures per engine × mode."""
    best = None
    curve = {}
    extras = EXTRA if covered is not None else (0.0,)
    for x in extras:
        extra = None if covered is None else np.where(covered, 0.0, x)
        for m in MARGINS:
            cases = study.regret(tpot, ttft, float(m), oracle_offset, extra)
            s = summary(cases)
            curve[f"{m:g}" if covered is None else f"{m:g} + {x:g} unmeasured"] = s
            if s["misses"] <= MISSES and (best is None
                                          or s["median_regret"] < best[1]["median_regret"]):
                best = ((float(m), float(x)), s, cases)
    out = {"curve": curve, **study.spread(tpot)}
    if best is not None:
        per: dict = {}
        for c in best[2]:
            per.setdefault(c["engine_mode"], []).append(c)
        out["best_at_misses_le_10_percent"] = {
            "margin": best[0][0],
            "added_margin_unmeasured": (best[0][1] if np.isfinite(best[0][1]) else "never kept")
            if covered is not None else 0.0, **best[1],
            "per_engine_mode": {k: summary(v) for k, v in sorted(per.items())}}
    return out


def centred(study: Study, table, predicted: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``predicted`` times each configuration's mean error exp(log(measured / predicted)) on
    the group's *other* workloads (unchanged where it was measured on none)."""
    out = {}
    for m in ("tpot", "ttft"):
        error = np.log(getattr(study, m) / predicted[m])
        value = np.array(predicted[m], dtype=float)
        by_config: dict = {}
        for (k, w), rows in study._runs.items():
            by_config.setdefault(k, []).append((w, rows))
        for _, w, index in study.cases:
            for i in index.tolist():
                rows = [j for ww, r in by_config[study.config[i]] if ww != w for j in r]
                e = error[rows] if rows else np.empty(0)
                e = e[np.isfinite(e)]
                if e.size:
                    value[i] = predicted[m][i] * np.exp(e.mean())
        out[m] = value
    return out


def error_consistency(study: Study, predicted: np.ndarray) -> dict:
    """How far a configuration's own TPOT error carries over between two of its workloads:
    for every pair of workloads a configuration was measured on (both in the study's cases),
    its error log(measured / predicted) less its case's median at each, their correlation and
    the standard deviation of their difference, by the distance between the two workloads
    (:data:`lab.plan.plan_decide.DISTANCE_BUCKETS`, octaves of isl plus osl)."""
    from lab.plan.plan_decide import BUCKET_ORDER, distance_bucket, workload_octaves

    error = np.log(study.tpot / predicted)
    mean = {k: float(np.mean(error[v])) for k, v in study._runs.items()}
    median = {(g, w): float(np.median([mean[(study.config[i], w)] for i in index]))
              for g, w, index in study.cases}
    by_config: dict = {}
    for (k, w), rows in study._runs.items():
        by_config.setdefault(k, {})[w] = (mean[(k, w)], study.group[rows[0]])
    pairs: dict = {}
    for seen in by_config.values():
        ws = sorted(seen)
        for a, wa in enumerate(ws):
            for wb in ws[a + 1:]:
                (ea, g), (eb, _) = seen[wa], seen[wb]
                if (g, wa) in median and (g, wb) in median:
                    bucket = distance_bucket(workload_octaves(wa, wb))
                    for key in (bucket, "all"):
                        pairs.setdefault(key, []).append((ea - median[(g, wa)],
                                                          eb - median[(g, wb)]))
    out = {}
    for key in (*BUCKET_ORDER, "all"):
        if key not in pairs:
            continue
        p = np.array(pairs[key])
        out[key] = {"pairs": len(p), "correlation": float(np.corrcoef(p.T)[0, 1]),
                    "sd_of_difference": float(np.std(p[:, 0] - p[:, 1]))}
    return out


def mix(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Two predictors' geometric mean (ms), TPOT and TTFT."""
    return {m: np.sqrt(a[m] * b[m]) for m in ("tpot", "ttft")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", default=None, help="cache of the tree's predictions (.npz)")
    parser.add_argument("--planner", action="store_true",
                        help="also run the product's planner on the tree's predictions")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    from lab.plan.plan_calibration import shipped_calibration

    started = time.perf_counter()
    table = shipped_calibration().table
    study = Study(table)
    f = lambda n: np.asarray(table[n].values, dtype=float)  # noqa: E731
    lab = {"tpot": f("tpot_predicted_ms"), "ttft": f("ttft_predicted_ms")}
    tree = tree_predictions(table, args.tree)
    predictors = {"lab": lab, "lab, centred": centred(study, table, lab)}
    if np.isfinite(tree["tpot"][study.usable]).all():
        predictors["tree"] = tree
        predictors["tree, centred"] = centred(study, table, tree)
    transfer, covered = study.transfer(predictors["lab, centred"])
    predictors["transfer"] = transfer
    predictors["lab, centred × transfer"] = mix(predictors["lab, centred"], transfer)
    if "tree" in predictors:
        predictors["tree × lab, centred"] = mix(tree, predictors["lab, centred"])
    case_rows = np.concatenate([index for _, _, index in study.cases])
    result = {"cases": sum(len(study.percentiles) for _ in study.cases),
              "case_rows": int(case_rows.size),
              "case_rows_measured_on_another_workload": int(covered[case_rows].sum()),
              "margins": list(map(float, MARGINS)),
              "margin_oracle": margin_oracle(study),
              "error_consistency_between_workloads": error_consistency(study, lab["tpot"]),
              "predictors": {}}
    for name, p in predictors.items():
        result["predictors"][name] = sweep(study, p["tpot"], p["ttft"], covered=covered)
        result["predictors"][f"{name} + oracle offset"] = sweep(
            study, p["tpot"], p["ttft"], "median", covered)
    result["predictors"]["transfer + oracle percentile"] = sweep(
        study, transfer["tpot"], transfer["ttft"], "percentile", covered)
    only = [(g, w, index[covered[index]]) for g, w, index in study.cases]
    full = study.cases
    study.cases = [c for c in only if c[2].size >= 3]
    result["covered configurations only"] = {"cases": 3 * len(study.cases)} | {
        f"{name} + oracle offset": sweep(study, predictors[name]["tpot"],
                                         predictors[name]["ttft"], "median")
        for name in predictors}
    study.cases = full
    if args.planner and "tree" in predictors:
        from lab.plan.plan_decide import planner_name, validate

        swapped = table.copy()
        for m in ("tpot", "ttft"):
            swapped[f"{m}_predicted_ms"] = ("row", tree[m])
        study_tree = validate(swapped)
        result["product planner on the tree"] = {
            name: r["overall"] for name, r in study_tree.items()
            if name.startswith("q ") or name.startswith("cross")}
        result["product planner on the lab (the same table)"] = {
            name: r["overall"] for name, r in validate(table).items()
            if name.startswith("q ") or name.startswith("cross")}
        result["product planner on the tree, per engine × mode (default q)"] = \
            study_tree[planner_name(0.875)]["per_engine_mode"]
    result["seconds"] = round(time.perf_counter() - started, 1)
    covered_only = result["covered configurations only"]
    lines = [(name, r) for name, r in result["predictors"].items()] + [
        (f"[{covered_only['cases']} cases, measured-elsewhere configurations only] {name}", r)
        for name, r in covered_only.items() if name != "cases"]
    print("margin oracle (measured TPOT known, safety margin m): " + "; ".join(
        f"{k} {v['median_regret'] * 100:.1f} %" for k, v in result["margin_oracle"].items()
        if k.startswith("margin")))
    print("a configuration's own TPOT error between two of its workloads (case median "
          "removed), by their distance: " + "; ".join(
              f"{k}: r {v['correlation']:.2f}, sd of the difference {v['sd_of_difference']:.3f} "
              f"({v['pairs']} pairs)"
              for k, v in result["error_consistency_between_workloads"].items()))
    for name, r in lines:
        b = r.get("best_at_misses_le_10_percent")
        line = (f"{name}: sd log TPOT error {r['sd_log_tpot_error']:.3f} (between configurations "
                f"{r['sd_log_tpot_error_between_configurations']:.3f}); ")
        line += ("no margin keeps misses ≤ 10 %" if b is None else
                 f"best at misses ≤ 10 %: margin {b['margin']:g} "
                 f"(unmeasured: +{b['added_margin_unmeasured']}), regret "
                 f"{b['median_regret'] * 100:.1f} %, misses {b['misses'] * 100:.1f} %, "
                 f"no pick {b['no_pick']}")
        print(line)
    text = json.dumps(result, indent=1)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    print(f"{result['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
