"""Experiment 12's decision: the configuration to run under latency targets, the Pareto
frontier, and the regret study that says whether the decision holds (docs/model.md §12).

The pick is the most predicted output tokens/s per GPU among the valid configurations that fit
in memory and whose *conservative* latency — the band's upper edge, the ``q``-th quantile of
the group's out-of-sample errors — meets every target. :func:`validate` replays the decision
on the public rows, out of sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from lab.errors import LabInputError
from lab.limits import MAX_MS
from lab.plan.plan_calibration import Calibration
from lab.plan.plan_space import gpus_used, throughput_per_gpu

VALIDATION_PERCENTILES = (25, 50, 75)
"""The TPOT targets of the regret study: these percentiles of each group's measured TPOT."""
MIN_GROUP = 3
"""Fewest measured configurations of a (checkpoint, GPU, engine, mode, isl/osl) group."""
QUANTILES = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
"""Band quantiles the validation reports."""


def planner_name(quantile: float) -> str:
    """The regret study's name of the product's planner at ``quantile``: the band's edge
    keeps the configurations, the chance of meeting the target weighs their throughput."""
    return f"band q {quantile:g}, × chance"


@dataclass(frozen=True)
class Targets:
    """Latency targets (None: no target): TTFT ≤, TPOT ≤ (ms), tokens/s per user ≥."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    tokens_per_s_user: float | None = None

    def __post_init__(self) -> None:
        for name in ("ttft_ms", "tpot_ms", "tokens_per_s_user"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int | float) and 0 < value <= MAX_MS
                                          and np.isfinite(value)):
                raise LabInputError(f"The target {name} must be a number above 0 and at most "
                                    f"{MAX_MS:,}, not {value!r}.")

    def tpot_limit(self) -> float:
        """The TPOT the targets allow (ms; inf: none)."""
        limits = [np.inf]
        if self.tpot_ms is not None:
            limits.append(self.tpot_ms)
        if self.tokens_per_s_user is not None:
            limits.append(1e3 / self.tokens_per_s_user)
        return float(min(limits))

    def ttft_limit(self) -> float:
        return float(np.inf if self.ttft_ms is None else self.ttft_ms)


def meets(plan: xr.Dataset, targets: Targets, conservative: bool = True) -> np.ndarray:
    """Which configurations meet ``targets`` (at the band's upper edge when conservative)."""
    suffix = "_upper_ms" if conservative else "_ms"
    tpot = np.asarray(plan[f"tpot{suffix}"].values)
    ttft = np.asarray(plan[f"ttft{suffix}"].values)
    usable = np.asarray(plan["valid"].values) & np.asarray(plan["fits"].values)
    return usable & (tpot <= targets.tpot_limit()) & (ttft <= targets.ttft_limit())


def pick(plan: xr.Dataset, targets: Targets, conservative: bool = True,
         chance: np.ndarray | None = None) -> int | None:
    """Index of the configuration with the most predicted tokens/s per GPU — times its
    ``chance`` of meeting the targets when given — among those that meet them, a calibrated
    one when any calibrated one does (None: none does)."""
    ok = meets(plan, targets, conservative)
    if not ok.any():
        return None
    calibrated = ok & np.asarray(plan["calibrated"].values, dtype=bool)
    if calibrated.any():  # a floor is a lower bound, not a prediction to bet on
        ok = calibrated
    score = np.asarray(plan["tokens_per_s_gpu"].values)
    if chance is not None:  # the expected tokens: a pick likelier to hold weighs more
        score = score * np.where(np.isfinite(chance), chance, 1.0)
    return int(np.argmax(np.where(ok, score, -np.inf)))


def frontier(plan: xr.Dataset, mode: str) -> np.ndarray:
    """Indices of ``mode``'s Pareto frontier of tokens/s per GPU against tokens/s per user
    (valid configurations that fit), ordered by tokens/s per user."""
    usable = (np.asarray(plan["valid"].values) & np.asarray(plan["fits"].values)
              & (np.asarray(plan["mode"].values).astype(str) == mode))
    user = np.asarray(plan["tokens_per_s_user"].values)
    gpu = np.asarray(plan["tokens_per_s_gpu"].values)
    index = np.flatnonzero(usable & np.isfinite(user) & np.isfinite(gpu))
    if not index.size:
        return index
    order = index[np.lexsort((-gpu[index], -user[index]))]
    keep, best = [], -np.inf
    for i in order:  # from the fastest per user down: keep what raises tokens/s per GPU
        if gpu[i] > best:
            keep.append(i)
            best = gpu[i]
    return np.array(keep[::-1], dtype=np.int64)


# -- validation ------------------------------------------------------------------------------
def _regret_cases(table: xr.Dataset, tpot_pred: np.ndarray, tpot_bound: np.ndarray,
                  score: np.ndarray, keys: np.ndarray, usable: np.ndarray,
                  chance=None) -> list[dict]:
    """The study's cases for one planner: it keeps the configurations whose ``tpot_bound``
    meets the target and picks the highest ``score`` (times ``chance(index, target)``, the
    probability of meeting it, when given)."""
    measured_tpot = np.asarray(table["tpot_measured_ms"].values, dtype=float)
    measured_ttft = np.asarray(table["ttft_measured_ms"].values, dtype=float)
    measured = _throughput(table, measured_ttft, measured_tpot)
    cases = []
    for key in dict.fromkeys(keys[usable].tolist()):
        index = np.flatnonzero(usable & (keys == key))
        if index.size < MIN_GROUP:
            continue
        tpot = measured_tpot[index]
        for q in VALIDATION_PERCENTILES:
            target = float(np.percentile(tpot, q))
            best = measured[index][tpot <= target].max()
            chosen = tpot_bound[index] <= target
            if not chosen.any():
                cases.append({"key": key, "percentile": q, "picked": False, "miss": False,
                              "regret": 1.0})
                continue
            weight = score[index] if chance is None else score[index] * chance(index, target)
            j = int(np.argmax(np.where(chosen, weight, -np.inf)))
            miss = bool(tpot[j] > target)
            regret = 1.0 if miss else float(1 - measured[index][j] / best)
            cases.append({"key": key, "percentile": q, "picked": True, "miss": miss,
                          "regret": regret})
    return cases


def _throughput(table: xr.Dataset, ttft: np.ndarray, tpot: np.ndarray) -> np.ndarray:
    v = lambda n: np.asarray(table[n].values)  # noqa: E731
    gpus = gpus_used(v("mode").astype(str), v("tp"), v("attention_dp"), v("prefill_tp"),
                     v("prefill_attention_dp"), v("prefill_workers"), v("decode_workers"))
    return throughput_per_gpu(v("concurrency"), v("osl"), ttft, tpot, gpus)


def _summary(cases: list[dict]) -> dict:
    if not cases:
        return {"cases": 0, "median_regret": float("nan"), "misses": float("nan"),
                "no_pick": 0}
    return {"cases": len(cases),
            "median_regret": float(np.median([c["regret"] for c in cases])),
            "misses": float(np.mean([c["miss"] for c in cases])),
            "no_pick": int(sum(not c["picked"] for c in cases))}


def validate(table: xr.Dataset, quantiles=QUANTILES) -> dict:
    """The regret study on ``table`` (experiment 11's :func:`served_table`): per (checkpoint,
    GPU, engine, mode, isl/osl) group of ≥ :data:`MIN_GROUP` measured configurations, a TPOT
    target at each of :data:`VALIDATION_PERCENTILES` of its measured TPOT; the planner picks,
    out of sample, the most predicted tokens/s per GPU among the configurations whose TPOT at
    the band's upper edge meets the target. Predictions are experiment 11's stored
    leave-one-workload-out predictions; the band is read from the group's errors on its
    *other* workloads. Regret = 1 − measured tokens/s per GPU of the pick / the best measured
    one meeting the target (1 when the pick misses the target in measurement, or when nothing
    is picked). Returns per quantile and the floor-only planner: overall and per engine × mode.
    """
    s = lambda n: np.asarray(table[n].values).astype(str)  # noqa: E731
    f = lambda n: np.asarray(table[n].values, dtype=float)  # noqa: E731
    usable = (np.asarray(table["modelled"].values, dtype=bool)
              & np.isfinite(f("tpot_predicted_ms")) & np.isfinite(f("ttft_predicted_ms")))
    keys = np.array(["|".join(k) for k in zip(s("model_path"), s("gpu"), s("engine"), s("mode"),
                                                s("workload"), strict=True)])
    engine_mode = {k: " × ".join(k.split("|")[2:4]) for k in dict.fromkeys(keys[usable].tolist())}
    predicted = _throughput(table, f("ttft_predicted_ms"), f("tpot_predicted_ms"))
    planners = {"floor only": _regret_cases(
        table, f("tpot_floor_ms"), f("tpot_floor_ms"),
        _throughput(table, f("ttft_floor_ms"), f("tpot_floor_ms")), keys, usable)}
    planners["predicted, no band"] = _regret_cases(table, f("tpot_predicted_ms"),
                                                   f("tpot_predicted_ms"), predicted, keys, usable)
    base = Calibration(table)
    calibrations: dict[str, Calibration] = {}
    workloads = s("workload")
    samples: dict[int, np.ndarray] = {}
    for key in dict.fromkeys(keys[usable].tolist()):
        index = np.flatnonzero(usable & (keys == key))
        if index.size < MIN_GROUP:
            continue
        w = workloads[index[0]]
        if w not in calibrations:
            calibrations[w] = base.excluding(w)
        cal = calibrations[w]
        centres = cal.centre(base.keys[index], "tpot")
        for i, centre in zip(index.tolist(), centres.tolist(), strict=True):
            samples[i] = cal._sample(s("group")[i], s("model")[i], max(f("concurrency")[i], 1.0),
                                     "tpot", centre)
    tpot_predicted = f("tpot_predicted_ms")

    def chance(index: np.ndarray, target: float) -> np.ndarray:
        return np.array([np.mean(tpot_predicted[i] * np.exp(samples[i]) <= target)
                         if samples[i].size else float(tpot_predicted[i] <= target)
                         for i in index.tolist()])

    for q in quantiles:
        bound = np.full(usable.shape, np.nan)
        for i, sample in samples.items():
            bound[i] = tpot_predicted[i] * (np.exp(np.quantile(sample, q)) if sample.size
                                            else 1.0)
        planners[f"band q {q:g}"] = _regret_cases(table, tpot_predicted, bound, predicted, keys,
                                                  usable)
        planners[f"band q {q:g}, × chance"] = _regret_cases(
            table, tpot_predicted, bound, predicted, keys, usable, chance)
    out = {}
    for name, cases in planners.items():
        per = {}
        for c in cases:
            per.setdefault(engine_mode[c["key"]], []).append(c)
        out[name] = {"overall": _summary(cases),
                     "per_engine_mode": {k: _summary(v) for k, v in sorted(per.items())}}
    return out
