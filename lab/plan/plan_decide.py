"""Experiment 12's decision: the configuration to run under latency targets, the Pareto
frontier, and the regret study that says whether the decision holds (docs/model.md §12).

A configuration is kept when it meets every target at the band's upper edge and its chance of
meeting them — read from its out-of-sample errors, never higher than the same layout's at a
lower concurrency (:func:`monotone_chance`) — is at least the quantile ``q``; the pick is the
kept one with the most expected output tokens/s per GPU delivered (:func:`expected_tokens`).
:func:`validate` replays the decision on the public rows, out of sample, and chooses ``q`` by
cross-validation over folds of groups.
"""

from __future__ import annotations

import zlib
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
QUANTILES = (0.5, 0.6, 0.7, 0.8, 0.85, 0.875, 0.9, 0.95)
"""Band quantiles the validation reports."""


DISTANCE_BUCKETS = ((1.0, "within 1 octave"), (2.0, "1 to 2 octaves"), (3.0, "2 to 3 octaves"),
                    (np.inf, "over 3 octaves"))
"""How far a workload is from the nearest other workload its group measured (octaves: the sum
of |log2| of the isl and osl ratios), as the regret study reports it: the upper end of each
bucket and its name."""
NO_OTHER_WORKLOAD = "no other workload"
"""The bucket of a workload whose group measured no other."""
BUCKET_ORDER = (*(name for _, name in DISTANCE_BUCKETS), NO_OTHER_WORKLOAD)
"""The distance buckets in the order the study reports them."""


def workload_octaves(a: str, b: str) -> float:
    """Octaves between two ``isl/osl`` workloads: |log2(isl_a / isl_b)| + |log2(osl_a /
    osl_b)| (1024/1024 to 8192/1024: 3)."""
    isl_a, osl_a = (float(v) for v in a.split("/"))
    isl_b, osl_b = (float(v) for v in b.split("/"))
    return float(abs(np.log2(isl_a / isl_b)) + abs(np.log2(osl_a / osl_b)))


def nearest_octaves(workload: str, others) -> float:
    """Octaves from ``workload`` to the nearest of ``others`` other than itself (inf: none)."""
    return min((workload_octaves(workload, w) for w in others if w != workload),
               default=float("inf"))


def distance_bucket(octaves: float) -> str:
    """The :data:`DISTANCE_BUCKETS` name of a distance in octaves (:data:`NO_OTHER_WORKLOAD`:
    infinite)."""
    if not np.isfinite(octaves):
        return NO_OTHER_WORKLOAD
    return next(name for top, name in DISTANCE_BUCKETS if octaves <= top)


def planner_name(quantile: float) -> str:
    """The regret study's name of the product's planner at ``quantile``: configurations whose
    chance of meeting the target, non-increasing in concurrency within a layout, is at least
    ``quantile`` are kept; the most expected tokens delivered is picked."""
    return f"q {quantile:g}, monotone chance, expected tokens"


def previous_planner_name(quantile: float) -> str:
    """The regret study's name of the first planner (the band's edge keeps, the chance of
    meeting weighs the predicted throughput), kept for comparison."""
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
         chance: np.ndarray | None = None, score: np.ndarray | None = None,
         quantile: float | None = None) -> int | None:
    """Index of the configuration with the highest ``score`` (default: predicted tokens/s per
    GPU, times its ``chance`` of meeting the targets when given) among those that meet them —
    at the band's edge when conservative, and with a ``chance`` of at least ``quantile`` when
    both are given — a calibrated one when any calibrated one does (None: none does)."""
    ok = meets(plan, targets, conservative)
    calibrated = ok & np.asarray(plan["calibrated"].values, dtype=bool)
    if calibrated.any():  # a floor is a lower bound, not a prediction to bet on
        ok = calibrated
    if chance is not None and quantile is not None:
        ok &= ~(np.asarray(chance) < quantile)  # NaN (uncalibrated): the band's edge decides
    if not ok.any():
        return None
    tokens = np.asarray(plan["tokens_per_s_gpu"].values, dtype=float)
    if score is not None:  # the expected tokens delivered (0 where the target is missed)
        score = np.where(np.isfinite(score), score, tokens)
    else:
        score = tokens
        if chance is not None:  # the expected tokens: a pick likelier to hold weighs more
            score = score * np.where(np.isfinite(chance), chance, 1.0)
    return int(np.argmax(np.where(ok, score, -np.inf)))


def monotone_chance(chance: np.ndarray, layout: np.ndarray, concurrency: np.ndarray,
                    evidence: np.ndarray | None = None) -> np.ndarray:
    """Chances of meeting latency targets made non-increasing in concurrency within each worker
    ``layout`` (everything of a configuration but its concurrency): more clients on the same
    workers never make a step or a first token faster, so a configuration is no likelier to
    meet a target than the same layout at a lower concurrency. Only the chances marked
    ``evidence`` (default: all) cap those above them — a configuration measured on other
    workloads, not one read from its bucket's wide errors (NaN: no chance, left out)."""
    chance = np.asarray(chance, dtype=float)
    out = chance.copy()
    layout = np.asarray(layout)
    finite = np.isfinite(chance)
    caps = np.where(np.ones(chance.shape, dtype=bool) if evidence is None
                    else np.asarray(evidence, dtype=bool), chance, np.inf)
    for name in dict.fromkeys(layout[finite].tolist()):
        index = np.flatnonzero(finite & (layout == name))
        order = index[np.argsort(np.asarray(concurrency)[index], kind="stable")]
        out[order] = np.minimum(chance[order], np.minimum.accumulate(caps[order]))
    return out


def expected_tokens(errors: np.ndarray, tpot_ms: float, ttft_ms: float, tpot_limit: float,
                    concurrency: float, osl: float, gpus: float) -> tuple[float, float]:
    """A configuration's chance of meeting a TPOT limit and its expected output tokens/s per
    GPU delivered under it (0 where TPOT misses), over its out-of-sample TPOT ``errors``
    (log(measured / predicted)); ``ttft_ms`` is the TTFT the throughput is read at."""
    if not errors.size:
        errors = np.zeros(1)
    tpot = tpot_ms * np.exp(errors)
    met = tpot <= tpot_limit
    tokens = throughput_per_gpu(concurrency, osl, ttft_ms, tpot, gpus)
    return float(met.mean()), float(np.mean(np.where(met, tokens, 0.0)))


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
def study_groups(table: xr.Dataset) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """The regret study's groups on ``table`` (experiment 11's :func:`served_table`): each
    row's group key ``model_path|gpu|engine|mode|isl/osl``, which rows are usable (modelled,
    with an out-of-sample TPOT and TTFT prediction) and, per key of ≥ :data:`MIN_GROUP`
    usable rows, their indices (in the order the keys first occur)."""
    s = lambda n: np.asarray(table[n].values).astype(str)  # noqa: E731
    f = lambda n: np.asarray(table[n].values, dtype=float)  # noqa: E731
    usable = (np.asarray(table["modelled"].values, dtype=bool)
              & np.isfinite(f("tpot_predicted_ms")) & np.isfinite(f("ttft_predicted_ms")))
    keys = np.array(["|".join(k) for k in zip(s("model_path"), s("gpu"), s("engine"), s("mode"),
                                                s("workload"), strict=True)])
    groups = {}
    for key in dict.fromkeys(keys[usable].tolist()):
        index = np.flatnonzero(usable & (keys == key))
        if index.size >= MIN_GROUP:
            groups[key] = index
    return keys, usable, groups


def study_target(tpot_ms: np.ndarray, percentile: float) -> float:
    """A case's TPOT target (ms): the ``percentile`` of its group's measured TPOT."""
    return float(np.percentile(tpot_ms, percentile))


def _regret_cases(table: xr.Dataset, tpot_pred: np.ndarray, tpot_bound: np.ndarray,
                  score: np.ndarray, keys: np.ndarray, usable: np.ndarray,
                  chance=None, decide=None) -> list[dict]:
    """The study's cases for one planner: it keeps the configurations whose ``tpot_bound``
    meets the target and picks the highest ``score`` (times ``chance(index, target)``, the
    probability of meeting it, when given; or, when ``decide`` is given, those it keeps and
    their weights: ``decide(index, target) -> (keep, weight)``, within the bound too)."""
    measured_tpot = np.asarray(table["tpot_measured_ms"].values, dtype=float)
    measured_ttft = np.asarray(table["ttft_measured_ms"].values, dtype=float)
    measured = throughput_of(table, measured_ttft, measured_tpot)
    cases = []
    for key in dict.fromkeys(keys[usable].tolist()):
        index = np.flatnonzero(usable & (keys == key))
        if index.size < MIN_GROUP:
            continue
        tpot = measured_tpot[index]
        for q in VALIDATION_PERCENTILES:
            target = study_target(tpot, q)
            best = measured[index][tpot <= target].max()
            chosen = tpot_bound[index] <= target
            if decide is not None:
                keep, weight = decide(index, target)
                chosen &= keep
            if not chosen.any():
                cases.append({"key": key, "percentile": q, "picked": False, "miss": False,
                              "regret": 1.0})
                continue
            if decide is None:
                weight = (score[index] if chance is None
                          else score[index] * chance(index, target))
            j = int(np.argmax(np.where(chosen, weight, -np.inf)))
            miss = bool(tpot[j] > target)
            regret = 1.0 if miss else float(1 - measured[index][j] / best)
            cases.append({"key": key, "percentile": q, "picked": True, "miss": miss,
                          "regret": regret})
    return cases


def _distance_buckets(keys: np.ndarray, usable: np.ndarray) -> dict[str, str]:
    """Per study key (``model_path|gpu|engine|mode|isl/osl``), the :func:`distance_bucket` of
    its workload from the nearest other workload its group (the key without the workload)
    measured in a usable row."""
    measured: dict[str, set] = {}
    for key in dict.fromkeys(keys[usable].tolist()):
        group, workload = key.rsplit("|", 1)
        measured.setdefault(group, set()).add(workload)
    out = {}
    for key in dict.fromkeys(keys[usable].tolist()):
        group, workload = key.rsplit("|", 1)
        out[key] = distance_bucket(nearest_octaves(workload, measured[group]))
    return out


def gpus_of(table: xr.Dataset) -> np.ndarray:
    """GPUs each row of experiment 11's ``table`` deploys (:func:`gpus_used`; GPUs, float)."""
    v = lambda n: np.asarray(table[n].values)  # noqa: E731
    return gpus_used(v("mode").astype(str), v("tp"), v("attention_dp"), v("prefill_tp"),
                     v("prefill_attention_dp"), v("prefill_workers"),
                     v("decode_workers")).astype(float)


def throughput_of(table: xr.Dataset, ttft: np.ndarray, tpot: np.ndarray) -> np.ndarray:
    """Output tokens/s per GPU of each row of experiment 11's ``table`` at ``ttft`` and
    ``tpot`` (ms, one per row): :func:`throughput_per_gpu` on the row's concurrency, osl and
    :func:`gpus_of`."""
    v = lambda n: np.asarray(table[n].values)  # noqa: E731
    return throughput_per_gpu(v("concurrency"), v("osl"), ttft, tpot, gpus_of(table))



def _summary(cases: list[dict]) -> dict:
    if not cases:
        return {"cases": 0, "median_regret": float("nan"), "misses": float("nan"),
                "no_pick": 0}
    return {"cases": len(cases),
            "median_regret": float(np.median([c["regret"] for c in cases])),
            "misses": float(np.mean([c["miss"] for c in cases])),
            "no_pick": int(sum(not c["picked"] for c in cases))}


def validate(table: xr.Dataset, quantiles=QUANTILES, strict: bool = False) -> dict:
    """The regret study on ``table`` (experiment 11's :func:`served_table`): per (checkpoint,
    GPU, engine, mode, isl/osl) group of ≥ :data:`MIN_GROUP` measured configurations, a TPOT
    target at each of :data:`VALIDATION_PERCENTILES` of its measured TPOT; each planner picks,
    out of sample, among the configurations whose TPOT at the band's upper edge meets the
    target (the product's: with a monotone chance of meeting it ≥ q, the most expected tokens
    delivered; the first planner's: the most predicted tokens × chance). Predictions are
    experiment 11's stored leave-one-workload-out predictions; the band is read from the group's errors on its
    *other* workloads. Regret = 1 − measured tokens/s per GPU of the pick / the best measured
    one meeting the target (1 when the pick misses the target in measurement, or when nothing
    is picked). Returns per quantile and the floor-only planner: overall and per engine × mode;
    and ``cross-validated q``: the product's planner with q chosen on the other folds of groups.
    ``strict``: the bands' errors re-read leaving two workloads out
    (:meth:`Calibration.excluding_strictly`), so not even the coefficients behind a
    configuration's error on another workload have seen the held-out one.
    """
    s = lambda n: np.asarray(table[n].values).astype(str)  # noqa: E731
    f = lambda n: np.asarray(table[n].values, dtype=float)  # noqa: E731
    keys, usable, _ = study_groups(table)
    engine_mode = {k: " × ".join(k.split("|")[2:4]) for k in dict.fromkeys(keys[usable].tolist())}
    predicted = throughput_of(table, f("ttft_predicted_ms"), f("tpot_predicted_ms"))
    planners = {"floor only": _regret_cases(
        table, f("tpot_floor_ms"), f("tpot_floor_ms"),
        throughput_of(table, f("ttft_floor_ms"), f("tpot_floor_ms")), keys, usable)}
    planners["predicted, no band"] = _regret_cases(table, f("tpot_predicted_ms"),
                                                   f("tpot_predicted_ms"), predicted, keys, usable)
    base = Calibration(table)
    calibrations: dict[str, Calibration] = {}
    workloads = s("workload")
    row_group, row_model = s("group"), s("model")
    row_concurrency = np.maximum(f("concurrency"), 1.0)
    samples: dict[int, np.ndarray] = {}
    for key in dict.fromkeys(keys[usable].tolist()):
        index = np.flatnonzero(usable & (keys == key))
        if index.size < MIN_GROUP:
            continue
        w = workloads[index[0]]
        if w not in calibrations:
            calibrations[w] = base.excluding_strictly(w) if strict else base.excluding(w)
        cal = calibrations[w]
        centres = cal.centre(base.keys[index], "tpot")
        for i, centre in zip(index.tolist(), centres.tolist(), strict=True):
            samples[i] = cal._sample(row_group[i], row_model[i], float(row_concurrency[i]),
                                     "tpot", centre)
    tpot_predicted = f("tpot_predicted_ms")

    def chance(index: np.ndarray, target: float) -> np.ndarray:
        return np.array([np.mean(tpot_predicted[i] * np.exp(samples[i]) <= target)
                         if samples[i].size else float(tpot_predicted[i] <= target)
                         for i in index.tolist()])

    concurrency = np.maximum(f("concurrency"), 1.0)
    layout = np.array([k.rsplit("|", 1)[0] for k in base.keys.tolist()])
    ttft_centre = np.full(usable.shape, np.nan)
    tpot_centre = np.full(usable.shape, np.nan)
    for key in dict.fromkeys(keys[usable].tolist()):
        index = np.flatnonzero(usable & (keys == key))
        if index.size >= MIN_GROUP:
            cal = calibrations[workloads[index[0]]]
            ttft_centre[index] = cal.centre(base.keys[index], "ttft")
            tpot_centre[index] = cal.centre(base.keys[index], "tpot")
    ttft_at = f("ttft_predicted_ms") * np.exp(np.nan_to_num(ttft_centre))
    gpus = gpus_of(table)
    osl = f("osl")
    decided: dict = {}

    def expected(index: np.ndarray, target: float) -> tuple[np.ndarray, np.ndarray]:
        """Each configuration's chance of meeting ``target`` (monotone within its layout) and
        its expected tokens delivered, from its out-of-sample errors."""
        cache_key = (int(index[0]), target)
        if cache_key not in decided:
            pairs = np.array([expected_tokens(samples[i], tpot_predicted[i], ttft_at[i], target,
                                              concurrency[i], osl[i], gpus[i])
                              for i in index.tolist()])
            raw, tokens = pairs[:, 0], pairs[:, 1]
            adjusted = monotone_chance(raw, layout[index], concurrency[index],
                                       np.isfinite(tpot_centre[index]))
            with np.errstate(divide="ignore", invalid="ignore"):
                tokens = np.where(raw > 0, tokens * adjusted / raw, 0.0)
            decided[cache_key] = (adjusted, tokens)
        return decided[cache_key]

    new_planners = []
    for q in quantiles:
        bound = np.full(usable.shape, np.nan)
        for i, sample in samples.items():
            bound[i] = tpot_predicted[i] * (np.exp(np.quantile(sample, q)) if sample.size
                                            else 1.0)
        planners[f"band q {q:g}"] = _regret_cases(table, tpot_predicted, bound, predicted, keys,
                                                  usable)
        planners[previous_planner_name(q)] = _regret_cases(
            table, tpot_predicted, bound, predicted, keys, usable, chance)

        def decide(index, target, q=q):
            adjusted, tokens = expected(index, target)
            return adjusted >= q, tokens

        planners[planner_name(q)] = _regret_cases(table, tpot_predicted, bound, predicted,
                                                  keys, usable, decide=decide)
        new_planners.append((q, planner_name(q)))
    bucket = _distance_buckets(keys, usable)
    out = {}
    for name, cases in planners.items():
        per, far = {}, {}
        for c in cases:
            per.setdefault(engine_mode[c["key"]], []).append(c)
            far.setdefault(bucket[c["key"]], []).append(c)
        out[name] = {"overall": _summary(cases),
                     "per_engine_mode": {k: _summary(v) for k, v in sorted(per.items())},
                     "per_distance": {k: _summary(far[k]) for k in BUCKET_ORDER if k in far}}
    out["cross-validated q"] = _cross_validate({q: planners[n] for q, n in new_planners},
                                               engine_mode)
    return out


CV_FOLDS = 2
"""Folds of the groups (by a hash of the group's key) the band quantile is chosen on."""
CV_MISSES = 0.10
"""The misses a fold's quantile may allow on its training folds (the target)."""


def _fold(key: str) -> int:
    return zlib.crc32(key.encode()) % CV_FOLDS


def _cross_validate(by_quantile: dict, engine_mode: dict) -> dict:
    """The band quantile chosen out of sample: for each fold of groups, the quantile with the
    least median regret whose misses on the *other* folds are at most :data:`CV_MISSES` (else
    the most conservative), its cases taken on the held-out fold; the held-out cases of every
    fold pooled."""
    held_out, chosen = [], {}
    for fold in range(CV_FOLDS):
        best = None
        for q, cases in sorted(by_quantile.items()):
            train = _summary([c for c in cases if _fold(c["key"]) != fold])
            if train["misses"] <= CV_MISSES and (best is None
                                                 or train["median_regret"] < best[1]):
                best = (q, train["median_regret"])
        q = max(by_quantile) if best is None else best[0]
        chosen[str(fold)] = q
        held_out += [c for c in by_quantile[q] if _fold(c["key"]) == fold]
    per: dict = {}
    for c in held_out:
        per.setdefault(engine_mode[c["key"]], []).append(c)
    return {"overall": _summary(held_out),
            "per_engine_mode": {k: _summary(v) for k, v in sorted(per.items())},
            "folds": CV_FOLDS, "quantile_per_fold": chosen,
            "per_fold": {str(k): _summary([c for c in held_out if _fold(c["key"]) == k])
                         for k in range(CV_FOLDS)}}
